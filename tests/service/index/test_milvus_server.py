"""A Milvus server shared by replicas, and a Milvus that goes away and comes back.

Both run on the session's real Milvus standalone (tests/service/index/conftest.py, skipped where
it cannot start, failed there under CI): two ``thoughtvec serve`` processes on 127.0.0.1 see each other's writes; a
stopped Milvus is a 503 ``storage_unavailable`` naming it within a bounded time, and the same
server process answers again, with the data, once Milvus is back.
"""

from __future__ import annotations

import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.service.conftest import SENTENCES, serve_process, serve_test, settings_for
from tests.service.index.milvus_support import need, prefix, unavailable

need("pymilvus")


def start_replica(models_dir: Path, uri: str, coll_prefix: str) -> tuple[subprocess.Popen, str]:
    return serve_process(models_dir, "--index-backend", "milvus", "--milvus-uri", uri, "--milvus-collection-prefix", coll_prefix)


def test_two_replicas_share_indexes_and_writes(milvus_server, models_dir):
    coll_prefix = prefix()
    procs = []
    try:
        (pa, a), (pb, b) = (
            start_replica(models_dir, milvus_server.uri, coll_prefix),
            start_replica(models_dir, milvus_server.uri, coll_prefix),
        )
        procs = [pa, pb]
        with httpx.Client(base_url=a, timeout=30) as ca, httpx.Client(base_url=b, timeout=30) as cb:
            assert ca.post("/v1/indexes", json={"name": "shared", "model": "tiny"}).status_code == 201
            assert [s["name"] for s in cb.get("/v1/indexes").json()["data"]] == ["shared"]  # created on A, listed by B
            assert cb.post("/v1/indexes", json={"name": "shared", "model": "tiny"}).status_code == 409
            for i, s in enumerate(SENTENCES):  # each write through one replica is found by the next search through the other
                writer, reader = (ca, cb) if i % 2 == 0 else (cb, ca)
                assert (
                    writer.post(
                        "/v1/indexes/shared/documents", json={"documents": [{"id": f"s{i}", "text": s, "metadata": {"i": i}}]}
                    ).status_code
                    == 200
                )
                top = reader.post("/v1/search", json={"index": "shared", "query": s, "k": 1}).json()["results"][0][0]
                assert (top["id"], top["metadata"]) == (f"s{i}", {"i": i})
            assert ca.post("/v1/indexes/shared/documents", json={"documents": [{"id": "s1", "text": "again"}]}).status_code == 409
            assert cb.post("/v1/indexes/shared/documents/delete", json={"ids": ["s0"]}).json()["deleted"] == ["s0"]
            assert "s0" not in [
                h["id"] for h in ca.post("/v1/search", json={"index": "shared", "query": SENTENCES[0], "k": 7}).json()["results"][0]
            ]
            assert ca.get("/v1/indexes/shared").json()["documents"] == len(SENTENCES) - 1
            assert cb.delete("/v1/indexes/shared").status_code == 204
            assert ca.get("/v1/indexes/shared").status_code == 404
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def test_milvus_down_is_a_bounded_503_naming_it_and_recovers(milvus_server, models_dir, tmp_path):
    """Runs last in this file: it stops the session's server and starts it again."""
    settings = settings_for(
        models_dir,
        tmp_path / "idx",
        index_backend="milvus",
        milvus_uri=milvus_server.uri,
        milvus_collection_prefix=prefix(),
        milvus_timeout_s=1,
        milvus_retries=1,
    )
    with serve_test(settings) as c:
        c.post("/v1/indexes", json={"name": "docs", "model": "tiny"})
        assert c.post("/v1/indexes/docs/documents", json={"documents": [{"id": "a", "text": SENTENCES[0]}]}).status_code == 200
        milvus_server.stop()
        calls = [
            lambda: c.post("/v1/search", json={"index": "docs", "query": SENTENCES[0], "k": 1}),
            lambda: c.post("/v1/indexes/docs/documents", json={"documents": [{"id": "b", "text": SENTENCES[1]}]}),
            lambda: c.get("/v1/indexes"),
            lambda: c.get("/v1/indexes/docs"),
        ]
        took = []
        for call in calls:
            t = time.perf_counter()
            r = call()
            took.append(time.perf_counter() - t)
            assert r.status_code == 503 and r.json()["error"]["code"] == "storage_unavailable", r.text
            message = r.json()["error"]["message"]  # names the server, not its address (the log has it)
            assert "the Milvus server is unavailable" in message and milvus_server.uri not in message
            assert int(r.headers["Retry-After"]) >= 1
            assert took[-1] < 30, f"503 after {took[-1]:.1f} s"
        # many at once: the first failure drops the shared client and closes its channel under the others, which
        # must still answer 503 with Retry-After (never 500); and once more after the fail-fast window
        for _ in range(2):
            time.sleep(settings.milvus_timeout_s + 0.2)
            with ThreadPoolExecutor(8) as pool:
                answers = list(pool.map(lambda i: calls[i % len(calls)](), range(16)))
            for r in answers:
                assert r.status_code == 503 and r.headers.get("Retry-After"), r.text
        print(f"answers while Milvus was down took {', '.join(f'{t:.2f}' for t in took)} s")
        up = milvus_server.start()  # same data folder and port
        t = time.perf_counter()
        deadline = time.time() + 90
        while time.time() < deadline:  # the same process, no restart: it reconnects by itself (503 while Milvus recovers, ~25 s here)
            r = c.post("/v1/search", json={"index": "docs", "query": SENTENCES[0], "k": 1})
            if r.status_code == 200:
                break
            time.sleep(0.5)
        assert r.status_code == 200, r.text
        print(f"Milvus restarted in {up:.1f} s; the first search answered {time.perf_counter() - t:.1f} s later")
        assert r.json()["results"][0][0]["id"] == "a"
        assert c.post("/v1/indexes/docs/documents", json={"documents": [{"id": "b", "text": SENTENCES[1]}]}).status_code == 200


@pytest.mark.parametrize("ci", ["true", ""])
def test_a_milvus_that_cannot_run_fails_under_ci_and_skips_elsewhere(monkeypatch, ci):
    monkeypatch.setenv("CI", ci)
    outcome = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(outcome, match="cannot start here"):
        unavailable("the Milvus standalone server cannot start here")
