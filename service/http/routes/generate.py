"""``POST /v1/generate`` — sentences decoded from vectors by the decoders a bundle was trained with."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from thoughtvec.service.http.generate_schemas import GenerateRequest, GenerateResponse
from thoughtvec.service.http.middleware import unless_disconnected
from thoughtvec.service.http.routes.deps import ERRORS, CoreDep, JsonRoute, json_body

router = APIRouter(tags=["generate"], route_class=JsonRoute)


@router.post("/v1/generate", response_model=GenerateResponse, responses=ERRORS)
async def generate(body: GenerateRequest, request: Request, core: CoreDep) -> Response:
    """The next or previous sentence (skip-thought), or the sentence itself (AAE), decoded from a text's vector or
    a vector; a story (`story`), a path between two vectors (`to`, `steps`) or `input + (plus - minus)`.

    A model without a decoder answers 422 naming `model` and the models that have one.
    """
    body_fields = body.model_dump(exclude={"input"})
    result = await unless_disconnected(request, core.generation.generate(body.input, **body_fields))
    answer = GenerateResponse.of(result)
    return json_body(answer, answer.usage)
