"""The Python API: a bundle served in this process by the serving core itself, without HTTP.

    import thoughtvec
    m = thoughtvec.load("mean-max-aae")
    vectors = m.encode(["The cat sat on the mat.", "A dog ran in the park."])  # (2, 256) float32

:func:`load` gives an :class:`Embedder` (``encode``, ``similarity``, ``rerank``, ``generate``); :class:`Index`
makes and opens search indexes in an index folder through it. Both call the server's own services (``core/``) on a
private event loop, so batching, limits, long inputs, compact vectors and indexes are the server's. ``docs/python.md``.
"""

from thoughtvec.service.api.embedder import Embedder, find_bundle, load
from thoughtvec.service.api.index import Index

__all__ = ["Embedder", "Index", "find_bundle", "load"]
