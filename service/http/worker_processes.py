"""``thoughtvec serve --workers N``: N server processes on one port, each with every model loaded.

One Python process parses, tokenizes and answers every request of its server, so on a GPU it serves a small share
of what the graph alone can do (docs/BENCHMARKS.md, "GPU: NVIDIA H100"); processes side by side multiply that. This
module is the supervisor and each worker's app factory:

1. the default index, where it must be built or finished, is built first, in a child process of its own (the
   models loaded there once, then let go), so that one process writes it;
2. uvicorn's supervisor binds the port once and starts N workers on it (the kernel spreads connections over them),
   restarting any that dies; each makes its app from the settings handed down (``WORKER_SETTINGS_VARIABLE``), with
   ONNX Runtime's threads shared out (the cores over N where ``ort_threads`` is 0);
3. the workers publish their readiness and metrics into a folder of the group's (``core.worker_group``), so any of them
   answers ``/ready`` and ``/metrics`` for all.

An index folder has one writer, so with a FAISS store the workers' indexes are read-only (a write answers 409
``indexes_read_only``); a Milvus server takes every worker's writes. Milvus Lite, one process per file, is refused.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import shutil
import tempfile
from pathlib import Path

from fastapi import FastAPI
from uvicorn.supervisors import Multiprocess

from thoughtvec.service import configure_logging
from thoughtvec.service.core.engine import Core
from thoughtvec.service.core.registry import default_ort_threads
from thoughtvec.service.core.worker_group import WorkerGroup
from thoughtvec.service.http.app import create_app, server_config
from thoughtvec.service.settings import WORKER_GROUP_VARIABLE, WORKER_SETTINGS_VARIABLE, Settings

log = logging.getLogger(__name__)


def worker_settings(settings: Settings) -> Settings:
    """What each worker runs with: no default-index build of its own (done before they start), and its share of
    the cores for ONNX Runtime where the settings leave that to the server."""
    threads = settings.ort_threads or max(1, default_ort_threads() // settings.workers)
    return settings.model_copy(update={"build_default_index": False, "ort_threads": threads})


def serve_workers(settings: Settings) -> int:
    """Build the default index if it must be, then run ``settings.workers`` workers until stopped; 0 when they ran,
    3 when the port could not be bound."""
    if settings.build_default_index:
        build_default_index(settings)
    group = Path(tempfile.mkdtemp(prefix="thoughtvec-workers-"))
    os.environ[WORKER_SETTINGS_VARIABLE] = worker_settings(settings).model_dump_json()
    os.environ[WORKER_GROUP_VARIABLE] = str(group)
    config = server_config("thoughtvec.service.http.worker_processes:worker_app", settings, factory=True, workers=settings.workers)
    try:
        try:
            sock = config.bind_socket()
        except SystemExit:  # uvicorn logged why (the port is taken, say)
            return 3
        log.info("%d workers on http://%s:%d", settings.workers, settings.host, settings.port)
        Multiprocess(config, sockets=[sock]).run()
    finally:
        shutil.rmtree(group, ignore_errors=True)
    return 0


def worker_app() -> FastAPI:
    """One worker's app (uvicorn's factory, in the worker process): the supervisor's settings, the group's folder."""
    settings = Settings.model_validate_json(os.environ[WORKER_SETTINGS_VARIABLE])
    configure_logging(settings.log_level)
    return create_app(settings, settle_heap=True, group=WorkerGroup(Path(os.environ[WORKER_GROUP_VARIABLE]), settings.workers))


def build_default_index(settings: Settings) -> None:
    """The default index built or finished in a child process (spawned: no model, CUDA context or thread of it
    stays in the supervisor), as one server would on its first start; a failure is logged and the workers start
    without it, as one server goes on without it."""
    child = multiprocessing.get_context("spawn").Process(
        target=_build_default_index, args=(settings.model_copy(update={"workers": 1}).model_dump_json(),), name="thoughtvec-default-index"
    )
    child.start()
    child.join()
    if child.exitcode != 0:
        log.error("the default index was not built (its process exited with %s); the workers start without it", child.exitcode)


def _build_default_index(settings_json: str) -> None:
    settings = Settings.model_validate_json(settings_json)
    configure_logging(settings.log_level)
    asyncio.run(_build(settings))


async def _build(settings: Settings) -> None:
    core = Core(settings)
    await core.indexes.load()
    try:
        if await core.indexes.default_index_needed():
            log.info("building the default index '%s' before the workers start", settings.default_index)
            await core.start_models()  # the models, then the build as one server does it
    finally:
        await core.stop()
