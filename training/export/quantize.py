"""A bundle → its int8 variant, written only where it is faithful, batch-independent and faster. Two methods:

* ``static`` (the default): ONNX Runtime's static int8 quantisation. Quantised nodes keep int8 weights and
  compute on uint8 activations whose scales were calibrated once on corpus sentences (QDQ format; ONNX
  Runtime fuses it into integer kernels).
* ``token``: matrix products in int8 with every activation row scaled at run time by its own range
  (:mod:`thoughtvec.training.export.quantize_tokens`): for transformers, whose activations vary from token to
  token more than one calibrated scale fits.

ONNX Runtime has
integer kernels for ``MatMul`` and ``Gather`` (and ``Attention``, ``LSTM``), none for ``GRU``: the
skip-thought and invertible encoders spend nearly all their FLOPs in GRUs, so only the mean-max
AAE (attention and feed-forward products) has anything to gain. The variant is written only when

* every view stays close to the float bundle: the smallest cosine over the scored sentences
  (after each view's post-processing) is at least ``min_cosine`` (0.99);
* a sentence's vector still does not depend on its batch (alone vs padded batch ≤ ``PADDING_TOL``);
* it is faster: in-process sentences/s at batch 32 at least ``min_speedup`` × the float bundle's,
  the two measured in alternation.

SentEval is not run here (the command stays under a minute); ``thoughtvec eval`` on both bundles
gives macro and STS-B to compare.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper
from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static

from thoughtvec.service.bundle.atomic import atomic_dir, atomic_write_text
from thoughtvec.service.bundle.format import BUNDLE_FILE, load_bundle
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.training.export.onnx_export import PADDING_TOL
from thoughtvec.training.export.quantize_tokens import rewrite

QUANTIZED_OPS = ["MatMul", "Gather"]  # the ops with CPU integer kernels that these graphs use


METHODS = {
    "static": "onnxruntime.quantization.quantize_static (QDQ, min/max calibration), int8 weights, uint8 activations",
    "token": "matrix products in int8 with each activation row scaled by its own range at run time (per token), "
    "int8 weights scaled per output column (thoughtvec.training.export.quantize_tokens)",
}


@dataclass
class QuantizeReport:
    method: str  # a key of METHODS
    int8: list[str]  # nodes quantised
    kept_float: list[str]  # candidates that would have cost too much cosine
    cosine_min: dict[str, float]  # per view, fp vs int8, after post-processing
    cosine_mean: dict[str, float]
    batch_dependence: float  # largest difference of a vector alone vs in a padded batch
    speed: dict[str, list[float]]  # "float" / "int8": sentences/s per round
    size_mb: dict[str, float]
    calibration_sentences: int
    sentences: int  # scored on

    @property
    def speedup(self) -> float:
        return max(self.speed["int8"]) / max(self.speed["float"])

    def as_dict(self) -> dict:
        return {
            "method": METHODS[self.method] + "; nodes chosen by cosine to float",
            "int8_nodes": self.int8,
            "float_nodes": self.kept_float,
            "cosine_to_float": {v: {"min": round(self.cosine_min[v], 5), "mean": round(self.cosine_mean[v], 5)} for v in self.cosine_min},
            "sentences_per_s_batch32": {k: [round(x) for x in v] for k, v in self.speed.items()},
            "batch_dependence_max_abs": self.batch_dependence,
            "model_mb": self.size_mb,
            "calibration_sentences": self.calibration_sentences,
            "sentences": self.sentences,
        }


def float_weights(model):
    """The graph with fp16-stored weights (``initializer → Cast(float)``) folded back into fp32
    initializers, so the quantiser sees the weights of each product."""
    inits = {t.name: t for t in model.graph.initializer}
    nodes, folded = [], []
    for n in model.graph.node:
        src = inits.get(n.input[0]) if n.op_type == "Cast" and n.input else None
        if src is not None and src.data_type == onnx.TensorProto.FLOAT16:
            folded.append(numpy_helper.from_array(numpy_helper.to_array(src).astype(np.float32), n.output[0]))
        else:
            nodes.append(n)
    used = {i for n in nodes for i in n.input}
    live = [t for t in model.graph.initializer if t.name in used] + folded
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    del model.graph.initializer[:]
    model.graph.initializer.extend(live)
    return model


def candidates(model, method: str = "static") -> dict[str, str]:
    """Nodes quantisation can take, with their op: products with a constant weight, lookups in a constant
    table (``static`` only; ``token`` takes products with a constant 2-D weight)."""
    consts = {t.name: len(t.dims) for t in model.graph.initializer}
    if method == "token":
        return {n.name: n.op_type for n in model.graph.node if n.op_type == "MatMul" and consts.get(n.input[1]) == 2}
    return {
        n.name: n.op_type
        for n in model.graph.node
        if (n.op_type == "MatMul" and n.input[1] in consts) or (n.op_type == "Gather" and n.input[0] in consts)
    }


def choose(nodes: dict[str, str], trial: Callable[[list[str]], float], min_cosine: float, log: Callable[[str], None]) -> list[str]:
    """The nodes that go to int8, ``trial`` giving a set's worst cosine: all of them if together they keep
    ``min_cosine``; else each scored alone, then from the least sensitive on, a node joins while the set keeps it."""
    together = trial(list(nodes)) if nodes else 0.0
    log(f"  all {len(nodes)} together: cosine {together:.4f}" + (" -> int8" if together >= min_cosine else f" < {min_cosine}: one by one"))
    if together >= min_cosine:
        return list(nodes)
    alone = {n: trial([n]) for n in nodes}
    chosen: list[str] = []
    for n in sorted(nodes, key=alone.__getitem__, reverse=True):
        if alone[n] >= min_cosine and trial([*chosen, n]) >= min_cosine:
            chosen.append(n)
        log(f"  {n}: alone {alone[n]:.4f} -> {'int8' if n in chosen else 'float'}")
    return chosen


def quantize_graph(fp32: Path, dest: Path, nodes: list[str], calibration: list[dict[str, np.ndarray]]) -> None:
    """Write ``fp32`` with ``nodes`` in int8 to ``dest``: static quantisation (QDQ), activation ranges
    calibrated (min/max) on ``calibration`` feeds. Static, not dynamic: dynamic quantisation scales each
    activation tensor by its own min/max at run time, over the whole batch, so a sentence's vector would
    depend on what it is batched with (measured on mean-max-aae: 0.07 largest difference, alone vs in a
    batch); fixed scales keep each row independent."""

    class Feeds(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter(calibration)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.it, None)

    quantize_static(str(fp32), str(dest), Feeds(), quant_format=QuantFormat.QDQ, op_types_to_quantize=QUANTIZED_OPS,
                    nodes_to_quantize=nodes, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    calibrate_method=CalibrationMethod.MinMax)  # fmt: skip


def feeds(enc: Encoder, sentences: list[str], batch: int = 32) -> list[dict[str, np.ndarray]]:
    """The graph's inputs for ``sentences``, ``batch`` at a time, padded as the encoder pads them."""
    ids = [enc.fit(enc.token_ids(s), "truncate") for s in sentences]
    return [enc.inputs(ids[i : i + batch]) for i in range(0, len(ids), batch)]


