"""The compact-vectors retrieval table (``training/evaluation/compact_retrieval.py``) on a tiny BEIR folder and the tiny
bundle: its float row is the harness's dense ranker, and each type's bytes are what the server answers."""

from __future__ import annotations

import pytest

from tests.tiny_bundle import make_tiny_bundle
from thoughtvec.training.evaluation import beir, compact_retrieval, rankers, retrieval, sources

from .test_retrieval import write_beir


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("compact-retrieval")
    make_tiny_bundle(root / "tiny", name="tiny")
    return root / "tiny", beir.load(write_beir(root / "toy"))


def test_the_float_row_is_the_dense_rankers_and_each_type_takes_its_bytes(setup):
    bundle, task = setup
    rows = compact_retrieval.measure(bundle, task, threads=1)
    assert [(r["type"], r["bytes"]) for r in rows] == [
        ("float", 32), ("int8", 8), ("int8", 8), ("uint8", 8), ("uint8", 8), ("binary, ubinary", 1)]  # fmt: skip
    (dense,) = rankers.DenseRanker.for_views(sources.BundleSource(bundle, truncation="split"), ["mean"], task)
    record = retrieval.evaluate(dense, task, log=lambda _: None)
    assert rows[0]["ndcg"]["mean"] == pytest.approx(record["metrics"]["ndcg@10"]["mean"], abs=1e-12)
    assert rows[0]["diff"]["diff"] == 0.0 and all(0.0 <= r["ndcg"]["mean"] <= 1.0 for r in rows)


def test_the_command_prints_a_row_per_type(setup, capsys):
    bundle, _ = setup
    compact_retrieval.main(["--bundle", str(bundle), "--data", str(bundle.parent / "toy"), "--threads", "1"])
    out = capsys.readouterr().out
    assert out.startswith("toy: 5 documents, 3 queries; int8/uint8 ranges from 256 calibration sentences")
    assert sum(line.startswith("| tiny (mean, 8) |") for line in out.splitlines()) == 6
