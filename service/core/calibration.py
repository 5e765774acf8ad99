"""The fixed ranges that int8 and uint8 codes are cut on (``core/compact.py``), per model and view, and a request's
vectors compacted on them.

The ranges never come from a request (its codes would then depend on what was sent beside it): they come from a
fixed calibration set, :data:`CALIBRATION_SENTENCES` sentences evenly spaced through the search sample packaged
with the service (``index/data/search_sample.tsv.gz``, so every source in it is there), embedded as any text is
(the model's batcher; a long one split and pooled) the first time a model and view are asked for int8 or uint8,
and kept while the model is served. A request's ranges are those vectors made as its own are: projected on the
view's principal axes for ``dimensions``, normalised unless ``normalize`` is false; then each dimension's minimum
to its maximum. So a text's codes are the same alone or in any batch, in any request, and after a restart.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.core.compact import SCALAR, Precision, Ranges, quantize
from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.limits import FLOAT_JSON_BYTES, check_answer
from thoughtvec.service.core.registry import Model
from thoughtvec.service.core.results import Encoded
from thoughtvec.service.index.build import read_documents
from thoughtvec.service.settings import PACKAGE_DATA

CALIBRATION_SENTENCES = 256
SAMPLE = PACKAGE_DATA / "search_sample.tsv.gz"
RANGES_KEPT = 64  # ranges kept per model (views x dimensions x normalize); the oldest goes first

# Upper bounds of one value's JSON in an answer, per precision (a bit precision's byte holds 8 values): "-128,"
CODE_JSON_BYTES: dict[Precision, float] = {"float": FLOAT_JSON_BYTES, "int8": 5, "uint8": 4, "binary": 5 / 8, "ubinary": 4 / 8}

# Each served model's calibration vectors per view (raw: pooled, not projected, not normalised), being embedded or
# done, and the ranges made from them per (view, dimensions, normalize); both go with the model.
_VECTORS: weakref.WeakKeyDictionary[Model, dict[str, asyncio.Future[np.ndarray]]] = weakref.WeakKeyDictionary()
_RANGES: weakref.WeakKeyDictionary[Model, dict[tuple[str, int | None, bool], Ranges]] = weakref.WeakKeyDictionary()


@functools.cache
def calibration_texts(path: Path = SAMPLE, n: int = CALIBRATION_SENTENCES) -> tuple[str, ...]:
    """``n`` texts evenly spaced through the sample at ``path`` (its first of every ``len // n``)."""
    docs = read_documents(path)
    return tuple(d.text for d in docs[:: max(1, len(docs) // n)][:n])


async def calibration_vectors(embedding: EmbeddingService, model: Model, view: str) -> np.ndarray:
    """The raw vectors ``(CALIBRATION_SENTENCES, dim)`` of the calibration texts in ``view``: embedded once, by the
    first request that needs them; a request that arrives meanwhile waits for the same work, and a request that
    leaves does not stop it. A failed embedding is not kept: the next request tries again."""
    views = _VECTORS.setdefault(model, {})
    work = views.get(view)
    if work is None:
        work = views[view] = asyncio.ensure_future(_embed(embedding, model, view))

        def forget(done: asyncio.Future[np.ndarray]) -> None:
            if (done.cancelled() or done.exception() is not None) and views.get(view) is done:
                del views[view]

        work.add_done_callback(forget)
    return await asyncio.shield(work)


async def _embed(embedding: EmbeddingService, model: Model, view: str) -> np.ndarray:
    texts = await asyncio.get_running_loop().run_in_executor(None, calibration_texts)  # read once a process, off the loop
    return await embedding.embed_bulk(model, view, list(texts))


async def ranges(embedding: EmbeddingService, model: Model, view: str, reduced: int | None, normalize: bool) -> Ranges:
    """The int8/uint8 ranges of ``model``'s ``view`` with ``reduced`` dimensions (as ``Encoder.dimensions`` returns
    them), its vectors normalised or not."""
    kept = _RANGES.setdefault(model, {})
    key = (view, reduced, normalize)
    if key not in kept:
        x = model.encoder.project(await calibration_vectors(embedding, model, view), view, reduced)  # (n, reduced or dim)
        made = Ranges.of(l2_normalize(x) if normalize else x)
        if key not in kept and len(kept) >= RANGES_KEPT:  # another request may have made them meanwhile
            del kept[next(iter(kept))]
        kept[key] = made
    return kept[key]


async def compact(
    embedding: EmbeddingService,
    enc: Encoded,
    precisions: Sequence[Precision],
    dimensions: int | None,
    normalize: bool,
    field: str = "input",
) -> dict[Precision, np.ndarray]:
    """``enc``'s vectors (a request's, made with ``dimensions`` and ``normalize``) as the codes of each precision
    (``float``: the vectors), its answer held to ``max_response_bytes`` (every precision asked for, written as JSON)."""
    n, dim = enc.vectors.shape
    per_value = sum(CODE_JSON_BYTES[p] for p in precisions)
    what = f"{n} vectors of {dim} values as {', '.join(precisions)}"
    check_answer(int(n * dim * per_value), embedding.settings.max_response_bytes, field, what)
    scale = None
    if SCALAR.intersection(precisions):
        model = embedding.model(enc.model)
        reduced = model.encoder.dimensions(enc.view, dimensions)
        scale = await ranges(embedding, model, enc.view, reduced, normalize)
    return {p: quantize(enc.vectors, p, scale) for p in precisions}
