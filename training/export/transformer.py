"""A sentence-transformers folder -> a bundle: the transformer behind the bundle contract, with its tokenizer.json.

The graph keeps the one contract every bundle has (``input_ids`` int64 (B, T), ``lengths`` int64 (B,)):
:class:`PooledEncoder` builds the attention mask from ``lengths``, runs the transformer, and takes the
mean of the last layer's states over the real tokens (sentence-transformers' ``Pooling``), then
L2-normalises (its ``Normalize``). Padded keys get no attention weight, so a sentence's vector does not
depend on its batch, and the batcher, the planner and long-input splitting work as for every bundle.

Weights: ``float32``; ``float16`` (stored half, computed in float32, as the classic exports); or
``float16-int8-embeddings``: float16 storage with the word-embedding table in int8, one scale per row
(each row dequantised on its own, so no vector depends on another: ONNX Runtime's dynamic int8 would
scale activations per batch). The torch reference of the checks carries the same rounding, as
``round_to_fp16`` does for float16; the cosine to the untouched float32 model is measured besides.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

from thoughtvec.service.bundle.atomic import atomic_dir, atomic_write_text
from thoughtvec.service.bundle.format import BUNDLE_FILE, BundleSpec, OnnxSpec, TokenizerSpec, ViewSpec, write_bundle
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.training.export.onnx_export import OPSET, PADDING_TOL, PARITY_TOL, parity, round_to_fp16, store_weights_fp16, to_onnx

log = logging.getLogger(__name__)
Weights = Literal["float32", "float16", "float16-int8-embeddings"]
VIEW = "mean"
TOKENIZER_FILE = "tokenizer.json"
F16_SMALLEST_NORMAL = float(np.finfo(np.float16).tiny)  # 2**-14


class PooledEncoder(torch.nn.Module):
    """``(input_ids (B, T), lengths (B,)) -> (B, H)``: mean of the transformer's last states over each input's
    first ``lengths`` tokens, L2-normalised when the sentence-transformers model normalises."""

    def __init__(self, transformer: torch.nn.Module, normalize: bool):
        super().__init__()
        self.transformer, self.normalize = transformer, normalize

    def forward(self, input_ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        t = input_ids.shape[1]
        mask = (torch.arange(t)[None, :] < lengths[:, None]).to(torch.int64)  # (B, T): 1 on real tokens
        h = self.transformer(input_ids=input_ids, attention_mask=mask, token_type_ids=torch.zeros_like(input_ids)).last_hidden_state
        m = mask.unsqueeze(-1).to(h.dtype)  # (B, T, 1)
        pooled = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)  # (B, H), as sentence-transformers' Pooling(mean)
        return torch.nn.functional.normalize(pooled, p=2, dim=1) if self.normalize else pooled


def load_sentence_transformer(folder: str | Path):
    """The folder's model on the CPU, offline; only the Transformer -> mean Pooling (-> Normalize) pipeline is taken."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder: never reach for a hub
    from sentence_transformers import SentenceTransformer  # noqa: PLC0415  # after HF_HUB_OFFLINE is set: the hub reads it at import

    st = SentenceTransformer(str(folder), device="cpu")
    kinds = [type(m).__name__ for m in st]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise ValueError(f"{folder}: modules {kinds}; a bundle takes Transformer, Pooling (mean) and optionally Normalize")
    pooling: Any = st[1]  # the Pooling module, checked by name above: its class moved between versions
    pool = pooling.get_config_dict()  # sentence-transformers 6: pooling_mode "mean"; older: pooling_mode_mean_tokens true
    modes = [pool["pooling_mode"]] if "pooling_mode" in pool else [k for k, v in pool.items() if k.startswith("pooling_mode") and v]
    if modes not in (["mean"], ["pooling_mode_mean_tokens"]) or not pool.get("include_prompt", True):
        raise ValueError(f"{folder}: pooling {modes}; only mean pooling over every token is exported")
    return st


