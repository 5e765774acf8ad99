"""The batcher without HTTP: batch bounds, invariance, 429, errors, dropped callers, a dead worker."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest

from tests.service.conftest import SENTENCES
from thoughtvec.service.core.batcher import REFIT_EVERY, Batcher, BatchLimits
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.core.planner import RunCost
from thoughtvec.service.errors import InputTooLong, InvalidInput, QueueFull, WorkerDead

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    from tests.tiny_bundle import make_tiny_bundle

    path = tmp_path_factory.mktemp("b") / "tiny"
    make_tiny_bundle(path)
    return Encoder.load(path)


class Recording:
    """Wraps an encoder: records batch shapes, can be slowed down or made to fail."""

    def __init__(self, enc: Encoder, delay: float = 0.0, fail: bool = False):
        self.enc, self.delay, self.fail = enc, delay, fail
        self.batches: list[tuple[int, int]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()  # set when a batch reaches run_ids

    def token_ids(self, text):
        return self.enc.token_ids(text)

    def fit(self, ids, truncation="reject", field="input"):
        return self.enc.fit(ids, truncation, field)

    def dim(self, view=None):
        return self.enc.dim(view)

    def run_ids(self, batch, view=None):
        self.entered.set()
        self.gate.wait(10)
        time.sleep(self.delay)
        if self.fail:
            raise RuntimeError("boom")
        self.batches.append((len(batch), max(len(s) for s in batch)))
        return self.enc.run_ids(batch, view)


async def in_run_ids(rec: Recording) -> None:
    """Until the worker has taken the first batch and reached run_ids (blocked there while the gate is closed)."""
    assert await asyncio.to_thread(rec.entered.wait, 10)


async def test_batched_equals_alone_under_concurrency(encoder):
    rec = Recording(encoder)
    b = Batcher("tiny", rec, BatchLimits(max_batch_size=4, max_batch_tokens=64, max_wait_ms=5))
    b.start()
    alone = encoder.encode(SENTENCES, normalize=False, batch_size=1)
    results = await asyncio.gather(*(b.embed([s], "mean") for s in SENTENCES * 3), b.embed(SENTENCES, "mean"))
    for i, r in enumerate(results[:-1]):
        np.testing.assert_allclose(r.vectors[0], alone[i % len(SENTENCES)], atol=1e-6)
    np.testing.assert_allclose(results[-1].vectors, alone, atol=1e-6)
    assert max(n for n, _ in rec.batches) > 1  # it did batch
    assert all(n <= 4 and (n == 1 or n * t <= 64) for n, t in rec.batches)
    await b.stop()


async def test_full_queue_answers_queue_full(encoder):
    rec = Recording(encoder)
    rec.gate.clear()  # the first batch blocks, so the queue fills
    b = Batcher("tiny", rec, BatchLimits(max_batch_size=2, max_wait_ms=0, max_queue_size=4, retry_after_s=3))
    b.start()
    first = asyncio.create_task(b.embed(["the cat"], "mean"))
    await in_run_ids(rec)
    waiting = [asyncio.create_task(b.embed(["a dog", "the man"], "mean")) for _ in range(2)]
    await asyncio.sleep(0.01)
    with pytest.raises(QueueFull) as e:
        await b.embed(["one more"], "mean")
    assert e.value.retry_after_s == 3 and "the limit is 4" in e.value.message
    rec.gate.set()
    assert (await first).vectors.shape == (1, 8)
    for t in waiting:
        assert (await t).vectors.shape == (2, 8)
    await b.stop()


async def test_a_failed_batch_fails_every_caller_and_the_worker_lives(encoder):
    rec = Recording(encoder, fail=True)
    b = Batcher("tiny", rec, BatchLimits(max_batch_size=8, max_wait_ms=5))
    b.start()
    results = await asyncio.gather(*(b.embed([s], "mean") for s in SENTENCES), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results)
    rec.fail = False
    assert (await b.embed(["the cat"], "mean")).vectors.shape == (1, 8)
    assert b.alive
    await b.stop()


async def test_cancelled_callers_are_dropped(encoder):
    rec = Recording(encoder)
    rec.gate.clear()
    dropped = []

    class Obs:
        def queue_depth(self, m, d): ...
        def batch_done(self, *a): ...
        def dropped(self, m, n):
            dropped.append(n)

    b = Batcher("tiny", rec, BatchLimits(max_batch_size=1, max_wait_ms=0), Obs())
    b.start()
    first = asyncio.create_task(b.embed(["the cat"], "mean"))
    await in_run_ids(rec)
    gone = asyncio.create_task(b.embed(["the dog ran", "a man"], "mean"))
    await asyncio.sleep(0.01)
    gone.cancel()  # the client went away while queued
    rec.gate.set()
    await first
    assert (await b.embed(["she walked"], "mean")).vectors.shape == (1, 8)
    assert sum(dropped) == 2
    assert sum(n for n, _ in rec.batches) == 2  # the cancelled sentences never ran
    await b.stop()


async def test_admission_errors_name_the_input(encoder):
    b = Batcher("tiny", encoder, BatchLimits())
    b.start()
    with pytest.raises(InputTooLong, match=r"input\[1\] has 41 tokens; the limit is 32"):
        await b.embed(["the cat", " ".join(["cat"] * 40)], "mean")
    out = await b.embed(["the cat", " ".join(["cat"] * 40)], "mean", truncation="truncate")
    assert out.tokens == [3, 32]
    b2 = Batcher("tiny", encoder, BatchLimits())
    await b.stop()
    del b2


async def test_dead_worker_fails_waiters_and_refuses_new_work(encoder):
    rec = Recording(encoder)
    rec.gate.clear()
    b = Batcher("tiny", rec, BatchLimits(max_batch_size=1, max_wait_ms=0))
    b.start()
    running = asyncio.create_task(b.embed(["the cat"], "mean"))
    await in_run_ids(rec)
    queued = asyncio.create_task(b.embed(["a dog"], "mean"))
    await asyncio.sleep(0.01)
    b._task.cancel()  # simulate the worker dying mid-batch
    for t in (running, queued):
        with pytest.raises(WorkerDead):
            await asyncio.wait_for(t, 5)  # resolved, never left hanging
    assert not b.alive
    with pytest.raises(WorkerDead):
        await b.embed(["a dog"], "mean")
    rec.gate.set()


async def test_no_tokens_is_invalid(tmp_path):
    from tests.tiny_bundle import make_tiny_bundle

    make_tiny_bundle(tmp_path / "noeos", append_eos=False)
    b = Batcher("noeos", Encoder.load(tmp_path / "noeos"), BatchLimits())
    b.start()
    with pytest.raises(InvalidInput, match=r"input\[0\] has no tokens"):
        await b.embed(["\x01\x02"], "mean")
    await b.stop()


async def _three_in_one_window(rec: Recording, b: Batcher) -> list[asyncio.Task]:
    """Three single-sentence requests taken in one window; the first batch blocks in run_ids."""
    rec.gate.clear()
    tasks = [asyncio.create_task(b.embed([s], "mean")) for s in SENTENCES[:3]]
    await in_run_ids(rec)
    assert b.depth == 0 and len(b._window) == 3  # all three left the queue for the worker's window
    return tasks


async def test_a_killed_worker_fails_its_whole_window(encoder):
    rec = Recording(encoder)
    b = Batcher("tiny", rec, BatchLimits(max_batch_size=1, max_wait_ms=0))
    b.start()
    tasks = await _three_in_one_window(rec, b)
    b._task.cancel()
    for t in tasks:  # the running batch and the two behind it in the window
        with pytest.raises(WorkerDead):
            await asyncio.wait_for(t, 5)
    rec.gate.set()


async def test_a_worker_dying_of_an_error_fails_the_rest_of_its_window(encoder):
    class Exploding:
        def queue_depth(self, m, d): ...
        def dropped(self, m, n): ...
        def batch_done(self, *a):
            raise RuntimeError("a metrics bug")

    rec = Recording(encoder)
    b = Batcher("tiny", rec, BatchLimits(max_batch_size=1, max_wait_ms=0), Exploding())
    b.start()
    tasks = await _three_in_one_window(rec, b)
    rec.gate.set()
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)
    assert sum(isinstance(r, WorkerDead) for r in results) == 2  # the first batch resolved before the observer raised
    assert not b.alive


async def test_stopping_fails_every_waiting_request(encoder):
    from thoughtvec.service.errors import NotReady

    rec = Recording(encoder)
    b = Batcher("tiny", rec, BatchLimits(max_batch_size=1, max_wait_ms=0))
    b.start()
    tasks = await _three_in_one_window(rec, b)
    queued = asyncio.create_task(b.embed(["she walked"], "mean"))
    await asyncio.sleep(0.01)
    await b.stop()
    for t in [*tasks, queued]:
        with pytest.raises(NotReady, match="shutting down"):
            await asyncio.wait_for(t, 5)
    rec.gate.set()


class Counting(Recording):
    def __init__(self, enc):
        super().__init__(enc)
        self.tokenized = 0

    def token_ids(self, text):
        self.tokenized += 1
        return super().token_ids(text)


async def test_a_full_queue_refuses_before_tokenizing(encoder):
    rec = Counting(encoder)
    rec.gate.clear()
    b = Batcher("tiny", rec, BatchLimits(max_batch_size=1, max_wait_ms=0, max_queue_size=2))
    b.start()
    tasks = [asyncio.create_task(b.embed([s], "mean")) for s in SENTENCES[:1]]
    await in_run_ids(rec)  # the first is running (blocked); now fill the queue
    tasks += [asyncio.create_task(b.embed([s], "mean")) for s in SENTENCES[1:3]]
    await asyncio.sleep(0.01)
    before = rec.tokenized
    with pytest.raises(QueueFull):
        await b.embed(["x " * 5000], "mean")  # long enough to be tokenized on a thread
    assert rec.tokenized == before
    with pytest.raises(QueueFull):  # the server's path (EmbeddingService.encode splits, then embed_ids) meets the same limit
        await b.embed_ids([encoder.token_ids("the cat")], "mean")
    rec.gate.set()
    await asyncio.gather(*tasks)
    await b.stop()


async def test_a_large_request_is_admitted_like_a_small_one(encoder):
    """While the queue is below its limit any request gets in: small ones cannot starve a large one."""
    rec = Recording(encoder)
    rec.gate.clear()
    b = Batcher("tiny", rec, BatchLimits(max_batch_size=1, max_wait_ms=0, max_queue_size=4))
    b.start()
    running = asyncio.create_task(b.embed(["the cat"], "mean"))
    await in_run_ids(rec)
    small = asyncio.create_task(b.embed(["a dog"], "mean"))  # one sentence waits: room for three more
    await asyncio.sleep(0.01)
    large = asyncio.create_task(b.embed(SENTENCES[:4], "mean"))  # four: admitted while one sentence waits
    await asyncio.sleep(0.01)
    rec.gate.set()
    assert (await large).vectors.shape == (4, 8)
    await asyncio.gather(running, small)
    await b.stop()


class Timed(Recording):
    """A backend whose runs take ``cost``'s time (sleeps), so calibration has something known to measure."""

    def __init__(self, enc: Encoder, cost: RunCost):
        super().__init__(enc)
        self.cost = cost

    def run_ids(self, batch, view=None):
        time.sleep(self.cost.seconds(len(batch), max(len(s) for s in batch)))
        return super().run_ids(batch, view)


