"""One bundle served in this process by the serving core itself: :func:`load` and :class:`Embedder`.

There is no second encoding path. An :class:`Embedder` hosts a :class:`~thoughtvec.service.core.engine.Core` on
a private event loop (:class:`~thoughtvec.service.api.engine_thread.EngineThread`) and calls the same service
methods a route calls: every text goes through ``EmbeddingService.texts`` and ``EmbeddingService.encode`` (the
character limits, admission, the batcher and its ONNX runs, long inputs split and pooled, ``dimensions``,
normalisation), compact vectors through ``core.calibration.compact``, rerank through ``ScoringService`` and
generation through ``GenerationService``. A request's limits (``max_inputs``, ``max_request_chars``...) apply to
each batch of ``batch_size`` texts the API sends; a text's limits, to each text.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast, get_args

import numpy as np
from tqdm import tqdm

from thoughtvec.service.api.engine_thread import EngineThread
from thoughtvec.service.bundle.format import BUNDLE_FILE, discover_bundles
from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.core.calibration import compact
from thoughtvec.service.core.compact import BITS, PRECISIONS, Precision
from thoughtvec.service.core.engine import Core
from thoughtvec.service.core.generation import Cut, Decoding, Generation, Source
from thoughtvec.service.core.indexing import IndexServices
from thoughtvec.service.core.limits import Texts
from thoughtvec.service.core.registry import Model
from thoughtvec.service.core.results import ModelDescription, Ranked
from thoughtvec.service.errors import BundleError, InvalidInput, QueueFull, UnknownModel
from thoughtvec.service.settings import RerankMode, Settings, Truncation, load_settings

T = TypeVar("T")

ENCODE_BATCH = 256  # texts a call hands the core at a time (its batcher cuts its own ONNX runs: max_batch_size)
IN_FLIGHT_TEXTS = 1024  # texts queued at once, so the batcher always has its next window waiting (4 x 256)
PROGRESS_FROM = 4096  # show_progress_bar=None: a bar from this many texts on (seconds of work on two cores)
QUEUE_RETRY_S = 0.01  # the model's queue full (other threads' calls): this API waits its turn where a client gets a 429
MODELS_VARIABLE = "THOUGHTVEC_MODELS_DIR"
TRUNCATIONS: tuple[str, ...] = get_args(Truncation)


def load(model: str | os.PathLike[str], *, models_dir: str | os.PathLike[str] | None = None, **settings: Any) -> Embedder:
    """The bundle ``model``, loaded, warmed and ready to encode: a bundle's name in the models folder, or the path of
    a bundle's folder (one holding ``bundle.json``).

    ``models_dir``: where names are looked up; default the ``models_dir`` setting (``THOUGHTVEC_MODELS_DIR``, else
    ``models`` under the current folder). ``settings``: any server setting (``docs/serving.md``), e.g.
    ``ort_threads=4``, ``max_batch_size=64``, ``truncation="truncate"``; ``THOUGHTVEC_*`` variables apply as they do to
    ``thoughtvec serve``, and a misspelt one is an error."""
    overrides: dict[str, Any] = {"build_default_index": False} | settings
    if models_dir is not None:
        overrides["models_dir"] = Path(models_dir)
    base = load_settings(**overrides)
    path = find_bundle(model, base.models_dir)
    # the model guide read is the one beside the bundle: it applies where it measured this very export
    return Embedder(path, base.model_copy(update={"models_dir": path.parent}))


def find_bundle(model: str | os.PathLike[str], models_dir: Path) -> Path:
    """The folder of bundle ``model``: a path to a folder with ``bundle.json``, or a name in ``models_dir``."""
    if not isinstance(model, (str, os.PathLike)):
        raise InvalidInput(f"model must be a bundle's name or folder, got {type(model).__name__}", field="model")
    given = Path(model).expanduser()
    looks_like_path = isinstance(model, os.PathLike) or os.sep in str(model) or "/" in str(model) or str(model).startswith(".")
    if looks_like_path or (given / BUNDLE_FILE).is_file():
        if not (given / BUNDLE_FILE).is_file():
            raise UnknownModel(f"model: {given} is not a bundle's folder (it has no {BUNDLE_FILE})", field="model")
        return given.resolve()
    path = models_dir / str(model)
    if not (path / BUNDLE_FILE).is_file():
        names = [p.name for p in discover_bundles(models_dir)]
        raise UnknownModel(
            f"no bundle '{model}' in {models_dir} (the models_dir setting, or {MODELS_VARIABLE}); the bundles there are {names}",
            field="model",
        )
    return path.resolve()


class Embedder:
    """A bundle served in this process: vectors, similarity, rerank, generation and indexes, as the server makes
    them. Made by :func:`load`; a context manager (``with load(...) as m:``), closed by :meth:`close` or at exit.
    Safe to call from many threads at once: their texts meet in the same batches, as a server's requests do."""

    def __init__(self, path: Path, settings: Settings):
        self.path = path
        self._engine = EngineThread(f"thoughtvec-{path.name}")
        self._folders: dict[Path, IndexServices] = {}  # index folder -> its index services, opened on first use
        self._opening = threading.Lock()  # two threads opening one folder at once open it once
        try:
            self._core = self._engine.call(_start(path, settings))
        except BaseException:
            self._engine.stop()
            raise
        (self._model,) = self._core.embedding.registry.models.values()  # the one bundle served, whatever default_model says
        # closed by close(), when the object is collected, or at exit: its index logs folded into their snapshots
        self._closer = weakref.finalize(self, _shutdown, self._engine, self._core, self._folders)

    # -- what it is --------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._model.name

    @property
    def settings(self) -> Settings:
        return self._core.settings

    @property
    def default_view(self) -> str:
        return self._model.encoder.spec.default_view

    @property
    def views(self) -> dict[str, int]:
        """Each view's name and dimension."""
        return {name: v.dim for name, v in self._model.encoder.spec.views.items()}

    @property
    def dimension(self) -> int:
        """The default view's dimension."""
        return self._model.encoder.dim(None)

    @property
    def max_input_tokens(self) -> int:
        """Tokens the model reads of one text; a longer one is split, truncated or refused (``truncation``)."""
        return self._model.encoder.max_tokens

    def describe(self) -> ModelDescription:
        """The model as ``GET /v1/models/{name}`` describes it: views, what dev chose it for, its training record."""
        return self._on_loop(self._core.catalog.describe, self.name)

    def __repr__(self) -> str:
        return f"Embedder({self.name!r}, dimension={self.dimension}, views={list(self.views)})"

    # -- vectors ---------------------------------------------------------------------------------
    def encode(
        self,
        texts: str | Iterable[str],
        *,
        view: str | None = None,
        dimensions: int | None = None,
        normalize: bool = True,
        batch_size: int = ENCODE_BATCH,
        show_progress_bar: bool | None = None,
        embedding_type: Precision = "float",
        truncation: Truncation | None = None,
    ) -> np.ndarray:
        """Vectors of ``texts``: ``(len(texts), dim)``, or ``(dim,)`` for one string.

        ``view``: one of :attr:`views` (default the bundle's); ``dimensions``: fewer, on the view's principal axes;
        ``normalize``: unit length (cosine = dot product); ``embedding_type``: ``float`` (float32), or compact codes
        (``int8``, ``uint8``: a byte a dimension; ``binary``, ``ubinary``: a bit a dimension, packed 8 to a byte) cut on
        the model's fixed ranges, so a text's codes never depend on its batch; ``truncation``: a text over
        :attr:`max_input_tokens` is ``split`` into sentences and pooled, ``truncate``\\ d or refused (``reject``);
        default the ``truncation`` setting (``split``). ``batch_size``: texts handed to the engine at a time (it cuts
        its own ONNX runs, ``max_batch_size``); ``show_progress_bar``: default on from 4 096 texts."""
        single = isinstance(texts, str)
        items = [texts] if single else _as_list(texts, "texts")
        fields = ["texts"] if single else [f"texts[{i}]" for i in range(len(items))]
        out = self._vectors(items, fields, view, dimensions, normalize, batch_size, show_progress_bar, embedding_type, truncation)
        return out[0] if single else out

    def similarity(
        self, a: str | Iterable[str] | np.ndarray, b: str | Iterable[str] | np.ndarray, *, view: str | None = None
    ) -> np.ndarray | float:
        """Cosine similarity of each of ``a`` with each of ``b``: ``(len(a), len(b))``; a float where each is one text
        or one vector. Texts are encoded in ``view``; vectors (from :meth:`encode`) are taken as they are."""
        x, one_a = self._unit_rows(a, "a", view)
        y, one_b = self._unit_rows(b, "b", view)
        if x.shape[1] != y.shape[1]:
            raise InvalidInput(f"a has {x.shape[1]} dimensions and b has {y.shape[1]}; compare vectors of one view", field="b")
        scores = np.clip(x @ y.T, -1.0, 1.0)  # (len(a), len(b)); rounding can step past 1
        return float(scores[0, 0]) if one_a and one_b else scores

    def rerank(
        self,
        query: str,
        documents: Sequence[str],
        *,
        top_n: int | None = None,
        view: str | None = None,
        truncation: Truncation | None = None,
        mode: RerankMode | None = None,
    ) -> list[Ranked]:
        """``documents`` ranked against ``query``, best first (``top_n`` of them), as ``POST /v1/rerank`` ranks them
        (``mode`` ``hybrid`` by default: the cosine, the best sentence's where the model guide weighs it, and BM25
        fused; ``dense``: the cosine alone): each
        :class:`~thoughtvec.service.core.results.Ranked` has the document's ``index``, ``score`` (relevance on [0, 1]),
        ``raw`` (the mode's own score) and text."""
        docs = _as_list(documents, "documents")
        if not docs:
            return []
        scoring = self._core.scoring
        return self._run(
            lambda: scoring.rerank(
                query=query,
                documents=docs,
                top_n=top_n,
                return_documents=True,
                model=self.name,
                view=view,
                truncation=truncation,
                mode=mode,
            )
        ).results

    def generate(
        self,
        input: Source | np.ndarray,
        *,
        task: str | None = None,
        to: Source | np.ndarray | None = None,
        steps: int | None = None,
        plus: Source | np.ndarray | None = None,
        minus: Source | np.ndarray | None = None,
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
        """Sentences decoded from a text's or a vector's meaning by the bundle's decoder (bundles that carry one:
        ``mean-max-aae``, ``uni-skip``, ``bi-skip``), as ``POST /v1/generate`` decodes them (``docs/generation.md``):
        each of ``.data`` has its ``text``. ``to``: a path of ``steps`` sentences towards another; ``plus``/``minus``:
        ``input + (plus - minus)``; ``story``: that many sentences, each the next of the one before."""
        vec = {k: _listed(v) for k, v in {"input": input, "to": to, "plus": plus, "minus": minus}.items()}
        generation = self._core.generation
        return self._run(lambda: generation.generate(
            vec["input"], model=self.name, task=task, to=vec["to"], steps=steps, plus=vec["plus"], minus=vec["minus"], story=story,
            decoding=decoding, beam_width=beam_width, temperature=temperature, seed=seed, count=count, max_tokens=max_tokens,
            truncation=truncation, allow_unk=allow_unk, no_repeat_ngram_size=no_repeat_ngram_size,
        ))  # fmt: skip

    # -- closing -----------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the engine: the batchers' threads end, every index opened through this model is folded into its
        snapshot and its folder let go of. Again: nothing. Any call afterwards raises ``RuntimeError``."""
        self._closer()

    @property
    def closed(self) -> bool:
        return not self._closer.alive

    def __enter__(self) -> Embedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the way in ------------------------------------------------------------------------------
    def _vectors(
        self, items: list[Any], fields: list[str], view: str | None, dimensions: int | None, normalize: bool, batch_size: int,
        progress: bool | None, embedding_type: str, truncation: str | None,
    ) -> np.ndarray:  # fmt: skip
        """Vectors (or codes) of ``items`` named ``fields`` in errors: every argument and every text checked before any
        work, then batches of like lengths sent to the core, a few at a time."""
        precision = cast(Precision, _choice(embedding_type, PRECISIONS, "embedding_type"))
        mode = None if truncation is None else cast(Truncation, _choice(truncation, TRUNCATIONS, "truncation"))
        batch_size = _positive(batch_size, "batch_size")
        dimensions = None if dimensions is None else _positive(dimensions, "dimensions")
        if not isinstance(normalize, (bool, np.bool_)):
            raise InvalidInput(f"normalize must be True or False, got {normalize!r}", field="normalize")
        model, emb = self._model, self._core.embedding
        view = model.encoder.view(view)
        reduced = model.encoder.dimensions(view, dimensions)
        width = reduced or model.encoder.dim(view)
        # like lengths together: less padding in each run (the vectors do not depend on their batch)
        order = sorted(range(len(items)), key=lambda i: len(items[i]) if isinstance(items[i], str) else 0)
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        checked = [emb.texts([items[i] for i in b], [fields[i] for i in b], mode) for b in batches]
        dtype = np.float32 if precision == "float" else np.uint8 if precision in ("uint8", "ubinary") else np.int8
        out = np.empty((len(items), -(-width // 8) if precision in BITS else width), dtype)  # (n, dim) or (n, bytes)
        show = len(items) >= PROGRESS_FROM if progress is None else progress
        with tqdm(total=len(items), desc=self.name, unit="text", disable=not show, mininterval=0.5) as bar:
            in_flight = max(2, min(IN_FLIGHT_TEXTS, self.settings.max_queue_size) // batch_size)
            work = self._encode_batches(model, view, checked, bool(normalize), mode, reduced, dimensions, precision, in_flight, bar.update)
            for rows, codes in zip(batches, self._engine.call(work)):
                out[rows] = codes
        return out

    async def _encode_batches(
        self, model: Model, view: str, batches: list[Texts], normalize: bool, mode: Truncation | None, reduced: int | None,
        dimensions: int | None, precision: Precision, in_flight: int, done: Callable[[int], Any],
    ) -> list[np.ndarray]:  # fmt: skip
        """Each batch through ``EmbeddingService.encode`` (and ``compact``), ``in_flight`` batches queued at once;
        the first error stops the rest."""
        emb = self._core.embedding
        room = asyncio.Semaphore(in_flight)

        async def one(texts: Texts) -> np.ndarray:
            async with room:
                enc = await _queued(lambda: emb.encode(model, view, texts, normalize, mode, reduced))
                rows = (
                    enc.vectors
                    if precision == "float"
                    else (await compact(emb, enc, [precision], dimensions, normalize, "texts"))[precision]
                )
            done(len(texts))
            return rows

        tasks = [asyncio.ensure_future(one(t)) for t in batches]
        try:
            return list(await asyncio.gather(*tasks))
        finally:  # an error (or the caller gone): the batches not run are not run for nobody
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _unit_rows(self, v: Any, name: str, view: str | None) -> tuple[np.ndarray, bool]:
        """``v`` as unit rows ``(n, dim)``, and whether it was one item: texts encoded, vectors normalised."""
        if isinstance(v, np.ndarray) and v.dtype.kind in "fiu":
            if v.ndim not in (1, 2) or v.shape[-1] == 0:
                raise InvalidInput(f"{name} must be texts, a vector or a matrix of vectors; got shape {v.shape}", field=name)
            return l2_normalize(np.atleast_2d(v).astype(np.float32)), v.ndim == 1
        single = isinstance(v, str)
        items = [v] if single else _as_list(v, name)
        fields = [name] if single else [f"{name}[{i}]" for i in range(len(items))]
        return self._vectors(items, fields, view, None, True, ENCODE_BATCH, None, "float", None), single

    def _folder(self, folder: Path) -> IndexServices:
        """The index services over ``folder`` (its lock taken, its indexes loaded on first use): one store a folder, as
        one server holds one; every index there shares it."""
        folder = Path(folder).resolve()
        with self._opening:
            if folder not in self._folders:
                services = IndexServices.over(self.settings.model_copy(update={"index_dir": folder}), self._core.embedding)
                services.admin.open()  # IndexFolderLocked where another process holds it
                try:
                    self._engine.call(services.admin.load())
                except BaseException:
                    services.admin.store.close()
                    raise
                self._folders[folder] = services
            return self._folders[folder]

    def _on_loop(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` (a quick call of the core's, made on its event loop in a server) on the engine's loop."""

        async def call() -> T:
            return fn(*args)

        return self._engine.call(call())

    def _run(self, make: Callable[[], Awaitable[T]]) -> T:
        """The core coroutine ``make()`` makes, run on the engine, made again while the model's queue is full."""
        return self._engine.call(_queued(make))


async def _start(path: Path, settings: Settings) -> Core:
    """A core serving the bundle at ``path`` alone, its model loaded and warmed (as a server's start-up does)."""
    core = Core(settings)
    core.embedding.registry.bundles = [path]
    try:
        await core.start_models()  # no default index: build_default_index is off
        failed = core.embedding.registry.failed
        if failed:
            raise BundleError(path.name, "model", next(iter(failed.values())))
    except BaseException:
        await core.embedding.stop()
        raise
    return core


def _shutdown(engine: EngineThread, core: Core, folders: dict[Path, IndexServices]) -> None:
    """What ``Core.stop`` does, the index stores closed from this thread: at exit, executors take no more work."""
    try:
        if engine.running:
            engine.call(core.embedding.stop())
    finally:
        for services in folders.values():
            services.admin.store.close()
        folders.clear()
        engine.stop()


async def _queued(make: Callable[[], Awaitable[T]]) -> T:
    """``make()`` awaited, and made again while the model's queue is full: a server's client would get a 429 and
    retry; in process, the call waits its turn. A full queue refuses work before any is done."""
    while True:
        try:
            return await make()
        except QueueFull:
            await asyncio.sleep(QUEUE_RETRY_S)


def _as_list(items: Any, name: str) -> list[Any]:
    """``items`` (a list, tuple, array, Series, any iterable but a string or a mapping) as a list."""
    if isinstance(items, (str, bytes, dict)) or not isinstance(items, Iterable):
        raise InvalidInput(f"{name} must be a list of texts, got {type(items).__name__}", field=name)
    return list(items)


def _listed(v: Any) -> Any:
    """A vector given as an array, as the list the core reads; anything else as it is."""
    return v.tolist() if isinstance(v, np.ndarray) else v


def _choice(value: Any, choices: tuple[str, ...], name: str) -> str:
    if value not in choices:
        raise InvalidInput(f"{name} is {value!r}; choose one of {', '.join(choices)}", field=name)
    return value


def _positive(value: Any, name: str) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise InvalidInput(f"{name} is {value!r}; it must be a whole number, 1 or more", field=name)
    return int(value)
