"""The generation service: vectors back into sentences with the decoders a bundle was trained with, without HTTP.

What a user can ask (``GenerationService.generate``):

* ``task``: ``next`` / ``previous`` sentence (skip-thought's decoders), ``reconstruct`` (the AAE's);
* the vector to decode: from a text (encoded by the model, through its queue) or a vector the API returned
  for the decoder's view (a unit vector, the API's ``normalize: true``, is rescaled to the typical norm
  recorded at export);
* a path: ``to`` another text or vector, decoded at ``steps`` evenly spaced points ``(1 - t) a + t b``;
* arithmetic: ``plus`` and ``minus``: the vector ``a + (plus - minus)`` decoded;
* a story (skip-thought §3.6): ``story`` sentences, each decoded from the vector of the one before;
* decoding: ``greedy``, ``beam`` (``beam_width``) or ``sample`` (``temperature``, ``seed``, ``count`` samples),
  never choosing ``<unk>`` (unless ``allow_unk``) nor a word that repeats an n-gram of the sentence
  (``no_repeat_ngram_size``; :class:`thoughtvec.service.core.decoding.Rules`).

No model named: the first model of the server's default-model order that has a decoder
(:meth:`GenerationService.default_model`). Texts over the model's ``max_input_tokens`` or ``max_input_chars``
are refused (413) unless the request says ``truncation: truncate``, and then the answer says which were cut.

Work is bounded by the settings ``max_generate_tokens``, ``max_beam_width`` and ``max_generate_count`` (422
naming the field and the limit), and all in all by the model's queue: a request holds :func:`places` in it
(:meth:`Batcher.admit`, ``lasting``) from before its texts are encoded until its last decoding step ends, as an
embedding request holds its sentences, so a full queue answers 429 at once rather than a wait behind the
decoders, and a request that needs more places than the queue has (``max_queue_size``) is a 413 before any work.
Its texts and story sentences are encoded through the same queue within those places.
"""

from __future__ import annotations

import asyncio
import functools
import math
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from thoughtvec.service.bundle.format import DecoderSpec
from thoughtvec.service.bundle.vocab import UNK_ID
from thoughtvec.service.core.batcher import Admission
from thoughtvec.service.core.decoding import Decoded, Decoder, Rules
from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.limits import OFFLOAD_CHARS
from thoughtvec.service.core.registry import Model
from thoughtvec.service.errors import InputTooLong, InvalidInput, NotReady, RequestTooLarge

Decoding = Literal["greedy", "beam", "sample"]
Cut = Literal["truncate", "reject"]
Source = str | Sequence[float]
UNIT_TOL = 1e-3  # a vector this close to unit length came from normalize: true
MIN_TEMPERATURE, MAX_TEMPERATURE = 0.01, 100.0  # below: the scaled logits overflow; above: every word alike
MAX_NORM_RATIO = 1000.0  # a vector may be this many times the decoder's typical length (vector_norm)
# A decoding step's cost in places of the model's queue, each about the time of one sentence embedded in a batch
# of 32, by the decoder's kind: (a run of the graph, whatever it carries: the output layer over the whole
# vocabulary; and each sentence or beam it carries). The attention decoder reads every word so far at each step,
# so its rows cost more (docs/generation.md, "What a request holds": measured on the committed bundles).
STEP_PLACES = {"recurrent": (20, 1), "attention": (10, 3)}


@dataclass(frozen=True, slots=True)
class Generated:
    """One decoded sentence: its place in the answer, its words and their summed log-probability;
    ``t``: its point on a path (0 = ``input``, 1 = ``to``); ``sample``: which of ``count`` samples."""

    index: int
    text: str
    words: list[str]
    logprob: float
    t: float | None = None
    sample: int | None = None


@dataclass
class Generation:
    model: str
    task: str
    decoding: str
    view: str  # the view whose vectors the decoder reads
    data: list[Generated]
    seed: int | None = None  # sample: the seed used (send it again for the same words)
    tokens: int = 0  # tokens encoded (the texts given, and each story sentence)
    generated: int = 0  # words generated, <eos> not counted
    truncated: int = 0  # texts given that were cut (truncation: truncate)
    notes: list[str] = field(default_factory=list)  # what was done to the request that the answer alone would not say


@dataclass(frozen=True, slots=True)
class Generator:
    """A served model that can generate: its decoders' tasks, the view they read, the words a sentence may have."""

    id: str
    tasks: list[str]
    view: str
    max_tokens: int
    default: bool


