"""A real Milvus standalone server for the tests (the PyPI package ``milvus``, 2.3.5), and backend settings.

The server runs from a temporary folder on a free 127.0.0.1 port, started once per session by the
``milvus_server`` fixture (tests/service/index/conftest.py); where it cannot start (no ``milvus``
package, an unsupported platform) its tests skip, saying why, except under CI (``CI=true``), where
the Milvus tests must run and such a server fails them (:func:`unavailable`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import socket
import time
import uuid
from pathlib import Path
from typing import NoReturn

import pytest

from tests.service.conftest import free_port

BACKENDS = ["faiss", "milvus-lite", "milvus-server"]


def unavailable(reason: str) -> NoReturn:
    """Skip the test (or module) that needs Milvus, saying why; under CI (``CI=true``) fail it instead."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the Milvus tests must run in CI)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def need(module: str) -> None:
    """``module`` of the milvus extra (``pymilvus``, ``milvus_lite``) imports, else :func:`unavailable`."""
    if importlib.util.find_spec(module) is None:
        unavailable(f"the milvus extra ({module}) is not installed")


class TestMilvusServer:
    """Start, stop and restart one embedded Milvus standalone on a fixed port and data folder."""

    __test__ = False  # not a test class

    def __init__(self, base: Path):
        from milvus import MilvusServer  # the PyPI package ``milvus`` (dev extra)

        logging.getLogger("milvus").setLevel(logging.WARNING)
        self.server = MilvusServer()
        self.server.set_base_dir(str(base))
        self.port = free_port()
        self.server.listen_port = self.port
        # Strong reads wait for the next time tick: 200 ms by default, 20 ms here (docs/BENCHMARKS.md)
        self.server.config.set("proxy.timeTickInterval", 20)
        self.uri = f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 90) -> float:
        """Start and wait for its health check; fail at once if the process exits (its embedded etcd
        needs the fixed port 2380: a second Milvus on the machine stops this one)."""
        import urllib.request

        t = time.perf_counter()
        # the same port again: the package takes the next free one when it cannot bind it, and a stop leaves the
        # connections it closed in TIME_WAIT on that port (up to 60 s), so wait for it rather than move
        self.server.listen_port = self.port
        while not _bindable(self.port) and time.perf_counter() - t < timeout_s:
            time.sleep(0.5)
        self.server.wait_for_started = False
        self.server.start()
        health = f"http://127.0.0.1:{self.server.webservice_port}/healthz"
        while time.perf_counter() - t < timeout_s:
            if (code := self.server.server_proc.poll()) is not None:
                log = Path(self.server.config.base_data_dir) / "logs" / "milvus-stdout.log"
                self.server.stop()
                raise RuntimeError(f"the server exited with code {code} (another Milvus holding port 2380? see {log})")
            try:
                with urllib.request.urlopen(health, timeout=1) as r:
                    if b"OK" in r.read():
                        if int(self.server.listen_port) != self.port:  # clients know the URI, not the port it moved to
                            raise RuntimeError(f"the server came up on port {self.server.listen_port}, not {self.port}")
                        return time.perf_counter() - t
            except OSError:
                pass
            time.sleep(0.2)
        self.server.stop()
        raise TimeoutError(f"not healthy in {timeout_s:.0f} s")

    def stop(self) -> None:
        self.server.stop()


def _bindable(port: int) -> bool:
    """Whether ``port`` can be listened on now, as the ``milvus`` package tries it (no SO_REUSEADDR)."""
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def prefix() -> str:
    """A collection prefix of its own for each test, so tests on the shared server never see each other's indexes."""
    return f"t{uuid.uuid4().hex[:10]}_"


def backend_settings(backend: str, tmp_path: Path, server: TestMilvusServer | None, **kw) -> dict:
    """Settings overrides that put a test's indexes on ``backend``."""
    if backend == "faiss":
        return kw
    uri = str(tmp_path / "milvus.db") if backend == "milvus-lite" else server.uri
    return {
        "index_backend": "milvus",
        "milvus_uri": uri,
        # a random prefix only where tests share a server: Milvus Lite has a file per test, and a fixed prefix
        # keeps its collection names the same every run (Lite cannot index a few names: test_backends.py)
        "milvus_collection_prefix": prefix() if backend == "milvus-server" else "t_",
        "milvus_timeout_s": 2,
        "milvus_retries": 1,
    } | kw


@contextlib.contextmanager
def released_lite(path: Path):
    """Stop the Milvus Lite process pymilvus started for ``path`` once the test is done with it."""
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            from milvus_lite.server_manager import server_manager_instance

            server_manager_instance.release_server(str(path))
