"""docker/gpu/serve.sh and serve_bench.py, dry-run on the CPU: staged from carried archives as on the GPU machine
(without the CUDA provider, so ONNX Runtime stays on the CPU), the bundle is measured in process and served
under two settings, and serve.json holds every flood; servers side by side are summed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _bench(models_dir: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """serve.sh bench on the tiny bundle, staged from archives as they would be carried."""
    carried = tmp_path / "carried" / "serve"
    (tmp_path / "site").mkdir()
    carried.mkdir(parents=True)
    with tarfile.open(carried / "site.tar.xz", "w:xz") as tar:  # the serving install is this environment's here
        tar.add(tmp_path / "site", arcname="site")
    with tarfile.open(carried / "models.tar.xz", "w:xz") as tar:
        tar.add(models_dir / "tiny", arcname="tiny")
    env = {**os.environ, "PYTHON": sys.executable, "T": str(tmp_path / "tv"), "CARRIED": str(carried.parent), "OUT": str(tmp_path / "out")}
    return subprocess.run(["bash", "docker/gpu/serve.sh", "bench", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def test_the_gpu_serving_script_stages_what_was_carried_and_measures_every_setting(models_dir, tmp_path):
    args = [
        "--settings",
        "batch 32 (default),batch 512,batch 2048 / 4 workers",
        "--floods",
        "1x4,8x2",
        "--seconds",
        "0.5",
        "--batches",
        "4,16",
        "--client",
        "python",
    ]
    done = _bench(models_dir, tmp_path, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no CUDA provider staged" in done.stderr
    report = json.loads((tmp_path / "out" / "serve.json").read_text())
    tiny = report["bundles"]["tiny"]
    assert tiny["device"] == "cpu" and [r["batch"] for r in tiny["in_process"]] == [4, 16]
    assert all(r["graph_sent_s"] > 0 and r["encode_sent_s"] > 0 for r in tiny["in_process"])
    assert list(tiny["served"]) == ["batch 32 (default)", "batch 512", "batch 2048 / 4 workers"]
    for rows in tiny["served"].values():
        assert [(r["size"], r["concurrency"]) for r in rows] == [(1, 4), (8, 2)]
        assert all(r["sentences_s"] > 0 and r["errors"] == 0 and r["p99_ms"] >= r["p50_ms"] > 0 for r in rows)
    assert [r["server_cpu_ms"] is None for r in tiny["served"]["batch 2048 / 4 workers"]] == [True, True]  # the supervisor's alone
    assert 0 < tiny["served_over_graph"] and "processes" not in tiny
    assert "of the graph alone's best" in done.stdout


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed (Debian: apt-get install wrk)")
def test_servers_side_by_side_are_summed(models_dir, tmp_path):
    args = ["--settings", "batch 32 (default)", "--floods", "1x4,8x2", "--seconds", "1", "--batches", "4", "--processes", "1,2"]
    done = _bench(models_dir, tmp_path, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    tiny = json.loads((tmp_path / "out" / "serve.json").read_text())["bundles"]["tiny"]
    rows = tiny["processes"]
    assert [(r["processes"], r["size"], r["concurrency"]) for r in rows] == [(1, 1, 4), (1, 8, 2), (2, 1, 4), (2, 8, 2)]
    assert all(r["sentences_s"] > 0 and r["errors"] == 0 and r["p99_ms"] >= r["p50_ms"] > 0 for r in rows)
    assert tiny["processes_over_graph"] > 0 and "best of servers side by side" in done.stdout


def test_usage_is_printed_for_an_unknown_step(tmp_path):
    done = subprocess.run(["bash", "docker/gpu/serve.sh", "nonsense"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert (
        done.returncode == 2 and "usage: serve.sh cuda | serve.sh faiss | serve.sh bench" in done.stderr and "serve.sh run" in done.stderr
    )


def _staged_faiss(tmp_path: Path, init: str) -> subprocess.CompletedProcess:
    """'serve.sh faiss' on a carried archive whose faiss package is ``init``, then 'serve.sh run' asking which faiss imports."""
    carried = tmp_path / "carried"
    pkg = tmp_path / "faiss-gpu" / "faiss"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(init)
    (carried / "serve-faiss").mkdir(parents=True)
    with tarfile.open(carried / "serve-faiss" / "faiss.tar.xz", "w:xz") as tar:
        tar.add(tmp_path / "faiss-gpu", arcname="faiss-gpu")
    (tmp_path / "site").mkdir()
    (carried / "serve").mkdir()
    with tarfile.open(carried / "serve" / "site.tar.xz", "w:xz") as tar:
        tar.add(tmp_path / "site", arcname="site")
    with tarfile.open(carried / "serve" / "models.tar.xz", "w:xz"):
        pass
    env = {**os.environ, "PYTHON": sys.executable, "T": str(tmp_path / "tv"), "CARRIED": str(carried)}
    staged = subprocess.run(["bash", "docker/gpu/serve.sh", "faiss"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert staged.returncode == 0, staged.stderr
    return subprocess.run(
        ["bash", "docker/gpu/serve.sh", "run", sys.executable, "-c", "import faiss; print('faiss from', faiss.__file__)"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_staged_gpu_faiss_comes_first_where_it_imports(tmp_path):
    done = _staged_faiss(tmp_path, "__version__ = '9.9.9'\ndef get_num_gpus():\n    return 1\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "GPU FAISS 9.9.9 sees 1 GPU(s)" in done.stdout
    assert f"faiss from {tmp_path / 'tv' / 'faiss-gpu' / 'faiss' / '__init__.py'}" in done.stdout


def test_gpu_faiss_that_does_not_import_leaves_faiss_cpu(tmp_path):
    done = _staged_faiss(tmp_path, "raise RuntimeError('faiss-gpu: failed to load libcudart.so.13')\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "failed to load libcudart.so.13" in done.stderr and "faiss-cpu it is" in done.stderr
    assert "faiss from" in done.stdout and "faiss-gpu" not in done.stdout.split("faiss from")[-1]
