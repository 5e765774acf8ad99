"""One suite over every index backend: FAISS, Milvus Lite, a Milvus standalone server.

The same HTTP calls must give the same answers (codes, ids, texts, metadata, scores) whichever
backend holds the index; where a backend cannot do something (Milvus has no index for ``SQ8``
alone) the answer is a 422 naming the field, never a 500.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from tests.service.conftest import SENTENCES, write_sample
from tests.service.index.milvus_support import need
from thoughtvec.service.index.backend import IndexBackend, MilvusOptions, open_store
from thoughtvec.service.index.contents import Doc, NewIndex
from thoughtvec.service.settings import SEARCH_MODES

HOSTILE_IDS = ['a"b', "c\\d", "e\nf", "ü✓ 𝄞", "x'y] or id != \"", "\x01", "  "]
METADATA = [None, {}, {"n": 2**70, "f": 0.1, "s": "ü", "nested": {"a": [1, None, True]}}, {"k": 1.0}, {"tag": "x"}, None, {"z": -1}]


def fill(c, name: str = "docs", **create) -> None:
    """An index of SENTENCES under HOSTILE_IDS, searched by vector unless ``create`` names another mode."""
    assert c.post("/v1/indexes", json={"name": name, "model": "tiny", "mode": "dense"} | create).status_code == 201
    docs = [{"id": i, "text": s, "metadata": m} for i, s, m in zip(HOSTILE_IDS, SENTENCES, METADATA)]
    r = c.post(f"/v1/indexes/{name}/documents", json={"documents": docs})
    assert r.status_code == 200, r.text
    assert r.json()["ids"] == HOSTILE_IDS and r.json()["documents"] == len(SENTENCES)


def test_the_store_classes_share_one_interface(tmp_path):
    assert isinstance(open_store("faiss", index_dir=tmp_path), IndexBackend)
    need("pymilvus")
    assert isinstance(open_store("milvus", index_dir=tmp_path, milvus=MilvusOptions(str(tmp_path / "m.db"))), IndexBackend)


def test_the_interface_speaks_no_backend_s_types():
    """What the core hands a store and gets back is plain data: nothing of FAISS, so a store needs none of it."""
    import typing

    for name in [n for n in dir(IndexBackend) if not n.startswith("_")]:
        member = getattr(IndexBackend, name)
        for hint in typing.get_type_hints(member.fget if isinstance(member, property) else member).values():
            for t in (hint, *typing.get_args(hint)):
                assert getattr(t, "__module__", "").split(".")[0] != "faiss", (name, t)
                assert getattr(t, "__module__", "") != "thoughtvec.service.index.indexes", f"{name} takes {t} (FAISS's side)"
    from tests.test_layers import imports

    for module in ("thoughtvec.service.index.contents", "thoughtvec.service.index.milvus", "thoughtvec.service.index.milvus_schema"):
        imported = {t for t, _ in imports(module)}
        faiss_side = {"faiss", "thoughtvec.service.index.indexes", "thoughtvec.service.index.store", "thoughtvec.service.index.factory"}
        assert not faiss_side & imported, module


def test_a_backend_s_own_stats_reach_the_http_answer_flat(tmp_path):
    """What a backend keeps of an index beside the neutral stats (``IndexStats.backend``: FAISS's training, log and
    GPU) is a field of the HTTP answer each; a backend without that state (Milvus) reads as trained, nothing pending."""
    import dataclasses

    from thoughtvec.service.http.schemas import IndexStats as Answer

    store = open_store("faiss", index_dir=tmp_path)
    store.create(store.new_config(NewIndex("x", "tiny", "mean", 8, "IVF2,Flat", train_size=4)))
    store.add("x", [Doc("a", "a cat sat")], np.eye(1, 8, dtype=np.float32))
    stats = store.stats("x")
    for s in (stats, *store.inventory()):
        assert s.backend and set(s.backend) <= set(Answer.model_fields), s.backend
    answer = Answer.of(stats)
    assert (answer.documents, answer.trained, answer.pending_training, answer.gpu) == (1, False, 1, False) and answer.wal_bytes > 0
    bare = Answer.of(dataclasses.replace(stats, backend={}))
    assert (bare.trained, bare.pending_training, bare.train_error, bare.wal_bytes, bare.gpu) == (True, 0, None, 0, False)
    store.close()


def test_both_backends_implement_the_contract():
    """Every member of ``IndexBackend`` exists on both stores, with the contract's parameters (checked without a
    Milvus: the classes, not instances), and each backend's capabilities say what it serves."""
    import inspect

    from thoughtvec.service.index.milvus import MilvusStore
    from thoughtvec.service.index.store import IndexStore

    members = [n for n in dir(IndexBackend) if not n.startswith("_") or n == "__contains__"]
    members = [n for n in members if n not in ("__dict__", "__doc__", "__module__", "__weakref__")]
    assert {"capabilities", "quarantined", "new_config", "inventory", "stats", "search"} <= set(members)
    for store in (IndexStore, MilvusStore):
        for name in members:
            want = getattr(IndexBackend, name)
            if isinstance(want, property):
                continue  # an attribute or a property: checked on instances below
            got = getattr(store, name, None)
            assert callable(got), f"{store.__name__} has no {name}"
            assert list(inspect.signature(got).parameters) == list(inspect.signature(want).parameters), (store.__name__, name)
    faiss_store = IndexStore(Path("/nonexistent-index-dir"))
    assert isinstance(faiss_store, IndexBackend) and faiss_store.capabilities.modes == SEARCH_MODES
    assert faiss_store.capabilities.backend == "faiss" and not faiss_store.capabilities.shared and faiss_store.inventory() == []
    milvus_store = MilvusStore(MilvusOptions("unused.db"))  # connects only at its first call
    assert isinstance(milvus_store, IndexBackend) and milvus_store.capabilities.modes == SEARCH_MODES and milvus_store.capabilities.shared


