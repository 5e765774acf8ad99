"""Test-suite wide settings."""

import os
import tomllib
from pathlib import Path

import pytest

# Sleeping (not spinning) OpenMP threads: tests, training helpers and servers share 2 cores.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def pytest_configure(config):
    """A strict editable install (``make install-dev``) links each source file once: a module added since
    is not importable until the next install. Say that, instead of a puzzling ImportError deep in a test."""
    import thoughtvec  # its __path__ reaches the tree of links, if there is one

    linked = next((Path(p) for p in thoughtvec.__path__ if "__editable__" in p), None)
    if linked is None:
        return  # a plain editable or a regular install finds new modules by itself
    root = Path(__file__).resolve().parent.parent
    mapped = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    missing = []
    for name, folder in mapped.items():
        for source in sorted((root / folder).rglob("*.py")):
            link = linked.joinpath(*name.split(".")[1:], *source.relative_to(root / folder).parts)
            if not link.exists():
                missing.append(str(source.relative_to(root)))
    if missing:
        pytest.exit(
            f"not installed yet: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}; run `make install-dev`", returncode=4
        )
