"""BM25 from ``POST /embed_sparse``'s vectors on the SciFact dev set (BEIR layout, ``beir.py``): nDCG@10 of a query's
sparse vector weighted by idf against the documents' by inner product, as a vector database ranks them, beside the
server's own lexical index (``LexicalIndex``) with the same analyser and BM25 (the model guide's: what the server
serves).

The vectors are the service's own (``service/core/sparse.py``); idf is computed from the dev corpus's document vectors
(the server's BM25 variant, or Lucene's, which Qdrant's ``modifier: idf`` computes). Rows: the documents at the corpus's
mean length (``avgdl`` sent) and at the default (``avgdl`` not sent), and queries made on the query side and on the
document side (a client that sends no ``side``). Rankings are scored by the retrieval harness (``retrieval.py``:
trec_eval's nDCG@10 and recall@100, 95 % bootstrap intervals over queries, the paired difference with the index).

    python -m thoughtvec.training.evaluation.sparse_retrieval
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse as sp

from thoughtvec.service.core.sparse import AVGDL, Side, SparseVector, idf_of, vectors, weighted
from thoughtvec.service.index.lexical import BM25
from thoughtvec.training.evaluation import beir
from thoughtvec.training.evaluation.rankers import LexicalRanker, measured_search, top_k
from thoughtvec.training.evaluation.retrieval import DEPTH, Ranking, paired, per_query, summary


def matrix(rows: Sequence[SparseVector], columns: dict[int, int]) -> sp.csr_matrix:
    """``(len(rows), len(columns))``: each vector's values at its indices' columns (an index not in ``columns``: left out)."""
    data, cols, ptr = [], [], [0]
    for v in rows:
        for i, w in zip(v.indices.tolist(), v.values.tolist()):
            if i in columns:
                cols.append(columns[i])
                data.append(w)
        ptr.append(len(cols))
    return sp.csr_matrix((np.array(data, np.float64), np.array(cols, np.int64), np.array(ptr, np.int64)), shape=(len(rows), len(columns)))


def sparse_rankings(
    task: beir.RetrievalTask, docs: list[SparseVector], queries: list[SparseVector], idf: dict[int, float]
) -> list[Ranking]:
    """Each query's best :data:`DEPTH` documents by the inner product of its idf-weighted vector with theirs; only
    documents sharing a term with it (a score above 0), as a vector database's sparse search returns them."""
    columns = {i: c for c, i in enumerate(idf)}  # every index some document holds
    scores = (matrix([weighted(q, idf) for q in queries], columns) @ matrix(docs, columns).T).toarray()  # (queries, docs)
    return [[(d, s) for d, s in r if s > 0] for r in top_k(scores, task.doc_ids, DEPTH)]


def measure(task: beir.RetrievalTask) -> tuple[list[dict], dict]:
    """One row for the lexical index and one per way of using the sparse vectors."""
    search = measured_search()
    analyzer, bm25 = search.analyzer, search.bm25
    mean = float(np.mean([len(t) for t in analyzer.terms(task.doc_texts)]))  # the corpus's mean length, in terms
    index_rankings = LexicalRanker(task, analyzer, bm25).rank(task.query_texts, DEPTH)
    base = per_query(dict(zip(task.query_ids, index_rankings)), task.qrels)
    rows: list[dict[str, Any]] = [
        {"vectors": "the lexical index (`/v1/search` mode `lexical`)", "idf": "its own", "scores": base, "same": len(task.query_ids)}
    ]
    docs_at = {avgdl: vectors(task.doc_texts, "document", analyzer, bm25, avgdl) for avgdl in (mean, AVGDL)}
    ways: list[tuple[str, Side, float, BM25]] = [
        ("query side · document side, `avgdl` the corpus's mean", "query", mean, bm25),
        ("query side · document side, `avgdl` not sent (256)", "query", AVGDL, bm25),
        ("document side · document side (no `side` sent), `avgdl` the corpus's mean", "document", mean, bm25),
        ("query side · document side, `avgdl` the corpus's mean", "query", mean, BM25("lucene", bm25.k1, bm25.b)),
    ]
    for label, side, avgdl, idf_bm25 in ways:
        docs = docs_at[avgdl]
        queries = vectors(task.query_texts, side, analyzer, bm25, avgdl)
        rankings = sparse_rankings(task, docs, queries, idf_of(docs, idf_bm25))
        same = sum([d for d, _ in a[:10]] == [d for d, _ in b[:10]] for a, b in zip(rankings, index_rankings))
        idf = f"{idf_bm25.method}'s, from the corpus" + (" (Qdrant's `modifier: idf`)" if idf_bm25.method == "lucene" else "")
        rows.append({"vectors": label, "idf": idf, "scores": per_query(dict(zip(task.query_ids, rankings)), task.qrels), "same": same})
    for r in rows:
        r["summary"], r["vs"] = summary(r["scores"]), paired(r["scores"]["ndcg@10"], base["ndcg@10"])
    a = analyzer
    return rows, {"stemmer": a.stemmer, "stopwords": a.stopwords, "method": bm25.method, "k1": bm25.k1, "b": bm25.b, "mean": mean}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, help="a BEIR folder (default $THOUGHTVEC_BEIR, else ../shared/data/retrieval/scifact-dev)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    task = beir.load(args.data)
    rows, s = measure(task)
    print(f"{task.name}: {len(task.doc_ids)} documents, {len(task.query_ids)} queries; analyser {s['stemmer']} / {s['stopwords']}, "
          f"BM25 {s['method']} k1 {s['k1']} b {s['b']}; the corpus's mean length {s['mean']:.1f} terms")  # fmt: skip
    print("| vectors (query · documents) | idf | nDCG@10 [95% CI] | recall@100 | vs the index [95% CI] | top 10 as the index's |")
    print("|---|---|---|---:|---|---:|")
    for r in rows:
        n, rec, d = r["summary"]["ndcg@10"], r["summary"]["recall@100"], r["vs"]
        print(f"| {r['vectors']} | {r['idf']} | {n['mean']:.4f} [{n['lo']:.4f}, {n['hi']:.4f}] | {rec['mean']:.4f} | "
              f"{d['diff']:+.4f} [{d['lo']:+.4f}, {d['hi']:+.4f}] | {r['same']} / {len(task.query_ids)} |", flush=True)  # fmt: skip
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
