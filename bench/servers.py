"""Servers compared on one bundle: what each costs a request, and what it serves.

    python -m thoughtvec.bench.servers --bundle models/mean-max-aae --seconds 5 --repeats 3
    python -m thoughtvec.bench.servers --bundle models/all-minilm-l6-v2 --kinds uvicorn \\
        --peer 'infinity_emb v2 --model-id PATH --engine torch --port {port} --device cpu' --peer-path /embeddings

Each round starts each contender in turn, as its own process, floods it with wrk (1-sentence requests at
concurrency 64, then 32-sentence requests at concurrency 4, after a warm-up flood of each) and prints
sentences/s, p50 and p99 latency and the server's CPU per request (its whole process tree: a forked
worker counts). Every contender gets the same request bodies (the same sentences, the bundle's name as
``model``, the same ``encoding_format``) from the same wrk script. Contenders:

* ``uvicorn``: what ``thoughtvec serve`` runs (httptools, uvloop), serving the bundle alone, with
  ``thoughtvec bench``'s settings (no default index, a deep queue, ``truncation=truncate``);
* ``granian``: granian's command line (``pip install granian==2.8.7``; left out when absent), ASGI, one
  worker process calling the app factory ``serving_app`` (the app as ``thoughtvec serve`` makes it), uvloop;
* a **peer** (``--peer``): another embedding server started by a shell command with ``{port}`` in it,
  flooded at ``--peer-path`` (OpenAI's body: ``input``, ``model``, ``encoding_format``) once
  ``--peer-ready`` answers 200. With a peer, the summary is thoughtvec's sentences/s over the peer's at each
  level, the median of the rounds, beside both p99s.

Rounds alternate the contenders, as drift on a shared machine requires; compare within a round. Prints
figures; asserts nothing. Needs wrk (Debian: ``apt-get install wrk``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from thoughtvec.bench.arguments import add_peer_arguments
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

KINDS = ("uvicorn", "granian")
OURS = "/v1/embeddings"


@dataclass(frozen=True)
class Peer:
    """Another embedding server: a shell command with ``{port}`` in it, flooded at ``path`` once ``ready`` answers 200."""

    command: str
    path: str = "/embeddings"
    ready: str = "/health"
    name: str = "peer"

    def start(self) -> tuple[subprocess.Popen, int]:
        """The peer on a free port, ready; its output goes to a log file (named if it fails), not into the tables."""
        port = free_port()
        log = tempfile.NamedTemporaryFile("w", prefix=f"tv-peer-{self.name}-", suffix=".log", delete=False)
        proc = subprocess.Popen(self.command.format(port=port), shell=True, start_new_session=True, stdout=log, stderr=subprocess.STDOUT)
        try:
            return proc, wait_ready(proc, port, self.ready, self.name, timeout=600)
        except RuntimeError as e:
            raise RuntimeError(f"{e}; its output: {log.name}") from None


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its descendants (granian's worker, a peer under its shell), all threads."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # exited meanwhile
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        todo += map(int, subprocess.run(["pgrep", "-P", str(p)], capture_output=True, text=True).stdout.split())
    return total


def command(kind: str, port: int) -> list[str]:
    """The server process for ``kind``; the app's settings come from the environment (``start``)."""
    if kind == "granian":  # the app factory, as granian's own command line runs one (its worker calls serving_app)
        return [sys.executable, "-m", "granian", "--interface", "asgi", "--factory", "--host", "127.0.0.1", "--port", str(port),
                "--workers", "1", "--loop", "uvloop", "--log-level", "warning", "thoughtvec.service.http.app:serving_app"]  # fmt: skip
    return [sys.executable, "-m", "thoughtvec.service.cli", "serve", "--port", str(port)]


def wait_ready(proc: subprocess.Popen, port: int, path: str, name: str, timeout: float = 300) -> int:
    """``port`` once ``GET path`` answers 200; the process stopped and an error if it exits or takes over ``timeout``."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
                if r.status == 200:
                    return port
        except OSError:
            time.sleep(0.2)
    stop(proc)
    raise RuntimeError(f"{name} server not ready after {timeout:.0f} s")


def start(kind: str, bundle: Path, flags: list[str] | None = None) -> tuple[subprocess.Popen, int]:
    """A server of ``kind`` for ``bundle`` alone on 127.0.0.1:<free port>, ready; the caller stops it (:func:`stop`)."""
    models = Path(tempfile.mkdtemp(prefix="tv-servers-"))
    (models / bundle.name).symlink_to(bundle.resolve())
    settings = {"models_dir": models, "index_dir": models / "idx", "build_default_index": "false", "log_level": "warning"}
    settings |= {"max_queue_size": 100_000, "truncation": "truncate"}  # as thoughtvec bench's servers
    env = os.environ | {f"THOUGHTVEC_{k.upper()}": str(v) for k, v in settings.items()}
    port = free_port()
    extra = list(flags or []) if kind != "granian" else []  # granian takes settings from the environment only
    proc = subprocess.Popen(command(kind, port) + extra, env=env, start_new_session=True)
    return proc, wait_ready(proc, port, "/ready", kind)


def stop(proc: subprocess.Popen) -> None:
    """Stop a server started here and whatever it started (its own process group)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    except ProcessLookupError:
        pass


