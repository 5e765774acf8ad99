"""Skip-thought: shapes, learning, the decoders' use of the encoder vector, expansion, export."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.training.conftest import TINY, tiny_config, toy_documents
from thoughtvec.training.train.data import TokenCorpus
from thoughtvec.training.train.families import get_family
from thoughtvec.training.train.trainer import Trainer

FAM = get_family("skip-thought")


def _prepared_model(variant: str, **over):
    corpus = TokenCorpus.from_documents(toy_documents(50))
    cfg = FAM.config(variant, {**TINY[variant], **over})
    prepared = FAM.prepare(cfg, corpus)
    data = FAM.id_corpus(cfg, prepared, corpus)
    centres = data.centres(*FAM.needs_neighbours)
    return cfg, FAM.build(cfg, prepared), FAM.collate(cfg, data, centres[:8]), data


@pytest.mark.parametrize("variant", ["uni-skip", "bi-skip"])
def test_shapes(variant):
    cfg, model, batch, _ = _prepared_model(variant)
    out = model(batch)
    assert out["loss"].dim() == 0 and torch.isfinite(out["loss"])
    assert model.encode(batch["ids"], batch["lengths"]).shape == (8, cfg.hidden)
    assert batch["prev"].shape[0] == batch["next"].shape[0] == 8


def test_triples_never_cross_documents():
    _, _, _, data = _prepared_model("uni-skip")
    c = data.centres(1, 1)
    assert (data.doc[c - 1] == data.doc[c]).all() and (data.doc[c + 1] == data.doc[c]).all()
    assert len(c) == 50 * 3  # five-sentence documents: sentences 2..4 are centres


def test_loss_falls_and_context_is_used(toy_corpus, tmp_path):
    trainer = Trainer(tiny_config("uni-skip", toy_corpus, tmp_path / "run", max_steps=120))
    trainer.train()
    log = [json.loads(x) for x in (tmp_path / "run" / "train_log.jsonl").read_text().splitlines()]
    losses = [e["loss"] for e in log if "loss" in e]
    assert losses[-1] < 0.8 * losses[0]
    evals = [e["eval"]["nll_per_token"] for e in log if "eval" in e]
    assert evals[-1] < evals[0]
    assert (tmp_path / "run" / "loss.png").stat().st_size > 1000

    # The decoders condition on h_i: without it the neighbours are harder to predict ...
    model = trainer.model.eval()
    batch = trainer.held_batches[0]
    with torch.no_grad():
        assert model(batch, zero_context=True)["loss"] > 1.05 * model(batch)["loss"]
    # ... and the loss's gradient reaches the encoder.
    model.train()
    model.zero_grad()
    model(batch)["loss"].backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.encoder.parameters())
    assert model.emb.weight.grad.abs().sum() > 0


def test_sampled_softmax_tracks_exact():
    from thoughtvec.training.train.softmax import OutputLayer

    torch.manual_seed(0)
    counts = np.arange(1, 201, dtype=np.float64)[::-1].copy()
    layer = OutputLayer(8, 200, counts, num_sampled=150).train()
    h, y = torch.randn(64, 8), torch.randint(2, 200, (64,))
    with torch.no_grad():
        sampled = torch.stack([layer(h, y) for _ in range(20)]).mean()
        exact = layer.exact_nll(h, y)
    assert abs(float(sampled) - float(exact)) / float(exact) < 0.25  # an estimate of the same objective


@pytest.mark.parametrize("unk_count", [0.0, 50.0])
def test_unk_targets_are_learned_under_sampled_softmax(unk_count):
    """<unk> is a real target (every out-of-vocabulary word): its sampled loss must be of the same
    order as other words', not ~0 from a log-Q correction by a zero sampling probability."""
    from thoughtvec.training.train.softmax import OutputLayer

    torch.manual_seed(0)
    counts = np.r_[0.0, unk_count, np.arange(198, 0, -1, dtype=np.float64)]
    layer = OutputLayer(8, 200, counts, num_sampled=50).train()
    h = torch.randn(64, 8)
    with torch.no_grad():
        unk = torch.stack([layer(h, torch.full((64,), 1)) for _ in range(10)]).mean() / 64
        word = torch.stack([layer(h, torch.full((64,), 100)) for _ in range(10)]).mean() / 64
    assert float(unk) > 0.2 * float(word) and float(unk) > 0.5
    assert float(layer.noise[0]) == 0.0  # <pad> is never a negative
