"""Invertible decoders: the orthonormal update, the bijection's inverse, learning, PC removal, views, export."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.training.conftest import tiny_config
from thoughtvec.service.bundle import postprocess
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.training.export.export import ExportOptions, export
from thoughtvec.training.export.onnx_export import PADDING_TOL
from thoughtvec.training.train.families.invertible import Coupling, InvertibleDecoder
from thoughtvec.training.train.trainer import Trainer

TINY = {"input_words": 2000, "hidden": 32, "coupling_hidden": 16}  # 2d = 64 ≥ dim_w = 50: W can have orthonormal rows


def test_orthonormal_update_drives_wwt_to_identity():
    torch.manual_seed(0)
    dec = InvertibleDecoder(8, 24, None)
    with torch.no_grad():
        dec.W.mul_(1.3).add_(0.05 * torch.randn_like(dec.W))  # knocked off orthonormality, as a gradient step would
    for _ in range(500):
        dec.orthonormalise(0.01)
    W = dec.W.detach()
    torch.testing.assert_close(W @ W.t(), torch.eye(8), atol=1e-4, rtol=0)
    # then Wᵀ is a right inverse: f_de(f_de⁻¹(x)) = x, and f_de⁻¹(f_de(z)) recovers z on W's row space
    x = torch.randn(5, 8)
    torch.testing.assert_close(dec(dec.inverse(x)), x, atol=1e-4, rtol=0)
    z = torch.randn(5, 24)
    z_row = z @ W.t() @ W  # projection onto the row space
    torch.testing.assert_close(dec.inverse(dec(z)), z_row, atol=1e-4, rtol=0)


def test_bijection_inverse_is_exact():
    torch.manual_seed(0)
    g = Coupling(16, 32)
    z = torch.randn(100, 32) * 3
    with torch.no_grad():
        assert (g.inverse(g(z)) - z).abs().max() <= 1e-5
        assert (g(g.inverse(z)) - z).abs().max() <= 1e-5
        assert (g(z) - z).abs().max() > 1e-3  # and it is not the identity


def test_pc_removal_removes_the_component():
    rng = np.random.default_rng(0)
    common = rng.standard_normal(12)
    common /= np.linalg.norm(common)
    x = rng.standard_normal((500, 12)) + 8.0 * common  # a strong shared direction, as sentence means have
    pc = postprocess.fit(x, center=False, k=1).components[0]  # what the export bakes into the graph
    assert abs(abs(pc @ common) - 1) < 1e-2
    removed = x - np.outer(x @ pc, pc)
    assert np.abs(removed @ pc).max() < 1e-4


@pytest.fixture(scope="module", params=["invertible-linear", "invertible-bijection"])
def trained(request, toy_corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param)
    Trainer(tiny_config(request.param, toy_corpus, out / "run", max_steps=80, eval_every=40, model=dict(TINY))).train()
    export([out / "run" / "checkpoint.pt"], request.param, ExportOptions(out=out / "bundle", corpus=str(toy_corpus), card_sample=300))
    return out


def test_negative_sampling_loss_falls(trained):
    log = [json.loads(x) for x in (trained / "run" / "train_log.jsonl").read_text().splitlines()]
    losses = [e["loss"] for e in log if "loss" in e]
    assert losses[-1] < 0.9 * losses[0]
    assert [e["eval"]["max_abs_WWt_minus_I"] for e in log if "eval" in e][-1] < 0.1


def test_views_shapes_padding_and_card(trained):
    enc = Encoder.load(trained / "bundle")
    dz = 2 * TINY["hidden"]
    assert {n: v.dim for n, v in enc.spec.views.items()} == {
        "ensemble": dz,
        "en": dz,
        "de": dz,
        "de-sif": dz,
        "ensemble-supervised": 6 * dz,
        "en-supervised": 3 * dz,
        "de-supervised": 3 * dz,
    }
    assert enc.spec.default_view == "ensemble"
    mixed = ["anna walked into the garden .", "the letter was old and small and the coat was old and small too", "ben", "", "qwertyuiop"]
    for view in enc.spec.views:
        together = enc.encode(mixed, view, normalize=False)
        alone = np.stack([enc.encode([s], view, normalize=False)[0] for s in mixed])
        np.testing.assert_allclose(together, alone, atol=PADDING_TOL, rtol=0)
    raw = {v: enc.encode(mixed, v, normalize=False) for v in ("ensemble", "en", "de")}
    np.testing.assert_allclose(raw["ensemble"], raw["en"] + raw["de"], atol=1e-5)  # z = z_en + z_de
    assert np.allclose(enc.encode([""], "ensemble", normalize=False), 0)  # no words: the zero vector
    card = (trained / "bundle" / "MODEL_CARD.md").read_text()
    assert "singular values of W" in card and (trained / "bundle" / "singular_values.png").exists()
    sv = json.loads((trained / "bundle" / "bundle.json").read_text())["training"]["export_report"]["singular_values"]
    assert 0.8 < sv["min"] <= sv["max"] < 1.2


def test_de_sif_is_the_sif_weighted_mean_of_the_inverted_word_vectors(trained, toy_corpus):
    """de-sif = Σ a/(a+p(w))·f_de⁻¹(v_w) / Σ a/(a+p(w)), its first PC removed (Arora et al. 2017):
    frequent words count less, so a sentence's vector is not the cone every sentence shares."""
    from thoughtvec.training.train.data import sif_weights, word_counts

    enc = Encoder.load(trained / "bundle")
    words = ["the", "garden", "anna"]
    weights = sif_weights(words, word_counts(toy_corpus))
    assert weights[0] < weights[1] <= 1.0  # "the" is the most frequent word of the toy corpus
    per_word = np.stack([enc.encode([w], "de-sif", normalize=False)[0] for w in words])  # PC already removed per row
    sentence = enc.encode([" ".join(words)], "de-sif", normalize=False)[0]
    np.testing.assert_allclose(sentence, (weights[:, None] * per_word).sum(0) / weights.sum(), atol=5e-4)  # fp16 weights
    plain = enc.encode([" ".join(words)], "de", normalize=False)[0]
    assert np.abs(sentence - plain).max() > 1e-2  # the weights change the vector
    assert np.allclose(enc.encode([""], "de-sif", normalize=False), 0)


