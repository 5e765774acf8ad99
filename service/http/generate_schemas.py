"""``POST /v1/generate``'s request and response bodies (the conventions of ``schemas.py``: unknown fields are
errors; a text-or-vector field is typed loosely and checked by the core, which names it in its errors)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, WithJsonSchema

from thoughtvec.service.core.generation import Generation, Generators
from thoughtvec.service.http.schemas import TEXT, StrictBody, Usage, absent_if_none, examples

VECTOR = {"type": "array", "items": {"type": "number"}, "minItems": 1}
Source = Annotated[Any, WithJsonSchema({"anyOf": [TEXT, VECTOR]})]
SOURCE = (
    "a text, or a vector of the decoder's view (as `/v1/embeddings` returns it; a unit vector is rescaled to the decoder's typical norm)"
)


class GenerateRequest(StrictBody):
    model_config = examples(
        {"model": "uni-skip", "input": "he opened the door and looked outside .", "story": 3},
        {"model": "uni-skip", "input": "the night was cold .", "to": "she laughed at the joke .", "steps": 5},
        {"model": "mean-max-aae", "input": "the lord is my shepherd .", "task": "reconstruct", "decoding": "beam"},
    )
    input: Source = Field(description=SOURCE)
    model: str | None = Field(
        None,
        description="a bundle with a decoder; default: the first of the server's default-model order that has one (`GET /v1/generate/models`)",
    )
    task: Literal["next", "previous", "reconstruct"] | None = Field(
        None, description="`next` / `previous` sentence (skip-thought), `reconstruct` (AAE); default: `next` where the model has it"
    )
    to: Source | None = Field(None, description=f"decode the path from input to this ({SOURCE}) at `steps` points")
    steps: int | None = Field(None, description="points on the path from input (t = 0) to `to` (t = 1), both included; default 5")
    plus: Source | None = Field(None, description="with minus: decode input + (plus - minus)")
    minus: Source | None = Field(None, description="with plus: decode input + (plus - minus)")
    story: int | None = Field(None, description="chain this many sentences, each decoded from the vector of the one before (§3.6)")
    decoding: Literal["greedy", "beam", "sample"] = Field(
        "greedy", description="greedy, beam search (`beam_width`), or sampling (`temperature`, `seed`)"
    )
    beam_width: int = Field(4, description="beam: prefixes kept at each step (at most the max_beam_width setting)")
    temperature: float = Field(1.0, description="sample: logits divided by this before the softmax (0.01 to 100)")
    seed: int | None = Field(None, description="sample: the generator's seed (the answer says the one used)")
    count: int = Field(1, description="sample: sentences drawn from the one vector")
    max_tokens: int | None = Field(None, description="words per sentence (at most max_generate_tokens); default: the longest trained on")
    truncation: Literal["truncate", "reject"] = Field(
        "reject",
        description="a text (input, to, plus, minus) over the model's max_input_tokens or max_input_chars: `reject` (413) or"
        " `truncate` to the limit (the answer's `notes` say which)",
    )
    allow_unk: bool = Field(False, description="let the decoder choose `<unk>`, the word it does not have (never chosen by default)")
    no_repeat_ngram_size: int = Field(
        3, description="never choose a word that repeats an n-gram of this many words in the sentence; 0: none blocked"
    )


class GeneratedSentence(BaseModel):
    index: int
    text: str = Field(description="the words, space-separated (lower-cased PTB tokens, as the model reads them)")
    tokens: list[str]
    logprob: float = Field(description="summed log-probability of the words and the end of the sentence")
    t: float | None = absent_if_none(description="the point on the path: 0 is input, 1 is to")
    sample: int | None = absent_if_none(description="which of the count samples")


class GenerateResponse(BaseModel):
    object: Literal["list"] = "list"
    model: str
    task: str
    decoding: str
    view: str = Field(description="the view whose vectors the decoder reads (send vectors of this view)")
    seed: int | None = absent_if_none(description="sample: the seed used")
    data: list[GeneratedSentence]
    usage: Usage
    notes: list[str] | None = absent_if_none(description="what was done to the request, e.g. a text cut (truncation: truncate)")

    @classmethod
    def of(cls, g: Generation) -> GenerateResponse:
        data = [GeneratedSentence(index=d.index, text=d.text, tokens=d.words, logprob=d.logprob, t=d.t, sample=d.sample) for d in g.data]
        usage = Usage(prompt_tokens=g.tokens, total_tokens=g.tokens + g.generated, truncated_inputs=g.truncated)
        return cls(model=g.model, task=g.task, decoding=g.decoding, view=g.view, seed=g.seed, data=data, usage=usage, notes=g.notes or None)


class GeneratorModel(BaseModel):
    id: str
    tasks: list[str] = Field(description="what its decoders generate (`task` of `POST /v1/generate`)")
    view: str = Field(description="the view whose vectors its decoder reads")
    max_tokens: int = Field(description="the longest sentence it was trained on: the default `max_tokens`")
    default: bool = Field(description="the model a request naming none decodes with")


class GeneratorList(BaseModel):
    object: Literal["list"] = "list"
    default: str | None = Field(description="the model a `POST /v1/generate` naming none decodes with (null: none can generate)")
    data: list[GeneratorModel]

    @classmethod
    def of(cls, g: Generators) -> GeneratorList:
        data = [GeneratorModel(id=m.id, tasks=m.tasks, view=m.view, max_tokens=m.max_tokens, default=m.default) for m in g.data]
        return cls(default=g.default, data=data)
