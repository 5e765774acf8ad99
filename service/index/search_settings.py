"""How an index ranks by its terms and fuses two rankings: the analyser, BM25's parameters and the fusion.

The model guide records the settings every dev retrieval record was measured with (``search`` of
``model_guide.json``); :meth:`SearchSettings.of` takes them from it, part by part. Where the guide has none (a
models folder without one), each part keeps its fallback, the classes' own defaults: Lucene's BM25 (k1 1.2, b 0.75)
over the English Snowball stemmer and bm25s's English stop words, and reciprocal-rank fusion (k 60, the rankings
weighted alike, 100 hits of each), as their authors set them. The fusion was measured with the bundles the guide
measured: a hybrid search over any other fuses with the fallback (:data:`FALLBACK_FUSION`); rerank's fusion
(``rerank``) likewise (:data:`FALLBACK_RERANK`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TypeVar

from thoughtvec.service.index.fusion import Fusion, RerankFusion
from thoughtvec.service.index.lexical import BM25, Analyzer
from thoughtvec.service.model_guide import Guide

log = logging.getLogger(__name__)
T = TypeVar("T", Analyzer, BM25, Fusion)

FALLBACK_FUSION = Fusion()  # hybrid search over a bundle the guide did not measure
# rerank over a bundle the guide did not measure: the standardised scores summed, both signals alike (CombSUM of
# z-scores): every document sent is in both rankings, and the scores' spread among them sets each signal's scale;
# each document's own cosine
FALLBACK_RERANK = RerankFusion("zscore", 1.0)


@dataclass(frozen=True)
class SearchSettings:
    analyzer: Analyzer = field(default_factory=Analyzer)
    bm25: BM25 = field(default_factory=BM25)
    fusion: Fusion = field(default_factory=Fusion)  # for an index over a measured bundle; any other's is FALLBACK_FUSION
    rerank: RerankFusion = FALLBACK_RERANK  # rerank's, for a measured bundle; any other's is FALLBACK_RERANK

    @classmethod
    def of(cls, guide: Guide) -> SearchSettings:
        """The guide's settings, each part it lacks at its fallback (said in the log)."""

        def part(name: str, kind: type[T]) -> T:
            found = guide.search(name)
            if found is None:
                log.info("the model guide has no %s settings: the fallback %s", name, kind())
                return kind()
            return kind(**found)

        rerank = guide.search("rerank")
        return cls(
            part("analyzer", Analyzer), part("bm25", BM25), part("fusion", Fusion), RerankFusion(**rerank) if rerank else FALLBACK_RERANK
        )
