"""What a rerank costs: ``POST /v1/rerank``'s core on first-stage candidates, per mode, in process.

    python -m thoughtvec.bench.rerank_bench --model all-minilm-l6-v2 --queries 30
    python -m thoughtvec.bench.rerank_bench --model mean-max-aae --sample

Each query's candidates are BM25's best ``--candidates`` (100) of a corpus, as a RAG stack's first stage hands them
to a reranker: the first ``--queries`` of a BEIR folder's queries and its documents, titles before texts, read as
``thoughtvec index build`` reads them (``--beir``, default ``$THOUGHTVEC_BEIR`` or the retrieval dev set beside the
repository), or with ``--sample`` sentences of the search sample, each ranked against the sentence before it. Each
query is reranked through the Python API (the server's core: the model's queue, the same code as the route) in
each mode, one at a time, after one warm-up call; the script prints the milliseconds per call (p50, p90) and the
candidates' BM25 alone (the lexical half of ``hybrid``). Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from thoughtvec.bench.load import load_sentences
from thoughtvec.paths import MODELS, SHARED_DATA
from thoughtvec.service.api import load
from thoughtvec.service.core.scoring import RERANK_MODES, candidate_bm25
from thoughtvec.service.index.inputs import read_documents
from thoughtvec.service.index.lexical import LexicalIndex
from thoughtvec.service.index.search_settings import SearchSettings
from thoughtvec.service.model_guide import Guide


def first_stage(args: argparse.Namespace, search: SearchSettings) -> tuple[str, list[tuple[str, list[str]]]]:
    """What the candidates are, and each query with its candidates."""
    if args.sample:
        sentences = load_sentences(None, args.queries * (args.candidates + 1))
        step = args.candidates + 1
        pairs = [(sentences[i], sentences[i + 1 : i + step]) for i in range(0, len(sentences) - step + 1, step)]
        return f"{args.candidates} sentences of the search sample", pairs[: args.queries]
    root = Path(args.beir or os.environ.get("THOUGHTVEC_BEIR") or SHARED_DATA / "retrieval" / "scifact-dev")
    docs = read_documents(root / "corpus.jsonl")
    index = LexicalIndex.from_documents(((d.id, d.text) for d in docs), search.analyzer, search.bm25)
    text = {d.id: d.text for d in docs}
    queries = [q.text for q in read_documents(root / "queries.jsonl", args.queries)]
    pairs = [(q, [text[d] for d, _ in index.search(q, args.candidates)]) for q in queries]
    return f"BM25's top {args.candidates} of {root.name} ({len(docs)} documents)", pairs


def percentiles(seconds: Sequence[float]) -> tuple[float, float]:
    ms = np.asarray(seconds) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 90))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="all-minilm-l6-v2", help="bundle name under --models-dir, or a bundle folder")
    p.add_argument("--models-dir", default=str(MODELS))
    p.add_argument("--queries", type=int, default=30)
    p.add_argument("--candidates", type=int, default=100)
    p.add_argument("--beir", help="BEIR folder (default $THOUGHTVEC_BEIR or ../shared/data/retrieval/scifact-dev)")
    p.add_argument("--sample", action="store_true", help="the search sample's sentences instead of a BEIR corpus")
    p.add_argument("--threads", type=int, default=None, help="ONNX Runtime threads (default: the API's)")
    args = p.parse_args(argv)
    search = SearchSettings.of(Guide.load(MODELS))
    what, pairs = first_stage(args, search)
    settings = {"ort_threads": args.threads} if args.threads else {}
    with load(args.model, models_dir=args.models_dir, **settings) as model:
        chars = statistics.fmean(len(d) for _, docs in pairs for d in docs)
        print(f"{len(pairs)} queries, each with {what}, mean {chars:.0f} characters a document; model {model.name}")
        print(f"{'mode':8s} {'p50 ms':>8s} {'p90 ms':>8s} {'docs/s':>8s}")
        for mode in RERANK_MODES:
            model.rerank(pairs[0][0], pairs[0][1], mode=mode)  # warm-up
            took = []
            for query, docs in pairs:
                t = time.perf_counter()
                model.rerank(query, docs, mode=mode)
                took.append(time.perf_counter() - t)
            p50, p90 = percentiles(took)
            print(f"{mode:8s} {p50:8.1f} {p90:8.1f} {sum(map(len, (d for _, d in pairs))) / sum(took):8.0f}")
        took = []
        for query, docs in pairs:
            t = time.perf_counter()
            candidate_bm25(query, docs, search)
            took.append(time.perf_counter() - t)
        p50, p90 = percentiles(took)
        print(f"{'BM25':8s} {p50:8.1f} {p90:8.1f}   (the candidates' BM25 alone, part of hybrid)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
