"""An index against its size: ingestion, memory, disk, restarts and search, from 10 k to a million real documents.

    python -m thoughtvec.bench.scale_bench --bundle models/mean-max-aae --sizes 10000,100000,1000000 \\
        --json docs/scale/mean-max-aae.json
    python -m thoughtvec.bench.scale_bench --plot docs/scale/mean-max-aae.json docs/scale/all-minilm-l6-v2.json \\
        --png docs/scale.png

**Documents** are real text, never generated: the training corpus's sentences (``thoughtvec corpus build``, 766 k)
and its two-sentence passages (two consecutive sentences of one document), one list shuffled with a fixed seed; a
size takes the list's first N, so every size holds the same mixture. The **queries** are 300 other corpus
sentences of at least five words, the same at every size (a sentence finding its neighbours: the lexical half
meets the corpus's own vocabulary).

For each size, each step in its own process, on an idle machine:

* **build**: ``thoughtvec index build --mode hybrid`` of the N documents (a ``.jsonl``) into a new index of
  ``--factory`` (default: the server's default for a new index): documents/s and the process's peak resident memory;
  the index folder's size on disk per document.
* **memory**: the index loaded in a fresh process, twice: the vectors half alone (FAISS and the documents) and the
  whole index as the server loads it (with BM25): resident memory grown per document, the halves apart.
* **restart**: ``thoughtvec serve`` over the index folder: seconds from the process's start to ``/ready`` (200),
  its resident memory then (with its children: Milvus Lite runs its database in one).
* **search**: ``POST /v1/search`` (k 10) in each mode, one request at a time and 16 in flight: p50 and p99 ms, and
  queries/s in flight.
* **adds**: ``--http-adds`` further documents (the list's next ones) by ``POST /v1/indexes/{name}/documents``, 64
  a request, 4 in flight: documents/s into an index of that size.
* **kill -9** (the largest size): the build again into a second index, killed (SIGKILL) half-way by the first
  build's time; the server started over the folder (``/ready``: the last snapshot and the log replayed), the
  documents it serves counted, then the same build run again (it resumes: ids decide) and the index checked to hold
  exactly the N documents. Beside it, acknowledged HTTP adds: a client adds documents one request at a time to a
  served index, the server is killed while it does, and every document whose request was answered 200 must be there
  after the restart.

Prints a line per step and writes every figure to ``--json``; ``--plot`` draws the JSON files' curves (PNG).
Asserts nothing about time.
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from thoughtvec import paths
from thoughtvec.bench.bench import Server, resident_mb
from thoughtvec.service.bundle.atomic import atomic_write_bytes

SEED = 0
QUERIES = 300
MODES = ("dense", "lexical", "hybrid")
IN_FLIGHT = 16
NAME = "scale"


# -- the documents ---------------------------------------------------------------------------------------------------


def corpus_documents(corpus: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """``(documents, queries)``: every sentence (``s<n>``) and two-sentence passage (``p<n>``) of the corpus's text,
    shuffled; and :data:`QUERIES` sentences of five words or more, drawn apart (the same whatever the size)."""
    sentences: list[str] = []
    passages: list[str] = []
    previous: str | None = None
    with open(corpus / "corpus.txt", encoding="utf-8") as f:
        for line in f:
            text = line.strip()
            if not text:  # a blank line ends a document: no passage spans two
                previous = None
                continue
            if previous is not None:
                passages.append(f"{previous} {text}")
            sentences.append(text)
            previous = text
    docs = [(f"s{i}", t) for i, t in enumerate(sentences)] + [(f"p{i}", t) for i, t in enumerate(passages)]
    rng = random.Random(SEED)
    rng.shuffle(docs)
    pick = random.Random(SEED + 1)
    queries: list[str] = []
    while len(queries) < QUERIES:
        t = sentences[pick.randrange(len(sentences))]
        if len(t.split()) >= 5:
            queries.append(t)
    return docs, queries


def write_jsonl(docs: list[tuple[str, str]], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for i, t in docs:
            f.write(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n")


def folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


# -- steps -----------------------------------------------------------------------------------------------------------


def backend_flags(index_dir: Path, milvus: bool) -> list[str]:
    """Where the indexes live: the FAISS folder ``index_dir``, or a Milvus Lite database file in it."""
    return ["--index-backend", "milvus", "--milvus-uri", str(index_dir / "milvus.db")] if milvus else []


def build_cmd(bundle: Path, docs: Path, index_dir: Path, name: str, factory: str | None, milvus: bool = False) -> list[str]:
    return [sys.executable, "-m", "thoughtvec.service.cli", "index", "build", "--model", str(bundle.resolve()),
            "--input", str(docs), "--name", name, "--mode", "hybrid", "--index-dir", str(index_dir), "--quiet",
            *(["--factory", factory] if factory else []), *backend_flags(index_dir, milvus)]  # fmt: skip


def build(bundle: Path, docs: Path, index_dir: Path, name: str, factory: str | None, kill_after: float | None = None,
          milvus: bool = False) -> dict:  # fmt: skip
    """``thoughtvec index build`` in a subprocess: seconds and peak resident MB (its high-water mark, polled); killed
    with SIGKILL after ``kill_after`` seconds where given."""
    started = time.perf_counter()
    cmd = build_cmd(bundle, docs, index_dir, name, factory, milvus)
    proc = subprocess.Popen(cmd, cwd=paths.REPO, stdout=subprocess.PIPE, text=True)
    peak = 0.0
    while proc.poll() is None:
        try:
            peak = max(peak, resident_mb(proc.pid)["peak"], tree_rss_mb(proc.pid))
        except (OSError, TypeError):  # between the poll and the read it ended
            pass
        if kill_after is not None and time.perf_counter() - started >= kill_after:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return {"seconds": time.perf_counter() - started, "killed": True, "peak_mb": peak}
        time.sleep(0.1)
    seconds = time.perf_counter() - started
    out = proc.stdout.read() if proc.stdout else ""
    if proc.returncode:
        raise RuntimeError(f"index build exited with {proc.returncode}: {out[-500:]}")
    return {"seconds": seconds, "peak_mb": peak, "summary": out.strip().splitlines()[-1] if out.strip() else ""}


def tree_rss_mb(pid: int) -> float:
    """Resident MB of a process and every process under it now (Milvus Lite runs its database in a child)."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            total += resident_mb(p)["rss"]
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:  # it ended meanwhile
            continue
    return total


