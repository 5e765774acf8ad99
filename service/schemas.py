"""Request and response bodies (pydantic). Unknown fields are errors: a typo never passes silently.

Items of text lists are typed loosely (``list[Any]``) on purpose: the core checks each one and
names it (``input[3] must be a string, got int``), which pydantic's union errors do not do well.
The OpenAPI schema still tells the truth (``WithJsonSchema``): texts are strings with a visible
character, lists have at least one item — what the core enforces.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from service.factory import SCHEMA_PATTERN
from service.indexes import NAME_PATTERN, Metric
from service.jsonvalues import reject_lone_surrogates


# What the core accepts, for the OpenAPI schema (the core checks it, with messages naming the field).
TEXT = {"type": "string", "minLength": 1, "pattern": r"\S"}
TEXTS = {"type": "array", "items": TEXT, "minItems": 1}
PAIRS = {"type": "array", "items": {"type": "array", "items": TEXT, "minItems": 2, "maxItems": 2}, "minItems": 1}
NULL = {"type": "null"}
Text = Annotated[Any, WithJsonSchema(TEXT)]
Texts = Annotated[list[Any], WithJsonSchema(TEXTS)]


class _Req(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _valid_unicode(cls, data: Any) -> Any:
        # Raised as a domain error (not ValueError), so pydantic passes it on: 422 naming the field.
        reject_lone_surrogates(data)
        return data


# -- embeddings (OpenAI-compatible) -----------------------------------------------------------
class EmbeddingsRequest(_Req):
    input: Annotated[str | list[Any], WithJsonSchema({"anyOf": [TEXT, TEXTS]})] = Field(description="a string or a list of strings")
    model: str | None = Field(None, description="bundle name; default: the server's default model")
    encoding_format: Literal["float", "base64"] = Field("float", description="`base64`: little-endian float32 bytes")
    dimensions: int | None = Field(None, description="accepted for OpenAI compatibility; must equal the view's dimension")
    user: str | None = Field(None, description="accepted for OpenAI compatibility; ignored")
    view: str | None = Field(None, description="the bundle's view; default: the bundle's default view")
    normalize: bool = Field(True, description="L2-normalise the vectors")


class Embedding(BaseModel):
    object: Literal["embedding"] = "embedding"
    embedding: list[float] | str
    index: int


class Usage(BaseModel):
    prompt_tokens: int
    total_tokens: int


class EmbeddingsResponse(BaseModel):
    object: Literal["list"] = "list"
    data: list[Embedding]
    model: str
    usage: Usage


# -- similarity ---------------------------------------------------------------------------
class SimilarityRequest(_Req):
    model_config = ConfigDict(json_schema_extra={"oneOf": [
        {"required": ["pairs"], "properties": {"pairs": {"type": "array"}}},
        {"required": ["source", "targets"], "properties": {"source": {"type": "string"}, "targets": {"type": "array"}}},
    ]})
    model: str | None = None
    view: str | None = None
    pairs: Annotated[list[Any] | None, WithJsonSchema({"anyOf": [PAIRS, NULL]})] = Field(None, description="[[a, b], ...]; or send source and targets")
    source: Annotated[Any, WithJsonSchema({"anyOf": [TEXT, NULL]})] = Field(None, description="one text compared with every target")
    targets: Annotated[list[Any] | None, WithJsonSchema({"anyOf": [TEXTS, NULL]})] = None


class PairScore(BaseModel):
    index: int
    score: float = Field(description="cosine similarity in [-1, 1]")
    relatedness: float | None = Field(None, description="predicted SICK relatedness in [1, 5], when the bundle has a head")


class SimilarityResponse(BaseModel):
    object: Literal["list"] = "list"
    model: str
    view: str
    data: list[PairScore]
    usage: Usage


# -- search -------------------------------------------------------------------------------
class SearchRequest(_Req):
    index: str | None = Field(None, description="index name; default: the server's default index")
    query: Annotated[Any, WithJsonSchema({"anyOf": [TEXT, TEXTS, {"type": "array", "items": {"type": "number"}, "minItems": 1}]})] = Field(
        description="a text, a list of texts, or a vector (list of numbers)")
    k: int = Field(10, description="neighbours per query (1..max_k)", json_schema_extra={"minimum": 1})


class Hit(BaseModel):
    id: str
    text: str
    score: float = Field(description="cosine / inner product (higher is nearer) or squared L2 distance (lower is nearer)")
    metadata: dict[str, Any] | None = None


class SearchResponse(BaseModel):
    object: Literal["list"] = "list"
    index: str
    model: str
    metric: str
    results: list[list[Hit]] = Field(description="one list per query, best first")
    usage: Usage


# -- indexes ------------------------------------------------------------------------------
class CreateIndexRequest(_Req):
    name: str = Field(pattern=NAME_PATTERN)
    model: str | None = Field(None, description="default: the server's default model")
    view: str | None = None
    factory: str = Field("Flat", min_length=1, max_length=200, json_schema_extra={"pattern": SCHEMA_PATTERN}, description="a supported FAISS factory string: Flat, PQ16, SQ8, HNSW32, IVF256,Flat, IVF256,PQ16, PCA64,IVF256,SQ8 ... (README: Indexes)")
    metric: Metric = "cosine"
    normalize: bool = Field(True, description="L2-normalise document vectors (always on for cosine)")
    train_size: int | None = Field(None, ge=1, description="vectors to buffer before training IVF/PQ; default ~39 per list")


class DocumentIn(_Req):
    text: Text
    id: str | None = Field(None, min_length=1, max_length=256)
    metadata: dict[str, Any] | None = None


class AddDocumentsRequest(_Req):
    documents: list[DocumentIn] = Field(json_schema_extra={"minItems": 1})


class DeleteDocumentsRequest(_Req):
    ids: list[str] = Field(json_schema_extra={"minItems": 1})


class IndexStats(BaseModel):
    name: str
    model: str
    view: str
    dim: int
    factory: str
    metric: str
    normalize: bool
    documents: int
    trained: bool
    pending_training: int
    train_size: int
    created: str
    train_error: str | None = None
    wal_bytes: int = 0
    gpu: bool = False


class IndexList(BaseModel):
    object: Literal["list"] = "list"
    data: list[IndexStats]
    building: dict[str, str] = {}
    quarantined: dict[str, str] = Field({}, description="indexes on disk that cannot be served, with the reason (503 until fixed or dropped)")


class AddDocumentsResponse(BaseModel):
    index: str
    ids: list[str]
    documents: int = Field(description="documents in the index after the add")
    usage: Usage


class DeleteDocumentsResponse(BaseModel):
    index: str
    deleted: list[str]
    not_found: list[str]
    documents: int


class ErrorDetail(BaseModel):
    code: str
    message: str
    field: str | None = None
    request_id: str | None = Field(None, description="500 only: the id under which the server logged the failure")


class ErrorBody(BaseModel):
    error: ErrorDetail
