"""The SentEval readers as the evaluation uses them: published counts on the real data, and a
clear error for a missing, truncated or malformed file."""

from __future__ import annotations

import pytest

from thoughtvec.training.evaluation.datasets import DatasetError, default_root, load_task

from .fixtures.eval.senteval_tiny import write_senteval

# split sizes as PROVENANCE.md lists them (CR and MPQA without their empty lines)
COUNTS = {
    "MR": {"all": 10662}, "CR": {"all": 3771}, "SUBJ": {"all": 10000}, "MPQA": {"all": 10603},
    "TREC": {"train": 5452, "test": 500}, "SST2": {"train": 67349, "dev": 872, "test": 1821},
    "MRPC": {"train": 4076, "test": 1725}, "SICKRelatedness": {"train": 4500, "dev": 500, "test": 4927},
    "SICKEntailment": {"train": 4500, "dev": 500, "test": 4927}, "STSBenchmark": {"train": 5749, "dev": 1500, "test": 1379},
}  # fmt: skip

real = pytest.mark.skipif(not (default_root() / "MR").is_dir(), reason="SentEval data not found beside the repo")


@real
@pytest.mark.parametrize("name", list(COUNTS))
def test_real_counts(name):
    task = load_task(name)  # checks the per-file counts itself
    assert {k: len(v) for k, v in task.splits.items()} == COUNTS[name]


@real
def test_real_labels_and_scores():
    assert sum(load_task("MRPC").splits["train"].labels) == 2753
    trec = load_task("TREC").splits["train"]
    assert [trec.labels.count(i) for i in range(6)] == [86, 1162, 1250, 1223, 835, 896]
    sick = load_task("SICKRelatedness").splits["test"]
    assert min(sick.scores) >= 1 and max(sick.scores) <= 5


def test_missing_file_is_named(tmp_path):
    with pytest.raises(DatasetError, match=r"MR/rt-polarity\.pos: file not found"):
        load_task("MR", tmp_path)


def test_truncated_file_fails_the_count(tmp_path):
    write_senteval(tmp_path, n=10)
    with pytest.raises(DatasetError, match=r"10 examples, expected 5331"):
        load_task("MR", tmp_path)
    assert len(load_task("MR", tmp_path, check_counts=False).splits["all"]) == 20


def test_malformed_line_is_named(tmp_path):
    write_senteval(tmp_path, n=10)
    path = tmp_path / "SICK" / "SICK_trial.txt"
    path.write_text(path.read_text() + "99\tonly two columns\n")
    with pytest.raises(DatasetError, match=r"SICK_trial\.txt line 12: expected 5 tab-separated columns"):
        load_task("SICKRelatedness", tmp_path, check_counts=False)