def memory(index_dir: Path, name: str) -> dict:
    """Resident MB grown by loading the index in a fresh process: the vectors half alone, then the whole index."""
    out = {}
    for half in ("vectors", "both"):
        code = (f"import json; from thoughtvec.bench.lexical_bench import _load_here; "
                f"print(json.dumps(_load_here({str(index_dir)!r}, {half!r}, {name!r})))")  # fmt: skip
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=paths.REPO)
        r = json.loads(run.stdout.strip().splitlines()[-1])
        out[half] = {"seconds": r["seconds"], "rss_mb": r["rss_mib"] * 2**20 / 1e6}
    return {"vectors_mb": out["vectors"]["rss_mb"], "bm25_mb": out["both"]["rss_mb"] - out["vectors"]["rss_mb"],
            "load_vectors_s": out["vectors"]["seconds"], "load_both_s": out["both"]["seconds"]}  # fmt: skip


def post(conn: http.client.HTTPConnection, path: str, body: dict) -> tuple[int, dict]:
    data = json.dumps(body).encode()
    conn.request("POST", path, data, {"Content-Type": "application/json"})
    r = conn.getresponse()
    payload = r.read()
    return r.status, (json.loads(payload) if payload else {})


def first_answer(server: Server, path: str, wait_s: float = 600.0) -> tuple[dict, float]:
    """``GET path`` until it answers 200 (a Milvus may still be loading the index after ``/ready``): the answer, and
    seconds from the server's start to it."""
    deadline = time.perf_counter() + wait_s
    while True:
        try:
            return get(server.port, path), server.ready_s + time.perf_counter() - server.ready_at
        except RuntimeError:
            if time.perf_counter() > deadline:
                raise
            time.sleep(0.5)


