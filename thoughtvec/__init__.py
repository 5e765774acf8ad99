"""thoughtvec: sentence embeddings from classic unsupervised encoders, trained, served and measured.

One import name for the whole project. The repository's top-level folders install under it
(``pyproject.toml``'s package-dir): ``service/`` is :mod:`thoughtvec.service` (the serving install: bundle
format, encoders, batching, indexes, HTTP; no torch), ``training/`` is :mod:`thoughtvec.training` (corpus,
the three families, export, evaluation) and ``bench/`` is :mod:`thoughtvec.bench` (measurement tools). This
folder holds the ``thoughtvec`` command, and the Python API's entry, :func:`load` (``docs/python.md``):

    import thoughtvec
    m = thoughtvec.load("mean-max-aae")
    m.encode("The cat sat on the mat.")  # (256,) float32

``thoughtvec.Embedder`` and ``thoughtvec.Index`` are :mod:`thoughtvec.service.api`'s; like :func:`load`, they load
ONNX Runtime and the serving core at their first use, never at ``import thoughtvec``.
"""

import os
from typing import TYPE_CHECKING, Any

# The checkout's thoughtvec/ folder holds only the command; with it first on the path (a command run from the
# checkout's root), a strict editable install's tree of links (`make install-dev`) still supplies the rest.
__path__ = __import__("pkgutil").extend_path(__path__, __name__)

if TYPE_CHECKING:
    from thoughtvec.service.api import Embedder, Index

__all__ = ["Embedder", "Index", "load"]


def load(model: str, **options: Any) -> "Embedder":
    """The bundle ``model`` (a name, or a bundle's folder), loaded and ready: :func:`thoughtvec.service.api.load`,
    whose ``models_dir`` is here, where not given, ``$THOUGHTVEC_MODELS_DIR``, else this checkout's ``models/``
    (where it is one), else ``models`` under the current folder. ``options``: ``models_dir`` and any server setting."""
    from thoughtvec import paths  # noqa: PLC0415  # the checkout's folders, named once
    from thoughtvec.service import api  # noqa: PLC0415  # ONNX Runtime and the serving core load at the first model

    if "models_dir" not in options and "THOUGHTVEC_MODELS_DIR" not in os.environ and paths.MODELS.is_dir():
        options["models_dir"] = paths.MODELS
    return api.load(model, **options)


def __getattr__(name: str) -> Any:
    """``thoughtvec.Embedder`` and ``thoughtvec.Index``, imported at their first use."""
    if name in ("Embedder", "Index"):
        from thoughtvec.service import api  # noqa: PLC0415  # ONNX Runtime and the serving core load at the first use

        return getattr(api, name)
    raise AttributeError(f"module 'thoughtvec' has no attribute {name!r}")
