"""The generation service: vectors back into sentences with the decoders a bundle was trained with, without HTTP.

What a user can ask (``GenerationService.generate``):

* ``task``: ``next`` / ``previous`` sentence (skip-thought's decoders), ``reconstruct`` (the AAE's);
* the vector to decode: from a text (encoded by the model, through its queue) or a vector the API returned
  for the decoder's view (a unit vector, the API's ``normalize: true``, is rescaled to the typical norm
  recorded at export);
* a path: ``to`` another text or vector, decoded at ``steps`` evenly spaced points ``(1 - t) a + t b``;
* arithmetic: ``plus`` and ``minus``: the vector ``a + (plus - minus)`` decoded;
* a story (skip-thought §3.6): ``story`` sentences, each decoded from the vector of the one before;
* decoding: ``greedy``, ``beam`` (``beam_width``) or ``sample`` (``temperature``, ``seed``, ``count`` samples).

Work is bounded by the settings ``max_generate_tokens``, ``max_beam_width`` and ``max_generate_count`` (422
naming the field and the limit). Texts are encoded through the model's batcher like every embedding; the
decoding steps run on one of the model's ONNX threads as one of its runs (``Batcher.run_alone``), admitted as
any request is (429 when its queue is full).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from thoughtvec.service.bundle.vocab import UNK_ID
from thoughtvec.service.core.decoding import Decoded, Decoder
from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.registry import Model
from thoughtvec.service.errors import InvalidInput

Decoding = Literal["greedy", "beam", "sample"]
Source = str | Sequence[float]
UNIT_TOL = 1e-3  # a vector this close to unit length came from normalize: true
MIN_TEMPERATURE, MAX_TEMPERATURE = 0.01, 100.0  # below: the scaled logits overflow; above: every word alike
MAX_NORM_RATIO = 1000.0  # a vector may be this many times the decoder's typical length (vector_norm)


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
    truncated: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass
class _Plan:
    decoding: Decoding
    max_tokens: int
    beam_width: int
    temperature: float
    rng: np.random.Generator | None
    seed: int | None


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

    async def decoder(self, model: Model) -> Decoder:
        """The model's decoder, loaded on first use (on the model's thread); 422 naming ``model`` if it has none."""
        if model.encoder.spec.decoder is None:
            can = self.generators()
            have = f"the models that can are {can}" if can else "no served model has one"
            raise InvalidInput(f"model '{model.name}' has no decoder, so it cannot generate; {have}", field="model")
        key = id(model)
        if key not in self._decoders:
            self._decoders[key] = await model.batcher.run_alone(lambda: Decoder(model.encoder.bundle, threads=self.threads))
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
    ) -> Generation:
        if input is None:
            raise InvalidInput("input is missing: send a text or a vector", field="input")
        m = self.embedding.model(model)
        dec = await self.decoder(m)
        task = self._task(dec, task)
        plan = self._plan(dec, decoding, beam_width, temperature, seed, count, max_tokens)
        n = self._count(task, to, steps, plus, minus, story, count, decoding)
        out = Generation(m.name, task, decoding, dec.view, [], seed=plan.seed)
        named = {"input": input, "to": to, "plus": plus, "minus": minus}
        vecs = await self._vectors(m, dec, {k: v for k, v in named.items() if v is not None}, out)
        a = vecs["input"]
        if plus is not None:
            a = a + (vecs["plus"] - vecs["minus"])  # the offset between two sentences, added to the first
        if to is not None:
            ts = np.linspace(0.0, 1.0, n)
            conds = (1 - ts)[:, None] * a[None, :] + ts[:, None] * vecs["to"][None, :]
            sents = await self._decode(m, dec, task, conds, plan)
            out.data = [Generated(i, d.text, d.words, d.logprob, t=float(t)) for i, (d, t) in enumerate(zip(sents, ts))]
        elif story:
            cond = a
            for i in range(n):
                (d,) = await self._decode(m, dec, task, cond[None, :], plan)
                out.data.append(Generated(i, d.text, d.words, d.logprob))
                if i + 1 < n:
                    cond = await self._encode_words(m, dec, d, out)
        else:
            sents = await self._decode(m, dec, task, np.repeat(a[None, :], n, 0), plan)
            out.data = [Generated(i, d.text, d.words, d.logprob, sample=i if decoding == "sample" else None) for i, d in enumerate(sents)]
        out.generated = sum(len(g.words) for g in out.data)
        return out

    # -- checks -------------------------------------------------------------------------
    @staticmethod
    def _task(dec: Decoder, task: str | None) -> str:
        if task is None:
            return "next" if "next" in dec.tasks else dec.tasks[0]
        if task not in dec.tasks:
            raise InvalidInput(f"task is '{task}'; this model's decoders do {list(dec.tasks)}", field="task")
        return task

    def _plan(
        self, dec: Decoder, decoding: str, width: int, temperature: float, seed: int | None, count: int, max_tokens: int | None
    ) -> _Plan:
        s = self.settings
        if decoding not in ("greedy", "beam", "sample"):
            raise InvalidInput(f"decoding is '{decoding}'; choose greedy, beam or sample", field="decoding")
        limit = s.max_generate_tokens
        tokens = min(dec.spec.max_tokens, limit) if max_tokens is None else max_tokens
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
        rng = None
        if decoding == "sample":
            seed = secrets.randbelow(2**31) if seed is None else seed
            rng = np.random.default_rng(seed)
        return _Plan(decoding, tokens, width, temperature, rng, seed if rng is not None else None)  # type: ignore[arg-type]

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

    # -- vectors --------------------------------------------------------------------------
    async def _vectors(self, m: Model, dec: Decoder, sources: dict[str, Source], out: Generation) -> dict[str, np.ndarray]:
        """Each source as the decoder's raw vector: texts encoded together (one request through the queue), vectors checked."""
        texts = {k: v for k, v in sources.items() if isinstance(v, str)}
        vecs = {k: self._vector(dec, v, k, m.name) for k, v in sources.items() if not isinstance(v, str)}
        if texts:
            checked = self.embedding.texts(list(texts.values()), list(texts), "truncate")
            enc = await self.embedding.encode(m, dec.view, checked, list(texts), normalize=False, mode="truncate")
            out.tokens += enc.tokens
            out.truncated += enc.truncated
            vecs |= dict(zip(texts, enc.vectors.astype(np.float64)))
        return vecs

    @staticmethod
    def _vector(dec: Decoder, v: Any, fld: str, model: str) -> np.ndarray:
        if not isinstance(v, (list, tuple)) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            raise InvalidInput(f"{fld} must be a text or a list of numbers", field=fld)
        x = np.asarray(v, np.float64)
        if x.shape != (dec.dim,):
            raise InvalidInput(
                f"{fld} has {len(x)} numbers; model '{model}' decodes vectors of its view '{dec.view}' ({dec.dim} numbers)", field=fld
            )
        if not np.isfinite(x).all():
            raise InvalidInput(f"{fld} has a value that is not a finite number", field=fld)
        with np.errstate(over="ignore"):  # an overflowing length is inf, refused below
            norm = float(np.linalg.norm(x))
        limit = MAX_NORM_RATIO * dec.spec.vector_norm
        if not norm <= limit:  # far outside what the decoder was trained on: its logits would overflow
            raise InvalidInput(
                f"{fld} has length {norm:.4g}; the limit is {limit:.4g} ({MAX_NORM_RATIO:g} x the typical length)", field=fld
            )
        if abs(norm - 1.0) < UNIT_TOL:  # normalize: true: back to the length the decoder was trained on
            x = x * dec.spec.vector_norm
        return x

    async def _encode_words(self, m: Model, dec: Decoder, d: Decoded, out: Generation) -> np.ndarray:
        """The vector of a generated sentence, from its words (through the queue), to decode the next one from."""
        enc = m.encoder
        vocab = enc.vocab
        assert vocab is not None  # a decoder needs a word vocabulary (DecoderSpec)
        ids = [vocab.index.get(w, UNK_ID) for w in d.words] + list(enc.tokenizer.suffix)
        ids = enc.fit(list(enc.tokenizer.prefix) + ids, "truncate")
        emb = await m.batcher.embed_ids([ids], dec.view)
        out.tokens += len(ids)
        return emb.vectors[0].astype(np.float64)

    # -- decoding -------------------------------------------------------------------------
    async def _decode(self, m: Model, dec: Decoder, task: str, conds: np.ndarray, plan: _Plan) -> list[Decoded]:
        conds = conds.astype(np.float32)
        if plan.decoding == "beam":
            return [await m.batcher.run_alone(dec.beam, task, c, plan.beam_width, plan.max_tokens) for c in conds]
        temperature = plan.temperature if plan.decoding == "sample" else 0.0
        return await m.batcher.run_alone(dec.sample, task, conds, plan.max_tokens, temperature, plan.rng)
