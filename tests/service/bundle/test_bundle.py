import json
import shutil

import numpy as np
import pytest

from tests.tiny_bundle import make_tiny_bundle
from thoughtvec.service.bundle.format import load_bundle
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.errors import BundleError, InputTooLong, UnknownView


@pytest.fixture
def bundle_dir(tmp_path):
    make_tiny_bundle(tmp_path / "tiny")
    return tmp_path / "tiny"


def _edit(bundle_dir, **changes):
    meta = json.loads((bundle_dir / "bundle.json").read_text())
    for dotted, value in changes.items():
        node = meta
        *parents, leaf = dotted.split("__")
        for p in parents:
            node = node[p]
        if value is KeyError:
            del node[leaf]
        else:
            node[leaf] = value
    (bundle_dir / "bundle.json").write_text(json.dumps(meta))


def test_valid_bundle_loads(bundle_dir):
    b = load_bundle(bundle_dir)
    assert b.name == "tiny" and len(b.vocab) == b.spec.vocabulary.size


@pytest.mark.parametrize(
    "changes, field, words",
    [
        ({"schema_version": 2}, "schema_version", "1"),
        ({"name": "Bad Name!"}, "name", "pattern"),
        ({"family": "word2vec"}, "family", "skip-thought"),
        ({"max_input_tokens": 0}, "max_input_tokens", "greater than 0"),
        ({"vocabulary__size": 70, "vocabulary__trained_size": 70}, "vocabulary.size", "vocab.txt has 76 tokens"),
        ({"vocabulary__trained_size": 10_000}, "vocabulary", "exceeds"),
        ({"vocabulary__unk_id": 5}, "vocabulary.unk_id", "1"),
        ({"default_view": "nope"}, "bundle.json", "default_view 'nope'"),
        ({"views__mean__dim": -1}, "views.mean.dim", "greater than 0"),
        ({"onnx__file": "../x.onnx"}, "onnx.file", "inside the bundle"),
        ({"onnx__file": "missing.onnx"}, "onnx.file", "missing"),
        ({"onnx__cpu_runtime": "tensorrt"}, "onnx.cpu_runtime", "'onnxruntime' or 'openvino'"),
        ({"tokenizer__kind": "bpe"}, "tokenizer.kind", "basic-ptb-v1"),
        ({"tokenizer__kind": "hf-tokenizers"}, "tokenizer", "names its file"),
        ({"tokenizer__file": "tokenizer.json"}, "tokenizer", "file is for hf-tokenizers"),
        (
            {"tokenizer__kind": "hf-tokenizers", "tokenizer__file": "tokenizer.json", "tokenizer__append_eos": False},
            "bundle.json",
            "an hf-tokenizers one has none",
        ),
        (
            {
                "tokenizer__kind": "hf-tokenizers",
                "tokenizer__file": "tokenizer.json",
                "tokenizer__append_eos": False,
                "vocabulary": KeyError,
            },
            "tokenizer.file",
            "missing",
        ),
        ({"views__mean__axes": {"file": "postprocess.npz", "key": "mean", "count": 9}}, "views.mean", "exceeds the view's dim 8"),
        ({"views__mean__axes": {"file": "postprocess.npz", "key": "mean", "count": 4}}, "views.mean.axes.file", "missing"),
        ({"colour": "blue"}, "colour", "Extra inputs"),  # a typo is an error, never ignored
        ({"views": KeyError}, "views", "Field required"),
        ({"heads": {"relatedness": {"file": "r.npz", "view": "zzz"}}}, "bundle.json", "heads.relatedness.view"),
    ],
)
def test_each_bad_field_names_itself(bundle_dir, changes, field, words):
    _edit(bundle_dir, **changes)
    with pytest.raises(BundleError) as e:
        load_bundle(bundle_dir)
    msg = str(e.value)
    assert str(bundle_dir) in msg and f": {field}:" in msg and words in msg, msg


def test_missing_folder_and_json(tmp_path, bundle_dir):
    with pytest.raises(BundleError, match="no such bundle folder"):
        load_bundle(tmp_path / "nothing")
    (bundle_dir / "bundle.json").write_text("{not json")
    with pytest.raises(BundleError, match="bundle.json: not valid JSON"):
        load_bundle(bundle_dir)
    (bundle_dir / "bundle.json").unlink()
    with pytest.raises(BundleError, match="bundle.json: missing"):
        load_bundle(bundle_dir)


