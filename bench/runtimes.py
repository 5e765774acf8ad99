"""Each bundle's graph on ONNX Runtime and on OpenVINO, side by side, and the CPU runtime each should be served with.

    python -m thoughtvec.bench.runtimes                                  # every bundle under models/
    python -m thoughtvec.bench.runtimes --record                         # and write each choice into bundle.json

Per bundle, in process, on ``--threads`` threads (one run at a time), the first ``--sentences`` sentences of the
search sample (unsorted, planned into batches as the server plans them):

* **speed**: ``Encoder.encode`` sentences/s at batch 1 (the first ``--sentences-1`` sentences) and batch 32, ONNX
  Runtime and OpenVINO alternated ``--rounds`` times, each round of each in a process of its own (the best round of
  each; a shared machine drifts between runs);
* **fidelity**: the least cosine between the two runtimes' vectors of every view (after post-processing; each
  view's with ``--per-view``), and
  OpenVINO's largest difference between a sentence's vector alone and in a padded batch (``max |alone - batch|``);
* **choice**: ``openvino`` where it is at least ``--min-speedup`` times as fast at batch 32 (what a server under
  load runs: the batcher gathers 1-sentence requests into batches; batch 1 is a lone request's latency), its least
  cosine is at least 0.999 and a sentence's vector does not depend on its batch (within 1e-5, as the export
  checks); else ``onnxruntime``. ``--record`` writes it, with what it was measured on, into the bundle's
  ``onnx.cpu_runtime`` and ``onnx.cpu_runtime_note`` (the vectors' fingerprint does not change).

OpenVINO runs at its default inference precision on the CPU, bfloat16 where the CPU has it (its speed comes from
there: ``--precision f32`` measures it at float32; ``--graph FILE`` runs another graph of one bundle on OpenVINO, an
export or a quantisation of it, against the bundle's own on ONNX Runtime). Prints; asserts nothing. Needs the ``openvino`` extra. The dev
figures on each runtime: ``python -m thoughtvec.training.evaluation.runtime_check``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from thoughtvec.bench.load import load_sentences
from thoughtvec.service.bundle.atomic import atomic_write_text
from thoughtvec.service.bundle.format import BUNDLE_FILE, discover_bundles, load_bundle, parse_spec
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.core.runtime import OPENVINO, OpenVinoSession, openvino_support

MIN_COSINE = 0.999
PADDING_TOL = 1e-5  # as the export checks (training/export/onnx_export.py)


@dataclass
class Comparison:
    bundle: str
    rates: dict[str, dict[int, float]]  # runtime -> batch -> best sentences/s
    least_cosine: float
    views: dict[str, float]  # each view's least cosine between the two runtimes
    padding: float  # OpenVINO's max |alone - in a padded batch| over unit vectors
    precision: str

    def speedup(self, batch: int) -> float:
        return self.rates[OPENVINO][batch] / self.rates["onnxruntime"][batch]

    def choice(self, min_speedup: float) -> str:
        faithful = self.least_cosine >= MIN_COSINE and self.padding <= PADDING_TOL
        return OPENVINO if faithful and self.speedup(32) >= min_speedup else "onnxruntime"


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def rate(enc: Encoder, texts: list[str], batch: int) -> float:
    started = time.perf_counter()
    enc.encode(texts, batch_size=batch)
    return len(texts) / (time.perf_counter() - started)


def padding_gap(enc: Encoder, texts: list[str]) -> float:
    """The largest difference between a sentence's unit vector alone and in a batch padded to a longer sentence."""
    longest = max(texts, key=len)
    worst = 0.0
    for view in enc.spec.views:
        batch = enc.encode([*texts, longest], view, batch_size=len(texts) + 1)[:-1]
        alone = np.concatenate([enc.encode([t], view) for t in texts])
        worst = max(worst, float(np.abs(alone - batch).max()))
    return worst


def encoder(path: Path, runtime: str, args) -> Encoder:
    """The bundle on ``runtime``; on OpenVINO at ``--precision`` and on ``--graph`` where given."""
    enc = Encoder.load(path, threads=args.threads, runtime="openvino" if runtime == OPENVINO else "onnxruntime")
    if runtime == OPENVINO and (args.precision == "f32" or args.graph):  # another precision or graph, the same bundle
        bf16 = args.precision != "f32" and openvino_support().bf16
        enc.session = OpenVinoSession(args.graph or enc.bundle.onnx_path, threads=args.threads, bf16=bf16)
    return enc


def one_round(path: Path, texts: list[str], args) -> dict[int, float]:
    """``--one RUNTIME``: sentences/s at batch 32 and 1 of the bundle on that runtime alone in this process."""
    enc = encoder(path, args.one, args)
    for batch, some in ((32, texts), (1, texts[: args.sentences_1])):  # warm: arenas, and every batch shape once (OpenVINO
        enc.encode(some, batch_size=batch)  # prepares its kernels per shape, a few ms the first time): a server's steady state
    return {32: rate(enc, texts, 32), 1: rate(enc, texts[: args.sentences_1], 1)}


