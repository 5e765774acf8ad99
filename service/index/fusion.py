"""Fusing a dense and a lexical ranking into one (hybrid search).

Each input is one query's ranking, ``[(id, score), ...]`` best first, from a search of ``depth`` hits.

* ``rrf``: reciprocal-rank fusion (Cormack et al., SIGIR 2009): ``sum_i w_i / (k + rank_i)``, ranks from 1;
  a document absent from a ranking gets nothing from it. Scores' scales never meet, only ranks.
* ``minmax``: each ranking's scores mapped to [0, 1] by its own minimum and maximum, then
  ``sum_i w_i * s_i``; a document absent from a ranking gets 0 from it.
* ``zscore``: each ranking's scores standardised by their own mean and standard deviation, then
  ``sum_i w_i * z_i``; a document absent from a ranking gets that ranking's lowest standardised score.

Ties in the fused score keep the order of first appearance, dense ranking first. The defaults are the fallback
(``thoughtvec.service.index.search_settings``); the model guide's, chosen on the retrieval dev set (``python -m
thoughtvec.training.evaluation.retrieval_tuning fusion``; docs/RESULTS.md, *Retrieval*), replace them for the
bundles it measured. Rerank (:mod:`thoughtvec.service.core.scoring`) fuses the same way, with its own fusion
(``retrieval_tuning rerank``): its rankings hold every document sent, so none is absent from either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Ranking = Sequence[tuple[str, float]]
FusionMethod = Literal["rrf", "minmax", "zscore"]
FUSION_METHODS: tuple[FusionMethod, ...] = ("rrf", "minmax", "zscore")


@dataclass(frozen=True)
class Fusion:
    """How two rankings become one: the method, the lexical ranking's weight (the dense one's is 1) and,
    for ``rrf``, the rank constant ``k``; ``max(k, depth)`` hits are asked of each side before fusing."""

    # the fallback: reciprocal-rank fusion as Cormack et al. set it, both rankings alike, 100 hits of each
    method: FusionMethod = "rrf"
    lexical_weight: float = 1.0
    rrf_k: int = 60  # used by "rrf" only
    depth: int = 100

    def fuse(self, dense: Ranking, lexical: Ranking, k: int) -> list[tuple[str, float]]:
        """The best ``k`` of the union of both rankings under this fusion."""
        return self.ranked(self.parts(dense, lexical), k)

    def parts(self, dense: Ranking, lexical: Ranking) -> dict[str, tuple[float, float]]:
        """What each ranking adds to each document's fused score: ``{id: (dense's, lexical's)}``, their sum the
        score :meth:`fuse` ranks by (a search's ``explain``)."""
        by_dense, by_lexical = self._parts(dense, lexical)
        return {doc: (by_dense.get(doc, 0.0), by_lexical.get(doc, 0.0)) for doc in by_dense | by_lexical}

    @staticmethod
    def ranked(parts: dict[str, tuple[float, float]], k: int) -> list[tuple[str, float]]:
        """The best ``k`` of :meth:`parts` by their sum, the fused score."""
        return _sorted({doc: 0.0 + d + lx for doc, (d, lx) in parts.items()})[:k]

    def _parts(self, dense: Ranking, lexical: Ranking) -> list[dict[str, float]]:
        return self.weighed([dense, lexical], [1.0, self.lexical_weight])

    def weighed(self, rankings: Sequence[Ranking], weights: Sequence[float]) -> list[dict[str, float]]:
        """What each of ``rankings``, weighted, adds to each document's fused score under this method."""
        if self.method == "rrf":
            return rrf_parts(rankings, weights, self.rrf_k)
        if self.method == "zscore":
            return zscore_parts(rankings, weights)
        return minmax_parts(rankings, weights)

    def combined(self, rankings: Sequence[Ranking], weights: Sequence[float]) -> list[tuple[str, float]]:
        """Any number of ``rankings``, weighted, fused by this method: every document of any, best first."""
        return _sorted(_summed(self.weighed(rankings, weights)))

    @property
    def total_weight(self) -> float:
        """The weights of the rankings fused, summed (the dense one's is 1)."""
        return 1.0 + self.lexical_weight

    def relevance(self, fused: float) -> float:
        """A fused score on [0, 1], in the same order. ``minmax``: the weighted mean of the rankings' scaled scores
        (1: the best of each ranking); ``rrf``: the fused score over its most, a document first in every ranking (1);
        ``zscore``: the logistic of the weighted mean of the standardised scores (0.5: the mean of each ranking,
        0.73: a standard deviation above it in each)."""
        total = self.total_weight
        if self.method == "rrf":
            return fused * (self.rrf_k + 1) / total
        if self.method == "zscore":
            return float(1.0 / (1.0 + np.exp(-fused / total)))
        return fused / total


@dataclass(frozen=True)
class RerankFusion(Fusion):
    """Rerank's fusion (:mod:`thoughtvec.service.core.scoring`), with a third signal where ``sentence_weight`` is not 0:
    beside each document's cosine to the query (a long one split and pooled as the model embeds it, weight 1) and its
    BM25, the best cosine among its sentences, each embedded alone (a claim that one sentence of an abstract answers
    is not averaged away by the rest)."""

    sentence_weight: float = 0.0

    @property
    def total_weight(self) -> float:
        return 1.0 + self.sentence_weight + self.lexical_weight


def rrf(rankings: Sequence[Ranking], weights: Sequence[float], k: int = 60) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion of ``rankings`` (each best first)."""
    return _sorted(_summed(rrf_parts(rankings, weights, k)))


def minmax(rankings: Sequence[Ranking], weights: Sequence[float]) -> list[tuple[str, float]]:
    """Min-max normalised score fusion of ``rankings`` (higher scores better; a ranking whose scores are
    all equal counts 1 for each of its documents)."""
    return _sorted(_summed(minmax_parts(rankings, weights)))


def zscore(rankings: Sequence[Ranking], weights: Sequence[float]) -> list[tuple[str, float]]:
    """Standardised score fusion of ``rankings`` (higher scores better; a ranking whose scores are all equal counts 0
    for each of its documents; a document absent from a ranking gets that ranking's lowest standardised score)."""
    return _sorted(_summed(zscore_parts(rankings, weights)))


# Each fusion as what each ranking adds to each document (one dict per ranking): the fused score is their sum.


def rrf_parts(rankings: Sequence[Ranking], weights: Sequence[float], k: int = 60) -> list[dict[str, float]]:
    return [{doc: w / (k + rank) for rank, (doc, _) in enumerate(ranking, start=1)} for ranking, w in zip(rankings, weights)]


def minmax_parts(rankings: Sequence[Ranking], weights: Sequence[float]) -> list[dict[str, float]]:
    parts: list[dict[str, float]] = []
    for ranking, w in zip(rankings, weights):
        if not ranking:
            parts.append({})
            continue
        scores = [s for _, s in ranking]
        lo, hi = min(scores), max(scores)
        parts.append({doc: w * ((s - lo) / (hi - lo) if hi > lo else 1.0) for doc, s in ranking})
    return parts


def zscore_parts(rankings: Sequence[Ranking], weights: Sequence[float]) -> list[dict[str, float]]:
    union = dict.fromkeys(doc for ranking in rankings for doc, _ in ranking)  # every document, in order of first appearance
    parts: list[dict[str, float]] = []
    for ranking, w in zip(rankings, weights):
        if not ranking:
            parts.append({})
            continue
        scores = np.array([s for _, s in ranking], np.float64)
        spread = scores.std()
        z = (scores - scores.mean()) / spread if spread > 0 else np.zeros_like(scores)
        zs, lowest = {doc: float(v) for (doc, _), v in zip(ranking, z)}, float(z.min())
        parts.append({doc: w * zs.get(doc, lowest) for doc in union})
    return parts


def _summed(parts: Sequence[dict[str, float]]) -> dict[str, float]:
    """Each document's fused score, the documents in order of first appearance (the first ranking's first)."""
    fused: dict[str, float] = {}
    for part in parts:
        for doc, v in part.items():
            fused[doc] = fused.get(doc, 0.0) + v
    return fused


def _sorted(fused: dict[str, float]) -> list[tuple[str, float]]:
    # sorted() is stable: equal scores keep their first appearance (dense ranking first)
    return sorted(fused.items(), key=lambda item: -item[1])
