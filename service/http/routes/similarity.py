"""``POST /v1/similarity`` — cosine (and predicted relatedness) per pair; ``POST /similarity`` — TEI's."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from thoughtvec.service.http.disconnect import unless_disconnected
from thoughtvec.service.http.peer_schemas import TeiSimilarityRequest, TeiSimilarityResponse
from thoughtvec.service.http.routes.deps import ERRORS, TEI_ERRORS, ScoringDep, json_body
from thoughtvec.service.http.schemas import SimilarityRequest, SimilarityResponse, Usage
from thoughtvec.service.http.transport import express

router = APIRouter(tags=["similarity"])


@router.post("/v1/similarity", response_model=SimilarityResponse, responses=ERRORS)
@express
async def similarity(body: SimilarityRequest, request: Request, scoring: ScoringDep) -> Response:
    """Scores for `pairs: [[a, b], ...]`, or for `source` against each of `targets`.

    `score` is the cosine similarity; `relatedness` (1–5) appears when the bundle has a SICK head.
    """
    result = await unless_disconnected(
        request,
        scoring.similarity(
            pairs=body.pairs, source=body.source, targets=body.targets, model=body.model, view=body.view, truncation=body.truncation
        ),
    )
    answer = SimilarityResponse.of(result)
    return json_body(answer, answer.usage)


@router.post("/similarity", response_model=TeiSimilarityResponse, responses=TEI_ERRORS)
@express
async def tei_similarity(body: TeiSimilarityRequest, request: Request, scoring: ScoringDep) -> Response:
    """TEI's similarity: `inputs: {source_sentence, sentences}` answers the cosine of the source with each sentence,
    in order. `POST /` takes the same body (`huggingface_hub.InferenceClient(base_url=...).sentence_similarity`)."""
    params = body.parameters
    result = await unless_disconnected(
        request,
        scoring.similarity(
            source=body.inputs.source_sentence,
            targets=body.inputs.sentences,
            model=body.model,
            truncation=params.truncation if params else None,
            names=("inputs.source_sentence", "inputs.sentences"),
        ),
    )
    return json_body(TeiSimilarityResponse([p.score for p in result.data]), Usage.of(result.usage))
