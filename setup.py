"""Package discovery for the one import name.

``pyproject.toml`` holds everything else; this file only finds the packages. Each code folder of the
checkout installs under ``thoughtvec`` (pyproject's ``package-dir``: ``service/`` is ``thoughtvec.service``),
and every folder below one is a package here, found rather than listed, so a new package (or a folder
of package data) installs without an entry anywhere.
"""

import tomllib
from pathlib import Path

from setuptools import find_namespace_packages, setup

HERE = Path(__file__).resolve().parent


def packages() -> list[str]:
    mapped = tomllib.loads((HERE / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    found = []
    for name, folder in mapped.items():
        found.append(name)
        found += [f"{name}.{sub}" for sub in find_namespace_packages(str(HERE / folder), exclude=["__pycache__", "*.__pycache__"])]
    return sorted(found)


if __name__ == "__main__":  # setuptools runs this file as a script; tests import packages()
    setup(packages=packages())
