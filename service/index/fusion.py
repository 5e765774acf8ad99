"""Fusing a dense and a lexical ranking into one (hybrid search).

Each input is one query's ranking, ``[(id, score), ...]`` best first, from a search of ``depth`` hits.

* ``rrf``: reciprocal-rank fusion (Cormack et al., SIGIR 2009): ``sum_i w_i / (k + rank_i)``, ranks from 1;
  a document absent from a ranking gets nothing from it. Scores' scales never meet, only ranks.
* ``minmax``: each ranking's scores mapped to [0, 1] by its own minimum and maximum, then
  ``sum_i w_i * s_i``; a document absent from a ranking gets 0 from it.

Ties in the fused score keep the order of first appearance, dense ranking first. The defaults are the fallback
(``thoughtvec.service.index.search_settings``); the model guide's, chosen on the retrieval dev set (``python -m
thoughtvec.training.evaluation.retrieval_tuning fusion``; docs/RESULTS.md, *Retrieval*), replace them for the
bundles it measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Ranking = Sequence[tuple[str, float]]
FusionMethod = Literal["rrf", "minmax"]


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
        weights = (1.0, self.lexical_weight)
        if self.method == "rrf":
            return rrf([dense, lexical], weights, self.rrf_k)[:k]
        return minmax([dense, lexical], weights)[:k]


def rrf(rankings: Sequence[Ranking], weights: Sequence[float], k: int = 60) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion of ``rankings`` (each best first)."""
    fused: dict[str, float] = {}
    for ranking, w in zip(rankings, weights):
        for rank, (doc, _) in enumerate(ranking, start=1):
            fused[doc] = fused.get(doc, 0.0) + w / (k + rank)
    return _sorted(fused)


def minmax(rankings: Sequence[Ranking], weights: Sequence[float]) -> list[tuple[str, float]]:
    """Min-max normalised score fusion of ``rankings`` (higher scores better; a ranking whose scores are
    all equal counts 1 for each of its documents)."""
    fused: dict[str, float] = {}
    for ranking, w in zip(rankings, weights):
        if not ranking:
            continue
        scores = [s for _, s in ranking]
        lo, hi = min(scores), max(scores)
        for doc, s in ranking:
            norm = (s - lo) / (hi - lo) if hi > lo else 1.0
            fused[doc] = fused.get(doc, 0.0) + w * norm
    return _sorted(fused)


def _sorted(fused: dict[str, float]) -> list[tuple[str, float]]:
    # sorted() is stable: equal scores keep their first appearance (dense ranking first)
    return sorted(fused.items(), key=lambda item: -item[1])
