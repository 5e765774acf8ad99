"""The bodies of TEI's and Cohere's APIs, answered by the same core as ours (``schemas.py`` holds our own).

* **TEI** (Hugging Face text-embeddings-inference): ``POST /embed`` (and ``POST /``, where
  ``huggingface_hub.InferenceClient(base_url=...).feature_extraction`` posts) answers a list of vectors;
  ``POST /embed_sparse`` a list of ``[{index, value}]`` per input (BM25's halves: ``core/sparse.py``);
  ``POST /rerank`` with ``texts`` answers ``[{index, score, text?}]``; ``POST /tokenize`` with ``inputs``
  answers a list of tokens per input. TEI's ``truncate`` is a boolean: absent, the server's ``truncation``
  setting; ``true``, cut at the token limit; ``false``, a text over the limit is a 413.
* **Cohere v2**: ``POST /v2/rerank`` answers ``{id, results[{index, relevance_score}], meta}``.
* **Cohere v1 and v2**: ``POST /v1/embed`` and ``POST /v2/embed`` answer ``{id, response_type, embeddings, texts,
  meta}``: v1's ``embeddings_floats`` (a list of vectors) without ``embedding_types``, else (and v2's always)
  ``embeddings_by_type`` (a list per type). What is not served (images, ``truncate: START``) is a 422 naming it.

Scores where the peer documents a range of [0, 1] (TEI's rerank unless ``raw_scores``, Cohere's
``relevance_score``) are the cosine mapped onto it, ``(1 + cosine) / 2``: the same order as the cosine.

``/rerank`` and ``/tokenize`` take two request forms each, told apart by a field (:func:`form`): TEI's
(``texts``, ``inputs``) and ours (``documents``, ``input``). Types are strict, as in every body (``StrictBody``).
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, Discriminator, Field, RootModel, Tag, ValidationInfo, WithJsonSchema, field_validator

from thoughtvec.service.core import results as core
from thoughtvec.service.core.compact import Precision
from thoughtvec.service.core.sparse import AVGDL, Side
from thoughtvec.service.errors import InvalidInput, InvalidRequest
from thoughtvec.service.http.schemas import (
    NULL,
    RELEVANCE,
    RERANK_MODE,
    TEXT,
    TEXTS,
    Int,
    RerankRequest,
    StrictBody,
    TokenizeRequest,
    absent_if_none,
    examples,
    given,
)
from thoughtvec.service.settings import RerankMode, Truncation

TEI_FORM, OUR_FORM = "TEI's form", "this API's form"  # the tags of a two-form body (errors name fields without them)
SIMILARITY_FORM = "TEI's similarity"  # POST / with inputs {source_sentence, sentences}
FORM_TAGS = (TEI_FORM, OUR_FORM, SIMILARITY_FORM)
Inputs = Annotated[str | list[Any], WithJsonSchema({"anyOf": [TEXT, TEXTS]})]
MODEL_IDS = {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1}  # the model's own token ids
EmbedInputs = Annotated[
    str | list[Any], WithJsonSchema({"anyOf": [TEXT, TEXTS, MODEL_IDS, {"type": "array", "items": MODEL_IDS, "minItems": 1}]})
]


def form(field: str):
    """The tag of a body: TEI's form when it holds ``field``, else ours (whose errors then name what is missing)."""

    def tag(body: Any) -> str:
        return TEI_FORM if isinstance(body, dict) and field in body else OUR_FORM

    return Discriminator(tag)


class TeiPrompt(StrictBody):
    prompt_name: Annotated[str | None, WithJsonSchema({"anyOf": [{"type": "string", "maxLength": 0}, NULL]})] = Field(
        None, description="null or empty: the served bundles define no prompts (a prompt's name is a 422)"
    )

    @field_validator("prompt_name")
    @classmethod
    def _no_prompts(cls, v: str | None) -> None:
        if v:  # "" names no prompt: nothing to put before the text
            raise InvalidInput(f"prompt_name is {v!r}; the served bundles define no prompts: leave it out", field="prompt_name")
        return None


