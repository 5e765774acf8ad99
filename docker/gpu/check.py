"""GPU serving check, run on a CUDA machine: where every bundle runs, GPU-vs-CPU parity, throughput, FAISS.

    python docker/gpu/check.py --models-dir models --out results/

For each bundle under ``--models-dir``:

1. placement: a CUDA session's profile lists the provider of every node it ran; a node on the CPU
   is reported by name (a silent CPU fallback is the failure this exists to catch);
2. parity: every view of 512 sample sentences on CUDA vs CPU, minimum cosine (target ≥ 0.9999),
   and padding invariance on CUDA (each sentence alone vs in a padded batch of longer ones);
3. in-process throughput at batch 32/128/512/2048 (``Encoder.encode``: tokenize, sort, run,
   normalise) and of the graph alone on pre-tokenized batches, with achieved FLOP/s from the
   graph's FLOPs per sentence (``thoughtvec.bench.flops``).

Then FAISS: exact inner-product search over 1 M random unit vectors of the default model's
dimension, queries/s on the CPU and, where FAISS has a GPU, on the GPU.

Prints Markdown tables and writes ``check.json`` under ``--out``. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import onnxruntime as ort  # noqa: E402

from thoughtvec.bench.bench import load_sentences  # noqa: E402
from thoughtvec.bench.flops import graph_flops  # noqa: E402
from thoughtvec.service.bundle.format import discover_bundles, load_bundle  # noqa: E402
from thoughtvec.service.core.encoder import CUDA, Encoder  # noqa: E402
from thoughtvec.service.index.indexes import gpu_count  # noqa: E402

CPU = "CPUExecutionProvider"


def gpu_name() -> str:
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "no nvidia-smi"


def placement(bundle_dir: Path, ids: list[list[int]]) -> dict[str, list[str]]:
    """Nodes per provider from one profiled CUDA run (ORT's profile names each node's provider)."""
    opts = ort.SessionOptions()
    opts.enable_profiling = True
    opts.profile_file_prefix = str(Path(tempfile.mkdtemp()) / "prof")
    opts.log_severity_level = 3
    sess = ort.InferenceSession(str(load_bundle(bundle_dir).onnx_path), opts, providers=[CUDA, CPU])
    lengths = np.array([len(s) for s in ids], np.int64)
    x = np.zeros((len(ids), int(lengths.max())), np.int64)
    for i, s in enumerate(ids):
        x[i, : len(s)] = s
    sess.run(None, {"input_ids": x, "lengths": lengths})
    events = json.loads(Path(sess.end_profiling()).read_text())
    out: dict[str, set[str]] = {}
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            out.setdefault(e["args"].get("provider", "?"), set()).add(
                e["args"].get("op_name", "?") + ":" + e["name"][: -len("_kernel_time")]
            )
    return {k: sorted(v) for k, v in out.items()}


def parity(gpu: Encoder, cpu: Encoder, texts: list[str]) -> dict[str, dict[str, float]]:
    views = list(gpu.spec.views)
    a = gpu.encode_views(texts, views, batch_size=128)
    b = cpu.encode_views(texts, views, batch_size=128)
    # padding on the GPU: each sentence alone vs among the longest sentences of the sample
    longest = sorted(texts, key=len)[-15:]
    alone = {v: np.concatenate([gpu.encode_views([t], [v])[v] for t in texts[:64]]) for v in views}
    padded = {v: np.concatenate([gpu.encode_views([t, *longest], [v])[v][:1] for t in texts[:64]]) for v in views}
    out = {}
    for v in views:
        cos = np.sum(a[v] * b[v], 1)  # both L2-normalised
        nonzero = np.linalg.norm(b[v], axis=1) > 0
        out[v] = {
            "min_cosine": float(cos[nonzero].min()),
            "max_abs_diff": float(np.abs(a[v] - b[v]).max()),
            "padding_max_abs_diff": float(np.abs(alone[v] - padded[v]).max()),
        }
    return out


def throughput(
    enc: Encoder, texts: list[str], batches: list[int], seconds: float, flops_per_token: float, flops_per_sentence: float
) -> list[dict]:
    rows = []
    ids_all = [enc.fit(enc.token_ids(t), "truncate") for t in texts]
    for b in batches:
        n = max(4 * b, 4096)
        sample = [texts[i % len(texts)] for i in range(n)]
        enc.encode(sample[: 2 * b], batch_size=b)  # warm-up at this shape
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            enc.encode(sample, batch_size=b)
            done += n
        e2e = done / (time.perf_counter() - start)
        # the graph alone: pre-tokenized, length-sorted batches, as the batcher hands them over
        order = sorted(range(n), key=lambda i: len(ids_all[i % len(ids_all)]))
        groups = [[ids_all[i % len(ids_all)] for i in order[s : s + b]] for s in range(0, n, b)]
        tokens = sum(len(s) for g in groups for s in g)
        enc.run_views(groups[-1], [enc.spec.default_view])
        done_s = done_t = 0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            for g in groups:
                enc.run_views(g, [enc.spec.default_view])
            done_s += n
            done_t += tokens
        dt = time.perf_counter() - start
        graph = done_s / dt
        flops = (done_t * flops_per_token + done_s * flops_per_sentence) / dt
        rows.append({"batch": b, "encode_sent_s": e2e, "graph_sent_s": graph, "graph_tflops": flops / 1e12})
    return rows


def faiss_search(dim: int, n: int, queries: int, k: int) -> dict:
    import faiss

    rng = np.random.default_rng(0)
    xb = rng.standard_normal((n, dim), dtype=np.float32)
    xb /= np.linalg.norm(xb, axis=1, keepdims=True)
    xq = xb[rng.choice(n, queries, replace=False)] + 0.01 * rng.standard_normal((queries, dim), dtype=np.float32)
    index = faiss.IndexFlatIP(dim)
    index.add(xb)
    out = {"vectors": n, "dim": dim, "k": k, "queries": queries, "faiss": faiss.__version__, "cpu_threads": faiss.omp_get_max_threads()}
    start = time.perf_counter()
    _, cpu_ids = index.search(xq, k)
    out["cpu_qps"] = queries / (time.perf_counter() - start)
    out["gpus"] = gpu_count()  # 0 where FAISS's GPU code cannot run on this GPU (it would abort this process)
    if out["gpus"]:
        gpu = faiss.index_cpu_to_all_gpus(index)
        gpu.search(xq[:10], k)
        start = time.perf_counter()
        _, gpu_ids = gpu.search(xq, k)
        out["gpu_qps"] = queries / (time.perf_counter() - start)
        out["gpu_top1_agrees"] = float(np.mean(gpu_ids[:, 0] == cpu_ids[:, 0]))
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models-dir", type=Path, default=ROOT / "models")
    p.add_argument("--out", type=Path, default=Path("gpu-check"))
    p.add_argument("--batches", default="32,128,512,2048")
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--faiss-vectors", type=int, default=1_000_000)
    p.add_argument("--faiss-dim", type=int, default=1024, help="the default model's dimension")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    texts = load_sentences(None, 4000)
    report: dict = {
        "gpu": gpu_name(),
        "onnxruntime": ort.__version__,
        "providers": ort.get_available_providers(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "bundles": {},
    }
    print(f"# GPU check: {report['gpu']}; onnxruntime {ort.__version__} {report['providers']}; {os.cpu_count()} CPUs\n", flush=True)
    batches = [int(b) for b in args.batches.split(",")]
    for bundle_dir in discover_bundles(args.models_dir):
        t0 = time.time()
        gpu = Encoder.load(bundle_dir, providers=[CUDA, CPU])
        cpu = Encoder.load(bundle_dir, providers=[CPU])
        name = gpu.name
        ids = [gpu.fit(gpu.token_ids(t), "truncate") for t in texts[:64]]
        fl = graph_flops(gpu.bundle.onnx_path)
        r = {
            "providers": gpu.providers,
            "device": gpu.device,
            "placement": placement(bundle_dir, ids),
            "parity": parity(gpu, cpu, texts[:512]),
            "flops": fl,
        }
        r["throughput"] = throughput(gpu, texts, batches, args.seconds, fl["per_token"], fl["per_sentence"])
        report["bundles"][name] = r
        on_cpu = r["placement"].get(CPU, [])
        print(
            f"## {name}: session providers {gpu.providers}; nodes on CUDA {len(r['placement'].get(CUDA, []))}, "
            f"on CPU {len(on_cpu)} {on_cpu[:8]}",
            flush=True,
        )
        print("| view | min cosine GPU vs CPU | max abs diff | padding max abs diff (GPU) |\n|---|---:|---:|---:|")
        for v, q in r["parity"].items():
            print(f"| `{v}` | {q['min_cosine']:.6f} | {q['max_abs_diff']:.2e} | {q['padding_max_abs_diff']:.2e} |")
        print(f"\nFLOPs: {fl['per_token'] / 1e6:.2f} M per token + {fl['per_sentence'] / 1e6:.2f} M per sentence")
        print("| batch | encode() sentences/s | graph sentences/s | graph TFLOP/s |\n|---:|---:|---:|---:|")
        for row in r["throughput"]:
            print(f"| {row['batch']} | {row['encode_sent_s']:.0f} | {row['graph_sent_s']:.0f} | {row['graph_tflops']:.2f} |")
        print(f"({time.time() - t0:.0f} s)\n", flush=True)
        (args.out / "check.json").write_text(json.dumps(report, indent=1))
    f = faiss_search(args.faiss_dim, args.faiss_vectors, 2000, 10)
    report["faiss"] = f
    print(
        f"## FAISS IndexFlatIP, {f['vectors']:,} × {f['dim']}, k={f['k']}, {f['queries']} queries (faiss {f['faiss']}):"
        f" CPU ({f['cpu_threads']} threads) {f['cpu_qps']:.0f} queries/s; GPUs visible to FAISS: {f['gpus']}"
        + (f"; GPU {f['gpu_qps']:.0f} queries/s (top-1 agrees {f['gpu_top1_agrees']:.3f})" if f["gpus"] else "")
    )
    (args.out / "check.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
