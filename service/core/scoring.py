"""Scores of texts against texts, without HTTP: pair similarity (cosine, and the relatedness a bundle's head
predicts) and rerank (documents ordered by their similarity to a query). Every text is embedded through the
embedding service's way in (``EmbeddingService.encode``: limits, admission, the model's queue)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.limits import check_count
from thoughtvec.service.core.registry import Model
from thoughtvec.service.core.results import Encoded, PairScore, Ranked, Reranked, Similarity
from thoughtvec.service.errors import InvalidInput
from thoughtvec.service.settings import Truncation


class ScoringService:
    """Similarity and rerank over the embedding service."""

    def __init__(self, embedding: EmbeddingService):
        self.embedding = embedding
        self.settings = embedding.settings

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
        """The scoring core of similarity and rerank: a score (and relatedness) per pair, and the usage."""
        unique: dict[str, int] = {}  # each distinct text is embedded once (anything else is refused by texts())
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
        unit = l2_normalize(enc.vectors)
        cos = np.clip(np.einsum("nd,nd->n", unit[a], unit[b]), -1.0, 1.0)  # rounding can step past 1
        if model.head is None or model.head_view is None:  # the registry loads them together
            return [PairScore(i, float(c)) for i, c in enumerate(cos)], enc
        hv = enc.vectors
        if model.head_view != view:
            henc = await self.embedding.encode(model, model.head_view, texts, normalize=False, mode=mode)
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
        field: str = "documents",
    ) -> Reranked:
        """Documents ordered by cosine similarity to the query, best first (``field``: what the request calls them)."""
        m = self.embedding.model(model)
        view = m.encoder.view(view)
        check_count(len(documents), self.settings.max_inputs, field)
        if top_n is not None and top_n < 1:
            raise InvalidInput(f"top_n is {top_n}; it must be at least 1", field="top_n")
        fields = [("query", f"{field}[{i}]") for i in range(len(documents))]
        data, enc = await self.score(m, view, [(query, d) for d in documents], fields, truncation)
        order = sorted(data, key=lambda r: -r.score)[:top_n]
        results = [Ranked(r.index, r.score, documents[r.index] if return_documents else None) for r in order]
        return Reranked(m.name, results, enc.usage)
