"""The BM25 half of a FAISS index: the same documents as its vectors after every add, delete, restart (from
the log alone, or from a snapshot), log compaction and drop, and in indexes written before it existed.

"The same" is checked against a fresh :class:`LexicalIndex` over the documents that should be there, in
the order they were added: same ids, same scores, same order of ties.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.service.index.stores import peek, restart
from thoughtvec.service.errors import UnknownIndex
from thoughtvec.service.index import lexical as lexical_module
from thoughtvec.service.index import store as store_module
from thoughtvec.service.index.contents import Doc, NewIndex
from thoughtvec.service.index.indexes import new_config
from thoughtvec.service.index.lexical import LexicalIndex
from thoughtvec.service.index.store import SNAPSHOT, WAL_FILE, IndexStore

DIM = 8
WORDS = "cat dog king river letter storm sea battle city house tree car book".split()
QUERIES = ["the cat and the dog", "a king in battle", "storm at sea", "river city house", "book"]


def vecs(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)


def docs(lo: int, hi: int) -> list[Doc]:
    """Documents of two or three words each, so queries share terms with several (ties included)."""
    return [Doc(f"d{i}", f"{WORDS[i % 13]} {WORDS[(3 * i) % 13]} {WORDS[(i * i) % 13]}", {"i": i}) for i in range(lo, hi)]


def new_store(root, wal_max_bytes: int = 64 * 2**20) -> IndexStore:
    store = IndexStore(root, wal_max_bytes=wal_max_bytes)
    store.create(new_config(NewIndex("x", "tiny", "mean", DIM, mode="hybrid")))
    return store


def reloaded(writer: IndexStore) -> IndexStore:
    """What the next start loads (the writer "died": nothing closed)."""
    store = restart(writer)
    assert store.names() == ["x"] and not store.quarantined, store.quarantined
    return store


def assert_lexical_is(store: IndexStore, expected: list[Doc]) -> None:
    """The store's BM25 answers are those of a fresh index over ``expected`` (in order), and its vectors hold the same ids."""
    fresh = LexicalIndex.from_documents((d.id, d.text) for d in expected)
    entry = store.entry("x")
    assert set(entry.index.labels) == {d.id for d in expected}
    assert len(entry.lexical) == len(expected) and all(d.id in entry.lexical for d in expected)
    for q in QUERIES:
        got = [(d.id, s) for d, s in store.lexical_search("x", [q], 50)[0]]
        want = fresh.search(q, 50)
        assert [i for i, _ in got] == [i for i, _ in want], q
        np.testing.assert_allclose([s for _, s in got], [s for _, s in want], rtol=1e-6)


def test_adds_and_deletes_reach_both_halves_and_survive_a_restart_from_the_log(tmp_path):
    store = new_store(tmp_path)
    store.add("x", docs(0, 20), vecs(20))
    store.delete("x", ["d3", "d7", "nope"])
    store.add("x", docs(20, 26), vecs(6, 1))
    store.delete("x", ["d21"])
    expected = [d for d in docs(0, 26) if d.id not in {"d3", "d7", "d21"}]
    assert_lexical_is(store, expected)
    hits = store.lexical_search("x", ["king"], 50)[0]
    assert hits and all("king" in d.text for d, _ in hits) and hits[0][0].metadata is not None  # documents as stored
    assert len((tmp_path / "x" / WAL_FILE).read_bytes()) > 0  # the writes are only in the log
    assert_lexical_is(reloaded(store), expected)


def test_snapshots_and_log_compaction_keep_both_halves(tmp_path):
    store = new_store(tmp_path, wal_max_bytes=300)  # most writes fold the log into a new snapshot
    for i in range(6):
        store.add("x", docs(4 * i, 4 * i + 4), vecs(4, i))
        store.delete("x", [f"d{4 * i + 1}"])
    expected = [d for d in docs(0, 24) if int(d.id[1:]) % 4 != 1]
    assert_lexical_is(store, expected)
    assert_lexical_is(peek(store), expected)  # what a start now would load, while the writer goes on
    store.close()  # a clean shutdown: everything in the snapshot, the log empty
    assert (tmp_path / "x" / WAL_FILE).stat().st_size == 0
    again = reloaded(store)
    assert_lexical_is(again, expected)
    again.add("x", docs(30, 32), vecs(2, 9))  # and it goes on taking writes after the restart
    assert_lexical_is(again, expected + docs(30, 32))


def test_an_index_written_before_the_lexical_half_loads_with_it(tmp_path):
    """A snapshot and a log as the store wrote them before modes: no ``mode`` in the config. It loads as a
    dense index whose BM25 half is built from the snapshot's and the log's documents."""
    store = new_store(tmp_path)
    store.add("x", docs(0, 10), vecs(10))
    store.close()
    store = reloaded(store)
    store.add("x", docs(10, 14), vecs(4, 1))  # these only in the log
    store.delete("x", ["d2", "d12"])
    meta_path = tmp_path / "x" / SNAPSHOT / "meta.json"
    meta = json.loads(meta_path.read_text())
    del meta["config"]["mode"]
    meta_path.write_text(json.dumps(meta))
    old = reloaded(store)
    assert old.config("x").mode == "dense"
    assert_lexical_is(old, [d for d in docs(0, 14) if d.id not in {"d2", "d12"}])