def test_backends_are_named_once():
    """The backend names: the one definition, which the setting, the CLI and open_store all use."""
    import argparse

    from thoughtvec.service.cli import register
    from thoughtvec.service.index.backend import OPENERS
    from thoughtvec.service.settings import IndexBackendName, Settings

    names = [b.value for b in IndexBackendName]
    assert names == ["faiss", "milvus"] and sorted(OPENERS) == sorted(names)
    assert Settings(index_backend="milvus").index_backend is IndexBackendName.milvus
    assert all(f"`{n}`" in (Settings.model_fields["index_backend"].description or "") for n in names)
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    index_commands = next(a for a in parser._subparsers._actions if a.choices).choices["index"]  # type: ignore[union-attr]
    for sub in next(a for a in index_commands._actions if a.choices).choices.values():
        backend = [a for a in sub._actions if a.dest == "index_backend"]
        assert not backend or list(backend[0].choices) == names


def test_create_add_search_delete_drop(backend_client):
    c = backend_client()
    fill(c)
    assert c.post("/v1/indexes", json={"name": "docs", "model": "tiny"}).status_code == 409
    stats = c.get("/v1/indexes/docs").json()
    assert (stats["documents"], stats["factory"], stats["metric"], stats["dim"]) == (len(SENTENCES), "Flat", "cosine", 8)
    assert [s["name"] for s in c.get("/v1/indexes").json()["data"]] == ["docs"]

    # by text: every document is its own nearest neighbour, with its id, text and metadata as stored
    for i, s in enumerate(SENTENCES):
        top = c.post("/v1/search", json={"index": "docs", "query": s, "k": 3}).json()["results"][0]
        assert len(top) == 3 and top[0]["id"] == HOSTILE_IDS[i] and top[0]["text"] == s
        assert top[0].get("metadata") == METADATA[i] and top[0]["score"] == pytest.approx(1.0, abs=1e-5)
        assert [h["score"] for h in top] == sorted((h["score"] for h in top), reverse=True)
    # by texts, and by vector: the same answers
    many = c.post("/v1/search", json={"index": "docs", "query": SENTENCES[:2], "k": 2}).json()["results"]
    assert [r[0]["id"] for r in many] == HOSTILE_IDS[:2]
    vec = c.post("/v1/embeddings", json={"input": SENTENCES[3], "model": "tiny"}).json()["data"][0]["embedding"]
    assert c.post("/v1/search", json={"index": "docs", "query": vec, "k": 1}).json()["results"][0][0]["id"] == HOSTILE_IDS[3]
    assert len(c.post("/v1/search", json={"index": "docs", "query": "the cat", "k": 50}).json()["results"][0]) == len(SENTENCES)

    drawn = c.post("/v1/indexes/docs/map", json={"limit": 4, "include": [HOSTILE_IDS[6], "nope"]}).json()["points"]
    assert len(drawn) == 4 and drawn[0]["id"] == HOSTILE_IDS[6] and len({p["id"] for p in drawn}) == 4

    r = c.post("/v1/indexes/docs/documents/delete", json={"ids": [HOSTILE_IDS[0], "nope"]}).json()
    assert (r["deleted"], r["not_found"], r["documents"]) == ([HOSTILE_IDS[0]], ["nope"], len(SENTENCES) - 1)
    hits = c.post("/v1/search", json={"index": "docs", "query": SENTENCES[0], "k": 10}).json()["results"][0]
    assert HOSTILE_IDS[0] not in [h["id"] for h in hits]
    assert c.delete("/v1/indexes/docs").status_code == 204
    assert c.get("/v1/indexes/docs").status_code == 404
    assert c.get("/v1/indexes").json()["data"] == []


