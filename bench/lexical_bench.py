"""The lexical index beside a live vector index: single-document adds between searches, and the rebuild;
with ``--load``, what the lexical half adds to loading an index.

    python -m thoughtvec.bench.lexical_bench --n 48000 --adds 2000
    python -m thoughtvec.bench.lexical_bench --load --n 50000 --dim 384

Builds a :class:`~thoughtvec.service.index.lexical.LexicalIndex` over the first ``n`` sentences of the
search sample (``from_documents``, the path a restart takes from the stored documents), then alternates
one single-document add (a sentence not yet in it) with one search of another sentence, ``adds`` times,
then deletes a tenth of the index one document at a time. Prints the rebuild time, adds/s, deletes/s
and search latency percentiles; asserts nothing about time.

``--load`` writes a snapshot of a ``Flat`` index of the first ``n`` sentences (random vectors of ``dim``:
loading does not depend on their values; 384 is all-MiniLM-L6-v2's), then loads it in two fresh
processes: the vectors half alone (``VectorIndex.read_snapshot``, what a load was before the lexical half)
and the whole index as a server loads it (``IndexStore.load_all``: vectors and BM25). Each prints its
seconds and how much its resident memory grew (both import everything first, so imports count in neither).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from thoughtvec.service.index.build import read_documents
from thoughtvec.service.index.contents import BuiltIndex, NewIndex
from thoughtvec.service.index.indexes import VectorIndex, new_config
from thoughtvec.service.index.lexical import Analyzer, LexicalIndex
from thoughtvec.service.index.store import SNAPSHOT, IndexStore
from thoughtvec.service.settings import PACKAGE_DATA


def run(n: int, adds: int, k: int = 10, seed: int = 0) -> dict:
    docs = read_documents(PACKAGE_DATA / "search_sample.tsv.gz", n + adds)
    if len(docs) < n + adds:
        raise ValueError(f"the search sample has {len(docs)} sentences; --n plus --adds is {n + adds}")
    t = time.perf_counter()
    index = LexicalIndex.from_documents(((f"d{i}", d.text) for i, d in enumerate(docs[:n])))
    rebuild_s = time.perf_counter() - t
    rng = np.random.default_rng(seed)
    add_s, search_s = [], []
    for j in range(adds):
        t = time.perf_counter()
        index.add([f"d{n + j}"], [docs[n + j].text])
        add_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        index.search(docs[int(rng.integers(0, n))].text, k)
        search_s.append(time.perf_counter() - t)
    gone = [f"d{i}" for i in rng.choice(n, size=n // 10, replace=False)]
    t = time.perf_counter()
    for doc_id in gone:
        index.delete([doc_id])
    delete_s = time.perf_counter() - t
    ms = np.asarray(search_s) * 1e3
    return {"documents": len(index), "rebuild_s": rebuild_s, "adds_per_s": adds / sum(add_s), "deletes_per_s": len(gone) / delete_s,
            "search_ms_p50": float(np.percentile(ms, 50)), "search_ms_p95": float(np.percentile(ms, 95))}  # fmt: skip


def _rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def _load_here(root: str, half: str, name: str = "x") -> dict:
    """Load the index ``name`` under ``root`` in this (fresh) process: ``vectors`` alone or ``both`` halves."""

    Analyzer().terms(["warm the analyser up"])  # imports and the stemmer: paid by any process, counted in neither
    before, t = _rss_kib(), time.perf_counter()
    if half == "vectors":
        loaded: object = VectorIndex.read_snapshot(Path(root) / name / SNAPSHOT)  # kept alive until measured
        docs = loaded.count  # type: ignore[attr-defined]
    else:
        loaded = store = IndexStore(Path(root))
        store.load(name)
        lexical = store.entry(name).lexical
        assert lexical is not None  # a store that keeps the BM25 half (any but a bulk build's)
        docs = len(lexical)
    seconds, grown = time.perf_counter() - t, (_rss_kib() - before) / 1024
    del loaded
    return {"half": half, "seconds": seconds, "rss_mib": grown, "documents": docs}


def load(n: int, dim: int) -> list[dict]:
    """Write an index of ``n`` sample sentences, then load it in a fresh process per half: the two figures."""

    docs = read_documents(PACKAGE_DATA / "search_sample.tsv.gz", n)
    vectors = np.random.default_rng(0).standard_normal((len(docs), dim)).astype(np.float32)
    with tempfile.TemporaryDirectory() as root:
        store = IndexStore(Path(root))
        store.install(BuiltIndex(new_config(NewIndex("x", "bench", "bench", dim)), docs, vectors))
        store.close()  # the folder let go of: each process below loads it
        out = []
        for half in ("vectors", "both"):
            code = f"import json; from thoughtvec.bench.lexical_bench import _load_here; print(json.dumps(_load_here({root!r}, {half!r})))"
            run_ = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            out.append(json.loads(run_.stdout.strip().splitlines()[-1]))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=48_000, help="sentences indexed before the adds (the sample has 50,000)")
    p.add_argument("--adds", type=int, default=2000, help="single-document adds, each followed by one search")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--load", action="store_true", help="time loading an index of --n sentences with and without its lexical half")
    p.add_argument("--dim", type=int, default=384, help="with --load: the vectors' dimension")
    args = p.parse_args(argv)
    if args.load:
        vectors, both = load(args.n, args.dim)
        print(f"load of a Flat index of {both['documents']} sentences (dim {args.dim}): vectors alone {vectors['seconds']:.2f}s, "
              f"+{vectors['rss_mib']:.0f} MiB resident; with the lexical half {both['seconds']:.2f}s, +{both['rss_mib']:.0f} MiB")  # fmt: skip
        return 0
    r = run(args.n, args.adds, args.k)
    print(f"lexical index: rebuilt over {args.n} sentences in {r['rebuild_s']:.2f}s; {args.adds} single adds between searches: "
          f"{r['adds_per_s']:.0f} adds/s, search p50 {r['search_ms_p50']:.2f} ms, p95 {r['search_ms_p95']:.2f} ms; "
          f"{args.n // 10} single deletes: {r['deletes_per_s']:.0f}/s; {r['documents']} documents at the end")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
