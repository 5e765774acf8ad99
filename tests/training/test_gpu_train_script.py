"""docker/gpu/train.sh, dry-run on the CPU: it trains, packs the checkpoint into $OUT, and a second run started
from what came back (carried as packed/) resumes it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
TINY = ["--set", "input_words=2000", "--set", "hidden=32", "--set", "coupling_hidden=16"]


def _run(tmp: Path, corpus: Path, out: Path, carried: Path, run: str, steps: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "OUT": str(out), "RUN": str(tmp / run), "DEVICE": "cpu", "PYTHON": sys.executable,
           "SITE": str(tmp / "site"), "CARRIED": str(carried)}  # fmt: skip
    args = ["--variant", "invertible-linear", "--corpus", str(corpus), "--max-steps", str(steps), "--batch-size", "32",
            "--holdout", "100", "--checkpoint-every", "2", "--threads", "1", *TINY]  # fmt: skip
    out.mkdir(parents=True)
    return subprocess.run(["bash", "docker/gpu/train.sh", "5", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_the_gpu_training_script_packs_into_out_and_resumes_from_what_came_back(toy_corpus, tmp_path):
    first = _run(tmp_path, toy_corpus, tmp_path / "out1", tmp_path / "none", "run1", steps=4)
    log = (tmp_path / "out1" / "train.log").read_text()
    assert first.returncode == 0, log
    assert "train exit 0" in log and "packed step 4" in log
    parts = sorted(p.name for p in (tmp_path / "out1").iterdir())
    assert "checkpoint.json" in parts and "checkpoint.pt.00" in parts

    carried = tmp_path / "carried"
    shutil.copytree(tmp_path / "out1", carried / "packed")
    second = _run(tmp_path, toy_corpus, tmp_path / "out2", carried, "run2", steps=6)
    log = (tmp_path / "out2" / "train.log").read_text()
    assert second.returncode == 0, log
    assert "wrote " in log and "(step 4)" in log  # unpacked, then resumed
    ck = torch.load(tmp_path / "run2" / "checkpoint.pt", map_location="cpu", weights_only=False)
    assert ck["progress"]["step"] == 6
