"""The import graph reads as layers: folders are rooms, imports are arrows, and there is no circle.

Every module of ``service/``, ``training/`` and ``thoughtvec/`` is parsed (``ast``; imports inside
functions and under ``TYPE_CHECKING`` count too) and each import of ours must follow an arrow of
``ALLOWED``. Bottom to top: ``service.bundle`` (the contract training shares) <- ``service.index``
<- ``service.core`` <- ``service.http``; ``service.settings`` and ``service.errors`` are low shared
modules; ``service.tools`` and ``service.cli`` sit on top; ``training`` uses the bundle contract and
the encoder, never HTTP or index code; ``thoughtvec`` composes the two commands.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("service", "training", "thoughtvec")

# layer -> the layers it may import (besides itself). A layer is a folder, or one shared module.
ALLOWED: dict[str, set[str]] = {
    "service": set(),  # service/__init__.py: the version, environment defaults
    "service.bundle": set(),  # imports nothing else of ours
    "service.settings": set(),
    "service.errors": {"service.bundle"},
    "service.index": {"service", "service.bundle", "service.errors", "service.settings"},
    "service.core": {"service", "service.bundle", "service.errors", "service.settings", "service.index"},
    "service.http": {"service", "service.bundle", "service.errors", "service.settings", "service.index", "service.core"},
    "service.tools": {"service", "service.bundle", "service.errors", "service.settings", "service.index", "service.core"},
    "service.cli": {
        "service",
        "service.bundle",
        "service.errors",
        "service.settings",
        "service.index",
        "service.core",
        "service.http",
        "service.tools",
    },
    "training": {"service.bundle", "service.core"},
    "thoughtvec": {"training", "service.cli"},
}
NEVER_IN_SERVICE = ("training", "torch")  # the serving install has neither


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def imports(name: str) -> Iterator[tuple[str, int]]:
    """Every module ``name`` imports (ours resolved to a module where ``from pkg import mod`` names one), with the line."""
    path = modules()[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield (sub if sub in modules() else target), node.lineno


def layer(name: str) -> str:
    """The most specific key of ``ALLOWED`` that ``name`` is or lies under."""
    keys = [k for k in ALLOWED if name == k or name.startswith(k + ".")]
    assert keys, f"{name} belongs to no layer of ALLOWED: add it"
    return max(keys, key=len)


def ours(target: str) -> bool:
    return target.split(".")[0] in PACKAGES


def violations(graph: dict[str, list[tuple[str, int]]]) -> list[str]:
    bad = []
    for name, targets in graph.items():
        src = layer(name)
        for target, line in targets:
            if not ours(target):
                if src.startswith("service") and target.split(".")[0] in NEVER_IN_SERVICE:
                    bad.append(f"{name}:{line} imports {target}: service/ never imports training or torch")
                continue
            dst = layer(target)
            if dst != src and dst not in ALLOWED[src]:
                bad.append(f"{name}:{line} imports {target}: {src} -> {dst} is not an allowed arrow")
    return bad


def cycles(graph: dict[str, list[tuple[str, int]]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w, _ in graph.get(v, []):
            if w not in graph or w == v:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def our_graph() -> dict[str, list[tuple[str, int]]]:
    return {name: list(imports(name)) for name in modules()}


def test_imports_follow_the_layers():
    assert violations(our_graph()) == []


def test_no_module_import_circle():
    assert cycles(our_graph()) == []


def test_the_layers_themselves_have_no_circle():
    graph = {k: [(v, 0) for v in vs] for k, vs in ALLOWED.items()}
    assert cycles(graph) == []


def test_bundle_imports_nothing_else_of_ours():
    for name in modules():
        if layer(name) == "service.bundle":
            assert all(t.startswith("service.bundle") for t, _ in imports(name) if ours(t)), name


@pytest.mark.parametrize(
    "src, target, message",
    [
        ("service.index.build", "service.core.encoder", "service.index -> service.core"),
        ("service.core.engine", "service.http.schemas", "service.core -> service.http"),
        ("service.bundle.format", "service.errors", "service.bundle -> service.errors"),
        ("training.trainer", "service.index.store", "training -> service.index"),
        ("service.core.encoder", "torch", "never imports training or torch"),
    ],
)
def test_a_wrong_arrow_is_caught(src, target, message):
    graph = our_graph()
    graph[src] = [*graph[src], (target, 1)]
    assert any(message in v for v in violations(graph))


def test_a_circle_is_caught():
    graph = our_graph()
    graph["service.core.planner"] = [*graph["service.core.planner"], ("service.core.batcher", 1)]
    assert ["service.core.batcher", "service.core.planner"] in cycles(graph)
