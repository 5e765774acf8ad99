"""The service without HTTP: validate inputs, embed through the batchers, score, search, manage indexes.

Routes call these methods and serialise what they return; tests call them directly too. Every
problem is raised as a domain error (``thoughtvec.service.errors``) that names the field and the limit.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from thoughtvec.service import __version__
from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.core.batcher import LOOKAHEAD, OFFLOAD_CHARS, check_count
from thoughtvec.service.core.encoder import available_providers
from thoughtvec.service.core.longinput import pool, prepare
from thoughtvec.service.core.metrics import Metrics
from thoughtvec.service.core.planner import plan_batches
from thoughtvec.service.core.projection import pca_2d, project
from thoughtvec.service.core.registry import Model, Registry
from thoughtvec.service.core.results import (
    DocumentsAdded,
    DocumentsDeleted,
    Encoded,
    Hit,
    IndexListing,
    IndexMap,
    IndexStats,
    Info,
    MapPoint,
    ModelInfo,
    PairScore,
    Ranked,
    Reranked,
    SearchResult,
    Similarity,
    Token,
    Tokenization,
    Tokenized,
    Usage,
)
from thoughtvec.service.core.token_ids import read_input
from thoughtvec.service.errors import Conflict, InputTooLong, InvalidInput, QueueFull
from thoughtvec.service.index.backend import MilvusOptions, open_store
from thoughtvec.service.index.build import build_index, read_documents
from thoughtvec.service.index.indexes import Doc, IndexConfig, Metric, gpu_count, new_config
from thoughtvec.service.index.jsonvalues import check_metadata
from thoughtvec.service.index.store import new_id
from thoughtvec.service.settings import Settings, Truncation

log = logging.getLogger(__name__)


class NewDocument(Protocol):
    """A document to add: what ``POST /v1/indexes/{name}/documents`` carries for each."""

    text: Any
    id: str | None
    metadata: dict[str, Any] | None


class Core:
    def __init__(self, settings: Settings, metrics: Metrics | None = None):
        self.settings = settings
        self.metrics = metrics or Metrics()
        self.registry = Registry(settings, self.metrics)
        self.store = open_store(
            settings.index_backend,
            index_dir=settings.index_dir,
            wal_max_bytes=settings.index_wal_max_mb * 2**20,
            on_size=self.metrics.index_documents,
            gpu=settings.prefer_cuda,
            milvus=MilvusOptions.of(settings),
        )
        self._tasks: list[asyncio.Task] = []

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        """Load indexes, then models (warm-up), then build the default index if it is missing."""
        log.info("devices: %s", self.devices())
        await asyncio.get_running_loop().run_in_executor(None, self.store.load_all)
        await self.registry.load_all()
        for name in self.registry.models:
            self.metrics.model_loaded(name)
        await self.ensure_default_index()

    async def ensure_default_index(self) -> None:
        """Build the default search index on first start, in the background, if it can and must."""
        s, store = self.settings, self.store
        name = s.default_index
        if not s.build_default_index or name in store:
            return
        if not s.search_sample.is_file():
            log.info("default index '%s' not built: no sample at %s", name, s.search_sample)
            return
        model = self.registry.models.get(self.registry.default_model or "")
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
                return asyncio.run_coroutine_threadsafe(self.embed_bulk(model, view, texts), loop).result()

            view = model.encoder.view(None)
            vi = await loop.run_in_executor(
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
            await loop.run_in_executor(None, store.install, vi)
            log.info("default index '%s' ready: %d documents", name, vi.count)
        except Exception as e:  # noqa: BLE001 - the server runs on without it
            log.error("default index '%s' not built: %s", name, e)
        finally:
            store.building.pop(name, None)

    async def embed_bulk(self, model: Model, view: str, texts: list[str]) -> np.ndarray:
        """Raw vectors for many texts through the model's batcher (its one ONNX thread, its metrics).

        Long texts are split and pooled; the parts are planned once, by length, and queued a few batches
        at a time, so requests arriving meanwhile wait behind a few batches, never behind the whole build.
        A full queue (429 for a request) only makes the build wait its turn.
        """
        enc, lim = model.encoder, model.batcher.limits
        fields = [f"documents[{i}]" for i in range(len(texts))]
        prep = await asyncio.get_running_loop().run_in_executor(None, prepare, enc, texts, fields, "split")
        order = [i for batch in plan_batches([len(p) for p in prep.parts], lim.max_batch_size, lim.max_batch_tokens) for i in batch]
        out = np.empty((len(prep.parts), enc.dim(view)), np.float32)
        step = lim.max_batch_size * LOOKAHEAD
        for start in range(0, len(order), step):
            idx = order[start : start + step]
            while True:
                try:
                    out[idx] = (await model.batcher.embed_ids([prep.parts[i] for i in idx], view)).vectors
                    break
                except QueueFull as e:
                    await asyncio.sleep(e.retry_after_s)
        return pool(out, prep, len(texts))

    def start_background(self) -> None:
        task = asyncio.get_running_loop().create_task(self.start(), name="thoughtvec-start")

        def report(t: asyncio.Task) -> None:
            if not t.cancelled() and t.exception() is not None:
                log.error("start-up failed: %r", t.exception())

        task.add_done_callback(report)
        self._tasks.append(task)

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            try:
                await t
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - already logged
                pass
        await self.registry.stop()
        await asyncio.get_running_loop().run_in_executor(None, self.store.close)

    def devices(self) -> dict:
        """What runs where: ONNX Runtime's providers on this machine, FAISS's GPUs and whether indexes use them."""
        gpus = gpu_count()
        return {
            "onnxruntime_providers": available_providers(self.settings.prefer_cuda),
            "faiss_gpus": gpus,
            "indexes_on_gpu": bool(gpus and self.settings.prefer_cuda),
        }

    def readiness(self) -> tuple[bool, dict]:
        ok, body = self.registry.readiness()
        body["indexes"] = (
            {n: "ready" for n in self.store.names()}
            | {n: f"building: {p}" for n, p in self.store.building.items()}
            | {n: f"quarantined: {why}" for n, why in self.store.quarantined.items()}
        )
        return ok, body

    # -- shared checks ---------------------------------------------------------------------
    def mode(self, requested: Truncation | None) -> Truncation:
        """The request's truncation mode, else the server's."""
        return requested or self.settings.truncation

    def texts(self, items: Sequence[Any], fields: Sequence[str], mode: Truncation | None = None) -> list[str]:
        """Check each text: a string, not blank, within ``max_input_chars`` (cut only under truncation=truncate)."""
        limit = self.settings.max_input_chars
        mode = self.mode(mode)
        out = []
        for item, fld in zip(items, fields):
            if not isinstance(item, str):
                raise InvalidInput(f"{fld} must be a string, got {type(item).__name__}", field=fld)
            if not item.strip():
                raise InvalidInput(f"{fld} is empty or only whitespace; send at least one visible character", field=fld)
            if len(item) > limit:
                if mode != "truncate":  # splitting does not lift the character limit: it bounds the work
                    raise InputTooLong(f"{fld} has {len(item)} characters; the limit is {limit} (max_input_chars)", field=fld)
                item = item[:limit]
            out.append(item)
        return out

    async def encode(
        self,
        model: Model,
        view: str,
        texts: list[str],
        fields: list[str],
        normalize: bool = True,
        mode: Truncation | None = None,
        dimensions: int | None = None,
    ) -> Encoded:
        """Vectors for checked texts: long ones split (and pooled), truncated or rejected as ``mode`` says;
        with ``dimensions``, projected on the view's top principal axes (``Encoder.reduce``)."""
        enc, mode = model.encoder, self.mode(mode)
        enc.dimensions(view, dimensions)  # a 422 before any work
        model.batcher.check_room()  # before tokenizing: under overload a 429 must be cheap
        if sum(map(len, texts)) > OFFLOAD_CHARS:  # tokenizing and splitting long texts stays off the event loop
            prep = await asyncio.get_running_loop().run_in_executor(None, prepare, enc, texts, fields, mode)
        else:
            prep = prepare(enc, texts, fields, mode)
        if prep.truncated:  # text was dropped: say so where operators look, not only in the response
            log.info("%s: %d input(s) over %d tokens truncated (truncation=truncate)", model.name, prep.truncated, enc.max_tokens)
        if prep.split:
            log.debug("%s: %d input(s) over %d tokens split into sentences and pooled", model.name, prep.split, enc.max_tokens)
        emb = await model.batcher.embed_ids(prep.parts, view)
        vecs = enc.reduce(pool(emb.vectors, prep, len(texts)), view, dimensions)
        tokens = sum(emb.tokens)
        self.metrics.embedded(model.name, len(texts), len(prep.parts), tokens, prep.split, prep.truncated)
        return Encoded(model.name, view, l2_normalize(vecs) if normalize else vecs, tokens, prep.split, prep.truncated)

    # -- embeddings ----------------------------------------------------------------------
    async def embeddings(
        self,
        raw_input: Any,
        model_name: str | None,
        view: str | None,
        normalize: bool,
        dimensions: int | None = None,
        truncation: Truncation | None = None,
    ) -> Encoded:
        """OpenAI's input forms: a string, a list of strings, a list of token ids, a list of lists of token ids."""
        model = self.registry.get(model_name)
        view = model.encoder.view(view)
        items, fields = read_input(raw_input)
        check_count(len(items), self.settings.max_inputs, "input")
        return await self.encode(model, view, self.texts(items, fields, truncation), fields, normalize, truncation, dimensions)

    # -- what is served, and how a text is seen ------------------------------------------
    def info(self) -> Info:
        """Models, aliases, limits, version and devices in one answer (TEI's and infinity's /info)."""
        reg, s = self.registry, self.settings
        models = [
            ModelInfo(
                n,
                m.encoder.dim(),
                {v: m.encoder.dim(v) for v in m.encoder.spec.views},
                m.encoder.max_tokens,
                m.encoder.spec.family,
                n == reg.default_model,
            )
            for n, m in sorted(reg.models.items())
        ]
        limits = {
            k: getattr(s, k)
            for k in (
                "truncation",
                "max_inputs",
                "max_input_chars",
                "max_k",
                "max_body_bytes",
                "max_batch_size",
                "max_batch_tokens",
                "max_queue_size",
            )
        }
        return Info("thoughtvec", __version__, reg.default_model, models, reg.aliases(), s.default_index, limits, self.devices())

    def tokenize(self, raw_input: Any, model_name: str | None) -> Tokenization:
        """Each text's tokens as the model sees them, with their ids and which are out of the vocabulary."""
        model = self.registry.get(model_name)
        items, fields = read_input(raw_input)
        check_count(len(items), self.settings.max_inputs, "input")
        spec = model.encoder.spec
        data = []
        for i, text in enumerate(self.texts(items, fields, "truncate")):
            toks = [Token(p.text, p.id, p.oov, p.special) for p in model.encoder.tokenizer.pieces(text)]
            data.append(Tokenized(i, toks, [t.text for t in toks if t.oov], len(toks) > spec.max_input_tokens))
        return Tokenization(model.name, spec.max_input_tokens, data)

    # -- similarity ----------------------------------------------------------------------
    def _pairs(
        self, pairs: list[Any] | None, source: Any, targets: list[Any] | None
    ) -> tuple[list[tuple[Any, Any]], list[tuple[str, str]]]:
        """The pairs and the field name of each side, from either request form."""
        if pairs is not None and (source is not None or targets is not None):
            raise InvalidInput("send either pairs, or source and targets, not both", field="pairs")
        if pairs is not None:
            check_count(len(pairs), self.settings.max_inputs, "pairs")
            for i, p in enumerate(pairs):
                if not isinstance(p, list) or len(p) != 2:
                    raise InvalidInput(f"pairs[{i}] must be a list of two texts", field=f"pairs[{i}]")
            return [(p[0], p[1]) for p in pairs], [(f"pairs[{i}][0]", f"pairs[{i}][1]") for i in range(len(pairs))]
        if source is None or targets is None:
            raise InvalidInput("send pairs ([[a, b], ...]) or source and targets", field="source" if source is None else "targets")
        check_count(len(targets), self.settings.max_inputs, "targets")
        return [(source, t) for t in targets], [("source", f"targets[{i}]") for i in range(len(targets))]

    async def similarity(
        self,
        *,
        pairs: list[Any] | None = None,
        source: Any = None,
        targets: list[Any] | None = None,
        model: str | None = None,
        view: str | None = None,
        truncation: Truncation | None = None,
    ) -> Similarity:
        """Cosine (and relatedness) for ``pairs``, or for ``source`` against each of ``targets``."""
        m = self.registry.get(model)
        view = m.encoder.view(view)
        texts, fields = self._pairs(pairs, source, targets)
        data, enc = await self.score(m, view, texts, fields, truncation)
        return Similarity(m.name, view, data, enc.usage)

    async def score(
        self, model: Model, view: str, pairs: Sequence[tuple[Any, Any]], fields: Sequence[tuple[str, str]], mode: Truncation | None = None
    ) -> tuple[list[PairScore], Encoded]:
        """The scoring core of similarity and rerank: a score (and relatedness) per pair, and the usage."""
        unique: dict[str, int] = {}  # each distinct text is embedded once
        ufields: list[str] = []
        a, b = [], []
        for pair, fpair in zip(pairs, fields):
            idx = []
            for text, fld in zip(self.texts(pair, fpair, mode), fpair):
                if text not in unique:
                    unique[text] = len(unique)
                    ufields.append(fld)
                idx.append(unique[text])
            a.append(idx[0])
            b.append(idx[1])
        texts = list(unique)
        enc = await self.encode(model, view, texts, ufields, normalize=False, mode=mode)
        unit = l2_normalize(enc.vectors)
        cos = np.clip(np.einsum("nd,nd->n", unit[a], unit[b]), -1.0, 1.0)  # rounding can step past 1
        if model.head is None or model.head_view is None:  # the registry loads them together
            return [PairScore(i, float(c)) for i, c in enumerate(cos)], enc
        hv = enc.vectors
        if model.head_view != view:
            henc = await self.encode(model, model.head_view, texts, ufields, normalize=False, mode=mode)
            hv, enc.tokens = henc.vectors, enc.tokens + henc.tokens
        related = model.head.predict(hv[a], hv[b])
        return [PairScore(i, float(c), float(r)) for i, (c, r) in enumerate(zip(cos, related))], enc

    async def rerank(
        self,
        *,
        query: Any,
        documents: list[Any],
        top_n: int | None = None,
        return_documents: bool = False,
        model: str | None = None,
        view: str | None = None,
        truncation: Truncation | None = None,
    ) -> Reranked:
        """Documents ordered by cosine similarity to the query (infinity's and Cohere's shape)."""
        m = self.registry.get(model)
        view = m.encoder.view(view)
        check_count(len(documents), self.settings.max_inputs, "documents")
        if top_n is not None and top_n < 1:
            raise InvalidInput(f"top_n is {top_n}; it must be at least 1", field="top_n")
        fields = [("query", f"documents[{i}]") for i in range(len(documents))]
        data, enc = await self.score(m, view, [(query, d) for d in documents], fields, truncation)
        order = sorted(data, key=lambda r: -r.score)[:top_n]
        results = [Ranked(r.index, r.score, documents[r.index] if return_documents else None) for r in order]
        return Reranked(m.name, results, enc.usage)

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
            if config.model in self.registry.models:  # a vector query needs no model, but its index must not be stale
                self.index_model(name, config)
            vectors, counts = texts_or_vector, Usage()
        else:
            texts = texts_or_vector
            fields = ["query"] if isinstance(query, str) else [f"query[{i}]" for i in range(len(texts))]
            model = self.index_model(name, config)
            enc = await self.encode(model, config.view, self.texts(texts, fields, truncation), fields, normalize=False, mode=truncation)
            vectors, counts = enc.vectors, enc.usage
        hits = await asyncio.get_running_loop().run_in_executor(None, self.store.search, name, vectors, k)
        results = [[Hit(d.id, d.text, s if math.isfinite(s) else None, d.metadata) for d, s in row] for row in hits]
        return SearchResult(name, config.model, config.metric, results, counts)

    def index_model(self, name: str, config: IndexConfig) -> Model:
        """The model that embeds texts for index ``name``: 409 if its bundle is not the export the index's
        vectors came from (a re-exported bundle keeps its name but not its vectors; mixing the two would
        rank by numbers that mean nothing). Indexes made before fingerprints were kept are not checked."""
        model = self.registry.get(config.model, field_name="index")
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
        m = self.registry.get(model)
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
        texts = self.texts([d.text for d in docs], fields, truncation)
        for i, d in enumerate(docs):  # checked before anything is stored: a search must always be able to return it
            check_metadata(d.metadata, f"documents[{i}].metadata", self.settings.max_metadata_bytes, self.settings.max_metadata_depth)
        model = self.index_model(name, config)
        enc = await self.encode(model, config.view, texts, fields, normalize=False, mode=truncation)
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
        enc = await self.encode(model, config.view, self.texts(texts, fields[: len(texts)]), fields[: len(texts)], normalize=True)
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
