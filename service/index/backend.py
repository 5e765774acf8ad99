"""The index store interface, and the one place that chooses its backend.

:class:`IndexBackend` is what the index service needs of a store; :class:`thoughtvec.service.index.store.IndexStore`
(FAISS in this process's memory, a log and snapshots on disk) and
:class:`thoughtvec.service.index.milvus.MilvusStore` (Milvus Lite or a Milvus server) both have it. It
speaks plain data (``thoughtvec.service.index.contents``), never a backend's own types. Methods are
blocking (disk, FAISS, network): call them from a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from thoughtvec.service.index.contents import BuiltIndex, Doc, IndexConfig
from thoughtvec.service.index.milvus_schema import MilvusOptions
from thoughtvec.service.settings import IndexBackendName, SearchMode


@runtime_checkable
class IndexBackend(Protocol):
    """What the core needs from an index store (both backends answer with the same domain errors)."""

    building: dict[str, str]  # name -> progress, for indexes being built in the background
    quarantined: dict[str, str]  # name -> why it cannot be served (503 until fixed or dropped)
    search_modes: tuple[SearchMode, ...]  # the modes its indexes can be searched in

    def load_all(self) -> list[str]: ...
    def names(self) -> list[str]: ...
    def __contains__(self, name: str) -> bool: ...
    def config(self, name: str) -> IndexConfig: ...
    def stats(self, name: str) -> dict: ...
    def count(self, name: str) -> int: ...
    def documents(self, name: str, limit: int, include: Sequence[str] = ()) -> list[Doc]: ...
    def search(self, name: str, queries: np.ndarray, k: int) -> list[list[tuple[Doc, float]]]: ...
    def check_mode(self, mode: SearchMode) -> None: ...  # a 422 naming `mode`, and why, for a mode it cannot serve
    def lexical_search(self, name: str, queries: Sequence[str], k: int) -> list[list[tuple[Doc, float]]]: ...
    def create(self, config: IndexConfig) -> dict: ...
    def install(self, built: BuiltIndex, overwrite: bool = False) -> dict: ...
    def drop(self, name: str) -> None: ...
    def add(self, name: str, docs: list[Doc], vectors: np.ndarray) -> list[str]: ...
    def delete(self, name: str, ids: list[str]) -> list[str]: ...
    def close(self) -> None: ...


OnSize = Callable[[str, int | None], None]  # an index's document count changed (None: it is gone)


def _faiss(index_dir: Path, wal_max_bytes: int, on_size: OnSize | None, gpu: bool, milvus: MilvusOptions | None) -> IndexBackend:
    from thoughtvec.service.index.store import IndexStore

    return IndexStore(index_dir, wal_max_bytes, on_size, gpu=gpu)


def _milvus(index_dir: Path, wal_max_bytes: int, on_size: OnSize | None, gpu: bool, milvus: MilvusOptions | None) -> IndexBackend:
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
) -> IndexBackend:
    """The store for ``backend``: the FAISS folder ``index_dir``, or Milvus at ``milvus.uri``."""
    return OPENERS[IndexBackendName(backend)](index_dir, wal_max_bytes, on_size, gpu, milvus)
