"""What an index is and holds, in no backend's terms: the data of the contract between the core and every store.

:class:`NewIndex` (what a new index is asked to be), :class:`IndexConfig` (what an index is), :class:`Doc` (a
document), :class:`BuiltIndex` (a whole index made offline: its documents and their vectors), :class:`IndexStats`
(what a store says of an index) and :class:`Capabilities` (what a backend can do) are plain data; FAISS
(``thoughtvec.service.index.store``) and Milvus (``thoughtvec.service.index.milvus``) each turn them
into their own structures. The contract's methods are :class:`thoughtvec.service.index.backend.IndexBackend`.
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from thoughtvec.service.settings import SearchMode

Metric = Literal["cosine", "ip", "l2"]
NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"


class IndexConfig(BaseModel):
    """What an index is; stored as ``meta.json`` in each snapshot."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(pattern=NAME_PATTERN)
    model: str
    view: str
    dim: int = Field(gt=0)
    factory: str = "Flat"
    metric: Metric = "cosine"
    normalize: bool = True  # L2-normalise vectors (and vector queries) before they reach FAISS
    train_size: int = Field(0, ge=0, description="vectors buffered before training (0: no training needed)")
    created: str = ""
    fingerprint: str = Field(
        "", description="Encoder.fingerprint of the model's view that made the vectors ('' in indexes made before it was kept)"
    )
    mode: SearchMode = Field("dense", description="the search a request that names no mode gets ('dense' in indexes made before modes)")
    embedded: bool = Field(
        True,
        description="its documents are embedded; False: a lexical-only index (its creator named mode 'lexical'), searched by BM25 alone, "
        "so no model runs when documents are added (True in indexes made before it was kept: they hold vectors)",
    )
    grow_at: int = Field(
        0,
        ge=0,
        description="documents at which the index is rebuilt as grow_factory while it serves (0: never; made without a named factory)",
    )
    grow_factory: str = Field("", description="the factory it is rebuilt as at grow_at documents ('' where it never is)")


def created_now() -> str:
    """An index's ``created`` stamp: now, UTC, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def new_id() -> str:
    """The id of a document added without one."""
    return uuid.uuid4().hex


@dataclass
class Doc:
    id: str
    text: str
    metadata: dict[str, Any] | None = None


@dataclass
class BuiltIndex:
    """A whole index made offline (``thoughtvec index build``, the default index), for a store to install."""

    config: IndexConfig
    docs: list[Doc]
    vectors: np.ndarray  # (len(docs), config.dim) float32, as the model made them: each store prepares its own copy


@dataclass(frozen=True, slots=True)
class NewIndex:
    """What a new index is asked to be, passed whole to the backend that makes its :class:`IndexConfig`
    (``IndexBackend.new_config``): the backend checks the factory against what it builds and settles what is its
    own to decide (FAISS: how many vectors to buffer before training)."""

    name: str
    model: str
    view: str
    dim: int
    factory: str | None = None  # None: the backend's default for a new index (FAISS: Flat, grown past a size: GROWTH)
    metric: Metric = "cosine"
    normalize: bool = True
    train_size: int | None = None  # vectors to buffer before training; None: the backend's default
    fingerprint: str = ""  # Encoder.fingerprint of the model's view that makes the vectors
    mode: SearchMode = "dense"
    embedded: bool = True  # False: lexical-only (its creator named mode 'lexical'): no model runs for its documents

    def config(self, train_size: int, factory: str | None = None, grow_at: int = 0, grow_factory: str = "") -> IndexConfig:
        """The index's config, created now, with what its backend settled on: ``train_size``, the ``factory`` where
        none was named, and where it grows."""
        settled = {"train_size": train_size, "created": created_now(), "factory": self.factory or factory or "Flat"}
        return IndexConfig(**dataclasses.asdict(self) | settled | {"grow_at": grow_at, "grow_factory": grow_factory})


@dataclass(frozen=True, slots=True)
class IndexStats:
    """An index as a store describes it: what its config fixes, its document count, and in ``backend`` what the
    backend alone keeps of it (FAISS: ``trained``, ``pending_training`` vectors buffered until its factory is
    trained, ``train_error``, ``wal_bytes`` in its log not yet in a snapshot, ``gpu``). A backend without such
    state leaves ``backend`` empty: the HTTP answer then says trained, nothing pending, no log, no GPU."""

    name: str
    model: str
    view: str
    mode: SearchMode
    dim: int
    factory: str
    metric: str
    normalize: bool
    train_size: int
    created: str
    documents: int
    backend: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, config: IndexConfig, documents: int, backend: dict[str, Any] | None = None) -> IndexStats:
        """The stats of an index of ``config`` holding ``documents``; ``backend``: the store's own fields."""
        fixed = {
            k: getattr(config, k)
            for k in ("name", "model", "view", "mode", "dim", "factory", "metric", "normalize", "train_size", "created")
        }
        return cls(**fixed, documents=documents, backend=backend or {})


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a backend can do, as data: the core and the commands read it instead of asking which backend it is."""

    backend: str  # its name (settings.IndexBackendName)
    modes: tuple[SearchMode, ...]  # the searches its indexes serve
    factories: str  # the factory strings it builds, for messages and help
    gpus: int = 0  # GPUs its searches can use on this machine (0: CPU only)
    on_gpu: bool = False  # its indexes are searched on those GPUs (gpus > 0 and the server asked for CUDA)
    shared: bool = False  # every process pointed at the same place serves the same indexes (replicas)
    snapshots: bool = False  # writes wait in a log until folded into a snapshot: inventory() counts the snapshot's
    read_only: str | None = None  # why this process may not write its indexes (workers over one FAISS folder); None: it may
    unserved: str = ""  # why the modes outside ``modes`` are not served, for the 422 that refuses one
