"""The FastAPI app factory. ``create_app(settings)`` is all a server or a test needs.

Middleware, outermost first: metrics (sees every answer, 401/413 included) → the request rules
(CORS → body limit → access by route and method: ``service/http/rules.py``, over the table
``routes.ACCESS``) → catch-all (an unexpected exception becomes
a JSON 500) → routes (each validates its JSON body once, from its bytes: ``routes.deps.JsonRoute``).
Every request comes in this one way, through uvicorn (``server_config``). Start-up runs in the background
(``lifespan``), so ``/health`` answers while models load and the default index builds; ``/ready``
tells when the models are warm.
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI

from thoughtvec.service import __version__
from thoughtvec.service.core.engine import Core
from thoughtvec.service.core.metrics import Metrics, MetricsMiddleware
from thoughtvec.service.http import openapi
from thoughtvec.service.http.middleware import CatchAllMiddleware, install_error_handlers
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


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    metrics = Metrics()
    core = Core(settings, metrics)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        log.info("serving %s (indexes in %s)", settings.models_dir, settings.index_dir)
        core.start_background()
        try:
            yield
        finally:
            await core.stop()

    # docs_url/redoc_url off: thoughtvec.service.http.routes.docs serves both pages with local assets (no CDN)
    app = FastAPI(
        title="thoughtvec",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        # FastAPI's OpenTelemetry hooks off: the service exports its own metrics (``/metrics``), and the hooks
        # would look up a tracer provider on every request
        telemetry={"tracing": False, "metrics": False},
    )
    app.state.core = core
    app.state.settings = settings
    app.state.rules = rules = RequestRules.of(settings)
    for router in ROUTERS:  # each router's routes as the app's own: one flat list matched per request
        app.router.routes.extend(router.routes)
    install_error_handlers(app, settings)
    openapi.install(app, settings)  # the schema states this server's limits
    metrics.routes_known([(r.path, m) for r in routes_of(app.routes) for m in sorted(getattr(r, "methods", None) or ()) if m != "HEAD"])
    # add_middleware wraps what is there: the last added is the outermost.
    app.add_middleware(CatchAllMiddleware)
    rules.install(app, ACCESS)  # outside everything that answers: no way in skips a rule
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app


def server_config(app: FastAPI, settings: Settings, **options: Any) -> uvicorn.Config:
    """uvicorn's configuration for ``app`` from ``settings`` (``options`` override it): what ``thoughtvec serve`` runs."""
    kw: dict[str, Any] = {"host": settings.host, "port": settings.port, "log_level": settings.log_level, "access_log": settings.access_log}
    return uvicorn.Config(app, **(kw | options))
