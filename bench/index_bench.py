"""Index backends side by side: add throughput and search queries/s on the same vectors and queries.

    python -m thoughtvec.bench.index_bench --n 100000 --dim 1024 --backends faiss,milvus-lite,milvus-server \\
        --milvus-uri http://127.0.0.1:19530

Vectors and queries are random unit vectors (seeded), of the default model's dimension (1024:
invertible-bijection's ``ensemble`` view), not embedded sentences: this measures the stores, not
the encoder. Each backend gets an empty ``Flat`` (exact, cosine) index; documents are added in
batches through the store's ``add`` (the path ``POST /v1/indexes/{name}/documents`` takes after
embedding), then single queries are timed through ``search`` (``POST /v1/search`` after
embedding). Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from thoughtvec.service.index.backend import MilvusOptions, open_store
from thoughtvec.service.index.contents import Doc
from thoughtvec.service.settings import IndexBackendName


def unit(n: int, dim: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)  # (n, dim)


def run_one(backend: str, x: np.ndarray, q: np.ndarray, batch: int, k: int, uri: str, folder: Path) -> dict:
    kind = IndexBackendName.faiss if backend == "faiss" else IndexBackendName.milvus
    milvus = MilvusOptions(uri=str(folder / "bench.db") if backend == "milvus-lite" else uri, prefix="bench_", timeout_s=60)
    store = open_store(kind, index_dir=folder / "faiss", milvus=milvus)
    store.load_all()
    if "bench" in store.names():
        store.drop("bench")
    store.create(store.new_config("bench", "invertible-bijection", "ensemble", x.shape[1], mode="dense"))
    t = time.perf_counter()
    for start in range(0, len(x), batch):
        part = x[start : start + batch]
        store.add("bench", [Doc(f"d{start + i}", f"document {start + i}") for i in range(len(part))], part)
    add_s = time.perf_counter() - t
    store.search("bench", q[:1], k)  # warm-up (Milvus loads and indexes sealed segments)
    lat = []
    top1 = []
    for row in q:
        t0 = time.perf_counter()
        hits = store.search("bench", row[None, :], k)[0]
        lat.append(time.perf_counter() - t0)
        top1.append(hits[0][0].id)
    count = store.count("bench")
    store.drop("bench")
    store.close()
    lat_ms = np.array(lat) * 1000
    return {
        "backend": backend,
        "documents": count,
        "add_docs_per_s": len(x) / add_s,
        "add_s": add_s,
        "search_qps": len(q) / sum(lat),
        "p50_ms": float(np.percentile(lat_ms, 50)),
        "p99_ms": float(np.percentile(lat_ms, 99)),
        "top1": top1,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=100_000, help="vectors added")
    p.add_argument("--dim", type=int, default=1024, help="their dimension (the default model's: 1024)")
    p.add_argument("--queries", type=int, default=200, help="single-vector searches timed")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--batch", type=int, default=1000, help="documents per add call")
    p.add_argument("--backends", default="faiss,milvus-lite,milvus-server")
    p.add_argument("--milvus-uri", default="http://127.0.0.1:19530", help="the Milvus server for the milvus-server backend")
    args = p.parse_args(argv)
    x, q = unit(args.n, args.dim, 0), unit(args.queries, args.dim, 1)
    results = []
    with tempfile.TemporaryDirectory(prefix="index-bench-") as tmp:
        for backend in args.backends.split(","):
            r = run_one(backend, x, q, args.batch, args.k, args.milvus_uri, Path(tmp))
            results.append(r)
            print(
                f"{backend:14s} {r['documents']:>7d} docs  add {r['add_docs_per_s']:>8.0f} docs/s ({r['add_s']:.1f} s)  "
                f"search {r['search_qps']:>7.1f} q/s  p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms",
                flush=True,
            )
    base = results[0]["top1"]
    for r in results[1:]:
        agree = np.mean([a == b for a, b in zip(base, r["top1"])])
        print(f"top-1 agreement {results[0]['backend']} vs {r['backend']}: {agree:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