def compare(path: Path, texts: list[str], args) -> Comparison:
    """Agreement and batch independence here; each speed in a process of its own, so that one runtime's threads
    (OpenVINO's wait a while for work after a run) never take the cores from the other's measurement."""
    ort_enc, ov_enc = encoder(path, "onnxruntime", args), encoder(path, OPENVINO, args)
    views = {v: float((ov_enc.encode(texts, v) * ort_enc.encode(texts, v)).sum(1).min()) for v in ort_enc.spec.views}
    padding = padding_gap(ov_enc, texts[:32])
    assert isinstance(ov_enc.session, OpenVinoSession)
    precision = ov_enc.session.precision
    del ort_enc, ov_enc
    flags = ["--models-dir", str(args.models_dir), "--models", path.name, "--threads", str(args.threads),
             "--sentences", str(args.sentences), "--sentences-1", str(args.sentences_1), "--precision", args.precision,
             *(["--graph", str(args.graph)] if args.graph else [])]  # fmt: skip
    rates: dict[str, dict[int, float]] = {name: {1: 0.0, 32: 0.0} for name in ("onnxruntime", OPENVINO)}
    for r in range(args.rounds):
        for name in list(rates)[:: 1 if r % 2 == 0 else -1]:  # every other round the other way round
            cmd = [sys.executable, "-m", "thoughtvec.bench.runtimes", "--one", name, *flags]
            got = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()[-1])
            for batch in (1, 32):
                rates[name][batch] = max(rates[name][batch], got[str(batch)])
    return Comparison(path.name, rates, min(views.values()), views, padding, precision)


def record(path: Path, c: Comparison, args, versions: str) -> None:
    """Write the choice into ``onnx`` of the bundle's ``bundle.json``, atomically, and nothing else: the file keeps
    its layout (indent, escapes, fields left at their defaults), so its diff is the choice."""
    note = (
        f"{versions}; OpenVINO at {c.precision} over ONNX Runtime: batch 1 x{c.speedup(1):.2f}, batch 32 "
        f"x{c.speedup(32):.2f}; least cosine {c.least_cosine:.5f} over {args.sentences} search-sample sentences, "
        f"max |alone - batch| {c.padding:.1e}; {cpu_name()}, {args.threads} threads; python -m thoughtvec.bench.runtimes"
    )
    text = (path / BUNDLE_FILE).read_text(encoding="utf-8")
    data = json.loads(text)
    data["onnx"] |= {"cpu_runtime": c.choice(args.min_speedup), "cpu_runtime_note": note}
    parse_spec(data, str(path))  # still a valid bundle
    lines = text.splitlines()
    indent = len(lines[1]) - len(lines[1].lstrip()) if len(lines) > 1 else 2
    atomic_write_text(path / BUNDLE_FILE, json.dumps(data, indent=indent or 2, ensure_ascii="\\u" in text) + "\n")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models-dir", type=Path, default=Path("models"))
    p.add_argument("--models", help="comma-separated bundle names (default: every bundle under --models-dir)")
    p.add_argument("--sentences", type=int, default=2048, help="search-sample sentences at batch 32 and for fidelity")
    p.add_argument("--sentences-1", type=int, default=512, help="of those, sentences run one at a time")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--min-speedup", type=float, default=1.05, help="OpenVINO over ONNX Runtime at batch 32 to choose it")
    p.add_argument("--precision", choices=("default", "f32"), default="default", help="OpenVINO's inference precision")
    p.add_argument(
        "--graph",
        type=Path,
        help="OpenVINO runs this graph (ONNX, or OpenVINO IR .xml) in place of the bundle's own: another export or a "
        "quantisation of the one bundle named by --models; agreement is then with ONNX Runtime on the bundle's graph",
    )
    p.add_argument("--per-view", action="store_true", help="then each view's least cosine, per bundle")
    p.add_argument("--record", action="store_true", help="write each choice into its bundle.json")
    p.add_argument("--one", choices=("onnxruntime", OPENVINO), help=argparse.SUPPRESS)  # one round of one runtime, in its own process
    args = p.parse_args(argv)
    if args.graph and (args.record or not args.models or "," in args.models):
        p.error("--graph takes one bundle (--models NAME) and records nothing")
    support = openvino_support()
    if support.version is None:
        raise SystemExit("OpenVINO is not installed: pip install 'thoughtvec[openvino]'")
    import onnxruntime  # noqa: PLC0415

    versions = f"ONNX Runtime {onnxruntime.__version__}, OpenVINO {support.version}"
    if args.one:
        print(json.dumps(one_round(args.models_dir / args.models, load_sentences(None, args.sentences), args)))
        return
    paths = discover_bundles(args.models_dir)
    if args.models:
        wanted = args.models.split(",")
        paths = [q for q in paths if q.name in wanted]
    texts = load_sentences(None, args.sentences)
    print(f"# {versions}; {cpu_name()}, bf16 {'yes' if support.bf16 else 'no'}; {args.threads} threads; "
          f"{len(texts)} sentences ({args.sentences_1} at batch 1); best of {args.rounds} alternated rounds; sentences/s")  # fmt: skip
    print()
    print("| bundle | graph | ONNX Runtime, batch 1 | OpenVINO | × | ONNX Runtime, batch 32 | OpenVINO | × "
          "| least cosine | max \\|alone − batch\\| | choice |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    results = []
    for path in paths:
        c = compare(path, texts, args)
        results.append(c)
        r = c.rates
        graph = load_bundle(path).spec.onnx.weights_dtype
        print(f"| `{c.bundle}` | {graph} | {r['onnxruntime'][1]:,.0f} | {r[OPENVINO][1]:,.0f} | {c.speedup(1):.2f} "
              f"| {r['onnxruntime'][32]:,.0f} | {r[OPENVINO][32]:,.0f} | {c.speedup(32):.2f} | {c.least_cosine:.5f} "
              f"| {c.padding:.1e} | {c.choice(args.min_speedup)} |", flush=True)  # fmt: skip
        if args.record:
            record(path, c, args, versions)
    if args.per_view:
        print()
        for c in results:
            print(f"{c.bundle}: least cosine by view: " + ", ".join(f"{v} {x:.5f}" for v, x in c.views.items()))
    if args.record:
        print(f"\nrecorded in {len(results)} bundle.json files (onnx.cpu_runtime)")


if __name__ == "__main__":
    main()
