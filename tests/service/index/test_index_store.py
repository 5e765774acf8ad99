"""Index persistence: acknowledged writes survive a restart; a crash mid-write leaves the previous state."""

from __future__ import annotations

import numpy as np
import pytest

from tests.service.conftest import SENTENCES, serve_test, settings_for
from tests.service.index.stores import crash
from thoughtvec.service.index import indexes
from thoughtvec.service.index.contents import Doc, NewIndex
from thoughtvec.service.index.indexes import new_config
from thoughtvec.service.index.store import SNAPSHOT, WAL_FILE, IndexStore
from thoughtvec.service.index.wal import encode_record, read_records

DIM = 8


def vecs(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)


def docs(n: int, start: int = 0) -> list[Doc]:
    return [Doc(f"d{i}", f"text {i}", {"i": i}) for i in range(start, start + n)]


def new_store(root, factory="Flat", wal_mb=64) -> IndexStore:
    store = IndexStore(root, wal_max_bytes=wal_mb * 2**20)
    store.create(new_config(NewIndex("x", "tiny", "mean", DIM, factory)))
    return store


def ids_after_reload(root, died: IndexStore | None = None) -> set[str]:
    """The ids the next process finds, the one that used ``root`` (``died``) having died: nothing closed or folded."""
    if died is not None:
        crash(died)
    store = IndexStore(root)
    store.load_all()
    ids = set(store.entry("x").index.labels)
    crash(store)  # dropped, as the previous one was
    return ids


def test_acknowledged_adds_and_deletes_survive_a_restart_without_shutdown(tmp_path):
    store = new_store(tmp_path)
    store.add("x", docs(5), vecs(5))
    store.add("x", docs(3, 5), vecs(3, 1))
    store.delete("x", ["d1"])
    crash(store)  # no close(): the process "dies" here; only the log holds the writes
    assert len(read_records(tmp_path / "x" / WAL_FILE)[0]) == 3
    reloaded = IndexStore(tmp_path)
    reloaded.load_all()
    vi = reloaded.entry("x").index
    assert set(vi.labels) == {f"d{i}" for i in range(8)} - {"d1"}
    hits = reloaded.search("x", vecs(5)[2:3], 1)
    assert hits[0][0][0].id == "d2" and hits[0][0][0].metadata == {"i": 2}
    reloaded.add("x", docs(1, 8), vecs(1, 2))  # labels continue after the replayed ones
    assert reloaded.entry("x").index.labels["d8"] == 8


