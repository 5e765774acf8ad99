"""Checkpoint(s) → bundle: ONNX graph, vocabulary, bundle.json, MODEL_CARD.md.

The bundle is staged in a temporary folder, checked through the *service's* own encoder (ONNX
Runtime parity with torch, padding invariance), given its model card, and only then moved into
place atomically. A failed check leaves the previous bundle untouched.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from thoughtvec.service.bundle.atomic import atomic_dir, atomic_write_text
from thoughtvec.service.bundle.format import BUNDLE_FILE, BundleSpec, OnnxSpec, VocabularySpec, load_bundle, write_bundle
from thoughtvec.service.bundle.vocab import Vocabulary
from thoughtvec.service.core.decoding import Decoder
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.training.export.modelcard import write_model_card
from thoughtvec.training.export.onnx_export import OPSET, PADDING_TOL, PARITY_TOL, parity, round_to_fp16, store_weights_fp16, to_onnx
from thoughtvec.training.train.data import corpus_documents
from thoughtvec.training.train.decoders import DECODER_VOCAB, check_decoder, compact, decoder_to_onnx
from thoughtvec.training.train.families import get_family
from thoughtvec.training.train.families.base import Prepared

log = logging.getLogger(__name__)


@dataclass
class ExportOptions:
    out: Path
    name: str = ""  # bundle name; default: the variant
    fp16: bool = True  # store weights as float16
    corpus: str = ""  # for checks and the model card; default: the checkpoint's corpus
    card_sample: int = 50_000  # corpus sentences searched for the model card's neighbours
    check_sentences: int = 256
    family_options: dict = field(default_factory=dict)  # e.g. vocabulary expansion for skip-thought


def load_checkpoint(path: str | Path) -> dict:
    ck = torch.load(path, map_location="cpu", weights_only=False)
    if ck.get("format") != 1:
        raise ValueError(f"{path}: not a thoughtvec checkpoint")
    return ck


def _order_parts(family, variant: str, cks: list[dict], paths: list[Path]) -> list[dict]:
    parts = getattr(family, "export_only", {}).get(variant)
    if parts is None:
        if len(cks) != 1 or cks[0]["variant"] != variant:
            raise ValueError(f"{variant}: give exactly one checkpoint of variant {variant} (got {[c['variant'] for c in cks]})")
        return cks
    by_variant = {c["variant"]: c for c in cks}
    if sorted(by_variant) != sorted(parts) or len(cks) != len(parts):
        raise ValueError(
            f"{variant} is built from one checkpoint each of {list(parts)}; got {[str(p) for p in paths]} ({[c['variant'] for c in cks]})"
        )
    first = cks[0]["prepared"]["vocab"]
    if any(c["prepared"]["vocab"] != first for c in cks[1:]):
        raise ValueError(f"{variant}: the checkpoints were trained with different vocabularies")
    return [by_variant[p] for p in parts]


def sample_sentences(corpus: str, n: int, seed: int = 0) -> list[str]:
    sents = [s for doc in corpus_documents(corpus) for s in doc]
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(sents), size=min(n, len(sents)), replace=False)
    return [sents[i] for i in sorted(idx)]


def _check(enc_torch, encoder: Encoder, sentences: list[str]) -> dict:
    """ONNX Runtime (through the service's Encoder) vs torch on real sentences; padding invariance."""
    ids = [encoder.fit(encoder.token_ids(s), "truncate") for s in sentences]
    lengths = torch.tensor([len(s) for s in ids])
    padded = torch.zeros((len(ids), int(lengths.max())), dtype=torch.int64)
    for i, s in enumerate(ids):
        padded[i, : len(s)] = torch.tensor(s)
    with torch.no_grad():
        outs = enc_torch(padded, lengths)
    names = list(encoder.spec.views)
    ref = {n: o.numpy() for n, o in zip(names, outs)}
    got = {n: encoder.run_ids(ids, n) for n in names}
    par = parity(ref, got)
    # padding: the shortest sentences alone vs inside the batch padded to the longest
    order = np.argsort([len(s) for s in ids])[:16]
    pad = {n: float(np.abs(np.stack([encoder.run_ids([ids[i]], n)[0] for i in order]) - got[n][order]).max()) for n in names}
    bad = {n: v for n, v in par.items() if v > PARITY_TOL}
    if bad:
        raise RuntimeError(f"ONNX parity failed: relative error {bad} > {PARITY_TOL}")
    badp = {n: v for n, v in pad.items() if v > PADDING_TOL}
    if badp:
        raise RuntimeError(f"padding invariance failed: max abs diff {badp} > {PADDING_TOL}")
    return {"parity_max_rel_err": par, "padding_max_abs_diff": pad, "sentences": len(sentences)}


def _add_decoder(path: Path, spec: BundleSpec, dec, encoder: Encoder, sentences: list[str], fp16: bool) -> tuple[BundleSpec, dict]:
    """Write the decoder graph (and its words) into the staged bundle, name it in ``spec``, and check the served
    decoder against torch on the vectors of ``sentences``: each greedy step's logits and the decoded words."""
    view = next(n for n, v in spec.views.items() if v.output == dec.output and v.postprocess is None)
    vectors = encoder.run_ids([encoder.fit(encoder.token_ids(s), "truncate") for s in sentences], view)  # raw, (n, dim)
    proto = decoder_to_onnx(dec, spec.views[view].dim, OPSET)
    if fp16:
        proto = store_weights_fp16(proto)
    dspec = dec.spec(OPSET, "float16" if fp16 else "float32", float(np.linalg.norm(vectors, axis=1).mean()))
    (path / dspec.file).write_bytes(proto.SerializeToString())
    if dec.words is not None:
        Vocabulary(dec.words).save(path / DECODER_VOCAB)
    spec = spec.model_copy(update={"decoder": dspec})
    atomic_write_text(path / BUNDLE_FILE, spec.model_dump_json(indent=2) + "\n")
    decoder = Decoder(load_bundle(path))
    return spec, check_decoder(dec, decoder, vectors[:16], max_tokens=min(20, dspec.max_tokens))


def export(checkpoints: list[str | Path], variant: str, opts: ExportOptions) -> Path:
    t0 = time.time()
    paths = [Path(p) for p in checkpoints]
    cks = [load_checkpoint(p) for p in paths]
    family = get_family(cks[0]["family"])
    cks = _order_parts(family, variant, cks, paths)
    for p, ck in zip(paths, cks):
        if not ck.get("final"):
            log.warning("%s: training has not finished (step %d); exporting it anyway", p, ck["progress"]["step"])
    cfgs = [family.Config(**ck["model_config"]) for ck in cks]
    prepared = Prepared.from_dict(cks[0]["prepared"])
    models = []
    for cfg, ck in zip(cfgs, cks):
        m = family.build(cfg, prepared)
        m.load_state_dict(ck["model"])
        models.append(m.eval())
    corpus = opts.corpus or cks[0]["train_config"]["corpus"]
    enc, vocab, report = family.export_encoder(cfgs, models, prepared, variant, corpus=corpus, **opts.family_options)
    enc.eval()
    if opts.fp16:
        round_to_fp16(enc)
    proto = to_onnx(enc, [v.output for v in enc.views.values()])
    if opts.fp16:
        proto = store_weights_fp16(proto)
    dec = family.export_decoder(cfgs, models, prepared)  # the same run's decoders, beside the encoder
    if dec is not None and opts.fp16:  # compact: word tables as int8 rows, the rest fp16 (what the check compares with)
        compact(dec.step)
        round_to_fp16(dec.step)
    spec = BundleSpec(
        name=opts.name or variant,
        family=family.name,
        variant=variant,
        description=family.describe(cfgs, variant),
        tokenizer=family.tokenizer,
        vocabulary=VocabularySpec(size=len(vocab), trained_size=min(len(prepared.vocab), len(vocab))),  # a cut vocabulary: all trained
        max_input_tokens=family.max_input_tokens(cfgs[0]),
        onnx=OnnxSpec(opset=OPSET, weights_dtype="float16" if opts.fp16 else "float32"),
        views=enc.views,
        default_view=enc.default_view,
        training=_provenance(cks, report, corpus),
    )
    staging = Path(tempfile.mkdtemp(prefix=f".{opts.out.name}.stage-", dir=opts.out.parent if opts.out.parent.exists() else None))
    try:
        bundle = write_bundle(staging / "bundle", spec, vocab, proto.SerializeToString())
        encoder = Encoder(bundle, providers=["CPUExecutionProvider"])
        sentences = sample_sentences(corpus, opts.check_sentences, seed=1)
        checks = _check(enc, encoder, sentences)
        if dec is not None:
            spec, checks["decoder"] = _add_decoder(bundle.path, spec, dec, encoder, sentences, opts.fp16)
        log.info("checks passed: %s", checks)
        spec = spec.model_copy(update={"training": {**spec.training, "export_checks": checks}})
        atomic_write_text(bundle.path / BUNDLE_FILE, spec.model_dump_json(indent=2) + "\n")
        bundle.spec = spec
        write_model_card(bundle, encoder, family, cfgs, cks, report, checks, corpus, opts.card_sample)
        with atomic_dir(opts.out) as d:
            shutil.copytree(staging / "bundle", d, dirs_exist_ok=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    size = sum(f.stat().st_size for f in opts.out.iterdir())
    log.info("bundle %s written: %.1f MB in %.0f s", opts.out, size / 1e6, time.time() - t0)
    return opts.out


def _provenance(cks: list[dict], report: dict, corpus: str) -> dict:
    parts = []
    for ck in cks:
        final = ck.get("final") or {}
        parts.append({
            "variant": ck["variant"],
            "steps": ck["progress"]["step"],
            "epochs": final.get("epochs"),
            "wall_time_s": final.get("wall_time_s", round(ck["progress"]["seconds"], 1)),
            "final_loss": final.get("final_loss"),
            "validation": final.get("validation"),
            "device": final.get("device"),
            "processes": final.get("processes"),
            "git_commit": ck.get("git_commit"),
            "date": final.get("date"),
            "train_config": ck["train_config"],
            "model_config": ck["model_config"],
        })  # fmt: skip
    out = {"corpus": cks[0]["corpus"], "exported": time.strftime("%Y-%m-%d"), **{k: v for k, v in parts[0].items()}}
    if len(parts) > 1:
        out = {"corpus": cks[0]["corpus"], "exported": time.strftime("%Y-%m-%d"), "parts": parts}
    compact = {k: v for k, v in report.items() if not k.startswith("_")}
    if compact:
        out["export_report"] = compact
    return out
