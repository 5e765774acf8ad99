"""What bodies built to be expensive cost a live server: time to refuse, the event loop's answer beside them, memory.

    python -m thoughtvec.bench.hostile_bench --bundle models/mean-max-aae --rounds 3

Starts ``thoughtvec serve`` on one bundle (as ``bench/servers.py`` does) and sends, over fresh connections:

* each hostile body alone, timed from its first byte sent to the answer: ``{"k0":1, …, "input":"x"}`` with 400 000
  unknown keys (5.5 MB) to ``POST /v1/embeddings`` and 1.35 M (16.4 MB) to ``POST /embed``; the same keys under a
  document's ``metadata`` (a free object: refused for its width); a 15 MB integer; 100 000 nested arrays;
* four at once (two of each size) while ``GET /health`` is asked every 10 ms: the slowest hostile answer and
  ``/health``'s slowest and median answers meanwhile (the event loop's freedom);
* the server's resident memory before, after the four, after the whole run, and after five requests of 2 048 texts;
* with ``--peer``, the same for another server (e.g. a previous release, checked out beside this one).

Prints figures; asserts nothing (``tests/service/http/test_door.py`` checks what is answered).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import threading
import time
from pathlib import Path

from thoughtvec.bench.bench import resident_mb
from thoughtvec.bench.servers import Peer, start, stop


def unknown_keys(n: int, last: dict) -> bytes:
    return ("{" + ",".join(f'"k{i}":1' for i in range(n)) + "," + json.dumps(last)[1:]).encode()


def bodies() -> dict[str, tuple[str, bytes]]:
    """name -> (path, body)."""
    wide_meta = {"documents": [{"text": "x", "metadata": {f"k{i}": 1 for i in range(400_000)}}]}
    return {
        "400k unknown keys": ("/v1/embeddings", unknown_keys(400_000, {"input": "x"})),
        "1.35M unknown keys": ("/embed", unknown_keys(1_350_000, {"inputs": "x"})),
        "400k metadata keys": ("/v1/indexes/none/documents", json.dumps(wide_meta).encode()),
        "15 MB integer": ("/v1/indexes", b'{"name": "z", "train_size": 1' + b"0" * 15_000_000 + b"}"),
        "100k nested arrays": ("/v1/embeddings", b'{"input": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    }


def post(port: int, path: str, body: bytes) -> tuple[int, float, bytes]:
    """(status, seconds from the first byte sent to the whole answer, answer body) over a fresh connection."""
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
        s.sendall(head.encode() + body)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    took = time.perf_counter() - start
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), took, rest.partition(b"\r\n\r\n")[2]


def health_while(port: int, done: threading.Event, every_s: float = 0.01) -> list[float]:
    """``GET /health`` latencies, one every ``every_s``, until ``done``."""
    out = []
    while not done.is_set():
        out.append(post_get(port, "/health"))
        time.sleep(every_s)
    return out


def post_get(port: int, path: str) -> float:
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        while s.recv(65536):
            pass
    return time.perf_counter() - start


def four_at_once(port: int, named: dict[str, tuple[str, bytes]]) -> dict[str, float]:
    """Two of each unknown-key body at once, /health asked meanwhile."""
    sends = [named["400k unknown keys"], named["400k unknown keys"], named["1.35M unknown keys"], named["1.35M unknown keys"]]
    done = threading.Event()
    health: list[float] = []
    watcher = threading.Thread(target=lambda: health.extend(health_while(port, done)))
    watcher.start()
    time.sleep(0.05)
    times: list[float] = []
    threads = [threading.Thread(target=lambda p=p, b=b: times.append(post(port, p, b)[1])) for p, b in sends]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(0.05)
    done.set()
    watcher.join()
    return {"slowest": max(times), "health_max": max(health), "health_p50": statistics.median(health), "health_n": len(health)}


def large_requests(port: int, n: int = 5) -> float:
    """``n`` requests a server must do (2 048 texts embedded, an answer of several MB); their slowest time."""
    body = json.dumps({"input": [f"sentence number {i} of a large request ." for i in range(2048)]}).encode()
    times = []
    for _ in range(n):
        status, took, _ = post(port, "/v1/embeddings", body)
        assert status == 200, status
        times.append(took)
    return max(times)


def measure(name: str, proc, port: int, named: dict[str, tuple[str, bytes]], rounds: int) -> None:
    before = resident_mb(proc.pid)["rss"]
    print(f"\n== {name}: resident {before:.0f} MB after start")
    for r in range(1, rounds + 1):
        print(f"round {r}")
        for label, (path, body) in named.items():
            status, took, answer = post(port, path, body)
            try:
                error = json.loads(answer).get("error", {})
            except ValueError:
                error = answer[:90].decode("latin-1")
            detail = error.get("message", "") if isinstance(error, dict) else str(error)
            print(f"  {label:20s} {len(body) / 1e6:5.1f} MB -> {status} in {took * 1e3:7.1f} ms  {detail[:90]}")
        four = four_at_once(port, named)
        rss = resident_mb(proc.pid)["rss"]
        print(
            f"  four at once: slowest {four['slowest'] * 1e3:.0f} ms; /health max {four['health_max'] * 1e3:.1f} ms, "
            f"median {four['health_p50'] * 1e3:.1f} ms ({four['health_n']} asked); resident {rss:.0f} MB"
        )
    time.sleep(1.5)
    after = resident_mb(proc.pid)
    print(
        f"resident after the hostile bodies: {after['rss']:.0f} MB ({after['rss'] / before - 1:+.1%} of {before:.0f}), peak {after['peak']:.0f} MB"
    )
    slowest = large_requests(port)
    time.sleep(1.5)
    large = resident_mb(proc.pid)
    print(f"resident after 5 requests of 2 048 texts (slowest {slowest:.1f} s): {large['rss']:.0f} MB, peak {large['peak']:.0f} MB")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bundle", type=Path, default=Path("models/mean-max-aae"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument(
        "--peer", default="", help="also measure another server: a shell command with {port} (exec it, so its pid is the server's)"
    )
    p.add_argument("--peer-name", default="peer")
    args = p.parse_args(argv)
    named = bodies()
    proc, port = start("uvicorn", args.bundle)
    try:
        measure(f"thoughtvec serve ({args.bundle.name})", proc, port, named, args.rounds)
    finally:
        stop(proc)
    if args.peer:
        proc, port = Peer(args.peer, ready="/ready", name=args.peer_name).start()
        try:
            measure(args.peer_name, proc, port, named, args.rounds)
        finally:
            stop(proc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
