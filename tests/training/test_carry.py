"""A checkpoint packed into small parts (for a machine that returns only a few small files) unpacks to one that
resumes and exports: the same weights, the fixed word vectors rebuilt, Adam's second moment kept."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from tests.training.conftest import tiny_config
from thoughtvec.training.train.carry import MANIFEST, pack, read_packed, unpack
from thoughtvec.training.train.trainer import Trainer

TINY = {"input_words": 2000, "hidden": 32, "coupling_hidden": 16}


@pytest.fixture(scope="module")
def run(toy_corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("carry") / "run"
    Trainer(tiny_config("invertible-linear", toy_corpus, out, max_steps=6, model=dict(TINY))).train()
    return out


def test_pack_drops_what_build_remakes_and_unpack_restores_it(run, tmp_path):
    ck = torch.load(run / "checkpoint.pt", map_location="cpu", weights_only=False)
    assert ck["rebuilt"] == ["words.table"]
    manifest = pack(ck, tmp_path / "packed", part_bytes=64 * 1024)
    parts = sorted(p.name for p in (tmp_path / "packed").glob("checkpoint.pt.*"))
    assert parts == manifest["parts"] and len(parts) > 1
    assert all((tmp_path / "packed" / p).stat().st_size <= 64 * 1024 for p in parts)
    assert "words.table" not in read_packed(tmp_path / "packed")["model"]

    whole = unpack(tmp_path / "packed")
    assert whole["model"].keys() == ck["model"].keys()
    assert all(torch.equal(whole["model"][k], ck["model"][k]) for k in ck["model"])
    for i, s in ck["optimizer"]["state"].items():
        t = whole["optimizer"]["state"][i]
        assert torch.equal(t["step"], s["step"])
        assert not t["exp_avg"].any()
        assert t["exp_avg_sq"].dtype == torch.float32
        assert torch.allclose(t["exp_avg_sq"], s["exp_avg_sq"], rtol=1e-2, atol=0)


def test_an_unpacked_checkpoint_resumes(run, toy_corpus, tmp_path):
    ck = torch.load(run / "checkpoint.pt", map_location="cpu", weights_only=False)
    pack(ck, tmp_path / "packed")
    again = tmp_path / "again"
    again.mkdir()
    torch.save(unpack(tmp_path / "packed"), again / "checkpoint.pt")
    cfg = tiny_config("invertible-linear", toy_corpus, again, max_steps=9, model=dict(TINY))
    Trainer(cfg, resume=True, explicit=frozenset({"max_steps"})).train()
    assert torch.load(again / "checkpoint.pt", map_location="cpu", weights_only=False)["progress"]["step"] == 9


def test_a_part_from_another_pack_is_refused_and_stale_parts_go(run, tmp_path):
    ck = torch.load(run / "checkpoint.pt", map_location="cpu", weights_only=False)
    small = pack(ck, tmp_path / "a", part_bytes=64 * 1024)
    pack(ck, tmp_path / "a")  # one part now: the earlier pack's other parts are removed
    assert sorted(p.name for p in (tmp_path / "a").glob("checkpoint.pt.*")) == ["checkpoint.pt.00"]
    assert len(small["parts"]) > 1
    (tmp_path / "a" / "checkpoint.pt.00").write_bytes(b"x" + (tmp_path / "a" / "checkpoint.pt.00").read_bytes()[1:])
    with pytest.raises(ValueError, match="do not match"):
        read_packed(tmp_path / "a")
    manifest = json.loads((tmp_path / "a" / MANIFEST).read_text())
    (tmp_path / "a" / manifest["parts"][0]).unlink()
    with pytest.raises(ValueError, match="missing"):
        read_packed(tmp_path / "a")


def test_the_cli_packs_unpacks_and_never_overwrites(run, tmp_path):
    cli = [sys.executable, "-m", "thoughtvec", "checkpoint"]
    packed = subprocess.run([*cli, "pack", "--checkpoint", str(run / "checkpoint.pt"), "--out", str(tmp_path / "p"),
                             "--part-mb", "0.1"], capture_output=True, text=True, check=True)  # fmt: skip
    assert "packed step 6" in packed.stdout and "part(s)" in packed.stdout
    out = tmp_path / "whole.pt"
    done = subprocess.run([*cli, "unpack", "--packed", str(tmp_path / "p"), "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0 and out.is_file(), done.stderr
    again = subprocess.run([*cli, "unpack", "--packed", str(tmp_path / "p"), "--out", str(out)], capture_output=True, text=True)
    assert again.returncode == 2 and "exists" in again.stderr
