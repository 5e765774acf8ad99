"""The decoders in the bundle: one ONNX decoding step and a whole greedy decode equal the trained torch model's,
for skip-thought's next/previous GRU decoders and the AAE's attention decoder."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.training.conftest import tiny_config
from thoughtvec.service.bundle.format import load_bundle
from thoughtvec.service.bundle.vocab import EOS_ID
from thoughtvec.service.core.decoding import Decoder
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.training.export.export import ExportOptions, export, load_checkpoint
from thoughtvec.training.train.decoders import STEP_PARITY_TOL
from thoughtvec.training.train.families import get_family
from thoughtvec.training.train.families.base import Prepared
from thoughtvec.training.train.trainer import Trainer

AAE_TINY = {"out_vocab": 60, "input_words": 2000, "d_model": 32, "d_ff": 64, "heads": 4, "num_sampled": 16, "dropout": 0.0}
SENTENCES = ["anna walked into the garden .", "ben saw a book there .", "the coat was old and small ."]


def _train_and_export(variant: str, corpus, root, fp16: bool, **kw):
    run = root / variant
    Trainer(tiny_config(variant, corpus, run, **kw)).train()
    out = root / f"{variant}-bundle"
    export([run / "checkpoint.pt"], variant, ExportOptions(out=out, name=variant, corpus=str(corpus), card_sample=200, fp16=fp16))
    ck = load_checkpoint(run / "checkpoint.pt")
    fam = get_family(ck["family"])
    cfg = fam.Config(**ck["model_config"])
    model = fam.build(cfg, Prepared.from_dict(ck["prepared"]))
    model.load_state_dict(ck["model"])
    return out, model.eval(), Prepared.from_dict(ck["prepared"])


@pytest.fixture(scope="module")
def skip(toy_corpus, tmp_path_factory):
    return _train_and_export("uni-skip", toy_corpus, tmp_path_factory.mktemp("dec"), fp16=False, max_steps=60)


@pytest.fixture(scope="module")
def aae(toy_corpus, tmp_path_factory):
    kw = dict(max_steps=120, eval_every=60, lr=3e-3, model=dict(AAE_TINY))
    return _train_and_export("mean-max-aae", toy_corpus, tmp_path_factory.mktemp("dec"), fp16=False, **kw)


# -- the trained model's own decoders, as training runs them (nn.GRU over the whole prefix; AAEDecoder) ----------
@torch.no_grad()
def skip_reference_logits(model, task: str, prefix: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
    gru = {"next": model.dec_next, "previous": model.dec_prev}[task]
    x = model.emb(prefix)  # (B, T, E)
    states, _ = gru(torch.cat([x, cond.unsqueeze(1).expand(-1, x.shape[1], -1)], -1))
    return model.out.proj(states[:, -1])


@torch.no_grad()
def aae_reference_logits(model, prepared, prefix_out: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
    index = prepared.vocab.index
    from_out = torch.tensor([index.get(w, 1) for w in prepared.state["out_words"]])
    prev = from_out[prefix_out]  # the decoder reads input-vocabulary ids
    d = model.cfg.d_model
    memory = torch.stack([cond[:, d:], cond[:, :d]], 1)  # the mean_max view is [max, mean]
    h = model.decoder(prev, torch.full((prev.shape[0],), prev.shape[1]), memory)
    return model.out.proj(h[:, -1])


def reference_greedy(logits_of, cond: torch.Tensor, max_tokens: int) -> list[list[int]]:
    prefix = torch.zeros((cond.shape[0], 1), dtype=torch.int64)
    for _ in range(max_tokens):
        logits = logits_of(prefix, cond)
        logits[:, 0] = -torch.inf
        prefix = torch.cat([prefix, logits.argmax(-1, keepdim=True)], 1)
    out = []
    for row in prefix[:, 1:].tolist():
        out.append(row[: row.index(EOS_ID)] if EOS_ID in row else row)
    return out


def _vectors(bundle_dir, view: str) -> np.ndarray:
    enc = Encoder.load(bundle_dir)
    return enc.encode(SENTENCES, view, normalize=False)


def test_skipthought_bundle_carries_its_decoders(skip):
    out, _, prepared = skip
    spec = load_bundle(out).spec
    assert spec.decoder is not None and spec.decoder.kind == "recurrent" and spec.decoder.tasks == ("previous", "next")
    assert spec.decoder.vocab_size == len(prepared.vocab) and spec.decoder_view == "uni"
    checks = spec.training["export_checks"]["decoder"]
    assert checks["step_max_rel_err"] <= STEP_PARITY_TOL and checks["greedy_decodes_equal"] > 0


@pytest.mark.parametrize("task", ["next", "previous"])
def test_skipthought_step_and_greedy_decode_match_torch(skip, task):
    out, model, _ = skip
    dec = Decoder(load_bundle(out))
    cond = _vectors(out, dec.view)
    ct = torch.from_numpy(cond)
    # one step, from the start and from a two-word prefix
    prefix = np.array([[0, 5, 9]] * len(cond), np.int64)
    state = None
    for t in range(1, prefix.shape[1] + 1):
        got, state = dec.step(dec.task_index(task), prefix[:, :t], state, cond)
        want = skip_reference_logits(model, task, torch.from_numpy(prefix[:, :t]), ct).numpy()
        np.testing.assert_allclose(got[:, 1:], want[:, 1:], rtol=1e-4, atol=1e-4)
    # a whole greedy decode
    ref = reference_greedy(lambda p, c: skip_reference_logits(model, task, p, c), ct, 12)
    assert [d.ids for d in dec.sample(task, cond, 12)] == ref


def test_aae_step_and_greedy_decode_match_torch(aae):
    out, model, prepared = aae
    spec = load_bundle(out).spec
    assert spec.decoder is not None and spec.decoder.tasks == ("reconstruct",) and spec.decoder.vocabulary == "decoder-vocab.txt"
    dec = Decoder(load_bundle(out))
    assert dec.words == list(prepared.state["out_words"])
    cond = _vectors(out, dec.view)
    ct = torch.from_numpy(cond)
    prefix = np.array([[0, 7, 4, 11]] * len(cond), np.int64)
    got, _ = dec.step(0, prefix, None, cond)
    want = aae_reference_logits(model, prepared, torch.from_numpy(prefix), ct).numpy()
    np.testing.assert_allclose(got[:, 1:], want[:, 1:], rtol=1e-4, atol=1e-4)
    ref = reference_greedy(lambda p, c: aae_reference_logits(model, prepared, p, c), ct, 15)
    assert [d.ids for d in dec.sample("reconstruct", cond, 15)] == ref


def test_the_compact_export_stores_word_tables_as_int8_rows(tmp_path_factory):
    import onnx

    from tests.decoder_bundles import decoder_models

    models = decoder_models(tmp_path_factory)
    for name in ("uni-skip", "mean-max-aae"):
        b = load_bundle(models / name)
        assert b.spec.decoder is not None and b.spec.decoder.weights_dtype == "float16"
        graph = onnx.load(str(b.file(b.spec.decoder.file))).graph
        int8 = [t for t in graph.initializer if t.data_type == onnx.TensorProto.INT8]
        assert len(int8) == 2 and {t.dims[0] for t in int8} == {b.spec.decoder.vocab_size}  # input and output word tables
        checks = b.spec.training["export_checks"]["decoder"]  # ONNX against the same int8/fp16 weights in torch
        assert checks["step_max_rel_err"] <= STEP_PARITY_TOL and checks["greedy_decodes_equal"] > 0
        assert "Decoders (`decoder.onnx`" in (b.path / "MODEL_CARD.md").read_text()  # the card says what was checked
