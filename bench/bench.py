"""``thoughtvec bench``: what each bundle costs and how fast it runs, in-process and behind the server.
Prints figures; asserts nothing.

Per bundle:

1. **In-process**: the graph's operations per token (``bench/flops.py``: matrix products, attention and
   recurrent cells, int8 and float apart; a floor). ``Encoder.encode`` at batch 1, 32, 128 (tokenize,
   length-sort, run, normalise; no HTTP): sentences/s, and achieved G op/s: each real sentence's
   operations at its length, per second. Resident memory the loaded bundle adds to this process. Then
   the graph alone as the server runs it (``bench/compute.py``: the bundle loaded, warmed and timed by
   the server's registry, its batches cut by the server's plan over sentences in arrival order) against
   ONNX Runtime's practical peak on the same threads (``bench/peak.py``): int8 op/s and float FLOP/s
   each against its peak, and achieved/peak overall.
2. **Server**: a real ``thoughtvec serve`` subprocess serving that bundle alone, flooded closed-loop
   with 1-sentence and 32-sentence ``POST /v1/embeddings`` requests at each concurrency: sentences/s,
   latency p50/p90/p99, and the server's own CPU time per request (``/proc/<pid>/stat``, every
   thread: the HTTP loop and ONNX Runtime), and the main thread's part of it (``/proc/<pid>/task/<pid>/stat``:
   the event loop: HTTP, admission, tokenizing, answers; none of ONNX Runtime's work), and how the
   batcher ran it (from the server's ``/metrics``): sentences per run, and padded tokens per real
   token (how much of the compute went to padding). The load generator is ``wrk`` when installed (Debian:
   ``apt-get install wrk``; a C program, it costs the shared cores little), else this process over
   asyncio, whose own CPU use is printed beside the figures: on a small machine that client measures
   itself as much as the server.
3. **Summary**: the batching ratio (1-sentence requests at concurrency 64 over 32-sentence requests
   at concurrency 4, sentences/s, same server), the server CPU one request costs beyond its sentence
   (and the event loop's part of it, which moves less with the shared machine's drift), achieved GFLOP/s, and the server's resident memory.
4. ``--mixed``: fairness under overload. 32-sentence requests (2 in flight) alone, then beside a
   flood of 1-sentence requests (64 in flight): their sentences/s and latency either way.
5. ``--batching-off``: the server levels again with ``--max-batch-size 1 --max-wait-ms 0``.
6. ``--against FLAG``: a setting compared in one run, as drift on a shared machine requires: a server
   without the flag (A) and one with it (B), alternated ``--repeats`` times, each measured on the
   batching ratio's two floods; then B over A, the median of the rounds. Replaces 2–4.
7. ``--peer COMMAND``: another embedding server (infinity, TEI...) started by a shell command with
   ``{port}`` in it, alternated ``--repeats`` times with ``thoughtvec serve`` on the bundle alone; both get the
   same wrk script's bodies at the batching ratio's two floods (``thoughtvec.bench.servers``): sentences/s and
   p50/p99 of each, then thoughtvec over the peer, the median of the rounds. Replaces 2–4.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from thoughtvec import paths
from thoughtvec.bench import servers
from thoughtvec.bench.compute import count_ops, measure_as_served
from thoughtvec.bench.load import (
    RATIO_LEVELS,
    Flood,
    free_port,
    load_sentences,
    parse_wrk,
    request_bodies,
    served_runtime,
    start_wrk,
    wrk_script,
)
from thoughtvec.service.bundle.format import discover_bundles, load_bundle
from thoughtvec.service.core.encoder import Encoder

if TYPE_CHECKING:
    from thoughtvec.bench.flops import Ops


# -- process figures -----------------------------------------------------------------------


def cpu_seconds(pid: int, thread: int | None = None) -> float:
    """User + system CPU of a process, all its threads; or of one thread (the main one: ``thread=pid``)."""
    stat = Path(f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def resident_mb(pid: int | str = "self") -> dict[str, float]:
    """``rss`` (now) and ``peak`` (high-water mark) resident memory of a process, MB."""
    status = Path(f"/proc/{pid}/status").read_text()
    kb = {k: int(re.search(rf"^{k}:\s+(\d+) kB", status, re.M)[1]) for k in ("VmRSS", "VmHWM")}  # type: ignore[index]
    return {"rss": kb["VmRSS"] / 1024, "peak": kb["VmHWM"] / 1024}


# -- in-process ----------------------------------------------------------------------------


@dataclass
class InProcess:
    speed: dict[int, float]  # batch -> sentences/s
    gops: dict[int, float]  # batch -> achieved G op/s, int8 and float together (nan without onnx)
    ops: Ops | None  # the graph's operations (None without onnx)
    tokens: int  # mean tokens a sentence
    rss_added_mb: float  # by loading the bundle and running one batch
    runtime: str  # what ran the graph, at which precision


def bench_inprocess(bundle: Path, sentences: list[str], batches: list[int], seconds: float) -> InProcess:
    """``Encoder.encode(texts, batch_size=b)``: tokenized, length-sorted, normalised, no HTTP."""

    ops = count_ops(load_bundle(bundle).onnx_path)
    gc.collect()
    before = resident_mb()["rss"]
    enc = Encoder.load(bundle)
    enc.encode(sentences[:256], batch_size=32)
    added = resident_mb()["rss"] - before  # the session, its weights, the vocabulary, a batch's buffers
    tokens = [len(enc.fit(enc.token_ids(s), "truncate")) for s in sentences]
    work = [sum(ops.sentence(n)) if ops else float("nan") for n in tokens]  # int8 + float operations of each sentence
    speed, gops = {}, {}
    chunk = 1024  # encode() sorts each call's texts by length, as a bulk caller would
    for b in batches:
        enc.encode(sentences[: b * 2], batch_size=b)  # warm-up at this shape
        done = i = 0
        done_ops = 0.0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            idx = [(i + j) % len(sentences) for j in range(max(b, min(chunk, b * 8)))]
            i += len(idx)
            enc.encode([sentences[k] for k in idx], batch_size=b)
            done += len(idx)
            done_ops += sum(work[k] for k in idx)
        dt = time.perf_counter() - start
        speed[b] = done / dt
        gops[b] = done_ops / dt / 1e9
    runtime = str(enc.runtime)
    del enc
    return InProcess(speed, gops, ops, round(sum(tokens) / max(len(tokens), 1)), added, runtime)


# -- the server under load -----------------------------------------------------------------


class Server:
    """``thoughtvec serve`` in a subprocess, for one bundle, until closed."""

    def __init__(self, bundle: Path, flags: list[str], index_dir: Path | None = None):
        """``index_dir``: serve the indexes there (default: an empty folder of its own). ``ready_s``: seconds from the
        process's start to its first 200 from ``/ready`` (polled every 0.1 s)."""
        self.tmp = tempfile.TemporaryDirectory(prefix="tv-bench-")
        models = Path(self.tmp.name) / "models"
        models.mkdir()
        (models / bundle.name).symlink_to(bundle.resolve())
        self.port = free_port()
        cmd = [
            sys.executable,
            "-m",
            "thoughtvec.service.cli",
            "serve",
            "--models-dir",
            str(models),
            "--index-dir",
            str(index_dir or Path(self.tmp.name) / "idx"),
            "--port",
            str(self.port),
            "--no-build-default-index",
            "--log-level",
            "warning",
            "--max-queue-size",
            "100000",
            "--truncation",
            "truncate",
            *flags,
        ]
        started = time.perf_counter()
        self.proc = subprocess.Popen(cmd, cwd=paths.REPO, env=os.environ | {"PYTHONUNBUFFERED": "1"})
        deadline = time.time() + 300
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/ready", timeout=2) as r:
                    if r.status == 200:
                        self.ready_at = time.perf_counter()
                        self.ready_s = self.ready_at - started
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("server not ready after 300 s")

    def runtime(self) -> str:
        """What runs the served bundle's graph (``load.served_runtime``)."""
        return served_runtime(self.port)

    def batching(self) -> dict[str, float]:
        """The batcher's counters so far (``/metrics``): ONNX runs, sentences run, padded tokens, real tokens."""
        from prometheus_client.parser import text_string_to_metric_families  # noqa: PLC0415  # only when the server's metrics are read

        wanted = {
            "thoughtvec_batch_size_count": "runs",
            "thoughtvec_batch_size_sum": "sentences",
            "thoughtvec_batch_tokens_sum": "padded",
            "thoughtvec_tokens_total": "tokens",
        }
        out = dict.fromkeys(wanted.values(), 0.0)
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            for family in text_string_to_metric_families(r.read().decode()):
                for sample in family.samples:
                    if sample.name in wanted:
                        out[wanted[sample.name]] += sample.value
        return out

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.tmp.cleanup()