def int8_embedding_rows(model: onnx.ModelProto, table: str) -> tuple[onnx.ModelProto, np.ndarray]:
    """Store the ``table`` initializer (V, H) as int8 with one float scale per row; its Gather becomes
    Gather(int8) -> Cast -> Mul(Gather(scales)). Returns the graph and the dequantised table (the reference)."""
    graph = model.graph
    init = next(t for t in graph.initializer if t.name == table)
    w = numpy_helper.to_array(init).astype(np.float32)
    # (V, 1), float16-representable: the float16 storage that follows keeps them exact. At least float16's smallest
    # normal: a smaller scale (a row of zeros, or of values under 127 of it) would round to a subnormal or to 0, and
    # a row divided by 0 is not a row of int8
    scale = np.maximum(np.abs(w).max(1, keepdims=True) / 127.0, F16_SMALLEST_NORMAL).astype(np.float16).astype(np.float32)
    q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    graph.initializer.remove(init)
    graph.initializer.extend(
        [numpy_helper.from_array(q, table + "__int8"), numpy_helper.from_array(scale.astype(np.float32), table + "__scale")]
    )
    for i, node in enumerate(list(graph.node)):
        if node.op_type == "Gather" and node.input[0] == table:
            ids, out = node.input[1], node.output[0]
            new = [
                helper.make_node("Gather", [table + "__int8", ids], [out + "__q"], name=node.name + "_q"),  # (B, T, H) int8
                helper.make_node("Cast", [out + "__q"], [out + "__f"], to=TensorProto.FLOAT, name=node.name + "_f"),
                helper.make_node("Gather", [table + "__scale", ids], [out + "__s"], name=node.name + "_s"),  # (B, T, 1)
                helper.make_node("Mul", [out + "__f", out + "__s"], [out], name=node.name + "_deq"),
            ]
            graph.node.remove(node)
            for k, n in enumerate(new):
                graph.node.insert(i + k, n)
    onnx.checker.check_model(model)
    return model, q.astype(np.float32) * scale


def build_graph(st, weights: Weights) -> tuple[onnx.ModelProto, PooledEncoder]:
    """The exported graph and the torch module it must match (weights rounded as the graph stores them)."""
    bert = st[0].auto_model.eval()
    if hasattr(bert, "set_attn_implementation"):
        bert.set_attn_implementation("eager")  # plain ops for the TorchScript exporter
    enc = PooledEncoder(bert, normalize=len(st) == 3).eval()
    if weights != "float32":
        round_to_fp16(enc)
    proto = to_onnx(enc, [VIEW])
    if weights == "float16-int8-embeddings":
        emb = bert.get_input_embeddings().weight
        name = next(t.name for t in proto.graph.initializer if tuple(t.dims) == tuple(emb.shape) and "word_embeddings" in t.name)
        proto, table = int8_embedding_rows(proto, name)
        with torch.no_grad():
            emb.copy_(torch.from_numpy(table))
    if weights != "float32":
        proto = store_weights_fp16(proto)
    return proto, enc


def _dimension(st) -> int:
    get = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension  # renamed in sentence-transformers 6
    return int(get() or 0)


def describe(st, name: str) -> tuple[str, str]:
    cfg = st[0].auto_model.config
    arch = f"{cfg.model_type} {cfg.num_hidden_layers} layers × {cfg.hidden_size}"
    return (
        f"{cfg.model_type}-{cfg.num_hidden_layers}x{cfg.hidden_size}",
        f"{name}: sentence-transformers encoder ({arch}), mean pooling, L2-normalised",
    )


def _checks(enc_torch: PooledEncoder, encoder: Encoder, sentences: list[str], reference: np.ndarray) -> dict:
    """ONNX Runtime (the service's Encoder) against the torch module on ``sentences``; padding invariance; and the
    cosine of the bundle's vectors to ``reference`` (the untouched sentence-transformers model's)."""
    ids = [encoder.fit(encoder.token_ids(s), "truncate") for s in sentences]
    feeds = encoder.inputs(ids)
    with torch.no_grad():
        ref = enc_torch(torch.from_numpy(feeds["input_ids"]), torch.from_numpy(feeds["lengths"])).numpy()
    got = encoder.run_ids(ids, VIEW)
    par = parity({VIEW: ref}, {VIEW: got})
    order = np.argsort([len(s) for s in ids])[:16]
    pad = float(np.abs(np.stack([encoder.run_ids([ids[i]], VIEW)[0] for i in order]) - got[order]).max())
    if par[VIEW] > PARITY_TOL:
        raise RuntimeError(f"ONNX parity failed: relative error {par[VIEW]:.2g} > {PARITY_TOL}")
    if pad > PADDING_TOL:
        raise RuntimeError(f"padding invariance failed: max abs diff {pad:.2g} > {PADDING_TOL}")
    cos = np.einsum("ij,ij->i", encoder.encode(sentences, VIEW), reference)
    return {"parity_max_rel_err": par, "padding_max_abs_diff": {VIEW: pad}, "sentences": len(sentences),
            "cosine_to_sentence_transformers": {"min": round(float(cos.min()), 6), "mean": round(float(cos.mean()), 6)}}  # fmt: skip


