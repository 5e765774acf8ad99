"""The index backend contract, and the one place that chooses a backend.

:class:`IndexBackend` is all the core and the ``thoughtvec index`` commands know of a store, the way
TEI's ``backends/core`` defines its ``Backend`` trait: methods over plain data
(``thoughtvec.service.index.contents``: :class:`IndexConfig`, :class:`Doc`, :class:`BuiltIndex`,
:class:`IndexStats`), what the backend can do as data (:class:`Capabilities`: modes, factories, GPUs),
and one set of domain errors (``thoughtvec.service.errors``) from every backend.
:class:`thoughtvec.service.index.store.IndexStore` (FAISS in this process's memory, a log and snapshots on
disk) and :class:`thoughtvec.service.index.milvus.MilvusStore` (Milvus Lite or a Milvus server) implement it;
:func:`open_backend` picks one by the ``index_backend`` setting. Methods are blocking (disk, FAISS,
network): call them from a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from thoughtvec.service.index.contents import BuiltIndex, Capabilities, Doc, IndexConfig, IndexStats, Metric
from thoughtvec.service.index.milvus_schema import MilvusOptions
from thoughtvec.service.settings import IndexBackendName, SearchMode, Settings

Hits = list[list[tuple[Doc, float]]]  # per query, best first: (document, score as the metric gives it)


@runtime_checkable
class IndexBackend(Protocol):
    """What a store does for the core; every backend answers with the same domain errors (404 unknown index,
    409 a name or id taken, 422 naming the field, 503 quarantined or storage unavailable)."""

    @property
    def capabilities(self) -> Capabilities: ...
    @property
    def quarantined(self) -> Mapping[str, str]: ...  # name -> why it cannot be served (503 until fixed or dropped)

    # reads
    def load_all(self) -> list[str]: ...  # at start: every index it holds (a broken one quarantined, never fatal)
    def names(self) -> list[str]: ...
    def __contains__(self, name: str) -> bool: ...
    def config(self, name: str) -> IndexConfig: ...
    def stats(self, name: str) -> IndexStats: ...
    def inventory(self) -> list[IndexStats]: ...  # every index's stats without loading any (safe beside a running server)
    def count(self, name: str) -> int: ...
    def documents(self, name: str, limit: int, include: Sequence[str] = ()) -> list[Doc]: ...
    def search(self, name: str, queries: np.ndarray, k: int) -> Hits: ...
    def lexical_search(self, name: str, queries: Sequence[str], k: int) -> Hits: ...
    def check_mode(self, mode: SearchMode) -> None: ...  # a 422 naming `mode`, saying why, for a mode not in capabilities.modes

    # writes
    def new_config(
        self,
        name: str,
        model: str,
        view: str,
        dim: int,
        *,
        factory: str = "Flat",
        metric: Metric = "cosine",
        normalize: bool = True,
        train_size: int | None = None,
        fingerprint: str = "",
        mode: SearchMode = "dense",
    ) -> IndexConfig: ...  # a new index's config; a 422 naming `factory` or `mode` it cannot build or serve
    def create(self, config: IndexConfig) -> IndexStats: ...
    def install(self, built: BuiltIndex, overwrite: bool = False) -> IndexStats: ...
    def drop(self, name: str) -> None: ...
    def add(self, name: str, docs: list[Doc], vectors: np.ndarray) -> list[str]: ...
    def delete(self, name: str, ids: list[str]) -> list[str]: ...
    def close(self) -> None: ...


OnSize = Callable[[str, int | None], None]  # an index's document count changed (None: it is gone)


def _faiss(
    index_dir: Path, wal_max_bytes: int, on_size: OnSize | None, gpu: bool, milvus: MilvusOptions | None, read_only: str | None
) -> IndexBackend:
    from thoughtvec.service.index.store import IndexStore  # FAISS loads only where it is the backend

    return IndexStore(index_dir, wal_max_bytes, on_size, gpu=gpu, read_only=read_only)


def _milvus(
    index_dir: Path, wal_max_bytes: int, on_size: OnSize | None, gpu: bool, milvus: MilvusOptions | None, read_only: str | None
) -> IndexBackend:
    from thoughtvec.service.index.milvus import MilvusStore  # pymilvus is an optional extra

    return MilvusStore(milvus or MilvusOptions(), on_size=on_size)


# Each backend's store, by its name (the one list: IndexBackendName).
OPENERS: dict[IndexBackendName, Callable[..., IndexBackend]] = {IndexBackendName.faiss: _faiss, IndexBackendName.milvus: _milvus}


def open_store(
    backend: IndexBackendName | str,
    *,
    index_dir: Path,
    wal_max_bytes: int = 64 * 2**20,
    on_size: OnSize | None = None,
    gpu: bool = False,
    milvus: MilvusOptions | None = None,
    read_only: str | None = None,
) -> IndexBackend:
    """The store for ``backend``: the FAISS folder ``index_dir``, or Milvus at ``milvus.uri`` (a server shares its
    indexes with every process, so ``read_only``, why this process must not write a folder, is FAISS's alone)."""
    return OPENERS[IndexBackendName(backend)](index_dir, wal_max_bytes, on_size, gpu, milvus, read_only)


def open_backend(settings: Settings, on_size: OnSize | None = None) -> IndexBackend:
    """The store the settings name (``index_backend``, with ``index_dir`` and ``index_wal_max_mb`` for FAISS, the
    ``milvus_*`` settings for Milvus; indexes on the GPU where ``prefer_cuda`` and FAISS has one). With several
    ``workers`` a FAISS folder is read-only in each: one process writes a folder."""
    read_only = None
    if settings.workers > 1:
        read_only = (
            f"indexes are read-only here: {settings.workers} worker processes serve the index folder {settings.index_dir},"
            " and one process writes a folder; write with workers=1 (`--workers 1`), or keep the indexes in a Milvus server"
            " (`--index-backend milvus --milvus-uri http://host:19530`), which every worker writes"
        )
    return open_store(
        settings.index_backend,
        index_dir=settings.index_dir,
        wal_max_bytes=settings.index_wal_max_mb * 2**20,
        on_size=on_size,
        gpu=settings.prefer_cuda,
        milvus=MilvusOptions.of(settings),
        read_only=read_only,
    )
