"""thoughtvec training: corpus building, the three encoder families, ONNX export, evaluation.

Importing this package is cheap (no torch): the ``thoughtvec`` command lives here and must start
in a serving install. Heavy modules are imported by the subcommands that need them.
"""