@dataclass(frozen=True, slots=True)
class Generators:
    default: str | None  # what a request naming no model decodes with
    data: list[Generator]


@dataclass
class _Plan:
    decoding: Decoding
    max_tokens: int
    beam_width: int
    temperature: float
    rng: np.random.Generator | None
    seed: int | None
    rules: Rules


def places(kind: str, plan: _Plan, sentences: int, one_at_a_time: bool) -> tuple[int, int, int]:
    """(places, runs, rows): what a request holds in the model's queue while it decodes, by the decoder's ``kind``:
    ``STEP_PLACES`` for each run of its graph and each row the run carries, ``max_tokens`` runs per decode. Greedy
    and sampling decode a request's ``sentences`` together (one decode of that many rows), a story one after the
    other; beam search decodes each sentence alone, ``beam_width`` rows at a time. Counted as if no sentence ended
    early: the most the request can ask."""
    if plan.decoding == "beam":
        decodes, rows = sentences, plan.beam_width
    else:
        decodes, rows = (sentences, 1) if one_at_a_time else (1, sentences)
    per_run, per_row = STEP_PLACES[kind]
    runs = decodes * plan.max_tokens
    return runs * (per_run + per_row * rows), runs, rows


class GenerationService:
    """The decoders of the served models and what they generate."""

    def __init__(self, embedding: EmbeddingService, threads: int | None = None):
        self.embedding = embedding
        self.settings = embedding.settings
        self.threads = threads
        self._decoders: dict[int, Decoder] = {}  # by id(Model): a reloaded bundle gets its own

    def generators(self) -> list[str]:
        """The served models whose bundle carries a decoder."""
        return sorted(n for n, m in self.embedding.registry.models.items() if m.encoder.spec.decoder is not None)

    def default_model(self) -> str | None:
        """The model a request naming none decodes with: the server's default model if it has a decoder, else the
        first with one in the order the default is chosen from (``model_preference``, by default the model guide's
        ``default_models``), else the first by name; ``None`` when no served model has a decoder."""
        can = self.generators()
        registry = self.embedding.registry
        order = [registry.default_model, *(self.settings.model_preference or registry.guide.default_models())]
        return next((n for n in order if n in can), can[0] if can else None)

    def listing(self) -> Generators:
        """Every served model that can generate, and the default one."""
        default = self.default_model()
        data = []
        for name in self.generators():
            spec = self.embedding.registry.models[name].encoder.spec
            assert spec.decoder is not None  # generators() lists only these
            data.append(Generator(name, list(spec.decoder.tasks), str(spec.decoder_view), spec.decoder.max_tokens, name == default))
        return Generators(default, data)

    def model(self, name: str | None) -> tuple[Model, DecoderSpec]:
        """The model a request names (``None``: :meth:`default_model`) and its decoder; 422 naming ``model`` if it has none."""
        if name is None:
            name = self.default_model()
            if name is None and not self.embedding.registry.started:
                raise NotReady("no model that can generate is loaded yet", field="model")
            if name is None:
                raise InvalidInput("no served model has a decoder, so none can generate", field="model")
        m = self.embedding.model(name)
        spec = m.encoder.spec.decoder
        if spec is None:
            can = self.generators()
            have = f"the models that can are {can}" if can else "no served model has one"
            raise InvalidInput(f"model '{m.name}' has no decoder, so it cannot generate; {have}", field="model")
        return m, spec

    async def decoder(self, model: Model, admission: Admission | None = None) -> Decoder:
        """The model's decoder, loaded on first use (on the model's thread, as a run within ``admission``)."""
        key = id(model)
        if key not in self._decoders:
            load = functools.partial(Decoder, model.encoder.bundle, threads=self.threads)
            self._decoders[key] = await model.batcher.run_alone(load, admission=admission)
        return self._decoders[key]

    # -- the request --------------------------------------------------------------------
    async def generate(
        self,
        input: Source,
        *,
        model: str | None = None,
        task: str | None = None,
        to: Source | None = None,
        steps: int | None = None,
        plus: Source | None = None,
        minus: Source | None = None,
        story: int | None = None,
        decoding: Decoding = "greedy",
        beam_width: int = 4,
        temperature: float = 1.0,
        seed: int | None = None,
        count: int = 1,
        max_tokens: int | None = None,
        truncation: Cut = "reject",
        allow_unk: bool = False,
        no_repeat_ngram_size: int = 3,
    ) -> Generation:
        if input is None:
            raise InvalidInput("input is missing: send a text or a vector", field="input")
        m, spec = self.model(model)
        task = self._task(spec, task)
        plan = self._plan(spec, decoding, beam_width, temperature, seed, count, max_tokens, allow_unk, no_repeat_ngram_size)
        n = self._count(task, to, steps, plus, minus, story, count, decoding)
        held = self._places(m, spec, plan, n, story, to)
        if truncation not in ("truncate", "reject"):
            raise InvalidInput(f"truncation is '{truncation}'; choose truncate or reject", field="truncation")
        view = str(m.encoder.spec.decoder_view)
        out = Generation(m.name, task, decoding, view, [], seed=plan.seed)
        named = {k: v for k, v in {"input": input, "to": to, "plus": plus, "minus": minus}.items() if v is not None}
        vecs = {k: self._vector(m, spec, v, k) for k, v in named.items() if not isinstance(v, str)}
        with m.batcher.admit(held, lasting=True) as admission:  # 429 at once when the queue is full; held to the end
            vecs |= await self._encode_texts(m, view, {k: v for k, v in named.items() if isinstance(v, str)}, truncation, out)
            a = vecs["input"]
            if plus is not None:
                a = a + (vecs["plus"] - vecs["minus"])  # the offset between two sentences, added to the first
            dec = await self.decoder(m, admission)
            await self._decode_all(m, dec, task, a, vecs.get("to"), n, bool(story), plan, out, admission)
        out.generated = sum(len(g.words) for g in out.data)
        return out

    async def _decode_all(
        self, m: Model, dec: Decoder, task: str, a: np.ndarray, b: np.ndarray | None, n: int, story: bool, plan: _Plan,
        out: Generation, admission: Admission,
    ) -> None:  # fmt: skip
        """The request's ``n`` sentences into ``out.data``: a path to ``b``, a story, or ``n`` from ``a``."""
        if b is not None:
            ts = np.linspace(0.0, 1.0, n)
            conds = (1 - ts)[:, None] * a[None, :] + ts[:, None] * b[None, :]
            sents = await self._decode(m, dec, task, conds, plan, admission)
            out.data = [Generated(i, d.text, d.words, d.logprob, t=float(t)) for i, (d, t) in enumerate(zip(sents, ts))]
        elif story:
            cond = a
            for i in range(n):
                (d,) = await self._decode(m, dec, task, cond[None, :], plan, admission)
                out.data.append(Generated(i, d.text, d.words, d.logprob))
                if i + 1 < n:
                    cond = await self._encode_words(m, dec, d, out, admission)
        else:
            sents = await self._decode(m, dec, task, np.repeat(a[None, :], n, 0), plan, admission)
            sampled = plan.decoding == "sample"
            out.data = [Generated(i, d.text, d.words, d.logprob, sample=i if sampled else None) for i, d in enumerate(sents)]

    # -- checks -------------------------------------------------------------------------
    @staticmethod
    def _task(spec: DecoderSpec, task: str | None) -> str:
        if task is None:
            return "next" if "next" in spec.tasks else spec.tasks[0]
        if task not in spec.tasks:
            raise InvalidInput(f"task is '{task}'; this model's decoders do {list(spec.tasks)}", field="task")
        return task

    def _plan(
        self, spec: DecoderSpec, decoding: str, width: int, temperature: float, seed: int | None, count: int, max_tokens: int | None,
        allow_unk: bool, no_repeat: int,
    ) -> _Plan:  # fmt: skip
        s = self.settings
        if decoding not in ("greedy", "beam", "sample"):
            raise InvalidInput(f"decoding is '{decoding}'; choose greedy, beam or sample", field="decoding")
        limit = s.max_generate_tokens
        tokens = min(spec.max_tokens, limit) if max_tokens is None else max_tokens
        if not 1 <= tokens <= limit:
            raise InvalidInput(f"max_tokens is {tokens}; it must be from 1 to {limit} (max_generate_tokens)", field="max_tokens")
        if not 1 <= width <= s.max_beam_width:
            raise InvalidInput(f"beam_width is {width}; it must be from 1 to {s.max_beam_width} (max_beam_width)", field="beam_width")
        if not (MIN_TEMPERATURE <= temperature <= MAX_TEMPERATURE) or math.isnan(temperature):
            raise InvalidInput(
                f"temperature is {temperature}; it must be from {MIN_TEMPERATURE:g} to {MAX_TEMPERATURE:g}", field="temperature"
            )
        if seed is not None and not 0 <= seed < 2**63:
            raise InvalidInput(f"seed is {seed}; it must be from 0 to 2^63 - 1", field="seed")
        if count != 1 and decoding != "sample":
            raise InvalidInput(f"count is {count}; greedy and beam decoding give one sentence (decoding: sample for more)", field="count")
        if not 0 <= no_repeat <= limit:
            raise InvalidInput(
                f"no_repeat_ngram_size is {no_repeat}; it must be from 0 (no n-gram blocked) to {limit} (max_generate_tokens)",
                field="no_repeat_ngram_size",
            )
        rng = None
        if decoding == "sample":
            seed = secrets.randbelow(2**31) if seed is None else seed
            rng = np.random.default_rng(seed)
        rules = Rules(allow_unk=allow_unk, no_repeat_ngram_size=no_repeat)
        return _Plan(decoding, tokens, width, temperature, rng, seed if rng is not None else None, rules)  # type: ignore[arg-type]

    def _count(self, task: str, to: Any, steps: int | None, plus: Any, minus: Any, story: int | None, count: int, decoding: str) -> int:
        """How many sentences the request decodes (each of ``count``, ``story``, ``steps`` at most ``max_generate_count``)."""
        limit = self.settings.max_generate_count
        if (plus is None) != (minus is None):
            raise InvalidInput(
                "send both plus and minus: the vector decoded is input + (plus - minus)", field="minus" if minus is None else "plus"
            )
        if steps is not None and to is None:
            raise InvalidInput("steps are the points on the path from input to `to`; send to as well", field="steps")
        if story is not None:
            if task == "reconstruct":
                raise InvalidInput("story chains next (or previous) sentences; a reconstruct decoder has none", field="story")
            if to is not None:
                raise InvalidInput("send either story or to (a path), not both", field="story")
            if not 1 <= story <= limit:
                raise InvalidInput(f"story is {story}; it must be from 1 to {limit} (max_generate_count)", field="story")
        if (story is not None or to is not None) and count != 1:
            raise InvalidInput("count is for samples of one vector; a story or a path decodes one sentence per step", field="count")
        if to is not None:
            steps = 5 if steps is None else steps
            if not 2 <= steps <= limit:
                raise InvalidInput(f"steps is {steps}; it must be from 2 to {limit} (max_generate_count)", field="steps")
            return steps
        if not 1 <= count <= limit:
            raise InvalidInput(f"count is {count}; it must be from 1 to {limit} (max_generate_count)", field="count")
        return story or count

    def _places(self, m: Model, spec: DecoderSpec, plan: _Plan, n: int, story: int | None, to: Any) -> int:
        """The places the request will hold (:func:`places`); a 413 naming the fields when they are more than the
        model's queue has (``max_queue_size``): a request that could never be admitted whole."""
        held, runs, rows = places(spec.kind, plan, n, bool(story))
        limit = m.batcher.limits.max_queue_size
        if held <= limit:
            return held
        many = "story" if story else "steps" if to is not None else "count"
        factors = [(many, n), ("beam_width", plan.beam_width if plan.decoding == "beam" else 1), ("max_tokens", plan.max_tokens)]
        asked = [(f, v) for f, v in factors if v > 1] or factors[-1:]
        per_run, per_row = STEP_PLACES[spec.kind]
        raise RequestTooLarge(
            f"the request asks for {', '.join(f'{f} {v}' for f, v in asked)}: {runs} decoding steps of {rows} row"
            f"{'s' if rows > 1 else ''}, {held} places in the queue of model '{m.name}' ({per_run} a step and {per_row} a"
            f" row); the limit is {limit} (max_queue_size): ask for less {' or '.join(f for f, _ in asked)}",
            field=max(asked, key=lambda f: f[1])[0],
        )

    # -- vectors --------------------------------------------------------------------------
    async def _encode_texts(self, m: Model, view: str, texts: dict[str, str], mode: Cut, out: Generation) -> dict[str, np.ndarray]:
        """The decoder's raw vector of each text, all encoded as one request through the model's queue; a text over
        ``max_input_chars`` or the model's ``max_input_tokens``: a 413 naming it, or (``truncate``) cut and noted."""
        if not texts:
            return {}
        fields, given = list(texts), list(texts.values())
        try:
            checked = self.embedding.texts(given, fields, mode)
        except InputTooLong as e:
            raise InputTooLong(f"{e.message}; send truncation: truncate to decode it cut to the limit", field=e.field) from None
        if checked.chars > OFFLOAD_CHARS:  # counting tokens of long texts stays off the event loop
            counts = await asyncio.get_running_loop().run_in_executor(None, self._token_counts, m, checked.texts)
        else:
            counts = self._token_counts(m, checked.texts)
        limit = m.encoder.max_tokens
        for fld, text, cut, tokens in zip(fields, given, checked.texts, counts):
            said = [f"{len(cut)} characters (max_input_chars)"] if len(cut) < len(text) else []
            if tokens > limit and mode == "reject":
                raise InputTooLong(
                    f"{fld} has {tokens} tokens; the limit is {limit}, the max_input_tokens of model '{m.name}': send"
                    " truncation: truncate to decode its first tokens",
                    field=fld,
                )
            if tokens > limit:
                said.append(f"{limit} tokens (max_input_tokens of model '{m.name}')")
            if said:
                out.notes.append(f"{fld} was cut to {' and '.join(said)} (truncation: truncate)")
                out.truncated += 1
        enc = await self.embedding.encode(m, view, checked, normalize=False, mode="truncate")
        out.tokens += enc.tokens
        return dict(zip(fields, enc.vectors.astype(np.float64)))

    @staticmethod
    def _token_counts(m: Model, texts: list[str]) -> list[int]:
        return [len(m.encoder.token_ids(t)) for t in texts]

    @staticmethod
    def _vector(m: Model, spec: DecoderSpec, v: Any, fld: str) -> np.ndarray:
        if not isinstance(v, (list, tuple)) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            raise InvalidInput(f"{fld} must be a text or a list of numbers", field=fld)
        x = np.asarray(v, np.float64)
        view = str(m.encoder.spec.decoder_view)
        dim = m.encoder.spec.views[view].dim
        if x.shape != (dim,):
            raise InvalidInput(
                f"{fld} has {len(x)} numbers; model '{m.name}' decodes vectors of its view '{view}' ({dim} numbers)", field=fld
            )
        if not np.isfinite(x).all():
            raise InvalidInput(f"{fld} has a value that is not a finite number", field=fld)
        with np.errstate(over="ignore"):  # an overflowing length is inf, refused below
            norm = float(np.linalg.norm(x))
        limit = MAX_NORM_RATIO * spec.vector_norm
        if not norm <= limit:  # far outside what the decoder was trained on: its logits would overflow
            raise InvalidInput(
                f"{fld} has length {norm:.4g}; the limit is {limit:.4g} ({MAX_NORM_RATIO:g} x the typical length)", field=fld
            )
        if abs(norm - 1.0) < UNIT_TOL:  # normalize: true: back to the length the decoder was trained on
            x = x * spec.vector_norm
        return x

    async def _encode_words(self, m: Model, dec: Decoder, d: Decoded, out: Generation, admission: Admission) -> np.ndarray:
        """The vector of a generated sentence, from its words, to decode the next one from: through the queue within
        the request's places; cut to the model's token limit without a note (the words are the decoder's own)."""
        enc = m.encoder
        vocab = enc.vocab
        assert vocab is not None  # a decoder needs a word vocabulary (DecoderSpec)
        ids = [vocab.index.get(w, UNK_ID) for w in d.words] + list(enc.tokenizer.suffix)
        ids = enc.fit(list(enc.tokenizer.prefix) + ids, "truncate")
        emb = await m.batcher.embed_ids([ids], dec.view, admission)
        out.tokens += len(ids)
        return emb.vectors[0].astype(np.float64)

    # -- decoding -------------------------------------------------------------------------
    async def _decode(self, m: Model, dec: Decoder, task: str, conds: np.ndarray, plan: _Plan, admission: Admission) -> list[Decoded]:
        conds = conds.astype(np.float32)
        run = m.batcher.run_alone
        if plan.decoding == "beam":
            return [await run(dec.beam, task, c, plan.beam_width, plan.max_tokens, plan.rules, admission=admission) for c in conds]
        temperature = plan.temperature if plan.decoding == "sample" else 0.0
        return await run(dec.sample, task, conds, plan.max_tokens, temperature, plan.rng, plan.rules, admission=admission)