def test_unknown_names_and_duplicate_ids(backend_client):
    c = backend_client()
    fill(c)
    for r in (
        c.get("/v1/indexes/nope"),
        c.delete("/v1/indexes/nope"),
        c.post("/v1/search", json={"index": "nope", "query": "x"}),
        c.post("/v1/indexes/nope/documents", json={"documents": [{"text": "x"}]}),
    ):
        assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_index", r.text
    dup = c.post("/v1/indexes/docs/documents", json={"documents": [{"text": "new", "id": "fresh"}, {"text": "x", "id": HOSTILE_IDS[2]}]})
    assert dup.status_code == 409 and dup.json()["error"]["field"] == "documents[1].id"
    twice = c.post("/v1/indexes/docs/documents", json={"documents": [{"text": "a", "id": "same"}, {"text": "b", "id": "same"}]})
    assert twice.status_code == 409
    assert c.get("/v1/indexes/docs").json()["documents"] == len(SENTENCES)  # a refused add adds nothing
    gen = c.post("/v1/indexes/docs/documents", json={"documents": [{"text": "no id given"}]}).json()["ids"][0]
    assert c.post("/v1/search", json={"index": "docs", "query": "no id given", "k": 1}).json()["results"][0][0]["id"] == gen


@pytest.mark.parametrize("metric", ["l2", "ip"])
def test_metrics_give_faiss_scores(backend_client, metric):
    """Squared L2 distances (lower first) and raw inner products, as FAISS reports them."""
    c = backend_client()
    fill(c, metric=metric, normalize=False)
    raw = np.array(
        [d["embedding"] for d in c.post("/v1/embeddings", json={"input": SENTENCES, "model": "tiny", "normalize": False}).json()["data"]]
    )
    got = c.post("/v1/search", json={"index": "docs", "query": raw[2].tolist(), "k": 3}).json()["results"][0]
    expect = ((raw - raw[2]) ** 2).sum(1) if metric == "l2" else -(raw @ raw[2])
    order = np.argsort(expect, kind="stable")[:3]
    assert [h["id"] for h in got] == [HOSTILE_IDS[i] for i in order]
    want = expect[order] if metric == "l2" else -expect[order]
    assert [h["score"] for h in got] == pytest.approx(want.tolist(), rel=1e-4, abs=1e-4)