class TeiLongInputs(TeiPrompt):
    """TEI's fields about long inputs, as its clients send them (and the prompt's name, which comes with them)."""

    truncate: bool | None = Field(
        None,
        description="a text over the model's token limit: `true` cuts it; `false` answers 413; "
        "absent or null: the server's `truncation` setting (`split` into sentences and pool, by default)",
    )
    truncation_direction: Literal["right", "Right"] = Field("right", description="the end of a long text is cut (TEI's default)")

    @property
    def truncation(self) -> Truncation | None:
        return None if self.truncate is None else "truncate" if self.truncate else "reject"


MODEL = Field(None, description="bundle or alias (an extension: TEI serves one model); default: the default model")


class TeiBody(TeiPrompt):
    """What every TEI body may carry besides its own fields."""

    model: str | None = MODEL


class TeiOptions(TeiLongInputs):
    """A TEI body with TEI's fields about long inputs."""

    model: str | None = MODEL


# -- TEI: embed -------------------------------------------------------------------------------
class TeiEmbedRequest(TeiOptions):
    model_config = examples(
        {"inputs": ["The cat sat on the mat.", "A dog ran in the park."]}, {"inputs": "one sentence .", "dimensions": 64}
    )
    inputs: EmbedInputs = Field(
        description="a string or a list of strings; or the model's own token ids (as `/tokenize` gives them, specials included), "
        "a list of them or a list of such lists"
    )
    normalize: bool = Field(True, description="L2-normalise the vectors")
    dimensions: Int | None = Field(None, description="fewer dimensions, as `/v1/embeddings` takes them (8 up to the view's)")
    embedding_type: Precision = Field("float", description="an extension (TEI has none): `/v1/embeddings`'s `embedding_type`")


class TeiEmbedResponse(RootModel[list[list[float]] | list[list[int]]]):
    """One vector per input, in order (a list of one for a single string); integers with an `embedding_type` but float."""


# -- TEI: embed_sparse ------------------------------------------------------------------------
class TeiEmbedSparseRequest(TeiLongInputs):
    model_config = examples(
        {"inputs": ["The cat sat on the mat.", "A dog ran in the park."]}, {"inputs": "where do cats sleep?", "side": "query"}
    )
    inputs: Inputs = Field(description="a string or a list of strings")
    truncate: bool | None = Field(
        None,
        description="a text over `max_input_chars` (BM25 reads words: no token limit applies): `true` cuts it there; `false` "
        "answers 413; absent or null: cut where the server's `truncation` setting is `truncate`, else 413",
    )
    side: Side = Field(
        "document",
        description="an extension (TEI has none): `document` weighs each term by BM25's saturated, length-normalised term "
        "frequency, `tf·(k1+1)/(tf + k1·(1−b+b·len/avgdl))`; `query` by its count in the text. With the corpus's idf "
        "(a vector database's, e.g. Qdrant's `modifier: idf`), a query vector's inner product with a document vector is BM25",
    )
    avgdl: float = Field(
        AVGDL,
        ge=1,
        allow_inf_nan=False,
        description="an extension: the corpus's mean document length, in terms once stop words are out, for `side: document` "
        "(fastembed's Qdrant/bm25 default)",
    )


class TeiSparseValue(BaseModel):
    index: int = Field(ge=0, description="the term's index: abs(MurmurHash3_x86_32(term, seed 0)) as a signed int, fastembed's")
    value: float = Field(description="the term's weight on the side asked")


class TeiEmbedSparseResponse(RootModel[list[list[TeiSparseValue]]]):
    """One vector per input, in order: its terms' indices, ascending, with their weights (empty for stop words only)."""


# -- TEI: similarity (and huggingface_hub's sentence_similarity, which posts it to the base URL) --------------------
class TeiSimilarityInputs(StrictBody):
    source_sentence: Annotated[Any, WithJsonSchema(TEXT)] = Field(description="the text every sentence is compared with")
    sentences: Annotated[list[Any], WithJsonSchema(TEXTS)] = Field(description="texts compared with the source sentence")


