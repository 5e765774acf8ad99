"""The compute bench's plan is the server worker's plan; the peak graphs run."""

from __future__ import annotations

import asyncio
import random
import re
import threading

import numpy as np
import pytest

from thoughtvec.bench.compute import server_plan
from thoughtvec.service.core.batcher import REFIT_EVERY, Batcher, BatchLimits
from thoughtvec.service.core.planner import RunCost

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


class Recording:
    """A model that records which sentences each run holds (sentence k's ids start with k); held at a gate."""

    def __init__(self) -> None:
        self.runs: list[list[int]] = []
        self.gate, self.entered = threading.Event(), threading.Event()

    def token_ids(self, text):
        raise AssertionError("the test queues token ids")

    def fit(self, ids, truncation="reject", field="input"):
        return ids

    def dim(self, view=None):
        return 2

    def run_ids(self, batch, view=None):
        self.entered.set()
        assert self.gate.wait(10)
        self.runs.append([s[0] for s in batch])
        return np.zeros((len(batch), 2), np.float32)


@pytest.mark.parametrize("cost", [None, RunCost(per_run=2e-3, per_step=1e-5, per_row_step=4e-5)], ids=["greedy", "cost"])
async def test_the_bench_cuts_a_backlog_as_the_server_worker_does(cost):
    """A backlog of sentences of random lengths queued while the worker is busy: the batches the worker runs
    are the bench's plan of the same lengths in the same order, window by window."""
    rng = random.Random(3)
    lengths = [rng.choice([rng.randint(1, 12), rng.randint(20, 90)]) for _ in range(300)]
    limits = BatchLimits(max_batch_size=16, max_batch_tokens=600, max_wait_ms=0)
    rec = Recording()
    b = Batcher("m", rec, limits)
    b.cost = cost
    b.start()
    first = asyncio.create_task(b.embed_ids([[-1]], "v"))  # keeps the worker busy while the backlog queues
    assert await asyncio.to_thread(rec.entered.wait, 10)
    backlog = [asyncio.create_task(b.embed_ids([[k] * n], "v")) for k, n in enumerate(lengths)]
    await asyncio.sleep(0.01)  # every request queued
    rec.gate.set()
    await asyncio.gather(first, *backlog)
    await b.stop()
    served = rec.runs[1:]
    assert len(served) < REFIT_EVERY or cost is None  # no refit moved the server's cost meanwhile
    assert served == server_plan(lengths, limits, cost)
    assert len(served) > 300 // 16  # the budget of padded tokens cut some runs short


def test_the_peak_graphs_run_for_every_int8_product_and_float():
    import onnxruntime as ort
    from onnx import TensorProto

    from thoughtvec.bench.peak import matmul_peak

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    for op in ("MatMulInteger", "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "QLinearMatMul", "MatMul"):
        assert matmul_peak(op, opts, n=32, repeats=1) > 0
    assert matmul_peak("MatMulInteger", opts, n=32, repeats=1, types=(TensorProto.INT8, TensorProto.INT8)) > 0


def test_a_graph_compared_with_itself_gives_the_same_vectors(models_dir):
    from thoughtvec.bench.compute import compare_graphs
    from thoughtvec.service.bundle.format import load_bundle

    bundle = models_dir / "tiny"
    out = compare_graphs(bundle, load_bundle(bundle).onnx_path, [f"the cat sat on mat number {i} ." for i in range(40)], 0.01, 1)
    assert "B against A: max |diff| 0.00e+00, least cosine 1.000000" in out
    assert re.search(r"graph alone, the server's plan, A: \d+ sentences/s\ngraph alone, the server's plan, B: \d+ sentences/s", out)
    assert re.search(r"B over A by round: x[\d.]+; median x[\d.]+", out)


def test_the_graph_as_served_runs_with_the_servers_flags(models_dir):
    from thoughtvec.bench.compute import measure_as_served

    texts = [f"the cat sat on mat number {i} ." for i in range(40)]
    out = measure_as_served(models_dir / "tiny", texts, 0.01, None, ["--max-batch-size", "4", "--batch-planning", "greedy"])
    assert "(windows of 16 in arrival order, at most 4 sentences / 8192 tokens a run; calibrated: greedy;" in out
    assert re.search(r"^operations: float [\d.]+ MFLOP per token", out, re.M)