def test_factories_each_backend_cannot_build_are_422_naming_factory(backend_client, backend):
    c = backend_client()
    assert c.post("/v1/indexes", json={"name": "bad", "model": "tiny", "factory": "HNSW1"}).json()["error"]["field"] == "factory"
    sq = c.post("/v1/indexes", json={"name": "sq", "model": "tiny", "factory": "SQ8"})
    hnsw = c.post("/v1/indexes", json={"name": "hnsw", "model": "tiny", "factory": "HNSW16"})
    if backend == "faiss":
        assert sq.status_code == 201 and hnsw.status_code == 201
    else:
        assert sq.status_code == 422 and sq.json()["error"]["field"] == "factory"
        assert hnsw.status_code == (422 if backend == "milvus-lite" else 201), hnsw.text
    if hnsw.status_code == 201:  # an approximate index still finds each document first
        c.post("/v1/indexes/hnsw/documents", json={"documents": [{"text": s, "id": str(i)} for i, s in enumerate(SENTENCES)]})
        assert c.post("/v1/search", json={"index": "hnsw", "query": SENTENCES[4], "k": 2}).json()["results"][0][0]["id"] == "4"
    ivf = c.post("/v1/indexes", json={"name": "ivf", "model": "tiny", "factory": "IVF2,Flat", "train_size": 4})
    assert ivf.status_code == 201
    c.post("/v1/indexes/ivf/documents", json={"documents": [{"text": s, "id": str(i)} for i, s in enumerate(SENTENCES)]})
    assert c.post("/v1/search", json={"index": "ivf", "query": SENTENCES[1], "k": 1}).json()["results"][0][0]["id"] == "1"


def test_values_milvus_cannot_hold_are_422_naming_the_field(backend_client, backend):
    """Milvus's VARCHAR holds 65 535 UTF-8 bytes: what fits the API's limits but not that is refused by name."""
    c = backend_client(max_metadata_bytes=100_000)
    c.post("/v1/indexes", json={"name": "docs", "model": "tiny"})
    wide = "𝄞" * 20_000  # within max_input_chars (20 000), but 80 000 bytes of UTF-8
    big_meta = {"blob": "x" * 70_000}
    r1 = c.post("/v1/indexes/docs/documents", json={"documents": [{"text": "ok"}, {"text": wide}]})
    r2 = c.post("/v1/indexes/docs/documents", json={"documents": [{"text": "fine", "metadata": big_meta}]})
    if backend == "faiss":
        assert r1.status_code == 200 and r2.status_code == 200
    else:
        assert r1.status_code == 422 and r1.json()["error"]["field"] == "documents[1].text", r1.text
        assert r2.status_code == 422 and r2.json()["error"]["field"] == "documents[0].metadata", r2.text
        assert c.get("/v1/indexes/docs").json()["documents"] == 0


def test_search_modes_each_backend_serves(backend_client, backend):
    """FAISS keeps BM25 beside the vectors, Milvus 2.5 and later (Lite here) in the same collection: both serve every
    mode alike. The Milvus 2.3 server has no BM25: a new index there defaults to dense and lexical or hybrid is a 422
    naming ``mode`` that says why, never a 500."""
    c = backend_client()
    made = c.post("/v1/indexes", json={"name": "plain", "model": "tiny"})
    assert made.status_code == 201, made.text
    bm25 = backend != "milvus-server"
    fill(c, mode="hybrid" if bm25 else "dense")
    if bm25:
        assert made.json()["mode"] == "lexical"  # tiny is no model chosen for search on dev: BM25 alone
        for mode in ("dense", "lexical", "hybrid"):
            r = c.post("/v1/search", json={"index": "docs", "query": SENTENCES[4], "k": 3, "mode": mode}).json()
            assert r["mode"] == mode and r["results"][0][0]["id"] == HOSTILE_IDS[4], r
            assert all(("ranks" in h) == (mode == "hybrid") for h in r["results"][0])
            assert r["results"][0][0]["metadata"] == METADATA[4] and r["results"][0][0]["text"] == SENTENCES[4]
        assert c.post("/v1/search", json={"index": "docs", "query": SENTENCES[4]}).json()["mode"] == "hybrid"  # the index's
        r = c.post("/v1/search", json={"index": "docs", "query": "zzzz qqqq", "mode": "lexical"})  # no term in any document
        assert r.status_code == 200 and r.json()["results"] == [[]], r.text
        return
    assert made.json()["mode"] == "dense"
    refused = [
        c.post("/v1/indexes", json={"name": "h", "model": "tiny", "mode": "hybrid"}),
        c.post("/v1/indexes", json={"name": "l", "mode": "lexical"}),
        c.post("/v1/search", json={"index": "docs", "query": "the cat", "mode": "lexical"}),
        c.post("/v1/search", json={"index": "docs", "query": ["the cat", "a dog"], "mode": "hybrid"}),
        c.post("/v1/indexes/docs/map", json={"query": "the cat", "k": 2, "mode": "hybrid"}),
    ]
    for r in refused:
        assert r.status_code == 422 and r.json()["error"]["field"] == "mode", r.text
        assert "version 2.3" in r.json()["error"]["message"] and "BM25" in r.json()["error"]["message"]
    assert sorted(s["name"] for s in c.get("/v1/indexes").json()["data"]) == ["docs", "plain"]  # nothing half-made
    r = c.post("/v1/search", json={"index": "docs", "query": SENTENCES[4], "k": 1}).json()
    assert r["mode"] == "dense" and r["results"][0][0]["id"] == HOSTILE_IDS[4]


