"""What is served, and how a model reads a text, without HTTP: the models and their aliases (``/v1/models``), one
model's description with its training record, the server's limits and devices (``/info``), and a text's tokens
(``/tokenize``, bounded and admitted as an embedding is)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

from thoughtvec.service import __version__
from thoughtvec.service.bundle.format import BundleSpec
from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.limits import OFFLOAD_CHARS, TOKEN_JSON_BYTES, check_answer, check_count, check_tokens, room
from thoughtvec.service.core.registry import Model
from thoughtvec.service.core.results import Info, ModelDescription, ModelInfo, ModelList, Token, Tokenization, Tokenized
from thoughtvec.service.core.token_ids import read_input

# The settings /info lists as the server's limits.
LIMITS = (
    "truncation",
    "max_inputs",
    "max_input_chars",
    "max_request_chars",
    "max_request_tokens",
    "max_query_chars",
    "max_response_bytes",
    "max_k",
    "max_body_bytes",
    "max_batch_size",
    "max_batch_tokens",
    "max_queue_size",
)


def tei_pooling(spec: BundleSpec) -> str:
    """TEI's name (``cls``, ``mean``, ``splade``, ``last_token``) for how the default view pools a text, as TEI's
    clients read it in ``/info``: a recurrent encoder's last state (skip-thought's views) is ``last_token``; the
    others are means (of the encoder's states, of word vectors, SIF-weighted), the nearest of TEI's names."""
    return "last_token" if spec.views[spec.default_view].pooling == "last-state" else "mean"


class Catalog:
    """The served models as a client sees them (the embedding service's registry)."""

    def __init__(self, embedding: EmbeddingService, devices: Callable[[], dict]):
        self.embedding = embedding
        self.settings = embedding.settings
        self.devices = devices  # what runs where (``Core.devices``)

    def models(self) -> ModelList:
        """Every served model (without its training record), then each alias as the model it names now."""
        reg = self.embedding.registry
        default = reg.default_model
        models = [m.describe(n == default, reg.guide, provenance=False) for n, m in sorted(reg.models.items())]
        aliases = [
            dataclasses.replace(reg.models[t].describe(False, reg.guide, provenance=False), id=a, alias_of=t)
            for a, t in sorted(reg.aliases().items())
        ]
        return ModelList(models, aliases, self.devices())

    def describe(self, name: str) -> ModelDescription:
        """Model ``name`` (a bundle or an alias: 404 if neither) with its training record."""
        model = self.embedding.model(name)
        described = model.describe(model.name == self.embedding.registry.default_model, self.embedding.registry.guide)
        return described if model.name == name else dataclasses.replace(described, id=name, alias_of=model.name)

    def info(self) -> Info:
        """Models, aliases, limits, version and devices in one answer (TEI's and infinity's /info)."""
        reg, s = self.embedding.registry, self.settings
        models = [
            ModelInfo(
                n,
                m.encoder.dim(),
                {v: m.encoder.dim(v) for v in m.encoder.spec.views},
                m.encoder.max_tokens,
                m.encoder.spec.family,
                tei_pooling(m.encoder.spec),
                n == reg.default_model,
                **reg.guide.entry(n, m.encoder.fingerprint()),
            )
            for n, m in sorted(reg.models.items())
        ]
        limits = {k: getattr(s, k) for k in LIMITS}
        return Info("thoughtvec", __version__, reg.default_model, models, reg.aliases(), s.default_index, limits, self.devices())

    async def tokenize(
        self, raw_input: Any, model_name: str | None, field: str = "input", token_ids: bool = True, specials: bool = True
    ) -> Tokenization:
        """Each text's tokens as the model sees them, with their ids and which are out of the vocabulary
        (the input forms of :meth:`embeddings`); without ``specials``, the tokens framing each text are left out
        (the limit still counts them). Bounded and admitted as :meth:`encode` is: the request's characters
        before tokenizing, its tokens and the answer's size before the answer is built, the model's queue."""
        model = self.embedding.model(model_name)
        items, fields = read_input(raw_input, field, token_ids)
        check_count(len(items), self.settings.max_inputs, field)
        checked = self.embedding.texts(items, fields, "truncate")
        texts, chars = checked.texts, checked.chars
        with model.batcher.admit(room(texts, chars, model.encoder.max_tokens)):
            if chars > OFFLOAD_CHARS:  # tokenizing long texts stays off the event loop
                data = await asyncio.get_running_loop().run_in_executor(None, self._tokenized, model, texts, fields, specials, field)
            else:
                data = self._tokenized(model, texts, fields, specials, field)
        return Tokenization(model.name, model.encoder.spec.max_input_tokens, data)

    def _tokenized(self, model: Model, texts: list[str], fields: list[str], specials: bool, field: str) -> list[Tokenized]:
        tokenizer, limit = model.encoder.tokenizer, model.encoder.spec.max_input_tokens
        pieces: list[list[Any]] = []

        def counts():  # texts are tokenized one by one, up to the first that takes the request over the limit
            for text in texts:
                pieces.append(tokenizer.pieces(text))
                yield len(pieces[-1])

        tokens = check_tokens(counts(), fields, self.settings.max_request_tokens)
        size = tokens * TOKEN_JSON_BYTES + 2 * sum(len(p.text) for ps in pieces for p in ps) + sum(map(len, texts))
        check_answer(size, self.settings.max_response_bytes, field, f"{tokens} tokens")
        data = []
        for i, (text, ps) in enumerate(zip(texts, pieces)):
            toks = [Token(p.text, p.id, p.oov, p.special, p.start, p.stop) for p in ps if specials or not p.special]
            data.append(Tokenized(i, toks, [t.text for t in toks if t.oov], len(ps) > limit, text))
        return data
