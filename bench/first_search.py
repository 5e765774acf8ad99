"""A fresh server's first search: how long after ``thoughtvec serve`` starts until ``POST /v1/search`` of the
default index answers 200, and until the index is whole.

    python -m thoughtvec.bench.first_search [--port 8765] [--models-dir models] [-- extra serve flags]

Starts ``thoughtvec serve`` on an empty index folder (a temporary one: the default index is built from the
sample, as on a first start), then asks every 0.1 s: ``/health``, ``/ready``, and a search of the default index
(no index named). Prints when each first answered 200 (a search: with hits; as it happens), when the index stopped building, and what
the searches answered before the first 200 (503 and its message: the build's progress, never 404). Prints figures; asserts nothing
about time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

WHAT = {"health": "/health 200", "ready": "/ready 200", "search": "first search 200", "built": "default index whole"}


def report(name: str, t: float) -> None:
    print(f"{WHAT[name]:>22}: {t:.1f} s", flush=True)


def run(port: int, models_dir: str, extra: list[str], timeout_s: float, until_built: bool = True) -> dict:
    with tempfile.TemporaryDirectory(prefix="first-search-") as tmp:
        cmd = [sys.executable, "-m", "thoughtvec.service.cli", "serve", "--port", str(port), "--models-dir", models_dir,
               "--index-dir", str(Path(tmp) / "indexes"), "--log-level", "warning", *extra]  # fmt: skip
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
        first: dict[str, float] = {}
        before: dict[str, int] = {}
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
                while time.perf_counter() - t0 < timeout_s and proc.poll() is None:
                    now = time.perf_counter() - t0
                    try:
                        for name, call in (
                            ("health", lambda: c.get("/health")),
                            ("ready", lambda: c.get("/ready")),
                            ("search", lambda: c.post("/v1/search", json={"query": "a ship sailed into the harbour", "k": 3})),
                        ):
                            if name in first:
                                continue
                            r = call()
                            if r.status_code == 200 and (name != "search" or r.json()["results"][0]):  # a search that finds something
                                first[name] = time.perf_counter() - t0
                                report(name, first[name])
                            elif name == "search":
                                err = r.json().get("error", {})
                                key = f"{r.status_code} {err.get('code')}: {str(err.get('message'))[:90]}"
                                before[key] = before.get(key, 0) + 1
                        if "search" in first and "built" not in first:
                            if "default" not in c.get("/v1/indexes").json().get("building", {}):
                                first["built"] = time.perf_counter() - t0
                                report("built", first["built"])
                                break
                        if {"search", "ready"} <= set(first) and not until_built:
                            break
                    except httpx.TransportError:
                        pass  # not listening yet
                    time.sleep(max(0.0, 0.1 - (time.perf_counter() - t0 - now)))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
    return {"first_200_s": first, "search_answers_before": before}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--models-dir", default="models")
    p.add_argument("--timeout", type=float, default=1200, help="give up after this many seconds")
    p.add_argument("--no-wait-built", action="store_true", help="stop at the first search and /ready (do not wait for the whole index)")
    p.add_argument("serve_flags", nargs="*", help="more `thoughtvec serve` flags (after --)")
    args = p.parse_args(argv)
    out = run(args.port, args.models_dir, args.serve_flags, args.timeout, until_built=not args.no_wait_built)
    for name in [n for n in WHAT if n not in out["first_200_s"]]:
        print(f"{WHAT[name]:>22}: not reached")
    for answer, n in out["search_answers_before"].items():
        print(f"  before it, {n} x {answer}")
    return 0 if "search" in out["first_200_s"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
