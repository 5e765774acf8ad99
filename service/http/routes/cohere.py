"""``POST /v1/embed`` and ``POST /v2/embed``: Cohere's embed in its v1 and v2 shapes (``cohere.Client().embed``,
``cohere.ClientV2().embed``), on the same core as ``/v1/embeddings``: the same vectors for the same model and texts.
Cohere's rerank is ``rerank.py``'s."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import orjson
from fastapi import APIRouter, Request, Response

from thoughtvec.service.core.calibration import compact
from thoughtvec.service.core.compact import Precision
from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.core.results import Encoded
from thoughtvec.service.errors import InvalidInput
from thoughtvec.service.http.disconnect import unless_disconnected
from thoughtvec.service.http.peer_schemas import (
    CohereEmbedByTypeResponse,
    CohereEmbeddingType,
    CohereEmbedFloatsResponse,
    CohereEmbedRequest,
    CohereEmbedV2Request,
)
from thoughtvec.service.http.routes.deps import COHERE_ERRORS, EmbeddingDep
from thoughtvec.service.http.routes.embeddings import base64_rows
from thoughtvec.service.http.schemas import usage_headers
from thoughtvec.service.http.transport import express

router = APIRouter(tags=["embeddings"])


@router.post("/v1/embed", response_model=CohereEmbedFloatsResponse | CohereEmbedByTypeResponse, responses=COHERE_ERRORS)
@express
async def embed_v1(body: CohereEmbedRequest, request: Request, embedding: EmbeddingDep) -> Response:
    """Cohere v1's embed: without `embedding_types`, `embeddings_floats` (a list of vectors); with them,
    `embeddings_by_type` (a list per type). Vectors are L2-normalised, `/v1/embeddings`'s for the same model and texts."""
    return await embed_cohere(body, request, embedding, "1")


@router.post("/v2/embed", response_model=CohereEmbedByTypeResponse, responses=COHERE_ERRORS)
@express
async def embed_v2(body: CohereEmbedV2Request, request: Request, embedding: EmbeddingDep) -> Response:
    """Cohere v2's embed: `embeddings_by_type` (floats unless `embedding_types` says otherwise), from `texts` or
    `inputs`; `output_dimension` as `/v1/embeddings`'s `dimensions`; `max_tokens` at or above the model's limit."""
    return await embed_cohere(body, request, embedding, "2", body.output_dimension, body.max_tokens)


async def embed_cohere(
    body: CohereEmbedRequest | CohereEmbedV2Request,
    request: Request,
    embedding: EmbeddingService,
    version: str,
    dimensions: int | None = None,
    cap: int | None = None,
) -> Response:
    """The answer to a Cohere embed body of API ``version``: the texts embedded as ``/v1/embeddings`` embeds them, then
    each embedding type asked for."""
    texts, field = body.texts_of()
    encoder = embedding.model(body.model).encoder
    if dimensions is not None:
        output_dimension(encoder, dimensions)
    work = embedding.embeddings(texts, body.model, None, True, dimensions, body.truncation(encoder.max_tokens, cap), field, False)
    enc = await unless_disconnected(request, work)
    floats_only = version == "1" and body.embedding_types is None
    types = body.types(["float"])
    precisions: list[Precision] = list(dict.fromkeys("float" if t == "base64" else t for t in types))  # base64 is floats' bytes
    codes = await unless_disconnected(request, compact(embedding, enc, precisions, dimensions, True, field))
    meta = {"api_version": {"version": version}, "billed_units": {"input_tokens": enc.tokens}}
    answer: dict[str, Any] = {"id": str(uuid.uuid4())}
    if floats_only:
        answer |= {"response_type": "embeddings_floats", "embeddings": enc.vectors.tolist()}
    else:
        answer |= {"response_type": "embeddings_by_type", "embeddings": by_type(enc, codes, types)}
    answer |= {"texts": texts, "meta": meta}
    return Response(orjson.dumps(answer), media_type="application/json", headers=usage_headers(enc.split, enc.truncated))


def by_type(enc: Encoded, codes: dict[Precision, np.ndarray], types: list[CohereEmbeddingType]) -> dict[str, Any]:
    """``embeddings`` of an ``embeddings_by_type`` answer: a list per type, in the order asked. Floats are written
    from Python's floats, as ``/v1/embeddings`` writes them: the same numbers."""
    out: dict[str, Any] = {}
    for t in types:
        if t == "base64":
            out[t] = [r.decode("ascii") for r in base64_rows(enc.vectors)]
        else:
            out[t] = (enc.vectors if t == "float" else codes[t]).tolist()
    return out


def output_dimension(encoder: Encoder, requested: int) -> None:
    """``dimensions``' check of v2's ``output_dimension``, its error naming that field (a 400 before any work)."""
    try:
        encoder.dimensions(None, requested)
    except InvalidInput as e:
        raise InvalidInput(e.message.replace("dimensions", "output_dimension", 1), field="output_dimension") from None
