"""A bundle's dev figures on each CPU runtime: the same graph on ONNX Runtime and on OpenVINO (bfloat16 where the CPU
has it), so a runtime is chosen only where it leaves them within noise (``python -m thoughtvec.bench.runtimes``
measures its speed and its vectors' agreement; this measures what the agreement does to quality).

For each bundle, the default view's cosine Spearman ρ on STS-B dev and SICK-R dev (the dev pairs post-processing is
chosen on, :mod:`thoughtvec.training.evaluation.dev_pairs`), on each runtime. Dev sets only.

    python -m thoughtvec.training.evaluation.runtime_check                      # every bundle under models/
    python -m thoughtvec.training.evaluation.runtime_check --models mean-max-aae,uni-skip
"""

from __future__ import annotations

import argparse
from pathlib import Path

from thoughtvec.service.bundle.format import discover_bundles
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.core.runtime import CpuRuntime, openvino_support
from thoughtvec.training.evaluation.dev_pairs import load_dev_pairs
from thoughtvec.training.export.postprocess import DevPairs

RUNTIMES: tuple[CpuRuntime, ...] = ("onnxruntime", "openvino")


def dev_rho(path: Path, runtime: CpuRuntime, pairs: DevPairs) -> dict[str, float]:
    """Spearman ρ per dev task (and their mean, ``dev``) of the default view, with ``runtime`` running the graph."""
    enc = Encoder.load(path, providers=["CPUExecutionProvider"], runtime=runtime)
    sentences = pairs.sentences()
    return pairs.score(dict(zip(sentences, enc.encode(sentences, normalize=False))))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models-dir", type=Path, default=Path("models"))
    p.add_argument("--models", help="comma-separated bundle names (default: every bundle under --models-dir)")
    args = p.parse_args(argv)
    support = openvino_support()
    if support.version is None:
        raise SystemExit("OpenVINO is not installed: pip install 'thoughtvec[openvino]'")
    paths = discover_bundles(args.models_dir)
    if args.models:
        paths = [q for q in paths if q.name in args.models.split(",")]
    pairs = load_dev_pairs()
    print(f"# default view, cosine Spearman ρ on dev; OpenVINO {support.version} at {'bfloat16' if support.bf16 else 'float32'}\n")
    print("| bundle | STS-B dev, ONNX Runtime | OpenVINO | SICK-R dev, ONNX Runtime | OpenVINO |")
    print("|---|---:|---:|---:|---:|")
    for path in paths:
        got = {rt: dev_rho(path, rt, pairs) for rt in RUNTIMES}
        ort, ov = got["onnxruntime"], got["openvino"]
        print(f"| `{path.name}` | {ort['STS-B']:.4f} | {ov['STS-B']:.4f} | {ort['SICK-R']:.4f} | {ov['SICK-R']:.4f} |", flush=True)


if __name__ == "__main__":
    main()
