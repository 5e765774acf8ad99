"""What a request costs the server beyond its sentences, measured black-box with ``wrk``. Prints; asserts nothing.

For each bundle a real ``thoughtvec serve`` (``bench.Server``) takes two closed-loop floods from
``wrk`` (a C load generator: it costs the 2 shared cores little): 1-sentence requests over 64
connections and 32-sentence requests over 4. The server's own CPU time (``/proc/<pid>/stat``,
every thread: HTTP loop and ONNX Runtime) is read around each flood, so the figures are CPU per
request and per sentence, which drift far less than throughput on a shared machine:

- ``ms/req (1)``: server CPU per 1-sentence request;
- ``ms/sent (32)``: server CPU per sentence of the 32-sentence requests (the batch's share);
- ``extra``: the difference, what one request costs beyond its sentence;
- ``ratio``: 1-sentence sentences/s over 32-sentence sentences/s (issue 16's batching ratio).

Run on an idle machine (Debian ``wrk``: ``apt-get install wrk``)::

    python -m service.tools.request_cost --models mean-max-aae,uni-skip,invertible-linear --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from service.tools.bench import Server, load_sentences

LUA = """wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local bodies = {%s}
local i = 0
request = function()
  i = i + 1
  return wrk.format(nil, "/v1/embeddings", nil, bodies[(i %% #bodies) + 1])
end
"""


def lua_script(sentences: list[str], per_request: int, n: int, folder: Path) -> Path:
    """A wrk script cycling through ``n`` request bodies of ``per_request`` sentences each."""
    bodies = []
    for k in range(n):
        texts = [sentences[(k * per_request + j) % len(sentences)] for j in range(per_request)]
        body = json.dumps({"input": texts[0] if per_request == 1 else texts, "encoding_format": "base64"})
        bodies.append("[==[" + body + "]==]")
    path = folder / f"bodies-{per_request}.lua"
    path.write_text(LUA % ",\n".join(bodies), encoding="utf-8")
    return path


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def flood(port: int, script: Path, connections: int, seconds: float) -> tuple[int, float]:
    """Run wrk; (requests completed, requests/s)."""
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "-s", str(script), f"http://127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    done = int(re.search(r"(\d+) requests in", out)[1])  # type: ignore[index]
    if m := re.search(r"Non-2xx or 3xx responses: (\d+)", out):
        raise RuntimeError(f"{m[1]} requests failed:\n{out}")
    return done, float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1])  # type: ignore[index]


def measure(port: int, pid: int, script: Path, connections: int, seconds: float) -> tuple[float, float]:
    """(requests/s, server CPU ms per request) of one flood."""
    before = cpu_seconds(pid)
    done, rps = flood(port, script, connections, seconds)
    return rps, (cpu_seconds(pid) - before) * 1000 / done


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models-dir", type=Path, default=Path("models"))
    ap.add_argument("--models", default="mean-max-aae,uni-skip,invertible-linear", help="comma-separated bundle names")
    ap.add_argument("--seconds", type=float, default=6.0, help="seconds per flood (after a 3 s warm-up)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--server-flag", action="append", default=[], help="extra flag for the server")
    args = ap.parse_args(argv)
    if shutil.which("wrk") is None:
        raise SystemExit("request_cost needs wrk (Debian: apt-get install wrk)")
    sentences = load_sentences(None)
    with tempfile.TemporaryDirectory(prefix="tv-cost-") as tmp:
        one, many = lua_script(sentences, 1, 256, Path(tmp)), lua_script(sentences, 32, 32, Path(tmp))
        print("| bundle | run | 1-sentence c=64 sent/s | 32-sentence c=4 sent/s | ratio | ms/req (1) | ms/sent (32) | extra |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name in args.models.split(","):
            server = Server(args.models_dir / name, args.server_flag)
            try:
                flood(server.port, one, 64, 3)  # warm-up
                for run in range(1, args.repeats + 1):
                    rps1, ms1 = measure(server.port, server.proc.pid, one, 64, args.seconds)
                    rps32, ms32 = measure(server.port, server.proc.pid, many, 4, args.seconds)
                    per_sentence = ms32 / 32
                    print(
                        f"| {name} | {run} | {rps1:.0f} | {rps32 * 32:.0f} | {rps1 / (rps32 * 32):.2f} | "
                        f"{ms1:.3f} | {per_sentence:.3f} | {ms1 - per_sentence:.3f} |",
                        flush=True,
                    )
            finally:
                server.close()


if __name__ == "__main__":
    main()
