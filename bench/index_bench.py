"""Index backends side by side: add throughput and search queries/s on the same vectors and queries.

    python -m thoughtvec.bench.index_bench --n 100000 --dim 1024 --backends faiss,milvus-lite,milvus-server \\
        --milvus-uri http://127.0.0.1:19530

Vectors and queries are random unit vectors (seeded), of the default model's dimension (1024:
invertible-bijection's ``ensemble`` view), not embedded sentences: this measures the stores, not
the encoder. Each backend gets an empty ``Flat`` (exact, cosine) index; documents are added in
batches through the store's ``add`` (the path ``POST /v1/indexes/{name}/documents`` takes after
embedding), then single queries are timed through ``search`` (``POST /v1/search`` after
embedding). Prints figures; asserts nothing about time.

``--ingest``: ingestion against embedding on one live server. A ``thoughtvec serve`` subprocess serves one
bundle; a BEIR corpus's documents (``title text``, read in place) are sent, in requests of ``--request-size``
texts with ``--concurrency`` in flight, as ``POST /v1/embeddings`` (base64) and as
``POST /v1/indexes/{name}/documents`` to a new index of the same bundle (``--mode``), alternating which goes
first, ``--repeats`` rounds. Prints each round's texts/s of both and their ratio, then the median and the
spread of the ratios (on a shared machine compare within a round)::

    python -m thoughtvec.bench.index_bench --ingest --bundle models/all-minilm-l6-v2 \\
        --corpus ../shared/data/retrieval/scifact-dev --repeats 5
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from thoughtvec.bench.bench import Server
from thoughtvec.service.index.backend import MilvusOptions, open_store
from thoughtvec.service.index.contents import Doc, NewIndex
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
    store.create(store.new_config(NewIndex("bench", "invertible-bijection", "ensemble", x.shape[1], mode="dense")))
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


def read_corpus(folder: Path, n: int) -> list[str]:
    """The first ``n`` documents of a BEIR ``corpus.jsonl`` (all when ``n`` is 0), each ``(title + " " + text).strip()``."""
    texts = []
    with open(folder / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                texts.append(((d.get("title") or "") + " " + d["text"]).strip())
                if len(texts) == n:
                    break
    return texts


def _post_all(port: int, path: str, bodies: list[bytes], concurrency: int) -> float:
    """Seconds to POST every body to ``path``, ``concurrency`` in flight (keep-alive connections); any non-2xx raises."""

    def send(part: list[bytes]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        try:
            for body in part:
                _call(conn, "POST", path, body)
        finally:
            conn.close()

    parts = [bodies[i::concurrency] for i in range(concurrency)]
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(send, parts))
    return time.perf_counter() - started


def _call(conn: http.client.HTTPConnection, method: str, path: str, body: bytes | None) -> None:
    """One JSON request on ``conn``, its answer read; any non-2xx raises."""
    conn.request(method, path, body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    answer = r.read()
    if r.status >= 300:
        raise RuntimeError(f"{method} {path}: {r.status} {answer[:300]!r}")


def _request(port: int, method: str, path: str, body: dict | None = None) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        _call(conn, method, path, json.dumps(body).encode() if body is not None else None)
    finally:
        conn.close()


def ingest(args: argparse.Namespace) -> int:
    """``--ingest``: texts/s of adding documents to a new index against ``/v1/embeddings``, alternated on one server."""
    texts = read_corpus(args.corpus, args.documents)
    model = args.bundle.name
    chunks = [texts[i : i + args.request_size] for i in range(0, len(texts), args.request_size)]
    embed_bodies = [json.dumps({"model": model, "input": c, "encoding_format": "base64"}).encode() for c in chunks]
    add_bodies = [json.dumps({"documents": [{"text": t} for t in c]}).encode() for c in chunks]
    flags = ["--truncation", args.truncation, *args.server_flag]
    print(
        f"{len(texts)} documents of {args.corpus} ({sum(map(len, texts)) / len(texts):.0f} characters on average), {len(chunks)} "
        f"requests of up to {args.request_size}, {args.concurrency} in flight; {model}, truncation={args.truncation}, index mode {args.mode}",
        flush=True,
    )
    server = Server(args.bundle, flags)
    ratios = []
    try:
        # warm-up of both routes (the first add also loads the BM25 analyser)
        _post_all(server.port, "/v1/embeddings", embed_bodies[: args.concurrency], args.concurrency)
        _request(server.port, "POST", "/v1/indexes", {"name": "ingest-warm-up", "model": model, "mode": args.mode})
        _post_all(server.port, "/v1/indexes/ingest-warm-up/documents", add_bodies[: args.concurrency], args.concurrency)
        _request(server.port, "DELETE", "/v1/indexes/ingest-warm-up")
        print("| round | first | embeddings texts/s | add texts/s | add / embeddings |")
        print("|---:|---|---:|---:|---:|")
        for r in range(args.repeats):
            name = f"ingest-{r}"
            _request(server.port, "POST", "/v1/indexes", {"name": name, "model": model, "mode": args.mode})
            timed = {}
            order = ("embeddings", "add") if r % 2 == 0 else ("add", "embeddings")
            for what in order:
                if what == "embeddings":
                    timed[what] = _post_all(server.port, "/v1/embeddings", embed_bodies, args.concurrency)
                else:
                    timed[what] = _post_all(server.port, f"/v1/indexes/{name}/documents", add_bodies, args.concurrency)
            _request(server.port, "DELETE", f"/v1/indexes/{name}")
            emb, add = len(texts) / timed["embeddings"], len(texts) / timed["add"]
            ratios.append(add / emb)
            print(f"| {r + 1} | {order[0]} | {emb:.1f} | {add:.1f} | {add / emb:.3f} |", flush=True)
    finally:
        server.close()
    print(
        f"add / embeddings: median {statistics.median(ratios):.3f}, min {min(ratios):.3f}, max {max(ratios):.3f} over {len(ratios)} rounds"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=100_000, help="vectors added")
    p.add_argument("--dim", type=int, default=1024, help="their dimension (the default model's: 1024)")
    p.add_argument("--queries", type=int, default=200, help="single-vector searches timed")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--batch", type=int, default=1000, help="documents per add call")
    p.add_argument("--backends", default="faiss,milvus-lite,milvus-server")
    p.add_argument("--milvus-uri", default="http://127.0.0.1:19530", help="the Milvus server for the milvus-server backend")
    p.add_argument("--ingest", action="store_true", help="instead: adding documents against /v1/embeddings on one live server")
    p.add_argument("--bundle", type=Path, default=Path("models/all-minilm-l6-v2"), help="--ingest: the bundle served")
    p.add_argument("--corpus", type=Path, default=Path("../shared/data/retrieval/scifact-dev"), help="--ingest: a BEIR folder")
    p.add_argument("--documents", type=int, default=0, help="--ingest: the corpus's first documents sent (0: all)")
    p.add_argument("--request-size", type=int, default=64, help="--ingest: texts per request")
    p.add_argument("--concurrency", type=int, default=2, help="--ingest: requests in flight")
    p.add_argument("--mode", default="hybrid", choices=["dense", "hybrid", "lexical"], help="--ingest: the new index's mode")
    p.add_argument("--truncation", default="split", choices=["split", "truncate", "reject"], help="--ingest: the server's truncation")
    p.add_argument("--repeats", type=int, default=3, help="--ingest: rounds, alternating which route goes first")
    p.add_argument("--server-flag", action="append", default=[], help="--ingest: extra flag for the server")
    args = p.parse_args(argv)
    if args.ingest:
        return ingest(args)
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
