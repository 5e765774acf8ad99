"""Served requests on a GPU machine: `thoughtvec serve` flooded over HTTP beside the graph alone, per bundle.

    python docker/gpu/serve_bench.py --models-dir /tmp/tv/models --out $OUT     # after docker/gpu/serve.sh stages

For each bundle under ``--models-dir``:

1. in process, on the first provider (CUDA where ONNX Runtime has it): ``Encoder.encode`` (tokenize in Python,
   sort, run, normalise) and the graph alone on pre-tokenized batches, sentences/s at each ``--batches`` size;
2. ``thoughtvec serve`` on the bundle alone under each server setting of ``--settings`` (the default batch
   of 32, then larger GPU batches), flooded by wrk (or this process) at each ``--floods`` level
   (sentences per request x requests in flight): sentences/s, p50/p99, sentences per ONNX run;
3. with ``--cpu-too``, the first bundle's default server again with ``--no-prefer-cuda``: the same machine's CPUs;
4. with ``--processes 2,4,8``, that many servers at once under the last setting of one process, each flooded by its own wrk: what
   more Python processes feeding the one GPU serve as separate servers (the ``workers`` settings do it in one).

The served rate over the best graph-alone rate is printed per bundle. Writes ``serve.json`` under ``--out`` after
every measurement (a machine taken back mid-run still returns what was measured). Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from check import gpu_name, throughput  # noqa: E402

from thoughtvec.bench.bench import Load, LoadGenerator, Server  # noqa: E402
from thoughtvec.bench.flops import graph_flops  # noqa: E402
from thoughtvec.bench.load import load_sentences, parse_wrk, request_bodies, start_wrk, wrk_script  # noqa: E402
from thoughtvec.service.bundle.format import discover_bundles  # noqa: E402
from thoughtvec.service.core.encoder import Encoder, available_providers  # noqa: E402

SETTINGS = {
    "batch 32 (default)": [],
    "batch 512": ["--max-batch-size=512", "--max-batch-tokens=65536"],
    "batch 2048": ["--max-batch-size=2048", "--max-batch-tokens=262144", "--max-wait-ms=4"],
    "batch 2048 / 1 run": ["--max-batch-size=2048", "--max-batch-tokens=262144", "--max-wait-ms=4", "--concurrent-runs=1"],
    # one `thoughtvec serve --workers N` on one port (its figures per run come from /metrics, each worker's at most a
    # second old; the server CPU a request is the supervisor's alone, so it is left out)
    "batch 2048 / 4 workers": ["--max-batch-size=2048", "--max-batch-tokens=262144", "--max-wait-ms=4", "--workers=4"],
    "batch 2048 / 8 workers": ["--max-batch-size=2048", "--max-batch-tokens=262144", "--max-wait-ms=4", "--workers=8"],
}


def levels(spec: str) -> list[tuple[int, int]]:
    return [(int(s), int(c)) for s, c in (x.split("x") for x in spec.split(","))]


def serve(bundle: Path, flags: list[str], floods: list[tuple[int, int]], sentences: list[str], seconds: float, client: str) -> list[dict]:
    server = Server(bundle, flags)
    gen = LoadGenerator(server, client, seconds)
    rows = []
    try:
        bodies = {s: request_bodies(sentences, s, 256 if s == 1 else 64, bundle.name, "base64") for s, _ in floods}
        gen.run(Load(bodies[floods[0][0]], floods[0][0], floods[0][1]), seconds=min(2.0, seconds))  # warm-up
        for s, c in floods:
            f = gen.run(Load(bodies[s], s, c))[0]
            workers = any(flag.startswith("--workers") for flag in flags)
            rows.append({"size": s, "concurrency": c, "sentences_s": f.sentences_per_s, "p50_ms": f.latency_ms.get(50),
                         "p99_ms": f.latency_ms.get(99), "errors": f.errors, "run_size": f.run_size,
                         "server_cpu_ms": None if workers else f.server_cpu_ms, "client": gen.name})  # fmt: skip
            print(f"| {s} x {c} | {f.sentences_per_s:,.0f} | {f.latency_ms.get(50, float('nan')):.1f} | "
                  f"{f.latency_ms.get(99, float('nan')):.1f} | {f.run_size:.0f} | {f.errors} |", flush=True)  # fmt: skip
    finally:
        gen.close()
        server.close()
    return rows


def serve_many(bundle: Path, flags: list[str], floods: list[tuple[int, int]], sentences: list[str], seconds: float, n: int) -> list[dict]:
    """``n`` servers on the bundle at once (each its own process, port and ONNX session on the same GPU), each flooded by
    its own wrk at every level: the sentences/s of all of them together, and the worst p50/p99. What more Python
    processes give one GPU as separate servers (``thoughtvec serve --workers`` runs them as one)."""
    with ThreadPoolExecutor(n) as pool:  # each start loads the bundle and calibrates: side by side
        starts = [pool.submit(Server, bundle, flags) for _ in range(n)]
    servers = [f.result() for f in starts if f.exception() is None]
    if len(servers) < n:  # one did not start: the others are not left running
        for srv in servers:
            srv.close()
        raise next(e for f in starts if (e := f.exception()) is not None)
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="tv-many-") as tmp:
            scripts = {s: wrk_script(request_bodies(sentences, s, 256 if s == 1 else 64, bundle.name, "base64"), Path(tmp) / f"b{s}.lua")
                       for s, _ in floods}  # fmt: skip
            for i, (s, c) in enumerate([floods[0], *floods]):  # the first: a warm-up
                procs = [start_wrk(srv.port, scripts[s], c, seconds if i else min(2.0, seconds)) for srv in servers]
                got = [parse_wrk(proc.communicate()[0], s, c) for proc in procs]
                if not i:
                    continue
                total = sum(f.sentences_per_s for f in got)
                p50, p99 = (max(f.latency_ms.get(q, float("nan")) for f in got) for q in (50, 99))
                rows.append({"processes": n, "size": s, "concurrency": c, "sentences_s": total, "p50_ms": p50, "p99_ms": p99,
                             "errors": sum(f.errors for f in got)})  # fmt: skip
                print(f"| {n} | {s} x {c} each | {total:,.0f} | {p50:.1f} | {p99:.1f} | {rows[-1]['errors']} |", flush=True)
    finally:
        for srv in servers:
            srv.close()
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models-dir", type=Path, default=ROOT / "models")
    p.add_argument("--out", type=Path, default=Path("gpu-serve"))
    p.add_argument("--batches", default="32,512,2048", help="in-process batch sizes")
    p.add_argument("--floods", default="1x64,32x16,256x8", help="sentences per request x requests in flight")
    p.add_argument("--settings", default=",".join(SETTINGS), help=f"server settings to run, of: {', '.join(SETTINGS)}")
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--client", default="auto", choices=["auto", "wrk", "python"])
    p.add_argument("--cpu-too", action="store_true", help="the first bundle's default server on the CPU provider as well")
    p.add_argument(
        "--processes", default="", help="also: this many servers at once under the last setting of one process, e.g. 2,4,8 (needs wrk)"
    )
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    texts = load_sentences(None, 4000)
    floods = levels(args.floods)
    report: dict = {"gpu": gpu_name(), "providers": available_providers(), "cpus": os.cpu_count(), "bundles": {}}
    print(f"# served on {report['gpu']}; providers {report['providers']}; {os.cpu_count()} CPUs\n", flush=True)

    def save() -> None:  # whole or not at all: the machine may be taken back at any moment
        tmp = args.out / "serve.json.tmp"
        tmp.write_text(json.dumps(report, indent=1))
        tmp.replace(args.out / "serve.json")

    header = "| sentences x in flight | sentences/s | p50 ms | p99 ms | sentences per run | errors |\n|---|---:|---:|---:|---:|---:|"
    for i, bundle in enumerate(discover_bundles(args.models_dir)):
        t0 = time.time()
        enc = Encoder.load(bundle)
        fl = graph_flops(enc.bundle.onnx_path)
        r: dict = {"device": enc.device, "in_process": throughput(enc, texts, [int(b) for b in args.batches.split(",")],
                                                                   min(args.seconds, 3.0), fl["per_token"], fl["per_sentence"])}  # fmt: skip
        del enc
        report["bundles"][bundle.name] = r
        save()
        print(f"## {bundle.name} ({r['device']})\n\n| batch | encode() sentences/s | graph sentences/s |\n|---:|---:|---:|")
        for row in r["in_process"]:
            print(f"| {row['batch']} | {row['encode_sent_s']:,.0f} | {row['graph_sent_s']:,.0f} |")
        runs = {name: SETTINGS[name] for name in args.settings.split(",")}
        if args.cpu_too and i == 0:
            runs["CPU provider, batch 32"] = ["--no-prefer-cuda"]
        for name, flags in runs.items():
            print(f"\nserver, {name}\n\n{header}", flush=True)
            r.setdefault("served", {})[name] = serve(bundle, flags, floods, texts, args.seconds, args.client)
            save()
        if args.processes:
            # the last setting of one process a server (a setting of several workers is its own side by side)
            last = next(n for n in reversed(args.settings.split(",")) if not any(f.startswith("--workers") for f in SETTINGS[n]))
            print(
                f"\nservers side by side, {last}\n\n| servers | sentences x in flight | sentences/s (all) | worst p50 ms | worst p99 ms | errors |\n|---:|---|---:|---:|---:|---:|"
            )
            for n in (int(x) for x in args.processes.split(",")):
                r.setdefault("processes", []).extend(serve_many(bundle, SETTINGS[last], floods, texts, args.seconds, n))
                save()
        graph = max(row["graph_sent_s"] for row in r["in_process"])
        best = max((row["sentences_s"], name, row["size"]) for name, rows in r["served"].items() for row in rows if "CPU" not in name)
        r["served_over_graph"] = best[0] / graph
        save()
        print(f"\nbest served {best[0]:,.0f} sentences/s ({best[1]}, {best[2]}-sentence requests) = "
              f"{best[0] / graph:.0%} of the graph alone's best {graph:,.0f} ({time.time() - t0:.0f} s)\n", flush=True)  # fmt: skip
        if r.get("processes"):
            many = max(r["processes"], key=lambda row: row["sentences_s"])
            r["processes_over_graph"] = many["sentences_s"] / graph
            save()
            print(
                f"best of servers side by side {many['sentences_s']:,.0f} sentences/s ({many['processes']} servers, "
                f"{many['size']}-sentence requests) = {many['sentences_s'] / graph:.0%} of the graph alone's best\n",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