def check_answers(port: int, path: str, body: bytes, name: str) -> None:
    """One request before the floods: a contender that refuses the bodies would be measured answering errors."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            vectors = json.load(r)["data"]
    except (OSError, ValueError, KeyError) as e:
        raise RuntimeError(f"{name} does not answer the benchmark's request at {path}: {e}") from None
    if not vectors:
        raise RuntimeError(f"{name} answered no vectors at {path}")


def flood(proc: subprocess.Popen, port: int, script: Path, size: int, concurrency: int, seconds: float) -> tuple[Flood, float]:
    """A warm-up flood, then the measured one: (the flood, the server tree's CPU ms per request)."""
    start_wrk(port, script, concurrency, min(3.0, seconds)).communicate()
    cpu0 = tree_cpu_seconds(proc.pid)
    f = parse_wrk(start_wrk(port, script, concurrency, seconds).communicate()[0], size, concurrency)
    return f, (tree_cpu_seconds(proc.pid) - cpu0) * 1000 / max(f.requests, 1)


def compare(
    bundle: Path,
    contenders: list[str | Peer],
    seconds: float,
    repeats: int,
    sentences: list[str] | None = None,
    encoding: str = "base64",
    flags: list[str] | None = None,
) -> None:
    """Each round, each contender: start it, check it answers, flood it at both levels, stop it; print a row a flood."""
    sentences = sentences or load_sentences(None)
    folder = Path(tempfile.mkdtemp(prefix="tv-servers-wrk-"))
    bodies = {size: request_bodies(sentences, size, 200, bundle.name, encoding) for size, _ in RATIO_LEVELS}
    paths = {c.path if isinstance(c, Peer) else OURS for c in contenders}
    scripts = {(size, p): wrk_script(b, folder / f"{size}{p.replace('/', '_')}.lua", p) for size, b in bodies.items() for p in paths}
    for c in contenders:
        if isinstance(c, Peer):
            print(f"{c.name}: `{c.command}`, flooded at {c.path}")
    print(f"bundle {bundle.name}; wrk, {seconds:.0f} s a flood; request bodies with encoding_format {encoding}\n")
    print("| round | server | sentences/request | concurrency | sentences/s | p50 ms | p99 ms | server CPU ms/request | errors |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    got: dict[tuple[str, int, int], list[Flood]] = {}
    beside_a_peer = any(isinstance(c, Peer) for c in contenders)
    for rnd in range(1, repeats + 1):
        for c in contenders:
            name, path = (c.name, c.path) if isinstance(c, Peer) else (f"thoughtvec ({c})" if beside_a_peer else c, OURS)
            proc, port = c.start() if isinstance(c, Peer) else start(c, bundle, flags)
            try:
                check_answers(port, path, bodies[1][0], name)
                if not isinstance(c, Peer) and rnd == 1:
                    print(f"| | {name} on {served_runtime(port)} | | | | | | | |")
                for size, conc in RATIO_LEVELS:
                    f, cpu = flood(proc, port, scripts[(size, path)], size, conc, seconds)
                    got.setdefault((name, size, conc), []).append(f)
                    lat = [f.latency_ms.get(p, float("nan")) for p in (50, 99)]
                    print(
                        f"| {rnd} | {name} | {size} | {conc} | {f.sentences_per_s:.0f} | {lat[0]:.1f} | {lat[1]:.1f} | {cpu:.3f} | {f.errors} |",
                        flush=True,
                    )
            finally:
                stop(proc)
    peers = [c for c in contenders if isinstance(c, Peer)]
    ours = [c for c in contenders if not isinstance(c, Peer)]
    if peers and ours:
        print_summary(got, f"thoughtvec ({ours[0]})", peers[0].name)


def print_summary(got: dict[tuple[str, int, int], list[Flood]], ours: str, peer: str) -> None:
    """thoughtvec's sentences/s over the peer's per level (the median of the rounds' ratios), and both p99s (medians)."""
    print(f"\n| sentences/request | concurrency | {ours} sentences/s | {peer} sentences/s | {ours} over {peer} | "
          f"{ours} p99 ms | {peer} p99 ms |\n|---:|---:|---:|---:|---:|---:|---:|")  # fmt: skip
    for size, conc in RATIO_LEVELS:
        a, b = got[(ours, size, conc)], got[(peer, size, conc)]
        ratio = np.median([x.sentences_per_s / y.sentences_per_s for x, y in zip(a, b)])
        med = [np.median([f.sentences_per_s for f in fs]) for fs in (a, b)]
        p99 = [np.median([f.latency_ms.get(99, float("nan")) for f in fs]) for fs in (a, b)]
        print(f"| {size} | {conc} | {med[0]:.0f} | {med[1]:.0f} | x{ratio:.2f} | {p99[0]:.1f} | {p99[1]:.1f} |")


def peer_of(args: argparse.Namespace) -> Peer | None:
    if not args.peer:
        return None
    if "{port}" not in args.peer:
        raise SystemExit("--peer: the command needs {port} where the peer's port goes")
    return Peer(args.peer, args.peer_path, args.peer_ready, args.peer_name)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m thoughtvec.bench.servers", description=__doc__.split("\n\n")[0])
    p.add_argument("--bundle", type=Path, required=True, help="a bundle folder, e.g. models/mean-max-aae")
    p.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, of {', '.join(KINDS)}")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--repeats", type=int, default=3)
    add_peer_arguments(p)
    args = p.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    if "granian" in kinds and importlib.util.find_spec("granian") is None:
        print("granian is not installed (pip install granian==2.8.7): left out\n")
        kinds.remove("granian")
    peer = peer_of(args)
    compare(args.bundle, [*kinds, *([peer] if peer else [])], args.seconds, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
