"""The index backend contract, and the one place that chooses a backend.

:class:`IndexBackend` is all the core and the ``thoughtvec index`` commands know of a store, the way
TEI's ``backends/core`` defines its ``Backend`` trait: methods over plain data
(``thoughtvec.service.index.contents``: :class:`IndexConfig`, :class:`Doc`, :class:`BuiltIndex`,
:class:`IndexStats`, :class:`NewIndex`), what the backend can do as data (:class:`Capabilities`: modes and why
not the others, factories, GPUs: the core checks a request against them, once), and one set of domain errors
(``thoughtvec.service.errors``) from every backend.
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

from thoughtvec.service.index.contents import BuiltIndex, Capabilities, Doc, IndexConfig, IndexStats, NewIndex
from thoughtvec.service.index.milvus_schema import MilvusOptions
from thoughtvec.service.index.search_settings import SearchSettings
from thoughtvec.service.settings import IndexBackendName, Settings

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
    def open(self) -> None: ...  # at start, before serving: take what this process must hold (FAISS: its folder's lock)
    def load_all(self) -> list[str]: ...  # at start: every index it holds (a broken one quarantined, never fatal)
    def load(self, name: str) -> bool: ...  # one index alone, where it is there (a command on one index); a broken one raises
    def names(self) -> list[str]: ...
    def __contains__(self, name: str) -> bool: ...
    def config(self, name: str) -> IndexConfig: ...
    def stats(self, name: str) -> IndexStats: ...
    def inventory(self) -> list[IndexStats]: ...  # every index's stats without loading any (safe beside a running server)
    def count(self, name: str) -> int: ...
    def documents(self, name: str, limit: int, include: Sequence[str] = ()) -> list[Doc]: ...
    def search(self, name: str, queries: np.ndarray, k: int) -> Hits: ...
    def lexical_search(self, name: str, queries: Sequence[str], k: int) -> Hits: ...  # where capabilities.modes has it

    # writes
    def new_config(self, new: NewIndex) -> IndexConfig: ...  # a new index's config; a 422 naming `factory` it cannot build
    def create(self, config: IndexConfig) -> IndexStats: ...
    def install(self, built: BuiltIndex, overwrite: bool = False) -> IndexStats: ...
    def drop(self, name: str) -> None: ...
    def add(self, name: str, docs: list[Doc], vectors: np.ndarray) -> list[str]: ...
    def delete(self, name: str, ids: list[str]) -> list[str]: ...
    def close(self) -> None: ...


OnSize = Callable[[str, int | None], None]  # an index's document count changed (None: it is gone)


# A bulk build's store folds its log into a snapshot past this many bytes (a server's: index_wal_max_mb, 64 MiB by
# default). Each fold rewrites the whole index: folding every 64 MiB, a large build's writing would grow with the
# square of its size. The log a resumed build replays stays bounded by this.
BULK_LOG_BYTES = 2**30


def _faiss(
    index_dir: Path, wal_max_bytes: int, on_size: OnSize | None, gpu: bool, milvus: MilvusOptions | None, read_only: str | None,
    search: SearchSettings, bulk: bool,
) -> IndexBackend:  # fmt: skip
    from thoughtvec.service.index.store import IndexStore  # noqa: PLC0415  # FAISS loads only where it is the backend

    if bulk:  # it searches nothing: no GPU copy, no BM25 half; its log folded seldom
        return IndexStore(index_dir, max(wal_max_bytes, BULK_LOG_BYTES), on_size, read_only=read_only, lexical=False)
    return IndexStore(index_dir, wal_max_bytes, on_size, gpu=gpu, read_only=read_only, analyzer=search.analyzer, bm25=search.bm25)


def _milvus(
    index_dir: Path, wal_max_bytes: int, on_size: OnSize | None, gpu: bool, milvus: MilvusOptions | None, read_only: str | None,
    search: SearchSettings, bulk: bool,
) -> IndexBackend:  # fmt: skip
    from thoughtvec.service.index.milvus import MilvusStore  # noqa: PLC0415  # pymilvus is an optional extra

    return MilvusStore(milvus or MilvusOptions(), on_size=on_size, bm25=search.bm25)


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
    search: SearchSettings | None = None,
    bulk: bool = False,
) -> IndexBackend:
    """The store for ``backend``: the FAISS folder ``index_dir``, or Milvus at ``milvus.uri`` (a server shares its
    indexes with every process, so ``read_only``, why this process must not write a folder, is FAISS's alone);
    ``search``: the analyser and BM25 of every index's lexical half (the model guide's, else the fallback); ``bulk``: a
    bulk build's store, which searches nothing (FAISS: no GPU copy and no BM25 half in memory, each load
    builds it from the documents; its log folded past ``BULK_LOG_BYTES``, or ``wal_max_bytes`` where larger)."""
    opener = OPENERS[IndexBackendName(backend)]
    return opener(index_dir, wal_max_bytes, on_size, gpu, milvus, read_only, search or SearchSettings(), bulk)


def read_only_reason(settings: Settings) -> str | None:
    """Why a FAISS folder is read-only in this process (the 409 a write gets: it names no path), or None where it writes:
    one of several ``workers``, or a server started ``index_read_only``. One process writes a folder."""
    if settings.workers > 1:
        return (
            f"indexes are read-only here: {settings.workers} worker processes serve one index folder, and one process writes"
            " a folder; write with workers=1 (`--workers 1`), or keep the indexes in a Milvus server"
            " (`--index-backend milvus --milvus-uri http://host:19530`), which every worker writes"
        )
    if settings.index_read_only:
        return (
            "indexes are read-only here: this server serves its index folder read-only (index_read_only), beside other"
            " read-only servers of it; write through a server started without it, alone on the folder"
        )
    return None


def open_backend(
    settings: Settings, on_size: OnSize | None = None, search: SearchSettings | None = None, bulk: bool = False
) -> IndexBackend:
    """The store the settings name (``index_backend``, with ``index_dir`` and ``index_wal_max_mb`` for FAISS, the
    ``milvus_*`` settings for Milvus; indexes on the GPU where ``prefer_cuda`` and FAISS has one). With several
    ``workers``, or ``index_read_only``, a FAISS folder is read-only here (:func:`read_only_reason`). ``bulk``: a bulk
    build's store (:func:`open_store`). The store takes nothing until its :meth:`~IndexBackend.open` (or first load or
    write)."""
    read_only = read_only_reason(settings)
    return open_store(
        settings.index_backend,
        index_dir=settings.index_dir,
        wal_max_bytes=settings.index_wal_max_mb * 2**20,
        on_size=on_size,
        gpu=settings.prefer_cuda,
        milvus=MilvusOptions.of(settings),
        read_only=read_only,
        search=search,
        bulk=bulk,
    )


def check_index_folder(settings: Settings) -> None:
    """Raise :class:`~thoughtvec.service.errors.IndexFolderLocked` now where the processes of ``thoughtvec serve
    --workers N`` would be refused the index folder one by one, before any of them starts: the default-index build
    before them writes it (where it is built), then each worker reads it. What it takes is let go at once."""
    builds = settings.build_default_index and not settings.index_read_only
    first = settings.model_copy(update={"workers": 1, "prefer_cuda": False}) if builds else settings
    store = open_backend(first)
    try:
        store.open()
    finally:
        store.close()
