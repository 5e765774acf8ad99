"""The index store interface, and the one place that chooses its backend.

:class:`IndexBackend` is the public surface of :class:`thoughtvec.service.index.store.IndexStore` (FAISS in
this process's memory, a log and snapshots on disk) that the core uses;
:class:`thoughtvec.service.index.milvus.MilvusStore` (Milvus Lite or a Milvus server) has the same one.
Methods are blocking (disk, FAISS, network): call them from a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from thoughtvec.service.index.indexes import Doc, IndexConfig, VectorIndex
from thoughtvec.service.index.milvus_schema import MilvusOptions

Backend = Literal["faiss", "milvus"]


@runtime_checkable
class IndexBackend(Protocol):
    """What the core needs from an index store (both backends answer with the same domain errors)."""

    building: dict[str, str]  # name -> progress, for indexes being built in the background
    quarantined: dict[str, str]  # name -> why it cannot be served (503 until fixed or dropped)

    def load_all(self) -> list[str]: ...
    def names(self) -> list[str]: ...
    def __contains__(self, name: str) -> bool: ...
    def config(self, name: str) -> IndexConfig: ...
    def stats(self, name: str) -> dict: ...
    def count(self, name: str) -> int: ...
    def documents(self, name: str, limit: int, include: Sequence[str] = ()) -> list[Doc]: ...
    def search(self, name: str, queries: np.ndarray, k: int) -> list[list[tuple[Doc, float]]]: ...
    def create(self, config: IndexConfig) -> dict: ...
    def install(self, vi: VectorIndex, overwrite: bool = False) -> dict: ...
    def drop(self, name: str) -> None: ...
    def add(self, name: str, docs: list[Doc], vectors: np.ndarray) -> list[str]: ...
    def delete(self, name: str, ids: list[str]) -> list[str]: ...
    def close(self) -> None: ...


def open_store(
    backend: Backend,
    *,
    index_dir: Path,
    wal_max_bytes: int = 64 * 2**20,
    on_size: Callable[[str, int | None], None] | None = None,
    gpu: bool = False,
    milvus: MilvusOptions | None = None,
) -> IndexBackend:
    """The store for ``backend``: the FAISS folder ``index_dir``, or Milvus at ``milvus.uri``."""
    if backend == "milvus":
        from thoughtvec.service.index.milvus import MilvusStore  # pymilvus is an optional extra

        return MilvusStore(milvus or MilvusOptions(), on_size=on_size)
    from thoughtvec.service.index.store import IndexStore

    return IndexStore(index_dir, wal_max_bytes, on_size, gpu=gpu)