def test_bad_vocabulary_file(bundle_dir):
    (bundle_dir / "vocab.txt").write_text("<pad>\n<unk>\n<eos>\nword\nword\n")
    with pytest.raises(BundleError, match="vocabulary.file: vocabulary token 'word' appears twice"):
        load_bundle(bundle_dir)


def test_graph_must_match_views(bundle_dir):
    _edit(bundle_dir, views__mean__output="nothing_here")
    with pytest.raises(BundleError, match="views.mean.output: graph has no output 'nothing_here'"):
        Encoder.load(bundle_dir)


def test_graph_dim_must_match(bundle_dir):
    _edit(bundle_dir, views__mean__dim=9)
    with pytest.raises(BundleError, match=r"views.mean.dim: is 9 but graph output 'mean' has shape"):
        Encoder.load(bundle_dir)


def test_corrupt_onnx(bundle_dir):
    (bundle_dir / "model.onnx").write_bytes(b"not a graph")
    with pytest.raises(BundleError, match="onnx.file: ONNX Runtime cannot load it"):
        Encoder.load(bundle_dir)


def test_rewrite_is_atomic(tmp_path):
    make_tiny_bundle(tmp_path / "b", seed=1)
    first = (tmp_path / "b" / "model.onnx").read_bytes()
    make_tiny_bundle(tmp_path / "b", seed=2)
    assert (tmp_path / "b" / "model.onnx").read_bytes() != first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]  # no temporary folders left behind