async def _worker(port: int, bodies: list[bytes], start_at: float, stop_at: float, lat: list[float], errors: list[int], seed: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    rng = random.Random(seed)
    try:
        while (now := time.perf_counter()) < stop_at:
            body = bodies[rng.randrange(len(bodies))]
            writer.write(
                b"POST /v1/embeddings HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                % (len(body), body)
            )
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
            await reader.readexactly(length)
            if now >= start_at:
                (lat.append(time.perf_counter() - now) if status == 200 else errors.append(status))
    finally:
        writer.close()


@dataclass
class Load:
    """A flood to run: request bodies, their size, connections."""

    bodies: list[bytes]
    size: int
    concurrency: int


class LoadGenerator:
    """Runs floods (one, or several at once) against a server and reads its CPU time around them."""

    def __init__(self, server: Server, client: str, seconds: float):
        self.server, self.seconds = server, seconds
        self.wrk = client == "wrk" or (client == "auto" and shutil.which("wrk") is not None)
        if client == "wrk" and shutil.which("wrk") is None:
            raise SystemExit("--client wrk: wrk is not installed (Debian: apt-get install wrk)")
        self.tmp = tempfile.TemporaryDirectory(prefix="tv-load-")
        self._scripts: dict[int, Path] = {}

    @property
    def name(self) -> str:
        return "wrk" if self.wrk else "python (asyncio, this process)"

    def run(self, *loads: Load, seconds: float | None = None) -> list[Flood]:
        """The floods side by side for ``seconds``; a flood alone also gets the server's CPU per request."""
        seconds = seconds or self.seconds
        pid = self.server.proc.pid
        batched0, cpu0, loop0 = self.server.batching(), cpu_seconds(pid), cpu_seconds(pid, pid)
        floods = self._run_wrk(loads, seconds) if self.wrk else self._run_python(loads, seconds)
        if len(floods) == 1:  # side by side, the server's CPU and its batches cannot be told apart per flood
            flood, n = floods[0], max(floods[0].requests, 1)
            flood.server_cpu_ms = (cpu_seconds(pid) - cpu0) * 1000 / n
            flood.loop_cpu_ms = (cpu_seconds(pid, pid) - loop0) * 1000 / n
            batched = {k: v - batched0[k] for k, v in self.server.batching().items()}
            if batched["runs"] and batched["tokens"]:
                flood.run_size = batched["sentences"] / batched["runs"]
                flood.padding = batched["padded"] / batched["tokens"]
        return floods

    def _run_wrk(self, loads: tuple[Load, ...], seconds: float) -> list[Flood]:
        procs = []
        for load in loads:
            script = self._scripts.get(id(load.bodies)) or wrk_script(load.bodies, Path(self.tmp.name) / f"b{len(self._scripts)}.lua")
            self._scripts[id(load.bodies)] = script
            procs.append(start_wrk(self.server.port, script, load.concurrency, seconds))
        outs = [p.communicate()[0] for p in procs]
        return [parse_wrk(out, load.size, load.concurrency) for out, load in zip(outs, loads)]

    def _run_python(self, loads: tuple[Load, ...], seconds: float) -> list[Flood]:
        lats: list[list[float]] = [[] for _ in loads]
        errs: list[list[int]] = [[] for _ in loads]
        warm = 0.0  # the server was warmed by its first flood

        async def main() -> None:
            t0 = time.perf_counter()
            await asyncio.gather(
                *(
                    _worker(self.server.port, load.bodies, t0 + warm, t0 + warm + seconds, lats[k], errs[k], 1000 * k + i)
                    for k, load in enumerate(loads)
                    for i in range(load.concurrency)
                )
            )

        cpu0, wall0 = time.process_time(), time.perf_counter()
        asyncio.run(main())
        client = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
        out = []
        for load, lat, err in zip(loads, lats, errs):
            ms = np.asarray(lat) * 1000
            pct = {p: float(np.percentile(ms, p)) if len(ms) else float("nan") for p in (50, 90, 99)}
            out.append(Flood(load.size, load.concurrency, len(lat), seconds, pct, len(err), client_cpu=client))
        return out

    def close(self) -> None:
        self.tmp.cleanup()


# -- printing ------------------------------------------------------------------------------


def print_floods(title: str, floods: list[Flood]) -> None:
    client = not np.isnan(floods[0].client_cpu) if floods else False
    print(f"\n{title}\n")
    print(
        "| sentences/request | concurrency | sentences/s | requests/s | p50 ms | p90 ms | p99 ms | server CPU ms/request | of which event loop "
        "| sentences/run | padded/real tokens | errors |" + (" client CPU (cores) |" if client else "")
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if client else ""))
    for f in floods:
        lat = [f.latency_ms.get(p, float("nan")) for p in (50, 90, 99)]
        print(
            f"| {f.size} | {f.concurrency} | {f.sentences_per_s:.0f} | {f.requests / f.seconds:.0f} | "
            + " | ".join(f"{x:.1f}" for x in lat)
            + "".join(" | –" if np.isnan(x) else f" | {x:.3f}" for x in (f.server_cpu_ms, f.loop_cpu_ms))
            + "".join(" | –" if np.isnan(x) else f" | {x:.{d}f}" for x, d in ((f.run_size, 1), (f.padding, 2)))
            + f" | {f.errors} |"
            + (f" {f.client_cpu:.2f} |" if client else "")
        )


