"""thoughtvec serving: bundles, tokenizer, ONNX Runtime encoders, dynamic batching, FAISS indexes, HTTP API.

Nothing here imports torch or ``training``: the serving install has neither.
"""

import logging as _logging
import os as _os

# ONNX Runtime (1.31) records a device id under $HOME and sends usage events unless told not to;
# a server should not phone home. Set before onnxruntime is first imported.
_os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

try:  # the installed distribution's version (pyproject.toml)
    from importlib.metadata import version as _version

    __version__ = _version("thoughtvec")
except Exception:  # noqa: BLE001 - run from a source tree that is not installed
    __version__ = "0.0.0+source"

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(level: int | str) -> None:
    """A process's log lines: the serving commands', and each worker process's of ``serve --workers``."""
    _logging.basicConfig(level=level.upper() if isinstance(level, str) else level, format=LOG_FORMAT, datefmt="%H:%M:%S")
    quiet_faiss()


def quiet_faiss() -> None:
    # "could not load AVX2 ..." is noise; faiss-cpu logs as faiss.loader, faiss-gpu-cu12 as faiss._loader
    for name in ("faiss.loader", "faiss._loader"):
        _logging.getLogger(name).setLevel(_logging.WARNING)
