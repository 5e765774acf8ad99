"""Request and response bodies (pydantic). Unknown fields are errors: a typo never passes silently.

Each response model has ``of(result)``, which builds it from the core's typed result
(``thoughtvec.service.core.results``): the one place where the wire format is decided. Optional fields the
wire leaves out when they have no value (a hit's ``metadata``, a rerank result's ``document``)
are declared with ``absent_if_none``.

Items of text lists are typed loosely (``list[Any]``) on purpose: the core checks each one and
names it (``input[3] must be a string, got int``), which pydantic's union errors do not do well.
The OpenAPI schema still tells the truth (``WithJsonSchema``): texts are strings with a visible
character, lists have at least one item — what the core enforces.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, field_validator, model_validator

from thoughtvec.service.core import results as core  # not "results": two response models have a field of that name
from thoughtvec.service.core.compact import Precision
from thoughtvec.service.errors import InvalidInput, InvalidRequest
from thoughtvec.service.http.openapi import DEFAULT_MODEL
from thoughtvec.service.index.contents import NAME_PATTERN, Metric
from thoughtvec.service.index.factory_grammar import SCHEMA_PATTERN
from thoughtvec.service.index.jsonvalues import reject_lone_surrogates
from thoughtvec.service.settings import RerankMode, SearchMode, Truncation

# What the core accepts, for the OpenAPI schema (the core checks it, with messages naming the field). The
# "x-max-*" keys name a setting: the served schema states its value (``thoughtvec.service.http.openapi``).
# A text holds a character the tokenizers keep: not whitespace, not a control character, not a zero-width space
# (a text of only those is a 422 naming it: it would embed nothing).
TEXT = {"type": "string", "minLength": 1, "pattern": r"[^\s\x00-\x1f\x7f-\x9f\u200b\ufeff]", "x-max-length": "max_input_chars"}
TEXTS = {"type": "array", "items": TEXT, "minItems": 1, "x-max-items": "max_inputs"}
PAIRS = {"type": "array", "items": {"type": "array", "items": TEXT, "minItems": 2, "maxItems": 2}, "minItems": 1}
NULL: dict[str, Any] = {"type": "null"}
# cl100k ids (OpenAI's input form): 0..100276 but for the ids no token has (``tests/.../test_strict_types.py`` checks them)
CL100K_UNUSED = [100256, *range(100261, 100276)]
TOKEN_IDS = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 100276, "not": {"enum": CL100K_UNUSED}}, "minItems": 1}
TOKEN_ID_LISTS = {"type": "array", "items": TOKEN_IDS, "minItems": 1}
Text = Annotated[Any, WithJsonSchema(TEXT)]
# a text, or Cohere v1's document object ({text, ...}: other string fields kept)
DOCUMENTS = {"type": "array", "items": {"anyOf": [TEXT, {"type": "object", "properties": {"text": TEXT}, "required": ["text"],
             "additionalProperties": {"type": "string"}}]}, "minItems": 1, "x-max-items": "max_inputs"}  # fmt: skip
Texts = Annotated[list[Any], WithJsonSchema(TEXTS)]


def _integral(v: Any) -> Any:
    # JSON has one number type: 5.0 is the integer 5, as JSON Schema's "integer" says; 5.5, "5" and true stay refused
    return int(v) if isinstance(v, float) and v.is_integer() else v


Int = Annotated[int, BeforeValidator(_integral)]  # a request's integer, under strict types


class StrictBody(BaseModel):
    """A request body: unknown fields are errors, and types are strict (no bool for a number, no string for a
    number or a bool: ``k: true``, ``k: "5"``, ``normalize: 0`` are 422s naming the field)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _valid_unicode(cls, data: Any) -> Any:
        # Raised as a domain error (not ValueError), so pydantic passes it on: 422 naming the field.
        reject_lone_surrogates(data)
        return data


def absent_if_none(default: None = None, **kw: Any) -> Any:
    """An optional response field that the wire leaves out, rather than writing null, when it has no value."""
    return Field(default, exclude_if=lambda v: v is None, **kw)


