"""Scores of texts against texts, without HTTP: pair similarity (cosine, and the relatedness a bundle's head
predicts) and rerank (documents ordered against a query). Every text is embedded through the embedding service's
way in (``EmbeddingService.encode``: limits, admission, the model's queue).

Rerank's default mode, ``hybrid``, ranks the documents sent as a hybrid search ranks an index's: the model's cosine
and BM25 (the server's analyser and BM25 variant, the collection statistics those of the documents sent), fused
(:func:`fused_relevance`). Its fusion is the model guide's ``rerank`` for a bundle the guide measured, chosen on the
retrieval dev set (``python -m thoughtvec.training.evaluation.retrieval_tuning rerank``), else
:data:`~thoughtvec.service.index.search_settings.FALLBACK_RERANK`. ``dense`` is the cosine alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np

from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.limits import Texts, check_count
from thoughtvec.service.core.registry import Model
from thoughtvec.service.core.results import Encoded, PairScore, Ranked, Reranked, Similarity
from thoughtvec.service.errors import InvalidInput
from thoughtvec.service.index.fusion import Fusion
from thoughtvec.service.index.lexical import LexicalIndex
from thoughtvec.service.index.search_settings import FALLBACK_RERANK, SearchSettings
from thoughtvec.service.settings import RerankMode, Truncation

RERANK_MODES: tuple[RerankMode, ...] = ("hybrid", "dense")


def fused_relevance(
    query: str, documents: Sequence[str], cosines: np.ndarray, search: SearchSettings, fusion: Fusion
) -> tuple[np.ndarray, np.ndarray]:
    """Each document's relevance on [0, 1] (``Fusion.relevance``) and its fused score: its cosine to the query and its
    BM25 score (:func:`candidate_bm25`), fused by ``fusion`` (:func:`fuse_scores`)."""
    return fuse_scores(cosines, candidate_bm25(query, documents, search), fusion)


def candidate_bm25(query: str, documents: Sequence[str], search: SearchSettings) -> np.ndarray:
    """BM25 of each of ``documents`` for ``query`` by ``search``'s analyser and variant, over the statistics of
    ``documents`` alone (their count, lengths and document frequencies); 0 for a document sharing no term with it."""
    ids = [str(i) for i in range(len(documents))]
    lexical = LexicalIndex(search.analyzer, search.bm25)
    lexical.add(ids, documents)
    found = dict(lexical.search(query, len(ids)))
    return np.array([found.get(i, 0.0) for i in ids], np.float64)


def fuse_scores(cosines: np.ndarray, bm25: np.ndarray, fusion: Fusion) -> tuple[np.ndarray, np.ndarray]:
    """The relevance on [0, 1] and the fused score of each document, every document in both rankings."""
    ids = [str(i) for i in range(len(cosines))]
    fused = dict(fusion.fuse([(i, float(c)) for i, c in zip(ids, cosines)], [(i, float(b)) for i, b in zip(ids, bm25)], len(ids)))
    raw = np.array([fused[i] for i in ids], np.float64)
    return np.array([fusion.relevance(f) for f in raw], np.float64), raw


class ScoringService:
    """Similarity and rerank over the embedding service."""

    def __init__(self, embedding: EmbeddingService, search: SearchSettings | None = None):
        self.embedding = embedding
        self.settings = embedding.settings
        self.search = search or SearchSettings.of(embedding.registry.guide)  # rerank's analyser, BM25 and fusion

    def _pairs(
        self, pairs: list[Any] | None, source: Any, targets: list[Any] | None, names: tuple[str, str] = ("source", "targets")
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
        src, tgt = names
        if source is None or targets is None:
            raise InvalidInput(f"send pairs ([[a, b], ...]) or {src} and {tgt}", field=src if source is None else tgt)
        check_count(len(targets), self.settings.max_inputs, tgt)
        return [(source, t) for t in targets], [(src, f"{tgt}[{i}]") for i in range(len(targets))]

    async def similarity(
        self,
        *,
        pairs: list[Any] | None = None,
        source: Any = None,
        targets: list[Any] | None = None,
        model: str | None = None,
        view: str | None = None,
        truncation: Truncation | None = None,
        names: tuple[str, str] = ("source", "targets"),
    ) -> Similarity:
        """Cosine (and relatedness) for ``pairs``, or for ``source`` against each of ``targets`` (``names``: what the
        request calls those two, for its errors)."""
        m = self.embedding.model(model)
        view = m.encoder.view(view)
        texts, fields = self._pairs(pairs, source, targets, names)
        data, enc = await self.score(m, view, texts, fields, truncation)
        return Similarity(m.name, view, data, enc.usage)

    async def score(
        self, model: Model, view: str, pairs: Sequence[tuple[Any, Any]], fields: Sequence[tuple[str, str]], mode: Truncation | None = None
    ) -> tuple[list[PairScore], Encoded]:
        """The scoring core of similarity: a score (and relatedness) per pair, and the usage."""
        texts, enc, a, b = await self._embedded(model, view, pairs, fields, mode)
        cos = _cosines(enc.vectors, a, b)
        if model.head is None or model.head_view is None:  # the registry loads them together
            return [PairScore(i, float(c)) for i, c in enumerate(cos)], enc
        hv = enc.vectors
        if model.head_view != view:
            henc = await self.embedding.encode(model, model.head_view, texts, normalize=False, mode=mode)
            hv, enc.tokens = henc.vectors, enc.tokens + henc.tokens
        related = model.head.predict(hv[a], hv[b])
        return [PairScore(i, float(c), float(r)) for i, (c, r) in enumerate(zip(cos, related))], enc

    async def _embedded(
        self, model: Model, view: str, pairs: Sequence[tuple[Any, Any]], fields: Sequence[tuple[str, str]], mode: Truncation | None
    ) -> tuple[Texts, Encoded, list[int], list[int]]:
        """The pairs' distinct texts checked and embedded once each (anything but a text is refused by ``texts()``), and
        where each pair's two sides are among them."""
        unique: dict[str, int] = {}
        items: list[Any] = []
        ufields: list[str] = []
        a, b = [], []
        for pair, fpair in zip(pairs, fields):
            idx = []
            for item, fld in zip(pair, fpair):
                at = unique.get(item) if isinstance(item, str) else None
                if at is None:
                    at = len(items)
                    items.append(item)
                    ufields.append(fld)
                    if isinstance(item, str):
                        unique[item] = at
                idx.append(at)
            a.append(idx[0])
            b.append(idx[1])
        texts = self.embedding.texts(items, ufields, mode)
        enc = await self.embedding.encode(model, view, texts, normalize=False, mode=mode)
        return texts, enc, a, b

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
        field: str = "documents",
        mode: RerankMode | None = None,
    ) -> Reranked:
        """Documents ordered against the query, best first (``field``: what the request calls them), in ``mode``
        (default ``hybrid``): each with its relevance on [0, 1] and its raw score (``dense``: (1 + cosine) / 2 and the
        cosine; ``hybrid``: ``Fusion.relevance`` of the fused score, and the fused score)."""
        m = self.embedding.model(model)
        view = m.encoder.view(view)
        if mode is not None and mode not in RERANK_MODES:
            raise InvalidInput(f"mode is {mode!r}; one of {list(RERANK_MODES)}", field="mode")
        check_count(len(documents), self.settings.max_inputs, field)
        if top_n is not None and top_n < 1:
            raise InvalidInput(f"top_n is {top_n}; it must be at least 1", field="top_n")
        fields = [("query", f"{field}[{i}]") for i in range(len(documents))]
        texts, enc, a, b = await self._embedded(m, view, [(query, d) for d in documents], fields, truncation)
        cos = _cosines(enc.vectors, a, b)
        if (mode or "hybrid") == "dense":
            relevance, raw = (1.0 + cos) / 2.0, cos
        else:  # BM25 over the documents' whole texts, off the event loop: they may be long
            run = asyncio.get_running_loop().run_in_executor
            docs = [texts.texts[i] for i in b]
            relevance, raw = await run(None, fused_relevance, texts.texts[a[0]], docs, cos, self.search, self.rerank_fusion(m))
        order = np.lexsort((np.arange(len(documents)), -raw))[:top_n]  # ties: the earlier document first
        results = [Ranked(int(i), float(relevance[i]), float(raw[i]), documents[i] if return_documents else None) for i in order]
        return Reranked(m.name, results, enc.usage, mode or "hybrid")

    def rerank_fusion(self, model: Model) -> Fusion:
        """The guide's rerank fusion where ``model`` is a bundle it measured (the same export), else the fallback."""
        measured = self.embedding.registry.guide.measured(model.name, model.encoder.fingerprint())
        return self.search.rerank if measured else FALLBACK_RERANK


def _cosines(vectors: np.ndarray, a: Sequence[int], b: Sequence[int]) -> np.ndarray:
    unit = l2_normalize(vectors)
    return np.clip(np.einsum("nd,nd->n", unit[a], unit[b]), -1.0, 1.0)  # rounding can step past 1