def export_sentence_transformer(folder: str | Path, out: str | Path, sentences: list[str], *, name: str = "",
                                weights: Weights = "float16", licence: str = "", source: str = "") -> Path:  # fmt: skip
    """Write the bundle of the sentence-transformers model at ``folder`` to ``out``, checked on ``sentences``
    (parity with the torch module, padding invariance, cosine to the float32 model) before it is moved into place."""
    folder, out = Path(folder), Path(out)
    st = load_sentence_transformer(folder)
    name = name or out.name
    reference = np.asarray(st.encode(sentences, batch_size=64, convert_to_numpy=True, normalize_embeddings=True), np.float32)
    proto, enc_torch = build_graph(st, weights)
    variant, description = describe(st, name)
    spec = BundleSpec(
        name=name,
        family="transformer",
        variant=variant,
        description=description,
        tokenizer=TokenizerSpec(kind="hf-tokenizers", file=TOKENIZER_FILE, lowercase=False),
        max_input_tokens=int(st.max_seq_length),
        long_inputs="passages",  # a passage encoder: split inputs are packed up to the limit (SciFact dev: 0.649 vs 0.627)
        onnx=OnnxSpec(opset=OPSET, weights_dtype=weights),
        views={
            VIEW: ViewSpec(
                output=VIEW,
                dim=_dimension(st),
                pooling="unsupervised",
                description="mean of the last layer's states over the input's tokens" + (", L2-normalised" if enc_torch.normalize else ""),
            )
        },  # fmt: skip
        default_view=VIEW,
        training={"source": source or str(folder), "licence": licence, "weights": weights, "max_seq_length": int(st.max_seq_length)},
    )
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.stage-", dir=out.parent if out.parent.exists() else None))
    try:
        tokenizer = st.tokenizer.backend_tokenizer.to_str().encode()  # the fast tokenizer sentence-transformers runs
        bundle = write_bundle(staging / "bundle", spec, None, proto.SerializeToString(), {TOKENIZER_FILE: tokenizer})
        encoder = Encoder(bundle, providers=["CPUExecutionProvider"])
        checks = _checks(enc_torch, encoder, sentences, reference)
        log.info("checks passed: %s", checks)
        spec = spec.model_copy(update={"training": {**spec.training, "export_checks": checks}})
        atomic_write_text(bundle.path / BUNDLE_FILE, spec.model_dump_json(indent=2) + "\n")
        (bundle.path / "MODEL_CARD.md").write_text(model_card(spec, checks), encoding="utf-8")
        with atomic_dir(out) as d:
            shutil.copytree(staging / "bundle", d, dirs_exist_ok=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


def model_card(spec: BundleSpec, checks: dict) -> str:
    t = spec.training
    view = spec.views[VIEW]
    cos = checks["cosine_to_sentence_transformers"]
    return f"""# {spec.name}

{spec.description}. Imported from a sentence-transformers folder with `thoughtvec export --sentence-transformers`;
not trained here.

| | |
|---|---|
| family | transformer ({spec.variant}) |
| default view | `{spec.default_view}` |
| dimensions | {view.dim} (fewer on request: `dimensions`, see *Dimensions*) |
| tokenizer | Hugging Face `tokenizers` (`{spec.tokenizer.file}`), up to {spec.max_input_tokens} tokens with `[CLS]` and `[SEP]` |
| weights | {t["weights"]} |
| source | {t["source"]} |
| licence | {t["licence"] or "as the source states"} |

## Export checks

On {checks["sentences"]} sentences: ONNX Runtime against the torch module it was exported from (weights rounded as
stored), largest relative error {checks["parity_max_rel_err"][VIEW]:.1e}; a vector alone against inside a padded batch,
largest difference {checks["padding_max_abs_diff"][VIEW]:.1e}; cosine to the untouched float32 sentence-transformers model,
min {cos["min"]:.5f}, mean {cos["mean"]:.5f}.
"""
