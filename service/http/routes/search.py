"""``POST /v1/search`` — nearest neighbours in an index."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from thoughtvec.service.http.disconnect import unless_disconnected
from thoughtvec.service.http.routes.deps import ERRORS, SearchDep, json_body
from thoughtvec.service.http.schemas import SearchRequest, SearchResponse
from thoughtvec.service.http.transport import express

router = APIRouter(tags=["search"])


@router.post("/v1/search", response_model=SearchResponse, responses=ERRORS)
@express
async def search(body: SearchRequest, request: Request, service: SearchDep) -> Response:
    """`query` is a text, a list of texts, or a vector of the index's dimension; `k` neighbours each.

    `mode`: `dense` (vectors: exact for `Flat` indexes, the default; approximate for HNSW / IVF factories),
    `lexical` (BM25) or `hybrid` (the two rankings fused); default: the index's. The answer names the mode;
    in hybrid each hit has its place in both rankings (`ranks`), and with `explain` what each added to its score.
    """
    search = service.search(query=body.query, index=body.index, k=body.k, truncation=body.truncation, mode=body.mode, explain=body.explain)
    result = await unless_disconnected(request, search)
    answer = SearchResponse.of(result, explain=body.explain)
    return json_body(answer, answer.usage)
