"""Scores of texts against texts, without HTTP: pair similarity (cosine, and the relatedness a bundle's head
predicts) and rerank (documents ordered against a query). Every text is embedded through the embedding service's
way in (``EmbeddingService.encode``: limits, admission, the model's queue).

Rerank's default mode, ``hybrid``, ranks the documents sent as a hybrid search ranks an index's: the model's cosine
and BM25 (the server's analyser and BM25 variant, the collection statistics those of the documents sent), fused
(:func:`fused_relevance`), with each document's best sentence's cosine as a third signal where the fusion weighs it
(:class:`~thoughtvec.service.index.fusion.RerankFusion`). Its fusion is the model guide's ``rerank`` for the bundles
it was chosen on (``rerank_models``), chosen on the retrieval dev set (``python -m thoughtvec.training.evaluation.retrieval_tuning
rerank``), else :data:`~thoughtvec.service.index.search_settings.FALLBACK_RERANK`. ``dense`` is each document's
cosine alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np

from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.limits import Texts, check_count
from thoughtvec.service.core.longinput import sentence_texts
from thoughtvec.service.core.registry import Model
from thoughtvec.service.core.results import Encoded, PairScore, Ranked, Reranked, Similarity
from thoughtvec.service.errors import InvalidInput
from thoughtvec.service.index.fusion import Fusion, RerankFusion
from thoughtvec.service.index.lexical import LexicalIndex
from thoughtvec.service.index.search_settings import FALLBACK_RERANK, SearchSettings
from thoughtvec.service.settings import RerankMode, Truncation

RERANK_MODES: tuple[RerankMode, ...] = ("hybrid", "dense")


def fused_relevance(
    query: str, documents: Sequence[str], cosines: np.ndarray, search: SearchSettings, fusion: Fusion,
    best_sentences: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Each document's relevance on [0, 1] (``Fusion.relevance``) and its fused score: its cosine to the query, its
    best sentence's (``best_sentences``, where the fusion weighs them) and its BM25 score (:func:`candidate_bm25`),
    fused by ``fusion`` (:func:`fuse_scores`)."""
    return fuse_scores(cosines, candidate_bm25(query, documents, search), fusion, best_sentences)


def candidate_bm25(query: str, documents: Sequence[str], search: SearchSettings) -> np.ndarray:
    """BM25 of each of ``documents`` for ``query`` by ``search``'s analyser and variant, over the statistics of
    ``documents`` alone (their count, lengths and document frequencies); 0 for a document sharing no term with it."""
    ids = [str(i) for i in range(len(documents))]
    lexical = LexicalIndex(search.analyzer, search.bm25)
    lexical.add(ids, documents)
    found = dict(lexical.search(query, len(ids)))
    return np.array([found.get(i, 0.0) for i in ids], np.float64)


def fuse_scores(
    cosines: np.ndarray, bm25: np.ndarray, fusion: Fusion, best_sentences: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The relevance on [0, 1] and the fused score of each document, every document in every ranking: the cosines
    (weight 1), the best sentences' cosines (a :class:`RerankFusion`'s ``sentence_weight``; required when it is not
    0) and BM25 (``lexical_weight``)."""
    ids = [str(i) for i in range(len(cosines))]
    signals, weights = [cosines], [1.0]
    sentence_weight = getattr(fusion, "sentence_weight", 0.0)
    if sentence_weight:
        if best_sentences is None:
            raise ValueError(f"{fusion} weighs each document's best sentence: pass best_sentences")
        signals, weights = [*signals, best_sentences], [*weights, sentence_weight]
    # each signal as a ranking, best first (reciprocal-rank fusion reads the order; ties: the earlier document first)
    rankings = [[(ids[j], float(signal[j])) for j in np.lexsort((np.arange(len(ids)), -np.asarray(signal)))] for signal in [*signals, bm25]]
    fused = dict(fusion.combined(rankings, [*weights, fusion.lexical_weight]))
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
        fusion = self.rerank_fusion(m) if (mode or "hybrid") == "hybrid" else None
        if fusion is None:
            relevance, raw = (1.0 + cos) / 2.0, cos
        else:  # BM25 over the documents' whole texts, off the event loop: they may be long
            query_text, docs = texts.texts[a[0]], [texts.texts[i] for i in b]
            best = await self._best_sentences(m, view, texts, enc, a[0], b, field, truncation) if fusion.sentence_weight else None
            run = asyncio.get_running_loop().run_in_executor
            relevance, raw = await run(None, fused_relevance, query_text, docs, cos, self.search, fusion, best)
        order = np.lexsort((np.arange(len(documents)), -raw))[:top_n]  # ties: the earlier document first
        results = [Ranked(int(i), float(relevance[i]), float(raw[i]), documents[i] if return_documents else None) for i in order]
        return Reranked(m.name, results, enc.usage, mode or "hybrid")

    async def _best_sentences(
        self, model: Model, view: str, texts: Texts, enc: Encoded, query: int, docs: Sequence[int], field: str,
        mode: Truncation | None,
    ) -> np.ndarray:  # fmt: skip
        """Each document's best cosine to the query among its sentences
        (:func:`~thoughtvec.service.core.longinput.sentence_texts`), each embedded alone and once, however many
        documents hold it (a text already embedded, such as a one-sentence document, is not embedded again); the
        tokens embedded are added to ``enc``'s, and both passes together are held to ``max_request_tokens``."""
        have = {t: i for i, t in enumerate(texts.texts)}
        split = await asyncio.get_running_loop().run_in_executor(
            None, lambda: [sentence_texts(model.encoder, texts.texts[i]) for i in docs]
        )
        new: dict[str, str] = {}  # a sentence not embedded yet -> its document's field
        for i, parts in enumerate(split):
            for part in parts:
                if part not in have and part not in new:
                    new[part] = f"{field}[{i}]"
        vectors = enc.vectors
        if new:
            sentences = self.embedding.texts(list(new), list(new.values()), mode)
            more = await self.embedding.encode(model, view, sentences, normalize=False, mode=mode, spent=enc.tokens)
            have.update({t: len(texts) + j for j, t in enumerate(new)})
            vectors, enc.tokens = np.concatenate([vectors, more.vectors]), enc.tokens + more.tokens
        unit = l2_normalize(vectors)
        sims = np.clip(unit @ unit[query], -1.0, 1.0)
        return np.array([max(sims[have[part]] for part in parts) for parts in split], np.float64)

    def rerank_fusion(self, model: Model) -> RerankFusion:
        """The guide's rerank fusion where ``model`` is a bundle it was chosen on (the same export), else the fallback."""
        chosen_on = self.embedding.registry.guide.reranks(model.name, model.encoder.fingerprint())
        return self.search.rerank if chosen_on else FALLBACK_RERANK


def _cosines(vectors: np.ndarray, a: Sequence[int], b: Sequence[int]) -> np.ndarray:
    unit = l2_normalize(vectors)
    return np.clip(np.einsum("nd,nd->n", unit[a], unit[b]), -1.0, 1.0)  # rounding can step past 1
