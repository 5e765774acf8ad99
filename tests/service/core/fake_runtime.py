"""A fake runtime for the services without HTTP: a bundle whose "model" is a fixed table (deterministic, instant).

:class:`FakeEncoder` is the tiny bundle's :class:`~thoughtvec.service.core.encoder.Encoder` (its tokenizer, views,
limits and fingerprint) with the graph run replaced by a table lookup, so a test knows every vector the services
must return. :func:`fake_services` builds the embedding service and the index services over such encoders, as
:class:`Core` builds them over the registry's, with the index store the settings name (FAISS under a temporary folder).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import numpy as np

from tests.service.conftest import settings_for
from thoughtvec.service.bundle.format import load_bundle
from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.core.batcher import Batcher
from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.core.indexing import IndexServices
from thoughtvec.service.core.metrics import Metrics
from thoughtvec.service.core.registry import Model

DEVICES = {"onnxruntime_providers": ["CPUExecutionProvider"], "faiss_gpus": 0, "indexes_on_gpu": False}


class FakeEncoder(Encoder):
    """The bundle at ``path`` with a table for a model: a text's ``mean`` vector is the mean of its token ids'
    rows of a fixed random table, its ``meanmax`` vector [mean, max]. A vector depends on its ids alone, never on
    its batch. Every batch's size is recorded; ``gate`` (set: open) holds the worker inside a run, ``entered``
    says a run began, ``fail`` makes every run raise it."""

    def __init__(self, path: Path, seed: int = 0):
        super().__init__(load_bundle(path))
        base = self.spec.views[self.spec.default_view].dim
        self.table = np.random.default_rng(seed).standard_normal((self.spec.vocabulary.size + 8, base)).astype(np.float32)
        self.batches: list[int] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()
        self.fail: Exception | None = None

    def vector(self, ids: Sequence[int], view: str | None = None) -> np.ndarray:
        """The raw vector of one id list in ``view``: what the "model" computes."""
        rows = self.table[np.asarray(ids, np.int64) % len(self.table)]  # (T, base)
        mean = rows.mean(0)
        return np.concatenate([mean, rows.max(0)]) if self.dim(view) == 2 * len(mean) else mean

    def expected(self, text: str, view: str | None = None) -> np.ndarray:
        """The unit vector the services must return for a text within the token limit."""
        return l2_normalize(self.vector(self.token_ids(text), view)[None, :])[0]

    def run_views(self, batch: Sequence[Sequence[int]], views: Sequence[str]) -> dict[str, np.ndarray]:
        self.entered.set()
        assert self.gate.wait(10), "the test never opened the gate"
        if self.fail is not None:
            raise self.fail
        self.batches.append(len(batch))
        return {v: np.stack([self.vector(ids, v) for ids in batch]).astype(np.float32) for v in views}


@contextlib.asynccontextmanager
async def fake_services(
    models_dir: Path, index_dir: Path, models: Sequence[str] = ("tiny", "tiny2"), **settings
) -> AsyncIterator[tuple[EmbeddingService, IndexServices, dict[str, FakeEncoder]]]:
    """The embedding service over :class:`FakeEncoder`\\ s of ``models`` (loaded, started, warm), and the index
    services over it (admin, search, ingest) with their indexes under ``index_dir``; ``settings`` override the test
    defaults."""
    s = settings_for(models_dir, index_dir, **settings)
    embedding = EmbeddingService(s, Metrics())
    encoders = {name: FakeEncoder(models_dir / name, seed=i) for i, name in enumerate(models)}
    registry = embedding.registry
    for name, enc in encoders.items():
        model = Model(enc, Batcher(name, enc, registry._limits(), registry.observer), warmed=True)
        model.batcher.start()
        registry.models[name] = model
    registry.discovered, registry.started = list(encoders), True
    indexes = IndexServices.over(s, embedding)
    await indexes.admin.load()
    try:
        yield embedding, indexes, encoders
    finally:
        for enc in encoders.values():
            enc.gate.set()
        await embedding.stop()
        await indexes.admin.close()