async def test_calibration_measures_the_model_and_the_worker_plans_with_it(encoder):
    true = RunCost(per_run=4e-3, per_step=0.0, per_row_step=1e-4)
    rec = Timed(encoder, true)
    b = Batcher("tiny", rec, BatchLimits(max_batch_size=32, max_wait_ms=0))
    b.start()
    assert b.cost is None
    cost = await b.calibrate("mean", ["the cat sat on the mat .", "a dog ran ."])
    assert cost is b.cost and cost is not None
    assert cost.per_run == pytest.approx(4e-3, abs=2e-3) and cost.per_row_step == pytest.approx(1e-4, rel=0.3)
    # one window: four short sentences and a long one; greedy would pad the four to the long one's length
    rec.batches.clear()
    rec.gate.clear()
    first = asyncio.create_task(b.embed(["the cat"], "mean"))
    await in_run_ids(rec)
    window = [asyncio.create_task(b.embed([s], "mean")) for s in ["a dog", "the man", "she ran", "the cat"]]
    window.append(asyncio.create_task(b.embed([" ".join(["the old man read a book"] * 5)], "mean")))
    await asyncio.sleep(0.01)
    rec.gate.set()
    await asyncio.gather(first, *window)
    assert rec.batches[1:] == [(4, 3), (1, 31)]
    await b.stop()


