"""thoughtvec training: corpus building, the three encoder families, ONNX export, evaluation.

Importing this package is cheap (no torch): the ``thoughtvec`` command (``thoughtvec/cli.py``) imports
the subcommands of ``training/commands`` and must start in a serving install. Heavy modules are
imported by the subcommands that need them.
"""