class TeiSimilarityRequest(StrictBody):
    model_config = examples(
        {"inputs": {"source_sentence": "the cat sat on the mat .", "sentences": ["a cat is sitting .", "stocks fell sharply ."]}}
    )
    inputs: TeiSimilarityInputs
    parameters: TeiLongInputs | None = Field(None, description="TEI's `truncate`, `truncation_direction`, `prompt_name`")
    model: str | None = MODEL


class TeiSimilarityResponse(RootModel[list[float]]):
    """The cosine similarity of the source sentence with each sentence, in order."""


EmbedForms = Annotated[
    Annotated[TeiSimilarityRequest, Tag(SIMILARITY_FORM)] | Annotated[TeiEmbedRequest, Tag(TEI_FORM)],
    Discriminator(lambda body: SIMILARITY_FORM if isinstance(body, dict) and isinstance(body.get("inputs"), dict) else TEI_FORM),
]


# -- TEI: rerank ------------------------------------------------------------------------------
class TeiRerankRequest(TeiOptions):
    model_config = examples(
        {"query": "where do cats sleep ?", "texts": ["the cat slept on the sofa .", "stocks fell sharply ."], "return_text": True}
    )
    query: Annotated[Any, WithJsonSchema(TEXT)] = Field(description="the text the texts are ranked against")
    texts: Annotated[list[Any], WithJsonSchema(TEXTS)] = Field(description="texts to rank")
    raw_scores: bool = Field(
        False, description="`score` is the mode's own score (the fused score in `hybrid`, the cosine in `dense`); by default on [0, 1]"
    )
    return_text: bool = Field(False, description="include each text in its result")
    mode: RerankMode | None = RERANK_MODE


class TeiRank(BaseModel):
    index: int = Field(description="position in `texts`")
    score: float = Field(description=RELEVANCE + "; with `raw_scores`, the mode's own score")
    text: str | None = absent_if_none(description="the text, when `return_text` is true")


class TeiRerankResponse(RootModel[list[TeiRank]]):
    """Every text, best first."""

    @classmethod
    def of(cls, r: core.Reranked, raw_scores: bool) -> TeiRerankResponse:
        return cls([TeiRank(index=x.index, score=x.raw if raw_scores else x.score, text=x.document) for x in r.results])


RerankForms = Annotated[Annotated[TeiRerankRequest, Tag(TEI_FORM)] | Annotated[RerankRequest, Tag(OUR_FORM)], form("texts")]


# -- TEI: tokenize ----------------------------------------------------------------------------
class TeiTokenizeRequest(TeiBody):
    model_config = examples({"inputs": "The quick brown fox jumps over the lazy zorblax."})
    inputs: Inputs = Field(description="a string or a list of strings")
    add_special_tokens: bool = Field(True, description="include the tokens that frame every input (`[CLS]`, `[SEP]`, `<eos>`)")


class TeiToken(BaseModel):
    id: int
    text: str = Field(description="the input's characters for the token where offsets are known, else the token itself")
    special: bool
    start: int | None = Field(description="character offset in the input; null for a special token or a word-level bundle")
    stop: int | None


class TeiTokenizeResponse(RootModel[list[list[TeiToken]]]):
    """One list of tokens per input."""

    @classmethod
    def of(cls, t: core.Tokenization) -> TeiTokenizeResponse:
        def token(k: core.Token, text: str) -> TeiToken:
            spanned = k.start is not None and k.stop is not None
            return TeiToken(id=k.id, text=text[k.start : k.stop] if spanned else k.text, special=k.special, start=k.start, stop=k.stop)

        return cls([[token(k, x.text) for k in x.tokens] for x in t.data])


TokenizeForms = Annotated[Annotated[TeiTokenizeRequest, Tag(TEI_FORM)] | Annotated[TokenizeRequest, Tag(OUR_FORM)], form("inputs")]


