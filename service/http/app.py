"""The FastAPI app factory. ``create_app(settings)`` is all a server or a test needs.

A FastAPI app on its public ground: one router per resource (``routes``), the exception handlers of the one error
table (``error_answers``), and one middleware, the door (``door.py``, CORS around it where configured): every
request is counted in the metrics, held to the request rules (the body limit, access by route and method over the
table ``routes.ACCESS``) and its JSON body to its route's shape and the JSON limits before anything parses it.
What lies below the public interfaces (uvicorn's protocol, the express lane of the hottest routes) is in
``transport.py``. Start-up runs in the background
(``lifespan``), so ``/health`` answers while models load and the default index builds; ``/ready``
tells when the models are warm.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from thoughtvec.service import __version__
from thoughtvec.service.core import tracing
from thoughtvec.service.core.engine import Core
from thoughtvec.service.core.metrics import Metrics
from thoughtvec.service.core.worker_group import WorkerGroup
from thoughtvec.service.http import openapi
from thoughtvec.service.http.door import Door
from thoughtvec.service.http.error_answers import error_handlers
from thoughtvec.service.http.routes import ACCESS, ROUTERS
from thoughtvec.service.http.rules import CORS_HEADERS, CORS_METHODS, RequestRules, check_access_table, routes_of
from thoughtvec.service.http.transport import http_protocol
from thoughtvec.service.settings import Settings

log = logging.getLogger(__name__)

DESCRIPTION = """Sentence embeddings from the bundles under the models folder: skip-thought, mean-max AAE and
invertible-decoder encoders trained here, and all-MiniLM-L6-v2, on ONNX Runtime with dynamic batching.

- **Embeddings**: OpenAI's `POST /v1/embeddings` (strings or cl100k token ids; `dimensions`, `normalize`, long
  texts split and pooled) and TEI's `POST /embed`; TEI's `POST /embed_sparse`: BM25's sparse vectors (a document's
  or a query's), for the sparse vectors of a vector database of your own.
- **Scores**: pair similarity (`/v1/similarity`, TEI's `/similarity`) and reranking (`/v1/rerank`, TEI's
  `/rerank`, Cohere's `/v2/rerank`).
- **Search**: indexes of documents kept in FAISS or in Milvus (`/v1/indexes`), searched by vectors (dense), by
  BM25 (lexical) or by both fused (hybrid, a new index's default) with `POST /v1/search`; a 2-D map of an index.
- **Generation**: sentences decoded from vectors by a bundle's own decoders (`POST /v1/generate`): a sentence
  reconstructed, a story of next sentences, the path between two sentences.
- **About the server**: `/v1/models`, `/info`, `/tokenize`, `/health`, `/ready`, `/metrics` (Prometheus).

Errors are `{"error": {"code", "message", "field"}}`; TEI's routes answer TEI's `{"error", "error_type"}`
and Cohere's rerank Cohere's `{"message"}`. With API keys configured, send `Authorization: Bearer <key>` on
every route but `GET /health`, the playground page (`GET /`) and its icon (`GET /favicon.ico`); index writes need
an admin key where admin keys are configured."""


def create_app(settings: Settings | None = None, settle_heap: bool = False, group: WorkerGroup | None = None) -> FastAPI:
    """The app on ``settings``; ``settle_heap``: after start-up, keep what it loaded out of the garbage collector's
    way (``core.engine.settle_heap``: what ``thoughtvec serve`` does; a process that makes many apps, as the tests
    do, should not); ``group``: the worker processes it is one of (``thoughtvec.service.http.worker_processes``)."""
    settings = settings or Settings()
    metrics = Metrics()
    core = Core(settings, metrics, group)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        log.info("serving %s (indexes in %s)", settings.models_dir, settings.index_dir)
        if settings.otlp_endpoint:
            start_tracing(settings)
        core.start_background(settle_heap)
        try:
            yield
        finally:
            await core.stop()
            if settings.otlp_endpoint:  # the last spans sent (a collector that does not answer: the exporter's timeout)
                await asyncio.to_thread(tracing.stop)

    # docs_url/redoc_url off: thoughtvec.service.http.routes.docs serves both pages with local assets (no CDN)
    app = FastAPI(
        title="thoughtvec",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        # FastAPI's OpenTelemetry hooks off: the service exports its own metrics (``/metrics``), and the hooks
        # would look up a provider on every request
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.core = core
    app.state.settings = settings
    for router in ROUTERS:
        app.include_router(router)
    for exc_class, handler in error_handlers(settings).items():
        app.add_exception_handler(exc_class, handler)
    openapi.install(app, settings, lambda: core.embedding.registry.default_model)  # the schema states the limits, names the default model
    routes = routes_of(app.routes)
    check_access_table(routes, ACCESS)  # ValueError: an app whose routes and access table differ does not start
    metrics.routes_known([(r.path_format, m) for r in routes for m in sorted(getattr(r, "methods", None) or ()) if m != "HEAD"])
    rules = RequestRules.of(settings)
    app.add_middleware(Door, api=app, rules=rules, access=ACCESS, metrics=metrics, settings=settings)
    if rules.cors_origins:  # around the door: a preflight is answered there, and every answer carries the headers
        app.add_middleware(
            CORSMiddleware, allow_origins=list(rules.cors_origins), allow_methods=list(CORS_METHODS), allow_headers=list(CORS_HEADERS)
        )
    return app


def start_tracing(settings: Settings) -> None:
    """Send every request's trace to ``settings.otlp_endpoint`` from now on; an ``ImportError`` naming the extra to
    install where OpenTelemetry's SDK is missing (the serving install leaves it out)."""
    try:
        from thoughtvec.service.core import tracing_otel  # noqa: PLC0415  # optional: the otel extra
    except ImportError as e:
        raise ImportError(
            f"otlp_endpoint is {settings.otlp_endpoint!r} but OpenTelemetry's SDK is not installed ({e}): pip install 'thoughtvec[otel]'"
        ) from e
    tracing.enable(tracing_otel.Exporter.to_otlp(settings))


def serving_app() -> FastAPI:
    """The app as ``thoughtvec serve`` runs it (settings from the environment, the heap settled after start-up),
    for another ASGI server's factory option, e.g. ``granian --interface asgi --factory
    thoughtvec.service.http.app:serving_app``."""
    return create_app(settle_heap=True)


def server_config(app: FastAPI | str, settings: Settings, **options: Any) -> uvicorn.Config:
    """uvicorn's configuration for ``app`` (or its factory's import string, for worker processes) from ``settings``
    (``options`` override it): what ``thoughtvec serve`` runs."""
    kw: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "log_level": settings.log_level,
        "access_log": settings.access_log,
        "http": http_protocol(),  # a response's head and body in one write
    }
    return uvicorn.Config(app, **(kw | options))
