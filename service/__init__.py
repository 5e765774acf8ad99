"""thoughtvec serving: bundles, tokenizer, ONNX Runtime encoders, dynamic batching, FAISS indexes, HTTP API.

Nothing here imports torch or ``training``: the serving install has neither.
"""

import os as _os

# ONNX Runtime (1.31) records a device id under $HOME and sends usage events unless told not to;
# a server should not phone home. Set before onnxruntime is first imported.
_os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

try:  # the installed distribution's version (pyproject.toml)
    from importlib.metadata import version as _version

    __version__ = _version("thoughtvec")
except Exception:  # noqa: BLE001 - run from a source tree that is not installed
    __version__ = "0.0.0+source"
