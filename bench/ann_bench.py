"""Approximate indexes against the exact one, on the same real index: recall, hybrid overlap, latency, memory, build.

    python -m thoughtvec.bench.ann_bench --index-dir /tmp/scale/idx-1000000 --bundle models/mean-max-aae \\
        --factories HNSW32,HNSW16,IVF4096,Flat,IVF4096,SQ8 --json docs/scale/ann-mean-max-aae.json

Reads an index built by ``thoughtvec index build`` (a ``Flat`` one: its vectors are the exact ones, e.g. the largest
of ``python -m thoughtvec.bench.scale_bench --work ...``), and the bench's 300 queries (the scale bench's), embedded
with the index's bundle and view as the server embeds them. Each factory is built as the server builds it
(:class:`~thoughtvec.service.index.indexes.VectorIndex`: the vectors added 2 048 at a time, in the index's order, an
IVF trained on its first ``train_size``; the server's search knobs), then each query searched one at a time:

* **recall@10**: the share of the exact top 10 (the ``Flat`` index's) among its top 10 (a dense search, k 10), by
  the served knob and by others (IVF's ``nprobe``, HNSW's ``efSearch``);
* **hybrid overlap@10**: the share of the hybrid search's top 10 (the dense half at the fusion's depth fused with BM25
  as the server fuses them) that is the same as with the exact dense half;
* **latency**: the search at k 10 and at the fusion's depth (a hybrid search's dense half), p50/p99 ms, one query at
  a time (no HTTP, no embedding: the part the factory changes);
* **memory**: the FAISS index's bytes (serialised: codes, graph, lists; the documents are the same for all);
* **build**: seconds to add every vector (training included).

Prints a row per factory and knob; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import faiss
import numpy as np

from thoughtvec.bench.scale_bench import NAME, corpus_documents
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.core.index_search import fuse_hits
from thoughtvec.service.index.contents import Doc, NewIndex
from thoughtvec.service.index.factory_grammar import SEARCH_PARAMS
from thoughtvec.service.index.indexes import VectorIndex, new_config
from thoughtvec.service.index.lexical import LexicalIndex
from thoughtvec.service.index.search_settings import FALLBACK_FUSION, SearchSettings
from thoughtvec.service.index.store import SNAPSHOT
from thoughtvec.service.model_guide import Guide

CHUNK = 2048
KNOBS = {"nprobe": (8, 16, 32, 64, 128, 256), "efSearch": (32, 64, 128, 256, 384, 512)}


def exact_vectors(vi: VectorIndex) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, vectors)`` of an index storing its vectors exactly, in the order they were added."""
    labels = np.fromiter(vi.docs, np.int64, len(vi.docs))
    return labels, vi.vectors_of(labels)


def build(vi: VectorIndex, factory: str, labels: np.ndarray, x: np.ndarray) -> tuple[VectorIndex, float]:
    config = new_config(NewIndex("ann", vi.config.model, vi.config.view, vi.config.dim, factory=factory, metric=vi.config.metric))
    out = VectorIndex(config)
    started = time.perf_counter()
    for i in range(0, len(x), CHUNK):
        rows = slice(i, i + CHUNK)
        out.add([Doc(str(lb), "") for lb in labels[rows]], x[rows], labels[rows].tolist())
    return out, time.perf_counter() - started


def top_labels(vi: VectorIndex, q: np.ndarray, k: int) -> tuple[list[np.ndarray], list[float]]:
    """Each query's ``k`` best labels, searched one at a time, and each search's seconds."""
    labels, seconds = [], []
    index = vi.index
    for row in q:
        t = time.perf_counter()
        _, lab = index.search(row[None, :], k)
        seconds.append(time.perf_counter() - t)
        labels.append(lab[0])
    return labels, seconds


