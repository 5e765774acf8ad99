"""``POST /v1/embeddings`` — OpenAI-compatible; ``POST /embed`` (and ``POST /``) — TEI's."""

from __future__ import annotations

import binascii
import json
from collections.abc import Awaitable, Callable
from functools import partial

import numpy as np
import orjson
from fastapi import APIRouter, Request, Response

from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.results import Encoded
from thoughtvec.service.core.token_ids import is_ids
from thoughtvec.service.http.disconnect import unless_disconnected
from thoughtvec.service.http.peer_schemas import EmbedForms, TeiEmbedRequest, TeiEmbedResponse, TeiSimilarityRequest, TeiSimilarityResponse
from thoughtvec.service.http.routes.deps import ERRORS, TEI_ERRORS, EmbeddingDep, ScoringDep
from thoughtvec.service.http.routes.similarity import tei_similarity
from thoughtvec.service.http.schemas import EmbeddingsRequest, EmbeddingsResponse, Usage, usage_headers
from thoughtvec.service.http.transport import express

router = APIRouter(tags=["embeddings"])


def render_list(enc: Encoded) -> bytes:
    """:class:`TeiEmbedResponse`'s JSON (a list of vectors), written by hand as :func:`render` is."""
    return orjson.dumps(enc.vectors.tolist())


def render(enc: Encoded, encoding_format: str) -> bytes:
    """:class:`EmbeddingsResponse`'s JSON, written by hand, as bytes: this is the hot path and vectors are long (a
    1000 x 1024 float list is not put through pydantic). The tests check it against the schema.

    Floats are written by orjson from Python's floats (each float32 value as a double): the shortest text that
    reads back as that double, as ``json`` writes it (an exponent is written ``1e-5``, not ``1e-05``), in a ninth
    of the time (docs/BENCHMARKS.md). Every vector is finite: the batcher fails a request whose model output is not."""
    if encoding_format == "base64":
        little = np.ascontiguousarray(enc.vectors, dtype="<f4")  # no copy when it is already
        rows = [b'"' + binascii.b2a_base64(r, newline=False) + b'"' for r in little]
    else:
        rows = [orjson.dumps(r.tolist()) for r in enc.vectors]  # the same numbers as json's
    data = b",".join([b'{"object":"embedding","embedding":%b,"index":%d}' % (e, i) for i, e in enumerate(rows)])
    model, counts = json.dumps(enc.model).encode(), Usage.json_of(enc.usage)
    return b'{"object":"list","data":[%b],"model":%b,"usage":%b}' % (data, model, counts)


async def answer(
    embedding: EmbeddingService, body: EmbeddingsRequest, guard: Callable[[Awaitable[Encoded]], Awaitable[Encoded]]
) -> Response:
    """The answer to a validated request: what the route returns, and the fast path too (``thoughtvec.service.http.fastpath``).

    ``guard`` awaits the work on the caller's terms: the route cancels it when the client leaves
    (``unless_disconnected``), on either way in."""
    enc = await guard(embedding.embeddings(body.input, body.model, body.view, body.normalize, body.dimensions, body.truncation))
    return Response(render(enc, body.encoding_format), media_type="application/json", headers=usage_headers(enc.split, enc.truncated))


@router.post("/v1/embeddings", response_model=EmbeddingsResponse, responses=ERRORS)
@express
async def create_embeddings(body: EmbeddingsRequest, request: Request, embedding: EmbeddingDep) -> Response:
    """Vectors for a string, a list of strings, or cl100k token ids (L2-normalised unless `normalize` is false).

    Empty or whitespace-only strings are rejected (422 naming `input[i]`). Texts over the model's token
    limit are split into sentences and pooled (or truncated, or rejected: `truncation`).
    """
    return await answer(embedding, body, partial(unless_disconnected, request))


@router.post("/embed", response_model=TeiEmbedResponse, responses=TEI_ERRORS)
@express
async def embed(body: TeiEmbedRequest, request: Request, embedding: EmbeddingDep) -> Response:
    """TEI's embeddings: a list of vectors, one per input (L2-normalised unless `normalize` is false).

    `inputs` is a string or a list of strings, or the model's own token ids (a list, or a list of lists), as TEI's
    `/tokenize` gives them: embedded as they are (a list over the token limit is cut with `truncate: true`, else 413). `truncate`: `true` cuts a long text at the token
    limit, `false` answers 413, absent follows the server's `truncation` setting. `POST /` answers the same:
    `huggingface_hub.InferenceClient(base_url=...).feature_extraction` posts there.
    """
    if is_ids(body.inputs) or (isinstance(body.inputs, list) and all(is_ids(x) for x in body.inputs) and body.inputs):
        work = embedding.embed_token_ids(body.inputs, body.model, body.normalize, body.dimensions, body.truncation)
    else:
        work = embedding.embeddings(body.inputs, body.model, None, body.normalize, body.dimensions, body.truncation, "inputs", False)
    enc = await unless_disconnected(request, work)
    return Response(render_list(enc), media_type="application/json", headers=usage_headers(enc.split, enc.truncated))


@router.post("/", response_model=TeiEmbedResponse | TeiSimilarityResponse, responses=TEI_ERRORS, include_in_schema=False)
@express
async def base_url(body: EmbedForms, request: Request, embedding: EmbeddingDep, scoring: ScoringDep) -> Response:
    """Where ``huggingface_hub.InferenceClient(base_url=...)`` posts: ``feature_extraction`` sends `/embed`'s body,
    ``sentence_similarity`` `/similarity`'s (``inputs: {source_sentence, sentences}``)."""
    if isinstance(body, TeiSimilarityRequest):
        return await tei_similarity(body, request, scoring)
    return await embed(body, request, embedding)
