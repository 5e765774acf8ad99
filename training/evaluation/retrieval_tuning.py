"""The lexical index's analyser and BM25 parameters, and the fusion's, chosen on the retrieval dev set.

``lexical``: every analyser (stemmer x stop words) with BM25 lucene k1=1.2 b=0.75, then, on the best
analyser (ties at four decimals: stop words removed), every variant x k1 x b of the grid; ``fusion``: for one dense source, every fusion of the grid
over that source's and BM25's (the chosen defaults') rankings. Each prints nDCG@10 and recall@100 per
setting, best first. The rankers' defaults (``service/index/lexical.py``, ``service/index/fusion.py``) are
the model guide's ``choices.search``: the settings every dev retrieval record was measured with, which were
the best nDCG@10 of these runs (docs/RESULTS.md, *Retrieval*). ``thoughtvec eval report`` refuses records
measured with different settings, and a test fails when a record's settings differ from the defaults.

    python -m thoughtvec.training.evaluation.retrieval_tuning lexical
    python -m thoughtvec.training.evaluation.retrieval_tuning fusion --bundle models/invertible-bijection
    python -m thoughtvec.training.evaluation.retrieval_tuning fusion --baseline minilm
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Callable, Iterable

import numpy as np

from thoughtvec.service.index.fusion import Fusion
from thoughtvec.service.index.lexical import BM25, METHODS, Analyzer
from thoughtvec.training.evaluation import beir, rankers, retrieval, sources
from thoughtvec.training.evaluation.retrieval import Ranking

STEMMERS = (None, "english", "porter")
STOPWORDS = (None, "en")
K1 = (0.6, 0.9, 1.2, 1.5, 2.0)
B = (0.3, 0.5, 0.75, 0.9)
RRF_K = (5, 10, 20, 40, 60, 100)
WEIGHTS = (0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
DEPTHS = (100, 200)  # at least DEPTH: a search of k <= 100 then fuses exactly what these numbers measure


def means(task: beir.RetrievalTask, rankings: dict[str, Ranking]) -> dict[str, float]:
    return {m: float(np.mean(list(v.values()))) for m, v in retrieval.per_query(rankings, task.qrels).items()}


def run_lexical(task: beir.RetrievalTask, analyzer: Analyzer, bm25: BM25) -> dict[str, float]:
    ranker = rankers.LexicalRanker(task, analyzer, bm25)
    return means(task, dict(zip(task.query_ids, ranker.rank(task.query_texts, retrieval.DEPTH))))


def lexical_grid(task: beir.RetrievalTask, out: Callable[[str], None] = print) -> tuple[Analyzer, BM25]:
    """Stage 1: the analyser; stage 2: variant, k1 and b on it. Returns the best of stage 2."""
    first = {(s, w): run_lexical(task, Analyzer(s, w), BM25()) for s, w in itertools.product(STEMMERS, STOPWORDS)}
    _table(out, "analyser (stemmer, stop words) with BM25 lucene k1=1.2 b=0.75", first)
    # ties at the reported precision go to the analyser with stop words removed (shorter postings, same ranking)
    analyzer = Analyzer(*max(first, key=lambda key: (round(first[key]["ndcg@10"], 4), key[1] is not None)))
    second = {(m, k1, b): run_lexical(task, analyzer, BM25(m, k1, b)) for m, k1, b in itertools.product(METHODS, K1, B)}
    _table(out, f"BM25 (variant, k1, b) with stemmer {analyzer.stemmer}, stop words {analyzer.stopwords}", second)
    return analyzer, BM25(*max(second, key=lambda key: second[key]["ndcg@10"]))


def fusion_grid(task: beir.RetrievalTask, dense: rankers.DenseRanker, out: Callable[[str], None] = print) -> Fusion:
    """Every fusion of the grid over ``dense``'s and the default BM25's rankings (computed once, deepest first)."""
    deepest = max(DEPTHS)
    d = dense.rank(task.query_texts, deepest)
    lx = rankers.LexicalRanker(task).rank(task.query_texts, deepest)
    out(f"dense alone ({dense.name} / {dense.view}): {means(task, dict(zip(task.query_ids, (r[:100] for r in d))))}")
    grid: Iterable[Fusion] = itertools.chain(
        (Fusion("rrf", w, k, depth) for w, k, depth in itertools.product(WEIGHTS, RRF_K, DEPTHS)),
        (Fusion("minmax", w, 60, depth) for w, depth in itertools.product(WEIGHTS, DEPTHS)),
    )
    results = {}
    for f in grid:
        fused = [f.fuse(a[: f.depth], b[: f.depth], retrieval.DEPTH) for a, b in zip(d, lx)]
        results[(f.method, f.lexical_weight, f.rrf_k if f.method == "rrf" else "-", f.depth)] = means(
            task, dict(zip(task.query_ids, fused))
        )
    _table(out, f"fusion (method, lexical weight, rrf k, depth) of {dense.name} / {dense.view} with BM25", results)
    m, w, k, depth = max(results, key=lambda key: results[key]["ndcg@10"])
    return Fusion(m, w, 60 if isinstance(k, str) else k, depth)  # "-": min-max fusion has no rrf k


def _table(out: Callable[[str], None], title: str, results: dict, top: int = 12) -> None:
    out(f"\n{title}: {len(results)} settings, best {top} by nDCG@10")
    for key, m in sorted(results.items(), key=lambda kv: -kv[1]["ndcg@10"])[:top]:
        out(f"  {str(key):42s} nDCG@10 {m['ndcg@10']:.4f}  recall@100 {m['recall@100']:.4f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=("lexical", "fusion"))
    p.add_argument("--bundle", help="fusion: the dense bundle (its default view unless --view)")
    p.add_argument("--baseline", choices=("minilm",), help="fusion: a baseline source instead of a bundle")
    p.add_argument("--view")
    p.add_argument("--beir", help="BEIR folder (default $THOUGHTVEC_BEIR or ../shared/data/retrieval/scifact-dev)")
    args = p.parse_args(argv)
    task = beir.load(args.beir)
    say = lambda m: print(m, flush=True)  # noqa: E731
    if args.what == "lexical":
        analyzer, bm25 = lexical_grid(task, say)
        say(f"\nbest: {analyzer} {bm25}")
        return 0
    if not (args.bundle or args.baseline):
        p.error("fusion needs --bundle or --baseline")
    src = sources.BundleSource(args.bundle, truncation="split") if args.bundle else sources.BASELINES[args.baseline]()
    (dense,) = rankers.DenseRanker.for_views(src, [args.view or src.default_view], task)
    say(f"\nbest: {fusion_grid(task, dense, say)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
