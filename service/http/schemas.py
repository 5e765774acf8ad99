"""Request and response bodies (pydantic). Unknown fields are errors: a typo never passes silently.

Items of text lists are typed loosely (``list[Any]``) on purpose: the core checks each one and
names it (``input[3] must be a string, got int``), which pydantic's union errors do not do well.
The OpenAPI schema still tells the truth (``WithJsonSchema``): texts are strings with a visible
character, lists have at least one item — what the core enforces.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from service.index.factory import SCHEMA_PATTERN
from service.index.indexes import NAME_PATTERN, Metric
from service.index.jsonvalues import reject_lone_surrogates


# What the core accepts, for the OpenAPI schema (the core checks it, with messages naming the field).
TEXT = {"type": "string", "minLength": 1, "pattern": r"\S"}
TEXTS = {"type": "array", "items": TEXT, "minItems": 1}
PAIRS = {"type": "array", "items": {"type": "array", "items": TEXT, "minItems": 2, "maxItems": 2}, "minItems": 1}
NULL = {"type": "null"}
TOKEN_IDS = {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1}  # cl100k ids (OpenAI's input form)
TOKEN_ID_LISTS = {"type": "array", "items": TOKEN_IDS, "minItems": 1}
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


def _examples(*examples: dict, **schema: Any) -> ConfigDict:
    """Request examples for /docs ("Try it out" sends the first; they run against the bundled models),
    and any other JSON-schema keys of the body (``oneOf``)."""
    return ConfigDict(extra="forbid", json_schema_extra={"examples": list(examples), **schema})


Truncation = Literal["split", "truncate", "reject"] | None
TRUNCATION = Field(None, description="text over the bundle's token limit: `split` into sentences and pool, `truncate`, "
                                     "or `reject` (413); default: the server's `truncation` setting")


# -- embeddings (OpenAI-compatible) -----------------------------------------------------------
class EmbeddingsRequest(_Req):
    model_config = _examples({"input": ["the cat sat on the mat .", "a dog ran in the park ."], "model": "invertible-linear"},
                             {"input": "one sentence ."}, {"input": [[1820, 8415, 7731, 389, 279, 5634, 662]], "model": "text-embedding-3-small"})
    input: Annotated[str | list[Any], WithJsonSchema({"anyOf": [TEXT, TEXTS, TOKEN_IDS, TOKEN_ID_LISTS]})] = Field(
        description="a string, a list of strings, a list of cl100k token ids, or a list of lists of them")
    model: str | None = Field(None, description="bundle name; default: the server's default model")
    encoding_format: Literal["float", "base64"] = Field("float", description="`base64`: little-endian float32 bytes")
    dimensions: int | None = Field(None, description="accepted for OpenAI compatibility; must equal the view's dimension")
    user: str | None = Field(None, description="accepted for OpenAI compatibility; ignored")
    view: str | None = Field(None, description="the bundle's view; default: the bundle's default view")
    normalize: bool = Field(True, description="L2-normalise the vectors")
    truncation: Truncation = TRUNCATION


class Embedding(BaseModel):
    object: Literal["embedding"] = "embedding"
    embedding: list[float] | str
    index: int


class Usage(BaseModel):
    prompt_tokens: int = Field(description="every token embedded (all the parts of a split input)")
    total_tokens: int
    split_inputs: int = Field(0, description="inputs over the token limit split into sentences and pooled (also header X-Split-Inputs)")
    truncated_inputs: int = Field(0, description="inputs cut to the limit (also header X-Truncated-Inputs)")


class EmbeddingsResponse(BaseModel):
    object: Literal["list"] = "list"
    data: list[Embedding]
    model: str
    usage: Usage


# -- similarity ---------------------------------------------------------------------------
class SimilarityRequest(_Req):
    model_config = _examples({"pairs": [["a man is playing a guitar .", "a person plays an instrument ."]]},
                             {"source": "the cat sat on the mat .", "targets": ["a cat is sitting .", "stocks fell sharply ."]},
                             oneOf=[{"required": ["pairs"], "properties": {"pairs": {"type": "array"}}},
                                    {"required": ["source", "targets"], "properties": {"source": {"type": "string"}, "targets": {"type": "array"}}}])
    model: str | None = None
    view: str | None = None
    pairs: Annotated[list[Any] | None, WithJsonSchema({"anyOf": [PAIRS, NULL]})] = Field(None, description="[[a, b], ...]; or send source and targets")
    source: Annotated[Any, WithJsonSchema({"anyOf": [TEXT, NULL]})] = Field(None, description="one text compared with every target")
    targets: Annotated[list[Any] | None, WithJsonSchema({"anyOf": [TEXTS, NULL]})] = None
    truncation: Truncation = TRUNCATION


# -- rerank (infinity's and Cohere's shape) --------------------------------------------------
class RerankRequest(_Req):
    model_config = _examples({"query": "where do cats sleep ?", "documents": ["the cat slept on the sofa .", "stocks fell sharply .",
                                                                            "a dog barked at the mailman ."], "top_n": 2, "return_documents": True})
    query: Text = Field(description="the text documents are ranked against")
    documents: Texts = Field(description="texts to rank")
    top_n: int | None = Field(None, description="return only the best n; default: all", json_schema_extra={"minimum": 1})
    return_documents: bool = Field(False, description="include each document's text in its result")
    model: str | None = None
    view: str | None = None
    truncation: Truncation = TRUNCATION


class RerankResult(BaseModel):
    index: int = Field(description="position in `documents`")
    relevance_score: float = Field(description="cosine similarity in [-1, 1], the same score as /v1/similarity")
    document: str | None = None


class RerankResponse(BaseModel):
    object: Literal["rerank"] = "rerank"
    model: str
    results: list[RerankResult] = Field(description="best first")
    usage: Usage


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


# -- info and tokenize ----------------------------------------------------------------------
class InfoModel(BaseModel):
    id: str
    dimension: int = Field(description="the default view's dimension")
    views: dict[str, int] = Field(description="view -> dimension")
    max_input_tokens: int
    family: str
    default: bool


class InfoResponse(BaseModel):
    name: str
    version: str
    default_model: str | None
    models: list[InfoModel]
    aliases: dict[str, str] = Field(description="alias -> bundle it names now")
    default_index: str
    limits: dict[str, Any]
    devices: dict[str, Any]


class TokenizeRequest(_Req):
    model_config = _examples({"input": "The quick brown fox jumps over the lazy zorblax."})
    input: Annotated[str | list[Any], WithJsonSchema({"anyOf": [TEXT, TEXTS, TOKEN_IDS, TOKEN_ID_LISTS]})] = Field(
        description="a string or a list of strings (or cl100k token ids, as /v1/embeddings)")
    model: str | None = None


class Token(BaseModel):
    text: str
    id: int
    oov: bool = Field(description="not in the vocabulary: the model sees `<unk>`")
    special: bool = False


class Tokenized(BaseModel):
    index: int
    tokens: list[Token]
    count: int
    oov: list[str] = Field(description="the out-of-vocabulary words, in order")
    over_limit: bool = Field(description="more tokens than max_input_tokens")


class TokenizeResponse(BaseModel):
    object: Literal["list"] = "list"
    model: str
    max_input_tokens: int
    data: list[Tokenized]


# -- search -------------------------------------------------------------------------------
class SearchRequest(_Req):
    model_config = _examples({"query": "the king rode into battle .", "k": 3}, {"index": "default", "query": ["love and marriage", "a storm at sea"], "k": 2})
    index: str | None = Field(None, description="index name; default: the server's default index")
    query: Annotated[Any, WithJsonSchema({"anyOf": [TEXT, TEXTS, {"type": "array", "items": {"type": "number"}, "minItems": 1}]})] = Field(
        description="a text, a list of texts, or a vector (list of numbers)")
    k: int = Field(10, description="neighbours per query (1..max_k)", json_schema_extra={"minimum": 1})
    truncation: Truncation = TRUNCATION


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
    model_config = _examples({"name": "notes", "factory": "Flat", "metric": "cosine"})
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
    model_config = _examples({"documents": [{"text": "the meeting moved to friday .", "id": "n1", "metadata": {"tag": "work"}},
                                            {"text": "buy milk and bread ."}]})
    documents: list[DocumentIn] = Field(json_schema_extra={"minItems": 1})
    truncation: Truncation = TRUNCATION


class MapRequest(_Req):
    model_config = _examples({"query": "a storm at sea", "limit": 200})
    query: Annotated[Any, WithJsonSchema({"anyOf": [TEXT, NULL]})] = Field(None, description="a text placed on the map")
    limit: int = Field(300, description="documents drawn (the first ones added), 3..max_inputs", json_schema_extra={"minimum": 3})
    include: list[str] = Field([], description="ids drawn first whatever their place (e.g. a search's results); unknown ids are skipped")


class MapPoint(BaseModel):
    id: str | None = None
    text: str
    x: float
    y: float


class MapResponse(BaseModel):
    index: str
    model: str
    points: list[MapPoint]
    query: MapPoint | None
    explained_variance: list[float] = Field(description="share of the variance on each axis")
    usage: Usage


class DeleteDocumentsRequest(_Req):
    model_config = _examples({"ids": ["n1"]})
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
