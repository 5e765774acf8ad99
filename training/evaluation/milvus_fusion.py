"""Hybrid search on Milvus fused by the server or by Milvus's own rankers, chosen on the retrieval dev set.

A new index of the corpus is made in a Milvus with BM25 (2.5 and later: Milvus Lite by default) through the
server's own store (:class:`~thoughtvec.service.index.milvus.MilvusStore`: the same collection, analyser, BM25
``k1`` and ``b``), from vectors embedded once by the server's code path (``truncation`` ``split``). Its default
search is then run three ways over the same two Milvus searches (each ``Fusion.depth`` hits deep):

* the server's fusion (:class:`~thoughtvec.service.index.fusion.Fusion`, the model guide's), which is what a
  Milvus-backed server runs for ``mode`` ``hybrid``;
* Milvus's ``hybrid_search`` with ``RRFRanker`` and ``WeightedRanker`` (:data:`MILVUS_RANKERS`).

Each prints nDCG@10 and recall@100 with their bootstrap intervals and the paired difference from the server's
fusion (:mod:`thoughtvec.training.evaluation.retrieval`'s definitions). docs/search.md, *Indexes in Milvus*:

    python -m thoughtvec.training.evaluation.milvus_fusion --bundle models/all-minilm-l6-v2
    python -m thoughtvec.training.evaluation.milvus_fusion --bundle models/all-minilm-l6-v2 --milvus-uri http://127.0.0.1:19530

This module, alone in the harness, talks to an index backend (tests/test_layers.py): the rankers it compares are
Milvus's.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from tqdm import tqdm

from thoughtvec.service.core.index_search import fuse_hits
from thoughtvec.service.index.contents import BuiltIndex, Doc, NewIndex
from thoughtvec.service.index.milvus import MilvusStore
from thoughtvec.service.index.milvus_schema import SPARSE_FIELD, MilvusOptions, bm25_search_params, collection_name, search_params
from thoughtvec.training.evaluation import beir, retrieval, sources
from thoughtvec.training.evaluation.rankers import measured_search
from thoughtvec.training.evaluation.retrieval import Ranking

# Milvus's hybrid_search rankers: RRF at its usual k and at the fusion grid's smaller ones; WeightedRanker (dense,
# lexical) at equal weights and leaning lexical as the server's fusion does (1 : 1.5). Milvus takes weights in
# [0, 1] and maps each side's scores into [0, 1] by arctan before weighing them (norm_score, its default); Milvus
# Lite 2.5.1 maps BM25's as it maps distances (1 - 2 arctan(s) / pi), so a better match counts less there.
MILVUS_RANKERS: tuple[tuple[str, Any], ...] = (
    ("rrf", 60),
    ("rrf", 20),
    ("weighted", (0.5, 0.5)),
    ("weighted", (0.4, 0.6)),
    ("weighted", (0.25, 0.75)),
)


def milvus_grid(task: beir.RetrievalTask, source: sources.Source, view: str, uri: str,
                out: Callable[[str], None] = print, batch: int = 64) -> dict[str, dict]:  # fmt: skip
    """A new index of the corpus in the Milvus at ``uri`` (BM25 in the collection), searched with the server's
    fusion and with each of :data:`MILVUS_RANKERS`: ``{label: {"metrics": ..., "vs_server": ...}}``."""
    from pymilvus import AnnSearchRequest, MilvusClient, RRFRanker, WeightedRanker  # noqa: PLC0415  # the milvus extra (optional)

    with tqdm(total=len(task.doc_texts), desc=f"encode {source.name}", unit="doc", mininterval=2.0, file=sys.stderr, disable=None) as bar:
        docs = sources.encode_views(source, task.doc_texts, [view], progress=bar.update)[view]  # (n_docs, dim)
    queries = sources.encode_views(source, task.query_texts, [view])[view]  # (n_queries, dim)
    out(f"embedded {len(task.doc_ids)} documents and {len(task.query_ids)} queries ({source.name} / {view})")
    store = MilvusStore(MilvusOptions(uri, prefix="tuning_", timeout_s=300))
    name, fusion = "retrieval", measured_search().fusion
    config = store.new_config(NewIndex(name, source.name, view, docs.shape[1], mode="hybrid"))
    store.install(BuiltIndex(config, [Doc(i, t) for i, t in zip(task.doc_ids, task.doc_texts)], docs), overwrite=True)
    out(f"Milvus at {uri}: an index of {store.count(name)} documents, search modes {store.search_modes}")
    depth = max(retrieval.DEPTH, fusion.depth)  # each side's hits, as the server asks them
    server = f"server: {fusion.method}, lexical weight {fusion.lexical_weight}, depth {fusion.depth}"
    rankers_ = {f"Milvus RRFRanker(k={p})" if kind == "rrf" else f"Milvus WeightedRanker{p}": (
        RRFRanker(p) if kind == "rrf" else WeightedRanker(*p)) for kind, p in MILVUS_RANKERS}  # fmt: skip
    runs: dict[str, list[Ranking]] = {server: [], **{label: [] for label in rankers_}}
    client = MilvusClient(uri=uri)  # the store's Milvus: pymilvus runs one Milvus Lite per file, shared by its clients
    coll = collection_name(store.options.prefix, name)
    try:
        for s in range(0, len(task.query_ids), batch):
            qv, qt = queries[s : s + batch], task.query_texts[s : s + batch]
            # (a) what the server runs for a Milvus index's hybrid search: both rankings from Milvus, fused here
            dense, lexical = store.search(name, qv, depth), store.lexical_search(name, qt, depth)
            for d, lx in zip(dense, lexical):
                runs[server].append(
                    [(h.id, h.score) for h in fuse_hits(fusion, d, lx, retrieval.DEPTH, lower_is_better=False) if h.score is not None]
                )
            # (b) Milvus fuses the same two searches itself
            reqs = [
                AnnSearchRequest(qv.tolist(), "vector", search_params(config, depth), depth),
                AnnSearchRequest(list(qt), SPARSE_FIELD, bm25_search_params(), depth),
            ]
            for label, ranker in rankers_.items():
                res = client.hybrid_search(coll, reqs, ranker, limit=retrieval.DEPTH, timeout=300)
                runs[label] += [[(unquote(h["id"]), float(h["distance"])) for h in row] for row in res]  # ids as the store keys them
    finally:
        client.close()
        store.drop(name)
        store.close()
    scores = {label: retrieval.per_query(dict(zip(task.query_ids, r)), task.qrels) for label, r in runs.items()}
    results = {}
    out(f"\n{len(task.query_ids)} queries; nDCG@10 and recall@100 [95%]; paired difference from the server's fusion")
    for label, sc in scores.items():
        m = retrieval.summary(sc)
        vs = {metric: retrieval.paired(sc[metric], scores[server][metric]) for metric in retrieval.METRICS}
        results[label] = {"metrics": m, "vs_server": vs}
        out(f"  {label:55s} nDCG@10 {_ci(m['ndcg@10'], 'mean')}  recall@100 {_ci(m['recall@100'], 'mean')}"
            + ("" if label == server else f"  diff nDCG@10 {_ci(vs['ndcg@10'], 'diff', '+')} recall@100 {_ci(vs['recall@100'], 'diff', '+')}"))  # fmt: skip
    return results


def _ci(v: dict[str, float], key: str, sign: str = "") -> str:
    return f"{v[key]:{sign}.4f} [{v['lo']:{sign}.4f}, {v['hi']:{sign}.4f}]"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bundle", required=True, help="the dense bundle (a new index's default: models/all-minilm-l6-v2)")
    p.add_argument("--view", help="default: the bundle's")
    p.add_argument("--milvus-uri", help="a Milvus Lite file or a Milvus 2.5+ server (default: a new Milvus Lite file)")
    p.add_argument("--beir", help="BEIR folder (default $THOUGHTVEC_BEIR or ../shared/data/retrieval/scifact-dev)")
    args = p.parse_args(argv)
    task = beir.load(args.beir)
    src = sources.BundleSource(args.bundle, truncation="split")  # long documents split and pooled, as the server does
    with tempfile.TemporaryDirectory() as tmp:
        milvus_grid(
            task, src, args.view or src.default_view, args.milvus_uri or str(Path(tmp) / "milvus.db"), lambda m: print(m, flush=True)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