async def test_calibration_keeps_greedy_plans_when_there_is_nothing_to_choose(encoder):
    b = Batcher("tiny", Recording(encoder), BatchLimits(max_batch_size=1))
    b.start()
    assert await b.calibrate("mean", ["the cat sat on the mat ."]) is None and b.cost is None
    await b.stop()


async def test_served_runs_refine_the_run_cost(encoder):
    rec = Timed(encoder, RunCost(per_run=1e-3, per_step=0.0, per_row_step=1e-5))
    b = Batcher("tiny", rec, BatchLimits(max_batch_size=32, max_wait_ms=0))
    b.start()
    idle = await b.calibrate("mean", ["the cat sat on the mat .", "a dog ran ."])
    assert idle is not None and idle.per_run < 3e-3
    rec.cost = RunCost(per_run=8e-3, per_step=0.0, per_row_step=1e-5)  # loaded: every run now costs 7 ms more
    for _ in range(REFIT_EVERY):
        await b.embed(["the cat"], "mean")
    assert b.cost is not idle and b.cost.per_run > 4e-3  # fitted again, the served runs outweighing the calibration
    await b.stop()


class Overlapping(Recording):
    """Counts the runs in run_ids at once (each held until ``release``)."""

    def __init__(self, enc: Encoder):
        super().__init__(enc)
        self.lock = threading.Lock()
        self.now = self.most = 0
        self.release = threading.Event()

    def run_ids(self, batch, view=None):
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            self.release.wait(10)
            return self.enc.run_ids(batch, view)
        finally:
            with self.lock:
                self.now -= 1