def get(port: int, path: str) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("GET", path)
    r = conn.getresponse()
    body = json.loads(r.read())
    conn.close()
    if r.status != 200:
        raise RuntimeError(f"GET {path}: HTTP {r.status}: {body}")
    return body


def search(port: int, queries: list[str], mode: str, in_flight: int) -> dict:
    """Each query once by ``POST /v1/search`` (k 10), ``in_flight`` at a time (one connection each), after 10 warm-up
    requests: p50/p99 ms and queries/s."""
    local = threading.local()

    def one(q: str) -> float:
        if not hasattr(local, "conn"):
            local.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        t = time.perf_counter()
        status, body = post(local.conn, "/v1/search", {"index": NAME, "query": q, "k": 10, "mode": mode})
        if status != 200:
            raise RuntimeError(f"search ({mode}): HTTP {status}: {body}")
        return time.perf_counter() - t

    with ThreadPoolExecutor(in_flight) as pool:
        list(pool.map(one, queries[:10]))
        started = time.perf_counter()
        lat = list(pool.map(one, queries))
        wall = time.perf_counter() - started
    ms = sorted(x * 1e3 for x in lat)
    return {"p50_ms": statistics.median(ms), "p99_ms": ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))], "qps": len(lat) / wall}


def http_adds(port: int, docs: list[tuple[str, str]], per_request: int = 64, in_flight: int = 4) -> dict:
    local = threading.local()

    def one(part: list[tuple[str, str]]) -> None:
        if not hasattr(local, "conn"):
            local.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        status, body = post(local.conn, f"/v1/indexes/{NAME}/documents", {"documents": [{"id": i, "text": t} for i, t in part]})
        if status != 200:
            raise RuntimeError(f"add: HTTP {status}: {body}")

    parts = [docs[i : i + per_request] for i in range(0, len(docs), per_request)]
    with ThreadPoolExecutor(in_flight) as pool:
        started = time.perf_counter()
        list(pool.map(one, parts))
        wall = time.perf_counter() - started
    return {"docs_per_s": len(docs) / wall, "documents": len(docs)}


def acknowledged_adds(bundle: Path, index_dir: Path, docs: list[tuple[str, str]], kill_after: float) -> dict:
    """Add ``docs`` one request of 8 at a time to the served index ``NAME``, SIGKILL the server after ``kill_after``
    seconds, start it again: every document whose request was answered 200 must be served after the restart."""
    server = Server(bundle, [], index_dir=index_dir)
    acked: list[str] = []
    stop = threading.Event()

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
        for i in range(0, len(docs), 8):
            part = docs[i : i + 8]
            try:
                status, _ = post(conn, f"/v1/indexes/{NAME}/documents", {"documents": [{"id": d, "text": t} for d, t in part]})
            except (OSError, http.client.HTTPException):
                return  # the server is gone: this request was never answered
            if status == 200:
                acked.extend(d for d, _ in part)
            if stop.is_set():
                return

    thread = threading.Thread(target=client)
    thread.start()
    time.sleep(kill_after)
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait()
    stop.set()
    thread.join()
    server.tmp.cleanup()
    again = Server(bundle, [], index_dir=index_dir)
    try:
        missing = _missing(again.port, acked)
    finally:
        again.close()
    return {"acknowledged": len(acked), "missing_after_restart": missing, "ready_s": again.ready_s}


def _missing(port: int, ids: list[str]) -> int:
    """How many of ``ids`` the served index ``NAME`` lacks: each deleted by id (the answer names the ids it did not
    find), 500 a request; the check's last step, the documents are gone after it."""
    missing = 0
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    for i in range(0, len(ids), 500):
        status, body = post(conn, f"/v1/indexes/{NAME}/documents/delete", {"ids": ids[i : i + 500]})
        if status != 200:
            raise RuntimeError(f"delete by id: HTTP {status}: {body}")
        missing += len(body["not_found"])
    return missing


# -- one size --------------------------------------------------------------------------------------------------------


