"""Tiny bundles that carry their decoders, trained in seconds on the toy stories and exported as training
exports every bundle: ``uni-skip`` (next/previous GRU decoders), ``mean-max-aae`` (attention decoder) and
``tiny`` (no decoder, from ``tiny_bundle``). Built once per test session, under its base temp folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tiny_bundle import make_tiny_bundle
from tests.training.conftest import tiny_config, toy_documents, write_corpus

AAE_TINY = {"out_vocab": 60, "input_words": 2000, "d_model": 32, "d_ff": 64, "heads": 4, "num_sampled": 16, "dropout": 0.0}


def decoder_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The models folder (built on first call), with ``corpus.txt`` and ``runs/`` beside it."""
    pytest.importorskip("torch")
    base = tmp_path_factory.getbasetemp() / "decoder-bundles"
    models = base / "models"
    if (base / "done").exists():
        return models
    from thoughtvec.training.export.export import ExportOptions, export
    from thoughtvec.training.train.trainer import Trainer

    base.mkdir(parents=True, exist_ok=True)
    corpus = write_corpus(base / "corpus.txt", toy_documents())
    runs = {
        "uni-skip": tiny_config("uni-skip", corpus, base / "runs" / "uni-skip", max_steps=150, eval_every=150, lr=3e-3),
        "mean-max-aae": tiny_config("mean-max-aae", corpus, base / "runs" / "mean-max-aae", max_steps=150, eval_every=150, lr=3e-3,
                                    model=dict(AAE_TINY)),
    }  # fmt: skip
    for name, cfg in runs.items():
        Trainer(cfg).train()
        export([Path(cfg.out) / "checkpoint.pt"], name, ExportOptions(out=models / name, name=name, corpus=str(corpus), card_sample=200))
    make_tiny_bundle(models / "tiny", name="tiny")
    (base / "done").touch()
    return models