def test_default_index_is_built_once_and_found_by_the_next_server(backend_client, tmp_path, caplog):
    caplog.set_level("INFO")
    sample = write_sample(tmp_path / "sample.tsv.gz", 40)
    c = backend_client(build_default_index=True, search_sample=sample)
    deadline = time.time() + 60
    while (
        c.get("/v1/indexes/default").status_code != 200 or "default" in c.get("/v1/indexes").json()["building"]
    ) and time.time() < deadline:
        time.sleep(0.1)  # it answers while it grows: wait until it is built
    assert c.get("/v1/indexes/default").json()["documents"] == 40
    assert caplog.text.count("building default index") == 1
    again = backend_client(restart=True, build_default_index=True, search_sample=sample)  # the index already exists: not rebuilt
    while again.app.state.core.indexes.building and time.time() < deadline:
        time.sleep(0.05)  # found whole (its last document is there): nothing embedded, no batch added
    assert again.app.state.core.indexes.building == {} and again.get("/v1/indexes/default").json()["documents"] == 40
    assert caplog.text.count("building default index") == 1 and "resuming default index" not in caplog.text
    hit = again.post("/v1/search", json={"query": "the man read a book", "k": 1}).json()["results"][0][0]
    assert hit["metadata"]["source"].startswith("book")


def test_index_build_command_writes_to_the_backend(backend, request, models_dir, tmp_path, monkeypatch, capsys):
    from tests.service.index.milvus_support import backend_settings, released_lite
    from thoughtvec.service.cli import main

    server = request.getfixturevalue("milvus_server") if backend == "milvus-server" else None
    src = tmp_path / "docs.txt"
    src.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    opts = backend_settings(backend, tmp_path, server)
    for k, v in opts.items():
        monkeypatch.setenv(f"THOUGHTVEC_{k.upper()}", str(v))
    build = ["index", "build", "--model", "tiny", "--input", str(src), "--name", "built", "--models-dir", str(models_dir),
             "--index-dir", str(tmp_path / "indexes")]  # fmt: skip
    with released_lite(tmp_path / "milvus.db"):
        assert main(build) == 0
        store = open_store(
            opts.get("index_backend", "faiss"),
            index_dir=tmp_path / "indexes",
            milvus=MilvusOptions(opts.get("milvus_uri", ""), prefix=opts.get("milvus_collection_prefix", "")),
        )
        store.load_all()
        assert store.names() == ["built"] and store.count("built") == len(SENTENCES)
        store.close()
        capsys.readouterr()
        assert main(build) == 0  # run again: every id is there, nothing is added twice (--overwrite would replace it)
        assert f"0 documents added ({len(SENTENCES)} already there); {len(SENTENCES)} documents" in capsys.readouterr().out
        assert main(["index", "list", "--index-dir", str(tmp_path / "indexes")]) == 0
        listed = capsys.readouterr().out.splitlines()
        mode = "dense" if backend == "milvus-server" else "lexical"  # the best on dev of what the backend serves
        assert listed[1].split()[:3] == ["built", "tiny/mean", mode] and str(len(SENTENCES)) in listed[1].split()
        hybrid = main([*build, "--name", "hybrid", "--mode", "hybrid"])
        words = main([*build, "--name", "words", "--mode", "lexical"])  # lexical-only: nothing embedded
        if backend != "milvus-server":
            assert hybrid == 0 and words == 0
            store = open_store(
                opts.get("index_backend", "faiss"),
                index_dir=tmp_path / "indexes",
                milvus=MilvusOptions(opts.get("milvus_uri", ""), prefix=opts.get("milvus_collection_prefix", "")),
            )
            store.load_all()
            assert store.config("words").embedded is False and store.config("hybrid").embedded is True
            assert store.lexical_search("words", [SENTENCES[1]], 1)[0][0][0].id == "docs.txt:2"
            store.close()
        else:  # refused before anything is embedded, saying why
            assert hybrid == 1 and words == 1 and "BM25" in capsys.readouterr().err