def one_size(bundle: Path, docs: list[tuple[str, str]], queries: list[str], n: int, work: Path, factory: str | None,
             adds: int, kill: bool, milvus: bool = False) -> dict:  # fmt: skip
    say = lambda m: print(f"  [{n:,}] {m}", flush=True)  # noqa: E731
    input_path = work / f"docs-{n}.jsonl"
    write_jsonl(docs[:n], input_path)
    index_dir = work / f"idx-{n}"
    r: dict = {"documents": n}
    b = build(bundle, input_path, index_dir, NAME, factory, milvus=milvus)
    r["build"] = {"docs_per_s": n / b["seconds"], "seconds": b["seconds"], "peak_mb": b["peak_mb"]}
    r["disk_mb"] = folder_mb(index_dir if milvus else index_dir / NAME)
    say(f"build {b['seconds']:.1f} s = {n / b['seconds']:,.0f} docs/s, peak {b['peak_mb']:,.0f} MB; disk {r['disk_mb']:,.0f} MB")
    if not milvus:  # Milvus Lite keeps its indexes in its own process: the server's with its children say it
        r["memory"] = memory(index_dir, NAME)
        say(f"memory: vectors half {r['memory']['vectors_mb']:,.0f} MB, BM25 half {r['memory']['bm25_mb']:,.0f} MB")
    server = Server(bundle, backend_flags(index_dir, milvus), index_dir=index_dir)
    try:
        stats, answering_s = first_answer(server, f"/v1/indexes/{NAME}")
        r["restart"] = {"ready_s": server.ready_s, "answering_s": answering_s, "rss_mb": tree_rss_mb(server.proc.pid)}
        if answering_s > server.ready_s + 1:
            say(f"restart: the index answered {answering_s:.1f} s after the start")
        r["factory"] = stats["factory"]
        say(
            f"restart: /ready {server.ready_s:.1f} s, {r['restart']['rss_mb']:,.0f} MB resident ({stats['factory']}, {stats['documents']:,} documents)"
        )
        r["search"] = {}
        for mode in MODES:
            for flight in (1, IN_FLIGHT):
                s = search(server.port, queries, mode, flight)
                r["search"][f"{mode}@{flight}"] = s
                say(f"search {mode:7s} {flight:2d} in flight: p50 {s['p50_ms']:.1f} ms, p99 {s['p99_ms']:.1f} ms, {s['qps']:,.0f} q/s")
        if adds:
            a = http_adds(server.port, docs[n : n + adds])
            r["http_adds"] = a
            say(f"HTTP adds: {a['docs_per_s']:,.0f} docs/s ({adds:,} documents, 64 a request, 4 in flight)")
    finally:
        server.close()
    if kill:
        r["kill"] = kill_during_build(bundle, input_path, work, n, factory, b["seconds"] / 2, say)
        r["acknowledged"] = acknowledged_adds(bundle, index_dir, docs[n + adds : n + adds + 200_000], 20.0)
        say(f"acknowledged adds through kill -9: {r['acknowledged']['acknowledged']:,} answered 200, "
            f"{r['acknowledged']['missing_after_restart']} missing after the restart (/ready {r['acknowledged']['ready_s']:.1f} s)")  # fmt: skip
    return r


def kill_during_build(bundle: Path, input_path: Path, work: Path, n: int, factory: str | None, after: float, say) -> dict:
    index_dir = work / f"kill-{n}"
    k = build(bundle, input_path, index_dir, NAME, factory, kill_after=after)
    server = Server(bundle, [], index_dir=index_dir)
    try:
        names = [i["name"] for i in get(server.port, "/v1/indexes")["data"]]
        served = get(server.port, f"/v1/indexes/{NAME}")["documents"] if NAME in names else 0  # killed before it was made
        ready_s = server.ready_s
    finally:
        server.close()
    again = build(bundle, input_path, index_dir, NAME, factory)
    server = Server(bundle, [], index_dir=index_dir)
    try:
        final = get(server.port, f"/v1/indexes/{NAME}")["documents"]
    finally:
        server.close()
    say(f"kill -9 at {k['seconds']:.0f} s of the build: /ready {ready_s:.1f} s after it, {served:,} documents served; "
        f"the build run again: {again['summary']!r}; {final:,} documents at the end (of {n:,})")  # fmt: skip
    return {"killed_at_s": k["seconds"], "ready_s": ready_s, "served_after_kill": served, "resume_s": again["seconds"],
            "resume_summary": again["summary"], "final_documents": final, "complete": final == n}  # fmt: skip


