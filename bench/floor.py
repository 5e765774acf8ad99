"""The per-request floor: what answering one HTTP request costs on this machine, whatever the server does.

The batching ratio (1-sentence requests at concurrency 64 over 32-sentence requests at
concurrency 4, sentences/s) says what dynamic batching recovers; 0.9 is the aim. With both floods keeping the cores busy, sentences/s is the
cores over the CPU a sentence costs, server and load generator together, so

    ratio = (s + w32 / 32) / (s1 + w1)

with ``s`` the server CPU per sentence of 32-sentence requests, ``s1`` its CPU per 1-sentence request and
``w32``, ``w1`` the load generator's CPU per request. No server answers a request for less than the
cheapest server that does nothing else, so ``s1 >= s + floor`` bounds the ratio from above, whatever is
optimised. This tool measures that floor in the same run as ``s``: wrk (one thread, 64 connections,
keep-alive) floods, each for ``--seconds``, the real ``thoughtvec serve`` on one bundle, then three servers
that answer every request with those same response bytes and nothing else:

* ``asgi``: uvicorn (httptools parser, uvloop) with a bare ASGI app: the stack ``thoughtvec serve``
  runs on, without FastAPI, the model, JSON or tokenizing;
* ``uvicorn``: uvicorn's httptools protocol writing the canned bytes the moment a request is parsed,
  without an ASGI call, a task or any route's work: the least a server on uvicorn's parser can do;
* ``raw``: an ``asyncio.Protocol`` on uvloop that finds the end of each request by its Content-Length
  and writes the canned response: no HTTP library at all.

  python -m thoughtvec.bench.floor --bundle models/mean-max-aae --seconds 5 --repeats 3

Prints figures; asserts nothing. Needs wrk (Debian: ``apt-get install wrk``).
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

from thoughtvec import paths
from thoughtvec.bench.bench import Flood, Load, LoadGenerator, Server, free_port, load_sentences, request_bodies

# -- the floor servers (each in a subprocess: ``python -m thoughtvec.bench.floor --serve KIND``) -----------


def serve_raw(port: int, response: bytes) -> None:
    class Answer(asyncio.Protocol):
        def connection_made(self, transport) -> None:
            self.transport, self.buf, self.need = transport, b"", -1

        def data_received(self, data: bytes) -> None:
            self.buf += data
            while True:
                if self.need < 0:  # the head: up to the blank line; its Content-Length says how much body follows
                    end = self.buf.find(b"\r\n\r\n")
                    if end < 0:
                        return
                    head = self.buf[:end].lower() + b"\r\n"
                    at = head.find(b"content-length:")
                    length = int(head[at + 15 : head.find(b"\r\n", at)]) if at >= 0 else 0
                    self.buf, self.need = self.buf[end + 4 :], length
                if len(self.buf) < self.need:
                    return
                self.buf, self.need = self.buf[self.need :], -1
                self.transport.write(response)

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(Answer, "127.0.0.1", port)
        async with server:
            await server.serve_forever()

    _run(main())


def serve_asgi(port: int, response: bytes) -> None:
    import uvicorn  # noqa: PLC0415  # only the floor's own servers

    head, body = response.split(b"\r\n\r\n", 1)
    keep = (b"content-type", b"content-length")  # uvicorn writes its own date and server headers
    headers = [tuple(line.split(b": ", 1)) for line in head.split(b"\r\n")[1:] if line.lower().startswith(keep)]

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    uvicorn.run(app, host="127.0.0.1", port=port, http="httptools", loop="uvloop", log_level="warning", access_log=False, lifespan="off")


def serve_uvicorn(port: int, response: bytes) -> None:
    import uvicorn  # noqa: PLC0415  # only the floor's own servers
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol  # noqa: PLC0415  # only the floor's own servers

    class Answer(HttpToolsProtocol):
        def _start_asgi_task(self, cycle, app) -> None:
            cycle.transport.write(response)
            cycle.response_started = cycle.response_complete = True
            cycle.message_event.set()
            cycle.on_response()

    async def app(scope, receive, send):  # never called
        raise RuntimeError("unreachable")

    uvicorn.run(app, host="127.0.0.1", port=port, http=Answer, loop="uvloop", log_level="warning", access_log=False, lifespan="off")


def _run(coro) -> None:
    try:
        import uvloop  # noqa: PLC0415  # only the floor's own servers

        uvloop.run(coro)
    except ImportError:
        asyncio.run(coro)


KINDS = ("asgi", "uvicorn", "raw")
SERVE = {"asgi": serve_asgi, "uvicorn": serve_uvicorn, "raw": serve_raw}


class FloorServer:
    """A floor server in a subprocess, with what :class:`LoadGenerator` reads: ``port`` and ``proc``."""

    def __init__(self, kind: str, response: Path):
        self.port = free_port()
        cmd = [sys.executable, "-m", "thoughtvec.bench.floor", "--serve", kind, "--port", str(self.port), "--response", str(response)]
        self.proc = subprocess.Popen(cmd, cwd=paths.REPO)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                req = urllib.request.Request(f"http://127.0.0.1:{self.port}/v1/embeddings", data=b"{}", method="POST")
                with urllib.request.urlopen(req, timeout=2):
                    return
            except OSError:
                time.sleep(0.1)
        self.close()
        raise RuntimeError(f"{kind} floor server not answering after 30 s")

    def batching(self) -> dict[str, float]:
        return {"runs": 0.0, "sentences": 0.0, "padded": 0.0, "tokens": 0.0}

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def flood(gen: LoadGenerator, load: Load, seconds: float) -> tuple[Flood, float]:
    """One flood alone, and the load generator's CPU per request, ms (wrk is this process's child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    (f,) = gen.run(load, seconds=seconds)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    client = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000 / max(f.requests, 1)
    return f, client