def test_a_name_milvus_lite_2_4_could_not_index_is_served(tmp_path):
    """Milvus Lite 2.4.12 failed to store the index of some collection names ("taece289dc7_docs" was one, drawn by a
    random test prefix; milvus-lite#250); the Milvus Lite required now (2.5) makes and searches it."""
    need("milvus_lite")
    from tests.service.index.milvus_support import released_lite

    with released_lite(tmp_path / "m.db"):
        store = open_store("milvus", index_dir=tmp_path, milvus=MilvusOptions(str(tmp_path / "m.db"), prefix="taece289dc7_"))
        try:
            store.create(store.new_config(NewIndex("docs", "tiny", "mean", 8)))
            store.add("docs", [Doc("a", "a cat sat"), Doc("b", "a dog ran")], np.eye(2, 8, dtype=np.float32))
            assert store.names() == ["docs"] and store.search("docs", np.eye(1, 8, dtype=np.float32), 1)[0][0][0].id == "a"
            assert store.lexical_search("docs", ["dogs"], 2)[0][0][0].id == "b"
        finally:
            store.close()


def test_a_milvus_lite_file_in_a_folder_not_made_yet_is_made_there(tmp_path):
    """``--milvus-uri data/new/milvus.db`` makes its folder, as ``--index-dir`` does for FAISS, instead of failing
    with Milvus Lite's "Open local milvus failed, dir: ... not exists"."""
    need("milvus_lite")
    from tests.service.index.milvus_support import released_lite

    db = tmp_path / "not" / "yet" / "milvus.db"
    with released_lite(db):
        store = open_store("milvus", index_dir=tmp_path, milvus=MilvusOptions(str(db), prefix="t_"))
        try:
            store.create(store.new_config(NewIndex("docs", "tiny", "mean", 8)))
            store.add("docs", [Doc("a", "a cat sat")], np.eye(1, 8, dtype=np.float32))
            assert store.names() == ["docs"] and db.parent.is_dir()
        finally:
            store.close()


def test_a_restarted_milvus_lite_has_its_collections_loaded_before_the_store_is_ready(tmp_path):
    """Milvus Lite reopens a database with its collections not loaded, and a search or count of one then waits out its
    deadline while Milvus loads it (10 s at 100,000 documents, past the 3 s default): the store's load_all, which
    ``/ready`` waits for, loads them."""
    need("milvus_lite")
    from tests.service.index.milvus_support import released_lite

    db = tmp_path / "milvus.db"
    with released_lite(db):
        store = open_store("milvus", index_dir=tmp_path, milvus=MilvusOptions(str(db), prefix="t_"))
        store.create(store.new_config(NewIndex("docs", "tiny", "mean", 8)))
        store.add("docs", [Doc("a", "a cat sat")], np.eye(1, 8, dtype=np.float32))
        store.close()
    with released_lite(db):
        store = open_store("milvus", index_dir=tmp_path, milvus=MilvusOptions(str(db), prefix="t_"))
        try:
            assert store.load_all() == ["docs"]
            assert "Loaded" in str(store._connect().get_load_state("t_docs")["state"])
        finally:
            store.close()