def examples(*examples: dict, **schema: Any) -> ConfigDict:
    """Request examples for /docs ("Try it out" sends the first; they run against the bundled models),
    and any other JSON-schema keys of the body (``oneOf``)."""
    return ConfigDict(extra="forbid", strict=True, json_schema_extra={"examples": list(examples), **schema})


MODE = Field(
    None,
    description="`dense` (the index's vectors), `lexical` (BM25) or `hybrid` (both rankings fused); default: the index's "
    "`mode` (a vector query: `dense`, the only mode it has)",
)
RERANK_MODE = Field(
    None,
    description="`hybrid` (default): the model's cosine (for a model the guide measured with it, also each document's best "
    "sentence's) and BM25 over the documents sent, fused as a hybrid search fuses; `dense`: the cosine alone",
)
RELEVANCE = (
    "on [0, 1], best first: in `hybrid`, the logistic of the fused standardised scores (0.5: the documents' mean on every "
    "signal; 0.73: a standard deviation above it on every one); in `dense`, (1 + cosine) / 2"
)
TRUNCATION = Field(
    None,
    description="text over the bundle's token limit: `split` into sentences and pool, `truncate`, "
    "or `reject` (413); default: the server's `truncation` setting",
)


# -- embeddings (OpenAI-compatible) -----------------------------------------------------------
class EmbeddingsRequest(StrictBody):
    model_config = examples(
        {"input": ["the cat sat on the mat .", "a dog ran in the park ."], "model": DEFAULT_MODEL},
        {"input": "one sentence ."},
        {"input": [[1820, 8415, 7731, 389, 279, 5634, 662]], "model": "text-embedding-3-small"},
    )
    input: Annotated[str | list[Any], WithJsonSchema({"anyOf": [TEXT, TEXTS, TOKEN_IDS, TOKEN_ID_LISTS]})] = Field(
        description="a string, a list of strings, a list of cl100k token ids, or a list of lists of them"
    )
    model: str | None = Field(None, description="bundle name; default: the server's default model")
    encoding_format: Literal["float", "base64"] = Field(
        "float", description="`base64`: the vector's bytes (little-endian float32; a byte a value or 8 bits a byte with `embedding_type`)"
    )
    embedding_type: Precision = Field(
        "float",
        description="an extension: `int8` / `uint8` (a byte a dimension, on ranges fixed per model and view), `binary` / `ubinary` "
        "(a bit a dimension, 1 above 0, packed 8 to a byte: a list of dim / 8 integers), as sentence-transformers' precisions",
    )
    dimensions: Int | None = Field(
        None,
        description="fewer dimensions (8 up to the view's): the vector projected on the view's principal axes (fitted on "
        "the training corpus, stored in the bundle), then normalised; over the view's size: 422",
    )
    user: str | None = Field(None, description="accepted for OpenAI compatibility; ignored")
    view: str | None = Field(None, description="the bundle's view; default: the bundle's default view")
    normalize: bool = Field(True, description="L2-normalise the vectors")
    truncation: Truncation | None = TRUNCATION


class Embedding(BaseModel):
    object: Literal["embedding"] = "embedding"
    embedding: list[float] | list[int] | str
    index: int


class Usage(BaseModel):
    prompt_tokens: int = Field(description="every token embedded (all the parts of a split input)")
    total_tokens: int
    split_inputs: int = Field(0, description="inputs over the token limit split into sentences and pooled (also header X-Split-Inputs)")
    truncated_inputs: int = Field(0, description="inputs cut to the limit (also header X-Truncated-Inputs)")

    @classmethod
    def of(cls, u: core.Usage) -> Usage:
        return cls(prompt_tokens=u.tokens, total_tokens=u.tokens, split_inputs=u.split, truncated_inputs=u.truncated)

    def headers(self) -> dict[str, str]:
        """How many inputs were split or truncated, as headers too (clients that parse only OpenAI's fields see them)."""
        return usage_headers(self.split_inputs, self.truncated_inputs)

    @staticmethod
    def json_of(u: core.Usage) -> bytes:
        """This model's JSON for ``u``, written directly (the embeddings route's hot path; the tests hold it to
        :meth:`model_dump_json`)."""
        return b'{"prompt_tokens":%d,"total_tokens":%d,"split_inputs":%d,"truncated_inputs":%d}' % (
            u.tokens,
            u.tokens,
            u.split,
            u.truncated,
        )


