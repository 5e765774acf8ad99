"""Export: skip-thought bundles (uni, bi, combine) load in ONNX Runtime, match torch, ignore padding."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.tiny_bundle import make_tiny_bundle
from tests.training.conftest import NAMES, OBJECTS, PLACES, tiny_config
from thoughtvec.service.bundle.format import load_bundle
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.training.corpus.wordvecs import WordVectors
from thoughtvec.training.export.export import ExportOptions, export
from thoughtvec.training.export.onnx_export import PADDING_TOL, PARITY_TOL
from thoughtvec.training.train.expansion import ExpansionOptions, reexpand
from thoughtvec.training.train.trainer import Trainer

MIXED = ["anna walked into the garden .", "the letter was old and small and the coat was old and small too .",
         "ben", "", "zebra saw a moon", "later fred slept in the city ."]  # fmt: skip


@pytest.fixture(scope="module")
def runs(toy_corpus, tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    for v in ("uni-skip", "bi-skip"):
        Trainer(tiny_config(v, toy_corpus, root / v, max_steps=30)).train()
    return root


def _vectors(dim: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    words = (
        NAMES + OBJECTS + PLACES + "the a walked into saw there was old and small took home later slept in .".split() + ["zebra", "moon"]
    )
    return WordVectors(words, rng.standard_normal((len(words), dim)).astype(np.float32), f"synthetic-{dim}d")


@pytest.fixture(scope="module")
def bundles(runs, toy_corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("bundles")
    opts = lambda name: ExportOptions(out=out / name, name=name, corpus=str(toy_corpus), card_sample=500,  # noqa: E731
                                      family_options={"expansion": ExpansionOptions(_vectors(), words=100)})  # fmt: skip
    export([runs / "uni-skip" / "checkpoint.pt"], "uni-skip", opts("uni-skip"))
    export([runs / "bi-skip" / "checkpoint.pt"], "bi-skip", opts("bi-skip"))
    export([runs / "bi-skip" / "checkpoint.pt", runs / "uni-skip" / "checkpoint.pt"], "combine-skip", opts("combine-skip"))
    return out


@pytest.mark.parametrize("name, views", [("uni-skip", ["uni"]), ("bi-skip", ["bi"]), ("combine-skip", ["combine", "uni", "bi"])])
def test_bundle_loads_and_checks_were_recorded(bundles, name, views):
    b = load_bundle(bundles / name)
    assert list(b.spec.views) == views and b.spec.default_view == views[0]
    checks = b.spec.training["export_checks"]
    assert max(checks["parity_max_rel_err"].values()) <= PARITY_TOL
    assert max(checks["padding_max_abs_diff"].values()) <= PADDING_TOL
    assert b.spec.onnx.weights_dtype == "float16"
    card = (bundles / name / "MODEL_CARD.md").read_text()
    for section in ("## Deviations from the paper", "## Nearest neighbours", "## Vocabulary expansion", "## Export checks"):
        assert section in card


@pytest.mark.parametrize("name", ["uni-skip", "bi-skip", "combine-skip"])
def test_padding_invariance_in_onnx(bundles, name):
    enc = Encoder.load(bundles / name)
    for view in enc.spec.views:
        together = enc.encode(MIXED, view, normalize=False)
        alone = np.stack([enc.encode([s], view, normalize=False)[0] for s in MIXED])
        np.testing.assert_allclose(together, alone, atol=PADDING_TOL, rtol=0)


def test_combine_is_the_normalised_halves(bundles):
    comb = Encoder.load(bundles / "combine-skip")
    uni = Encoder.load(bundles / "uni-skip").encode(MIXED[:3], normalize=True)
    bi = Encoder.load(bundles / "bi-skip").encode(MIXED[:3], normalize=True)
    np.testing.assert_allclose(comb.encode(MIXED[:3], "combine", normalize=False), np.hstack([uni, bi]), atol=1e-5)


def test_out_of_vocabulary_words(bundles):
    enc = Encoder.load(bundles / "uni-skip")
    trained = enc.spec.vocabulary.trained_size
    zebra = enc.token_ids("zebra")[0]
    assert zebra >= trained  # known through the expanded vocabulary
    assert enc.token_ids("qwertyuiop") == [1, 2]  # neither: <unk>, then <eos>
    # No tokens at all: the encoder reads <eos> alone, a fixed, non-zero vector.
    empty = enc.encode([""], normalize=False)[0]
    assert np.abs(empty).sum() > 0
    np.testing.assert_allclose(enc.encode(["   "], normalize=False)[0], empty)


def test_combine_needs_both_parts(runs, tmp_path):
    with pytest.raises(ValueError, match="built from one checkpoint each"):
        export([runs / "uni-skip" / "checkpoint.pt"], "combine-skip", ExportOptions(out=tmp_path / "x"))
    assert not (tmp_path / "x").exists()


def test_bundle_encodes_without_torch(bundles):
    code = textwrap.dedent(f"""
        import sys
        sys.modules["torch"] = None  # any import of torch now fails
        from thoughtvec.service.core.encoder import Encoder
        v = Encoder.load({str(bundles / "combine-skip")!r}).encode(["the cat sat ."])
        assert v.shape == (1, 48), v.shape
        assert "training" not in sys.modules
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr


TRICKY = ["Don't panic -- it's “fine”… see https://example.org!", "naïve CAFÉ, 3.50 or 1,000 😀", "", "   ", "it 's does n't",
          "x" * 10_000, "ﬁne ｆｕｌｌｗｉｄｔｈ", "a\x00b\x07c"]  # fmt: skip


def test_training_and_serving_tokenize_identically(bundles):
    """The training data path (TokenCorpus → ids) and the service's Encoder map text to the same ids."""
    from thoughtvec.training.train.data import TokenCorpus

    enc = Encoder.load(bundles / "uni-skip")
    corpus = TokenCorpus.from_documents([TRICKY]).encode(enc.vocab)
    for i, text in enumerate(TRICKY):
        served = enc.token_ids(text)
        assert served[-1] == 2  # <eos>, appended by the bundle's tokenizer spec
        assert list(corpus.sentence(i)) == served[:-1], text


@pytest.mark.parametrize("name, parts", [("uni-skip", ["uni-skip"]), ("combine-skip", ["bi-skip", "uni-skip"])])
def test_reexpand_equals_an_export_with_the_other_vectors(runs, bundles, toy_corpus, tmp_path, name, parts):
    other = ExpansionOptions(_vectors(dim=6, seed=1), words=100)
    reports = reexpand(bundles / name, tmp_path / "re", other)
    assert len(reports) == len(parts) and all(r["source"] == "synthetic-6d" for r in reports.values())
    export([runs / p / "checkpoint.pt" for p in parts], name,
           ExportOptions(out=tmp_path / "fresh", name=name, corpus=str(toy_corpus), card_sample=500,
                         family_options={"expansion": other}))  # fmt: skip
    re, fresh, old = (Encoder.load(p) for p in (tmp_path / "re", tmp_path / "fresh", bundles / name))
    assert re.token_ids("zebra moon") == fresh.token_ids("zebra moon")
    for view in fresh.spec.views:
        np.testing.assert_allclose(re.encode(MIXED, view), fresh.encode(MIXED, view), atol=2e-3)
        # trained words read exactly as before; an expanded word reads the new vectors
        np.testing.assert_array_equal(re.encode(MIXED[:2], view), old.encode(MIXED[:2], view))
        assert not np.allclose(re.encode(["zebra"], view), old.encode(["zebra"], view), atol=1e-2)
    with pytest.raises(ValueError, match="no skip-thought word embeddings"):  # another family's bundle
        reexpand(make_tiny_bundle(tmp_path / "tiny").path, tmp_path / "x", other)
    assert not (tmp_path / "x").exists()


def test_expansion_check_scores_a_source_on_dev_and_leaves_the_bundle(bundles, toy_corpus, tmp_path):
    import onnx
    from onnx import numpy_helper

    from tests.training.fixtures.eval.senteval_tiny import write_senteval
    from thoughtvec.training.evaluation.expansion import score

    data = write_senteval(tmp_path / "senteval", n=30)
    # a source that holds the trained embeddings themselves: the map is the identity, fitted exactly
    b = load_bundle(bundles / "uni-skip")
    inits = {i.name: i for i in onnx.load(b.onnx_path).graph.initializer}
    trained = numpy_helper.to_array(next(i for n, i in inits.items() if n.startswith("embs.0.trained"))).astype(np.float32)
    rows = list(zip(b.vocab.tokens[3 : len(trained)], trained[3:])) + [("zebra", np.ones(trained.shape[1]))]
    path = tmp_path / "vectors.txt"
    path.write_text("".join(f"{w} {' '.join(f'{x:.6f}' for x in v)}\n" for w, v in rows))
    before = b.onnx_path.read_bytes()
    s = score(bundles / "uni-skip", str(path), data, str(toy_corpus), sample=200, words=100, check_counts=False)
    assert s["r2"] > 0.999 and s["fit cosine"] > 0.999 and 0 <= s["expanded"] < 0.5
    assert s["view"] == "uni" and -1 <= s["cosine dev"] <= 1 and 40 <= s["macro dev"] <= 100
    assert b.onnx_path.read_bytes() == before


def test_decoders_go_beside_the_encoder(bundles):
    """uni-skip and bi-skip carry their next/previous decoders (conditioned on their own vector); combine-skip none
    (its uni-skip part's bundle has the same ones)."""
    assert load_bundle(bundles / "uni-skip").spec.decoder.output == "uni"
    assert load_bundle(bundles / "bi-skip").spec.decoder.output == "bi"
    assert load_bundle(bundles / "combine-skip").spec.decoder is None
