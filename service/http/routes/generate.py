"""``POST /v1/generate`` — sentences decoded from vectors by the decoders a bundle was trained with;
``GET /v1/generate/models`` — the served models that can, and the one a request naming none decodes with."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from thoughtvec.service.http.disconnect import unless_disconnected
from thoughtvec.service.http.generate_schemas import GenerateRequest, GenerateResponse, GeneratorList
from thoughtvec.service.http.routes.deps import ERRORS, CoreDep, json_body

router = APIRouter(tags=["generate"])


@router.post("/v1/generate", response_model=GenerateResponse, responses=ERRORS)
async def generate(body: GenerateRequest, request: Request, core: CoreDep) -> Response:
    """The next or previous sentence (skip-thought), or the sentence itself (AAE), decoded from a text's vector or
    a vector; a story (`story`), a path between two vectors (`to`, `steps`) or `input + (plus - minus)`.

    A model without a decoder answers 422 naming `model` and the models that have one; no `model`: the default
    generation model (`GET /v1/generate/models`). The request holds places in the model's queue while it decodes
    (429 with `Retry-After` when the queue is full; 413 when it needs more than the queue has).
    """
    body_fields = body.model_dump(exclude={"input"})
    result = await unless_disconnected(request, core.generation.generate(body.input, **body_fields))
    answer = GenerateResponse.of(result)
    return json_body(answer, answer.usage)


@router.get("/v1/generate/models", response_model=GeneratorList, responses=ERRORS)
async def generators(core: CoreDep) -> Response:
    """The served models whose bundle carries a decoder (their tasks, view and longest sentence), and `default`:
    the model a `POST /v1/generate` naming none decodes with (the first of the default-model order that can)."""
    return json_body(GeneratorList.of(core.generation.listing()))
