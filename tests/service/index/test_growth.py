"""An index made without a named factory starts exact and is rebuilt as an approximate one past a size, serving."""

from __future__ import annotations

import json
import threading

import numpy as np

from tests.service.index.stores import crash
from thoughtvec.service.index.contents import Doc, NewIndex
from thoughtvec.service.index.indexes import GROWTH, Growth, new_config
from thoughtvec.service.index.store import SNAPSHOT, WAL_FILE, IndexStore

DIM = 8
SMALL = Growth(scan_bytes=300 * 4 * DIM, factory="HNSW16")  # 300 documents of DIM floats


def vecs(n: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def docs(n: int, start: int = 0) -> list[Doc]:
    return [Doc(f"d{i}", f"text {i}") for i in range(start, start + n)]


def grown_store(root, growth: Growth = SMALL) -> IndexStore:
    store = IndexStore(root)
    store.create(new_config(NewIndex("x", "tiny", "mean", DIM), growth))
    return store


def wait_grown(store: IndexStore) -> None:
    thread = store.entry("x").growing
    if thread is not None:
        thread.join(60)
    assert store.entry("x").growing is None


def top1(store: IndexStore, x: np.ndarray) -> list[str]:
    return [row[0][0].id for row in store.search("x", x, 1)]


def snapshot_factory(root) -> str:
    return json.loads((root / "x" / SNAPSHOT / "meta.json").read_text())["config"]["factory"]


def test_the_size_at_which_an_index_grows_falls_as_its_vectors_widen():
    assert Growth(scan_bytes=4096, factory="HNSW32").at(256) == 4 and Growth(scan_bytes=4096, factory="HNSW32").at(1000) == 2
    assert GROWTH.at(384) < GROWTH.at(256) and GROWTH.at(10**9) == 1


def test_a_new_index_without_a_factory_starts_flat_and_says_where_it_grows():
    config = new_config(NewIndex("x", "tiny", "mean", DIM))
    assert (config.factory, config.grow_at, config.grow_factory) == ("Flat", GROWTH.at(DIM), GROWTH.factory)
    named = new_config(NewIndex("x", "tiny", "mean", DIM, factory="Flat"))
    assert (named.factory, named.grow_at, named.grow_factory) == ("Flat", 0, "")  # named: it keeps it
    lexical = new_config(NewIndex("x", "tiny", "mean", DIM, embedded=False))
    assert lexical.grow_at == 0  # a lexical-only index holds no vectors to rebuild


def test_the_index_grows_at_its_size_and_every_document_is_found_as_before(tmp_path):
    store = grown_store(tmp_path)
    x = vecs(400)
    store.add("x", docs(200), x[:200])
    assert store.entry("x").growing is None and store.config("x").factory == "Flat"
    assert store.stats("x").backend["grows"] == {"at": 300, "to": "HNSW16"}
    store.add("x", docs(200, 200), x[200:])  # past 300: the rebuild starts on its own thread
    wait_grown(store)
    config = store.config("x")
    assert (config.factory, config.grow_at, config.grow_factory) == ("HNSW16", 0, "")
    assert store.stats("x").backend["grows"] is None
    assert top1(store, x) == [f"d{i}" for i in range(400)]
    assert snapshot_factory(tmp_path) == "HNSW16" and (tmp_path / "x" / WAL_FILE).stat().st_size == 0
    store.add("x", docs(10, 400), vecs(10, 1))  # the grown index takes adds as any HNSW index
    assert top1(store, vecs(10, 1)) == [f"d{i}" for i in range(400, 410)]
    store.close()


def test_writes_while_it_grows_are_in_the_grown_index(tmp_path):
    """Adds and deletes that land while the new index is built from the copy are caught up before it takes over."""
    store = grown_store(tmp_path, Growth(scan_bytes=2**40, factory="HNSW16"))  # grown by hand below, not by the adds
    x = vecs(5000)
    store.add("x", docs(3000), x[:3000])
    e = store.entry("x")
    vi = e.index
    vi.config = vi.config.model_copy(update={"grow_at": 3000})
    prepare = vi.prepare
    calls = []

    def meanwhile(v):  # the first prepare is the copy's, outside the lock: another thread writes then
        if not calls:
            calls.append(1)
            writer = threading.Thread(target=lambda: (store.add("x", docs(2000, 3000), x[3000:]), store.delete("x", ["d5", "d3100"])))
            writer.start()
            writer.join()
        return prepare(v)

    vi.prepare = meanwhile
    e.growing = threading.current_thread()  # as _maybe_grow marks it: the writer's adds start no second rebuild
    assert store.grow(e, last_round=100) is True
    vi.prepare = prepare
    assert store.config("x").factory == "HNSW16" and store.count("x") == 4998
    found = top1(store, x)
    assert found[5] != "d5" and found[3100] != "d3100"  # the deleted ones hidden
    assert sum(f == f"d{i}" for i, f in enumerate(found)) == 4998
    store.close()
    reloaded = IndexStore(tmp_path)
    reloaded.load_all()
    assert reloaded.config("x").factory == "HNSW16" and reloaded.count("x") == 4998
    assert top1(reloaded, x[:10]) == [f"d{i}" if i != 5 else top1(reloaded, x[5:6])[0] for i in range(10)]
    reloaded.close()


def test_a_process_stopped_before_the_grown_snapshot_grows_again_at_load(tmp_path):
    store = grown_store(tmp_path)
    store.grow = lambda e, last_round=4096: False  # this process never grows it (as if it died first)
    x = vecs(350)
    store.add("x", docs(350), x)
    crash(store)
    assert snapshot_factory(tmp_path) == "Flat"
    reloaded = IndexStore(tmp_path)
    reloaded.load_all()  # loaded past its size: it grows, serving meanwhile
    wait_grown(reloaded)
    assert reloaded.config("x").factory == "HNSW16"
    assert top1(reloaded, x) == [f"d{i}" for i in range(350)]
    reloaded.close()


def test_close_waits_for_the_rebuild_and_keeps_it(tmp_path):
    store = grown_store(tmp_path)
    store.add("x", docs(350), vecs(350))
    store.close()
    assert snapshot_factory(tmp_path) == "HNSW16"


def test_a_read_only_process_never_grows_an_index(tmp_path):
    store = grown_store(tmp_path)
    store.grow = lambda e, last_round=4096: False
    store.add("x", docs(350), vecs(350))
    crash(store)
    reader = IndexStore(tmp_path, read_only="read-only here")
    reader.load_all()
    assert reader.entry("x").growing is None and reader.config("x").factory == "Flat"
    reader.close()
