"""The shared training loop: a killed run resumes to the same step count; DDP ranks stay equal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.training.conftest import tiny_config
from thoughtvec.training.train.trainer import Trainer

REPO = Path(__file__).resolve().parents[2]


def _train_cmd(corpus: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "thoughtvec", "train", "--variant", "uni-skip", "--corpus", str(corpus), "--out", str(out),
            "--max-steps", "300", "--batch-size", "16", "--holdout", "100", "--checkpoint-every", "25", "--log-every", "25",
            "--eval-every", "1000", "--threads", "1", "--set", "vocab_size=60", "--set", "emb_dim=16", "--set", "hidden=24",
            "--set", "dec_hidden=24", "--set", "num_sampled=16", *extra]  # fmt: skip


def test_killed_run_resumes_to_the_same_step_count(toy_corpus, tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen(_train_cmd(toy_corpus, out), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ckpt = out / "checkpoint.pt"
    deadline = time.time() + 60
    while not ckpt.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "training finished before it could be killed: " + proc.stderr.read().decode()[-2000:]
    proc.send_signal(signal.SIGKILL)  # no chance to save anything: resume must use the last periodic checkpoint
    proc.wait(timeout=30)
    step_at_kill = torch.load(ckpt, weights_only=False)["progress"]["step"]
    assert 0 < step_at_kill < 300

    done = subprocess.run(_train_cmd(toy_corpus, out, "--resume"), cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    ck = torch.load(ckpt, weights_only=False)
    assert ck["progress"]["step"] == 300 and ck["final"]["steps"] == 300
    steps = [json.loads(x)["step"] for x in (out / "train_log.jsonl").read_text().splitlines()]
    assert steps == sorted(steps) and len(steps) == len(set(steps)) and steps[-1] == 300  # no step logged twice


def test_resume_refuses_other_settings_and_fresh_run_refuses_overwrite(toy_corpus, tmp_path):
    Trainer(tiny_config("uni-skip", toy_corpus, tmp_path / "r", max_steps=5)).train()
    with pytest.raises(FileExistsError, match="--resume"):
        Trainer(tiny_config("uni-skip", toy_corpus, tmp_path / "r", max_steps=5))
    with pytest.raises(ValueError, match="cannot change \\['batch_size'\\]"):
        Trainer(tiny_config("uni-skip", toy_corpus, tmp_path / "r", batch_size=8), resume=True, explicit=frozenset({"batch_size"}))
    longer = Trainer(tiny_config("uni-skip", toy_corpus, tmp_path / "r", max_steps=9), resume=True, explicit=frozenset({"max_steps"}))
    longer.train()
    assert torch.load(tmp_path / "r" / "checkpoint.pt", weights_only=False)["progress"]["step"] == 9


def test_ddp_two_cpu_processes_end_with_identical_weights(toy_corpus, tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "0", "--standalone",
           str(REPO / "tests" / "training" / "ddp_worker.py"), str(toy_corpus), str(tmp_path)]  # fmt: skip
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    a, b = (torch.load(tmp_path / f"rank{r}.pt") for r in (0, 1))
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=0, msg=k)
    ck = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    assert ck["final"]["processes"] == 2 and ck["progress"]["step"] == 12
    for k in a:  # rank 0's checkpoint holds the same weights
        torch.testing.assert_close(ck["model"][k], a[k], rtol=0, atol=0, msg=k)


@pytest.mark.parametrize(
    "given, family, expected",
    [
        (None, {"early_stop": 3}, 3),  # unset: the family's (the AAE's)
        (0, {"early_stop": 3}, 0),  # an explicit 0 is "never", for every family
        (5, {"early_stop": 3}, 5),
        (None, {}, 0),  # a family without a default never stops early
    ],
)
def test_early_stop_zero_means_never_for_every_family(given, family, expected):
    from thoughtvec.training.train.config import TrainConfig

    cfg = TrainConfig(variant="mean-max-aae", early_stop=given).resolved({"batch_size": 64, **family})
    assert cfg.early_stop == expected and cfg.batch_size == 64
    assert cfg.resolved({"early_stop": 3}).early_stop == expected  # resolving again (a resume) keeps it


def test_family_settings_unset_are_none_and_resolved_in_one_place():
    from thoughtvec.training.train.config import TrainConfig

    cfg = TrainConfig()
    assert (cfg.batch_size, cfg.lr, cfg.clip, cfg.early_stop) == (None, None, None, None)
    done = cfg.resolved({"batch_size": 64, "lr": 2e-4, "clip": 5.0, "early_stop": 3})
    assert (done.batch_size, done.lr, done.clip, done.early_stop) == (64, 2e-4, 5.0, 3)
    assert TrainConfig(lr=0.01).resolved({"lr": 2e-4}).lr == 0.01
    with pytest.raises(ValueError, match="lr is 0; it must be above 0"):
        TrainConfig(lr=0)


def test_configs_of_older_checkpoints_still_load():
    """Checkpoints before the None pattern stored 0 (batch size, rate, clipping) and -1 (early stop) for "the family's"."""
    from thoughtvec.training.train.config import TrainConfig

    old = {"variant": "mean-max-aae", "batch_size": 0, "lr": 0.0, "clip": 0.0, "early_stop": -1, "model": {}}
    cfg = TrainConfig.from_dict(old).resolved({"batch_size": 64, "lr": 2e-4, "clip": 5.0, "early_stop": 3})
    assert (cfg.batch_size, cfg.lr, cfg.clip, cfg.early_stop) == (64, 2e-4, 5.0, 3)
    resolved = {"variant": "uni-skip", "batch_size": 128, "lr": 1e-3, "clip": 10.0, "early_stop": 0}  # what runs saved
    assert TrainConfig.from_dict(resolved).early_stop == 0


def test_train_help_comes_from_the_fields():
    import argparse

    from thoughtvec.training.commands import train
    from thoughtvec.training.train.config import TrainConfig

    sub = argparse.ArgumentParser().add_subparsers()
    train.register(sub)
    text = sub.choices["train"].format_help()
    for f in __import__("dataclasses").fields(TrainConfig):
        if f.name != "model":
            assert "--" + f.name.replace("_", "-") in text
    assert "0: never" in text and "(default 1234)" in text


def test_max_minutes_counts_every_session_of_a_run(toy_corpus, tmp_path, caplog):
    caplog.set_level("INFO", logger="thoughtvec.training.train.trainer")
    out = tmp_path / "r"

    def step() -> int:
        return torch.load(out / "checkpoint.pt", weights_only=False)["progress"]["step"]

    Trainer(tiny_config("uni-skip", toy_corpus, out, max_steps=30, max_minutes=1e-6)).train()  # out of time after a step
    first = step()
    assert 0 < first < 30 and "--max-minutes 1e-06 reached: the run has trained" in caplog.text
    again = frozenset({"max_minutes"})
    Trainer(tiny_config("uni-skip", toy_corpus, out, max_steps=30, max_minutes=1e-6), resume=True, explicit=again).train()
    assert step() == first + 1  # the earlier run's time counts: one step, then out of time again
    Trainer(tiny_config("uni-skip", toy_corpus, out, max_steps=30, max_minutes=0), resume=True, explicit=again).train()
    assert step() == 30
