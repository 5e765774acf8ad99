"""The HTTP server under the app, compared on one bundle: what each costs a request, and what it serves.

    python -m thoughtvec.bench.servers --bundle models/mean-max-aae --seconds 5 --repeats 3

Each round starts the same app (``create_app`` with ``thoughtvec bench``'s server settings, from
``THOUGHTVEC_*`` variables: no default index, a deep queue, ``truncation=truncate``) under each kind of
server in turn, as its own process, floods it with wrk (1-sentence requests at concurrency 64, then 32-sentence
requests at concurrency 4, after a warm-up flood) and prints sentences/s, p50 latency and the server's
CPU per request (its whole process tree: a forked worker counts). Kinds:

* ``uvicorn``: what ``thoughtvec serve`` runs (httptools, uvloop), the embeddings fast path on;
* ``uvicorn-route``: the same with ``embeddings_fast_path`` off: every request through FastAPI's route;
* ``granian``: granian's command line (``pip install granian==2.8.7``; left out when absent), ASGI, one
  worker process calling the app factory, uvloop, the fast path on.

Rounds alternate the kinds, as drift on a shared machine requires; compare within a round. Prints
figures; asserts nothing. Needs wrk (Debian: ``apt-get install wrk``).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from thoughtvec.bench.bench import RATIO_LEVELS, free_port, load_sentences, parse_wrk, request_bodies, start_wrk, wrk_script

KINDS = ("uvicorn", "uvicorn-route", "granian")


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its children (granian's worker), all threads."""
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    total = 0.0
    for p in [pid, *map(int, children)]:
        fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def command(kind: str, port: int) -> list[str]:
    """The server process for ``kind``; the app's settings come from the environment (``start``)."""
    if kind == "granian":  # the app factory, as granian's own command line runs one (its worker calls create_app)
        return [sys.executable, "-m", "granian", "--interface", "asgi", "--factory", "--host", "127.0.0.1", "--port", str(port),
                "--workers", "1", "--loop", "uvloop", "--log-level", "warning", "thoughtvec.service.http.app:create_app"]  # fmt: skip
    route_only = ["--no-embeddings-fast-path"] if kind == "uvicorn-route" else []
    return [sys.executable, "-m", "thoughtvec.service.cli", "serve", "--port", str(port), *route_only]


def start(kind: str, bundle: Path) -> tuple[subprocess.Popen, int]:
    """A server of ``kind`` for ``bundle`` alone on 127.0.0.1:<free port>, ready; the caller stops it."""
    models = Path(tempfile.mkdtemp(prefix="tv-servers-"))
    (models / bundle.name).symlink_to(bundle.resolve())
    settings = {"models_dir": models, "index_dir": models / "idx", "build_default_index": "false", "log_level": "warning"}
    settings |= {"max_queue_size": 100_000, "truncation": "truncate"}  # as thoughtvec bench's servers
    env = os.environ | {f"THOUGHTVEC_{k.upper()}": str(v) for k, v in settings.items()}
    port = free_port()
    proc = subprocess.Popen(command(kind, port), env=env)
    deadline = time.time() + 300
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{kind} server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=2) as r:
                if r.status == 200:
                    return proc, port
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"{kind} server not ready after 300 s")


def compare(bundle: Path, kinds: list[str], seconds: float, repeats: int) -> None:
    sentences = load_sentences(None)
    folder = Path(tempfile.mkdtemp(prefix="tv-servers-wrk-"))
    scripts = {
        (size, c): wrk_script(request_bodies(sentences, size, 200, bundle.name, "base64"), folder / f"{size}.lua")
        for size, c in RATIO_LEVELS
    }
    print(f"bundle {bundle.name}; wrk, {seconds:.0f} s a flood\n")
    print("| round | server | sentences/request | concurrency | sentences/s | p50 ms | server CPU ms/request | errors |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for rnd in range(1, repeats + 1):
        for kind in kinds:
            proc, port = start(kind, bundle)
            try:
                for (size, c), script in scripts.items():
                    start_wrk(port, script, c, 3).communicate()  # warm-up
                    cpu0 = tree_cpu_seconds(proc.pid)
                    flood = parse_wrk(start_wrk(port, script, c, seconds).communicate()[0], size, c)
                    cpu = (tree_cpu_seconds(proc.pid) - cpu0) * 1000 / max(flood.requests, 1)
                    p50 = flood.latency_ms.get(50, float("nan"))
                    print(
                        f"| {rnd} | {kind} | {size} | {c} | {flood.sentences_per_s:.0f} | {p50:.1f} | {cpu:.3f} | {flood.errors} |",
                        flush=True,
                    )
            finally:
                proc.terminate()
                proc.wait(30)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m thoughtvec.bench.servers", description=__doc__.split("\n\n")[0])
    p.add_argument("--bundle", type=Path, required=True, help="a bundle folder, e.g. models/mean-max-aae")
    p.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, of {', '.join(KINDS)}")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    if "granian" in kinds and importlib.util.find_spec("granian") is None:
        print("granian is not installed (pip install granian==2.8.7): left out\n")
        kinds.remove("granian")
    compare(args.bundle, kinds, args.seconds, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
