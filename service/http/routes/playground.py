"""The playground at ``/``: one static page (no build step, no CDN) over the public API, and the index map it draws."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse

from thoughtvec.service.http.disconnect import unless_disconnected
from thoughtvec.service.http.routes.deps import ERRORS, IndexName, SearchDep, json_body
from thoughtvec.service.http.schemas import MapRequest, MapResponse

PAGE = Path(__file__).resolve().parent.parent / "static" / "playground.html"

MAP_LIMIT = 300  # documents a map draws by default

router = APIRouter(tags=["playground"])


@router.get("/", include_in_schema=False)
async def playground() -> HTMLResponse:
    return HTMLResponse(PAGE.read_text(encoding="utf-8"))


@router.post("/v1/indexes/{name}/map", response_model=MapResponse, responses=ERRORS)
async def index_map(name: IndexName, body: MapRequest, request: Request, search: SearchDep) -> Response:
    """An index's documents on a 2-D plane (PCA, computed here), with `query` placed on it and, with `k`, its
    `k` best documents by the index's search (as `/v1/search` finds them) drawn first."""
    limit = body.limit if body.limit is not None else min(MAP_LIMIT, request.app.state.settings.max_inputs)
    result = await unless_disconnected(request, search.index_map(name, body.query, limit, body.include, body.k, body.mode))
    return json_body(MapResponse.of(result))
