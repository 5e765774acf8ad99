"""FAISS on the GPU through the server's own index (``VectorIndex``): Flat and IVF, queries/s and recall@10.

    bash docker/gpu/serve.sh run python3 docker/gpu/faiss_bench.py --out $OUT      # on the GPU machine
    python docker/gpu/faiss_bench.py --vectors 20000 --dim 64 --nlist 64            # anywhere: the CPU rows only

Vectors are drawn around random centres (so an IVF's lists mean something), L2-normalised, cosine metric, as the
server keeps a model's vectors. Each index is built as the server builds it (on the CPU, the index of record:
trained on its first ``train_size`` vectors), searched on the CPU, then copied to the GPU by ``use_gpu()`` and
searched there: queries/s for the whole query set in one call and for one query at a time (p50 latency), and
recall@10 against the CPU Flat index's exact answers. Prints Markdown, writes ``faiss.json``; asserts nothing.
Without GPU FAISS (faiss-cpu, or FAISS's GPU code not running on this GPU: ``gpu_count()`` says 0) only the CPU rows
are measured.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np


def clustered(n: int, dim: int, centres: int, seed: int, chunk: int = 100_000) -> np.ndarray:
    """``n`` unit vectors, each a random centre plus noise of about the same norm (every centre drawn from ``seed`` 0)."""
    c = np.random.default_rng(0).standard_normal((centres, dim), dtype=np.float32)
    rng = np.random.default_rng(seed)
    out = np.empty((n, dim), np.float32)
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        x = c[rng.integers(0, centres, m)] + rng.standard_normal((m, dim), dtype=np.float32)
        out[start : start + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def ids_of(hits: list[list[tuple]]) -> list[list[str]]:
    return [[doc.id for doc, _ in row] for row in hits]


def recall(got: list[list[str]], truth: list[list[str]], k: int) -> float:
    return float(np.mean([len(set(g[:k]) & set(t[:k])) / k for g, t in zip(got, truth)]))


def timed(vi, queries: np.ndarray, k: int, singles: int) -> dict:
    """One call over every query (warmed first), then ``singles`` calls of one query each."""
    vi.search(queries[:8], k)
    start = time.perf_counter()
    hits = vi.search(queries, k)
    batch_s = time.perf_counter() - start
    lat = []
    for q in queries[:singles]:
        t = time.perf_counter()
        vi.search(q[None, :], k)
        lat.append(time.perf_counter() - t)
    return {
        "qps": len(queries) / batch_s,
        "single_qps": len(lat) / sum(lat),
        "single_p50_ms": 1e3 * float(np.median(lat)),
        "ids": ids_of(hits),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--vectors", type=int, default=1_000_000)
    p.add_argument("--dim", type=int, default=1024, help="the default model's dimension")
    p.add_argument("--queries", type=int, default=2000)
    p.add_argument("--singles", type=int, default=200, help="queries searched one at a time, for latency")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--nlist", type=int, default=1024, help="IVF lists (the server's default train size: 39 a list)")
    p.add_argument("--centres", type=int, default=0, help="clusters in the data (0: 4 per IVF list)")
    p.add_argument("--out", type=Path, default=Path("faiss-bench"))
    a = p.parse_args(argv)
    import faiss  # after the arguments: --help needs no FAISS

    from thoughtvec.service.index.contents import Doc, NewIndex
    from thoughtvec.service.index.indexes import SEARCH_PARAMS, VectorIndex, gpu_count, new_config

    a.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    xb = clustered(a.vectors, a.dim, a.centres or 4 * a.nlist, seed=1)
    xq = clustered(a.queries, a.dim, a.centres or 4 * a.nlist, seed=2)
    gpus = gpu_count()
    report: dict = {
        "vectors": a.vectors, "dim": a.dim, "queries": a.queries, "k": a.k, "faiss": faiss.__version__,
        "cpu_threads": faiss.omp_get_max_threads(), "cpus": os.cpu_count(), "gpus": gpus,
        "search_params": dict(SEARCH_PARAMS), "data_s": time.perf_counter() - t0, "indexes": {},
    }  # fmt: skip
    print(
        f"# FAISS {faiss.__version__} through VectorIndex: {a.vectors:,} × {a.dim} (cosine), {a.queries} queries, k={a.k};"
        f" {report['cpu_threads']} CPU threads; GPUs FAISS can use: {gpus}\n",
        flush=True,
    )
    docs = [Doc(id=str(i), text="") for i in range(a.vectors)]
    truth: list[list[str]] | None = None
    print("| index | where | build s | to GPU s | queries/s (all at once) | one at a time, queries/s | p50 ms | recall@10 vs CPU Flat |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for factory in ("Flat", f"IVF{a.nlist},Flat"):
        t = time.perf_counter()
        vi = VectorIndex(new_config(NewIndex("bench", "m", "v", a.dim, factory=factory)))
        for start in range(0, a.vectors, 100_000):
            stop = min(start + 100_000, a.vectors)
            vi.add(docs[start:stop], xb[start:stop], list(range(start, stop)))
        row: dict = {"build_s": time.perf_counter() - t, "trained": vi.trained}
        cpu = timed(vi, xq, a.k, a.singles)
        truth = truth or cpu["ids"]
        row["cpu"] = {**{key: v for key, v in cpu.items() if key != "ids"}, "recall": recall(cpu["ids"], truth, a.k)}
        if gpus:
            t = time.perf_counter()
            row["on_gpu"] = vi.use_gpu()
            row["to_gpu_s"] = time.perf_counter() - t
            if row["on_gpu"]:
                gpu = timed(vi, xq, a.k, a.singles)
                row["gpu"] = {**{key: v for key, v in gpu.items() if key != "ids"}, "recall": recall(gpu["ids"], truth, a.k)}
                row["gpu_over_cpu"] = gpu["qps"] / cpu["qps"]
        report["indexes"][factory] = row
        for where in ("cpu", "gpu"):
            if where in row:
                r = row[where]
                to_gpu = f"{row['to_gpu_s']:.1f}" if where == "gpu" else ""
                print(
                    f"| `{factory}` | {where.upper()} | {row['build_s']:.1f} | {to_gpu} | {r['qps']:,.0f} | {r['single_qps']:,.0f} |"
                    f" {r['single_p50_ms']:.2f} | {r['recall']:.4f} |",
                    flush=True,
                )
        (a.out / "faiss.json").write_text(json.dumps(report, indent=1))
        del vi
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
