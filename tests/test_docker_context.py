"""The image builds from an allow-listed context (``.dockerignore``): every package the project installs
must be in it, or ``pip install .`` in the Dockerfile silently installs a console script whose module is missing."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_installed_package_is_in_the_docker_build_context():
    folders = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    packages = sorted(set(folders.values()))  # the folders the installed packages come from
    assert packages, "pyproject names no packages"
    allowed = {line.strip() for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()}
    missing = [p for p in packages if f"!{p}/" not in allowed]
    assert missing == [], f".dockerignore leaves out installed packages {missing}: add '!<name>/' lines"
    assert {"!pyproject.toml", "!setup.py"} <= allowed, "pip install . reads pyproject.toml and setup.py (package discovery)"


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_milvus_compose_index_build_reads_the_sample_where_the_wheel_installs_it():
    """docker/milvus/compose.yml's thoughtvec-build step names a file under site-packages: it must be a
    package-data file of an installed package, at the path the package-dir mapping gives it."""
    text = (ROOT / "docker" / "milvus" / "compose.yml").read_text(encoding="utf-8")
    inputs = re.findall(r'"--input",\s*"([^"]+)"', text)
    assert len(inputs) == 1, f"one --input in thoughtvec-build, found {inputs}"
    installed = inputs[0].split("/site-packages/", 1)[1]  # e.g. thoughtvec/service/index/data/x.tsv.gz
    *parts, filename = installed.split("/")
    package = ".".join(parts)
    tool = _pyproject()["tool"]["setuptools"]
    roots = sorted(tool["package-dir"].items(), key=lambda kv: -len(kv[0]))
    root = next(((name, folder) for name, folder in roots if package == name or package.startswith(name + ".")), None)
    assert root, f"{inputs[0]}: {package!r} is not under any installed package ({sorted(tool['package-dir'])})"
    source = ROOT / root[1] / Path(*package[len(root[0]) :].lstrip(".").split(".")) / filename
    assert source.is_file(), f"{inputs[0]} would install from {source}, which does not exist"
    globs = tool["package-data"].get(package, [])
    assert any(source.match(g) for g in globs), f"{package} does not ship {filename} (package-data: {globs})"


def test_requirements_prints_an_extra_as_pyproject_declares_it():
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "docker" / "requirements.py"),
            str(ROOT / "pyproject.toml"),
            "--extra",
            "milvus",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    wanted = _pyproject()["project"]["optional-dependencies"]["milvus"]
    assert wanted and out == wanted
