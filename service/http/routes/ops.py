"""Operations: liveness, readiness, Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse, PlainTextResponse

from thoughtvec.service.http.openapi import DEFAULT_MODEL
from thoughtvec.service.http.routes.deps import CoreDep

router = APIRouter(tags=["operations"])


@router.get("/health")
async def health() -> dict:
    """Liveness: the process answers. Never needs a key."""
    return {"status": "ok"}


@router.get("/ready")
async def ready(core: CoreDep) -> JSONResponse:
    """200 when every bundle is loaded and warmed and every batcher runs (with several workers: in every worker);
    503 with what is pending otherwise."""
    ok, body = core.readiness()
    return JSONResponse(body, status_code=200 if ok else 503)


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    responses={
        200: {
            "content": {
                "text/plain": {"schema": {"type": "string"}, "example": f'thoughtvec_tokens_total{{model="{DEFAULT_MODEL}"}} 42.0\n'}
            },
            "description": "Prometheus text exposition format",
        }
    },
)
async def metrics(core: CoreDep) -> Response:
    """Prometheus metrics (text format): requests by route, batching, sentences and tokens embedded, long inputs (with
    several workers, every worker's summed)."""
    data, content_type = core.exposition()
    return Response(data, media_type=content_type)
