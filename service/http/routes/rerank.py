"""``POST /v1/rerank`` (and ``/rerank``) — documents ordered by similarity to a query, in infinity's and Cohere's shape."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from thoughtvec.service.http.middleware import unless_disconnected
from thoughtvec.service.http.routes.deps import ERRORS, EmbeddingDep, json_body
from thoughtvec.service.http.schemas import RerankRequest, RerankResponse

router = APIRouter(tags=["similarity"])


@router.post("/v1/rerank", response_model=RerankResponse, responses=ERRORS)
@router.post("/rerank", response_model=RerankResponse, responses=ERRORS, include_in_schema=False)
async def rerank(body: RerankRequest, request: Request, embedding: EmbeddingDep) -> Response:
    """`results[{index, relevance_score, document?}]`, best first, `top_n` of them.

    The score is `/v1/similarity`'s cosine between the query and each document (a bi-encoder, not a cross-encoder).
    """
    result = await unless_disconnected(
        request,
        embedding.rerank(
            query=body.query,
            documents=body.documents,
            top_n=body.top_n,
            return_documents=body.return_documents,
            model=body.model,
            view=body.view,
            truncation=body.truncation,
        ),
    )
    answer = RerankResponse.of(result)
    return json_body(answer, answer.usage)
