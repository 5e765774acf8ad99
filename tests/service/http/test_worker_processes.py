"""`thoughtvec serve --workers 2` as run: the default index built before the workers start, /ready and /metrics
answered for both workers by either, index writes refused (one process writes a folder), a clean stop.
Bounded request counts and waits."""

from __future__ import annotations

import json
import signal
import time

import httpx
import numpy as np

from tests.service.conftest import SENTENCES, serve_process, write_sample
from thoughtvec.service.core.encoder import Encoder


def until(check, timeout: float, what: str):
    """``check()``'s first truthy answer, polled; a server that never gets there fails the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {timeout:.0f} s")


def requests_counted(metrics: str) -> float:
    for line in metrics.splitlines():
        if line.startswith('thoughtvec_requests_total{method="POST",route="/v1/embeddings",status="200"}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_two_workers_serve_one_port_and_answer_for_each_other(models_dir, tmp_path):
    sample = write_sample(tmp_path / "sample.tsv.gz", n=40)
    flags = ["--workers", "2", "--build-default-index", "--index-dir", str(tmp_path / "idx"), "--search-sample", str(sample)]
    proc, base = serve_process(models_dir, *flags, env={"TMPDIR": str(tmp_path)})  # the group's folder lands there
    try:
        ready = httpx.get(base + "/ready").json()
        assert ready["workers"] == {"processes": 2, "ready": 2} and ready["indexes"] == {"default": "ready"}

        want = Encoder.load(models_dir / "tiny").encode(SENTENCES[:4])
        for _ in range(10):  # a new connection each: the kernel hands each to either worker
            got = httpx.post(base + "/v1/embeddings", json={"model": "tiny", "input": SENTENCES[:4], "encoding_format": "float"})
            assert got.status_code == 200
            np.testing.assert_allclose([d["embedding"] for d in got.json()["data"]], want, atol=1e-6)

        # every worker's requests in either one's /metrics: the sum of what each published (at most a second old)
        until(lambda: requests_counted(httpx.get(base + "/metrics").text) == 10, 30, "/metrics counting both workers' requests")
        group = next(tmp_path.glob("thoughtvec-workers-*"))

        def published() -> list[dict]:  # each worker's own file, written about once a second
            return [json.loads(p.read_text()) for p in group.glob("*.json")]

        until(lambda: sum(requests_counted(p["metrics"]) for p in published()) == 10, 30, "each worker publishing its requests")
        assert len(published()) == 2

        # the default index was built before the workers started: both search it, neither writes
        assert httpx.get(base + "/v1/indexes/default").json()["documents"] == 40
        hit = httpx.post(base + "/v1/search", json={"query": "the old man read a book", "k": 3}).json()
        assert hit["index"] == "default" and len(hit["results"][0]) == 3
        for method, path, body in (("POST", "/v1/indexes", {"name": "mine"}), ("DELETE", "/v1/indexes/default", None)):
            refused = httpx.request(method, base + path, json=body)
            assert refused.status_code == 409, refused.text
            error = refused.json()["error"]
            assert error["code"] == "indexes_read_only" and error["field"] == "index" and "--workers 1" in error["message"]

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        assert not group.exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