@pytest.mark.parametrize("runs", [1, 2])
async def test_a_model_runs_at_most_concurrent_runs_batches_at_once(encoder, runs):
    rec = Overlapping(encoder)
    b = Batcher("tiny", rec, BatchLimits(max_batch_size=1, max_wait_ms=0, concurrent_runs=runs))
    b.start()
    tasks = [asyncio.create_task(b.embed([s], "mean")) for s in SENTENCES[:5]]
    deadline = time.monotonic() + 10
    while rec.now < runs and time.monotonic() < deadline:  # as many runs as may start have started
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.05)  # and no more start
    assert rec.now == runs
    rec.release.set()
    got = await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert rec.most == runs
    np.testing.assert_allclose(np.vstack([g.vectors for g in got]), encoder.encode(SENTENCES[:5], normalize=False), atol=1e-6)
    await b.stop()


async def test_stopping_fails_every_run_in_flight(encoder):
    from thoughtvec.service.errors import NotReady

    rec = Overlapping(encoder)
    b = Batcher("tiny", rec, BatchLimits(max_batch_size=1, max_wait_ms=0, concurrent_runs=2))
    b.start()
    tasks = [asyncio.create_task(b.embed([s], "mean")) for s in SENTENCES[:3]]
    deadline = time.monotonic() + 10
    while rec.now < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    await b.stop()
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 10)
    assert [type(r) for r in results] == [NotReady] * 3  # two running, one queued: none left hanging
    rec.release.set()
