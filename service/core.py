"""The service without HTTP: validate inputs, embed through the batchers, score, search, manage indexes.

Routes call these methods and serialise what they return; tests call them directly too. Every
problem is raised as a domain error (``service.errors``) that names the field and the limit.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from service.batcher import check_count
from service.encoder import available_providers, l2_normalize
from service.errors import InputTooLong, InvalidInput
from service.index_store import IndexStore, new_id
from service.jsonvalues import check_metadata
from service.indexes import Doc, gpu_count, new_config
from service.metrics import Metrics
from service.registry import Model, Registry
from service.schemas import AddDocumentsRequest, CreateIndexRequest, SearchRequest, SimilarityRequest
from service.settings import Settings

log = logging.getLogger(__name__)


@dataclass
class Encoded:
    model: str
    view: str
    vectors: np.ndarray  # (n, dim)
    tokens: int


class Core:
    def __init__(self, settings: Settings, metrics: Metrics | None = None):
        self.settings = settings
        self.metrics = metrics or Metrics()
        self.registry = Registry(settings, self.metrics)
        self.store = IndexStore(settings.index_dir, settings.index_wal_max_mb * 2**20, self.metrics.index_documents,
                                gpu=settings.prefer_cuda)
        self._tasks: list[asyncio.Task] = []

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        """Load indexes, then models (warm-up), then build the default index if it is missing."""
        from service.index_build import ensure_default_index  # it imports this module

        log.info("devices: %s", self.devices())
        await asyncio.get_running_loop().run_in_executor(None, self.store.load_all)
        await self.registry.load_all()
        await ensure_default_index(self)

    def start_background(self) -> None:
        task = asyncio.get_running_loop().create_task(self.start(), name="thoughtvec-start")
        task.add_done_callback(lambda t: t.cancelled() or t.exception() is None or log.error("start-up failed: %r", t.exception()))
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
        return {"onnxruntime_providers": available_providers(self.settings.prefer_cuda), "faiss_gpus": gpus,
                "indexes_on_gpu": bool(gpus and self.settings.prefer_cuda)}

    def readiness(self) -> tuple[bool, dict]:
        ok, body = self.registry.readiness()
        body["indexes"] = ({n: "ready" for n in self.store.names()} | {n: f"building: {p}" for n, p in self.store.building.items()}
                           | {n: f"quarantined: {why}" for n, why in self.store.quarantined.items()})
        return ok, body

    # -- shared checks ---------------------------------------------------------------------
    def texts(self, items: Sequence[Any], fields: Sequence[str]) -> list[str]:
        """Check each text: a string, not blank, within ``max_input_chars`` (or cut, under truncation=truncate)."""
        limit = self.settings.max_input_chars
        out = []
        for item, fld in zip(items, fields):
            if not isinstance(item, str):
                raise InvalidInput(f"{fld} must be a string, got {type(item).__name__}", field=fld)
            if not item.strip():
                raise InvalidInput(f"{fld} is empty or only whitespace; send at least one visible character", field=fld)
            if len(item) > limit:
                if self.settings.truncation == "reject":
                    raise InputTooLong(f"{fld} has {len(item)} characters; the limit is {limit}", field=fld)
                item = item[:limit]
            out.append(item)
        return out

    async def encode(self, model: Model, view: str, texts: list[str], fields: list[str], normalize: bool = True) -> Encoded:
        emb = await model.batcher.embed(texts, view, truncation=self.settings.truncation, fields=fields)
        vecs = l2_normalize(emb.vectors) if normalize else emb.vectors
        return Encoded(model.name, view, vecs, sum(emb.tokens))

    # -- embeddings ----------------------------------------------------------------------
    async def embeddings(self, raw_input: Any, model_name: str | None, view: str | None, normalize: bool, dimensions: int | None = None) -> Encoded:
        model = self.registry.get(model_name)
        view = model.encoder.view(view)
        items = [raw_input] if isinstance(raw_input, str) else list(raw_input)
        check_count(len(items), self.settings.max_inputs, "input")
        dim = model.encoder.dim(view)
        if dimensions is not None and dimensions != dim:
            raise InvalidInput(f"dimensions is {dimensions}; model '{model.name}' view '{view}' has {dim} (vectors are not shortened)", field="dimensions")
        fields = [f"input[{i}]" for i in range(len(items))] if not isinstance(raw_input, str) else ["input"]
        return await self.encode(model, view, self.texts(items, fields), fields, normalize)

    # -- similarity ----------------------------------------------------------------------
    def _pairs(self, req: SimilarityRequest) -> tuple[list[tuple[Any, Any]], list[tuple[str, str]]]:
        """The pairs and the field name of each side, from either request form."""
        if req.pairs is not None and (req.source is not None or req.targets is not None):
            raise InvalidInput("send either pairs, or source and targets, not both", field="pairs")
        if req.pairs is not None:
            check_count(len(req.pairs), self.settings.max_inputs, "pairs")
            for i, p in enumerate(req.pairs):
                if not isinstance(p, list) or len(p) != 2:
                    raise InvalidInput(f"pairs[{i}] must be a list of two texts", field=f"pairs[{i}]")
            return [tuple(p) for p in req.pairs], [(f"pairs[{i}][0]", f"pairs[{i}][1]") for i in range(len(req.pairs))]
        if req.source is None or req.targets is None:
            raise InvalidInput("send pairs ([[a, b], ...]) or source and targets", field="source" if req.source is None else "targets")
        check_count(len(req.targets), self.settings.max_inputs, "targets")
        return [(req.source, t) for t in req.targets], [("source", f"targets[{i}]") for i in range(len(req.targets))]

    async def similarity(self, req: SimilarityRequest) -> dict:
        model = self.registry.get(req.model)
        view = model.encoder.view(req.view)
        pairs, fields = self._pairs(req)
        unique: dict[str, int] = {}  # each distinct text is embedded once
        ufields: list[str] = []
        a, b = [], []
        for pair, fpair in zip(pairs, fields):
            idx = []
            for text, fld in zip(self.texts(pair, fpair), fpair):
                if text not in unique:
                    unique[text] = len(unique)
                    ufields.append(fld)
                idx.append(unique[text])
            a.append(idx[0])
            b.append(idx[1])
        texts = list(unique)
        enc = await self.encode(model, view, texts, ufields, normalize=False)
        unit = l2_normalize(enc.vectors)
        cos = np.clip(np.einsum("nd,nd->n", unit[a], unit[b]), -1.0, 1.0)  # rounding can step past 1
        data = [{"index": i, "score": float(c)} for i, c in enumerate(cos)]
        tokens = enc.tokens
        if model.head is not None:
            hv = enc.vectors
            if model.head_view != view:
                henc = await self.encode(model, model.head_view, texts, ufields, normalize=False)
                hv, tokens = henc.vectors, tokens + henc.tokens
            for row, r in zip(data, model.head.predict(hv[a], hv[b])):
                row["relatedness"] = float(r)
        return {"object": "list", "model": model.name, "view": view, "data": data, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    # -- search --------------------------------------------------------------------------
    def _query(self, query: Any, dim: int, name: str) -> tuple[list[str] | None, np.ndarray | None]:
        if isinstance(query, str):
            return [query], None
        if not isinstance(query, list) or not query:
            raise InvalidInput("query must be a text, a non-empty list of texts, or a vector of numbers", field="query")
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in query):
            if len(query) != dim:
                raise InvalidInput(f"query has {len(query)} dimensions; index '{name}' has {dim}", field="query")
            with np.errstate(over="ignore"):  # 1e308 overflows float32 to inf: refused just below
                vec = np.asarray(query, np.float32)[None, :]
            if not np.isfinite(vec).all():
                raise InvalidInput("query has a value that is not a finite float32", field="query")
            return None, vec
        check_count(len(query), self.settings.max_inputs, "query")
        return query, None

    async def search(self, req: SearchRequest) -> dict:
        name = req.index or self.settings.default_index
        config = self.store.config(name)
        if not 1 <= req.k <= self.settings.max_k:
            raise InvalidInput(f"k is {req.k}; it must be between 1 and {self.settings.max_k}", field="k")
        texts, vectors = self._query(req.query, config.dim, name)
        tokens = 0
        if texts is not None:
            fields = ["query"] if isinstance(req.query, str) else [f"query[{i}]" for i in range(len(texts))]
            model = self.registry.get(config.model, field_name="index")
            enc = await self.encode(model, config.view, self.texts(texts, fields), fields, normalize=False)
            vectors, tokens = enc.vectors, enc.tokens
        hits = await asyncio.get_running_loop().run_in_executor(None, self.store.search, name, vectors, req.k)
        results = [[_hit(d, s) for d, s in row] for row in hits]
        return {"object": "list", "index": name, "model": config.model, "metric": config.metric, "results": results, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    # -- index management ----------------------------------------------------------------
    async def create_index(self, req: CreateIndexRequest) -> dict:
        model = self.registry.get(req.model)
        view = model.encoder.view(req.view)
        try:
            config = new_config(req.name, model.name, view, model.encoder.dim(view), req.factory, req.metric, req.normalize, req.train_size)
        except ValueError as e:
            raise InvalidInput(str(e), field="factory") from None
        await asyncio.get_running_loop().run_in_executor(None, self.store.create, config)
        return self.store.stats(req.name)

    async def add_documents(self, name: str, req: AddDocumentsRequest) -> dict:
        config = self.store.config(name)
        docs = req.documents
        check_count(len(docs), self.settings.max_inputs, "documents")
        fields = [f"documents[{i}].text" for i in range(len(docs))]
        texts = self.texts([d.text for d in docs], fields)
        for i, d in enumerate(docs):  # checked before anything is stored: a search must always be able to return it
            check_metadata(d.metadata, f"documents[{i}].metadata", self.settings.max_metadata_bytes, self.settings.max_metadata_depth)
        model = self.registry.get(config.model, field_name="index")
        enc = await self.encode(model, config.view, texts, fields, normalize=False)
        items = [Doc(d.id or new_id(), t, d.metadata) for d, t in zip(docs, texts)]
        ids = await asyncio.get_running_loop().run_in_executor(None, self.store.add, name, items, enc.vectors)
        return {"index": name, "ids": ids, "documents": self.store.entry(name).index.count, "usage": {"prompt_tokens": enc.tokens, "total_tokens": enc.tokens}}

    async def delete_documents(self, name: str, ids: list[str]) -> dict:
        self.store.config(name)
        check_count(len(ids), self.settings.max_inputs, "ids")
        found = await asyncio.get_running_loop().run_in_executor(None, self.store.delete, name, ids)
        gone = set(found)
        return {"index": name, "deleted": found, "not_found": [i for i in ids if i not in gone], "documents": self.store.entry(name).index.count}

    async def drop_index(self, name: str) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.store.drop, name)

    def list_indexes(self) -> dict:
        return {"object": "list", "data": [self.store.stats(n) for n in self.store.names()], "building": dict(self.store.building),
                "quarantined": dict(self.store.quarantined)}


def _hit(doc: Doc, score: float) -> dict:
    hit = {"id": doc.id, "text": doc.text, "score": score if math.isfinite(score) else None}
    if doc.metadata is not None:
        hit["metadata"] = doc.metadata
    return hit
