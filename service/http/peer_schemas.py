"""The bodies of TEI's and Cohere's APIs, answered by the same core as ours (``schemas.py`` holds our own).

* **TEI** (Hugging Face text-embeddings-inference): ``POST /embed`` (and ``POST /``, where
  ``huggingface_hub.InferenceClient(base_url=...).feature_extraction`` posts) answers a list of vectors;
  ``POST /rerank`` with ``texts`` answers ``[{index, score, text?}]``; ``POST /tokenize`` with ``inputs``
  answers a list of tokens per input. TEI's ``truncate`` is a boolean: absent, the server's ``truncation``
  setting; ``true``, cut at the token limit; ``false``, a text over the limit is a 413.
* **Cohere v2**: ``POST /v2/rerank`` answers ``{id, results[{index, relevance_score}], meta}``.

Scores where the peer documents a range of [0, 1] (TEI's rerank unless ``raw_scores``, Cohere's
``relevance_score``) are the cosine mapped onto it, ``(1 + cosine) / 2``: the same order as the cosine.

``/rerank`` and ``/tokenize`` take two request forms each, told apart by a field (:func:`form`): TEI's
(``texts``, ``inputs``) and ours (``documents``, ``input``). Types are strict, as in every body (``StrictBody``).
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Discriminator, Field, RootModel, Tag, WithJsonSchema, field_validator

from thoughtvec.service.core import results as core
from thoughtvec.service.errors import InvalidInput
from thoughtvec.service.http.schemas import NULL, TEXT, TEXTS, Int, RerankRequest, StrictBody, TokenizeRequest, absent_if_none, examples
from thoughtvec.service.settings import Truncation

TEI_FORM, OUR_FORM = "TEI's form", "this API's form"  # the tags of a two-form body (errors name fields without them)
SIMILARITY_FORM = "TEI's similarity"  # POST / with inputs {source_sentence, sentences}
FORM_TAGS = (TEI_FORM, OUR_FORM, SIMILARITY_FORM)
Inputs = Annotated[str | list[Any], WithJsonSchema({"anyOf": [TEXT, TEXTS]})]
MODEL_IDS = {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1}  # the model's own token ids
EmbedInputs = Annotated[
    str | list[Any], WithJsonSchema({"anyOf": [TEXT, TEXTS, MODEL_IDS, {"type": "array", "items": MODEL_IDS, "minItems": 1}]})
]


def unit_score(cosine: float) -> float:
    """A cosine in [-1, 1] as a score in [0, 1], in the same order."""
    return (1.0 + cosine) / 2.0


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


class TeiEmbedResponse(RootModel[list[list[float]]]):
    """One vector per input, in order (a list of one for a single string)."""


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
    raw_scores: bool = Field(False, description="`score` is the cosine in [-1, 1]; by default, (1 + cosine) / 2 in [0, 1]")
    return_text: bool = Field(False, description="include each text in its result")


class TeiRank(BaseModel):
    index: int = Field(description="position in `texts`")
    score: float = Field(description="(1 + cosine) / 2 in [0, 1], or the cosine with `raw_scores`")
    text: str | None = absent_if_none(description="the text, when `return_text` is true")


class TeiRerankResponse(RootModel[list[TeiRank]]):
    """Every text, best first."""

    @classmethod
    def of(cls, r: core.Reranked, raw_scores: bool) -> TeiRerankResponse:
        return cls([TeiRank(index=x.index, score=x.score if raw_scores else unit_score(x.score), text=x.document) for x in r.results])


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

    def truncation(self, limit: int) -> Truncation | None:
        """The documents' truncation for a model taking ``limit`` tokens."""
        if self.max_tokens_per_doc is None:
            return None
        if self.max_tokens_per_doc < limit:
            raise InvalidInput(
                f"max_tokens_per_doc is {self.max_tokens_per_doc}; documents are cut only at the model's limit, {limit} tokens: "
                f"send at least {limit}, or leave it out",
                field="max_tokens_per_doc",
            )
        return "truncate"


class CohereResult(BaseModel):
    index: int = Field(description="position in `documents`")
    relevance_score: float = Field(description="(1 + cosine) / 2 in [0, 1]")


class CohereRerankResponse(BaseModel):
    id: str = Field(description="this answer's id")
    results: list[CohereResult] = Field(description="best first")
    meta: dict[str, Any] = Field(description="`api_version` and the input `tokens`")

    @classmethod
    def of(cls, r: core.Reranked) -> CohereRerankResponse:
        return cls(
            id=str(uuid.uuid4()),
            results=[CohereResult(index=x.index, relevance_score=unit_score(x.score)) for x in r.results],
            meta={"api_version": {"version": "2"}, "tokens": {"input_tokens": r.usage.tokens}},
        )


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
