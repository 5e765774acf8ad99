"""Documents ordered by similarity to a query: ``POST /v1/rerank`` in infinity's and Cohere v1's shape,
``POST /rerank`` in TEI's (``texts``) or that shape (``documents``), ``POST /v2/rerank`` in Cohere v2's."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from thoughtvec.service.http.disconnect import unless_disconnected
from thoughtvec.service.http.peer_schemas import CohereRerankRequest, CohereRerankResponse, RerankForms, TeiRerankRequest, TeiRerankResponse
from thoughtvec.service.http.routes.deps import COHERE_ERRORS, TEI_ERRORS, ScoringDep, json_body
from thoughtvec.service.http.schemas import RerankRequest, RerankResponse, Usage
from thoughtvec.service.http.transport import express

router = APIRouter(tags=["similarity"])


@router.post("/v1/rerank", response_model=RerankResponse, responses=COHERE_ERRORS)
@express
async def rerank(body: RerankRequest, request: Request, scoring: ScoringDep) -> Response:
    """`results[{index, relevance_score, document?}]`, best first, `top_n` of them.

    `mode` `hybrid` (default) ranks as a hybrid search does: the model's cosine (for a model the guide measured with
    it, also each document's best sentence's) and BM25 over the documents sent (their own collection statistics),
    fused; `relevance_score` is on [0, 1] (0.5: the documents' mean on every signal).
    `dense` ranks by the cosine alone, `relevance_score` (1 + cosine) / 2 (a bi-encoder, not a cross-encoder).
    A document is a text or, as Cohere v1 takes it, an object `{text, ...}`: ranked by its text, returned whole.
    """
    result = await unless_disconnected(
        request,
        scoring.rerank(
            query=body.query,
            documents=body.texts(),
            top_n=body.top_n,
            return_documents=body.return_documents,
            model=body.model,
            view=body.view,
            truncation=body.truncation,
            mode=body.mode,
        ),
    )
    answer = RerankResponse.of(result, body.documents)
    return json_body(answer, answer.usage)


@router.post("/rerank", response_model=TeiRerankResponse | RerankResponse, responses=TEI_ERRORS)
@express
async def rerank_tei(body: RerankForms, request: Request, scoring: ScoringDep) -> Response:
    """TEI's rerank for a body with `texts`: `[{index, score, text?}]`, every text, best first; a body with
    `documents` is `/v1/rerank`'s (infinity serves it here).

    `score` is `/v1/rerank`'s `relevance_score` on [0, 1]; with `raw_scores`, the mode's own score (the fused score
    in `hybrid`, the cosine in `dense`).
    """
    if not isinstance(body, TeiRerankRequest):
        return await rerank(body, request, scoring)
    result = await unless_disconnected(
        request,
        scoring.rerank(
            query=body.query,
            documents=body.texts,
            return_documents=body.return_text,
            model=body.model,
            truncation=body.truncation,
            field="texts",
            mode=body.mode,
        ),
    )
    return json_body(TeiRerankResponse.of(result, body.raw_scores), Usage.of(result.usage))


@router.post("/v2/rerank", response_model=CohereRerankResponse, responses=COHERE_ERRORS)
@express
async def rerank_v2(body: CohereRerankRequest, request: Request, scoring: ScoringDep) -> Response:
    """Cohere v2's rerank: `{id, results[{index, relevance_score}], meta}`, best first, `top_n` of them.

    `relevance_score` is `/v1/rerank`'s, on [0, 1]; `mode` (an extension) as there.
    """
    truncation = body.truncation(scoring.embedding.model(body.model).encoder.max_tokens)
    result = await unless_disconnected(
        request,
        scoring.rerank(
            query=body.query, documents=body.documents, top_n=body.top_n, model=body.model, truncation=truncation, mode=body.mode
        ),
    )
    return json_body(CohereRerankResponse.of(result), Usage.of(result.usage))