# -- Cohere v2: rerank ------------------------------------------------------------------------
class CohereRerankRequest(StrictBody):
    model_config = examples(
        {"query": "where do cats sleep ?", "documents": ["the cat slept on the sofa .", "stocks fell sharply ."], "top_n": 1}
    )
    model: str | None = Field(None, description="bundle or alias; default: the default model")
    query: Annotated[Any, WithJsonSchema(TEXT)] = Field(description="the text documents are ranked against")
    documents: Annotated[list[Any], WithJsonSchema(TEXTS)] = Field(description="texts to rank (strings)")
    top_n: Int | None = Field(None, description="return only the best n; default: all", json_schema_extra={"minimum": 1})
    max_tokens_per_doc: Int | None = Field(
        None,
        json_schema_extra={"minimum": 1},
        description="documents over the model's token limit are cut at it; a value below the limit is a 422 (the cut is the "
        "model's); absent: the server's `truncation` setting",
    )
    mode: RerankMode | None = RERANK_MODE

    def truncation(self, limit: int) -> Truncation | None:
        """The documents' truncation for a model taking ``limit`` tokens."""
        return "truncate" if token_cap(self.max_tokens_per_doc, limit, "max_tokens_per_doc", "documents") else None


def token_cap(cap: int | None, limit: int, field: str, what: str) -> bool:
    """Whether a request caps each text's tokens (Cohere's ``max_tokens_per_doc``, ``max_tokens``): a text is cut only
    at the model's own limit, so a cap below ``limit`` is refused (400 in Cohere's table), one at or above it cuts there."""
    if cap is None:
        return False
    if cap < limit:
        raise InvalidInput(
            f"{field} is {cap}; {what} are cut only at the model's limit, {limit} tokens: send at least {limit}, or leave it out",
            field=field,
        )
    return True


class CohereResult(BaseModel):
    index: int = Field(description="position in `documents`")
    relevance_score: float = Field(description=RELEVANCE)


class CohereRerankResponse(BaseModel):
    id: str = Field(description="this answer's id")
    results: list[CohereResult] = Field(description="best first")
    meta: dict[str, Any] = Field(description="`api_version` and the input `tokens`")

    @classmethod
    def of(cls, r: core.Reranked) -> CohereRerankResponse:
        return cls(
            id=str(uuid.uuid4()),
            results=[CohereResult(index=x.index, relevance_score=x.score) for x in r.results],
            meta={"api_version": {"version": "2"}, "tokens": {"input_tokens": r.usage.tokens}},
        )


# -- Cohere v1 and v2: embed --------------------------------------------------------------------
CohereEmbeddingType = Literal["float", "int8", "uint8", "binary", "ubinary", "base64"]
InputType = Literal["search_document", "search_query", "classification", "clustering", "image"]  # Cohere's
INPUT_TYPES = [t for t in get_args(InputType) if t != "image"]  # what text embeds with
TEXT_CONTENT = {"type": "object", "properties": {"type": {"const": "text"}, "text": TEXT}, "required": ["type", "text"],
                "additionalProperties": False}  # fmt: skip
INPUTS = {"type": "array", "minItems": 1, "x-max-items": "max_inputs", "items": {"type": "object", "properties": {
          "content": {"type": "array", "items": TEXT_CONTENT, "minItems": 1}}, "required": ["content"], "additionalProperties": False}}  # fmt: skip
NO_IMAGES = "no image model is served: send texts"
NOT_SERVED = {  # (field, Cohere's value) -> what the server does instead
    ("input_type", "image"): f"{NO_IMAGES}, with input_type one of {INPUT_TYPES}",
    ("truncate", "START"): "the server cuts a long text at its end: send END (or NONE, to refuse it)",
}


