"""One import name: ``pip install .`` puts ``thoughtvec`` on the import path and nothing else.

The repository keeps its top-level folders (``service/``, ``training/``, ``bench/``); ``pyproject.toml``
maps each under ``thoughtvec``. These tests hold the map, the package list and every import to it.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.test_layers import ROOT, package_dirs

SOURCE_TREES = ("service", "training", "bench", "thoughtvec", "tests", "docs", "docker")


def listed_packages() -> list[str]:
    """What setup.py's discovery finds: the packages ``pip install .`` installs."""
    spec = importlib.util.spec_from_file_location("thoughtvec_setup", ROOT / "setup.py")
    assert spec and spec.loader
    setup_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup_module)
    return setup_module.packages()


def test_every_package_folder_is_found_under_thoughtvec():
    found = set()
    for name, folder in package_dirs().items():
        for sub in [folder, *(p for p in folder.rglob("*") if p.is_dir() and p.name != "__pycache__")]:
            has_code = (sub / "__init__.py").is_file()
            data_only = not has_code and any(f.is_file() for f in sub.iterdir()) and not any(sub.glob("*.py"))
            if has_code or data_only:
                found.add(".".join((name, *sub.relative_to(folder).parts)))
    assert sorted(found) == sorted(listed_packages())
    assert all(p == "thoughtvec" or p.startswith("thoughtvec.") for p in listed_packages())


def _top_level_imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.append((node.lineno, node.module))
    return out


def test_no_code_imports_the_folders_by_their_own_names():
    """``import service`` would work from the repository root and nowhere else (and load modules twice)."""
    bad = []
    for tree in SOURCE_TREES:
        for path in sorted((ROOT / tree).rglob("*.py")):
            if "node_modules" in path.parts:
                continue
            for line, name in _top_level_imports(path):
                if name.split(".")[0] in ("service", "training", "bench"):
                    bad.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert bad == []


@pytest.mark.slow
def test_the_wheel_holds_only_thoughtvec(tmp_path):
    """Build the wheel as ``pip install .`` does and read what it would put on the path."""
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = tmp_path.glob("thoughtvec-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"thoughtvec"}
    assert "thoughtvec/service/index/data/search_sample.tsv.gz" in names  # package data comes along
    assert "thoughtvec/service/http/static/playground.html" in names
    assert not [n for n in names if n.endswith("model_guide.json")]  # the dev choices are data beside the bundles, not code
    assert "thoughtvec/bench/bench.py" in names and "thoughtvec/service/tools/bench.py" not in names
    assert not [n for n in names if "__pycache__" in n or n.startswith("thoughtvec/tests")]
