"""The index service: search indexes over the embedding service, without HTTP.

The store (:func:`thoughtvec.service.index.backend.open_store`: FAISS or Milvus) keeps each index's
documents and vectors; this service embeds what goes in and what is asked (through
:class:`~thoughtvec.service.core.embedding.EmbeddingService`, so the same limits and long-input rules
apply), checks that an index's model is the export its vectors came from, and builds the default index
on first start. Store calls block (disk, FAISS, network): they run on the executor.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from thoughtvec.service.core.batcher import check_count
from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.projection import pca_2d, project
from thoughtvec.service.core.registry import Model
from thoughtvec.service.core.results import (
    DocumentsAdded,
    DocumentsDeleted,
    Hit,
    IndexListing,
    IndexMap,
    IndexStats,
    MapPoint,
    SearchResult,
    Usage,
)
from thoughtvec.service.errors import Conflict, InvalidInput
from thoughtvec.service.index.backend import IndexBackend, MilvusOptions, open_store
from thoughtvec.service.index.build import build_index, read_documents
from thoughtvec.service.index.contents import Doc, IndexConfig, Metric
from thoughtvec.service.index.indexes import new_config
from thoughtvec.service.index.jsonvalues import check_metadata
from thoughtvec.service.index.store import new_id
from thoughtvec.service.settings import Settings, Truncation

log = logging.getLogger(__name__)


class NewDocument(Protocol):
    """A document to add: what ``POST /v1/indexes/{name}/documents`` carries for each."""

    text: Any
    id: str | None
    metadata: dict[str, Any] | None


class IndexService:
    """Every index in the store, searched and written through the embedding service's models."""

    def __init__(self, settings: Settings, embedding: EmbeddingService):
        self.settings = settings
        self.embedding = embedding
        self.store: IndexBackend = open_store(
            settings.index_backend,
            index_dir=settings.index_dir,
            wal_max_bytes=settings.index_wal_max_mb * 2**20,
            on_size=embedding.metrics.index_documents,
            gpu=settings.prefer_cuda,
            milvus=MilvusOptions.of(settings),
        )

    # -- lifecycle -----------------------------------------------------------------------
    async def load(self) -> None:
        """Load every index the store holds (a broken one is quarantined, never fatal)."""
        await asyncio.get_running_loop().run_in_executor(None, self.store.load_all)

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.store.close)

    def readiness(self) -> dict[str, str]:
        """Each index's state: ready, building (with its progress) or quarantined (with why)."""
        store = self.store
        return (
            {n: "ready" for n in store.names()}
            | {n: f"building: {p}" for n, p in store.building.items()}
            | {n: f"quarantined: {why}" for n, why in store.quarantined.items()}
        )

    async def ensure_default_index(self) -> None:
        """Build the default search index on first start, in the background, if it can and must."""
        s, store = self.settings, self.store
        name = s.default_index
        if not s.build_default_index or name in store:
            return
        if not s.search_sample.is_file():
            log.info("default index '%s' not built: no sample at %s", name, s.search_sample)
            return
        model = self.embedding.registry.models.get(self.embedding.registry.default_model or "")
        if model is None:
            log.info("default index '%s' not built: no default model loaded", name)
            return
        loop = asyncio.get_running_loop()
        store.building[name] = "reading the sample"
        try:
            docs = await loop.run_in_executor(None, read_documents, s.search_sample, s.default_index_max_docs)
            log.info(
                "building default index '%s' from %d sentences of %s with %s (cached in %s afterwards)",
                name,
                len(docs),
                s.search_sample,
                model.name,
                s.index_dir,
            )

            def progress(done: int, total: int) -> None:
                store.building[name] = f"{done}/{total} sentences embedded"

            def encode(texts: list[str]) -> np.ndarray:  # on an executor thread: through the batcher on the loop
                return asyncio.run_coroutine_threadsafe(self.embedding.embed_bulk(model, view, texts), loop).result()

            view = model.encoder.view(None)
            built = await loop.run_in_executor(
                None,
                lambda: build_index(
                    encode,
                    name,
                    docs,
                    model=model.name,
                    view=view,
                    dim=model.encoder.dim(view),
                    progress=progress,
                    fingerprint=model.encoder.fingerprint(view),
                ),
            )
            store.building[name] = "writing"
            await loop.run_in_executor(None, store.install, built)
            log.info("default index '%s' ready: %d documents", name, len(built.docs))
        except Exception as e:  # noqa: BLE001 - the server runs on without it
            log.error("default index '%s' not built: %s", name, e)
        finally:
            store.building.pop(name, None)

    # -- search --------------------------------------------------------------------------
    def _query(self, query: Any, dim: int, name: str) -> list[str] | np.ndarray:
        """The query's texts, or its vector as a (1, dim) float32 array."""
        if isinstance(query, str):
            return [query]
        if not isinstance(query, list) or not query:
            raise InvalidInput("query must be a text, a non-empty list of texts, or a vector of numbers", field="query")
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in query):
            if len(query) != dim:
                raise InvalidInput(f"query has {len(query)} dimensions; index '{name}' has {dim}", field="query")
            with np.errstate(over="ignore"):  # 1e308 overflows float32 to inf: refused just below
                vec = np.asarray(query, np.float32)[None, :]
            if not np.isfinite(vec).all():
                raise InvalidInput("query has a value that is not a finite float32", field="query")
            return vec
        check_count(len(query), self.settings.max_inputs, "query")
        return query

    async def search(self, *, query: Any, index: str | None = None, k: int = 10, truncation: Truncation | None = None) -> SearchResult:
        """``k`` neighbours of each query (a text, texts, or a vector) in ``index`` (default: the server's)."""
        name = index or self.settings.default_index
        config = self.store.config(name)
        if not 1 <= k <= self.settings.max_k:
            raise InvalidInput(f"k is {k}; it must be between 1 and {self.settings.max_k}", field="k")
        texts_or_vector = self._query(query, config.dim, name)
        if isinstance(texts_or_vector, np.ndarray):
            if config.model in self.embedding.registry.models:  # a vector query needs no model, but its index must not be stale
                self.index_model(name, config)
            vectors, counts = texts_or_vector, Usage()
        else:
            texts = texts_or_vector
            fields = ["query"] if isinstance(query, str) else [f"query[{i}]" for i in range(len(texts))]
            model = self.index_model(name, config)
            enc = await self.embedding.encode(
                model, config.view, self.embedding.texts(texts, fields, truncation), fields, normalize=False, mode=truncation
            )
            vectors, counts = enc.vectors, enc.usage
        hits = await asyncio.get_running_loop().run_in_executor(None, self.store.search, name, vectors, k)
        results = [[Hit(d.id, d.text, s if math.isfinite(s) else None, d.metadata) for d, s in row] for row in hits]
        return SearchResult(name, config.model, config.metric, results, counts)

    def index_model(self, name: str, config: IndexConfig) -> Model:
        """The model that embeds texts for index ``name``: 409 if its bundle is not the export the index's
        vectors came from (a re-exported bundle keeps its name but not its vectors; mixing the two would
        rank by numbers that mean nothing). Indexes made before fingerprints were kept are not checked."""
        model = self.embedding.model(config.model, field_name="index")
        now = model.encoder.fingerprint(config.view)
        if config.fingerprint and config.fingerprint != now:
            raise Conflict(
                f"index '{name}' holds vectors of an earlier export of model '{config.model}' (view '{config.view}', "
                f"fingerprint {config.fingerprint}; the loaded bundle's is {now}), so new queries and documents would not "
                "be comparable with them: drop the index and add its documents again, or serve the bundle it was made with"
                + (" (the default index is built again from the sample at the next start)" if name == self.settings.default_index else ""),
                field="index",
            )
        return model

    # -- index management ----------------------------------------------------------------
    def index_stats(self, name: str) -> IndexStats:
        return IndexStats.of(self.store.stats(name))

    async def create_index(
        self,
        *,
        name: str,
        model: str | None = None,
        view: str | None = None,
        factory: str = "Flat",
        metric: Metric = "cosine",
        normalize: bool = True,
        train_size: int | None = None,
    ) -> IndexStats:
        """A new empty index for one model's view."""
        m = self.embedding.model(model)
        view = m.encoder.view(view)
        try:
            config = new_config(
                name, m.name, view, m.encoder.dim(view), factory, metric, normalize, train_size, m.encoder.fingerprint(view)
            )
        except ValueError as e:
            raise InvalidInput(str(e), field="factory") from None
        await asyncio.get_running_loop().run_in_executor(None, self.store.create, config)
        return self.index_stats(name)

    async def add_documents(self, name: str, docs: Sequence[NewDocument], truncation: Truncation | None = None) -> DocumentsAdded:
        """Embed ``docs`` and add them; ids missing are generated. Durable once returned."""
        config = self.store.config(name)
        check_count(len(docs), self.settings.max_inputs, "documents")
        fields = [f"documents[{i}].text" for i in range(len(docs))]
        texts = self.embedding.texts([d.text for d in docs], fields, truncation)
        for i, d in enumerate(docs):  # checked before anything is stored: a search must always be able to return it
            check_metadata(d.metadata, f"documents[{i}].metadata", self.settings.max_metadata_bytes, self.settings.max_metadata_depth)
        model = self.index_model(name, config)
        enc = await self.embedding.encode(model, config.view, texts, fields, normalize=False, mode=truncation)
        items = [Doc(d.id or new_id(), t, d.metadata) for d, t in zip(docs, texts)]
        ids = await asyncio.get_running_loop().run_in_executor(None, self.store.add, name, items, enc.vectors)
        count = await asyncio.get_running_loop().run_in_executor(None, self.store.count, name)
        return DocumentsAdded(name, ids, count, enc.usage)

    async def index_map(self, name: str, query: str | None, limit: int, include: Sequence[str] = ()) -> IndexMap:
        """Up to ``limit`` of an index's documents (those ``include`` names first) on a 2-D PCA plane, with ``query`` on it."""
        config = self.store.config(name)
        if not 3 <= limit <= self.settings.max_inputs:
            raise InvalidInput(f"limit is {limit}; it must be between 3 and {self.settings.max_inputs}", field="limit")
        docs = await asyncio.get_running_loop().run_in_executor(None, self.store.documents, name, limit, include)
        if len(docs) < 3:
            raise InvalidInput(f"index '{name}' has {len(docs)} documents; a map needs at least 3", field="name")
        model = self.index_model(name, config)
        texts = [d.text for d in docs] + ([query] if query is not None else [])
        fields = [f"documents[{i}]" for i in range(len(docs))] + ["query"]
        enc = await self.embedding.encode(
            model, config.view, self.embedding.texts(texts, fields[: len(texts)]), fields[: len(texts)], normalize=True
        )
        mean, axes, share = pca_2d(enc.vectors[: len(docs)])
        xy = project(enc.vectors, mean, axes)
        points = [MapPoint(d.text, float(p[0]), float(p[1]), id=d.id) for d, p in zip(docs, xy)]
        placed = MapPoint(query, float(xy[-1, 0]), float(xy[-1, 1])) if query is not None else None
        return IndexMap(name, config.model, points, placed, [float(v) for v in share], enc.usage)

    async def delete_documents(self, name: str, ids: list[str]) -> DocumentsDeleted:
        self.store.config(name)
        check_count(len(ids), self.settings.max_inputs, "ids")
        found = await asyncio.get_running_loop().run_in_executor(None, self.store.delete, name, ids)
        gone = set(found)
        count = await asyncio.get_running_loop().run_in_executor(None, self.store.count, name)
        return DocumentsDeleted(name, found, [i for i in ids if i not in gone], count)

    async def drop_index(self, name: str) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.store.drop, name)

    def list_indexes(self) -> IndexListing:
        return IndexListing([self.index_stats(n) for n in self.store.names()], dict(self.store.building), dict(self.store.quarantined))