class CohereEmbedBody(StrictBody):
    """What Cohere's v1 and v2 embed bodies share."""

    model: str | None = Field(None, description="bundle or alias (Cohere's model names are aliases); default: the default model")
    images: Annotated[list[Any] | None, WithJsonSchema({"anyOf": [{"type": "array", "maxItems": 0}, NULL]})] = Field(
        None, description=f"absent, null or empty: {NO_IMAGES} (an image is a 422)"
    )
    input_type: Annotated[InputType | None, WithJsonSchema({"anyOf": [{"enum": INPUT_TYPES}, NULL]})] = Field(
        None,
        description="accepted and alike: the served encoders are symmetric (a query and a document embed the same way); `image` is a 422",
    )
    embedding_types: list[CohereEmbeddingType] | None = Field(
        None,
        min_length=1,
        description="`float`; `int8`/`uint8` (a byte a dimension, on ranges fixed per model and view); `binary`/`ubinary` "
        "(a bit a dimension, packed 8 to a byte); `base64` (the float32 vector's little-endian bytes)",
    )
    truncate: Annotated[Literal["NONE", "START", "END"] | None, WithJsonSchema({"anyOf": [{"enum": ["NONE", "END"]}, NULL]})] = Field(
        None,
        description="a text over the model's token limit: `END` cuts its end; `NONE` answers 400; absent: the server's `truncation` "
        "setting (`split` into sentences and pool, by default); `START` is a 422 (the server cuts at the end)",
    )

    @field_validator("images")
    @classmethod
    def _no_images(cls, v: list[Any] | None) -> None:
        if v:
            raise InvalidRequest(f"images has {len(v)} item(s); {NO_IMAGES}", field="images")
        return None

    @field_validator("input_type", "truncate")
    @classmethod
    def _served(cls, v: str | None, info: ValidationInfo) -> str | None:
        """Cohere's values the server does not serve: a 422 saying what it does instead."""
        instead = None if v is None else NOT_SERVED.get((info.field_name or "", v))
        if instead is not None:
            raise InvalidRequest(f"{info.field_name} is {v!r}; {instead}", field=info.field_name)
        return v

    def types(self, default: list[CohereEmbeddingType]) -> list[CohereEmbeddingType]:
        """The embedding types asked for, each once, in order."""
        return list(dict.fromkeys(self.embedding_types or default))

    def truncation(self, limit: int, cap: int | None = None) -> Truncation | None:
        """The texts' truncation for a model taking ``limit`` tokens (``cap``: v2's ``max_tokens``)."""
        capped = token_cap(cap, limit, "max_tokens", "texts")
        return "reject" if self.truncate == "NONE" else "truncate" if self.truncate == "END" or capped else None


class CohereEmbedRequest(CohereEmbedBody):
    """Cohere v1's embed (``cohere.Client().embed``)."""

    model_config = examples({"texts": ["the cat sat on the mat .", "a dog ran in the park ."], "model": "embed-english-v3.0",
                             "input_type": "search_document", "embedding_types": ["float", "int8"]})  # fmt: skip
    texts: Annotated[list[Any], WithJsonSchema(TEXTS)] = Field(description="texts to embed")

    def texts_of(self) -> tuple[list[Any], str]:
        """The texts, and what errors call them."""
        return self.texts, "texts"


class CohereEmbedV2Request(CohereEmbedBody):
    """Cohere v2's embed (``cohere.ClientV2().embed``)."""

    model_config = examples(
        {
            "texts": ["the cat sat on the mat ."],
            "model": "embed-v4.0",
            "input_type": "search_query",
            "embedding_types": ["float", "binary"],
        },
        {"inputs": [{"content": [{"type": "text", "text": "the cat sat on the mat ."}]}], "output_dimension": 64},
        oneOf=[{"allOf": [given("texts")], "not": given("inputs")}, {"allOf": [given("inputs")], "not": given("texts")}],
    )
    texts: Annotated[list[Any] | None, WithJsonSchema({"anyOf": [TEXTS, NULL]})] = Field(None, description="texts to embed; or send inputs")
    inputs: Annotated[list[Any] | None, WithJsonSchema({"anyOf": [INPUTS, NULL]})] = Field(
        None, description="`[{content: [{type: text, text}]}]`: an input's text items, joined by a space, embed as one text"
    )
    max_tokens: Int | None = Field(
        None, json_schema_extra={"minimum": 1}, description="at or above the model's token limit: a longer text is cut there "
        "(as `truncate` says); below it: 400 (the cut is the model's)"
    )  # fmt: skip
    output_dimension: Int | None = Field(None, description="fewer dimensions, as `/v1/embeddings`'s `dimensions` (8 up to the model's)")
    priority: Int | None = Field(None, description="accepted, ignored: requests are served in the order they come")

    def texts_of(self) -> tuple[list[Any], str]:
        """The texts (from ``texts``, or each input's text items joined), and what errors call them."""
        if (self.texts is None) == (self.inputs is None):
            raise InvalidRequest("send texts or inputs (one of them)", field="texts" if self.texts is None else "inputs")
        if self.texts is not None:
            return self.texts, "texts"
        assert self.inputs is not None
        return [input_text(x, f"inputs[{i}]") for i, x in enumerate(self.inputs)], "inputs"


