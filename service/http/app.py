"""The FastAPI app factory. ``create_app(settings)`` is all a server or a test needs.

Middleware, outermost first: metrics (sees every answer, 401/413 included) → CORS → body limit →
API keys → catch-all (an unexpected exception becomes a JSON 500) → the embeddings fast path (a
well-formed ``POST /v1/embeddings`` answered without FastAPI's routing: ``service/http/fastpath.py``)
→ routes. Under ``thoughtvec serve`` (``server_config``) a plain embeddings request is answered even
before all of this, by uvicorn's HTTP protocol itself (``service/http/protocol.py``), which does for it
what the middleware would. Start-up runs in the background (``lifespan``), so ``/health`` answers while
models load and the default index builds; ``/ready`` tells when the models are warm.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from thoughtvec.service import __version__
from thoughtvec.service.core.engine import Core
from thoughtvec.service.core.metrics import Metrics, MetricsMiddleware
from thoughtvec.service.http.fastpath import PATH as EMBEDDINGS_PATH
from thoughtvec.service.http.fastpath import EmbeddingsFastPath, Shortcut
from thoughtvec.service.http.middleware import AuthMiddleware, BodyLimitMiddleware, CatchAllMiddleware, install_error_handlers, request_keys
from thoughtvec.service.http.routes import ROUTERS
from thoughtvec.service.settings import Settings

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

    # docs_url/redoc_url off: thoughtvec.service.http.routes.docs serves both pages with local assets (no CDN)
    app = FastAPI(
        title="thoughtvec",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.core = core
    app.state.settings = settings
    app.state.shortcut = Shortcut(core, settings)  # what server_config's protocol answers without ASGI
    for router in ROUTERS:
        app.include_router(router)
    install_error_handlers(app, settings)
    metrics.routes_known([(r.path, m) for r in _routes(app.routes) for m in sorted(getattr(r, "methods", None) or ()) if m != "HEAD"])
    # add_middleware wraps what is there: the last added is the outermost.
    embeddings_route = next(r for r in _routes(app.routes) if getattr(r, "path", None) == EMBEDDINGS_PATH)
    app.add_middleware(EmbeddingsFastPath, core=core, route=embeddings_route, retry_after_s=settings.retry_after_s)
    app.add_middleware(CatchAllMiddleware)
    if keys := request_keys(settings):
        app.add_middleware(AuthMiddleware, keys=keys)
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


def server_config(app: FastAPI, settings: Settings, **options: Any) -> uvicorn.Config:
    """uvicorn's configuration for ``app``: with ``fast_protocol``, the HTTP protocol that answers plain
    embeddings requests itself (``service/http/protocol.py``), when the installed uvicorn allows it."""
    http: type[asyncio.Protocol] | str = "auto"
    if settings.fast_protocol:
        try:
            from thoughtvec.service.http import protocol
        except ImportError as e:  # httptools is part of uvicorn[standard]; without it uvicorn uses h11
            log.warning("fast_protocol: off (%s)", e)
        else:
            problem = protocol.available()
            if problem is None:
                http = protocol.EmbeddingsProtocol
            else:
                log.warning("fast_protocol: off (%s)", problem)
    kw: dict[str, Any] = {"host": settings.host, "port": settings.port, "log_level": settings.log_level, "access_log": settings.access_log}
    return uvicorn.Config(app, http=http, **(kw | options))
