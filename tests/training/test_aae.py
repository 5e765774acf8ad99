"""Mean-max AAE: shapes, the two pooling paths, learning, the decoder's use of its memory, export."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch

from tests.training.conftest import tiny_config, toy_documents
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.training.export.export import ExportOptions, export
from thoughtvec.training.export.onnx_export import PADDING_TOL
from thoughtvec.training.export.quantize import quantize_bundle
from thoughtvec.training.train.data import TokenCorpus
from thoughtvec.training.train.families import get_family
from thoughtvec.training.train.families.aae import memory_attention
from thoughtvec.training.train.nn import masked_max, masked_mean
from thoughtvec.training.train.trainer import Trainer

FAM = get_family("mean-max-aae")
TINY = {"out_vocab": 60, "input_words": 2000, "d_model": 32, "d_ff": 64, "heads": 4, "num_sampled": 16, "dropout": 0.0}


def _model(variant="mean-max-aae"):
    corpus = TokenCorpus.from_documents(toy_documents(30))
    cfg = FAM.config(variant, TINY)
    prepared = FAM.prepare(cfg, corpus)
    data = FAM.id_corpus(cfg, prepared, corpus)
    return cfg, FAM.build(cfg, prepared), FAM.collate(cfg, data, np.arange(8)), prepared


@pytest.mark.parametrize("variant, slots", [("mean-max-aae", 2), ("mean-aae", 1), ("max-aae", 1)])
def test_shapes_and_memory_slots(variant, slots):
    cfg, model, batch, _ = _model(variant)
    assert model.memory(batch["ids"], batch["lengths"]).shape == (8, slots, cfg.d_model)
    out = model(batch)
    assert out["loss"].dim() == 0 and torch.isfinite(out["loss"])
    assert batch["ids"][0, batch["lengths"][0] - 1] == 2  # </S> appended


def test_pooling_ignores_padding():
    x = torch.randn(2, 5, 3)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    x_pad = x.clone()
    x_pad[0, 3:] = 1e6  # whatever sits in padding must not matter
    torch.testing.assert_close(masked_mean(x_pad, mask)[0], x[0, :3].mean(0))
    torch.testing.assert_close(masked_max(x_pad, mask)[0], x[0, :3].amax(0))
    empty = torch.zeros(1, 5, dtype=torch.bool)
    assert torch.equal(masked_max(x[:1], empty), torch.zeros(1, 3)) and torch.equal(masked_mean(x[:1], empty), torch.zeros(1, 3))


@pytest.fixture(scope="module")
def trained(toy_corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("aae")
    cfg = tiny_config("mean-max-aae", toy_corpus, out / "run", max_steps=150, eval_every=50, lr=3e-3, model=dict(TINY))
    trainer = Trainer(cfg)
    trainer.train()
    return trainer, out


def test_loss_falls_accuracy_rises_and_memory_is_used(trained):
    import json

    trainer, out = trained
    evals = [json.loads(x)["eval"] for x in (out / "run" / "train_log.jsonl").read_text().splitlines() if "eval" in x]
    assert evals[-1]["nll_per_token"] < evals[0]["nll_per_token"]
    assert evals[-1]["reconstruction_accuracy"] > evals[0]["reconstruction_accuracy"] + 0.1
    model = trainer.model.eval()
    acc = lambda **kw: sum(float(model(b, **kw)["correct"]) for b in trainer.held_batches)  # noqa: E731
    with torch.no_grad():
        assert acc(zero_memory=True) < 0.9 * acc()  # without the mean-max memory, reconstruction fails more


def test_memory_attention_debug_helper(trained):
    trainer, _ = trained
    tokens, w = memory_attention(trainer.model, trainer.prepared.vocab, "anna saw a book there .")
    assert tokens[-1] == "</S>" and w.shape == (len(tokens), 2)
    np.testing.assert_allclose(w.sum(1), 1.0, atol=1e-5)


@pytest.fixture(scope="module")
def bundle(trained, toy_corpus):
    _, out = trained
    export([out / "run" / "checkpoint.pt"], "mean-max-aae", ExportOptions(out=out / "bundle", corpus=str(toy_corpus), card_sample=300))
    return out / "bundle"


def test_export_parity_padding_and_inputs(trained, bundle):
    trainer, out = trained
    enc = Encoder.load(bundle)
    assert list(enc.spec.views) == ["mean_max", "mean", "max"] and enc.dim() == 64
    assert (out / "bundle" / "memory_attention.png").exists()
    mixed = ["anna walked into the garden .", "the coat was old and small and the door was old", "ben", "", "qwertyuiop zxcvb"]
    for view in enc.spec.views:
        together = enc.encode(mixed, view, normalize=False)
        alone = np.stack([enc.encode([s], view, normalize=False)[0] for s in mixed])
        np.testing.assert_allclose(together, alone, atol=PADDING_TOL, rtol=0)
    # All-unknown words read as zero vectors plus positions; an empty input is </S> alone. Both are defined, finite vectors.
    assert enc.token_ids("qwertyuiop zxcvb") == [1, 1, 2] and enc.token_ids("") == [2]
    v = enc.encode(["", "qwertyuiop zxcvb"], normalize=False)
    assert np.isfinite(v).all() and not np.allclose(v[0], v[1])
    # A word outside the output vocabulary but known to GloVe is still read through its vector.
    assert enc.token_ids("government")[0] > 2


def test_int8_variant_is_faithful_batch_independent_and_recorded(bundle, tmp_path):
    sentences = [" ".join(doc[0:2]) for doc in toy_documents(200, seed=3)]
    report = quantize_bundle(bundle, tmp_path / "aae-int8", sentences, min_speedup=0.0, log=lambda m: None)
    q, ref = Encoder.load(tmp_path / "aae-int8"), Encoder.load(bundle)
    assert q.spec.onnx.weights_dtype == "int8" and q.name == "aae-int8" and report.int8
    assert q.spec.training["quantization"]["int8_nodes"] == report.int8
    assert "## int8 variant" in (tmp_path / "aae-int8" / "MODEL_CARD.md").read_text()
    mixed = ["anna walked into the garden .", "the coat was old and small and the door was old", "ben", ""]
    for view in q.spec.views:  # static scales: each row alone equals the row in a padded batch
        together = q.encode(mixed, view, normalize=False)
        alone = np.stack([q.encode([s], view, normalize=False)[0] for s in mixed])
        np.testing.assert_allclose(together, alone, atol=PADDING_TOL, rtol=0)
        cos = np.einsum("ij,ij->i", q.encode(sentences[:50], view), ref.encode(sentences[:50], view))
        assert cos.min() >= 0.99


def test_per_token_int8_variant_is_faithful_and_batch_independent(bundle, tmp_path):
    """Each activation row scaled by its own range at run time: no calibration, and still no batch effect."""
    sentences = [" ".join(doc[0:2]) for doc in toy_documents(200, seed=3)]
    report = quantize_bundle(bundle, tmp_path / "aae-tok", sentences, min_speedup=0.0, method="token", log=lambda m: None)
    q, ref = Encoder.load(tmp_path / "aae-tok"), Encoder.load(bundle)
    assert report.method == "token" and report.int8 and report.calibration_sentences == 0
    assert "MatMulInteger" in {n.op_type for n in onnx.load(str(tmp_path / "aae-tok" / "model.onnx")).graph.node}
    assert (
        "per token" in q.spec.training["quantization"]["method"]
        and "--method token" in (tmp_path / "aae-tok" / "MODEL_CARD.md").read_text()
    )
    mixed = ["anna walked into the garden .", "the coat was old and small and the door was old", "ben", ""]
    for view in q.spec.views:
        together = q.encode(mixed, view, normalize=False)
        alone = np.stack([q.encode([s], view, normalize=False)[0] for s in mixed])
        np.testing.assert_allclose(together, alone, atol=PADDING_TOL, rtol=0)
        cos = np.einsum("ij,ij->i", q.encode(sentences[:50], view), ref.encode(sentences[:50], view))
        assert cos.min() >= 0.99


def test_int8_variant_is_not_written_when_no_node_keeps_the_vectors(bundle, tmp_path):
    sentences = [" ".join(doc[0:2]) for doc in toy_documents(60, seed=4)]
    with pytest.raises(ValueError, match="stays within cosine"):
        quantize_bundle(bundle, tmp_path / "q", sentences, min_cosine=1.01, min_speedup=0.0, log=lambda m: None)
    assert not (tmp_path / "q").exists()


def test_a_factored_table_reads_exactly_as_the_table_it_replaces():
    """Export swaps the GloVe ⊕ spaCy table for its distinct rows plus an index (FactoredTable): the
    words read, </S>'s trained vector and the positions must not change by a bit."""
    from thoughtvec.service.bundle.vocab import EOS_ID
    from thoughtvec.training.train.families.aae import FixedWords
    from thoughtvec.training.train.nn import FactoredTable

    rng = np.random.default_rng(0)
    shared = rng.standard_normal((4, 3)).astype(np.float32)  # the "spaCy" half: many words, few distinct rows
    table = np.concatenate([rng.standard_normal((40, 2)).astype(np.float32), shared[rng.integers(0, 4, 40)]], 1)
    table[:3] = 0.0  # specials
    words = FixedWords(torch.from_numpy(table))
    ids = torch.from_numpy(rng.integers(3, 40, (5, 7)))
    ids[:, -1] = EOS_ID
    before = words(ids)
    factored = FactoredTable(table, [2, 3])
    assert sum(b.numel() for b in factored.buffers()) < table.size
    words.lookup = factored
    assert torch.equal(words(ids), before)