def usage_headers(split: int, truncated: int) -> dict[str, str]:
    """:meth:`Usage.headers`, from the two counts."""
    return {"X-Split-Inputs": str(split), "X-Truncated-Inputs": str(truncated)}


class EmbeddingsResponse(BaseModel):
    object: Literal["list"] = "list"
    data: list[Embedding]
    model: str
    usage: Usage


# -- similarity ---------------------------------------------------------------------------
def given(name: str) -> dict:
    """JSON Schema for: the body has ``name``, not null."""
    return {"required": [name], "properties": {name: {"not": {"type": "null"}}}}


class SimilarityRequest(StrictBody):
    model_config = examples(
        {"pairs": [["a man is playing a guitar .", "a person plays an instrument ."]]},
        {"source": "the cat sat on the mat .", "targets": ["a cat is sitting .", "stocks fell sharply ."]},
        oneOf=[  # one form or the other, never both (a 422 naming pairs); null is as absent
            {"allOf": [given("pairs")], "not": {"anyOf": [given("source"), given("targets")]}},
            {"allOf": [given("source"), given("targets")], "not": given("pairs")},
        ],
    )
    model: str | None = None
    view: str | None = None
    pairs: Annotated[list[Any] | None, WithJsonSchema({"anyOf": [PAIRS, NULL]})] = Field(
        None, description="[[a, b], ...]; or send source and targets"
    )
    source: Annotated[Any, WithJsonSchema({"anyOf": [TEXT, NULL]})] = Field(None, description="one text compared with every target")
    targets: Annotated[list[Any] | None, WithJsonSchema({"anyOf": [TEXTS, NULL]})] = None
    truncation: Truncation | None = TRUNCATION


# -- rerank (Cohere v1's shape, which infinity takes too) --------------------------------------------------
class RerankRequest(StrictBody):
    model_config = examples(
        {
            "query": "where do cats sleep ?",
            "documents": ["the cat slept on the sofa .", "stocks fell sharply .", "a dog barked at the mailman ."],
            "top_n": 2,
            "return_documents": True,
        }
    )
    query: Text = Field(description="the text documents are ranked against")
    documents: Annotated[list[Any], WithJsonSchema(DOCUMENTS)] = Field(
        description="texts to rank, or Cohere v1's document objects: `{text, ...}`, ranked by their `text`, returned whole"
    )
    top_n: Int | None = Field(None, description="return only the best n; default: all", json_schema_extra={"minimum": 1})
    return_documents: bool = Field(False, description="include each document in its result")
    rank_fields: Annotated[list[str] | None, WithJsonSchema({"anyOf": [{"type": "array", "items": {"const": "text"}}, NULL]})] = Field(
        None, description="Cohere v1's: only `text` is ranked (any other field is a 422)"
    )
    model: str | None = None
    view: str | None = None
    truncation: Truncation | None = TRUNCATION
    mode: RerankMode | None = RERANK_MODE

    @field_validator("rank_fields")
    @classmethod
    def _text_only(cls, v: list[str] | None) -> list[str] | None:
        others = [f for f in v or () if f != "text"]
        if others:
            raise InvalidRequest(
                f"rank_fields names {others}; only a document's text is ranked: send ['text'] or leave it out", field="rank_fields"
            )
        return v

    def texts(self) -> list[Any]:
        """Each document's text: a string itself, a document object's ``text`` (every field of one a string, as
        Cohere's); other items are the core's to refuse."""
        out = []
        for i, d in enumerate(self.documents):
            if isinstance(d, dict):
                if "text" not in d:
                    raise InvalidInput(f"documents[{i}] has no text: a document object is {{text, ...}}", field=f"documents[{i}].text")
                for key, value in d.items():
                    if not isinstance(value, str):
                        where = f"documents[{i}].{key}"
                        raise InvalidInput(f"{where} must be a string, got {type(value).__name__}", field=where)
                d = d["text"]
            out.append(d)
        return out


