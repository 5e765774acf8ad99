"""The index service: search indexes over the embedding service, without HTTP.

The store (:func:`thoughtvec.service.index.backend.open_backend`: FAISS or Milvus, known here only through the
:class:`~thoughtvec.service.index.backend.IndexBackend` contract) keeps each index's documents and vectors;
this service embeds what goes in and what is asked (through
:class:`~thoughtvec.service.core.embedding.EmbeddingService`, so the same limits and long-input rules
apply), checks that an index's model is the export its vectors came from, and builds the default index
on first start. Store calls block (disk, FAISS, network): they run on the executor.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.limits import HIT_JSON_BYTES, check_answer, check_chars, check_count, room
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
from thoughtvec.service.errors import Conflict, IndexesReadOnly, InvalidInput, NotReady
from thoughtvec.service.index.backend import IndexBackend, open_backend
from thoughtvec.service.index.build import fill_index, is_filled, read_documents
from thoughtvec.service.index.contents import Doc, IndexConfig, Metric, new_id
from thoughtvec.service.index.fusion import Fusion
from thoughtvec.service.index.jsonvalues import check_metadata
from thoughtvec.service.settings import SearchMode, Settings, Truncation, default_search_mode

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
        self.store: IndexBackend = open_backend(settings, on_size=embedding.metrics.index_documents)
        self.building: dict[str, str] = {}  # name -> progress, for indexes being built in the background (the default)
        self.fusion = Fusion()  # hybrid search's fusion: the defaults chosen on the retrieval dev set

    # -- lifecycle -----------------------------------------------------------------------
    def open(self) -> None:
        """Take the store for this process now (a FAISS folder's lock: a second writer is refused here, at start-up,
        with :class:`~thoughtvec.service.errors.IndexFolderLocked`); quick, so on the event loop."""
        self.store.open()

    async def load(self) -> None:
        """Load every index the store holds (a broken one is quarantined, never fatal)."""
        await asyncio.get_running_loop().run_in_executor(None, self.store.load_all)

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.store.close)

    def readiness(self) -> tuple[dict[str, str], list[str]]:
        """Each index's state (ready, building with its progress, or quarantined with why), and the indexes being
        built that no search can use yet (the default index before its first documents are in)."""
        store = self.store
        names = store.names()
        states = (
            {n: "ready" for n in names}
            | {n: f"building: {p}" for n, p in self.building.items()}
            | {n: f"quarantined: {why}" for n, why in store.quarantined.items()}
        )
        return states, [n for n in self.building if n not in names]

    def expect_default_index(self) -> None:
        """Mark the default index as coming (503 with its progress, never 404) until :meth:`ensure_default_index`
        has found it or built it: called before anything loads."""
        s = self.settings
        if self._builds_default_index() and s.search_sample.is_file():
            self.building.setdefault(s.default_index, "loading the indexes")

    async def ensure_default_index(self) -> None:
        """Build the default search index on first start, in the background, if it can and must: as soon as its own
        model is loaded (not every model), a small batch first, so that it answers searches within seconds over the
        documents added so far; an interrupted build goes on where it stopped at the next start."""
        s, store = self.settings, self.store
        name = s.default_index
        if not self._builds_default_index() or not s.search_sample.is_file():
            if not s.search_sample.is_file() and self._builds_default_index():
                log.info("default index '%s' not built: no sample at %s", name, s.search_sample)
            self.building.pop(name, None)
            return
        loop = asyncio.get_running_loop()
        self.building[name] = "reading the sample"
        try:
            exists, docs, filled = await self._default_index_state()
            if filled:
                return
            made = await loop.run_in_executor(None, store.config, name) if exists else None
            model, view, mode = await self._default_index_model(name, made)
            config = None if exists else store.new_config(
                name, model.name, view, model.encoder.dim(view), fingerprint=model.encoder.fingerprint(view), mode=mode
            )  # fmt: skip
            log.info(
                "%s default index '%s' from %d sentences of %s with %s/%s, searched %s (searchable as it grows; kept in %s)",
                "resuming" if exists else "building",
                name,
                len(docs),
                s.search_sample,
                model.name,
                view,
                mode,
                s.index_dir if s.index_backend == "faiss" else s.milvus_uri,
            )

            def progress(done: int, total: int) -> None:
                self.building[name] = f"{done}/{total} sentences embedded" + ("; searchable over those" if done else ": the first batch")

            def encode(texts: list[str]) -> np.ndarray:  # on an executor thread: through the batcher on the loop
                return asyncio.run_coroutine_threadsafe(self.embedding.embed_bulk(model, view, texts), loop).result()

            progress(0, len(docs))
            await loop.run_in_executor(None, lambda: fill_index(store, encode, name, docs, resume=exists, progress=progress, create=config))
            log.info("default index '%s' ready: %d documents", name, len(docs))
        except Exception as e:  # noqa: BLE001 - the server runs on without it
            log.error("default index '%s' not built: %s", name, e)
        finally:
            self.building.pop(name, None)

    async def _default_index_state(self) -> tuple[bool, list[Doc], bool]:
        """(in the store, the sample's documents, all of them in it) for the default index."""
        s, loop = self.settings, asyncio.get_running_loop()
        exists = await loop.run_in_executor(None, self.store.__contains__, s.default_index)
        docs = await loop.run_in_executor(None, read_documents, s.search_sample, s.default_index_max_docs)
        return exists, docs, exists and await loop.run_in_executor(None, is_filled, self.store, s.default_index, docs)

    async def default_index_needed(self) -> bool:
        """Whether :meth:`ensure_default_index` would build or resume the default index (after :meth:`load`): the
        supervisor of several workers loads the models to build it only then."""
        s = self.settings
        return self._builds_default_index() and s.search_sample.is_file() and not (await self._default_index_state())[2]

    def _builds_default_index(self) -> bool:
        """Whether this server builds the default index where it is missing: asked to, and writing its store."""
        return self.settings.build_default_index and not self.settings.index_read_only

    async def _default_index_model(self, name: str, made: IndexConfig | None) -> tuple[Model, str, SearchMode]:
        """The default index's model, view and mode (by the dev rule; those it was ``made`` with when a stopped build
        goes on, 409 if its bundle is no longer that export), once that model is loaded and warmed (the others may
        still be loading); a model that will never load raises."""
        while True:
            try:
                if made is not None:
                    return self.index_model(name, made), made.view, made.mode
                return self.new_index_search(None, None, None)
            except NotReady as e:
                if self.embedding.registry.started:  # every bundle loaded or failed: it will not come
                    raise
                self.building[name] = f"waiting for its model ({e})"
                await asyncio.sleep(0.1)

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

    async def search(
        self,
        *,
        query: Any,
        index: str | None = None,
        k: int = 10,
        truncation: Truncation | None = None,
        mode: SearchMode | None = None,
    ) -> SearchResult:
        """``k`` neighbours of each query (a text, texts, or a vector) in ``index`` (default: the server's), found in
        ``mode`` (default: the index's; a vector query is searched by vector only)."""
        name = index or self.settings.default_index
        config = self.config(name)
        if not 1 <= k <= self.settings.max_k:
            raise InvalidInput(f"k is {k}; it must be between 1 and {self.settings.max_k}", field="k")
        texts_or_vector = self._query(query, config.dim, name)
        hits = len(texts_or_vector) * k  # the fewest bytes such an answer can have, before any search runs
        check_answer(hits * HIT_JSON_BYTES, self.settings.max_response_bytes, "k", f"{len(texts_or_vector)} queries x k {k}")
        vector_query = isinstance(texts_or_vector, np.ndarray)
        if not config.embedded and (vector_query or mode not in (None, "lexical")):
            raise InvalidInput(
                f"index '{name}' is lexical-only (made with mode 'lexical' named, its documents are not embedded): it is searched by "
                f"text in mode 'lexical'; {'a vector query' if vector_query else f'mode {mode!r}'} needs an index made with mode "
                "'dense' or 'hybrid'",
                field="query" if vector_query else "mode",
            )
        if isinstance(texts_or_vector, np.ndarray):
            if mode not in (None, "dense"):
                raise InvalidInput(
                    f"mode '{mode}' needs a text query; a vector query is searched by vector only (mode 'dense')", field="mode"
                )
            if config.model in self.embedding.registry.models:  # a vector query needs no model, but its index must not be stale
                self.index_model(name, config)
            rows = await self._run(self.store.search, name, texts_or_vector, k)
            return self._result(name, config, "dense", [[_hit(d, s) for d, s in row] for row in rows], Usage())
        mode = mode or config.mode
        self.store.check_mode(mode)
        fields = ["query"] if isinstance(query, str) else [f"query[{i}]" for i in range(len(texts_or_vector))]
        texts = self.embedding.texts(texts_or_vector, fields, truncation, setting="max_query_chars")
        chars = check_chars(texts, fields, self.settings.max_request_chars)
        if mode == "lexical":  # BM25 alone: no model runs, but the work is admitted to the index model's queue
            model = self.embedding.registry.models.get(config.model)
            held = model.batcher.admit(room(texts, chars, model.encoder.max_tokens)) if model is not None else contextlib.nullcontext()
            with held:
                rows = await self._run(self.store.lexical_search, name, texts, k)
            return self._result(name, config, mode, [[_hit(d, s) for d, s in row] for row in rows], Usage())
        model = self.index_model(name, config)
        enc = await self.embedding.encode(model, config.view, texts, fields, normalize=False, mode=truncation)
        if mode == "dense":
            rows = await self._run(self.store.search, name, enc.vectors, k)
            return self._result(name, config, mode, [[_hit(d, s) for d, s in row] for row in rows], enc.usage)
        depth = max(k, self.fusion.depth)  # each side's best `depth`, as the dev numbers were measured
        dense = await self._run(self.store.search, name, enc.vectors, depth)
        lexical = await self._run(self.store.lexical_search, name, texts, depth)
        results = [fuse_hits(self.fusion, d, lx, k, lower_is_better=config.metric == "l2") for d, lx in zip(dense, lexical)]
        return self._result(name, config, mode, results, enc.usage)

    @staticmethod
    async def _run(fn: Callable[..., Any], *args: Any) -> Any:
        """A blocking store call, on the executor."""
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    def _result(self, name: str, config: IndexConfig, mode: SearchMode, results: list[list[Hit]], usage: Usage) -> SearchResult:
        """The answer, within ``max_response_bytes`` with the hits' texts and metadata."""
        hits = sum(map(len, results))
        size = sum(len(h.text) + (len(json.dumps(h.metadata)) if h.metadata else 0) for row in results for h in row)
        check_answer(hits * HIT_JSON_BYTES + size, self.settings.max_response_bytes, "k", f"{hits} hits with their text and metadata")
        return SearchResult(name, config.model, config.metric, mode, results, usage)

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
    def _writable(self) -> None:
        """Refuse a write before any work where this process may not write its indexes (``workers`` over a folder)."""
        why = self.store.capabilities.read_only
        if why is not None:
            raise IndexesReadOnly(why, field="index")

    def _not_building(self, name: str) -> None:
        """503 for an index still being built here (dropping it mid-build)."""
        if name in self.building:
            raise NotReady(f"index '{name}' is being built ({self.building[name]})", field="index")

    def _searchable(self, name: str) -> None:
        """503 for an index being built that the store does not hold yet (the default index before its first
        batch is in); once it does, it answers over the documents added so far."""
        if name in self.building and name not in self.store:
            raise NotReady(f"index '{name}' is being built ({self.building[name]})", field="index")

    def config(self, name: str) -> IndexConfig:
        """Index ``name``'s config: 503 until a building index holds its first documents, else as the store answers
        (404, 503 quarantined)."""
        self._searchable(name)
        return self.store.config(name)

    def index_stats(self, name: str) -> IndexStats:
        self._searchable(name)
        return self.store.stats(name)

    def new_index_search(self, model: str | None, view: str | None, mode: SearchMode | None) -> tuple[Model, str, SearchMode]:
        """A new index's model, view and default mode: those named, the others by the dev rule
        (the model OpenAI's names get, the model guide's ``retrieval_models``, when none is named; the mode that
        scored best on dev for the model, of those the backend serves: ``settings.default_search_mode``)."""
        if mode is not None:
            self.store.check_mode(mode)
        if model is None:
            model = self.embedding.registry.retrieval_model
        m = self.embedding.model(model)  # None: the server's default model
        return m, m.encoder.view(view), mode or default_search_mode(m.name, self.store.capabilities.modes)

    async def create_index(
        self,
        *,
        name: str,
        model: str | None = None,
        view: str | None = None,
        mode: SearchMode | None = None,
        factory: str = "Flat",
        metric: Metric = "cosine",
        normalize: bool = True,
        train_size: int | None = None,
    ) -> IndexStats:
        """A new empty index for one model's view, searched in ``mode`` unless a search names another. Named
        ``mode`` ``lexical``, it is lexical-only: its documents are not embedded (BM25 alone, no model runs); a
        lexical mode chosen by the dev rule (no ``mode`` named) keeps the vectors, for dense search on request."""
        self._writable()
        named_mode = mode
        m, view, mode = self.new_index_search(model, view, mode)
        if name in self.building:
            raise Conflict(f"index '{name}' already exists (it is being built)", field="name")
        config = self.store.new_config(
            name,
            m.name,
            view,
            m.encoder.dim(view),
            factory=factory,
            metric=metric,
            normalize=normalize,
            train_size=train_size,
            fingerprint=m.encoder.fingerprint(view),
            mode=mode,
        )
        if named_mode == "lexical":  # lexical-only: no model runs for its documents
            config = config.model_copy(update={"embedded": False})
        await asyncio.get_running_loop().run_in_executor(None, self.store.create, config)
        return self.index_stats(name)

    async def add_documents(self, name: str, docs: Sequence[NewDocument], truncation: Truncation | None = None) -> DocumentsAdded:
        """Embed ``docs`` and add them; ids missing are generated. Durable once returned."""
        config = self.config(name)
        self._writable()
        check_count(len(docs), self.settings.max_inputs, "documents")
        fields = [f"documents[{i}].text" for i in range(len(docs))]
        texts = self.embedding.texts([d.text for d in docs], fields, truncation)
        for i, d in enumerate(docs):  # checked before anything is stored: a search must always be able to return it
            check_metadata(d.metadata, f"documents[{i}].metadata", self.settings.max_metadata_bytes, self.settings.max_metadata_depth)
        if not config.embedded:  # lexical-only: BM25 needs the words alone, so no model runs (zero rows fill the vectors' place)
            vectors, usage = np.zeros((len(texts), config.dim), np.float32), Usage()
        else:
            model = self.index_model(name, config)
            enc = await self.embedding.encode(model, config.view, texts, fields, normalize=False, mode=truncation, bulk=True)
            vectors, usage = enc.vectors, enc.usage
        items = [Doc(d.id or new_id(), t, d.metadata) for d, t in zip(docs, texts)]
        ids = await asyncio.get_running_loop().run_in_executor(None, self.store.add, name, items, vectors)
        count = await asyncio.get_running_loop().run_in_executor(None, self.store.count, name)
        return DocumentsAdded(name, ids, count, usage)

    async def index_map(
        self, name: str, query: str | None, limit: int, include: Sequence[str] = (), k: int = 0, mode: SearchMode | None = None
    ) -> IndexMap:
        """Up to ``limit`` of an index's documents on a 2-D PCA plane, with ``query`` on it. Drawn first: the
        query's ``k`` best documents by :meth:`search` (in ``mode``, default the index's: the search
        ``/v1/search`` makes), then those ``include`` names, then the first added."""
        config = self.config(name)
        if not config.embedded:
            raise InvalidInput(
                f"index '{name}' is lexical-only (made with mode 'lexical' named): its documents have no vectors to draw", field="name"
            )
        if not 3 <= limit <= self.settings.max_inputs:
            raise InvalidInput(f"limit is {limit}; it must be between 3 and {self.settings.max_inputs}", field="limit")
        if k and query is None or not 0 <= k <= limit:
            raise InvalidInput(f"k is {k}; it must be between 0 and limit ({limit}), and above 0 only with a query", field="k")
        if mode is not None and not k:
            raise InvalidInput("mode is the search's that marks the query's k best documents: send k too", field="mode")
        if query is not None:
            self.embedding.texts(
                [query], ["query"], setting="max_query_chars"
            )  # a text (the search below would take a list as texts or a vector)
        found = await self.search(query=query, index=name, k=k, mode=mode) if k else None
        hits = [h.id for h in found.results[0]] if found else None
        docs = await asyncio.get_running_loop().run_in_executor(None, self.store.documents, name, limit, (hits or []) + list(include))
        if not docs:  # one or two documents make a map too (a point, a line)
            raise InvalidInput(f"index '{name}' has no documents to map", field="name")
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
        usage = enc.usage if found is None else _sum(enc.usage, found.usage)
        return IndexMap(name, config.model, points, placed, [float(v) for v in share], usage, hits, found.mode if found else None)

    async def delete_documents(self, name: str, ids: list[str]) -> DocumentsDeleted:
        self.config(name)
        self._writable()
        check_count(len(ids), self.settings.max_inputs, "ids")
        found = await asyncio.get_running_loop().run_in_executor(None, self.store.delete, name, ids)
        gone = set(found)
        count = await asyncio.get_running_loop().run_in_executor(None, self.store.count, name)
        return DocumentsDeleted(name, found, [i for i in ids if i not in gone], count)

    async def drop_index(self, name: str) -> None:
        self._not_building(name)
        self._writable()
        await asyncio.get_running_loop().run_in_executor(None, self.store.drop, name)

    def list_indexes(self) -> IndexListing:
        return IndexListing([self.store.stats(n) for n in self.store.names()], dict(self.building), dict(self.store.quarantined))


def _sum(a: Usage, b: Usage) -> Usage:
    return Usage(a.tokens + b.tokens, a.split + b.split, a.truncated + b.truncated)


def _hit(d: Doc, score: float, dense_rank: int | None = None, lexical_rank: int | None = None) -> Hit:
    return Hit(d.id, d.text, score if math.isfinite(score) else None, d.metadata, dense_rank, lexical_rank)


def fuse_hits(fusion: Fusion, dense: list[tuple[Doc, float]], lexical: list[tuple[Doc, float]], k: int, lower_is_better: bool) -> list[Hit]:
    """One query's dense and lexical hits (each best first) fused by ``fusion``: the best ``k``, each with its rank
    on both sides. ``lower_is_better``: the dense scores are distances (metric l2), negated before fusing."""
    docs = {d.id: d for d, _ in lexical} | {d.id: d for d, _ in dense}
    dense_rank = {d.id: r for r, (d, _) in enumerate(dense, start=1)}
    lexical_rank = {d.id: r for r, (d, _) in enumerate(lexical, start=1)}
    sign = -1.0 if lower_is_better else 1.0
    fused = fusion.fuse([(d.id, sign * s) for d, s in dense if math.isfinite(s)], [(d.id, s) for d, s in lexical], k)
    return [_hit(docs[i], s, dense_rank.get(i), lexical_rank.get(i)) for i, s in fused]
