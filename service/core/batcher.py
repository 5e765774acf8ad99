"""Dynamic batching: one queue and one worker per model, over a three-method backend.

The layering follows text-embeddings-inference (``core/src/queue.rs``, ``infer.rs``) and
infinity (``inference/batch_handler.py``):

* admission (the caller's task): check queue room (a full queue is a 429 before any work is spent
  on the request), tokenize, apply the token limit (413) — all before anything waits. A request is
  admitted while fewer than ``max_queue_size`` sentences wait or are held by requests admitted before
  it and still being prepared (:meth:`Batcher.admit`), whatever its own size, so a large request is
  never starved by a stream of small ones (the queue holds at most ``max_queue_size`` less one, plus one
  request's parts). Work on a model's texts that is not queued (``/tokenize``, BM25 search) is
  admitted the same way, and so is work that is not a batch of sentences (a decoder's steps,
  :meth:`Batcher.run_alone`), which holds its places until it ends (``lasting``);
* the worker: waits up to ``max_wait_ms`` for a batch to fill, takes a window of the oldest
  sentences, plans it with :func:`thoughtvec.service.core.planner.plan_batches` (sorted by length, batches
  bounded by ``max_batch_size`` sentences and ``max_batch_tokens`` padded tokens; cut where the
  model's measured :class:`~thoughtvec.service.core.planner.RunCost` says a split saves more padding than a
  run costs, once :meth:`Batcher.calibrate` has run), and runs each on a thread so the event loop
  keeps serving, up to ``concurrent_runs`` at once (each on its share of ONNX Runtime's threads: on a CPU two
  one-thread runs serve more than one two-thread run, as its serial parts and the gaps between runs leave a core
  idle);
* resolution: rows are copied into each request's output; when a request's last row lands its
  future resolves. A failed run fails every request in it; a request whose caller went away
  (future cancelled) is skipped. No caller ever waits on a future nobody will resolve: when the
  worker dies or the server stops, every request queued *or in the worker's window* is failed.

A sentence's vector does not depend on its batch (graphs mask padding), so batching is invisible
to callers except in throughput.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.core import tracing
from thoughtvec.service.core.limits import OFFLOAD_CHARS
from thoughtvec.service.core.planner import MAX_BATCH_SIZE, MAX_BATCH_TOKENS, RunCost, plan_batches
from thoughtvec.service.errors import InvalidInput, NotReady, QueueFull, ThoughtvecError, WorkerDead
from thoughtvec.service.settings import Truncation

log = logging.getLogger(__name__)
T = TypeVar("T")

# The worker looks at this many batches' worth of the oldest sentences at once: enough to
# group similar lengths, few enough that nobody waits behind a long backlog out of order.
LOOKAHEAD = 4
# Shapes timed by :meth:`Batcher.calibrate` (sizes over max_batch_size, lengths over the model's
# limit and shapes over max_batch_tokens are left out): one untimed pass, then this many timed
# passes over all of them; each shape's fastest run counts.
CALIBRATION_SIZES = (1, 4, 16, 32)
CALIBRATION_LENGTHS = (8, 16, 32)
CALIBRATION_REPEATS = 3
# Served runs refine the run cost: every REFIT_EVERY runs it is fitted again to the calibration and
# the last OBSERVED runs, timed from hand-off to answered callers (loaded, a run costs more than idle).
REFIT_EVERY = 64
OBSERVED = 512


class Backend(Protocol):
    """What the batcher needs from a model (``thoughtvec.service.core.encoder.Encoder`` provides it)."""

    def token_ids(self, text: str) -> list[int]: ...

    def fit(self, ids: list[int], truncation: Truncation = "reject", field: str = "input") -> list[int]: ...

    def run_ids(self, batch: Sequence[Sequence[int]], view: str | None = None) -> np.ndarray: ...

    def dim(self, view: str | None = None) -> int: ...


class Observer(Protocol):
    """Metrics hooks (``thoughtvec.service.core.metrics.Metrics`` provides them)."""

    def queue_depth(self, model: str, depth: int) -> None: ...

    def batch_done(self, model: str, size: int, padded_tokens: int, seconds: float, waits: list[float]) -> None: ...

    def dropped(self, model: str, sentences: int) -> None: ...


@dataclass(eq=False)
class _Job:
    """One request: its output rows fill in as batches finish."""

    view: str
    out: np.ndarray  # (n, dim) raw vectors
    unit: np.ndarray | None  # (n, dim) the same, L2-normalised, where the caller asked for them
    remaining: int
    future: asyncio.Future
    enqueued: float
    trace: tracing.RequestTrace | None = None  # the request's, where tracing is on
    traced_runs: int = 0  # runs recorded in ``trace``: its queue stage ends at the first


@dataclass(eq=False, slots=True)
class _Item:
    """One sentence of a job, as queued."""

    job: _Job
    pos: int
    ids: list[int]


class Admission:
    """``n`` places held in a model's queue while a request's texts are prepared (tokenized, split): counted
    as waiting until its parts are queued (:meth:`Batcher.embed_ids`) or its work ends (:meth:`release`, or
    leaving the ``with`` block).

    ``lasting``: held for the whole of a request's work, not only while its texts are prepared (a generation: from
    before its texts are encoded until its last decoding run, :meth:`Batcher.run_alone`, ends). Within its ``with``
    block the request's own hold is not counted against it (:data:`_LASTING`, the request's task's): the sentences
    it queues meanwhile and its runs are admitted within its places, never refused for them."""

    def __init__(self, batcher: Batcher, n: int, lasting: bool = False):
        self.batcher = batcher
        self.n = n
        self.lasting = lasting
        self._entered: contextvars.Token | None = None
        batcher._held += n

    def release(self) -> None:
        self.batcher._held -= self.n
        self.n = 0

    def __enter__(self) -> Admission:
        if self.lasting:
            self._entered = _LASTING.set((*_LASTING.get(), self))
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        if self._entered is not None:
            _LASTING.reset(self._entered)


# The lasting admissions whose ``with`` block the running task is in: its own places, which its further admissions
# do not count as waiting (a context variable: each request's task sees only its own).
_LASTING: contextvars.ContextVar[tuple[Admission, ...]] = contextvars.ContextVar("lasting_admissions", default=())


@dataclass
class BatchLimits:
    max_batch_size: int = MAX_BATCH_SIZE
    max_batch_tokens: int = MAX_BATCH_TOKENS
    max_wait_ms: float = 2.0
    max_queue_size: int = 2048
    retry_after_s: int = 1
    concurrent_runs: int = 1


@dataclass
class Embedded:
    """Raw vectors of one request, with the token count of each input."""

    vectors: np.ndarray  # (n, dim), not normalised
    tokens: list[int] = field(default_factory=list)
    unit: np.ndarray | None = None  # (n, dim): ``vectors`` L2-normalised beside the graph run, where asked for


class Batcher:
    """Queue + worker for one model. Start it inside a running event loop."""

    def __init__(self, name: str, backend: Backend, limits: BatchLimits, observer: Observer | None = None):
        self.name = name
        self.backend = backend
        self.limits = limits
        self.observer = observer
        self._queue: deque[_Item] = deque()
        self._window: list[_Item] = []  # taken off the queue by the worker, not all run yet
        self._held = 0  # places held by admitted requests still being prepared (Admission), counted as waiting
        self._arrived = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._stopping = False
        self._death: BaseException | None = None
        self._wait_paid_off = False
        self.cost: RunCost | None = None  # measured by calibrate(); None: batches are filled greedily
        self._calibration: list[tuple[int, int, float]] = []
        self._observed: deque[tuple[int, int, float]] = deque(maxlen=OBSERVED)
        self._unfitted = 0  # runs observed since the last fit
        # A thread per run a model may have at once (``concurrent_runs``; each run uses its share of ONNX Runtime's
        # threads): with one, runs never overlap. A run holds a slot from before its window is taken to its end.
        self._executor = ThreadPoolExecutor(max_workers=limits.concurrent_runs, thread_name_prefix=f"ort-{name}")
        self._slots = asyncio.Semaphore(limits.concurrent_runs)
        self._running: set[asyncio.Task] = set()  # runs in flight
        self._crashed: BaseException | None = None  # what killed a run task (not a failed batch: a bug around one)

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._worker(), name=f"batcher-{self.name}")
        self._task.add_done_callback(self._on_exit)

    @property
    def alive(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def depth(self) -> int:
        return len(self._queue)

    async def stop(self) -> None:
        self._stopping = True
        for task in [self._task, *self._running]:
            if task is None:
                continue
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - a loop that died was reported by _on_exit; stopping is quiet
                pass
        self._fail_queued(NotReady(f"model '{self.name}' is shutting down"))
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _on_exit(self, task: asyncio.Task) -> None:
        if self._stopping:
            return
        for run in list(self._running):  # their requests are failed as the worker's own
            run.cancel()
        self._death = self._crashed or (task.exception() if not task.cancelled() else asyncio.CancelledError())
        log.error("batcher for %s stopped: %r", self.name, self._death)
        self._fail_queued(WorkerDead(f"the batcher of model '{self.name}' stopped ({self._death!r}); restart the server"))

    def _fail_queued(self, error: Exception) -> None:
        """Fail every request still waiting: in the queue, or in the window the worker had taken."""
        items, self._window = self._window, []
        items.extend(self._queue)
        self._queue.clear()
        for item in items:
            if not item.job.future.done():
                item.job.future.set_exception(error)
        self._report_depth()

    # -- admission -----------------------------------------------------------------------
    def _admit(self, texts: Sequence[str], truncation: Truncation, fields: Sequence[str]) -> list[list[int]]:
        out = []
        for text, fld in zip(texts, fields):
            ids = self.backend.fit(self.backend.token_ids(text), truncation, field=fld)
            if not ids:
                raise InvalidInput(f"{fld} has no tokens after normalisation", field=fld)
            out.append(ids)
        return out

    async def embed(
        self, texts: Sequence[str], view: str, *, truncation: Truncation = "reject", fields: Sequence[str] | None = None
    ) -> Embedded:
        """Raw vectors for ``texts`` (one view). Raises the domain errors of admission or of the run."""
        if self._death is not None or (self._task is not None and self._task.done()):
            raise WorkerDead(f"the batcher of model '{self.name}' is not running", field="model")
        if self._task is None:
            raise NotReady(f"model '{self.name}' is not started")
        fields = fields or [f"input[{i}]" for i in range(len(texts))]
        self.check_room()  # before tokenizing: under overload a 429 must be cheap
        if sum(map(len, texts)) > OFFLOAD_CHARS:
            ids = await asyncio.get_running_loop().run_in_executor(None, self._admit, texts, truncation, fields)
        else:
            ids = self._admit(texts, truncation, fields)
        return await self.embed_ids(ids, view)

    async def embed_ids(self, ids: Sequence[list[int]], view: str, admission: Admission | None = None, unit: bool = False) -> Embedded:
        """Raw vectors for already-fitted token-id lists (the caller applied the token limit); the room held by
        ``admission`` (the request's own, from :meth:`admit`) is let go as its parts are queued. ``unit``: with them
        L2-normalised, on the model's thread beside the run (``Embedded.unit``)."""
        if self._death is not None or (self._task is not None and self._task.done()):
            raise WorkerDead(f"the batcher of model '{self.name}' is not running", field="model")
        if self._task is None:
            raise NotReady(f"model '{self.name}' is not started")
        if admission is None or not admission.lasting:  # a lasting hold admitted these already: they are within its places
            self.check_room(admission.n if admission is not None else 0)
            if admission is not None:
                admission.release()
        n = len(ids)
        loop = asyncio.get_running_loop()
        dim = self.backend.dim(view)
        job = _Job(
            view,
            np.empty((n, dim), np.float32),
            np.empty((n, dim), np.float32) if unit else None,
            n,
            loop.create_future(),
            time.perf_counter(),
            tracing.current() if tracing.ENABLED else None,
        )
        if n == 0:
            job.future.set_result(job.out)
        self._queue.extend(_Item(job, i, s) for i, s in enumerate(ids))
        self._report_depth()
        self._arrived.set()
        try:
            vectors = await job.future
        finally:
            if job.trace is not None:
                job.trace.model_answered()
        return Embedded(vectors, [len(s) for s in ids], job.unit)

    async def run_alone(self, fn: Callable[..., T], *args: Any, admission: Admission | None = None) -> T:
        """``fn(*args)`` on one of the model's ONNX threads, as one of its runs (with one run at a time, between its
        batches, never beside one): work that is not a batch of sentences (a decoder's steps), admitted as a request
        is (a full queue: 429), or within ``admission``'s places (a :meth:`admit` ``lasting``), held while it waits
        for a run slot and runs."""
        if self._death is not None or (self._task is not None and self._task.done()):
            raise WorkerDead(f"the batcher of model '{self.name}' is not running", field="model")
        if self._task is None:
            raise NotReady(f"model '{self.name}' is not started")
        if admission is None:
            self.check_room()
        async with self._slots:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def check_room(self, own: int = 0) -> None:
        """Raise :class:`QueueFull` (429) when ``max_queue_size`` sentences wait, queued or held by admitted requests
        (less ``own``, the caller's own hold, and the lasting hold its task is in): cheap, so callers ask before
        tokenizing."""
        own += sum(a.n for a in _LASTING.get() if a.batcher is self)
        waiting = len(self._queue) + self._held - own
        if waiting >= self.limits.max_queue_size:
            raise QueueFull(
                f"model '{self.name}' has {waiting} sentences queued or being prepared; the limit is {self.limits.max_queue_size}",
                retry_after_s=self.limits.retry_after_s,
            )

    def admit(self, n: int, lasting: bool = False) -> Admission:
        """Admit a request (429 when the queue is full), holding ``n`` places for it while it is prepared, or with
        ``lasting`` until its work ends (:class:`Admission`)."""
        self.check_room()
        return Admission(self, n, lasting)

    # -- the worker ----------------------------------------------------------------------
    def _report_depth(self) -> None:
        if self.observer is not None:
            self.observer.queue_depth(self.name, len(self._queue))

    async def _gather(self) -> None:
        """Wait for a first sentence, then up to ``max_wait_ms`` for a full batch.

        A lone sentence does not wait when the previous wait brought nothing: under sequential
        traffic waiting only adds latency. Two or more queued, or a wait that paid off last time,
        are the signs of concurrent callers worth waiting for.
        """
        while not self._queue:
            self._arrived.clear()
            await self._arrived.wait()
        wait_s = self.limits.max_wait_ms / 1000
        if len(self._queue) == 1 and not self._wait_paid_off:
            wait_s = 0.0
        before = len(self._queue)
        deadline = time.perf_counter() + wait_s
        while len(self._queue) < self.limits.max_batch_size and wait_s > 0:
            left = deadline - time.perf_counter()
            if left <= 0:
                break
            self._arrived.clear()
            try:
                async with asyncio.timeout(left):
                    await self._arrived.wait()
            except TimeoutError:
                break
        self._wait_paid_off = len(self._queue) > before

    def _take_window(self) -> list[_Item]:
        """Pop the oldest live sentences, a few batches' worth; skip those whose caller left."""
        window: list[_Item] = []
        dropped = 0
        limit = self.limits.max_batch_size * LOOKAHEAD
        while self._queue and len(window) < limit:
            item = self._queue.popleft()
            if item.job.future.done():  # cancelled (client went away) or already failed
                dropped += 1
                continue
            window.append(item)
        if dropped and self.observer is not None:
            self.observer.dropped(self.name, dropped)
        self._report_depth()
        return window

    async def _worker(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._gather()
            await self._slots.acquire()  # a place to run: with one run at a time, once the last run has returned
            held = True
            window = self._window = self._take_window()
            by_view: dict[str, list[_Item]] = {}
            for item in window:
                by_view.setdefault(item.job.view, []).append(item)
            for view, items in by_view.items():
                lengths = [len(it.ids) for it in items]
                for idx in plan_batches(lengths, self.limits.max_batch_size, self.limits.max_batch_tokens, self.cost):
                    batch = [items[i] for i in idx if not items[i].job.future.done()]
                    if batch:
                        if not held:
                            await self._slots.acquire()
                        held = False
                        self._launch(loop, view, batch)
            if held:
                self._slots.release()
            self._window = []

    def _launch(self, loop: asyncio.AbstractEventLoop, view: str, batch: list[_Item]) -> None:
        """Run ``batch`` in a task of its own, in the slot the worker took for it; the slot is let go when it ends."""
        task = loop.create_task(self._run_batch(loop, view, batch), name=f"run-{self.name}")
        self._running.add(task)

        def done(t: asyncio.Task) -> None:
            self._running.discard(t)
            self._slots.release()
            if not t.cancelled() and t.exception() is not None and self._task is not None and not self._task.done():
                # not a failed batch (those fail their requests and return) but a bug around it: the worker dies of
                # it, as if it had been its own (one run at a time, it was)
                self._crashed = t.exception()
                self._task.cancel()

        task.add_done_callback(done)

    async def _run_batch(self, loop: asyncio.AbstractEventLoop, view: str, batch: list[_Item]) -> None:
        started = time.perf_counter()
        try:
            wanted = any(it.job.unit is not None for it in batch)
            vecs, unit, finite = await loop.run_in_executor(self._executor, self._run, [it.ids for it in batch], view, wanted)
            if vecs.shape[0] != len(batch):
                raise RuntimeError(f"backend returned {vecs.shape[0]} rows for {len(batch)} inputs")
        except asyncio.CancelledError:  # the worker is stopping or was killed: nobody may hang on this batch
            error = (
                NotReady(f"model '{self.name}' is shutting down")
                if self._stopping
                else WorkerDead(f"the batcher of model '{self.name}' stopped")
            )
            for it in batch:
                if not it.job.future.done():
                    it.job.future.set_exception(error)
            raise
        except Exception as e:  # every request in the batch gets the batch's error
            log.exception("batch of %d on %s failed", len(batch), self.name)
            if tracing.ENABLED:
                self._traced(batch, started, time.perf_counter(), e)
            for it in batch:
                if not it.job.future.done():
                    it.job.future.set_exception(e)
            return
        seconds = time.perf_counter() - started
        if tracing.ENABLED:
            self._traced(batch, started, started + seconds)
        waits = []
        for i, (row, ok, it) in enumerate(zip(vecs, finite, batch)):
            job = it.job
            if job.future.done():
                continue
            if not ok:  # this sentence's request fails; the batch's others go on
                job.future.set_exception(ThoughtvecError(f"model '{self.name}' produced non-finite values"))
                continue
            job.out[it.pos] = row
            if job.unit is not None:
                assert unit is not None, "a job that wants unit rows made its batch ask for them"
                job.unit[it.pos] = unit[i]
            job.remaining -= 1
            if job.remaining == 0:
                waits.append(started - job.enqueued)
                job.future.set_result(job.out)
        longest = max(len(it.ids) for it in batch)
        if self.observer is not None:
            self.observer.batch_done(self.name, len(batch), len(batch) * longest, seconds, waits)
        if self.cost is not None:
            self._observe(len(batch), longest, time.perf_counter() - started)

    def _traced(self, batch: list[_Item], start: float, end: float, error: BaseException | None = None) -> None:
        """The run of ``batch``, from ``start`` to ``end``, in the trace of each traced request that rode in it."""
        run = None
        seen: set[int] = set()
        for it in batch:
            job = it.job
            if job.trace is None or id(job) in seen:
                continue
            seen.add(id(job))
            run = run or tracing.batch(self.name, len(batch), len(batch) * max(len(i.ids) for i in batch), error)
            job.trace.ran(self.name, job.enqueued if job.traced_runs == 0 else None, start, end, run)
            job.traced_runs += 1

    def _run(self, batch: list[list[int]], view: str, unit: bool) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """A batch's raw vectors, the same L2-normalised (``unit``: some request asked; else None), and whether each
        row is finite, all on the model's thread: done for a batch at once there, it costs the event loop nothing,
        where each request's own would cost it a few numpy calls."""
        vecs = self.backend.run_ids(batch, view)
        return vecs, l2_normalize(vecs) if unit else None, np.isfinite(vecs).all(axis=1)

    def _observe(self, size: int, longest: int, seconds: float) -> None:
        """Keep a served run's time; every ``REFIT_EVERY`` runs, fit the run cost again with the calibration."""
        self._observed.append((size, longest, seconds))
        self._unfitted += 1
        if self._unfitted >= REFIT_EVERY:
            self._unfitted = 0
            self.cost = RunCost.fit(self._calibration + list(self._observed))
            log.debug("%s: refitted on %d served runs: %s", self.name, len(self._observed), self.cost.describe())

    async def warm_up(self, view: str, texts: Sequence[str]) -> None:
        """Run ``texts`` alone and together, so ONNX Runtime has allocated before real traffic.

        Unobserved: warm-up runs are not traffic, so the metrics start empty (no request can come
        meanwhile: the registry serves a model once it is warm)."""
        observer, self.observer = self.observer, None
        try:
            for t in texts:
                await self.embed([t], view, truncation="truncate")
            await self.embed(list(texts) * max(1, self.limits.max_batch_size // max(1, len(texts))), view, truncation="truncate")
        finally:
            self.observer = observer

    async def calibrate(self, view: str, texts: Sequence[str]) -> RunCost | None:
        """Time runs of a few shapes on the model's thread, fit :class:`RunCost`, plan with it from now on.

        Timed from the event loop, so the hand-off to the thread is part of a run's fixed cost. Run
        before traffic (the registry does it after warm-up); served runs refine the fit afterwards
        (``REFIT_EVERY``), since under load a run costs more than on an idle machine. With fewer than two sizes or two
        lengths to time (``max_batch_size`` 1, a tiny token budget) the greedy plan stays.
        """
        loop = asyncio.get_running_loop()
        pool = [i for t in texts for i in self.backend.token_ids(t)] or [0]
        ids = self.backend.fit(pool * (1 + max(CALIBRATION_LENGTHS) // len(pool)), "truncate")
        lim = self.limits
        sizes = sorted({min(s, lim.max_batch_size) for s in CALIBRATION_SIZES})
        lengths = sorted({min(n, len(ids)) for n in CALIBRATION_LENGTHS})
        shapes = [(b, n) for b in sizes for n in lengths if b == 1 or b * n <= lim.max_batch_tokens]
        if len({b for b, _ in shapes}) < 2 or len({n for _, n in shapes}) < 2:
            log.info("%s: batches filled greedily (too few shapes to time within the batch limits)", self.name)
            return None
        best = dict.fromkeys(shapes, float("inf"))
        for timed in range(CALIBRATION_REPEATS + 1):  # passes over every shape: a burst of noise spoils one pass, not a shape
            for size, length in shapes:
                started = time.perf_counter()
                await loop.run_in_executor(self._executor, self.backend.run_ids, [ids[:length]] * size, view)
                if timed:  # the first pass only lets the runtime allocate for each shape
                    best[size, length] = min(best[size, length], time.perf_counter() - started)
        self._calibration = [(size, length, seconds) for (size, length), seconds in best.items()]
        self._observed.clear()
        self.cost = RunCost.fit(self._calibration)
        log.info("%s: %s", self.name, self.cost.describe())
        return self.cost
