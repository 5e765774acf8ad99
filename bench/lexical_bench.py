"""The lexical index beside a live vector index: single-document adds between searches, and the rebuild.

    python -m thoughtvec.bench.lexical_bench --n 48000 --adds 2000

Builds a :class:`~thoughtvec.service.index.lexical.LexicalIndex` over the first ``n`` sentences of the
search sample (``from_documents``, the path a restart takes from the stored documents), then alternates
one single-document add (a sentence not yet in it) with one search of another sentence, ``adds`` times,
then deletes a tenth of the index one document at a time. Prints the rebuild time, adds/s, deletes/s
and search latency percentiles; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from thoughtvec.service.index.build import read_documents
from thoughtvec.service.index.lexical import LexicalIndex
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=48_000, help="sentences indexed before the adds (the sample has 50,000)")
    p.add_argument("--adds", type=int, default=2000, help="single-document adds, each followed by one search")
    p.add_argument("--k", type=int, default=10)
    args = p.parse_args(argv)
    r = run(args.n, args.adds, args.k)
    print(f"lexical index: rebuilt over {args.n} sentences in {r['rebuild_s']:.2f}s; {args.adds} single adds between searches: "
          f"{r['adds_per_s']:.0f} adds/s, search p50 {r['search_ms_p50']:.2f} ms, p95 {r['search_ms_p95']:.2f} ms; "
          f"{args.n // 10} single deletes: {r['deletes_per_s']:.0f}/s; {r['documents']} documents at the end")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