def batch_dependence(enc: Encoder, sentences: list[str], n: int = 64) -> float:
    """Largest difference, over every view, between sentences run alone and run in one padded batch."""
    ids = [enc.fit(enc.token_ids(s), "truncate") for s in sentences[:n]]
    worst = 0.0
    for v in enc.spec.views:
        together = enc.run_ids(ids, v)
        alone = np.stack([enc.run_ids([r], v)[0] for r in ids])
        worst = max(worst, float(np.abs(together - alone).max()))
    return worst


def worst_cosine(ref: Encoder, q: Encoder, sentences: list[str]) -> tuple[dict[str, float], dict[str, float]]:
    """Per view: the smallest and the mean cosine between the two encoders' normalised vectors."""
    views = list(ref.spec.views)
    a = ref.encode_views(sentences, views, batch_size=32)
    b = q.encode_views(sentences, views, batch_size=32)
    cos = {v: np.einsum("ij,ij->i", a[v], b[v]) for v in views}
    return {v: float(c.min()) for v, c in cos.items()}, {v: float(c.mean()) for v, c in cos.items()}


def _speed(enc: Encoder, ids: list[list[int]], view: str, seconds: float = 1.5) -> float:
    """Batch-32 sentences/s over whole passes through ``ids``, for at least ``seconds``."""
    enc.run_ids(ids[:32], view)  # warm-up at this shape
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for i in range(0, len(ids), 32):
            enc.run_ids(ids[i : i + 32], view)
        done += len(ids)
    return done / (time.perf_counter() - start)