def input_text(item: Any, where: str) -> Any:
    """The text of one v2 input, ``{content: [{type: text, text}, ...]}``: its text items joined by a space."""
    if not isinstance(item, dict) or set(item) != {"content"} or not isinstance(item["content"], list) or not item["content"]:
        raise InvalidRequest(f"{where} must be {{content: [{{type: text, text}}, ...]}}", field=where)
    texts = []
    for j, part in enumerate(item["content"]):
        at = f"{where}.content[{j}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "image_url":
            raise InvalidRequest(f"{at} is an image; {NO_IMAGES}", field=at)
        if kind != "text" or set(part) != {"type", "text"}:
            raise InvalidRequest(f"{at} must be {{type: text, text}}", field=at)
        if not isinstance(part["text"], str):
            raise InvalidInput(f"{at}.text must be a string, got {type(part['text']).__name__}", field=f"{at}.text")
        texts.append(part["text"])
    return " ".join(texts)


class CohereEmbeddings(BaseModel):
    """The vectors by type: a list per type asked for, one vector per text."""

    float_: list[list[float]] | None = absent_if_none(alias="float")
    int8: list[list[int]] | None = absent_if_none(description="-128..127 a dimension")
    uint8: list[list[int]] | None = absent_if_none(description="0..255 a dimension")
    binary: list[list[int]] | None = absent_if_none(description="a bit a dimension, 8 to a byte, each byte less 128: -128..127")
    ubinary: list[list[int]] | None = absent_if_none(description="a bit a dimension, 8 to a byte: 0..255")
    base64: list[str] | None = absent_if_none(description="the float32 vector's little-endian bytes")


META = Field(description="`api_version` and `billed_units.input_tokens` (every token embedded)")


class CohereEmbedByTypeResponse(BaseModel):
    id: str = Field(description="this answer's id")
    response_type: Literal["embeddings_by_type"] = "embeddings_by_type"
    embeddings: CohereEmbeddings
    texts: list[str] = Field(description="the texts embedded, in order")
    meta: dict[str, Any] = META


class CohereEmbedFloatsResponse(BaseModel):
    id: str = Field(description="this answer's id")
    response_type: Literal["embeddings_floats"] = "embeddings_floats"
    embeddings: list[list[float]] = Field(description="one vector per text")
    texts: list[str] = Field(description="the texts embedded, in order")
    meta: dict[str, Any] = META


# -- errors, in each API's shape (``middleware.STATUS`` maps each error to a status per API) -------------------
class TeiErrorBody(BaseModel):
    """TEI's error: the message and TEI's error type."""

    error: str = Field(description="what went wrong, naming the field and the limit")
    error_type: Literal["Empty", "Validation", "Tokenizer", "Overloaded", "Unhealthy", "Backend"] = Field(
        description="Empty (400: nothing to embed), Validation (413: too long or too many; 422: an invalid field; "
        "4xx: keys, unknown names), Overloaded (429), Unhealthy (503), Backend (500)"
    )


class CohereErrorBody(BaseModel):
    """Cohere's error: the message."""

    message: str = Field(description="what went wrong, naming the field and the limit")
