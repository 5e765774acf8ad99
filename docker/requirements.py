"""Print the serving install's requirements, one per line, from pyproject.toml (the one place they are declared).

    python requirements.py pyproject.toml          # CPU image: [project].dependencies as they are
    python requirements.py pyproject.toml --gpu    # GPU image: onnxruntime and faiss-cpu swapped for the `gpu` extra
    python requirements.py pyproject.toml --extra milvus   # one extra's own (docker/milvus/compose.yml)

The images install these first (a cached layer that changes only with pyproject.toml), then the
project itself with ``--no-deps``. The swap exists because onnxruntime and onnxruntime-gpu both
provide the ``onnxruntime`` module, as faiss-cpu and faiss-gpu-cu12 both provide ``faiss``: pip
would install both of each pair and whichever unpacked last would win.
"""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path

# CPU package -> the GPU package that replaces it (both must appear where expected in pyproject.toml).
GPU_SWAPS = {"onnxruntime": "onnxruntime-gpu", "faiss-cpu": "faiss-gpu-cu12"}


def _name(requirement: str) -> str:
    """The normalised project name of a PEP 508 requirement string."""
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if not m:
        raise SystemExit(f"cannot read a package name from {requirement!r}")
    return re.sub(r"[-_.]+", "-", m.group(1)).lower()


def requirements(pyproject: Path, gpu: bool) -> list[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    deps: list[str] = list(project["dependencies"])
    if not gpu:
        return deps
    extra = {_name(r): r for r in project["optional-dependencies"]["gpu"]}
    names = {_name(r) for r in deps}
    for cpu, gpu_pkg in GPU_SWAPS.items():
        if cpu not in names or gpu_pkg not in extra:
            raise SystemExit(f"{pyproject}: expected {cpu} in dependencies and {gpu_pkg} in the gpu extra")
    return [extra[GPU_SWAPS[_name(r)]] if _name(r) in GPU_SWAPS else r for r in deps]


def extra(pyproject: Path, name: str) -> list[str]:
    """The requirements of the optional-dependency group ``name``."""
    groups = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    if name not in groups:
        raise SystemExit(f"{pyproject}: no extra {name!r} (there are {sorted(groups)})")
    return list(groups[name])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pyproject", type=Path)
    parser.add_argument("--gpu", action="store_true", help="swap in the gpu extra's onnxruntime-gpu and faiss-gpu-cu12")
    parser.add_argument("--extra", help="print this extra's requirements instead of the serving install's")
    args = parser.parse_args()
    if args.extra:
        print("\n".join(extra(args.pyproject, args.extra)))
    else:
        print("\n".join(requirements(args.pyproject, args.gpu)))


if __name__ == "__main__":
    main()