RATIO_HEADER = (
    "| 1-sentence c=64 sent/s | 32-sentence c=4 sent/s | batching ratio | extra server CPU ms/request | of which event loop "
    "| padded/real tokens, 1-sentence | padded/real tokens, 32-sentence |"
)


def ratio_cells(one: Flood, many: Flood) -> str:
    """The batching ratio's floods as table cells, under :data:`RATIO_HEADER`."""
    ratio, extra, loop = ratio_row(one, many)
    return (
        f" {one.sentences_per_s:.0f} | {many.sentences_per_s:.0f} | {ratio:.2f} | {extra:.3f} | {loop:.3f} "
        f"| {one.padding:.2f} | {many.padding:.2f} |"
    )


def ratio_row(one: Flood, many: Flood) -> tuple[float, float, float]:
    """(batching ratio, server CPU ms a 1-sentence request costs beyond its sentence, the event loop's part of it)."""
    return (
        one.sentences_per_s / many.sentences_per_s,
        one.server_cpu_ms - many.server_cpu_ms / many.size,
        one.loop_cpu_ms - many.loop_cpu_ms / many.size,
    )


def run(args: argparse.Namespace) -> int:

    bundles = discover_bundles(args.models_dir)
    wanted = [m for m in args.models.split(",") if m]
    bundles = [b for b in bundles if not wanted or b.name in wanted]
    if not bundles:
        print(f"no bundles to measure under {args.models_dir}", file=sys.stderr)
        return 1
    sentences = load_sentences(args.sentences)
    batches = [int(x) for x in args.batches.split(",")]
    levels = [int(x) for x in args.concurrency.split(",")]
    sizes = [int(x) for x in args.request_sizes.split(",")]
    peaks: dict = {}  # ONNX Runtime's peaks, measured once per int8 product
    print(f"# thoughtvec bench: {len(sentences)} sentences, {os.cpu_count()} CPUs, {args.seconds:g} s per level, encoding {args.encoding}")
    for bundle in bundles:
        name = load_bundle(bundle).name
        print(f"\n## {name}\n", flush=True)
        inproc = bench_inprocess(bundle, sentences, batches, args.seconds)
        print(f"in-process `Encoder.encode` on {inproc.runtime} (the loaded bundle adds {inproc.rss_added_mb:.0f} MB resident)\n")
        print("| batch | sentences/s | G op/s (int8 + float) |\n|---:|---:|---:|")
        for b, v in inproc.speed.items():
            print(f"| {b} | {v:.0f} | {'–' if np.isnan(inproc.gops[b]) else f'{inproc.gops[b]:.1f}'} |")
        print(f"\n{measure_as_served(bundle, sentences, args.seconds, peaks, args.server_flag)}", flush=True)
        if args.no_server:
            continue
        if args.against:
            compare(args, bundle, name, sentences)
            continue
        if args.peer:
            peer = servers.peer_of(args)  # a Peer whenever --peer is given
            if peer is not None:
                servers.compare(bundle, ["uvicorn", peer], args.seconds, args.repeats, sentences, args.encoding, args.server_flag)
            continue
        runs = [("batching on", list(args.server_flag))]
        if args.batching_off:
            runs.append(("batching off (max batch 1)", ["--max-batch-size", "1", "--max-wait-ms", "0", *args.server_flag]))
        for title, flags in runs:
            server = Server(bundle, flags)
            gen = LoadGenerator(server, args.client, args.seconds)
            try:
                bodies = {s: request_bodies(sentences, s, 256 if s == 1 else 64, name, args.encoding) for s in {*sizes, 1, 32}}
                gen.run(Load(bodies[1], 1, 64), seconds=min(3.0, args.seconds))  # warm-up: threads, arena, caches
                floods = [gen.run(Load(bodies[s], s, c))[0] for s in sizes for c in levels]
                print_floods(f"server, {title}, on {server.runtime()}; load generator {gen.name}", floods)
                if title != "batching on":
                    continue
                print(f"\n| run {RATIO_HEADER}\n|---:|---:|---:|---:|---:|---:|---:|---:|")
                for r in range(1, args.repeats + 1):
                    one, many = (gen.run(Load(bodies[s], s, c))[0] for s, c in RATIO_LEVELS)
                    print(f"| {r} |{ratio_cells(one, many)}", flush=True)
                mem = resident_mb(server.proc.pid)
                print(f"\nserver resident memory: {mem['rss']:.0f} MB (peak {mem['peak']:.0f} MB)")
                if args.mixed:
                    alone = gen.run(Load(bodies[32], 32, 2))[0]
                    big, small = gen.run(Load(bodies[32], 32, 2), Load(bodies[1], 1, 64))
                    print_floods("fairness: 32-sentence requests (c=2) alone, then beside a 1-sentence flood (c=64)", [alone, big, small])
                    print(
                        f"\n32-sentence requests beside the flood: {big.sentences_per_s / alone.sentences_per_s:.0%} of their sentences/s "
                        f"alone, p50 {big.latency_ms.get(50, float('nan')):.0f} ms (alone {alone.latency_ms.get(50, float('nan')):.0f} ms); "
                        f"they got {big.sentences_per_s / (big.sentences_per_s + small.sentences_per_s):.0%} of the sentences served"
                    )
            finally:
                gen.close()
                server.close()
    return 0


