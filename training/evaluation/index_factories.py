"""The default search with its dense half in an approximate FAISS index, against the exact one, on the retrieval dev set.

For one dense source, the corpus is embedded once (``truncation`` ``split``, as served) and its default search (the
model guide's fusion of the dense and BM25 rankings) is run with the dense half searched through each of
:data:`FACTORIES`, each index built as the server builds it (:class:`~thoughtvec.service.index.indexes.VectorIndex`:
added 2,048 at a time, an IVF trained on its first ``train_size``, the served search knobs). Each prints the dense
half's recall@10 of the exact top 10, the default search's nDCG@10 and its paired difference from the same search over
exact vectors (:mod:`thoughtvec.training.evaluation.retrieval`'s bootstrap). docs/scale.md, *Approximate indexes*:

    python -m thoughtvec.training.evaluation.index_factories --bundle models/all-minilm-l6-v2

This module, with ``milvus_fusion``, is the harness's only one to build an index backend (tests/test_layers.py):
what it measures is FAISS's approximation itself.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import numpy as np

from thoughtvec.service.index.contents import Doc, NewIndex
from thoughtvec.service.index.indexes import GROWTH, VectorIndex, new_config
from thoughtvec.training.evaluation import beir, rankers, retrieval, sources

# What an index grows into (indexes.GROWTH), a smaller graph, and inverted lists with and without compression.
FACTORIES = (GROWTH.factory, "HNSW16", "IVF64,Flat", "IVF64,SQ8")
BATCH = 2048  # vectors a bulk build adds at a time


def factory_grid(task: beir.RetrievalTask, dense: rankers.DenseRanker, out: Callable[[str], None] = print,
                 factories: tuple[str, ...] = FACTORIES) -> dict[str, dict]:  # fmt: skip
    """``{factory: {"recall@10", "ndcg@10", "vs_exact"}}``, each also printed, after the exact search's line."""
    fusion = rankers.measured_search().fusion
    lexical = rankers.LexicalRanker(task).rank(task.query_texts, fusion.depth)
    queries = dense.rank_vectors(task.query_texts)
    sims = queries @ dense.docs.T
    exact_dense = rankers.top_k(sims, dense.doc_ids, fusion.depth)
    truth = [{d for d, _ in row[:10]} for row in exact_dense]

    def ndcg(dense_half: list[retrieval.Ranking]) -> dict[str, float]:
        run = [fusion.fuse(a, b, retrieval.DEPTH) for a, b in zip(dense_half, lexical)]
        return retrieval.per_query(dict(zip(task.query_ids, run)), task.qrels)["ndcg@10"]

    exact = ndcg(exact_dense)
    out(f"the default search ({dense.name} / {dense.view} and BM25, {fusion}), exact: nDCG@10 {np.mean(list(exact.values())):.4f}")
    docs = [Doc(d, "") for d in dense.doc_ids]
    results = {}
    for factory in factories:
        index = VectorIndex(new_config(NewIndex("dev", dense.name, dense.view, dense.docs.shape[1], factory=factory)))
        for i in range(0, len(docs), BATCH):
            index.add(docs[i : i + BATCH], dense.docs[i : i + BATCH], list(range(i, min(i + BATCH, len(docs)))))
        found = [[(d.id, s) for d, s in row] for row in index.search(queries, fusion.depth)]
        recall = float(np.mean([len({d for d, _ in row[:10]} & t) / len(t) for row, t in zip(found, truth)]))
        got = ndcg(found)
        p = retrieval.paired(got, exact)
        results[factory] = {"recall@10": recall, "ndcg@10": float(np.mean(list(got.values()))), "vs_exact": p}
        out(f"  {factory:12s} dense recall@10 {recall:.4f}  default search nDCG@10 {results[factory]['ndcg@10']:.4f}"
            f"  vs exact {p['diff']:+.4f} [{p['lo']:+.4f}, {p['hi']:+.4f}] paired")  # fmt: skip
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bundle", required=True, help="the dense bundle (its default view unless --view)")
    p.add_argument("--view")
    p.add_argument("--factories", default=";".join(FACTORIES), help="FAISS factories separated by ';' (default: %(default)s)")
    p.add_argument("--beir", help="BEIR folder (default $THOUGHTVEC_BEIR or ../shared/data/retrieval/scifact-dev)")
    args = p.parse_args(argv)
    task = beir.load(args.beir)
    src = sources.BundleSource(args.bundle, truncation="split")
    (dense,) = rankers.DenseRanker.for_views(src, [args.view or src.default_view], task)
    factory_grid(task, dense, lambda m: print(m, flush=True), tuple(args.factories.split(";")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
