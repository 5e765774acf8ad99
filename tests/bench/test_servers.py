"""``python -m thoughtvec.bench.servers``: each kind of server it compares serves the app (granian where installed)."""

from __future__ import annotations

import importlib.util
import json
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
        proc.terminate()
        proc.wait(30)