# -- plot ------------------------------------------------------------------------------------------------------------


def plot(files: list[Path], png: Path) -> None:
    import matplotlib  # noqa: PLC0415  # only when a plot is drawn; its Agg backend before pyplot loads

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    runs = [json.loads(f.read_text()) for f in files]
    fig, axes = plt.subplots(2, 3, figsize=(16, 9))
    ax_in, ax_mem, ax_disk, ax_ready, ax_p50, ax_p99 = axes.ravel()
    for color, run in zip(plt.rcParams["axes.prop_cycle"].by_key()["color"], runs):
        points = run["sizes"]
        n = [s["documents"] for s in points]
        name = f"{run['bundle']}, {run.get('backend', 'faiss')} {points[-1].get('factory', '')}"
        ax_in.plot(n, [s["build"]["docs_per_s"] for s in points], "o-", color=color, label=f"{name}: thoughtvec index build")
        adds = [(s["documents"], s["http_adds"]["docs_per_s"]) for s in points if "http_adds" in s]
        if adds:
            ax_in.plot(*zip(*adds), "s--", color=color, label=f"{name}: HTTP adds into it")
        ax_mem.plot(n, [1000 * s["restart"]["rss_mb"] / s["documents"] for s in points], "o-", color=color, label=f"{name}: the server")
        halves = [s for s in points if "memory" in s]
        if halves:
            ax_mem.plot([s["documents"] for s in halves], [1000 * s["memory"]["vectors_mb"] / s["documents"] for s in halves], "^--",
                        color=color, label=f"{name}: vectors and documents")  # fmt: skip
            ax_mem.plot([s["documents"] for s in halves], [1000 * s["memory"]["bm25_mb"] / s["documents"] for s in halves], "v:",
                        color=color, label=f"{name}: BM25 half")  # fmt: skip
        ax_disk.plot(n, [1000 * s["disk_mb"] / s["documents"] for s in points], "o-", color=color, label=name)
        ax_ready.plot(n, [s["restart"]["ready_s"] for s in points], "o-", color=color, label=f"{name}: restart")
        killed = [(s["documents"], s["kill"]["ready_s"]) for s in points if "kill" in s]
        if killed:
            ax_ready.plot(*zip(*killed), "x", ms=10, color=color, label=f"{name}: after kill -9 mid-build")
        for mode, style in (("hybrid", "o-"), ("dense", "^--"), ("lexical", "v:")):
            ax_p50.plot(n, [s["search"][f"{mode}@1"]["p50_ms"] for s in points], style, color=color, label=f"{name}: {mode}")
            ax_p99.plot(n, [s["search"][f"{mode}@{IN_FLIGHT}"]["p99_ms"] for s in points], style, color=color, label=f"{name}: {mode}")
    ax_p50.axhline(15, color="grey", lw=0.8)
    ax_ready.axhline(30, color="grey", lw=0.8)
    titles = ("ingestion, documents/s", "resident KB per document", "disk KB per document (the index folder)",
              "seconds to /ready", "search p50 ms, one at a time (line: 15 ms)", f"search p99 ms, {IN_FLIGHT} in flight")  # fmt: skip
    for ax, title in zip(axes.ravel(), titles):
        ax.set_xscale("log")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("documents in the index")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    for ax in (ax_p50, ax_p99):
        ax.set_yscale("log")
    fig.suptitle("thoughtvec index against its size (2 cores; python -m thoughtvec.bench.scale_bench)")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    atomic_write_bytes(png, buf.getvalue())
    print(f"wrote {png}")
    for run in runs:
        print(table(run))