def set_knob(vi: VectorIndex, knob: str, value: int) -> None:
    faiss.ParameterSpace().set_index_parameter(vi.index, knob, value)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--index-dir", type=Path, required=True)
    p.add_argument("--name", default=NAME)
    p.add_argument("--bundle", type=Path, required=True, help="the bundle the index was built with")
    p.add_argument("--factories", default="HNSW32,IVF4096,Flat,IVF4096,SQ8",
                   help="factories, comma-separated (an IVF's codes are its next item: IVF4096,Flat)")  # fmt: skip
    p.add_argument("--corpus", type=Path, default=Path("data/corpus"))
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    factories = _factories(args.factories)

    exact = VectorIndex.read_snapshot(args.index_dir / args.name / SNAPSHOT)
    if exact.config.factory != "Flat":
        p.error(f"the index is {exact.config.factory}; the exact vectors come from a Flat index")
    labels, x = exact_vectors(exact)
    _, queries = corpus_documents(args.corpus)
    enc = Encoder.load(args.bundle)
    q = exact.prepare(enc.encode(queries, exact.config.view, normalize=False))
    guide = Guide.load(args.bundle.parent)
    measured = exact.config.fingerprint and guide.measured(exact.config.model, exact.config.fingerprint)
    fusion = SearchSettings.of(guide).fusion if measured else FALLBACK_FUSION
    settings = SearchSettings.of(guide)
    depth = fusion.depth
    print(f"{exact.count:,} documents, dim {exact.config.dim}; {len(queries)} queries; fusion {fusion.method} depth {depth}", flush=True)

    t = time.perf_counter()
    lexical = LexicalIndex.from_documents(((d.id, d.text) for d in exact.docs.values()), settings.analyzer, settings.bm25)
    print(f"BM25 half built in {time.perf_counter() - t:.0f} s", flush=True)
    lex, lex_s = [], []
    for text in queries:
        t = time.perf_counter()
        hits = lexical.search(text, depth)
        lex_s.append(time.perf_counter() - t)
        lex.append([(exact.docs[exact.labels[i]], s) for i, s in hits])
    del lexical
    lexical_ms = _ms(lex_s)
    print(f"BM25 half, k {depth}: p50 {lexical_ms['p50_ms']:.2f} p99 {lexical_ms['p99_ms']:.2f} ms", flush=True)

    row_of = np.zeros(int(labels.max()) + 1, np.int64)
    row_of[labels] = np.arange(len(labels))

    def hybrid(dense_labels: list[np.ndarray]) -> list[list[str]]:
        out = []
        for lab, lx, qv in zip(dense_labels, lex, q):
            lab = lab[lab >= 0]
            dense = [(exact.docs[int(b)], float(qv @ x[row_of[b]])) for b in lab]  # the exact cosine, as the index scores
            out.append([h.id for h in fuse_hits(fusion, dense, lx, 10, lower_is_better=False)])
        return out

    truth, flat_s = top_labels(exact, q, depth)
    exact10, flat10_s = top_labels(exact, q, 10)
    truth10 = [set(t.tolist()) for t in exact10]
    truth_hybrid = hybrid(truth)
    rows = [{"factory": "Flat", "knob": None, "recall10": 1.0, "hybrid_overlap10": 1.0, "build_s": 0.0,
             "bytes": len(faiss.serialize_index(exact.index)), **_ms(flat_s), **{f"k10_{k}": v for k, v in _ms(flat10_s).items()}}]  # fmt: skip
    _print(rows[-1], depth)
    served = dict(SEARCH_PARAMS)
    for factory in factories:
        vi, build_s = build(exact, factory, labels, x)
        size = len(faiss.serialize_index(vi.index))
        knob = "nprobe" if "IVF" in factory else "efSearch"
        for value in KNOBS[knob]:
            set_knob(vi, knob, value)
            top10, seconds10 = top_labels(vi, q, 10)  # a dense search (k 10)
            found, seconds = top_labels(vi, q, depth)  # a hybrid search's dense half
            recall = statistics.mean(len(truth10[i] & set(f.tolist())) / 10 for i, f in enumerate(top10))
            overlap = statistics.mean(len(set(a) & set(b)) / max(len(b), 1) for a, b in zip(hybrid(found), truth_hybrid))
            rows.append({"factory": factory, "knob": f"{knob} {value}", "served": value == served[knob], "recall10": recall,
                         "hybrid_overlap10": overlap, "build_s": build_s, "bytes": size, **_ms(seconds),
                         **{f"k10_{k}": v for k, v in _ms(seconds10).items()}})  # fmt: skip
            _print(rows[-1], depth)
        del vi
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "documents": exact.count,
                    "dim": exact.config.dim,
                    "bundle": args.bundle.name,
                    "depth": depth,
                    "lexical": lexical_ms,
                    "rows": rows,
                },
                indent=1,
            )
            + "\n"
        )
    return 0


def _factories(text: str) -> list[str]:
    """``HNSW32,IVF4096,Flat`` -> ``["HNSW32", "IVF4096,Flat"]``: an IVF takes the item after it as its codes."""
    items, out = text.split(","), []
    while items:
        head = items.pop(0)
        out.append(f"{head},{items.pop(0)}" if head.startswith(("IVF", "PCA")) and items else head)
    return out


def _ms(seconds: list[float]) -> dict:
    ms = sorted(s * 1e3 for s in seconds)
    return {"p50_ms": statistics.median(ms), "p99_ms": ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]}


def _print(r: dict, depth: int) -> None:
    mark = " (served)" if r.get("served") else ""
    print(f"{r['factory']:>14s} {r['knob'] or '':12s}{mark:9s} recall@10 {r['recall10']:.4f}  hybrid overlap@10 {r['hybrid_overlap10']:.4f}  "
          f"k 10: p50 {r['k10_p50_ms']:.2f} p99 {r['k10_p99_ms']:.2f} ms; k {depth}: p50 {r['p50_ms']:.2f} p99 {r['p99_ms']:.2f} ms  "
          f"{r['bytes'] / 1e6:,.0f} MB  build {r['build_s']:.0f} s", flush=True)  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
