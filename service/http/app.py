"""The FastAPI app factory. ``create_app(settings)`` is all a server or a test needs.

Middleware, outermost first: metrics (sees every answer, 401/413 included) → CORS → body limit →
API keys → catch-all (an unexpected exception becomes a JSON 500) → the embeddings fast path (a
well-formed ``POST /v1/embeddings`` answered without FastAPI's routing: ``service/http/fastpath.py``)
→ routes. Start-up runs in the background (``lifespan``), so ``/health`` answers while
models load and the default index builds; ``/ready`` tells when the models are warm.
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

import service
from service.core.engine import Core
from service.core.metrics import Metrics, MetricsMiddleware
from service.http.fastpath import PATH as EMBEDDINGS_PATH
from service.http.fastpath import EmbeddingsFastPath
from service.http.middleware import AuthMiddleware, BodyLimitMiddleware, CatchAllMiddleware, install_error_handlers
from service.http.routes import ROUTERS
from service.settings import Settings

log = logging.getLogger(__name__)

DESCRIPTION = """Sentence embeddings from skip-thought, mean-max AAE and invertible-decoder bundles,
with dynamic batching, pair similarity and FAISS search.

Errors are `{"error": {"code", "message", "field"}}`. With API keys configured, send
`Authorization: Bearer <key>` on every route but `/health`."""


def _routes(routes: list) -> list:
    """Every route with a path, including those of included routers (FastAPI >= 0.165 wraps them)."""
    out = []
    for r in routes:
        inner = getattr(r, "original_router", None)
        out.extend(_routes(inner.routes) if inner is not None else [r] if hasattr(r, "path") else [])
    return out


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

    # docs_url/redoc_url off: service.http.routes.docs serves both pages with local assets (no CDN)
    app = FastAPI(
        title="thoughtvec", version=service.__version__, description=DESCRIPTION, lifespan=lifespan, docs_url=None, redoc_url=None
    )
    app.state.core = core
    app.state.settings = settings
    for router in ROUTERS:
        app.include_router(router)
    install_error_handlers(app, settings)
    metrics.routes_known([(r.path, m) for r in _routes(app.routes) for m in sorted(getattr(r, "methods", None) or ()) if m != "HEAD"])
    # add_middleware wraps what is there: the last added is the outermost.
    embeddings_route = next(r for r in _routes(app.routes) if getattr(r, "path", None) == EMBEDDINGS_PATH)
    app.add_middleware(EmbeddingsFastPath, core=core, route=embeddings_route, retry_after_s=settings.retry_after_s)
    app.add_middleware(CatchAllMiddleware)
    if settings.api_keys:  # admin keys are API keys too
        app.add_middleware(AuthMiddleware, keys=settings.api_keys + settings.admin_keys)
    app.add_middleware(BodyLimitMiddleware, limit=settings.max_body_bytes)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "Content-Type"],
        )
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app