def test_torn_log_tail_is_cut_and_the_rest_loads(tmp_path):
    store = new_store(tmp_path)
    store.add("x", docs(4), vecs(4))
    wal = tmp_path / "x" / WAL_FILE
    whole = encode_record(
        {"seq": 2, "op": "add", "labels": [4], "docs": [{"id": "torn", "text": "t", "metadata": None}]}, vecs(1).tobytes()
    )
    with open(wal, "ab") as f:
        f.write(whole[: len(whole) // 2])  # the crash came mid-write
    assert ids_after_reload(tmp_path, died=store) == {"d0", "d1", "d2", "d3"}
    store2 = IndexStore(tmp_path)
    store2.load_all()
    store2.add("x", docs(1, 4), vecs(1))  # appends after the cut, not after the garbage
    assert ids_after_reload(tmp_path, died=store2) == {f"d{i}" for i in range(5)}


def test_crash_while_writing_a_snapshot_keeps_the_previous_one(tmp_path, monkeypatch):
    store = new_store(tmp_path)
    store.add("x", docs(3), vecs(3))
    store.close()  # snapshot with 3 docs, log empty
    store = IndexStore(tmp_path)
    store.load_all()
    store.add("x", docs(2, 3), vecs(2))

    def crash(*a, **k):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(indexes.np, "save", crash)
    with pytest.raises(OSError):
        store.compact_entry(store.entry("x"))
    monkeypatch.undo()
    assert not list((tmp_path / "x").glob(f".{SNAPSHOT}.*"))  # the half-written folder was removed
    assert ids_after_reload(tmp_path, died=store) == {f"d{i}" for i in range(5)}  # old snapshot + the log


def test_crash_between_the_two_renames_is_recovered(tmp_path):
    store = new_store(tmp_path)
    store.add("x", docs(3), vecs(3))
    store.close()
    snap = tmp_path / "x" / SNAPSHOT
    snap.rename(tmp_path / "x" / f".{SNAPSHOT}.old-abc")  # old moved aside, new never renamed in
    assert ids_after_reload(tmp_path) == {"d0", "d1", "d2"}


def test_log_compaction_and_replay_skip_records_already_in_the_snapshot(tmp_path):
    store = new_store(tmp_path)
    store.wal_max_bytes = 100  # every add folds the log into a new snapshot
    for i in range(4):
        store.add("x", docs(2, 2 * i), vecs(2, i))
    assert (tmp_path / "x" / WAL_FILE).stat().st_size == 0
    # a crash after the snapshot but before the log reset: the old records must not apply twice
    wal = tmp_path / "x" / WAL_FILE
    wal.write_bytes(
        encode_record(
            {"seq": 1, "op": "add", "labels": [0, 1], "docs": [{"id": "d0", "text": "", "metadata": None}] * 2}, vecs(2).tobytes()
        )
    )
    assert ids_after_reload(tmp_path, died=store) == {f"d{i}" for i in range(8)}


def test_hnsw_delete_uses_tombstones_that_persist(tmp_path):
    store = new_store(tmp_path, "HNSW16")
    x = vecs(20)
    store.add("x", docs(20), x)
    store.delete("x", ["d5"])
    store.close()
    s2 = IndexStore(tmp_path)
    s2.load_all()
    assert s2.entry("x").index.tombstones == {5}
    hits = s2.search("x", x[5:6], 3)[0]
    assert "d5" not in [d.id for d, _ in hits] and len(hits) == 3


def test_unloadable_index_is_skipped_not_fatal(tmp_path):
    store = new_store(tmp_path)
    store.close()
    (tmp_path / "broken" / SNAPSHOT).mkdir(parents=True)
    (tmp_path / "broken" / SNAPSHOT / "meta.json").write_text("{not json")
    s2 = IndexStore(tmp_path)
    assert s2.load_all() == ["x"]


def test_add_over_http_survives_a_restart(models_dir, tmp_path):
    settings = settings_for(models_dir, tmp_path / "idx")
    with serve_test(settings) as c:
        c.post("/v1/indexes", json={"name": "docs", "model": "tiny"})
        r = c.post("/v1/indexes/docs/documents", json={"documents": [{"text": s, "id": str(i)} for i, s in enumerate(SENTENCES)]})
        assert r.status_code == 200
        # simulate a crash: the lifespan's clean shutdown would fold the log into a snapshot
        store = c.app.state.core.indexes.store
        store.close = lambda: crash(store)
    with serve_test(settings) as c:
        assert c.get("/v1/indexes/docs").json()["documents"] == len(SENTENCES)
        top = c.post("/v1/search", json={"index": "docs", "query": SENTENCES[4], "k": 1}).json()["results"][0][0]
        assert top["id"] == "4"


def test_unwritable_storage_is_a_typed_503_and_changes_nothing(models_dir, tmp_path, monkeypatch):
    """A read-only replica (or a full disk) refuses writes with a JSON 503 naming the cause; reads go on."""
    from thoughtvec.service.index.wal import Wal

    settings = settings_for(models_dir, tmp_path / "idx")
    with serve_test(settings) as c:
        c.post("/v1/indexes", json={"name": "docs", "model": "tiny"})
        c.post("/v1/indexes/docs/documents", json={"documents": [{"text": SENTENCES[0], "id": "a"}]})

        def read_only(*_a, **_k):
            raise OSError(30, "Read-only file system", str(tmp_path / "idx" / "docs" / WAL_FILE))

        monkeypatch.setattr(Wal, "append", read_only)
        r = c.post("/v1/indexes/docs/documents", json={"documents": [{"text": SENTENCES[1], "id": "b"}]})
        assert r.status_code == 503
        err = r.json()["error"]
        assert err["code"] == "storage_unavailable" and "Read-only file system" in err["message"] and err["field"] == "index"
        r = c.post("/v1/indexes/docs/documents/delete", json={"ids": ["a"]})
        assert r.status_code == 503
        assert c.get("/v1/indexes/docs").json()["documents"] == 1  # nothing applied in memory
        assert c.post("/v1/search", json={"index": "docs", "query": "cat", "k": 1}).status_code == 200


def test_two_concurrent_creates_of_one_name_one_wins(tmp_path, monkeypatch):
    import threading

    from thoughtvec.service.errors import Conflict
    from thoughtvec.service.index.indexes import VectorIndex

    slow_write = VectorIndex.write_snapshot

    def slow(self, folder, lexical=None):  # widen the window between the check and the snapshot being there
        import time

        time.sleep(0.3)
        slow_write(self, folder, lexical)

    monkeypatch.setattr(VectorIndex, "write_snapshot", slow)
    store = IndexStore(tmp_path)
    results: list[str] = []

    def create():
        try:
            store.create(new_config(NewIndex("x", "tiny", "mean", DIM)))
            results.append("created")
        except Conflict:
            results.append("conflict")

    threads = [threading.Thread(target=create) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["conflict", "created"]
