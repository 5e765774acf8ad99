"""thoughtvec training: corpus building, the three encoder families, ONNX export, evaluation.

Importing this package is cheap (no torch): the ``thoughtvec`` command (``thoughtvec/cli.py``) imports
the parsers of ``training/commands`` and must start in a serving install. Their handlers
(``training/handlers/``), imported when their command runs, load the heavy modules.
"""
