"""The import graph reads as layers: folders are rooms, imports are arrows, and there is no circle.

Every module of the installed packages (``service/``, ``training/``, ``bench/`` and ``thoughtvec/``, each
under its ``thoughtvec.*`` name from ``pyproject.toml``'s package-dir) is parsed (``ast``; imports inside
functions and under ``TYPE_CHECKING`` count too) and each import of ours must follow an arrow of
``ALLOWED``. Bottom to top: ``service.bundle`` (the contract training shares) <- ``service.index``
<- ``service.core`` <- ``service.http``; ``service.settings`` and ``service.errors`` are low shared
modules. The core and the commands know the index only through its contract (``_CONTRACT``: the
``IndexBackend`` protocol and its opener, the backend-neutral data and factory grammar, bulk builds and metadata
checks), never a backend (FAISS's or Milvus's modules, or ``faiss`` and ``pymilvus`` themselves), and so does the HTTP
layer; ``service.cli`` (the parsers) and ``service.handlers`` sit on top, and ``service.api`` (the Python API) uses the core beside HTTP; ``bench`` measures the service from outside; ``training`` uses the
bundle contract, the encoder and the index's ranking functions (BM25, fusion), never HTTP or the index
store (but for ``training.evaluation.milvus_fusion``, which compares Milvus's own rankers on a Milvus index, and
``training.evaluation.index_factories``, which measures FAISS's approximate indexes); ``thoughtvec`` composes the commands.
Inside ``training``, the flow: ``training.corpus`` <- ``training.train`` (the loop and the families) <- ``training.export``
(bundles, and what changes them afterwards) <- ``training.evaluation``; ``training.commands`` (the parsers) and
``training.handlers`` (what they run) sit on top, and nothing else imports evaluation.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOP = "thoughtvec"
S = f"{TOP}.service"

# layer -> the layers it may import (besides itself). A layer is a folder, or one shared module.
_SERVICE_LOW = {S, f"{S}.bundle", f"{S}.errors", f"{S}.settings", f"{S}.model_guide"}
# The index's ranking functions (BM25, fusion): pure, no FAISS or store, so the evaluation harness scores
# exactly what the server ranks with.
_RANKING = {f"{S}.index.lexical", f"{S}.index.fusion", f"{S}.index.search_settings"}
# The index contract: the protocol and the one place that opens a backend (backend.py), the data every backend
# speaks (contents.py, and the factory grammar every backend reads: factory_grammar.py), and what works over any
# backend (bulk builds and the document files they read, metadata checks). The rest of ``service.index`` is the
# backends themselves (FAISS: store, indexes, factory, wal; Milvus: milvus, milvus_schema).
_CONTENTS = f"{S}.index.contents"
_GRAMMAR = f"{S}.index.factory_grammar"
_INPUTS = f"{S}.index.inputs"  # the document files bulk builds read
_CONTRACT = {f"{S}.index.backend", _CONTENTS, _GRAMMAR, f"{S}.index.build", _INPUTS, f"{S}.index.jsonvalues"}
T = f"{TOP}.training"
# What every layer of training may use of the service (the bundle contract, the encoder, the ranking functions).
_TRAINING_LOW = {f"{S}.bundle", f"{S}.core", f"{S}.model_guide", f"{TOP}.paths"} | _RANKING
# training's flow, bottom to top: each layer may import the ones before it.
_FLOW = [f"{T}.corpus", f"{T}.train", f"{T}.export", f"{T}.evaluation"]
# Third-party packages only a backend may import.
BACKEND_PACKAGES = {"faiss", "pymilvus", "milvus_lite"}
ALLOWED: dict[str, set[str]] = {
    S: set(),  # service/__init__.py: the version, environment defaults
    f"{S}.bundle": set(),  # imports nothing else of ours
    f"{S}.model_guide": set(),  # the choices made on dev (a data file beside the bundles), read when a server starts
    f"{S}.settings": set(),
    f"{S}.errors": {f"{S}.bundle"},
    f"{S}.index.lexical": set(),  # BM25 alone: its settings are given to it
    f"{S}.index.fusion": set(),
    f"{S}.index.search_settings": {f"{S}.index.lexical", f"{S}.index.fusion", f"{S}.model_guide"},
    _CONTENTS: _SERVICE_LOW,
    _GRAMMAR: set(),  # what a factory string may look like: imports nothing else of ours
    f"{S}.index.jsonvalues": _SERVICE_LOW,
    f"{S}.index.build": _SERVICE_LOW | {_CONTENTS, _INPUTS, f"{S}.index.backend"},  # fills an index through the contract
    _INPUTS: _SERVICE_LOW | {_CONTENTS, f"{S}.index.jsonvalues"},
    f"{S}.index.backend": _SERVICE_LOW | _RANKING | {_CONTENTS, f"{S}.index"},  # opens the backend the settings name
    f"{S}.index": _SERVICE_LOW | _RANKING | {_CONTENTS, _GRAMMAR, f"{S}.index.jsonvalues"},  # the backends
    f"{S}.core": _SERVICE_LOW | _RANKING | _CONTRACT,
    f"{S}.http": _SERVICE_LOW | _RANKING | _CONTRACT | {f"{S}.core"},  # the index's contract only, as the core
    f"{S}.cli": _SERVICE_LOW | _RANKING | _CONTRACT | {f"{S}.core", f"{S}.http"},
    f"{S}.handlers": _SERVICE_LOW | _RANKING | _CONTRACT | {f"{S}.core", f"{S}.http"},  # what the serving commands run
    f"{S}.api": _SERVICE_LOW | _CONTRACT | {f"{S}.core"},  # the Python API: the core in process, beside HTTP (never over it)
    # the service measured from outside, and in process (request_walk.py serves the app through httpx)
    f"{TOP}.bench": _SERVICE_LOW | _RANKING | _CONTRACT | {f"{S}.index", f"{S}.core", f"{S}.cli", f"{S}.http", f"{S}.api", f"{TOP}.paths"},
    T: _TRAINING_LOW,  # training/__init__.py (and a module at training's root, until it finds its layer)
    **{layer: _TRAINING_LOW | set(_FLOW[:i]) for i, layer in enumerate(_FLOW)},
    # the harness's one module that measures a backend itself: Milvus's own hybrid rankers against the server's
    # fusion, over an index it makes through the Milvus store (nothing of training imports it: a command of its own)
    f"{T}.evaluation.milvus_fusion": _TRAINING_LOW | set(_FLOW) | _CONTRACT | {f"{S}.index"},
    # and the one that measures FAISS's approximate indexes against exact vectors, built as the server builds them
    f"{T}.evaluation.index_factories": _TRAINING_LOW | set(_FLOW) | _CONTRACT | {f"{S}.index"},
    f"{T}.commands": _TRAINING_LOW | set(_FLOW),  # the parsers: argparse and light settings (a handler only by name)
    f"{T}.handlers": _TRAINING_LOW | set(_FLOW),  # what the training commands run
    f"{TOP}.paths": set(),  # the checkout's folders, named once
    TOP: {f"{T}.commands", f"{S}.cli", f"{S}.api", f"{TOP}.bench", f"{TOP}.paths"},  # the command, and the Python API's entry
}


@cache
def package_dirs() -> dict[str, Path]:
    """Installed package name -> its folder, as pyproject.toml maps them."""
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return {name: ROOT / folder for name, folder in conf["package-dir"].items()}


def module_name(path: Path) -> str:
    """The installed name of a source file: the deepest mapped folder it lies in, then its own path."""
    name, folder = max(((n, d) for n, d in package_dirs().items() if path.is_relative_to(d)), key=lambda nd: len(nd[1].parts))
    parts = path.relative_to(folder).with_suffix("").parts
    rest = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join((name, *rest))


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for folder in set(package_dirs().values()) for p in sorted(folder.rglob("*.py"))}


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
    return target == TOP or target.startswith(TOP + ".")


def violations(graph: dict[str, list[tuple[str, int]]]) -> list[str]:
    bad = []
    for name, targets in graph.items():
        src = layer(name)
        for target, line in targets:
            if not ours(target):
                if src.startswith(S) and target.split(".")[0] == "torch":  # the serving install has no torch
                    bad.append(f"{name}:{line} imports {target}: service/ never imports training or torch")
                if target.split(".")[0] in BACKEND_PACKAGES and (src in _CONTRACT or src in (f"{S}.core", f"{S}.cli", f"{S}.handlers")):
                    bad.append(f"{name}:{line} imports {target}: only an index backend imports {target.split('.')[0]}")
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
        if layer(name) == "thoughtvec.service.bundle":
            assert all(t.startswith("thoughtvec.service.bundle") for t, _ in imports(name) if ours(t)), name


@pytest.mark.parametrize(
    "src, target, message",
    [
        ("thoughtvec.service.index.store", "thoughtvec.service.core.encoder", "thoughtvec.service.index -> thoughtvec.service.core"),
        ("thoughtvec.service.index.build", "thoughtvec.service.core.encoder", "thoughtvec.service.index.build -> thoughtvec.service.core"),
        ("thoughtvec.service.core.engine", "thoughtvec.service.http.schemas", "thoughtvec.service.core -> thoughtvec.service.http"),
        ("thoughtvec.service.bundle.format", "thoughtvec.service.errors", "thoughtvec.service.bundle -> thoughtvec.service.errors"),
        ("thoughtvec.training.train.trainer", "thoughtvec.service.index.store", "thoughtvec.training.train -> thoughtvec.service.index"),
        (
            "thoughtvec.service.index.lexical",
            "thoughtvec.service.index.store",
            "thoughtvec.service.index.lexical -> thoughtvec.service.index",
        ),
        ("thoughtvec.service.core.encoder", "torch", "never imports training or torch"),
        ("thoughtvec.service.core.indexing", "thoughtvec.service.index.store", "thoughtvec.service.core -> thoughtvec.service.index "),
        ("thoughtvec.service.core.engine", "thoughtvec.service.index.indexes", "thoughtvec.service.core -> thoughtvec.service.index "),
        ("thoughtvec.service.core.indexing", "thoughtvec.service.index.milvus", "thoughtvec.service.core -> thoughtvec.service.index "),
        ("thoughtvec.service.cli", "thoughtvec.service.index.milvus_schema", "thoughtvec.service.cli -> thoughtvec.service.index "),
        ("thoughtvec.service.http.schemas", "thoughtvec.service.index.factory", "thoughtvec.service.http -> thoughtvec.service.index "),
        (
            "thoughtvec.service.index.factory_grammar",
            "thoughtvec.service.index.factory",
            "thoughtvec.service.index.factory_grammar -> thoughtvec.service.index ",
        ),
        ("thoughtvec.service.core.engine", "faiss", "only an index backend imports faiss"),
        ("thoughtvec.service.index.contents", "pymilvus", "only an index backend imports pymilvus"),
        (
            "thoughtvec.service.index.contents",
            "thoughtvec.service.index.store",
            "thoughtvec.service.index.contents -> thoughtvec.service.index ",
        ),
        ("thoughtvec.service.core.engine", "thoughtvec.training.train.trainer", "thoughtvec.service.core -> thoughtvec.training"),
        # training's flow: post-processing (export) never reads the evaluation harness; the corpus and the families
        # never reach up; only the commands and handlers import evaluation
        (
            "thoughtvec.training.export.postprocess",
            "thoughtvec.training.evaluation.datasets",
            "thoughtvec.training.export -> thoughtvec.training.evaluation",
        ),
        (
            "thoughtvec.training.corpus.build",
            "thoughtvec.training.evaluation.datasets",
            "thoughtvec.training.corpus -> thoughtvec.training.evaluation",
        ),
        ("thoughtvec.training.corpus.vectors", "thoughtvec.training.train.data", "thoughtvec.training.corpus -> thoughtvec.training.train"),
        (
            "thoughtvec.training.train.families.invertible",
            "thoughtvec.training.export.postprocess",
            "thoughtvec.training.train -> thoughtvec.training.export",
        ),
        (
            "thoughtvec.training.train.trainer",
            "thoughtvec.training.handlers.train",
            "thoughtvec.training.train -> thoughtvec.training.handlers",
        ),
        (
            "thoughtvec.training.evaluation.runner",
            "thoughtvec.training.handlers.eval",
            "thoughtvec.training.evaluation -> thoughtvec.training.handlers",
        ),
        ("thoughtvec.cli", "thoughtvec.training.export.export", "thoughtvec -> thoughtvec.training.export"),
        ("thoughtvec.service.http.app", "thoughtvec.bench.bench", "thoughtvec.service.http -> thoughtvec.bench"),
    ],
)
def test_a_wrong_arrow_is_caught(src, target, message):
    graph = our_graph()
    graph[src] = [*graph[src], (target, 1)]
    assert any(message in v for v in violations(graph))


def test_a_circle_is_caught():
    graph = our_graph()
    graph["thoughtvec.service.core.planner"] = [*graph["thoughtvec.service.core.planner"], ("thoughtvec.service.core.batcher", 1)]
    assert ["thoughtvec.service.core.batcher", "thoughtvec.service.core.planner"] in cycles(graph)