def table(run: dict) -> str:
    """A run's figures as a Markdown table, a column per size (docs/scale.md)."""
    points = run["sizes"]
    rows: list[tuple[str, list[str]]] = [
        ("factory served", [f"`{s['factory']}`" for s in points]),
        ("`index build`, documents/s", [f"{s['build']['docs_per_s']:,.0f}" for s in points]),
        ("build's peak resident MB", [f"{s['build']['peak_mb']:,.0f}" for s in points]),
        ("HTTP adds, documents/s", [f"{s['http_adds']['docs_per_s']:,.0f}" if "http_adds" in s else "" for s in points]),
        ("disk, MB", [f"{s['disk_mb']:,.0f}" for s in points]),
        ("resident MB: vectors and documents / BM25",
         [f"{s['memory']['vectors_mb']:,.0f} / {s['memory']['bm25_mb']:,.0f}" if "memory" in s else "" for s in points]),
        ("restart: s to `/ready`, resident MB", [f"{s['restart']['ready_s']:.1f} s, {s['restart']['rss_mb']:,.0f}" for s in points]),
    ]  # fmt: skip
    for mode in MODES:
        rows.append(
            (
                f"{mode}: p50 / p99 ms, 1 in flight",
                [f"{s['search'][f'{mode}@1']['p50_ms']:.1f} / {s['search'][f'{mode}@1']['p99_ms']:.1f}" for s in points],
            )
        )
        rows.append((f"{mode}: p50 / p99 ms, {IN_FLIGHT} in flight (q/s)",
                     [f"{s['search'][f'{mode}@{IN_FLIGHT}']['p50_ms']:.0f} / {s['search'][f'{mode}@{IN_FLIGHT}']['p99_ms']:.0f} "
                      f"({s['search'][f'{mode}@{IN_FLIGHT}']['qps']:.0f})" for s in points]))  # fmt: skip
    head = f"| {run['bundle']}, {run.get('backend', 'faiss')} | " + " | ".join(f"{s['documents']:,}" for s in points) + " |"
    lines = [head, "|---|" + "---:|" * len(points)] + [f"| {name} | " + " | ".join(cells) + " |" for name, cells in rows]
    return "\n".join(lines)


# -- command ---------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bundle", type=Path, help="the bundle the index embeds with")
    p.add_argument("--sizes", default="10000,100000,1000000", help="documents per index, comma-separated")
    p.add_argument("--factory", help="FAISS factory of every index (default: the server's for a new index)")
    p.add_argument("--corpus", type=Path, default=paths.REPO / "data" / "corpus", help="a thoughtvec corpus build's folder")
    p.add_argument("--http-adds", type=int, default=4096, help="documents added by HTTP after the searches (0: none)")
    p.add_argument("--no-kill", action="store_true", help="skip the kill -9 steps at the largest size")
    p.add_argument(
        "--milvus-lite", action="store_true", help="indexes in Milvus Lite (a database file in the work folder), no kill -9 steps"
    )
    p.add_argument("--work", type=Path, help="folder for inputs and indexes (default: a temporary one, removed)")
    p.add_argument("--json", type=Path, help="write every figure here")
    p.add_argument("--plot", type=Path, nargs="+", help="draw these JSON files' curves instead of measuring")
    p.add_argument("--png", type=Path, default=Path("docs/scale.png"))
    args = p.parse_args(argv)
    if args.plot:
        plot(args.plot, args.png)
        return 0
    if args.bundle is None:
        p.error("--bundle is needed to measure")
    sizes = sorted(int(s) for s in args.sizes.split(","))
    docs, queries = corpus_documents(args.corpus)
    if sizes[-1] + args.http_adds > len(docs):
        p.error(f"the corpus gives {len(docs):,} documents; the largest size and --http-adds need {sizes[-1] + args.http_adds:,}")
    print(f"{len(docs):,} documents (corpus sentences and two-sentence passages), {len(queries)} queries; bundle {args.bundle.name}")
    with tempfile.TemporaryDirectory(prefix="tv-scale-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        backend = "milvus-lite" if args.milvus_lite else "faiss"
        results = {"bundle": args.bundle.name, "backend": backend, "factory": args.factory, "cpus": os.cpu_count(), "sizes": []}
        for n in sizes:
            kill = n == sizes[-1] and not (args.no_kill or args.milvus_lite)
            results["sizes"].append(
                one_size(args.bundle, docs, queries, n, work, args.factory, args.http_adds, kill=kill, milvus=args.milvus_lite)
            )
            if args.json:
                args.json.parent.mkdir(parents=True, exist_ok=True)
                args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