def compare(args: argparse.Namespace, bundle: Path, name: str, sentences: list[str]) -> None:
    """``--against``: servers without (A) and with (B) the flags, alternated, on the batching ratio's floods."""
    bodies = {s: request_bodies(sentences, s, 256 if s == 1 else 64, name, args.encoding) for s, _ in RATIO_LEVELS}
    base = list(args.server_flag)
    print(f"server A: `{' '.join(base) or 'defaults'}`; server B: A with `{' '.join(args.against)}`; alternated\n")
    print(f"| round | server {RATIO_HEADER}\n|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    gains: list[tuple[float, float]] = []
    runtimes: dict[str, str] = {}  # what runs each server's graph
    for r in range(1, args.repeats + 1):
        got = {}
        for label, flags in (("A", base), ("B", base + list(args.against))):
            server = Server(bundle, flags)
            gen = LoadGenerator(server, args.client, args.seconds)
            try:
                gen.run(Load(bodies[1], 1, 64), seconds=min(3.0, args.seconds))  # warm-up: threads, arena, caches
                got[label] = [gen.run(Load(bodies[s], s, c))[0] for s, c in RATIO_LEVELS]
                print(f"| {r} | {label} |{ratio_cells(*got[label])}", flush=True)
                runtimes[label] = server.runtime()
            finally:
                gen.close()
                server.close()
        gains.append(tuple(b.sentences_per_s / a.sentences_per_s for a, b in zip(got["A"], got["B"])))  # type: ignore[arg-type]
    one, many = np.median(np.array(gains), axis=0)
    print(f"\nB over A, median of {len(gains)} rounds: 1-sentence requests x{one:.2f} sentences/s, 32-sentence requests x{many:.2f}")
    print(f"A runs on {runtimes['A']}, B on {runtimes['B']}")
