"""``thoughtvec bench``: throughput and latency per bundle. Prints figures; asserts nothing.

1. In-process: ``Encoder.encode`` at batch 1, 32, 128 (sentences/s, length-sorted), no HTTP.
2. Server: a real ``thoughtvec serve`` subprocess on a free 127.0.0.1 port serving that one
   bundle; a closed-loop load generator (its own process: this one) keeps C requests in flight
   over C keep-alive connections, with 1-sentence and 32-sentence requests; sentences/s and
   latency p50/p95/p99 per level.
3. The same with batching off (``--max-batch-size 1 --max-wait-ms 0``).

The load generator speaks minimal HTTP/1.1 over asyncio streams: a full HTTP client costs more
CPU per request than the server does, and on a small machine it would measure itself.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

from service.bundle.format import discover_bundles
from service.settings import PACKAGE_DATA

FALLBACK_WORDS = (
    "the a man woman child dog cat walked ran sat on in under over house river city old new small big "
    "red green happy sad quickly slowly and but because when while letter book table door window"
).split()


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--models-dir", type=Path, default=Path("models"), help="bundles to measure (default models/)")
    p.add_argument("--models", default="", help="comma-separated bundle folder names (default: all)")
    p.add_argument(
        "--sentences",
        type=Path,
        default=None,
        help="texts to send (.txt or sample .tsv.gz); default: the search sample if present, else generated",
    )
    p.add_argument("--batches", default="1,32,128", help="in-process batch sizes")
    p.add_argument("--concurrency", default="1,8,32,64", help="requests in flight")
    p.add_argument("--request-sizes", default="1,32", help="sentences per request")
    p.add_argument("--seconds", type=float, default=4.0, help="measured seconds per level (after 1 s of warm-up)")
    p.add_argument(
        "--encoding", default="base64", choices=["base64", "float"], help="encoding_format of the requests (the openai client sends base64)"
    )
    p.add_argument("--no-server", action="store_true", help="in-process figures only")
    p.add_argument("--no-batching-off", action="store_true", help="skip the max-batch-size 1 run")
    p.add_argument("--server-flag", action="append", default=[], help="extra flag for the server, e.g. --server-flag=--max-wait-ms=1")


def load_sentences(path: Path | None, n: int = 4000) -> list[str]:
    if path is None:
        sample = PACKAGE_DATA / "search_sample.tsv.gz"
        path = sample if sample.is_file() else None
    if path is not None:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as f:
            out = [line.rstrip("\n").split("\t")[-1] for _, line in zip(range(n), f) if line.strip()]
        if out:
            return out
    rng = random.Random(0)  # lengths 3..40 words, like book sentences
    return [" ".join(rng.choice(FALLBACK_WORDS) for _ in range(rng.randint(3, 40))) + " ." for _ in range(n)]


def bench_inprocess(bundle: Path, sentences: list[str], batches: list[int], seconds: float) -> dict[int, float]:
    """``Encoder.encode(texts, batch_size=b)`` sentences/s: tokenized, length-sorted, normalised, no HTTP."""
    from service.core.encoder import Encoder

    enc = Encoder.load(bundle)
    out = {}
    chunk = 1024  # encode() sorts each call's texts by length, as a bulk caller would
    for b in batches:
        enc.encode(sentences[: b * 2], batch_size=b)  # warm-up at this shape
        done, start, i = 0, time.perf_counter(), 0
        while time.perf_counter() - start < seconds:
            texts = [sentences[(i + j) % len(sentences)] for j in range(max(b, min(chunk, b * 8)))]
            i += len(texts)
            enc.encode(texts, batch_size=b)
            done += len(texts)
        out[b] = done / (time.perf_counter() - start)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``thoughtvec serve`` in a subprocess, for one bundle, until closed."""

    def __init__(self, bundle: Path, flags: list[str]):
        self.tmp = tempfile.TemporaryDirectory(prefix="tv-bench-")
        models = Path(self.tmp.name) / "models"
        models.mkdir()
        (models / bundle.name).symlink_to(bundle.resolve())
        self.port = free_port()
        cmd = [
            sys.executable,
            "-m",
            "service.cli",
            "serve",
            "--models-dir",
            str(models),
            "--index-dir",
            str(Path(self.tmp.name) / "idx"),
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
        self.proc = subprocess.Popen(cmd, cwd=Path(__file__).resolve().parents[2], env=os.environ | {"PYTHONUNBUFFERED": "1"})
        deadline = time.time() + 300
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("server not ready after 300 s")

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


def load_level(port: int, bodies: list[bytes], concurrency: int, seconds: float) -> tuple[float, np.ndarray, list[int]]:
    """Closed loop: ``concurrency`` connections, each sending its next request when the last answers."""
    lat: list[float] = []
    errors: list[int] = []

    async def main() -> None:
        t0 = time.perf_counter()
        await asyncio.gather(*(_worker(port, bodies, t0 + 1.0, t0 + 1.0 + seconds, lat, errors, i) for i in range(concurrency)))

    asyncio.run(main())
    return len(lat) / seconds, np.asarray(lat) * 1000, errors


def server_table(
    port: int, sentences: list[str], model: str, sizes: list[int], levels: list[int], seconds: float, encoding: str
) -> list[tuple]:
    rows = []
    rng = random.Random(1)
    for size in sizes:
        bodies = [
            json.dumps({"model": model, "input": [rng.choice(sentences) for _ in range(size)], "encoding_format": encoding}).encode()
            for _ in range(256)
        ]
        for c in levels:
            rps, lat, errors = load_level(port, bodies, c, seconds)
            p50, p95, p99 = np.percentile(lat, [50, 95, 99]) if len(lat) else (float("nan"),) * 3
            rows.append((size, c, rps * size, rps, p50, p95, p99, len(errors)))
            print(
                f"  size {size:>3} c {c:>3}: {rps * size:9.0f} sent/s  p50 {p50:7.1f} ms  p95 {p95:7.1f}  p99 {p99:7.1f}  errors {len(errors)}",
                flush=True,
            )
    return rows


def print_server_rows(title: str, rows: list[tuple]) -> None:
    print(
        f"\n{title}\n\n| sentences/request | concurrency | sentences/s | requests/s | p50 ms | p95 ms | p99 ms | errors |\n|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    for size, c, sps, rps, p50, p95, p99, err in rows:
        print(f"| {size} | {c} | {sps:.0f} | {rps:.0f} | {p50:.1f} | {p95:.1f} | {p99:.1f} | {err} |")


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
    print(f"# thoughtvec bench: {len(sentences)} sentences, {os.cpu_count()} CPUs, {args.seconds:g} s per level, encoding {args.encoding}")
    for bundle in bundles:
        from service.bundle.format import load_bundle

        name = load_bundle(bundle).name
        print(f"\n## {name}\n", flush=True)
        inproc = bench_inprocess(bundle, sentences, batches, args.seconds)
        print("| in-process batch | sentences/s |\n|---:|---:|")
        for b, v in inproc.items():
            print(f"| {b} | {v:.0f} |")
        if args.no_server:
            continue
        runs = [("batching on", list(args.server_flag))]
        if not args.no_batching_off:
            runs.append(("batching off (max batch 1)", ["--max-batch-size", "1", "--max-wait-ms", "0", *args.server_flag]))
        results = {}
        for title, flags in runs:
            print(f"\nserver, {title}:", flush=True)
            server = Server(bundle, flags)
            try:
                results[title] = server_table(server.port, sentences, name, sizes, levels, args.seconds, args.encoding)
            finally:
                server.close()
        for title, rows in results.items():
            print_server_rows(f"server, {title}", rows)
        on = {(r[0], r[1]): r[2] for r in results.get("batching on", [])}
        if 32 in inproc and (1, 64) in on:
            print(
                f"\n1-sentence requests at concurrency 64: {on[(1, 64)]:.0f} sent/s = {100 * on[(1, 64)] / inproc[32]:.0f} % of in-process batch 32 ({inproc[32]:.0f})"
            )
    return 0
