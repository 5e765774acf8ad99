"""What an index is and holds, in no backend's terms: the contract between the core and every store.

:class:`IndexConfig` (what an index is), :class:`Doc` (a document) and :class:`BuiltIndex` (a whole
index made offline: its documents and their vectors) are plain data; FAISS
(``thoughtvec.service.index.store``) and Milvus (``thoughtvec.service.index.milvus``) each turn them
into their own structures.
"""

from __future__ import annotations

from dataclasses import dataclass
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

    def stats(self) -> dict[str, Any]:
        """The fields of an index's stats that its configuration fixes (every store adds the rest)."""
        return {
            k: getattr(self, k) for k in ("name", "model", "view", "mode", "dim", "factory", "metric", "normalize", "train_size", "created")
        }


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
