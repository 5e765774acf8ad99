"""The lexical index's analyser and BM25 parameters, and the fusion's, chosen on the retrieval dev set.

``lexical``: every analyser (stemmer x stop words) with BM25 lucene k1=1.2 b=0.75, then, on the best
analyser (ties at four decimals: stop words removed), every variant x k1 x b of the grid; ``fusion``: for one dense source, every fusion of the grid
over that source's and BM25's (the chosen defaults') rankings; ``rerank``: for one dense source, every fusion of
the grid reranking BM25's top 100 of the corpus as ``POST /v1/rerank`` ranks documents sent to it (each document's
cosine, its best sentence's at each weight of the grid, and BM25 over the candidates alone), the best against BM25,
the best without sentences and the default search with paired intervals; ``feedback``: for one
dense source, a second round and a title field against its default search (the guide's fusion of its dense and BM25
rankings): Rocchio feedback on the dense half, RM3-style term expansion of the lexical half, BM25 over titles added
to BM25 over whole documents, each setting paired against the default search; ``signals``: for one dense source, a
third signal beside its default search's two, each document's best sentence or best two consecutive sentences
under the same model, each setting paired against the default search. Each prints nDCG@10 and recall@100
per setting, best first. The rankers' defaults (``service/index/lexical.py``, ``service/index/fusion.py``) are
the model guide's ``choices.search``: the settings every dev retrieval record was measured with, which were
the best nDCG@10 of these runs (docs/RESULTS.md, *Retrieval*). ``thoughtvec eval report`` refuses records
measured with different settings, and a test fails when a record's settings differ from the defaults.

    python -m thoughtvec.training.evaluation.retrieval_tuning lexical
    python -m thoughtvec.training.evaluation.retrieval_tuning fusion --bundle models/invertible-bijection
    python -m thoughtvec.training.evaluation.retrieval_tuning fusion --baseline minilm
    python -m thoughtvec.training.evaluation.retrieval_tuning rerank --bundle models/all-minilm-l6-v2
    python -m thoughtvec.training.evaluation.retrieval_tuning feedback --bundle models/all-minilm-l6-v2
    python -m thoughtvec.training.evaluation.retrieval_tuning signals --bundle models/all-minilm-l6-v2
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from thoughtvec.service.core.scoring import candidate_bm25, fuse_scores
from thoughtvec.service.index.fusion import Fusion, RerankFusion
from thoughtvec.service.index.lexical import BM25, METHODS, Analyzer, LexicalIndex
from thoughtvec.training.evaluation import beir, rankers, retrieval, sources
from thoughtvec.training.evaluation.retrieval import Ranking
from thoughtvec.training.evaluation.runner import _progress_bar

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


SENTENCE_WEIGHTS = (0.0, 0.5, 1.0, 2.0)  # rerank's third signal, each document's best sentence (0: none)


def rerank_grid(task: beir.RetrievalTask, dense: rankers.DenseRanker, out: Callable[[str], None] = print) -> RerankFusion:
    """Every fusion of the grid reranking BM25's top 100 by ``dense``'s cosine, its best sentence's (at each weight
    of the grid, 0 none) and BM25 over the candidates alone."""
    lexical = rankers.LexicalRanker(task)
    rerank = rankers.RerankRanker(dense, lexical, task)
    cands = lexical.rank(task.query_texts, rerank.candidates)
    q = dense.rank_vectors(task.query_texts)
    by_sentence = rankers.PartVectors.of(dense, rerank.text, progress=lambda n: _progress_bar(n, f"{dense.name} sentences"))
    signals = []  # per query: the candidates, their cosines, their best sentences' and their BM25 over themselves
    for query, vec, found in zip(task.query_texts, q, cands):
        ids = [d for d, _ in found]
        cos = dense.docs[[rerank.row[d] for d in ids]] @ vec
        signals.append((ids, cos, by_sentence.best(vec, ids), candidate_bm25(query, [rerank.text[d] for d in ids], rerank.search)))
    alone = [[(ids[i], float(cos[i])) for i in np.lexsort((np.arange(len(ids)), -cos))] for ids, cos, _s, _b in signals]
    out(f"the cosine alone (mode dense): {means(task, dict(zip(task.query_ids, alone)))}")
    grid = [
        RerankFusion(f.method, f.lexical_weight, f.rrf_k, f.depth, ws)
        for ws in SENTENCE_WEIGHTS
        for f in itertools.chain(
            (Fusion("zscore", w) for w in WEIGHTS),
            (Fusion("minmax", w) for w in WEIGHTS),
            (Fusion("rrf", w, k) for w, k in itertools.product(WEIGHTS, RRF_K)),
        )
    ]
    runs, fusions = {}, {}
    for f in grid:
        ranked = []
        for ids, cos, sentence, bm25 in signals:
            _, raw = fuse_scores(cos, bm25, f, sentence)
            ranked.append([(ids[i], float(raw[i])) for i in np.lexsort((np.arange(len(ids)), -raw))])
        key = (f.sentence_weight, f.method, f.lexical_weight, f.rrf_k if f.method == "rrf" else "-")
        runs[key], fusions[key] = dict(zip(task.query_ids, ranked)), f
    results = {key: means(task, run) for key, run in runs.items()}
    _table(
        out,
        f"rerank of BM25's top {rerank.candidates} (sentence weight, method, lexical weight, rrf k) by {dense.name} / {dense.view} and BM25 over the candidates",
        results,
    )
    top = max(results, key=lambda key: results[key]["ndcg@10"])
    best = fusions[top]
    whole = max((key for key in results if key[0] == 0), key=lambda key: results[key]["ndcg@10"])
    search = rankers.HybridRanker(dense, lexical)
    against = {"BM25 alone": dict(zip(task.query_ids, cands)),
               f"the best without sentences {whole}": runs[whole],
               "the default search": dict(zip(task.query_ids, search.rank(task.query_texts, retrieval.DEPTH)))}  # fmt: skip
    mine = retrieval.per_query(runs[top], task.qrels)["ndcg@10"]
    out(f"best: {top}")
    for name, run in against.items():
        theirs = retrieval.per_query(run, task.qrels)["ndcg@10"]
        p = retrieval.paired(mine, theirs)
        out(
            f"best vs {name} ({np.mean(list(theirs.values())):.4f}): nDCG@10 {p['diff']:+.4f} [{p['lo']:+.4f}, {p['hi']:+.4f}] paired, {p['queries']} queries"
        )
    return best


FEEDBACK_DOCS = (3, 5, 10)  # the first round's best documents that feed the second
ROCCHIO_BETA = (0.3, 0.5, 1.0)  # their mean vector's weight beside the query's
RM3_TERMS = (10, 20)  # expansion terms taken from them
RM3_WEIGHT = (0.3, 0.5)  # the expansion's weight beside the query's own terms
TITLE_WEIGHTS = (0.25, 0.5, 1.0)


@dataclass
class DefaultSearch:
    """``dense``'s default search on the task (the guide's fusion of its dense and BM25 rankings), what the second-round
    and third-signal grids are paired against: each query's vector, both rankings ``depth`` deep, the fused ranking and
    its nDCG@10 per query."""

    fusion: Fusion
    lexical: rankers.LexicalRanker
    queries: np.ndarray
    dense: list[Ranking]
    lexical_hits: list[Ranking]
    fused: list[Ranking]
    ndcg: dict[str, float]

    @classmethod
    def of(cls, task: beir.RetrievalTask, dense: rankers.DenseRanker, depth: int, out: Callable[[str], None]) -> DefaultSearch:
        fusion = rankers.measured_search().fusion
        lexical = rankers.LexicalRanker(task)
        q = dense.rank_vectors(task.query_texts)
        d = rankers.top_k(q @ dense.docs.T, dense.doc_ids, depth)
        lx = lexical.rank(task.query_texts, depth)
        fused = [fusion.fuse(a, b, retrieval.DEPTH) for a, b in zip(d, lx)]
        ndcg = retrieval.per_query(dict(zip(task.query_ids, fused)), task.qrels)["ndcg@10"]
        out(f"the default search ({dense.name} / {dense.view} and BM25, {fusion}): nDCG@10 {np.mean(list(ndcg.values())):.4f}")
        return cls(fusion, lexical, q, d, lx, fused, ndcg)

    def paired(self, task: beir.RetrievalTask, runs: dict[tuple, list[Ranking]], out: Callable[[str], None]) -> None:
        """Each run's nDCG@10 against this search's, paired."""
        out("\nagainst the default search, paired (10,000 resamples):")
        for key, run in runs.items():
            p = retrieval.paired(retrieval.per_query(dict(zip(task.query_ids, run)), task.qrels)["ndcg@10"], self.ndcg)
            out(f"  {str(key):42s} {p['diff']:+.4f} [{p['lo']:+.4f}, {p['hi']:+.4f}]")


def feedback_grid(task: beir.RetrievalTask, dense: rankers.DenseRanker, out: Callable[[str], None] = print) -> None:
    """A second round and a title field, each setting paired against ``dense``'s default search."""
    deepest = max(DEPTHS)
    default = DefaultSearch.of(task, dense, deepest, out)
    fusion, lexical, q, d, lx, base = default.fusion, default.lexical, default.queries, default.dense, default.lexical_hits, default.fused
    row = {doc: i for i, doc in enumerate(dense.doc_ids)}
    runs: dict[tuple, list[Ranking]] = {}
    for k, beta in itertools.product(FEEDBACK_DOCS, ROCCHIO_BETA):  # the query moved toward its first round's best
        moved = q + beta * np.stack([dense.docs[[row[doc] for doc, _ in hits[:k]]].mean(axis=0) for hits in base])
        d2 = rankers.top_k(moved / np.linalg.norm(moved, axis=1, keepdims=True) @ dense.docs.T, dense.doc_ids, deepest)
        runs[("rocchio", k, beta)] = [fusion.fuse(a, b, retrieval.DEPTH) for a, b in zip(d2, lx)]
    analyzer, index, text = lexical.index.analyzer, lexical.index, dict(zip(task.doc_ids, task.doc_texts))
    everyone = len(task.doc_ids)
    whole = [dict(index.search(query, everyone)) for query in task.query_texts]  # each query's BM25, once for every setting
    own = [set(analyzer.terms([query])[0]) for query in task.query_texts]
    share: dict[str, dict[str, float]] = {}  # each feedback document's terms by their share of its terms, once

    def shares(doc: str) -> dict[str, float]:
        if doc not in share:
            terms = analyzer.terms([text[doc]])[0]
            share[doc] = {term: n / len(terms) for term, n in Counter(terms).items()}
        return share[doc]

    def plus(scores: dict[str, float], extra: list[tuple[str, float]], w: float) -> Ranking:
        """``scores`` with ``w`` times ``extra``'s added, the best ``deepest``."""
        summed = dict(scores)
        for doc, s in extra:
            summed[doc] = summed.get(doc, 0.0) + w * s
        return sorted(summed.items(), key=lambda x: -x[1])[:deepest]

    for k, m in itertools.product(FEEDBACK_DOCS, RM3_TERMS):  # the query's words and its first round's
        expansions = []
        for mine, hits in zip(own, base):
            weight: dict[str, float] = {}
            for doc, _ in hits[:k]:
                for term, v in shares(doc).items():
                    weight[term] = weight.get(term, 0.0) + v
            added = [t for t in sorted(weight, key=lambda t: -weight[t]) if t not in mine][:m]
            # the expansion's BM25, scaled to the query's own terms' share
            expansions.append((index.search(" ".join(added), everyone), len(mine) / max(1, len(added))))
        for w in RM3_WEIGHT:
            l2 = [plus(scores, [(doc, s * scale) for doc, s in found], w) for scores, (found, scale) in zip(whole, expansions)]
            runs[("rm3", k, m, w)] = [fusion.fuse(a, b, retrieval.DEPTH) for a, b in zip(d, l2)]
    titles = LexicalIndex.from_documents(zip(task.doc_ids, task.doc_titles), analyzer, index.bm25)
    in_titles = [titles.search(query, everyone) for query in task.query_texts]
    for w in TITLE_WEIGHTS:  # BM25 over the titles, added to BM25 over whole documents
        l2 = [plus(scores, found, w) for scores, found in zip(whole, in_titles)]
        runs[("title", w)] = [fusion.fuse(a, b, retrieval.DEPTH) for a, b in zip(d, l2)]
    results = {key: means(task, dict(zip(task.query_ids, run))) for key, run in runs.items()}
    _table(out, "a second round and a title field", results, top=len(results))
    default.paired(task, runs, out)