@pytest.mark.parametrize("backend", ["milvus-lite", "milvus-server"], indirect=True)
def test_a_closed_milvus_channel_is_reconnected_never_a_500(backend_client, backend):
    """One request's failure drops the shared pymilvus client and closes its channel under the others: their calls
    ("Cannot invoke RPC on closed channel") connect again and answer, instead of a 500."""
    from pymilvus import connections

    c = backend_client()
    fill(c)
    store = c.app.state.core.indexes.store
    for call in (
        lambda: c.post("/v1/search", json={"index": "docs", "query": SENTENCES[4], "k": 1}),
        lambda: c.get("/v1/indexes/docs"),
        lambda: c.post("/v1/indexes/docs/documents", json={"documents": [{"id": "new", "text": "a new sentence"}]}),
    ):
        connections._fetch_handler(store._connect()._using)._channel.close()  # as another thread's _forget_client does
        r = call()
        assert r.status_code == 200, r.text
    assert c.get("/v1/indexes/docs").json()["documents"] == len(SENTENCES) + 1


@pytest.mark.parametrize("backend", ["milvus-lite"], indirect=True)
def test_two_replicas_on_one_milvus_see_each_other_s_writes_in_both_halves(backend_client):
    """Two servers (two apps, each with its own Milvus store and connection) on one Milvus with BM25: a document added
    through A is found at once by B's lexical, dense and hybrid search, with the same BM25 scores (the statistics are
    Milvus's, not a replica's), and one deleted through B is gone from A's lexical search, whose scores then move
    with B's. Milvus Lite runs one Milvus per file in a process, which both stores share (pymilvus's server manager);
    two processes need a Milvus 2.5 server (test_milvus_server.py runs two on the 2.3 server: the dense half)."""
    a, b = backend_client(), backend_client()
    store_a, store_b = a.app.state.core.indexes.store, b.app.state.core.indexes.store
    assert store_a is not store_b and store_a._connect() is not store_b._connect()  # a connection each, as replicas have
    assert a.post("/v1/indexes", json={"name": "shared", "model": "tiny", "mode": "hybrid"}).status_code == 201
    assert b.get("/v1/indexes/shared").json()["mode"] == "hybrid"

    def search(c, query: str, mode: str, k: int = 7) -> list[tuple[str, float]]:
        r = c.post("/v1/search", json={"index": "shared", "query": query, "k": k, "mode": mode})
        assert r.status_code == 200 and r.json()["mode"] == mode, r.text
        return [(h["id"], h["score"]) for h in r.json()["results"][0]]

    for i, s in enumerate(SENTENCES[:5]):  # each write through one replica, searched through the other at once
        writer, reader = (a, b) if i % 2 == 0 else (b, a)
        r = writer.post("/v1/indexes/shared/documents", json={"documents": [{"id": f"s{i}", "text": s}]})
        assert r.status_code == 200 and r.json()["documents"] == i + 1, r.text
        for mode in ("lexical", "dense", "hybrid"):
            assert search(reader, s, mode)[0][0] == f"s{i}", (i, mode)
        assert search(reader, s, "lexical") == search(writer, s, "lexical")  # one BM25, the same scores
    query = "the city"
    before = dict(search(a, query, "lexical"))
    assert {"s1", "s4"} <= set(before)
    assert b.post("/v1/indexes/shared/documents/delete", json={"ids": ["s1"]}).json()["deleted"] == ["s1"]
    after = search(a, query, "lexical")
    assert "s1" not in dict(after) and after == search(b, query, "lexical")
    for mode in ("dense", "hybrid"):
        assert "s1" not in dict(search(a, SENTENCES[1], mode)) and "s1" not in dict(search(b, SENTENCES[1], mode))
    assert a.get("/v1/indexes/shared").json()["documents"] == b.get("/v1/indexes/shared").json()["documents"] == 4
