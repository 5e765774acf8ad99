"""Index backends for the parametrised suite: FAISS, Milvus Lite, and a Milvus server started once per session."""

from __future__ import annotations

import contextlib

import pytest

from tests.service.conftest import serve_test, settings_for
from tests.service.index.milvus_support import BACKENDS, TestMilvusServer, backend_settings, need, released_lite, unavailable

_server_error: list[str] = []


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory):
    """The ``milvus`` package's standalone server on a free port; the tests that need it skip where it cannot
    start (fail under CI: :func:`unavailable`)."""
    if _server_error:
        unavailable(_server_error[0])
    try:
        import pymilvus  # noqa: F401

        server = TestMilvusServer(tmp_path_factory.mktemp("milvus-server"))
        server.start()
    except Exception as e:  # noqa: BLE001 - any reason it cannot run here is a skip (a failure in CI), named
        _server_error.append(f"the Milvus standalone server (PyPI package `milvus`) cannot start here: {type(e).__name__}: {e}")
        unavailable(_server_error[0])
    yield server
    server.stop()


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    if request.param != "faiss":
        need("pymilvus")
    return request.param


@pytest.fixture
def backend_client(backend, request, models_dir, tmp_path):
    """``make(**settings)`` -> a ready TestClient whose indexes live on ``backend``; ``make(restart=True, ...)`` stops
    the servers made before first (the next start of one server: a FAISS folder has one process at a time)."""
    server = request.getfixturevalue("milvus_server") if backend == "milvus-server" else None
    stack = contextlib.ExitStack()
    lite = tmp_path / "milvus.db"
    overrides: dict = {}

    def make(restart: bool = False, **kw):
        nonlocal overrides
        if restart:
            stack.close()
        if not overrides:
            overrides = backend_settings(backend, tmp_path, server)
        return stack.enter_context(serve_test(settings_for(models_dir, tmp_path / "indexes", **(overrides | kw))))

    with released_lite(lite), stack:
        yield make
