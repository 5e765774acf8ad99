"""``POST /v1/similarity`` — cosine (and predicted relatedness) per pair."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from thoughtvec.service.http.middleware import unless_disconnected
from thoughtvec.service.http.routes.deps import ERRORS, EmbeddingDep, json_body
from thoughtvec.service.http.schemas import SimilarityRequest, SimilarityResponse

router = APIRouter(tags=["similarity"])


@router.post("/v1/similarity", response_model=SimilarityResponse, responses=ERRORS)
async def similarity(body: SimilarityRequest, request: Request, embedding: EmbeddingDep) -> Response:
    """Scores for `pairs: [[a, b], ...]`, or for `source` against each of `targets`.

    `score` is the cosine similarity; `relatedness` (1–5) appears when the bundle has a SICK head.
    """
    result = await unless_disconnected(
        request,
        embedding.similarity(
            pairs=body.pairs, source=body.source, targets=body.targets, model=body.model, view=body.view, truncation=body.truncation
        ),
    )
    answer = SimilarityResponse.of(result)
    return json_body(answer, answer.usage)