class RerankDocument(BaseModel):
    """The document as it was sent: ``{text}`` for a string, the object itself (every field kept) for an object."""

    model_config = ConfigDict(extra="allow")
    text: str


class RerankResult(BaseModel):
    index: int = Field(description="position in `documents`")
    relevance_score: float = Field(description=RELEVANCE)
    document: RerankDocument | None = absent_if_none(description="`{text}`, as Cohere v1 gives it, when `return_documents` is true")


class RerankResponse(BaseModel):
    object: Literal["rerank"] = "rerank"
    model: str
    mode: RerankMode = Field(description="the mode that ranked")
    results: list[RerankResult] = Field(description="best first")
    usage: Usage

    @classmethod
    def of(cls, r: core.Reranked, documents: list[Any] | None = None) -> RerankResponse:
        """The answer to ``r``; ``documents``: as sent, so that a document object comes back whole."""

        def document(x: core.Ranked) -> RerankDocument | None:
            if x.document is None:
                return None
            sent = documents[x.index] if documents is not None else None
            return RerankDocument.model_validate(sent) if isinstance(sent, dict) else RerankDocument(text=x.document)

        results = [RerankResult(index=x.index, relevance_score=x.score, document=document(x)) for x in r.results]
        return cls(model=r.model, mode=r.mode, results=results, usage=Usage.of(r.usage))


class PairScore(BaseModel):
    index: int
    score: float = Field(description="cosine similarity in [-1, 1]")
    relatedness: float | None = absent_if_none(description="predicted SICK relatedness in [1, 5], when the bundle has a head")


class SimilarityResponse(BaseModel):
    object: Literal["list"] = "list"
    model: str
    view: str
    data: list[PairScore]
    usage: Usage

    @classmethod
    def of(cls, r: core.Similarity) -> SimilarityResponse:
        return cls(
            model=r.model,
            view=r.view,
            data=[PairScore(index=p.index, score=p.score, relatedness=p.relatedness) for p in r.data],
            usage=Usage.of(r.usage),
        )


# -- info and tokenize ----------------------------------------------------------------------
class DevFigures(BaseModel):
    """A bundle's dev figures (null where it has none): what its uses were chosen on."""

    sts_b_rho: float | None = Field(description="STS-B dev cosine Spearman of the default view")
    sick_r_rho: float | None = Field(description="SICK-R dev (trial) cosine Spearman of the default view")
    senteval_macro: float | None = Field(description="the best SentEval dev macro (8 tasks) of any view ...")
    senteval_view: str | None = Field(description="... and that view")
    scifact_ndcg10: float | None = Field(description="dense nDCG@10 of the default view on the SciFact dev set")


USES = Field(description="uses (similarity, search, features, speed) it is the best bundle for, chosen on dev")
USES_HERE = Field(description="uses it is the best for among the bundles trained here (an imported encoder is left out)")
DEV = Field(description="its dev figures; null for a bundle the guide does not know (or a re-exported one)")


class InfoModel(BaseModel):
    id: str
    dimension: int = Field(description="the default view's dimension")
    views: dict[str, int] = Field(description="view -> dimension")
    max_input_tokens: int
    family: str
    default: bool
    best_for: list[str] = USES
    best_trained_here_for: list[str] = USES_HERE
    dev: DevFigures | None = DEV


TEI_INFO = "TEI's /info field (huggingface_hub's get_endpoint_info reads them): "


