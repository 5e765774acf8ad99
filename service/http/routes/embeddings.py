"""``POST /v1/embeddings`` — OpenAI-compatible; ``POST /embed`` (and ``POST /``) and ``POST /embed_sparse`` — TEI's."""

from __future__ import annotations

import binascii
import json

import numpy as np
import orjson
from fastapi import APIRouter, Request, Response

from thoughtvec.service.core.calibration import compact
from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.results import Encoded
from thoughtvec.service.core.sparse import SparseVector
from thoughtvec.service.core.token_ids import is_ids
from thoughtvec.service.http.disconnect import unless_disconnected
from thoughtvec.service.http.peer_schemas import (
    EmbedForms,
    TeiEmbedRequest,
    TeiEmbedResponse,
    TeiEmbedSparseRequest,
    TeiEmbedSparseResponse,
    TeiSimilarityRequest,
    TeiSimilarityResponse,
)
from thoughtvec.service.http.routes.deps import ERRORS, TEI_ERRORS, EmbeddingDep, ScoringDep, SparseDep
from thoughtvec.service.http.routes.similarity import tei_similarity
from thoughtvec.service.http.schemas import EmbeddingsRequest, EmbeddingsResponse, Usage, usage_headers
from thoughtvec.service.http.transport import express

router = APIRouter(tags=["embeddings"])


def render_list(enc: Encoded, codes: np.ndarray | None = None) -> bytes:
    """:class:`TeiEmbedResponse`'s JSON (a list of vectors, or of ``codes``), written by hand as :func:`render` is."""
    return orjson.dumps((enc.vectors if codes is None else codes).tolist())


def base64_rows(values: np.ndarray) -> list[bytes]:
    """Each row's bytes in base64: float vectors as little-endian float32, codes a byte each."""
    little = np.ascontiguousarray(values, dtype="<f4" if values.dtype.kind == "f" else None)  # no copy when it is already
    return [binascii.b2a_base64(r, newline=False) for r in little]


def render(enc: Encoded, encoding_format: str, codes: np.ndarray | None = None) -> bytes:
    """:class:`EmbeddingsResponse`'s JSON, written by hand, as bytes: this is the hot path and vectors are long (a
    1000 x 1024 float list is not put through pydantic). The tests check it against the schema. ``codes``: the
    vectors' compact codes (``embedding_type``), written instead of them.

    Floats are written by orjson from Python's floats (each float32 value as a double): the shortest text that
    reads back as that double, as ``json`` writes it (an exponent is written ``1e-5``, not ``1e-05``), in a ninth
    of the time (docs/BENCHMARKS.md). Every vector is finite: the batcher fails a request whose model output is not."""
    values = enc.vectors if codes is None else codes
    if encoding_format == "base64":
        rows = [b'"%b"' % r for r in base64_rows(values)]
    else:
        rows = [orjson.dumps(r.tolist()) for r in values]  # the same numbers as json's
    data = b",".join([b'{"object":"embedding","embedding":%b,"index":%d}' % (e, i) for i, e in enumerate(rows)])
    model, counts = json.dumps(enc.model).encode(), Usage.json_of(enc.usage)
    return b'{"object":"list","data":[%b],"model":%b,"usage":%b}' % (data, model, counts)


async def codes_of(embedding: EmbeddingService, enc: Encoded, body: EmbeddingsRequest | TeiEmbedRequest, field: str) -> np.ndarray:
    """``enc``'s vectors (made for ``body``) as the codes of its ``embedding_type`` (``core/calibration.py``)."""
    precision = body.embedding_type
    return (await compact(embedding, enc, [precision], body.dimensions, body.normalize, field))[precision]


@router.post("/v1/embeddings", response_model=EmbeddingsResponse, responses=ERRORS)
@express
async def create_embeddings(body: EmbeddingsRequest, request: Request, embedding: EmbeddingDep) -> Response:
    """Vectors for a string, a list of strings, or cl100k token ids (L2-normalised unless `normalize` is false).

    Empty or whitespace-only strings are rejected (422 naming `input[i]`). Texts over the model's token
    limit are split into sentences and pooled (or truncated, or rejected: `truncation`).
    """
    work = embedding.embeddings(body.input, body.model, body.view, body.normalize, body.dimensions, body.truncation)
    enc = await unless_disconnected(request, work)  # cancelled if the client leaves
    codes = None if body.embedding_type == "float" else await unless_disconnected(request, codes_of(embedding, enc, body, "input"))
    headers = usage_headers(enc.split, enc.truncated)
    return Response(render(enc, body.encoding_format, codes), media_type="application/json", headers=headers)


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
    codes = None if body.embedding_type == "float" else await unless_disconnected(request, codes_of(embedding, enc, body, "inputs"))
    return Response(render_list(enc, codes), media_type="application/json", headers=usage_headers(enc.split, enc.truncated))


def render_sparse(vectors: list[SparseVector]) -> bytes:
    """:class:`TeiEmbedSparseResponse`'s JSON, written by hand: ``[[{"index", "value"}, ...], ...]``."""
    return orjson.dumps([[{"index": i, "value": v} for i, v in zip(x.indices.tolist(), x.values.tolist())] for x in vectors])


@router.post("/embed_sparse", response_model=TeiEmbedSparseResponse, responses=TEI_ERRORS)
async def embed_sparse(body: TeiEmbedSparseRequest, sparse: SparseDep) -> Response:
    """TEI's sparse embeddings, from BM25 (no model runs): one list of `{index, value}` per input, indices ascending.

    Each text is analysed as the server's lexical search analyses it (lower-cased words, stop words out, stemmed; the
    search settings' analyser), each term hashed to its `index` (fastembed's `abs(mmh3.hash(term))`). `side: document`
    (the default) weighs a term by BM25's `tf·(k1+1)/(tf + k1·(1−b+b·len/avgdl))` (`k1`, `b`: the search settings';
    `avgdl`: the request's, default 256); `side: query` by its count. With the corpus's idf (a vector database's, or
    multiplied into the query's values), the inner product of a query's vector with a document's ranks as BM25 does.
    A text of stop words only answers an empty list; a blank one is a 400.
    """
    vectors = await sparse.embed_sparse(body.inputs, body.side, body.avgdl, body.truncation)
    return Response(render_sparse(vectors), media_type="application/json")


@router.post("/", response_model=TeiEmbedResponse | TeiSimilarityResponse, responses=TEI_ERRORS, include_in_schema=False)
@express
async def base_url(body: EmbedForms, request: Request, embedding: EmbeddingDep, scoring: ScoringDep) -> Response:
    """Where ``huggingface_hub.InferenceClient(base_url=...)`` posts: ``feature_extraction`` sends `/embed`'s body,
    ``sentence_similarity`` `/similarity`'s (``inputs: {source_sentence, sentences}``)."""
    if isinstance(body, TeiSimilarityRequest):
        return await tei_similarity(body, request, scoring)
    return await embed(body, request, embedding)
