"""The handlers of ``thoughtvec serve``, ``thoughtvec index build|list`` and ``thoughtvec generate``, one module per
command (their parsers: ``service/cli.py``, which names them by string, so ``thoughtvec --help`` loads none of this
and each command only what it runs)."""
