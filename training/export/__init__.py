"""Export: what turns a checkpoint (``export``, through ``onnx_export``) or a sentence-transformers folder
(``transformer``) into a bundle with its model card (``modelcard``), and what changes a bundle afterwards:
``postprocess`` (maps and principal axes chosen on dev pairs the caller passes in), ``quantize`` (with
``quantize_tokens``). ``decoder_sizes`` measures what a decoder adds to a bundle. Imports ``train`` and
``corpus``, never evaluation.
"""