def test_a_lexical_half_that_fails_to_apply_refuses_the_write_and_changes_neither_half(tmp_path, monkeypatch):
    store = new_store(tmp_path)
    store.add("x", docs(0, 5), vecs(5))
    real_add, calls = LexicalIndex.add, []

    def fails_once(self, ids, texts):  # the next call (the reload) works
        calls.append(ids)
        if len(calls) == 1:
            raise RuntimeError("lexical add failed (simulated)")
        return real_add(self, ids, texts)

    monkeypatch.setattr(lexical_module.LexicalIndex, "add", fails_once)
    with pytest.raises(RuntimeError, match="simulated"):
        store.add("x", docs(5, 8), vecs(3, 1))  # logged, the vectors added, then the BM25 half failed
    monkeypatch.undo()
    assert not store.quarantined and len(calls) > 1
    assert_lexical_is(store, docs(0, 5))  # the record was cut off the log and both halves reloaded without it
    assert_lexical_is(peek(store), docs(0, 5))
    store.add("x", docs(5, 8), vecs(3, 1))
    assert_lexical_is(reloaded(store), docs(0, 8))


def test_a_drop_takes_the_lexical_half_with_it(tmp_path):
    store = new_store(tmp_path)
    store.add("x", docs(0, 5), vecs(5))
    store.drop("x")
    with pytest.raises(UnknownIndex):
        store.lexical_search("x", ["cat"], 5)
    store.create(new_config(NewIndex("x", "tiny", "mean", DIM)))
    assert store.lexical_search("x", ["cat dog king"], 5) == [[]]  # the same name, new and empty


def test_a_start_reads_the_snapshots_bm25_half_and_replays_the_log_into_it(tmp_path, monkeypatch):
    store = new_store(tmp_path)
    store.add("x", docs(0, 20), vecs(20))
    store.delete("x", ["d4"])
    store.close()  # the snapshot holds both halves
    assert (tmp_path / "x" / SNAPSHOT / lexical_module.LEXICAL_FILE).is_file()
    store = reloaded(store)
    store.add("x", docs(20, 24), vecs(4, 1))  # these only in the log
    store.delete("x", ["d21", "d6"])
    monkeypatch.setattr(store_module, "lexical_of", lambda *a, **k: pytest.fail("the BM25 half was analysed again"))
    again = reloaded(store)
    assert_lexical_is(again, [d for d in docs(0, 24) if d.id not in {"d4", "d21", "d6"}])


def test_a_snapshots_bm25_half_made_with_another_analyser_is_made_again(tmp_path):
    store = new_store(tmp_path)
    store.add("x", docs(0, 12), vecs(12))
    store.close()
    other = lexical_module.Analyzer(stemmer=None, stopwords=None)
    loaded = IndexStore(tmp_path, analyzer=other)
    loaded.load_all()
    assert loaded.entry("x").lexical.analyzer == other
    fresh = LexicalIndex.from_documents(((d.id, d.text) for d in docs(0, 12)), other)
    assert [(d.id, s) for d, s in loaded.lexical_search("x", ["the cats"], 20)[0]] == fresh.search("the cats", 20)
    loaded.close()


def test_a_bulk_builds_store_makes_the_bm25_half_once_at_close(tmp_path, monkeypatch):
    bulk = IndexStore(tmp_path, lexical=False)
    bulk.create(new_config(NewIndex("x", "tiny", "mean", DIM, mode="hybrid")))
    bulk.add("x", docs(0, 15), vecs(15))
    assert bulk.entry("x").lexical is None
    bulk.close()
    assert (tmp_path / "x" / SNAPSHOT / lexical_module.LEXICAL_FILE).is_file()
    monkeypatch.setattr(store_module, "lexical_of", lambda *a, **k: pytest.fail("the BM25 half was analysed again"))
    server = IndexStore(tmp_path)
    server.load_all()
    assert_lexical_is(server, docs(0, 15))
    server.close()


def test_a_bulk_build_that_adds_to_an_index_leaves_its_bm25_half_whole(tmp_path, monkeypatch):
    """A build run again (after Ctrl-C or kill -9) adds to the snapshot it left: at its close the BM25 half is made of
    every document, so that neither a server's start nor the next build, even one refused, analyses them again."""
    first = IndexStore(tmp_path, lexical=False)
    first.create(new_config(NewIndex("x", "tiny", "mean", DIM, mode="hybrid")))
    first.add("x", docs(0, 10), vecs(10))
    first.close()  # the snapshot holds its BM25 half of 10
    again = IndexStore(tmp_path, lexical=False)
    again.load_all()
    again.add("x", docs(10, 18), vecs(8, 1))
    again.close()
    monkeypatch.setattr(store_module, "lexical_of", lambda *a, **k: pytest.fail("the BM25 half was analysed again"))
    untouched = IndexStore(tmp_path, lexical=False)  # a build that writes nothing: no work at its close
    untouched.load_all()
    untouched.close()
    server = IndexStore(tmp_path)
    server.load_all()
    assert_lexical_is(server, docs(0, 18))
    server.close()
