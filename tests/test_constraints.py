"""A stack that stays put: ``constraints.txt`` pins every package of the full install, every install reads it
(``make``, CI's ``make test``, both Docker images), and what is installed here is what it pins."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.test_layers import ROOT

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)$")


def pins() -> dict[str, str]:
    out = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        m = PIN.match(line.strip())
        assert m, f"constraints.txt: {line!r} is not name==version"
        out[canonicalize_name(m[1])] = m[2]
    return out


def declared(*extras: str) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = list(project["dependencies"]) + [r for e in extras for r in project["optional-dependencies"][e]]
    return {canonicalize_name(Requirement(r).name) for r in reqs}


def test_every_declared_dependency_of_the_full_install_is_pinned():
    missing = declared("train", "dev", "milvus", "docs", "otel", "openvino") - set(pins())
    assert not missing, f"pyproject.toml declares {sorted(missing)}, which constraints.txt does not pin: run `make lock`"


def test_the_pins_meet_pyprojects_own_bounds():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pinned = pins()
    for text in project["dependencies"]:
        req = Requirement(text)
        version = pinned.get(canonicalize_name(req.name))
        assert version is None or req.specifier.contains(version, prereleases=True), f"{req.name}=={version} is outside {req}"


def test_what_is_installed_is_what_is_pinned():
    off = {}
    for name, version in pins().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue  # an extra this environment does not have
        if installed.split("+")[0] != version:
            off[name] = (installed, version)
    assert not off, f"installed (left) differs from constraints.txt (right): {off}; install with -c constraints.txt"


def test_every_install_reads_the_constraints():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    installs = [line for line in makefile.splitlines() if "pip install" in line and "-e" in line]
    assert installs and all("$(CONSTRAINTS)" in line for line in installs), installs
    for dockerfile in ("docker/Dockerfile", "docker/Dockerfile.gpu"):
        text = (ROOT / dockerfile).read_text(encoding="utf-8")
        assert "-c constraints.txt" in text and "constraints.txt" in text.split("COPY pyproject.toml", 1)[1].split("\n", 1)[0], dockerfile
    assert "!constraints.txt" in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