def test_export_reads_more_words_of_the_same_vectors(trained, toy_corpus):
    """``input_words``: the graph reads the trained vocabulary (same ids, same vectors) plus the most
    frequent words of the fixed vectors that training did not read; those are then known words."""
    from thoughtvec.service.bundle.vocab import Vocabulary

    export([trained / "run" / "checkpoint.pt"], json.loads((trained / "bundle" / "bundle.json").read_text())["variant"],
           ExportOptions(out=trained / "more", corpus=str(toy_corpus), card_sample=300, family_options={"input_words": 4000}))  # fmt: skip
    small, more = Encoder.load(trained / "bundle"), Encoder.load(trained / "more")
    v_small, v_more = Vocabulary.load(trained / "bundle" / "vocab.txt"), Vocabulary.load(trained / "more" / "vocab.txt")
    assert v_more.tokens[: len(v_small)] == v_small.tokens  # the trained ids are unchanged
    assert len(v_more) > len(v_small) and more.spec.vocabulary.trained_size == len(v_small)
    new = next(w for w in v_more.tokens[len(v_small) :] if w.isalpha())
    seen = ["anna walked into the garden .", "the letter was old and small"]
    for view in more.spec.views:  # the words training read give the same vectors
        np.testing.assert_allclose(more.encode(seen, view, normalize=False), small.encode(seen, view, normalize=False), atol=1e-5)
    unknown = small.encode(["qwertyuiop"], "de-supervised", normalize=False)  # a word no vectors know
    np.testing.assert_allclose(small.encode([new], "de-supervised", normalize=False), unknown, atol=1e-6)  # <unk> before
    assert np.abs(more.encode([new], "de-supervised", normalize=False) - unknown).max() > 1e-3  # now it has a vector
    assert "## Input vocabulary" in (trained / "more" / "MODEL_CARD.md").read_text()


def test_export_can_read_fewer_words_keeping_the_corpus_words_and_their_vectors(trained, toy_corpus):
    """``input_words`` below what training read: the vectors' most frequent words and the corpus's frequent
    words are kept, and read exactly as before; the words cut read as <unk>."""
    from thoughtvec.service.bundle.vocab import Vocabulary

    export([trained / "run" / "checkpoint.pt"], json.loads((trained / "bundle" / "bundle.json").read_text())["variant"],
           ExportOptions(out=trained / "fewer", corpus=str(toy_corpus), card_sample=300, family_options={"input_words": 300}))  # fmt: skip
    full, fewer = Encoder.load(trained / "bundle"), Encoder.load(trained / "fewer")
    v_full, v_fewer = Vocabulary.load(trained / "bundle" / "vocab.txt"), Vocabulary.load(trained / "fewer" / "vocab.txt")
    assert 303 < len(v_fewer) < len(v_full) and fewer.spec.vocabulary.trained_size == len(v_fewer)  # every word it reads was trained
    assert v_fewer.tokens[:303] == v_full.tokens[:303]  # the specials and the vectors' 300 most frequent words, in order
    corpus_words = set(" ".join(toy_corpus.read_text().split()[:2000]).split())
    assert {w for w in corpus_words if w in v_full.index} <= set(v_fewer.tokens)  # frequent corpus words stay
    cut = next(w for w in reversed(v_full.tokens) if w not in set(v_fewer.tokens) and w.isalpha())
    raw = [v for v in fewer.spec.views if "supervised" in v]  # no principal component estimated on the corpus sample
    seen = ["anna walked into the garden .", "the letter was old and small"]
    for view in raw:
        np.testing.assert_allclose(fewer.encode(seen, view, normalize=False), full.encode(seen, view, normalize=False), atol=1e-5)
    unknown = full.encode(["qwertyuiop"], "de-supervised", normalize=False)
    np.testing.assert_allclose(fewer.encode([cut], "de-supervised", normalize=False), unknown, atol=1e-6)  # cut: <unk>
    assert np.abs(full.encode([cut], "de-supervised", normalize=False) - unknown).max() > 1e-3  # it had a vector
    assert "of them (`thoughtvec export --input-words 300`)" in (trained / "fewer" / "MODEL_CARD.md").read_text()
