"""``python -m thoughtvec.bench.servers``: each kind of server it compares serves the app (granian where installed), and a
peer started by a command is flooded beside it with the same bodies."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
import urllib.request

import pytest

from tests.tiny_bundle import make_tiny_bundle
from thoughtvec.bench import servers


@pytest.mark.parametrize("kind", servers.KINDS)
def test_each_kind_serves_the_app_and_its_cpu_is_read(tmp_path, kind):
    if kind == "granian" and importlib.util.find_spec("granian") is None:
        pytest.skip("granian is not installed (pip install granian==2.8.7)")
    bundle = tmp_path / "tiny"
    make_tiny_bundle(bundle, name="tiny")
    proc, port = servers.start(kind, bundle)
    try:
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/embeddings",
            data=json.dumps({"input": "the cat sat", "model": "tiny"}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200 and len(json.load(r)["data"][0]["embedding"]) == 8
        assert servers.tree_cpu_seconds(proc.pid) > 0
    finally:
        servers.stop(proc)


def test_a_peer_started_by_a_command_is_flooded_beside_thoughtvec(tmp_path, capsys):
    """The peer here is another thoughtvec serve (what a peer is does not matter: a command, a path, a ready route)."""
    if shutil.which("wrk") is None:
        pytest.skip("wrk is not installed (Debian: apt-get install wrk)")
    bundle = tmp_path / "models" / "tiny"
    make_tiny_bundle(bundle, name="tiny")
    cmd = (f"{sys.executable} -m thoughtvec.service.cli serve --models-dir {bundle.parent} --port {{port}} "
           f"--no-build-default-index --log-level warning --index-dir {tmp_path / 'idx'}")  # fmt: skip
    peer = servers.Peer(cmd, path="/v1/embeddings", ready="/ready", name="other")
    servers.compare(bundle, ["uvicorn", peer], seconds=1, repeats=1, sentences=["the cat sat on the mat .", "a dog ran"])
    out = capsys.readouterr().out
    rows = re.findall(
        r"^\| 1 \| (thoughtvec \(uvicorn\)|other) \| (1|32) \| (64|4) \| (\d+) \| [\d.]+ \| [\d.]+ \| ([\d.]+) \| (\d+) \|$", out, re.M
    )
    assert sorted((r[0], r[1]) for r in rows) == [
        ("other", "1"),
        ("other", "32"),
        ("thoughtvec (uvicorn)", "1"),
        ("thoughtvec (uvicorn)", "32"),
    ]
    assert all(int(r[3]) > 0 and float(r[4]) > 0 and r[5] == "0" for r in rows)  # served, its CPU read, no errors
    assert len(re.findall(r"^\| (1|32) \| (64|4) \| \d+ \| \d+ \| x[\d.]+ \| [\d.]+ \| [\d.]+ \|$", out, re.M)) == 2  # the summary


def test_a_peer_that_refuses_the_bodies_is_not_measured(tmp_path):
    bundle = tmp_path / "tiny"
    make_tiny_bundle(bundle, name="tiny")
    proc, port = servers.start("uvicorn", bundle)
    try:
        with pytest.raises(RuntimeError, match="other does not answer the benchmark's request at /embeddings"):
            servers.check_answers(port, "/embeddings", b'{"input": "the cat", "model": "tiny"}', "other")
        servers.check_answers(port, "/v1/embeddings", b'{"input": "the cat", "model": "tiny"}', "thoughtvec")
    finally:
        servers.stop(proc)