class SparseInfo(BaseModel):
    """How `/embed_sparse` makes its vectors (the analyser and BM25 of lexical search too): what a client needs to
    weigh queries by the idf of the same BM25 variant."""

    stemmer: str | None = Field(description="the Snowball stemmer (PyStemmer's name), or null")
    stopwords: str | None = Field(description="bm25s's stop-word list, or null")
    method: str = Field(description="the BM25 variant (bm25s's names): its idf is the one to weigh queries by")
    k1: float
    b: float
    avgdl: float = Field(description="a request's `avgdl` when it sends none")
    index: str = Field(description="how a term becomes its index")


class InfoResponse(BaseModel):
    name: str
    version: str
    default_model: str | None
    models: list[InfoModel]
    aliases: dict[str, str] = Field(description="alias -> bundle it names now")
    default_index: str
    limits: dict[str, Any]
    devices: dict[str, Any]
    # TEI's fields, about the default model (the one a TEI client gets) and the limits
    model_id: str | None = Field(description=TEI_INFO + "the default model")
    model_sha: None = Field(None, description=TEI_INFO + "null (a bundle has no Hub revision)")
    model_dtype: Literal["float32"] = Field("float32", description=TEI_INFO + "the ONNX graphs' float type")
    model_type: dict[str, dict[str, str]] = Field(
        description=TEI_INFO + "`{embedding: {pooling}}`, the default model's: `mean` or `last_token`"
    )
    max_concurrent_requests: int = Field(description=TEI_INFO + "sentences a model may hold waiting (max_queue_size)")
    max_input_length: int | None = Field(description=TEI_INFO + "the default model's max_input_tokens")
    max_batch_tokens: int = Field(description=TEI_INFO + "padded tokens per ONNX run")
    max_batch_requests: int = Field(description=TEI_INFO + "sentences per ONNX run (max_batch_size)")
    max_client_batch_size: int = Field(description=TEI_INFO + "inputs per request (max_inputs)")
    auto_truncate: bool = Field(description=TEI_INFO + "a text over the token limit is embedded (split or cut), not refused")
    tokenization_workers: int = Field(1, description=TEI_INFO + "threads that tokenize")
    sha: None = Field(None, description=TEI_INFO + "null")
    docker_label: None = Field(None, description=TEI_INFO + "null")
    sparse: SparseInfo = Field(description="how `/embed_sparse` makes its vectors (an extension)")

    @classmethod
    def of(cls, i: core.Info, sparse: dict[str, Any]) -> InfoResponse:
        models = [
            InfoModel(
                id=m.id,
                dimension=m.dimension,
                views=m.views,
                max_input_tokens=m.max_input_tokens,
                family=m.family,
                default=m.default,
                best_for=m.best_for,
                best_trained_here_for=m.best_trained_here_for,
                dev=DevFigures(**m.dev) if m.dev else None,
            )
            for m in i.models
        ]
        default = next((m for m in i.models if m.id == i.default_model), None)
        return cls(
            name=i.name,
            version=i.version,
            default_model=i.default_model,
            models=models,
            aliases=i.aliases,
            default_index=i.default_index,
            limits=i.limits,
            devices=i.devices,
            model_id=i.default_model,
            model_type={"embedding": {"pooling": default.pooling if default else "unknown"}},
            max_concurrent_requests=i.limits["max_queue_size"],
            max_input_length=default.max_input_tokens if default else None,
            max_batch_tokens=i.limits["max_batch_tokens"],
            max_batch_requests=i.limits["max_batch_size"],
            max_client_batch_size=i.limits["max_inputs"],
            auto_truncate=i.limits["truncation"] != "reject",
            sparse=SparseInfo(**sparse),
        )


class TokenizeRequest(StrictBody):
    model_config = examples({"input": "The quick brown fox jumps over the lazy zorblax."})
    input: Annotated[str | list[Any], WithJsonSchema({"anyOf": [TEXT, TEXTS, TOKEN_IDS, TOKEN_ID_LISTS]})] = Field(
        description="a string or a list of strings (or cl100k token ids, as /v1/embeddings)"
    )
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

    @classmethod
    def of(cls, t: core.Tokenization) -> TokenizeResponse:
        data = [
            Tokenized(
                index=x.index,
                tokens=[Token(text=k.text, id=k.id, oov=k.oov, special=k.special) for k in x.tokens],
                count=len(x.tokens),
                oov=x.oov,
                over_limit=x.over_limit,
            )
            for x in t.data
        ]
        return cls(model=t.model, max_input_tokens=t.max_input_tokens, data=data)