def test_encoder_padding_invariance(bundle_dir):
    enc = Encoder.load(bundle_dir)
    texts = ["the cat sat", "a big red car drove fast in the old city , and the man read a letter", "dog", ""]
    together = enc.encode(texts, normalize=False, batch_size=64)
    alone = np.stack([enc.encode([t], normalize=False)[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-6)


def test_encoder_views_truncation_and_unknown_words(bundle_dir):
    enc = Encoder.load(bundle_dir)
    assert enc.encode(["the cat"]).shape == (1, 8)
    assert enc.encode(["the cat"], "meanmax").shape == (1, 16)
    np.testing.assert_allclose(np.linalg.norm(enc.encode(["the cat"]), axis=1), 1.0, rtol=1e-6)
    with pytest.raises(UnknownView, match="has no view 'zzz'"):
        enc.encode(["x"], "zzz")
    assert enc.token_ids("zebra qwerty") == [1, 1, 2]  # <unk> <unk> <eos>
    long = " ".join(["cat"] * 100)
    with pytest.raises(InputTooLong, match="input\\[0\\] has 101 tokens; the limit is 32"):
        enc.encode([long], truncation="reject")
    ids = enc.fit(enc.token_ids(long), "truncate")
    assert len(ids) == 32 and ids[-1] == 2


def test_discover(tmp_path):
    from thoughtvec.service.bundle.format import discover_bundles

    make_tiny_bundle(tmp_path / "b1", name="b1")
    make_tiny_bundle(tmp_path / "b2", name="b2")
    (tmp_path / "notabundle").mkdir()
    shutil.copytree(tmp_path / "b1", tmp_path / ".hidden")
    assert [p.name for p in discover_bundles(tmp_path)] == ["b1", "b2"]


def test_a_silent_cpu_fallback_from_cuda_is_reported(bundle_dir, monkeypatch, caplog):
    """onnxruntime-gpu falls back to the CPU without an error when CUDA's libraries do not load."""
    import onnxruntime as ort

    from thoughtvec.service.core import encoder as encoder_mod

    real = ort.InferenceSession
    asked, preloads = [], []

    def session(path, sess_options=None, providers=()):
        asked.append(list(providers))
        return real(path, sess_options=sess_options, providers=["CPUExecutionProvider"])  # what a failed CUDA load gives

    monkeypatch.setattr(encoder_mod.ort, "InferenceSession", session)
    monkeypatch.setattr(encoder_mod, "preload_cuda_libraries", lambda: preloads.append(1))
    with caplog.at_level("WARNING", logger="thoughtvec.service.core.encoder"):
        enc = Encoder.load(bundle_dir, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert asked == [["CUDAExecutionProvider", "CPUExecutionProvider"]] and preloads == [1]
    assert enc.device == "cpu" and enc.providers == ["CPUExecutionProvider"]
    assert "CUDAExecutionProvider was asked for but did not load" in caplog.text

    caplog.clear()
    preloads.clear()
    cpu = Encoder.load(bundle_dir, providers=["CPUExecutionProvider"])  # nothing asked, nothing to report
    assert cpu.device == "cpu" and preloads == [] and "did not load" not in caplog.text


def _add_postprocessed_view(bundle_dir, center=True, k=2, comps=None, mean=None, dim=8):
    from thoughtvec.service.bundle import postprocess

    rng = np.random.default_rng(3)
    q = np.linalg.qr(rng.standard_normal((dim, dim)))[0]
    m = postprocess.Postprocess(
        rng.standard_normal(dim).astype(np.float32) if mean is None else mean, q[:k].astype(np.float32) if comps is None else comps
    )
    postprocess.save(bundle_dir / "postprocess.npz", {"mean": m})
    meta = json.loads((bundle_dir / "bundle.json").read_text())
    meta["views"]["mean-pp"] = {
        "output": "mean",
        "dim": dim,
        "pooling": "unsupervised",
        "postprocess": {"file": "postprocess.npz", "key": "mean", "center": center, "components": k},
    }
    (bundle_dir / "bundle.json").write_text(json.dumps(meta))
    return m


def test_a_post_processed_view_shares_its_output_and_applies_the_map(bundle_dir):
    m = _add_postprocessed_view(bundle_dir)
    enc = Encoder.load(bundle_dir)
    texts = ["the cat sat on the mat .", "a dog", "nothing here at all , really , nothing"]
    raw = enc.encode(texts, "mean", normalize=False)
    pp = enc.encode(texts, "mean-pp", normalize=False)
    expected = (raw - m.mean) - ((raw - m.mean) @ m.components.T) @ m.components
    np.testing.assert_allclose(pp, expected, atol=1e-5)
    assert np.abs(pp @ m.components.T).max() < 1e-5  # nothing left along the removed directions
    both = enc.run_views([enc.token_ids(texts[0])], ["mean", "mean-pp"])  # one graph run gives both
    np.testing.assert_allclose(both["mean"][0], raw[0], atol=1e-6)
    # still padding-invariant: alone vs beside a longer sentence
    alone = enc.encode([texts[1]], "mean-pp")[0]
    padded = enc.encode([texts[1], texts[2]], "mean-pp", batch_size=2)[0]
    np.testing.assert_allclose(alone, padded, atol=1e-6)


@pytest.mark.parametrize("bad, words", [({"k": 3}, "expected (8,) and (3, 8)"), ({"mean": np.full(8, np.nan, np.float32)}, "finite")])
def test_a_post_processing_map_that_does_not_fit_its_view_is_refused(bundle_dir, bad, words):
    k = bad.pop("k", 2)
    _add_postprocessed_view(bundle_dir, comps=np.eye(8, dtype=np.float32)[:2], k=k, **bad)
    with pytest.raises(BundleError) as e:
        Encoder.load(bundle_dir)
    assert e.value.field == "views.mean-pp.postprocess" and words in str(e.value)


@pytest.mark.parametrize("k, ok", [(7, True), (8, False)])
def test_a_map_may_remove_any_number_of_components_below_the_views_dim(bundle_dir, k, ok):
    """It was capped at 64, which refused the 80 components dev chose for 1024-d views."""
    _add_postprocessed_view(bundle_dir, k=k)
    if ok:
        assert Encoder.load(bundle_dir).postprocess["mean-pp"].components.shape == (k, 8)
        return
    with pytest.raises(BundleError) as e:
        Encoder.load(bundle_dir)
    assert "postprocess.components 8 must be below the view's dim 8" in str(e.value)


def test_a_wide_view_may_remove_more_than_64_components(bundle_dir):
    from thoughtvec.service.bundle.format import parse_spec

    meta = json.loads((bundle_dir / "bundle.json").read_text())
    pp = {"file": "postprocess.npz", "key": "w", "center": False, "components": 80}
    meta["views"]["wide"] = {"output": "wide", "dim": 1024, "pooling": "unsupervised", "postprocess": pp}
    assert parse_spec(meta, "b").views["wide"].postprocess.components == 80  # the spec alone: no graph output "wide" here


def test_two_views_may_not_be_the_same_output_with_the_same_processing(bundle_dir):
    _edit(bundle_dir, views__meanmax__output="mean", views__meanmax__dim=8)
    with pytest.raises(BundleError, match="same ONNX output"):
        load_bundle(bundle_dir)
