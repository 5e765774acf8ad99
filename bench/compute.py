"""Achieved op/s of each bundle's graph against the machine's practical peak. Prints; asserts nothing.

    python -m thoughtvec.bench.compute --models invertible-linear,uni-skip,mean-max-aae,all-minilm-l6-v2

1. The practical fp32 peak of numpy: a 2048³ float32 matrix product on 1 and 2 BLAS threads.
2. Per bundle, as the server runs it (:func:`served_model`: loaded, warmed and timed by the server's own
   registry, default settings): its operations per sentence (``bench/flops.py``, int8 and float apart,
   with attention's growth in the length); the practical peak ONNX Runtime reaches on the served session's
   threads (``bench/peak.py``: the graph's own int8 product and float ``MatMul``, 1024³); the graph alone on
   pre-tokenized sentences in arrival order, cut into batches as the server's worker cuts them
   (:func:`server_plan`), no tokenizing or post-processing: sentences/s, int8 op/s and float FLOP/s on the
   real tokens, and the share of the peak: the time the operations would take at peak over the time taken.
3. The graph alone at fixed batches of 32 and 128 (length-sorted, greedy), for comparison.
4. For the first bundle, ONNX Runtime's own profile at batch 32 (1 000 sentences): its time by operator.

``--variant GRAPH`` instead compares the first bundle (A) with ``GRAPH`` in place of its own ONNX file (B), e.g.
the output of ONNX Runtime's transformer optimizer: vectors side by side (faithful: max |A − B|, least cosine;
batch-independent: B alone against in a batch), and the graph alone on one fixed server plan, A and B
alternated ``--rounds`` times; ``--reference FOLDER`` adds both's cosine to the sentence-transformers model.

Needs ``onnx`` and ``sympy`` (``pip install 'thoughtvec[bench]'``; the training and dev installs have both).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import logging
import math
import os
import random
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from thoughtvec.bench.flops import graph_flops, graph_ops
from thoughtvec.bench.load import load_sentences
from thoughtvec.bench.peak import matmul_peak
from thoughtvec.service.bundle.format import load_bundle
from thoughtvec.service.core.batcher import LOOKAHEAD, Batcher, BatchLimits
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.core.planner import RunCost, plan_batches
from thoughtvec.service.core.registry import Model, Registry
from thoughtvec.service.core.runtime import OpenVinoSession
from thoughtvec.service.settings import Settings, add_cli_flags, load_settings, overrides_from_args

if TYPE_CHECKING:
    from thoughtvec.bench.flops import Ops


def sgemm_peak(threads: int, n: int = 2048, repeats: int = 5) -> float:
    """Best GFLOP/s of an n³ float32 product on ``threads`` BLAS threads."""
    from threadpoolctl import threadpool_limits  # noqa: PLC0415  # only for the in-process figures

    a = np.random.default_rng(0).random((n, n), dtype=np.float32)
    b = a.T.copy()
    best = 0.0
    with threadpool_limits(threads, user_api="blas"):
        a @ b
        for _ in range(repeats):
            t = time.perf_counter()
            a @ b
            best = max(best, 2 * n**3 / (time.perf_counter() - t) / 1e9)
    return best


def feeds(enc: Encoder, ids: list[list[int]], batch: int) -> list[dict[str, np.ndarray]]:
    """Length-sorted batches of ``ids`` (the planner's), padded as the encoder pads them."""
    return [enc.inputs([ids[i] for i in idx]) for idx in plan_batches([len(s) for s in ids], batch, 10**9)]


def graph_speed(enc: Encoder, ids: list[list[int]], batch: int, per_token: float) -> tuple[float, float, float]:
    """(sentences/s, GFLOP/s on real tokens, GFLOP/s on padded tokens) of the default view's output."""
    out = enc.spec.views[enc.spec.default_view].output
    fs = feeds(enc, ids, batch)
    for f in fs[:3]:
        enc.session.run([out], f)
    t = time.perf_counter()
    for f in fs:
        enc.session.run([out], f)
    dt = time.perf_counter() - t
    real, padded = sum(map(len, ids)), sum(f["input_ids"].size for f in fs)
    return len(ids) / dt, real * per_token / dt / 1e9, padded * per_token / dt / 1e9


def operator_profile(enc: Encoder, ids: list[list[int]]) -> list[tuple[str, float]]:
    """ONNX Runtime's profile of batch-32 runs of ``enc``'s graph: (operator, share of kernel time), largest first."""
    import onnxruntime as ort  # noqa: PLC0415  # loaded by the figures that run a graph

    opts = ort.SessionOptions()
    opts.enable_profiling = True
    opts.profile_file_prefix = os.path.join(tempfile.mkdtemp(prefix="tv-prof-"), "run")
    session = ort.InferenceSession(str(enc.bundle.onnx_path), opts, providers=["CPUExecutionProvider"])
    out = enc.spec.views[enc.spec.default_view].output
    for f in feeds(enc, ids, 32):
        session.run([out], f)
    agg: collections.Counter[str] = collections.Counter()
    with open(session.end_profiling()) as fh:
        for e in json.load(fh):
            if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
                agg[e["args"]["op_name"]] += e["dur"]
    total = sum(agg.values())
    return [(op, v / total) for op, v in agg.most_common()]


# -- as the server runs it ------------------------------------------------------------------


def server_settings(flags: Sequence[str] = ()) -> Settings:
    """The settings ``thoughtvec serve FLAGS`` runs with: the ``THOUGHTVEC_*`` environment, then the flags."""

    parser = argparse.ArgumentParser(prog="thoughtvec serve")
    add_cli_flags(parser)
    return load_settings(**overrides_from_args(parser.parse_args(list(flags))))


def served_model(bundle: Path, settings: Settings | None = None) -> Model:
    """``bundle`` loaded, warmed and calibrated by the server's own registry, then its batcher stopped: the
    encoder as served (threads, session options) with the batch limits and measured run cost the server
    plans with (``settings``: :func:`server_settings`' defaults)."""
    base = settings or server_settings()
    with tempfile.TemporaryDirectory(prefix="tv-compute-") as tmp:
        (Path(tmp) / bundle.name).symlink_to(bundle.resolve())  # the registry serves every bundle of its folder
        registry = Registry(base.model_copy(update={"models_dir": Path(tmp), "warmup": True}))

        async def load() -> None:
            await registry.load_all()
            await registry.stop()

        quiet = logging.getLogger("thoughtvec.service")
        level = quiet.level
        quiet.setLevel(logging.WARNING)  # the registry's load and calibration lines; the cost is printed with the run
        try:
            asyncio.run(load())
        finally:
            quiet.setLevel(level)
    if not registry.models:
        raise RuntimeError(f"{bundle} did not load: {registry.failed}")
    return next(iter(registry.models.values()))


def windows(n: int, limits: BatchLimits) -> list[range]:
    """The windows the server's worker takes off a backlog of ``n`` queued sentences: the ``LOOKAHEAD ×
    max_batch_size`` oldest at a time (``Batcher._take_window``)."""
    size = limits.max_batch_size * LOOKAHEAD
    return [range(start, min(start + size, n)) for start in range(0, n, size)]


def server_plan(lengths: Sequence[int], limits: BatchLimits, cost: RunCost | None) -> list[list[int]]:
    """The batches the server's worker runs when sentences of ``lengths`` queue in this order (a backlog): each
    of its :func:`windows` planned by :func:`plan_batches` with the batch limits and run cost. Indices into
    ``lengths``."""
    out: list[list[int]] = []
    for w in windows(len(lengths), limits):
        part = [lengths[i] for i in w]
        out += [[w.start + i for i in idx] for idx in plan_batches(part, limits.max_batch_size, limits.max_batch_tokens, cost)]
    return out


@dataclass
class GraphRun:
    """The graph alone over a plan: what ran, how long, and its operations on the real and the padded tokens."""

    runs: int
    sentences: int
    seconds: float
    real_tokens: int
    padded_tokens: int
    int8_ops: float  # on the real tokens (each sentence at its own length)
    float_ops: float
    padded_int8_ops: float  # as run: every row at its batch's longest
    padded_float_ops: float

    @property
    def sentences_per_s(self) -> float:
        return self.sentences / self.seconds


def graph_alone(
    enc: Encoder, ids: Sequence[Sequence[int]], batcher: Batcher, ops: Ops | None, seconds: float, refit: bool = True
) -> GraphRun:
    """The session alone on ``ids`` queued in this order, batched as ``batcher``'s worker batches them: window by
    window, each planned with its current run cost, every run timed and handed to the batcher, which refits
    its cost as it does on served runs (``refit``; off: one fixed plan, to compare graphs on it). Until
    ``seconds`` have passed (whole windows; at least one)."""
    out = enc.spec.views[enc.spec.default_view].output
    lim = batcher.limits
    first = windows(len(ids), lim)[0]
    for idx in plan_batches([len(ids[i]) for i in first], lim.max_batch_size, lim.max_batch_tokens, batcher.cost)[:3]:
        enc.session.run([out], enc.inputs([ids[first.start + i] for i in idx]))  # untimed: the arena grows
    run = GraphRun(0, 0, 0.0, 0, 0, 0.0, 0.0, 0.0, 0.0)
    start = time.perf_counter()
    for w in windows(len(ids), lim):
        for idx in plan_batches([len(ids[i]) for i in w], lim.max_batch_size, lim.max_batch_tokens, batcher.cost):
            batch = [ids[w.start + i] for i in idx]
            started = time.perf_counter()
            enc.session.run([out], enc.inputs(batch))
            longest = max(len(s) for s in batch)
            if refit and batcher.cost is not None:
                batcher._observe(len(batch), longest, time.perf_counter() - started)  # the server's refit, on these runs
            run.runs += 1
            run.sentences += len(batch)
            run.real_tokens += sum(len(s) for s in batch)
            run.padded_tokens += len(batch) * longest
            if ops is not None:
                for s in batch:
                    i8, fl = ops.sentence(len(s))
                    run.int8_ops, run.float_ops = run.int8_ops + i8, run.float_ops + fl
                i8, fl = ops.sentence(longest)
                run.padded_int8_ops += len(batch) * i8
                run.padded_float_ops += len(batch) * fl
        if time.perf_counter() - start >= seconds:
            break
    run.seconds = time.perf_counter() - start
    return run


@dataclass
class Peaks:
    """ONNX Runtime's practical peak on the served session's options: operations/s (nan where not measured)."""

    int8: float
    floating: float
    int8_op: str | None
    threads: int
    n: int


def ort_peaks(enc: Encoder, ops: Ops, n: int = 1024) -> Peaks:
    """The graph's own int8 product (if it has one) and float ``MatMul``, n³, on ``enc``'s session options."""

    assert not isinstance(enc.session, OpenVinoSession), "ONNX Runtime's peak needs ONNX Runtime's session"
    options = enc.session.get_session_options()
    int8 = matmul_peak(ops.int8_op, options, n, types=ops.int8_types) if ops.int8_op else math.nan
    return Peaks(int8, matmul_peak("MatMul", options, n), ops.int8_op, options.intra_op_num_threads, n)


def describe_ops(ops: Ops, length: int) -> str:
    """One line: operations per token, int8 and float, and the part that grows with the length."""
    i8, fl = ops.per_token(length)
    grow = ops.int8[2] + ops.floating[2]
    parts = ([f"int8 {i8 / 1e6:.2f} M op"] if ops.int8_op else []) + [f"float {fl / 1e6:.2f} MFLOP"]
    return (
        " + ".join(parts)
        + f" per token at {length} tokens a sentence"
        + (f" (of which {grow * length / 1e3:.1f} k grow with the length: {grow / 1e3:.2f} k x length, attention)" if grow else "")
    )


def describe_run(run: GraphRun, peaks: Peaks | None, counted: bool = True) -> str:
    """One line: the run's rates on the real tokens, each against its peak (where measured: ONNX Runtime's), and the
    share of the peak overall. ``counted``: the graph's operations were counted (``onnx`` and ``sympy`` installed)."""
    dt = run.seconds
    line = f"{run.sentences_per_s:.0f} sentences/s, {run.padded_tokens / max(run.real_tokens, 1):.2f} padded/real tokens"
    if not counted:
        return line + "; operations not counted (needs onnx and sympy: pip install 'thoughtvec[bench]')"
    if peaks is None:  # counted, but no peak to hold them against: the rates alone
        int8 = f"; int8 {run.int8_ops / dt / 1e9:.1f} G op/s" if run.int8_ops else ""
        return line + int8 + f"; float {run.float_ops / dt / 1e9:.1f} GFLOP/s"
    if run.int8_ops:
        line += f"; int8 {run.int8_ops / dt / 1e9:.1f} G op/s ({run.int8_ops / dt / peaks.int8:.0%} of {peaks.int8 / 1e9:.0f})"
    line += f"; float {run.float_ops / dt / 1e9:.1f} GFLOP/s ({run.float_ops / dt / peaks.floating:.0%} of {peaks.floating / 1e9:.0f})"
    at_peak = (run.int8_ops / peaks.int8 if run.int8_ops else 0.0) + run.float_ops / peaks.floating
    as_run = (run.padded_int8_ops / peaks.int8 if run.padded_int8_ops else 0.0) + run.padded_float_ops / peaks.floating
    return line + f"; achieved/peak {at_peak / dt:.0%} on real tokens ({as_run / dt:.0%} on padded)"


def describe_peaks(peaks: Peaks) -> str:
    n = peaks.n
    int8 = f"{peaks.int8_op} {peaks.int8 / 1e9:.0f} G op/s, " if peaks.int8_op else ""
    return f"ONNX Runtime's peak, {n}x{n}x{n}, {peaks.threads} thread(s) as served: {int8}MatMul {peaks.floating / 1e9:.0f} GFLOP/s"


def count_ops(onnx_path: Path) -> Ops | None:
    """The graph's operations, or None where ``onnx``/``sympy`` are not installed (the serving install)."""
    try:
        return graph_ops(onnx_path)
    except ImportError:
        return None


def arrival_order(n: int, seed: int = 0) -> list[int]:
    """A fixed shuffle of ``range(n)``: the order sentences from independent callers reach the queue."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return order


def measure_as_served(
    bundle: Path, texts: Sequence[str], seconds: float, peaks_cache: dict | None = None, server_flags: Sequence[str] = ()
) -> str:
    """Lines to print: the bundle's operations, the peak, and the graph alone with the server's plan (the server
    ``thoughtvec serve SERVER_FLAGS`` would run)."""
    model = served_model(bundle, server_settings(server_flags))
    enc, batcher = model.encoder, model.batcher
    ops = count_ops(bundle.resolve() / enc.bundle.onnx_path.relative_to(enc.bundle.path))  # served from a folder now gone
    ids = [enc.fit(enc.token_ids(texts[i]), "truncate") for i in arrival_order(len(texts))]
    typical = int(round(float(np.mean([len(s) for s in ids]))))
    rt = enc.runtime
    lines = [f"runtime: {rt} ({rt.note})"]
    peaks = None
    if ops is not None:
        lines.append(f"operations: {describe_ops(ops, typical)}")
    if ops is not None and rt.name != "onnxruntime":
        lines.append("peak: not measured (it is ONNX Runtime's kernels'; OpenVINO runs this graph)")
    elif ops is not None:
        key = (ops.int8_op, ops.int8_types)
        cache = peaks_cache if peaks_cache is not None else {}
        peaks = cache[key] = cache.get(key) or ort_peaks(enc, ops)
        lines.append(describe_peaks(peaks))
    lim = batcher.limits
    calibrated = batcher.cost.describe() if batcher.cost else "greedy"
    run = graph_alone(enc, ids, batcher, ops, seconds)
    refitted = f", refitted on the runs: {batcher.cost.describe()}" if batcher.cost else ""
    lines.append(
        f"graph alone, the server's plan (windows of {lim.max_batch_size * LOOKAHEAD} in arrival order, at most {lim.max_batch_size} "
        f"sentences / {lim.max_batch_tokens} tokens a run; calibrated: {calibrated}{refitted}; {run.sentences / max(run.runs, 1):.1f} "
        f"sentences a run over {run.sentences} sentences): {describe_run(run, peaks, ops is not None)}"
    )
    return "\n".join(lines)


@contextlib.contextmanager
def with_graph(bundle: Path, graph: Path) -> Iterator[Path]:
    """A copy of ``bundle`` (links to its files) whose ONNX file is ``graph``: the same bundle, another graph."""

    onnx_name = load_bundle(bundle).onnx_path.name
    with tempfile.TemporaryDirectory(prefix="tv-variant-") as tmp:
        copy = Path(tmp) / bundle.name
        copy.mkdir()
        for f in bundle.resolve().iterdir():
            (copy / f.name).symlink_to(graph.resolve() if f.name == onnx_name else f)
        yield copy


def compare_graphs(bundle: Path, graph: Path, texts: Sequence[str], seconds: float, rounds: int) -> str:
    """The bundle's graph (A) and ``graph`` (B) in its place, both served as the server serves them: their vectors
    side by side (faithful: max |A − B| and least cosine; batch-independent: B's vectors alone against in its
    batches), then the graph alone on one fixed plan (A's calibrated cost), A and B alternated ``rounds`` times."""
    lines = []
    with with_graph(bundle, graph) as other:
        a, b = served_model(bundle), served_model(other)
        ids = [a.encoder.fit(a.encoder.token_ids(texts[i]), "truncate") for i in arrival_order(len(texts))]
        probe = ids[:256]
        va, vb = a.encoder.run_ids(probe), b.encoder.run_ids(probe)
        alone = np.concatenate([b.encoder.run_ids([s]) for s in probe[:64]])
        na, nb = (v / np.linalg.norm(v, axis=1, keepdims=True) for v in (va, vb))
        lines.append(
            f"vectors of {len(probe)} sentences, B against A: max |diff| {np.abs(va - vb).max():.2e}, least cosine "
            f"{(na * nb).sum(1).min():.6f}; B alone against B in a batch: max |diff| {np.abs(alone - vb[:64]).max():.2e}"
        )
        b.batcher.cost = a.batcher.cost
        got: dict[str, list[float]] = {"A": [], "B": []}
        for _ in range(rounds):
            for label, m in (("A", a), ("B", b)):
                got[label].append(graph_alone(m.encoder, ids, m.batcher, None, seconds, refit=False).sentences_per_s)
        for label in ("A", "B"):
            lines.append(f"graph alone, the server's plan, {label}: " + ", ".join(f"{v:.0f}" for v in got[label]) + " sentences/s")
        gain = [vb_ / va_ for va_, vb_ in zip(got["A"], got["B"])]
        lines.append("B over A by round: " + ", ".join(f"x{g:.2f}" for g in gain) + f"; median x{float(np.median(gain)):.2f}")
    return "\n".join(lines)


def reference_cosines(bundle: Path, graph: Path, texts: Sequence[str], folder: Path) -> str:
    """Cosine of A's and B's vectors (``Encoder.encode``, normalised, batches of 32) to the sentence-transformers
    model at ``folder`` (the reference both were exported from), on ``texts``. Needs sentence-transformers."""
    from sentence_transformers import SentenceTransformer  # noqa: PLC0415  # optional: the baseline extra

    ref = SentenceTransformer(str(folder), device="cpu").encode(list(texts), normalize_embeddings=True, batch_size=64)
    lines = []
    with with_graph(bundle, graph) as other:
        for label, path in (("A", bundle), ("B", other)):
            cos = (Encoder.load(path).encode(list(texts), batch_size=32) * ref).sum(1)
            lines.append(f"{label} against the reference, {len(texts)} sentences: least cosine {cos.min():.6f}, mean {cos.mean():.6f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models-dir", default="models")
    ap.add_argument("--models", default="invertible-linear,uni-skip,mean-max-aae")
    ap.add_argument("--sentences", type=int, default=4000, help="sentences of the bundled search sample")
    ap.add_argument("--seconds", type=float, default=5.0, help="longest time the graph alone runs the server's plan")
    ap.add_argument("--variant", type=Path, help="compare: the first model with this ONNX graph in place of its own (B), alternated")
    ap.add_argument("--rounds", type=int, default=3, help="A/B rounds of --variant")
    ap.add_argument("--reference", type=Path, help="with --variant: the sentence-transformers folder A was exported from")
    args = ap.parse_args(argv)
    texts = load_sentences(None, args.sentences)
    if args.variant:
        bundle = Path(args.models_dir) / args.models.split(",")[0]
        print(f"A: {bundle}; B: A with the graph {args.variant}\n" + compare_graphs(bundle, args.variant, texts, args.seconds, args.rounds))
        if args.reference:
            print(reference_cosines(bundle, args.variant, texts[:512], args.reference))
        return
    for th in (1, 2):
        print(f"numpy sgemm 2048^3, {th} thread(s): {sgemm_peak(th):.0f} GFLOP/s", flush=True)
    peaks: dict = {}
    for k, name in enumerate(args.models.split(",")):
        print(f"{name} as served:\n" + measure_as_served(Path(args.models_dir) / name, texts, args.seconds, peaks), flush=True)
        enc = Encoder.load(os.path.join(args.models_dir, name))
        per_token = graph_flops(enc.bundle.onnx_path)["per_token"]
        ids = [enc.fit(enc.token_ids(t), "truncate") for t in texts]
        for batch in (32, 128):
            sps, real, padded = graph_speed(enc, ids, batch, per_token)
            print(
                f"{name} graph alone, batch {batch}: {sps:.0f} sent/s, {real:.0f} GFLOP/s on real tokens ({padded:.0f} on padded)",
                flush=True,
            )
        if k == 0:
            shares = operator_profile(enc, ids[:1000])
            print(
                f"{name}, batch 32, ONNX Runtime's profile, time by operator: " + ", ".join(f"{op} {100 * v:.0f} %" for op, v in shares[:6])
            )


if __name__ == "__main__":
    main()