# -- search -------------------------------------------------------------------------------
class SearchRequest(StrictBody):
    model_config = examples(
        {"query": "the king rode into battle .", "k": 3},
        {"index": "default", "query": ["love and marriage", "a storm at sea"], "k": 2},
        {"query": "the king rode into battle .", "k": 3, "mode": "lexical"},
        allOf=[  # a vector query is searched by vector only
            {
                "if": {"required": ["query"], "properties": {"query": {"type": "array", "items": {"type": "number"}}}},
                "then": {"properties": {"mode": {"enum": ["dense", None]}}},
            }
        ],
    )
    index: str | None = Field(None, description="index name; default: the server's default index")
    query: Annotated[Any, WithJsonSchema({"anyOf": [TEXT, TEXTS, {"type": "array", "items": {"type": "number"}, "minItems": 1}]})] = Field(
        description="a text, a list of texts, or a vector (list of numbers)"
    )
    k: Int = Field(10, description="neighbours per query (1..max_k)", json_schema_extra={"minimum": 1, "x-maximum": "max_k"})
    mode: SearchMode | None = MODE
    truncation: Truncation | None = TRUNCATION
    explain: bool = Field(
        False,
        description="mode hybrid: each hit says what each ranking fused added to its score, and which put it where it is "
        "(`explain`); other modes rank by one signal, the score itself, and leave it out",
    )


class Ranks(BaseModel):
    dense: int | None = Field(description="place (from 1) in the dense ranking fused; null where it was not among its best")
    lexical: int | None = Field(description="place (from 1) in the BM25 ranking fused; null where it was not among its best")


class Signal(BaseModel):
    rank: int | None = Field(description="place (from 1) in this ranking; null where it was not among its best")
    score: float | None = Field(
        description="this ranking's own score: the dense one's cosine / inner product or squared L2 distance, BM25's "
        "score; null where the hit was not among its best"
    )
    added: float = Field(description="what this ranking added to the hit's fused `score` (the two rankings' sum to it)")


class Explain(BaseModel):
    dense: Signal
    lexical: Signal
    by: Literal["dense", "lexical"] = Field(description="the ranking that added more: the one that put the hit where it is")

    @classmethod
    def of(cls, h: core.Hit) -> Explain:
        dense = Signal(rank=h.dense_rank, score=h.dense_score, added=h.dense_part)
        lexical = Signal(rank=h.lexical_rank, score=h.lexical_score, added=h.lexical_part)
        return cls(dense=dense, lexical=lexical, by="lexical" if h.lexical_part > h.dense_part else "dense")


class Hit(BaseModel):
    id: str
    text: str
    score: float | None = Field(
        description="mode dense: cosine / inner product (higher is nearer) or squared L2 distance (lower is nearer); "
        "lexical: BM25 (higher is better); hybrid: the fused score (higher is better); "
        "null where the index gave no finite score"
    )
    metadata: dict[str, Any] | None = absent_if_none(description="the document's metadata, when it has any")
    ranks: Ranks | None = absent_if_none(description="mode hybrid: the hit's place in each ranking fused")
    explain: Explain | None = absent_if_none(description="mode hybrid, asked with `explain`: what each ranking added")

    @classmethod
    def of(cls, h: core.Hit, hybrid: bool, explain: bool = False) -> Hit:
        ranks = Ranks(dense=h.dense_rank, lexical=h.lexical_rank) if hybrid else None
        why = Explain.of(h) if hybrid and explain else None
        return cls(id=h.id, text=h.text, score=h.score, metadata=h.metadata, ranks=ranks, explain=why)


