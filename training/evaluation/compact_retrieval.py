"""What compact vectors cost in retrieval: dense nDCG@10 on the SciFact dev set (BEIR layout, ``beir.py``) of a
bundle's default view with its document and query vectors as each embedding type the server answers
(``service/core/compact.py``), and the bytes each vector takes.

Vectors are made as the server makes them (``truncation="split"``, L2-normalised) and coded as it codes them: int8
and uint8 on the ranges of the server's own calibration sentences (``service/core/calibration.py``), never the
corpus's. Each type is scored as a vector database would: float by dot product (the cosine); int8 and uint8 by the dot
product of the integer codes, and of the codes read back (each level's middle, ``dequantize``); binary and ubinary
by Hamming similarity (the same bits: one row). Rankings are scored by the retrieval harness (``retrieval.py``:
trec_eval's nDCG@10, a 95 % bootstrap interval over queries, and the paired difference with float).

    python -m thoughtvec.training.evaluation.compact_retrieval --bundle models/all-minilm-l6-v2 --bundle models/mean-max-aae
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from tqdm import tqdm

from thoughtvec.service.core.calibration import CALIBRATION_SENTENCES, calibration_texts
from thoughtvec.service.core.compact import Precision, Ranges, as_ubinary, code_bytes, dequantize, hamming_similarity, quantize
from thoughtvec.training.evaluation import beir
from thoughtvec.training.evaluation.rankers import top_k
from thoughtvec.training.evaluation.retrieval import DEPTH, paired, per_query, summary
from thoughtvec.training.evaluation.sources import BundleSource

Score = Callable[[np.ndarray, np.ndarray, Ranges, int], np.ndarray]  # (query vectors, doc vectors, ranges, dim) -> (q, d)


def dot(q: np.ndarray, d: np.ndarray, r: Ranges, dim: int) -> np.ndarray:
    return q @ d.T


def scored(precision: Precision, how: str) -> Score:
    """Scores of ``precision`` codes, ``how``: ``codes`` (the integers' dot product, exact in float64), ``read back``
    (the dequantized vectors' dot product) or ``hamming`` (the bit precisions)."""

    def score(q: np.ndarray, d: np.ndarray, r: Ranges, dim: int) -> np.ndarray:
        qc, dc = quantize(q, precision, r), quantize(d, precision, r)
        if how == "hamming":
            return hamming_similarity(as_ubinary(qc, precision), as_ubinary(dc, precision), dim).astype(np.float64)
        if how == "codes":
            return qc.astype(np.float64) @ dc.astype(np.float64).T
        return dequantize(qc, precision, r) @ dequantize(dc, precision, r).T

    return score


# (embedding type, how it is scored, score)
ROWS: list[tuple[str, str, Precision, Score]] = [
    ("float", "dot product", "float", dot),
    ("int8", "dot product of the codes", "int8", scored("int8", "codes")),
    ("int8", "dot product, read back", "int8", scored("int8", "read back")),
    ("uint8", "dot product of the codes", "uint8", scored("uint8", "codes")),
    ("uint8", "dot product, read back", "uint8", scored("uint8", "read back")),
    ("binary, ubinary", "Hamming similarity", "binary", scored("binary", "hamming")),
]


def embed(source: BundleSource, texts: list[str], what: str) -> np.ndarray:
    with tqdm(total=len(texts), desc=f"{source.name}: {what}", unit="text", file=sys.stderr, disable=None) as bar:
        return source.encode_views(texts, [source.default_view], progress=bar.update)[source.default_view]


def measure(bundle: Path, task: beir.RetrievalTask, threads: int | None) -> list[dict]:
    """One result per row of :data:`ROWS` for ``bundle``'s default view on ``task``."""
    source = BundleSource(bundle, normalize=True, threads=threads, truncation="split")
    docs = embed(source, task.doc_texts, "documents")
    queries = embed(source, task.query_texts, "queries")
    ranges = Ranges.of(embed(source, list(calibration_texts()), "calibration sentences"))
    dim = docs.shape[1]
    out: list[dict] = []
    base: dict[str, float] | None = None  # float's nDCG@10 per query: what each row is paired with
    for kind, how, precision, score in ROWS:
        sims = score(queries, docs, ranges, dim)  # (queries, documents)
        rankings = dict(zip(task.query_ids, top_k(sims, task.doc_ids, DEPTH)))
        ndcg = per_query(rankings, task.qrels)["ndcg@10"]
        base = ndcg if base is None else base
        diff = paired(ndcg, base)
        out.append({"bundle": source.name, "view": source.default_view, "dim": dim, "type": kind, "scored": how,
                    "bytes": code_bytes(precision, dim), "ndcg": summary({"ndcg@10": ndcg})["ndcg@10"], "diff": diff})  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bundle", action="append", required=True, type=Path)
    p.add_argument("--data", type=Path, help="a BEIR folder (default $THOUGHTVEC_BEIR, else ../shared/data/retrieval/scifact-dev)")
    p.add_argument("--threads", type=int, help="ONNX Runtime threads (default: every core)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    task = beir.load(args.data)
    print(f"{task.name}: {len(task.doc_ids)} documents, {len(task.query_ids)} queries; int8/uint8 ranges from "
          f"{CALIBRATION_SENTENCES} calibration sentences")  # fmt: skip
    print("| bundle (view, dim) | type | scored by | bytes / vector | nDCG@10 [95% CI] | vs float [95% CI] |")
    print("|---|---|---|---:|---|---|")
    for b in args.bundle:
        for r in measure(b, task, args.threads):
            n, d = r["ndcg"], r["diff"]
            vs = "–" if r["type"] == "float" else f"{d['diff']:+.4f} [{d['lo']:+.4f}, {d['hi']:+.4f}]"
            print(f"| {r['bundle']} ({r['view']}, {r['dim']}) | {r['type']} | {r['scored']} | {r['bytes']} | "
                  f"{n['mean']:.4f} [{n['lo']:.4f}, {n['hi']:.4f}] | {vs} |", flush=True)  # fmt: skip
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
