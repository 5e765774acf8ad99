"""Every accepted FAISS family end to end, quarantine instead of crash loops, and older IVF snapshots.

Each supported family is created, filled past training, searched, deleted from (before and after
training), replayed from its log, snapshotted and reloaded; after each step every kept document is
found by its own vector and no deleted one comes back. Factory strings that FAISS accepts but that
crash or misbehave are refused in ``test_errors.py``.
"""

from __future__ import annotations

import json

import faiss
import numpy as np
import pytest

from tests.service.conftest import serve_test, settings_for
from tests.service.index.stores import restart
from thoughtvec.service.index.contents import Doc, NewIndex
from thoughtvec.service.index.indexes import VectorIndex, new_config
from thoughtvec.service.index.store import SNAPSHOT, WAL_FILE, IndexStore
from thoughtvec.service.index.wal import encode_record

DIM = 8
N = 300
FAMILIES = ["Flat", "PQ8x4", "SQ8", "SQfp16", "HNSW8", "HNSW4,Flat", "IVF4,Flat", "IVF4,PQ8x4", "IVF4,SQ8", "IVF1,SQfp16", "PCA8,IVF4,Flat"]


def unit(n: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


X = unit(N, 0)


def docs(lo: int, hi: int) -> list[Doc]:
    return [Doc(f"d{i}", f"text {i}", {"i": i}) for i in range(lo, hi)]


def check(store: IndexStore, deleted: set[int], k: int = 3) -> None:
    """Every kept document is among the top k of its own vector; no deleted one is returned."""
    kept = [i for i in range(N) if i not in deleted]
    assert store.entry("x").index.count == len(kept)
    hits = store.search("x", X[kept], k)
    missing = [i for i, row in zip(kept, hits) if f"d{i}" not in [d.id for d, _ in row]]
    assert not missing, f"{len(missing)} kept documents not found by their own vector, e.g. {missing[:5]}"
    returned = {d.id for row in hits for d, _ in row}
    assert not returned & {f"d{i}" for i in deleted}
    assert all(len(row) == k for row in hits)


def reopen(died: IndexStore) -> IndexStore:
    """The store of the next start, the one that wrote the folder (``died``) having died or been closed."""
    store = restart(died)
    assert not store.quarantined, store.quarantined
    return store


@pytest.mark.parametrize("factory", FAMILIES)
def test_family_end_to_end(tmp_path, factory):
    store = IndexStore(tmp_path)
    store.create(new_config(NewIndex("x", "tiny", "mean", DIM, factory, train_size=200)))
    store.add("x", docs(0, 100), X[:100])
    store.delete("x", ["d0", "d1"])  # IVF/PQ/SQ: still in the untrained buffer
    deleted = {0, 1}
    store.add("x", docs(100, N), X[100:])
    assert store.entry("x").index.trained
    check(store, deleted)
    for batch in (range(10, 50), range(50, 110)):  # HNSW: the second one rebuilds the graph
        store.delete("x", [f"d{i}" for i in batch])
        deleted |= set(batch)
        check(store, deleted)
    store = reopen(store)  # no snapshot: everything comes back from the log
    check(store, deleted)
    store.close()  # snapshot
    store = reopen(store)
    check(store, deleted)
    store.delete("x", [f"d{i}" for i in range(200, 230)])  # after a snapshot, then replayed again
    deleted |= set(range(200, 230))
    check(reopen(store), deleted)


def test_hnsw_rebuild_drops_tombstones(tmp_path):
    store = IndexStore(tmp_path)
    store.create(new_config(NewIndex("x", "tiny", "mean", DIM, "HNSW16")))
    store.add("x", docs(0, N), X)
    store.delete("x", [f"d{i}" for i in range(100)])
    vi = store.entry("x").index
    assert not vi.tombstones and vi.index.ntotal == N - 100


def write_index_folder(root, name: str, factory: str) -> None:
    """An index folder as an older version wrote it, with a factory this version refuses."""
    snap = root / name / SNAPSHOT
    snap.mkdir(parents=True)
    config = {
        "name": name,
        "model": "tiny",
        "view": "mean",
        "dim": DIM,
        "factory": factory,
        "metric": "cosine",
        "normalize": True,
        "train_size": 0,
        "created": "",
    }
    state = {"documents": 0, "seq": 0, "next_label": 0, "tombstones": [], "pending_labels": []}
    (snap / "meta.json").write_text(json.dumps({"format_version": 1, "config": config, "state": state}))
    (snap / "index.faiss").write_bytes(b"never read")
    (snap / "docs.jsonl").write_text("")
    np.save(snap / "pending.npy", np.zeros((0, DIM), np.float32))
    (root / name / WAL_FILE).write_bytes(
        encode_record({"seq": 1, "op": "add", "labels": [0], "docs": [{"id": "a", "text": "t", "metadata": None}]}, unit(1, 1).tobytes())
    )


def test_a_crash_looping_index_is_quarantined_and_the_rest_serves(models_dir, tmp_path):
    """``HNSW1`` with a logged add killed the old server at every start; now only that index is out."""
    settings = settings_for(models_dir, tmp_path / "idx")
    with serve_test(settings) as c:
        c.post("/v1/indexes", json={"name": "good", "model": "tiny"})
        c.post("/v1/indexes/good/documents", json={"documents": [{"text": "the cat sat", "id": "a"}]})
    write_index_folder(tmp_path / "idx", "bad", "HNSW1")
    with serve_test(settings) as c:
        r = c.get("/v1/indexes/bad")
        assert r.status_code == 503
        err = r.json()["error"]
        assert (
            err["code"] == "index_unavailable"
            and err["field"] == "index"
            and "'bad' is quarantined" in err["message"]
            and "HNSW" in err["message"]
        )
        assert c.post("/v1/search", json={"index": "bad", "query": "cat"}).status_code == 503
        assert c.post("/v1/indexes/bad/documents", json={"documents": [{"text": "x"}]}).status_code == 503
        listing = c.get("/v1/indexes").json()
        assert [i["name"] for i in listing["data"]] == ["good"] and "bad" in listing["quarantined"]
        assert c.get("/ready").json()["indexes"]["bad"].startswith("quarantined")
        assert c.post("/v1/search", json={"index": "good", "query": "cat", "k": 1}).json()["results"][0][0]["id"] == "a"
        assert c.post("/v1/embeddings", json={"input": "cat"}).status_code == 200
        assert c.post("/v1/indexes", json={"name": "bad", "model": "tiny"}).status_code == 409
        assert c.delete("/v1/indexes/bad").status_code == 204  # the operator's way out
        assert c.post("/v1/indexes", json={"name": "bad", "model": "tiny"}).status_code == 201


def test_a_log_record_that_cannot_be_replayed_quarantines_its_index(tmp_path):
    store = IndexStore(tmp_path)
    for name in ("x", "y"):
        store.create(new_config(NewIndex(name, "tiny", "mean", DIM)))
        store.add(name, docs(0, 5), X[:5])
    with open(tmp_path / "x" / WAL_FILE, "ab") as f:  # a whole record (checksum fine) whose vectors do not fit
        f.write(encode_record({"seq": 2, "op": "add", "labels": [5], "docs": [{"id": "z", "text": "t", "metadata": None}]}, b"\0" * 12))
    s2 = restart(store)
    assert s2.names() == ["y"]
    assert "record 2 (add) cannot be replayed" in s2.quarantined["x"]
    assert len(s2.search("y", X[:1], 1)[0]) == 1


def test_a_write_that_cannot_be_applied_is_cut_off_the_log(tmp_path, monkeypatch):
    store = IndexStore(tmp_path)
    store.create(new_config(NewIndex("x", "tiny", "mean", DIM)))
    store.add("x", docs(0, 5), X[:5])

    real_add = VectorIndex.add
    calls = []

    def refuse_once(self, *a, **k):  # the reload that follows replays the log with the real add
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("FAISS said no")
        return real_add(self, *a, **k)

    monkeypatch.setattr(VectorIndex, "add", refuse_once)
    with pytest.raises(RuntimeError):
        store.add("x", docs(5, 8), X[5:8])
    monkeypatch.undo()
    assert set(store.entry("x").index.labels) == {f"d{i}" for i in range(5)}
    store.add("x", docs(8, 9), X[8:9])
    assert set(reopen(store).entry("x").index.labels) == {f"d{i}" for i in range(5)} | {"d8"}


def legacy_ivf(tmp_path, deletes: list[list[str]], adds_after: int = 0) -> None:
    """An IVF index snapshot as written before the fix: ``IndexIDMap2`` around the IVF."""
    config = new_config(NewIndex("x", "tiny", "mean", DIM, "IVF4,Flat", train_size=200))
    vi = VectorIndex(config, faiss.IndexIDMap2(faiss.index_factory(DIM, "IVF4,Flat", faiss.METRIC_INNER_PRODUCT)))
    vi.add(docs(0, 250), X[:250], list(range(250)))
    for ids in deletes:
        vi.docs = {lb: d for lb, d in vi.docs.items() if d.id not in ids}
        vi.labels = {i: lb for i, lb in vi.labels.items() if i not in ids}
        vi.index.remove_ids(np.asarray([int(i[1:]) for i in ids], np.int64))
    if adds_after:
        vi.add(docs(250, 250 + adds_after), X[250 : 250 + adds_after], list(range(250, 250 + adds_after)))
    vi.write_snapshot(tmp_path / "x" / SNAPSHOT)


def test_an_older_ivf_snapshot_is_converted(tmp_path):
    legacy_ivf(tmp_path, [["d3", "d4"]])  # one delete: the old code removed the right vectors then
    store = reopen(IndexStore(tmp_path))  # a store that never took the folder: nothing to let go of
    assert not isinstance(store.entry("x").index.index, faiss.IndexIDMap2)
    deleted = {3, 4} | set(range(250, N))
    check(store, deleted)
    store.delete("x", [f"d{i}" for i in range(10, 60)])
    check(reopen(store), deleted | set(range(10, 60)))


def test_an_older_ivf_snapshot_scrambled_by_a_delete_is_quarantined(tmp_path):
    legacy_ivf(tmp_path, [["d3"]], adds_after=5)  # the adds reused ordinals still in the lists
    store = IndexStore(tmp_path)
    assert store.load_all() == []
    assert "scrambled" in store.quarantined["x"]