PARTS = {"sentences": 1, "windows": 2}  # a document's best sentence, or its best two consecutive sentences
PART_WEIGHTS = (0.5, 1.0, 1.5)
PART_LEXICAL_WEIGHTS = (1.5, 2.0, 2.5)


def signals_grid(task: beir.RetrievalTask, dense: rankers.DenseRanker, out: Callable[[str], None] = print) -> None:
    """A third signal for the search: each document's best sentence, or best two consecutive sentences, under the
    same model (every sentence or window of the corpus embedded alone; the best cosine of each document's), fused
    beside the document's own cosine and BM25 by the guide's method and depth, each setting paired against the
    default search."""
    default = DefaultSearch.of(task, dense, rankers.measured_search().fusion.depth, out)
    fusion, depth = default.fusion, default.fusion.depth
    text = dict(zip(task.doc_ids, task.doc_texts))
    runs: dict[tuple, list[Ranking]] = {}
    for part, window in PARTS.items():
        vectors = rankers.PartVectors.of(dense, text, window, progress=lambda n: _progress_bar(n, f"{dense.name} {part}"))  # noqa: B023
        own = rankers.top_k(vectors.best_of_every(default.queries), dense.doc_ids, depth)
        alone = retrieval.per_query(dict(zip(task.query_ids, own)), task.qrels)["ndcg@10"]
        out(f"{part} alone (the best of each document's, dense): nDCG@10 {np.mean(list(alone.values())):.4f}")
        for wp, wl in itertools.product(PART_WEIGHTS, PART_LEXICAL_WEIGHTS):
            hits = zip(default.dense, own, default.lexical_hits)
            runs[(part, wp, wl)] = [fusion.combined([a, c, b], [1.0, wp, wl])[: retrieval.DEPTH] for a, c, b in hits]
    results = {key: means(task, dict(zip(task.query_ids, run))) for key, run in runs.items()}
    _table(out, f"a third signal (part, its weight, lexical weight; {fusion.method}, depth {depth})", results, top=len(results))
    default.paired(task, runs, out)


def _table(out: Callable[[str], None], title: str, results: dict, top: int = 12) -> None:
    out(f"\n{title}: {len(results)} settings, best {top} by nDCG@10")
    for key, m in sorted(results.items(), key=lambda kv: -kv[1]["ndcg@10"])[:top]:
        out(f"  {str(key):42s} nDCG@10 {m['ndcg@10']:.4f}  recall@100 {m['recall@100']:.4f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=("lexical", "fusion", "rerank", "feedback", "signals"))
    p.add_argument("--bundle", help="fusion, rerank, feedback: the dense bundle (its default view unless --view)")
    p.add_argument("--baseline", choices=("minilm",), help="fusion, rerank, feedback: a baseline source instead of a bundle")
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
        p.error(f"{args.what} needs --bundle or --baseline")
    src = sources.BundleSource(args.bundle, truncation="split") if args.bundle else sources.BASELINES[args.baseline]()
    (dense,) = rankers.DenseRanker.for_views(src, [args.view or src.default_view], task)
    if args.what in ("feedback", "signals"):
        (feedback_grid if args.what == "feedback" else signals_grid)(task, dense, say)
        return 0
    grid = fusion_grid if args.what == "fusion" else rerank_grid
    say(f"\nbest: {grid(task, dense, say)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
