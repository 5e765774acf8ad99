"""The GPU FAISS path, run on the CPU: a fake "GPU" that is a CPU clone which, like GPU FAISS, cannot remove ids.

What is checked is the bookkeeping around the copy (adds reach it, deletes and training make it be
copied again, snapshots come from the CPU index, HNSW and large k stay on the CPU), not GPU FAISS
itself: that needs faiss-gpu-cu12 on a GPU machine (docker/Dockerfile.gpu).
"""

from __future__ import annotations

import faiss
import numpy as np
import pytest

from tests.service.index.stores import crash
from thoughtvec.service.index import indexes
from thoughtvec.service.index.contents import Doc, NewIndex
from thoughtvec.service.index.indexes import VectorIndex, new_config
from thoughtvec.service.index.store import IndexStore

DIM = 8


class FakeGpu:
    """Stands in for faiss.index_cpu_to_all_gpus; counts copies."""

    def __init__(self) -> None:
        self.copies = 0

    def __call__(self, index: faiss.Index) -> faiss.Index:
        inner = faiss.downcast_index(index.index) if isinstance(index, faiss.IndexIDMap2) else index  # IVF: no map
        if isinstance(inner, faiss.IndexHNSWFlat):
            raise RuntimeError("Error in ... : This index type is not implemented on GPU.")
        self.copies += 1
        copy = faiss.clone_index(index)

        def no_remove(*_args):  # GPU indexes cannot remove ids
            raise RuntimeError("remove_ids not implemented for this type of index")

        copy.remove_ids = no_remove
        return copy


@pytest.fixture
def gpu(monkeypatch) -> FakeGpu:
    fake = FakeGpu()
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 1)
    monkeypatch.setattr(faiss, "index_cpu_to_all_gpus", fake)
    monkeypatch.setattr(indexes, "gpu_kernels_run", lambda: True)  # the child-process probe would find no GPU here
    return fake


def vecs(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)


def docs(n: int, start: int = 0) -> list[Doc]:
    return [Doc(f"d{i}", f"text {i}") for i in range(start, start + n)]


def top_ids(vi: VectorIndex, q: np.ndarray, k: int = 3) -> list[str]:
    return [d.id for d, _ in vi.search(q, k)[0]]


def test_without_a_gpu_nothing_moves(monkeypatch):
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 0)  # as faiss-cpu says, and GPU FAISS on a machine without a GPU
    vi = VectorIndex(new_config(NewIndex("x", "tiny", "mean", DIM)))
    assert indexes.gpu_count() == 0 and vi.use_gpu() is False and vi.stats().backend["gpu"] is False


def test_flat_index_searches_on_the_gpu_copy_with_the_cpu_results(gpu):
    cpu = VectorIndex(new_config(NewIndex("x", "tiny", "mean", DIM)))
    on_gpu = VectorIndex(new_config(NewIndex("x", "tiny", "mean", DIM)))
    assert on_gpu.use_gpu() and on_gpu.stats().backend["gpu"] is True
    for vi in (cpu, on_gpu):
        vi.add(docs(20), vecs(20), list(range(20)))
    q = vecs(20)[5:6]
    assert top_ids(on_gpu, q) == top_ids(cpu, q) and top_ids(on_gpu, q)[0] == "d5"
    assert gpu.copies == 1  # adds went to the copy too: no second copy
    assert on_gpu.gpu_index.ntotal == on_gpu.index.ntotal == 20


def test_delete_and_training_remake_the_copy(gpu):
    vi = VectorIndex(new_config(NewIndex("x", "tiny", "mean", DIM)))
    vi.use_gpu()
    vi.add(docs(10), vecs(10), list(range(10)))
    assert vi.delete(["d3"]) == ["d3"] and vi.gpu_stale
    assert "d3" not in top_ids(vi, vecs(10)[3:4], 10) and gpu.copies == 2 and not vi.gpu_stale
    assert vi.gpu_index.ntotal == 9 and not vi.tombstones

    ivf = VectorIndex(new_config(NewIndex("y", "tiny", "mean", DIM, "IVF4,Flat", train_size=200)))
    ivf.use_gpu()
    ivf.add(docs(200), vecs(200, 1), list(range(200)))  # trains on the CPU index
    assert ivf.trained and ivf.gpu_stale
    assert top_ids(ivf, vecs(200, 1)[7:8], 1) == ["d7"] and gpu.copies == 4


def test_hnsw_and_large_k_stay_on_the_cpu(gpu):
    hnsw = VectorIndex(new_config(NewIndex("h", "tiny", "mean", DIM, "HNSW8")))
    assert hnsw.use_gpu() is False and hnsw.stats().backend["gpu"] is False
    vi = VectorIndex(new_config(NewIndex("x", "tiny", "mean", DIM)))
    vi.use_gpu()
    vi.add(docs(5), vecs(5), list(range(5)))
    assert vi._searcher(indexes.GPU_MAX_K + 1) is vi.index
    assert vi._searcher(5) is vi.gpu_index


def test_store_puts_served_indexes_on_the_gpu_and_snapshots_from_the_cpu(gpu, tmp_path):
    store = IndexStore(tmp_path, gpu=True)
    store.create(new_config(NewIndex("x", "tiny", "mean", DIM)))
    store.add("x", docs(6), vecs(6))
    store.delete("x", ["d0"])
    assert store.stats("x").backend["gpu"] is True
    store.close()
    again = IndexStore(tmp_path, gpu=True)
    again.load_all()
    assert set(again.entry("x").index.labels) == {f"d{i}" for i in range(1, 6)}
    assert again.entry("x").index.on_gpu
    crash(again)
    assert IndexStore(tmp_path).load_all() == ["x"]  # gpu=False (prefer_cuda off): stays on the CPU


# -- a FAISS whose GPU code cannot run on the visible GPU ---------------------------------------


@pytest.fixture
def probe(monkeypatch):
    """gpu_kernels_run's probe replaced by a script, its cache cleared before and after."""

    def use(script: str) -> None:
        monkeypatch.setattr(indexes, "GPU_PROBE", script)
        indexes.gpu_kernels_run.cache_clear()

    use.real = indexes.GPU_PROBE  # type: ignore[attr-defined]
    yield use
    indexes.gpu_kernels_run.cache_clear()


def test_a_gpu_whose_faiss_kernels_do_not_run_is_not_used(monkeypatch, probe, caplog):
    # PyPI's faiss-gpu-cu12 has no code for an H100: its first GPU kernel aborts the process (CUDA error 209)
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 1)
    monkeypatch.setattr(faiss, "index_cpu_to_all_gpus", FakeGpu())
    probe("import os; os.abort()")
    with caplog.at_level("WARNING"):
        assert indexes.gpu_count() == 0
        vi = VectorIndex(new_config(NewIndex("a", "tiny", "mean", DIM)))
        assert vi.use_gpu() is False and not vi.on_gpu
    assert sum("FAISS's GPU code does not run here" in r.getMessage() for r in caplog.records) == 1  # probed once


def test_the_probe_passes_where_its_script_runs_and_fails_where_it_cannot_start(monkeypatch, probe):
    real_gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 2)
    probe("pass")
    assert indexes.gpu_count() == 2
    probe("raise SystemExit(3)")
    assert indexes.gpu_count() == 0
    probe(probe.real)  # the real one: runs where GPU FAISS has a GPU it has code for; fails elsewhere, and says why
    assert indexes.gpu_kernels_run() is (real_gpus > 0)
