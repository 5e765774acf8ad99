"""Fixtures for the service tests: tiny bundles, an app factory over them, a real uvicorn server."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import httpx
import numpy as np
import pytest
import uvicorn
from fastapi.testclient import TestClient

from tests.service.openapi_check import check_responses
from tests.tiny_bundle import make_tiny_bundle
from thoughtvec.bench.bench import free_port
from thoughtvec.paths import REPO as ROOT
from thoughtvec.service.bundle.fingerprint import fingerprint
from thoughtvec.service.bundle.format import load_bundle
from thoughtvec.service.bundle.heads import RelatednessHead, save
from thoughtvec.service.http.app import create_app, server_config
from thoughtvec.service.model_guide import GUIDE_FILE
from thoughtvec.service.settings import Settings

SENTENCES = [
    "the cat sat on the table .",
    "a dog ran in the city",
    "the old man read a letter by the river , and the child opened the door .",
    "she walked",
    "they drove a red car fast from the house to the big green tree in the new city , and it was slow",
    "i",
    "the happy woman sleeps",
]


def write_head(bundle_dir: Path, dim: int, view: str = "mean", seed: int = 0) -> None:
    """Add a random relatedness head to a tiny bundle (bundle.json references it)."""
    rng = np.random.default_rng(seed)
    save(bundle_dir / "relatedness.npz", RelatednessHead(W=rng.standard_normal((2 * dim, 5)), b=rng.standard_normal(5)))
    meta = json.loads((bundle_dir / "bundle.json").read_text())
    meta["heads"] = {"relatedness": {"file": "relatedness.npz", "view": view}}
    (bundle_dir / "bundle.json").write_text(json.dumps(meta))


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory) -> Path:
    """``tiny`` (dim 8, 32 tokens, with a relatedness head) and ``tiny2`` (dim 4, another seed)."""
    root = tmp_path_factory.mktemp("models")
    make_tiny_bundle(root / "tiny", name="tiny")
    write_head(root / "tiny", 8)
    make_tiny_bundle(root / "tiny2", name="tiny2", dim=4, seed=3)
    return root


SEARCH_MODEL = "tiny-search"  # the bundle a test models folder's guide measured for retrieval and hybrid search


def write_guide(models_dir: Path, measured: Iterable[str], *, default: Sequence[str] = (), retrieval: Sequence[str] = (),
                hybrid: Sequence[str] = (), search: bool = True) -> Path:  # fmt: skip
    """A model guide in ``models_dir`` that measured the bundles ``measured`` (their fingerprints as they are now),
    with these choices; ``search``: the repository guide's analyser, BM25 and fusion settings (what a search is
    measured with), else none (the fallback)."""
    models = {}
    for name in measured:
        bundle = load_bundle(models_dir / name)
        models[name] = {
            "fingerprint": fingerprint(bundle, bundle.spec.default_view),
            "best_for": [],
            "best_trained_here_for": [],
            "dev": None,
        }
    choices: dict = {"default_models": list(default), "retrieval_models": list(retrieval), "hybrid_models": list(hybrid)}
    if search:
        choices["search"] = json.loads((ROOT / "models" / GUIDE_FILE).read_text(encoding="utf-8"))["choices"]["search"]
    path = models_dir / GUIDE_FILE
    path.write_text(json.dumps({"generated_by": "a test", "choices": choices, "models": models}), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def search_models_dir(models_dir, tmp_path_factory) -> Path:
    """``tiny`` and ``tiny2``, and a tiny bundle (dim 6), :data:`SEARCH_MODEL`, that the folder's guide measured as
    the model chosen for retrieval on dev and one whose hybrid search beat BM25 (as the real guide says of the
    reference encoder), so a new index there defaults to hybrid search over it, as it does with the real one."""
    root = tmp_path_factory.mktemp("search-models")
    for name in ("tiny", "tiny2"):
        shutil.copytree(models_dir / name, root / name)
    make_tiny_bundle(root / SEARCH_MODEL, name=SEARCH_MODEL, dim=6, seed=7)
    write_guide(root, ["tiny", "tiny2", SEARCH_MODEL], retrieval=[SEARCH_MODEL, "tiny"], hybrid=[SEARCH_MODEL])
    return root


def write_sample(path: Path, n: int = 60) -> Path:
    """A fake ``search_sample.tsv.gz`` (the corpus engineer produces the real one)."""
    rng = np.random.default_rng(0)
    words = "the a man woman dog cat sat ran read walked city river house book red old".split()
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for i in range(n):
            f.write(f"book{i % 3}\t{' '.join(rng.choice(words, size=rng.integers(3, 12)))} .\n")
    return path


def settings_for(models_dir: Path, index_dir: Path, **kw) -> Settings:
    base = dict(models_dir=models_dir, index_dir=index_dir, build_default_index=False, default_model="tiny", max_wait_ms=1.0)
    return Settings(**(base | kw))


def wait_ready(client, timeout: float = 20.0) -> None:
    core = client.app.state.core  # asked directly: /ready may need a key
    deadline = time.time() + timeout
    while time.time() < deadline:
        if core.readiness()[0]:
            return
        time.sleep(0.02)
    raise AssertionError(f"not ready: {core.readiness()[1]}")


@contextlib.contextmanager
def serve_test(settings: Settings, headers: dict | None = None) -> Iterator[TestClient]:
    """An app on ``settings`` behind a TestClient, started and ready; every answer is checked against the OpenAPI schema.
    Once it stops, what the end of a server's process lets go of is let go of, whatever its shutdown did (a test may
    make its close a crash): the next app on its index folder can take it, as the next process could."""
    app = create_app(settings)
    try:
        with TestClient(app, headers=headers or {}) as client:
            client.app.state.response_checker = check_responses(client, app)
            wait_ready(client)
            yield client
    finally:
        process_ended(app.state.core.indexes.store)


def process_ended(store) -> None:
    """A FAISS store's descriptors closed, its folder lock among them, as the kernel closes a dead process's."""
    from tests.service.index.stores import crash  # FAISS's store: already loaded wherever a server used it
    from thoughtvec.service.index.store import IndexStore

    if isinstance(store, IndexStore):
        crash(store)


@pytest.fixture
def make_client(models_dir, tmp_path):
    """``make_client(**settings)`` -> a ready TestClient (indexes under tmp_path/indexes). The clients of one test run
    at once, so each after the first has an index folder of its own (one process holds a folder)."""
    stack = contextlib.ExitStack()
    made = 0

    def make(headers: dict | None = None, **kw) -> TestClient:
        nonlocal made
        made += 1
        folder = tmp_path / ("indexes" if made == 1 else f"indexes-{made}")
        return stack.enter_context(serve_test(settings_for(models_dir, folder, **kw), headers))

    with stack:
        yield make


@pytest.fixture
def client(make_client) -> TestClient:
    return make_client()


@contextlib.contextmanager
def live_server(settings: Settings) -> Iterator[tuple[str, object]]:
    """A real uvicorn on 127.0.0.1:<free port> in a thread; yields (base URL, app)."""
    app = create_app(settings)
    port = free_port()
    server = uvicorn.Server(server_config(app, settings, host="127.0.0.1", port=port, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    try:
        import httpx

        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                key = {"Authorization": f"Bearer {settings.api_keys[0]}"} if settings.api_keys else None
                if httpx.get(base + "/ready", timeout=1, headers=key).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        else:
            raise AssertionError("live server not ready")
        yield base, app
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        process_ended(app.state.core.indexes.store)


REPO = Path(__file__).resolve().parents[2]


def serve_process(models_dir: Path, *flags: str, key: str | None = None, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    """A real ``thoughtvec serve`` subprocess for the tiny model on 127.0.0.1:<free port>, ready (asked with
    ``key`` where the flags set API keys; ``env`` added to this environment); returns (process, base URL). The
    caller stops it."""
    port = free_port()
    cmd = [sys.executable, "-m", "thoughtvec.service.cli", "serve", "--models-dir", str(models_dir), "--port", str(port), "--default-model", "tiny",
           "--no-build-default-index", "--no-warmup", "--log-level", "warning", *flags]  # fmt: skip
    env = os.environ | {"PYTHONPATH": str(REPO)} | (env or {})
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
        try:
            headers = {"Authorization": f"Bearer {key}"} if key else None
            if httpx.get(base + "/ready", timeout=1, headers=headers).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("server not ready in 60 s")
