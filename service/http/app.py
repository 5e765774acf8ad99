"""The FastAPI app factory. ``create_app(settings)`` is all a server or a test needs.

Every request comes in one way, through uvicorn (``server_config``) and the gate (``service/http/gate.py``,
CORS around it where configured): counted in the metrics, held to the request rules (the body limit, access by
route and method: ``service/http/rules.py``, over the table ``routes.ACCESS``), answered by its route (each
validates its JSON body once, from its bytes: ``routes.deps.JsonRoute``), its errors by the app's exception
handlers, anything unexpected a JSON 500. Start-up runs in the background
(``lifespan``), so ``/health`` answers while models load and the default index builds; ``/ready``
tells when the models are warm.
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from typing import Any

import uvicorn

from thoughtvec.service import __version__
from thoughtvec.service.core.engine import Core
from thoughtvec.service.core.metrics import Metrics
from thoughtvec.service.core.workers import WorkerGroup
from thoughtvec.service.http import openapi
from thoughtvec.service.http.gate import ServiceApp, install_gate
from thoughtvec.service.http.middleware import install_error_handlers
from thoughtvec.service.http.protocol import http_protocol
from thoughtvec.service.http.routes import ACCESS, ROUTERS
from thoughtvec.service.http.rules import RequestRules, routes_of
from thoughtvec.service.settings import Settings

log = logging.getLogger(__name__)

DESCRIPTION = """Sentence embeddings from skip-thought, mean-max AAE and invertible-decoder bundles,
with dynamic batching, pair similarity and FAISS search.

Errors are `{"error": {"code", "message", "field"}}`; TEI's routes answer TEI's `{"error", "error_type"}`
and Cohere's rerank Cohere's `{"message"}`. With API keys configured, send `Authorization: Bearer <key>` on
every route but `GET /health` and the playground page (`GET /`); index writes need an admin key where admin
keys are configured."""


def create_app(settings: Settings | None = None, settle_heap: bool = False, group: WorkerGroup | None = None) -> ServiceApp:
    """The app on ``settings``; ``settle_heap``: after start-up, keep what it loaded out of the garbage collector's
    way (``core.engine.settle_heap``: what ``thoughtvec serve`` does; a process that makes many apps, as the tests
    do, should not); ``group``: the worker processes it is one of (``thoughtvec.service.http.workers``)."""
    settings = settings or Settings()
    metrics = Metrics()
    core = Core(settings, metrics, group)

    @asynccontextmanager
    async def lifespan(app: ServiceApp):
        log.info("serving %s (indexes in %s)", settings.models_dir, settings.index_dir)
        core.start_background(settle_heap)
        try:
            yield
        finally:
            await core.stop()

    # docs_url/redoc_url off: thoughtvec.service.http.routes.docs serves both pages with local assets (no CDN)
    app = ServiceApp(
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
    app.state.rules = rules = RequestRules.of(settings)
    for router in ROUTERS:  # each router's routes as the app's own: one flat list matched per request
        app.router.routes.extend(router.routes)
    install_error_handlers(app, settings)
    openapi.install(app, settings)  # the schema states this server's limits
    metrics.routes_known([(r.path, m) for r in routes_of(app.routes) for m in sorted(getattr(r, "methods", None) or ()) if m != "HEAD"])
    install_gate(app, rules, ACCESS, metrics)  # before everything that answers: no way in skips a rule
    return app


def serving_app() -> ServiceApp:
    """The app as ``thoughtvec serve`` runs it (settings from the environment, the heap settled after start-up),
    for another ASGI server's factory option, e.g. ``granian --interface asgi --factory
    thoughtvec.service.http.app:serving_app``."""
    return create_app(settle_heap=True)


def server_config(app: ServiceApp | str, settings: Settings, **options: Any) -> uvicorn.Config:
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