class SearchResponse(BaseModel):
    object: Literal["list"] = "list"
    index: str
    model: str
    metric: str
    mode: SearchMode = Field(description="the mode that answered")
    results: list[list[Hit]] = Field(description="one list per query, best first")
    usage: Usage

    @classmethod
    def of(cls, r: core.SearchResult, explain: bool = False) -> SearchResponse:
        hits = [[Hit.of(h, r.mode == "hybrid", explain) for h in row] for row in r.results]
        return cls(index=r.index, model=r.model, metric=r.metric, mode=r.mode, results=hits, usage=Usage.of(r.usage))


# -- indexes ------------------------------------------------------------------------------
class CreateIndexRequest(StrictBody):
    model_config = examples({"name": "notes", "factory": "Flat", "metric": "cosine"})
    name: str = Field(pattern=NAME_PATTERN)
    model: str | None = Field(
        None,
        description="default: the first served of the models the model guide chose for search on dev (and measured as served), else the server's default model",
    )
    view: str | None = Field(None, description="default: the model's default view")
    mode: SearchMode | None = Field(
        None,
        description="the search a request naming no `mode` gets; default: the best on dev for the model and backend "
        "(`hybrid` over a model whose hybrid search beat BM25 alone on dev, as the model guide measured it; `lexical` over any other; `dense` on a Milvus without BM25)",
    )
    factory: Annotated[str, Field(min_length=1, max_length=200, json_schema_extra={"pattern": SCHEMA_PATTERN})] | None = Field(
        None,
        description="a supported FAISS factory string: Flat, PQ16, SQ8, HNSW32, IVF256,Flat, IVF256,PQ16, PCA64,IVF256,SQ8 ... (docs: Search "
        "and indexes, Index types); default: exact (Flat) while small, rebuilt as an approximate index past a size while it serves (FAISS: "
        "the answer's `grows`); named, the index keeps it",
    )
    metric: Metric = "cosine"
    normalize: bool = Field(True, description="L2-normalise document vectors (always on for cosine)")
    train_size: Annotated[int, Field(ge=1), BeforeValidator(_integral)] | None = Field(
        None, description="vectors to buffer before training IVF/PQ; default ~39 per list"
    )


class DocumentIn(StrictBody):
    text: Text
    id: str | None = Field(None, min_length=1, max_length=256)
    metadata: dict[str, Any] | None = None


class AddDocumentsRequest(StrictBody):
    model_config = examples(
        {
            "documents": [
                {"text": "the meeting moved to friday .", "id": "n1", "metadata": {"tag": "work"}},
                {"text": "buy milk and bread ."},
            ]
        }
    )
    documents: list[DocumentIn] = Field(json_schema_extra={"minItems": 1})
    truncation: Truncation | None = TRUNCATION


class MapRequest(StrictBody):
    model_config = examples(
        {"query": "a storm at sea", "limit": 200, "k": 5},
        allOf=[  # k above 0 needs a query; a mode needs k above 0
            {"if": {"required": ["k"], "properties": {"k": {"minimum": 1}}}, "then": given("query")},
            {"if": given("mode"), "then": {"required": ["k"], "properties": {"k": {"minimum": 1}}}},
        ],
    )
    query: Annotated[Any, WithJsonSchema({"anyOf": [TEXT, NULL]})] = Field(None, description="a text placed on the map")
    limit: Int | None = Field(
        None,
        description="documents drawn (the first ones added), 3..max_inputs; default: 300, or max_inputs where it is lower",
        json_schema_extra={"anyOf": [{"type": "integer", "minimum": 3, "x-maximum": "max_inputs"}, NULL]},
    )
    k: Int = Field(
        0, description="with a query: its k best documents, by the search /v1/search makes, are drawn first and listed in `hits` (0..limit)",
        json_schema_extra={"minimum": 0, "x-maximum": "max_k"},
    )  # fmt: skip
    mode: SearchMode | None = Field(None, description="that search's mode (with k); default: the index's `mode`")
    include: list[str] = Field([], description="ids drawn first whatever their place (e.g. a search's results); unknown ids are skipped")


