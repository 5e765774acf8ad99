"""The embedding service: the served models and their vectors, without HTTP.

Embeddings in OpenAI's input forms and TEI's token ids. Every text any service embeds goes through
:meth:`EmbeddingService.texts` (each text's characters) and :meth:`EmbeddingService.encode` (the request's
characters and tokens in all; admission to the model's queue; long inputs split, truncated or rejected; the
model's batcher); the scoring, catalog, index and generation services embed through them. Every problem is raised
as a domain error (``thoughtvec.service.errors``) that names the field and the limit.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.core.batcher import LOOKAHEAD
from thoughtvec.service.core.limits import (
    FLOAT_JSON_BYTES,
    OFFLOAD_CHARS,
    Texts,
    check_answer,
    check_count,
    check_texts,
    check_tokens,
    check_total,
    room,
)
from thoughtvec.service.core.longinput import pool, prepare
from thoughtvec.service.core.metrics import Metrics
from thoughtvec.service.core.planner import plan_batches
from thoughtvec.service.core.registry import Model, Registry
from thoughtvec.service.core.results import (
    Encoded,
)
from thoughtvec.service.core.token_ids import is_ids, read_input
from thoughtvec.service.errors import InvalidInput, QueueFull
from thoughtvec.service.settings import Settings, Truncation

log = logging.getLogger(__name__)

# The bulk path (documents added to an index) keeps this many sub-requests of LOOKAHEAD batches each in the
# model's queue: the worker always finds the next one waiting, and a request arriving meanwhile waits behind
# at most these few batches, never behind the whole bulk.
BULK_IN_FLIGHT = 2


class EmbeddingService:
    """Every served model (``registry``) and what it computes."""

    def __init__(self, settings: Settings, metrics: Metrics):
        self.settings = settings
        self.metrics = metrics
        self.registry = Registry(settings, metrics)

    async def start(self) -> None:
        """Load, start and warm every bundle."""
        await self.registry.load_all()
        for name in self.registry.models:
            self.metrics.model_loaded(name)

    async def stop(self) -> None:
        await self.registry.stop()

    def model(self, name: str | None, field_name: str = "model") -> Model:
        """The model a request names (``None``: the default), as the registry resolves it."""
        return self.registry.get(name, field_name)

    # -- every text's way in ---------------------------------------------------------------------
    def mode(self, requested: Truncation | None) -> Truncation:
        """The request's truncation mode, else the server's."""
        return requested or self.settings.truncation

    def texts(self, items: Sequence[Any], fields: Sequence[str], mode: Truncation | None = None, setting: str = "max_input_chars") -> Texts:
        """The request's texts within their character limits (``limits.check_texts``): each a string, not blank,
        within ``setting``'s characters (``max_input_chars``; a search query's ``max_query_chars``; cut only under
        truncation=truncate), all of them within ``max_request_chars``."""
        s = self.settings
        return check_texts(items, fields, (mode or s.truncation) == "truncate", getattr(s, setting), setting, s.max_request_chars)

    async def encode(
        self,
        model: Model,
        view: str,
        checked: Texts,
        normalize: bool = True,
        mode: Truncation | None = None,
        reduced: int | None = None,
        bulk: bool = False,
        spent: int = 0,
    ) -> Encoded:
        """Vectors for texts :meth:`texts` checked: admitted to the model's queue (429 when it is full), tokenized,
        held to ``max_request_tokens`` (with the ``spent`` tokens the request embedded before, in another pass),
        queued; long ones split (and pooled), truncated or rejected as ``mode`` says;
        with ``reduced`` (a request's ``dimensions`` as ``Encoder.dimensions`` checked it), projected on the view's
        top principal axes (``Encoder.project``). ``bulk``: through :meth:`embed_parts` (many texts at once, e.g.
        documents added to an index) instead of one request's place in the queue."""
        enc, mode = model.encoder, mode or self.settings.truncation
        texts, fields, chars = checked.texts, checked.fields, checked.chars
        with model.batcher.admit(room(texts, chars, enc.max_tokens)) as admission:  # before tokenizing: a 429 must be cheap
            if chars > OFFLOAD_CHARS:  # tokenizing and splitting long texts stays off the event loop
                prep = await asyncio.get_running_loop().run_in_executor(None, prepare, enc, texts, fields, mode)
            else:
                prep = prepare(enc, texts, fields, mode)
            tokens_in = [fields[i] for i in prep.owner]
            sizes = itertools.chain([spent], map(len, prep.parts))  # what was spent fitted the limit: never the one named
            check_total(sizes, ["", *tokens_in], self.settings.max_request_tokens, "tokens", "max_request_tokens")
            if not bulk:
                # one part a text, kept whole and normalised: the model's thread normalises them beside the run
                unit = normalize and reduced is None and len(prep.parts) == len(texts)
                emb = await model.batcher.embed_ids(prep.parts, view, admission, unit)
        if prep.truncated:  # text was dropped: say so where operators look, not only in the response
            log.info("%s: %d input(s) over %d tokens truncated (truncation=truncate)", model.name, prep.truncated, enc.max_tokens)
        if prep.split:
            log.debug("%s: %d input(s) over %d tokens split into sentences and pooled", model.name, prep.split, enc.max_tokens)
        if bulk:  # the places held while tokenizing are given back: the parts queue a few batches at a time
            raw, tokens = await self.embed_parts(model, view, prep.parts), sum(map(len, prep.parts))
        else:
            raw, tokens = emb.vectors, sum(emb.tokens)
        self.metrics.embedded(model.name, len(texts), len(prep.parts), tokens, prep.split, prep.truncated)
        if not bulk and emb.unit is not None:  # asked for above
            return Encoded(model.name, view, emb.unit, tokens, prep.split, prep.truncated)
        vecs = enc.project(pool(raw, prep, len(texts)), view, reduced)
        return Encoded(model.name, view, l2_normalize(vecs) if normalize else vecs, tokens, prep.split, prep.truncated)

    async def embed_bulk(self, model: Model, view: str, texts: list[str]) -> np.ndarray:
        """Raw vectors for many texts (long ones split and pooled) through :meth:`embed_parts`."""
        fields = [f"documents[{i}]" for i in range(len(texts))]
        prep = await asyncio.get_running_loop().run_in_executor(None, prepare, model.encoder, texts, fields, "split")
        return pool(await self.embed_parts(model, view, prep.parts), prep, len(texts))

    async def embed_parts(self, model: Model, view: str, parts: list[list[int]]) -> np.ndarray:
        """Raw vectors (one row per part, in order) for many token-id parts, through the model's batcher (its one
        ONNX thread, its metrics) without taking its queue.

        The parts are planned once, by length, and sent as sub-requests of ``LOOKAHEAD`` batches of like lengths,
        ``BULK_IN_FLIGHT`` of them queued at a time: the worker is never idle between two, and requests arriving
        meanwhile wait behind a few batches, never behind the whole bulk. A full queue (429 for a request) only
        makes the bulk wait its turn. A part's vector does not depend on its batch, so the order is invisible.
        """
        lim = model.batcher.limits
        order = [i for batch in plan_batches([len(p) for p in parts], lim.max_batch_size, lim.max_batch_tokens) for i in batch]
        out = np.empty((len(parts), model.encoder.dim(view)), np.float32)  # (parts, dim)
        step = lim.max_batch_size * LOOKAHEAD

        async def run(idx: list[int]) -> None:
            while True:
                try:
                    out[idx] = (await model.batcher.embed_ids([parts[i] for i in idx], view)).vectors
                    return
                except QueueFull as e:
                    await asyncio.sleep(e.retry_after_s)

        queued: deque[asyncio.Task] = deque()
        try:
            for start in range(0, len(order), step):
                queued.append(asyncio.ensure_future(run(order[start : start + step])))
                if len(queued) >= BULK_IN_FLIGHT:
                    await queued.popleft()  # the batcher is first in, first out: the oldest finishes first
            while queued:
                await queued.popleft()
        finally:  # an error or the caller gone: the rest is not run for nobody
            for task in queued:
                task.cancel()
            await asyncio.gather(*queued, return_exceptions=True)
        return out

    # -- embeddings ----------------------------------------------------------------------
    async def embeddings(
        self,
        raw_input: Any,
        model_name: str | None,
        view: str | None,
        normalize: bool,
        dimensions: int | None = None,
        truncation: Truncation | None = None,
        field: str = "input",
        token_ids: bool = True,
    ) -> Encoded:
        """OpenAI's input forms: a string, a list of strings, a list of token ids, a list of lists of token ids;
        without ``token_ids``, TEI's: a string or a list of strings (``field`` names them in errors)."""
        # the request, checked once, in this order: the model, its view, the input's form, how many, the dimensions,
        # the answer's size, then its texts (each, and all together); then the way in: admission, tokens, the queue
        model = self.registry.get(model_name)
        view = model.encoder.view(view)
        items, fields = read_input(raw_input, field, token_ids)
        check_count(len(items), self.settings.max_inputs, field)
        reduced = model.encoder.dimensions(view, dimensions)
        dim = reduced or model.encoder.dim(view)
        check_answer(len(items) * dim * FLOAT_JSON_BYTES, self.settings.max_response_bytes, field, f"{len(items)} vectors of {dim} values")
        return await self.encode(model, view, self.texts(items, fields, truncation), normalize, truncation, reduced)

    async def embed_token_ids(
        self,
        raw_input: Any,
        model_name: str | None,
        normalize: bool,
        dimensions: int | None = None,
        truncation: Truncation | None = None,
        field: str = "inputs",
    ) -> Encoded:
        """TEI's token-id inputs: a list of the model's own ids (as TEI's /tokenize gives them, specials included), or a
        list of such lists, embedded as they are. A list over the token limit is cut with ``truncation=truncate``,
        else a 413 (ids have no sentences to split at)."""
        model = self.model(model_name)
        enc, view = model.encoder, model.encoder.view(None)
        lists, fields = ([raw_input], [field]) if is_ids(raw_input) else (raw_input, [f"{field}[{i}]" for i in range(len(raw_input))])
        check_count(len(lists), self.settings.max_inputs, field)
        reduced = enc.dimensions(view, dimensions)  # a 422 before any work
        dim = reduced or enc.dim(view)
        check_answer(len(lists) * dim * FLOAT_JSON_BYTES, self.settings.max_response_bytes, field, f"{len(lists)} vectors of {dim} values")
        cut = self.mode(truncation) == "truncate"
        parts = []
        for ids, fld in zip(lists, fields):
            if not is_ids(ids):
                raise InvalidInput(f"{fld} must be a list of token ids, as every input is here", field=fld)
            ids = [int(i) for i in ids]
            j = next((j for j, i in enumerate(ids) if not 0 <= i < enc.vocab_size), None)
            if j is not None:
                raise InvalidInput(
                    f"{fld}[{j}] is {ids[j]}; model '{model.name}' has token ids 0..{enc.vocab_size - 1}", field=f"{fld}[{j}]"
                )
            parts.append(enc.fit(ids, "truncate" if cut else "reject", field=fld))
        truncated = sum(len(p) < len(ids) for p, ids in zip(parts, lists))
        check_tokens(map(len, parts), fields, self.settings.max_request_tokens)
        with model.batcher.admit(len(parts)) as admission:  # the same queue and 429 as every compute route
            emb = await model.batcher.embed_ids(parts, view, admission)
        vecs, tokens = enc.project(emb.vectors, view, reduced), sum(emb.tokens)
        self.metrics.embedded(model.name, len(parts), len(parts), tokens, 0, truncated)
        return Encoded(model.name, view, l2_normalize(vecs) if normalize else vecs, tokens, 0, truncated)
