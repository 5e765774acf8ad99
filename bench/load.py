"""Load generation shared by the benchmarks: the sentences sent, the request bodies, wrk's script and report,
and the batching ratio's two floods. ``thoughtvec bench`` (``bench.py``) and the server comparison
(``servers.py``) both flood through these, so a comparison sends the same bodies the same way."""

from __future__ import annotations

import gzip
import json
import random
import re
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from thoughtvec.service.core.runtime import RuntimeDescription
from thoughtvec.service.settings import PACKAGE_DATA

FALLBACK_WORDS = (
    "the a man woman child dog cat walked ran sat on in under over house river city old new small big "
    "red green happy sad quickly slowly and but because when while letter book table door window"
).split()
RATIO_LEVELS = ((1, 64), (32, 4))  # (sentences per request, concurrency): the batching ratio's two floods


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


def served_runtime(port: int) -> str:
    """What runs the first model's graph on the server at ``port``, as ``/v1/models`` says: ``openvino 2026.4.1 at bfloat16``."""
    import urllib.request  # noqa: PLC0415

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=10) as r:
        return str(RuntimeDescription(**json.loads(r.read())["data"][0]["runtime"]))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Flood:
    """One closed-loop flood: ``concurrency`` connections, each sending its next request when the last answers."""

    size: int  # sentences per request
    concurrency: int
    requests: int
    seconds: float
    latency_ms: dict[int, float]  # percentile -> ms
    errors: int
    server_cpu_ms: float = float("nan")  # per request
    loop_cpu_ms: float = float("nan")  # per request, the server's main thread: the event loop (HTTP, admission, answers)
    client_cpu: float = float("nan")  # cores the load generator used (python client only)
    run_size: float = float("nan")  # sentences per ONNX run
    padding: float = float("nan")  # padded tokens run per real token

    @property
    def sentences_per_s(self) -> float:
        return self.requests * self.size / self.seconds


def request_bodies(sentences: list[str], size: int, n: int, model: str, encoding: str, seed: int = 1) -> list[bytes]:
    rng = random.Random(seed)
    bodies = []
    for _ in range(n):
        texts = [rng.choice(sentences) for _ in range(size)]
        bodies.append(json.dumps({"model": model, "input": texts[0] if size == 1 else texts, "encoding_format": encoding}).encode())
    return bodies


WRK_LUA = """wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local bodies = {%s}
local i = 0
request = function()
  i = i + 1
  return wrk.format(nil, "%s", nil, bodies[(i %% #bodies) + 1])
end
"""


def wrk_script(bodies: list[bytes], path: Path, url_path: str = "/v1/embeddings") -> Path:
    """A wrk script posting ``bodies`` in turn to ``url_path`` (Lua long strings: JSON needs no escaping there)."""
    path.write_text(WRK_LUA % (",\n".join("[==[" + b.decode() + "]==]" for b in bodies), url_path), encoding="utf-8")
    return path


_UNIT_MS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def parse_wrk(out: str, size: int, concurrency: int) -> Flood:
    """wrk's report (run with ``--latency``) as a :class:`Flood`; its own measured duration is used."""
    m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)\b", out)
    if m is None:
        raise RuntimeError(f"cannot read wrk's report:\n{out}")
    done, seconds = int(m[1]), float(m[2]) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[m[3]]
    lat = {int(p): float(v) * _UNIT_MS[u] for p, v, u in re.findall(r"^\s+(\d+)%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)}
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = sum(int(x) for x in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    return Flood(size, concurrency, done, seconds, lat, (int(bad[1]) if bad else 0) + socket_errors)


def start_wrk(port: int, script: Path, connections: int, seconds: float) -> subprocess.Popen:
    duration = f"-d{max(1, round(seconds))}s"  # wrk takes whole seconds
    # --timeout: a request queued behind a deep backlog is slow, not failed (wrk's default gives up at 2 s)
    cmd = ["wrk", "-t1", f"-c{connections}", duration, "--timeout", "60s", "--latency", "-s", str(script), f"http://127.0.0.1:{port}"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