def speeds(ref: Encoder, q: Encoder, sentences: list[str], rounds: int = 3) -> dict[str, list[float]]:
    """Batch-32 sentences/s of both, measured in alternation (the machine drifts between rounds)."""
    ids = sorted((ref.fit(ref.token_ids(s), "truncate") for s in sentences), key=len)
    out: dict[str, list[float]] = {"float": [], "int8": []}
    for _ in range(rounds):
        out["float"].append(_speed(ref, ids, ref.spec.default_view))
        out["int8"].append(_speed(q, ids, q.spec.default_view))
    return out


def quantize_bundle(
    src: str | Path,
    out: str | Path,
    sentences: list[str],
    *,
    min_cosine: float = 0.99,
    min_speedup: float = 1.05,
    threads: int | None = None,
    method: str = "static",
    log: Callable[[str], None] = print,
) -> QuantizeReport:
    """Write ``out``, the int8 variant of the bundle at ``src`` by ``method`` (a key of :data:`METHODS`), or
    raise ``ValueError`` saying which check it failed (nothing is written then).

    Which nodes go to int8 is chosen on ``sentences`` by :func:`choose`, scoring a set by the worst cosine
    over all views. (On mean-max-aae, statically, the attention's value product stays float: alone in int8 it
    takes the post-processed ``mean`` view to cosine 0.987.)"""
    src, out = Path(src), Path(out)
    bundle = load_bundle(src)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.stage-", dir=out.parent if out.parent.exists() else None))
    try:
        stage = staging / "bundle"
        shutil.copytree(src, stage)
        onnx_path = stage / bundle.spec.onnx.file
        fp32 = staging / "fp32.onnx"
        model = float_weights(onnx.load(str(src / bundle.spec.onnx.file)))
        onnx.save(model, str(fp32))
        nodes = candidates(model, method)
        if "MatMul" not in nodes.values():
            raise ValueError(f"{bundle.name}: no matrix product with constant weights to quantise (ONNX Runtime has no integer GRU kernel)")
        spec = bundle.spec.model_copy(
            update={
                "name": out.name,
                "description": bundle.spec.description
                + f"; int8 {'per-token' if method == 'token' else 'static'} quantisation of {bundle.name}",
                "onnx": bundle.spec.onnx.model_copy(
                    update={"weights_dtype": "int8", "cpu_runtime": "onnxruntime", "cpu_runtime_note": ""}
                ),  # a new graph: its runtime not yet measured
            }
        )
        atomic_write_text(stage / BUNDLE_FILE, spec.model_dump_json(indent=2) + "\n")
        ref = Encoder(bundle, providers=["CPUExecutionProvider"], threads=threads)

        calibration, scoring = sentences[: len(sentences) // 2], sentences[len(sentences) // 2 :]
        calibration_feeds = feeds(ref, calibration) if method == "static" else []  # per-token scales need none

        def trial(chosen: list[str]) -> tuple[dict[str, float], dict[str, float]]:
            if method == "token":
                onnx.save(rewrite(onnx.load(str(fp32)), chosen), str(onnx_path))
            else:
                quantize_graph(fp32, onnx_path, chosen, calibration_feeds)
            return worst_cosine(ref, Encoder.load(stage, providers=["CPUExecutionProvider"], threads=threads), scoring)

        log(
            f"{bundle.name}: {len(nodes)} candidate nodes ({method}); ranges calibrated on {len(calibration_feeds) and len(calibration)} sentences, scored on {len(scoring)}"
        )
        chosen = choose(nodes, lambda c: min(trial(c)[0].values()), min_cosine, log)
        if not any(nodes[n] == "MatMul" for n in chosen):
            raise ValueError(f"{bundle.name}: no matrix product stays within cosine {min_cosine} of float in int8")
        cmin, cmean = trial(chosen)
        q = Encoder.load(stage, providers=["CPUExecutionProvider"], threads=threads)
        dependence = batch_dependence(q, scoring)
        if dependence > PADDING_TOL:
            raise ValueError(f"{bundle.name}: int8 vectors depend on their batch: {dependence:.2g} > {PADDING_TOL} (alone vs padded batch)")
        speed = speeds(ref, q, scoring)
        size = {"float": round((src / bundle.spec.onnx.file).stat().st_size / 1e6, 1), "int8": round(onnx_path.stat().st_size / 1e6, 1)}
        report = QuantizeReport(
            method,
            chosen,
            sorted(set(nodes) - set(chosen)),
            cmin,
            cmean,
            dependence,
            speed,
            size,
            len(calibration_feeds) and len(calibration),
            len(scoring),
        )
        worst = min(cmin, key=cmin.__getitem__)
        log(
            f"smallest cosine to float: {cmin[worst]:.4f} ({worst}); batch 32: float {max(speed['float']):.0f}, int8 {max(speed['int8']):.0f} sent/s"
        )
        if report.speedup < min_speedup:
            raise ValueError(f"{bundle.name}: int8 is not faster here: {report.speedup:.2f}x < {min_speedup}x at batch 32")
        spec = spec.model_copy(update={"training": {**spec.training, "quantization": report.as_dict()}})
        atomic_write_text(stage / BUNDLE_FILE, spec.model_dump_json(indent=2) + "\n")
        card = stage / "MODEL_CARD.md"
        if card.is_file():
            head, _, rest = card.read_text(encoding="utf-8").partition("\n")
            note = f"\n> **int8 variant of `{bundle.name}`** (`thoughtvec quantize`): what follows is the float model's card; the last section says what quantisation changed.\n"
            card.write_text(head + "\n" + note + rest + _card_section(bundle.name, report), encoding="utf-8")
        with atomic_dir(out) as d:
            shutil.copytree(stage, d, dirs_exist_ok=True)
        return report
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _card_section(source: str, r: QuantizeReport) -> str:
    int8 = ", ".join(f"`{n}`" for n in r.int8)
    kept = ", ".join(f"`{n}`" for n in r.kept_float) or "none"
    rows = "\n".join(f"| {v} | {r.cosine_min[v]:.4f} | {r.cosine_mean[v]:.4f} |" for v in r.cosine_min)
    how = (f"ONNX Runtime's static int8 quantisation (activation ranges calibrated on {r.calibration_sentences} corpus "
           "sentences) of matrix products and embedding tables" if r.method == "static" else
           "its matrix products in int8, each activation row (one token) scaled by its own range at run time, the "
           "weights per output column")  # fmt: skip
    return (
        f"\n## int8 variant\n\nThis bundle is `{source}` with {how} (`thoughtvec quantize --method {r.method}`). In int8: {int8}; kept float, as int8 would take a view below cosine 0.99: {kept}. Model file "
        f"{r.size_mb['float']} → {r.size_mb['int8']} MB. Cosine of each view to the float bundle's, on {r.sentences} "
        f"sentences (largest difference of a vector alone vs in a padded batch: {r.batch_dependence:.1e}):\n\n| view | min | mean |\n|---|---:|---:|\n{rows}\n\nIn-process sentences/s at batch 32, "
        f"measured in alternation: float {', '.join(f'{x:.0f}' for x in r.speed['float'])}; int8 "
        f"{', '.join(f'{x:.0f}' for x in r.speed['int8'])}. The views' post-processing maps and heads are the float "
        f"bundle's. Compare SentEval with `thoughtvec eval --bundle models/{source}` and this bundle.\n"
    )
