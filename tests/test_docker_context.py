"""The image builds from an allow-listed context (``.dockerignore``): every package the project installs
must be in it, or ``pip install .`` in the Dockerfile silently installs a console script whose module is missing."""

from __future__ import annotations

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