class MapPoint(BaseModel):
    id: str | None = absent_if_none(description="the document's id (the query has none)")
    text: str
    x: float
    y: float

    @classmethod
    def of(cls, p: core.MapPoint) -> MapPoint:
        return cls.model_validate(p, from_attributes=True)


class MapResponse(BaseModel):
    index: str
    model: str
    points: list[MapPoint]
    query: MapPoint | None
    explained_variance: list[float] = Field(description="share of the variance on each axis")
    hits: list[str] | None = absent_if_none(description="with k: the query's best documents' ids, best first")
    mode: SearchMode | None = absent_if_none(description="with k: the mode that search answered in")
    usage: Usage

    @classmethod
    def of(cls, m: core.IndexMap) -> MapResponse:
        return cls(
            index=m.index,
            model=m.model,
            points=[MapPoint.of(p) for p in m.points],
            query=MapPoint.of(m.query) if m.query is not None else None,
            explained_variance=m.explained_variance,
            hits=m.hits,
            mode=m.mode,
            usage=Usage.of(m.usage),
        )


class DeleteDocumentsRequest(StrictBody):
    model_config = examples({"ids": ["n1"]})
    ids: list[str] = Field(json_schema_extra={"minItems": 1})


class Growth(BaseModel):
    at: int = Field(description="documents at which it is rebuilt")
    to: str = Field(description="the factory it is rebuilt as")


class IndexStats(BaseModel):
    name: str
    model: str
    view: str
    mode: SearchMode = Field(description="the search a request naming no `mode` gets")
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
    grows: Growth | None = Field(
        None,
        description="made without a named factory (FAISS): rebuilt as `to` once it holds `at` documents, serving meanwhile; null: it stays as it is",
    )
    growing: bool = Field(False, description="being rebuilt as `grows.to` now (it serves and takes writes meanwhile)")

    @classmethod
    def of(cls, s: core.IndexStats) -> IndexStats:
        """One flat object: the index's neutral stats and its backend's own (``s.backend``: FAISS's training, log and
        GPU; a backend that keeps none of that state reads as trained, nothing pending)."""
        neutral = {f.name: getattr(s, f.name) for f in dataclasses.fields(s) if f.name != "backend"}
        return cls(**neutral, **(NO_BACKEND_STATE | s.backend))


# What a backend that keeps no training state of its own reports (Milvus trains, logs and places its indexes itself).
NO_BACKEND_STATE: dict[str, Any] = {"trained": True, "pending_training": 0}


class IndexList(BaseModel):
    object: Literal["list"] = "list"
    data: list[IndexStats]
    building: dict[str, str] = {}
    quarantined: dict[str, str] = Field(
        {}, description="indexes on disk that cannot be served, with the reason (503 until fixed or dropped)"
    )

    @classmethod
    def of(cls, listing: core.IndexListing) -> IndexList:
        return cls(data=[IndexStats.of(s) for s in listing.data], building=listing.building, quarantined=listing.quarantined)


class AddDocumentsResponse(BaseModel):
    index: str
    ids: list[str]
    documents: int = Field(description="documents in the index after the add")
    usage: Usage

    @classmethod
    def of(cls, a: core.DocumentsAdded) -> AddDocumentsResponse:
        return cls(index=a.index, ids=a.ids, documents=a.documents, usage=Usage.of(a.usage))


class DeleteDocumentsResponse(BaseModel):
    index: str
    deleted: list[str]
    not_found: list[str]
    documents: int

    @classmethod
    def of(cls, d: core.DocumentsDeleted) -> DeleteDocumentsResponse:
        return cls.model_validate(d, from_attributes=True)


class ErrorDetail(BaseModel):
    code: str
    message: str
    field: str | None = None
    request_id: str | None = Field(None, description="500 only: the id under which the server logged the failure")


class ErrorBody(BaseModel):
    error: ErrorDetail
