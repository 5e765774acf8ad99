"""A request's trace as the batcher records it (``service/core/tracing.py``), without OpenTelemetry: the requests that
shared a run name the same batch; each queued lot has one queue stage; a failed run is recorded with its error."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.service.core.test_batcher import Recording, encoder  # noqa: F401 - the module fixture, shared
from thoughtvec.service.core import tracing
from thoughtvec.service.core.batcher import Batcher, BatchLimits

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


class Kept:
    """An exporter that keeps each finished trace."""

    def __init__(self):
        self.traces: list[tracing.RequestTrace] = []

    def export(self, trace, route, status, end):
        self.traces.append(trace)

    def shutdown(self):
        pass


@pytest.fixture
def kept():
    out = Kept()
    tracing.enable(out)
    try:
        yield out
    finally:
        tracing.stop()


async def traced_request(batcher: Batcher, ids: list[list[int]]) -> tracing.RequestTrace:
    """One request's work, in a task of its own as a request's is, traced from its start to its end."""

    async def request() -> tracing.RequestTrace:
        trace = tracing.begin("POST", "/v1/embeddings", [], time.perf_counter())
        status = 500
        try:
            await batcher.embed_ids(ids, "mean")
            status = 200
        finally:
            trace.finish("/v1/embeddings", status, time.perf_counter())  # as the door does, whatever happened
        return trace

    return await asyncio.create_task(request())


async def test_requests_that_shared_a_run_name_the_same_batch(encoder, kept):  # noqa: F811
    rec = Recording(encoder)
    rec.gate.clear()  # the first run waits: the two requests below queue behind it and ride the next one together
    batcher = Batcher("tiny", rec, BatchLimits(max_batch_size=8, max_wait_ms=0))
    batcher.start()
    try:
        first = asyncio.create_task(traced_request(batcher, [[5, 6]]))
        await asyncio.to_thread(rec.entered.wait, 10)
        a = asyncio.create_task(traced_request(batcher, [[5, 6, 7], [8]]))
        b = asyncio.create_task(traced_request(batcher, [[9]]))
        await asyncio.sleep(0.05)  # both queued
        rec.gate.set()
        traces = [await t for t in (first, a, b)]
    finally:
        await batcher.stop()
    runs = [[s for s in t.stages if s.name == "run"] for t in traces]
    assert [len(r) for r in runs] == [1, 1, 1]
    assert (
        runs[1][0].attributes["thoughtvec.batch.id"]
        == runs[2][0].attributes["thoughtvec.batch.id"]
        != runs[0][0].attributes["thoughtvec.batch.id"]
    )
    assert runs[1][0].attributes["thoughtvec.batch.size"] == 3 and runs[1][0].attributes["thoughtvec.batch.padded_tokens"] == 3 * 3
    for t in traces:
        assert [s.name for s in t.stages] == ["queue", "run", "answer"] and t.models == ["tiny"]
        queue, run, answer = t.stages
        assert queue.end == run.start <= run.end <= answer.start <= answer.end
    assert sorted(map(id, kept.traces)) == sorted(map(id, traces))


async def test_a_failed_run_is_in_the_trace_with_its_error(encoder, kept):  # noqa: F811
    batcher = Batcher("tiny", Recording(encoder, fail=True), BatchLimits(max_wait_ms=0))
    batcher.start()
    try:
        with pytest.raises(RuntimeError, match="boom"):
            await traced_request(batcher, [[5, 6]])
    finally:
        await batcher.stop()
    (trace,) = kept.traces
    assert [s.name for s in trace.stages] == ["queue", "run", "answer"]
    assert "boom" in trace.stages[1].error and trace.stages[1].attributes["thoughtvec.batch.size"] == 1


async def test_nothing_is_recorded_while_tracing_is_off(encoder):  # noqa: F811
    assert not tracing.ENABLED
    batcher = Batcher("tiny", Recording(encoder), BatchLimits(max_wait_ms=0))
    batcher.start()
    try:
        trace = tracing.RequestTrace("POST", "/v1/embeddings", [], time.perf_counter())
        token = tracing._CURRENT.set(trace)  # a trace current, as if tracing had been on when the request came
        try:
            await batcher.embed_ids([[5, 6]], "mean")
        finally:
            tracing._CURRENT.reset(token)
    finally:
        await batcher.stop()
    assert trace.stages == [] and trace.back is None  # nothing was called on it
