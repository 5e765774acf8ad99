"""Achieved FLOP/s of each bundle's graph against the machine's practical peak. Prints; asserts nothing.

    python -m thoughtvec.bench.compute --models invertible-linear,uni-skip,mean-max-aae

1. The practical fp32 peak: a 2048³ float32 matrix product in numpy on 1 and 2 BLAS threads.
2. Per bundle, the graph alone: pre-tokenized, length-sorted batches of 32 and 128 sentences through
   the ONNX session (all threads), no tokenizing or post-processing; FLOP/s counted by
   ``bench/flops.py`` (matrix products and recurrent cells) on the real and on the padded tokens.
3. For the first bundle, ONNX Runtime's own profile at batch 32 (1 000 sentences): its time by operator.

Needs ``onnx`` and ``sympy`` (the training and dev installs).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import tempfile
import time

import numpy as np

from thoughtvec.bench.bench import load_sentences
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.core.planner import plan_batches


def sgemm_peak(threads: int, n: int = 2048, repeats: int = 5) -> float:
    """Best GFLOP/s of an n³ float32 product on ``threads`` BLAS threads."""
    from threadpoolctl import threadpool_limits

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
    import onnxruntime as ort

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


def main(argv: list[str] | None = None) -> None:
    from thoughtvec.bench.flops import graph_flops

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models-dir", default="models")
    ap.add_argument("--models", default="invertible-linear,uni-skip,mean-max-aae")
    ap.add_argument("--sentences", type=int, default=4000, help="sentences of the bundled search sample")
    args = ap.parse_args(argv)
    for th in (1, 2):
        print(f"numpy sgemm 2048^3, {th} thread(s): {sgemm_peak(th):.0f} GFLOP/s", flush=True)
    texts = load_sentences(None, args.sentences)
    for k, name in enumerate(args.models.split(",")):
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