def response_bytes(port: int, body: bytes) -> bytes:
    """The real server's whole answer (status line, headers, body) to ``body``, as it sent it."""
    import socket  # noqa: PLC0415  # only the raw floor

    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(
            b"POST /v1/embeddings HTTP/1.1\r\nHost: floor\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (len(body), body)
        )
        data = b""
        while b"\r\n\r\n" not in data:
            data += s.recv(65536)
        head, rest = data.split(b"\r\n\r\n", 1)
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
        while len(rest) < length:
            rest += s.recv(65536)
    return head + b"\r\n\r\n" + rest[:length]


def run(args: argparse.Namespace) -> int:
    if shutil.which("wrk") is None:
        print("python -m thoughtvec.bench.floor: needs wrk (Debian: apt-get install wrk)", file=sys.stderr)
        return 2
    bundle = Path(args.bundle)
    sentences = load_sentences(None)
    one = Load(request_bodies(sentences, 1, 2000, bundle.name, "base64"), 1, 64)
    many = Load(request_bodies(sentences, 32, 200, bundle.name, "base64", seed=2), 32, 4)
    print(f"# floor: {bundle.name}, {args.seconds:g} s per flood, {args.repeats} rounds, wrk -t1, encoding base64\n")
    print("| round | server | sentences/request | concurrency | requests/s | server CPU µs/request | wrk CPU µs/request |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    rows: dict[str, list[float]] = {}
    real = Server(bundle, [])
    tmp = Path(real.tmp.name) / "response.http"
    tmp.write_bytes(response_bytes(real.port, one.bodies[0]))
    try:
        for r in range(1, args.repeats + 1):
            gen = LoadGenerator(real, "wrk", args.seconds)
            gen.run(one, seconds=min(2.0, args.seconds))  # warm-up
            f1, w1 = flood(gen, one, args.seconds)
            f32, w32 = flood(gen, many, args.seconds)
            gen.close()
            for f, w in ((f1, w1), (f32, w32)):
                print(
                    f"| {r} | thoughtvec serve | {f.size} | {f.concurrency} | {f.requests / f.seconds:.0f} | {f.server_cpu_ms * 1000:.0f} | {w * 1000:.0f} |"
                )
            floors = {}
            for kind in KINDS:
                srv = FloorServer(kind, tmp)
                try:
                    gen = LoadGenerator(srv, "wrk", args.seconds)  # type: ignore[arg-type]
                    gen.run(one, seconds=min(2.0, args.seconds))
                    f, w = flood(gen, one, args.seconds)
                    gen.close()
                finally:
                    srv.close()
                floors[kind] = f.server_cpu_ms
                print(f"| {r} | floor: {kind} | 1 | 64 | {f.requests / f.seconds:.0f} | {f.server_cpu_ms * 1000:.0f} | {w * 1000:.0f} |")
            s = f32.server_cpu_ms / 32
            measured = {"s": s, "s1": f1.server_cpu_ms, "w1": w1, "w32": w32, "ratio": f1.sentences_per_s / f32.sentences_per_s}
            for kind, floor in floors.items():
                measured[kind] = floor
                measured[f"bound_{kind}"] = (s + w32 / 32) / (s + floor + w1)
            for key, value in measured.items():
                rows.setdefault(key, []).append(value)
    finally:
        real.close()

    def span(key: str, scale: float = 1000.0, fmt: str = ".0f") -> str:
        lo, hi = min(rows[key]) * scale, max(rows[key]) * scale
        return f"{lo:{fmt}}–{hi:{fmt}}" if f"{lo:{fmt}}" != f"{hi:{fmt}}" else f"{lo:{fmt}}"

    print(f"\n{bundle.name}, over the rounds:")
    print(f"- s, server CPU per sentence of 32-sentence requests: {span('s')} µs; per 1-sentence request: {span('s1')} µs")
    print(f"- floor, server CPU per request: {', '.join(f'{k} {span(k)} µs' for k in KINDS)}; wrk per request {span('w1')} µs")
    print(f"- batching ratio measured: {span('ratio', 1, '.2f')}")
    bounds = ", ".join(f"{span(f'bound_{k}', 1, '.2f')} ({k})" for k in KINDS)
    print(f"- upper bound on the ratio for a server no cheaper than a floor, (s + w32/32) / (s + floor + w1): {bounds}")
    need = float(np.median([(x + y / 32) / 0.9 - x - z for x, y, z in zip(rows["s"], rows["w32"], rows["w1"])]))
    print(f"- ratio 0.9 needs s1 - s (server CPU a request costs beyond its sentence) <= {need * 1000:.0f} µs (median of the rounds)")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bundle", default=str(paths.MODELS / "mean-max-aae"), help="bundle the real server serves (default mean-max-aae)")
    p.add_argument("--seconds", type=float, default=5.0, help="seconds per flood (default 5)")
    p.add_argument("--repeats", type=int, default=3, help="rounds (default 3)")
    p.add_argument("--serve", choices=KINDS, help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--response", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve:
        SERVE[args.serve](args.port, args.response.read_bytes())
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
