"""The default index built on first start (then cached), and the `thoughtvec index/serve` commands."""

from __future__ import annotations

import json
import time

import numpy as np

from tests.service.conftest import serve_test, settings_for, write_sample
from thoughtvec.service.cli import main


def wait_for_index(client, name: str, timeout: float = 20) -> dict:
    """The index's stats once it is built (it answers while it grows: wait until it is no longer building)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = client.get(f"/v1/indexes/{name}")
        if r.status_code == 200 and name not in client.get("/v1/indexes").json()["building"]:
            return client.get(f"/v1/indexes/{name}").json()
        time.sleep(0.05)
    raise AssertionError(client.get("/ready").json())


def test_default_index_is_built_once_then_cached(models_dir, tmp_path, caplog):
    sample = write_sample(tmp_path / "search_sample.tsv.gz", n=60)
    settings = settings_for(models_dir, tmp_path / "idx", build_default_index=True, search_sample=sample, default_index_max_docs=50)
    caplog.set_level("INFO")
    with serve_test(settings) as c:
        stats = wait_for_index(c, "default")
        assert stats["documents"] == 50 and stats["model"] == "tiny" and stats["factory"] == "Flat"
        hit = c.post("/v1/search", json={"query": "the old man read a book", "k": 3}).json()  # no index named: the default
        assert hit["index"] == "default" and len(hit["results"][0]) == 3
        assert hit["results"][0][0]["metadata"]["source"].startswith("book")
        # the build went through the model's batcher: its batches are in the metrics
        batched = c.app.state.core.metrics.registry.get_sample_value("thoughtvec_batch_size_sum", {"model": "tiny"})
        assert batched >= 50
    assert "50/50 sentences embedded" in caplog.text
    snapshot = (tmp_path / "idx" / "default" / "snapshot" / "index.faiss").stat().st_mtime_ns
    caplog.clear()
    with serve_test(settings) as c:
        assert wait_for_index(c, "default")["documents"] == 50
    assert "building default index" not in caplog.text
    assert (tmp_path / "idx" / "default" / "snapshot" / "index.faiss").stat().st_mtime_ns == snapshot


def test_the_default_index_answers_503_with_its_progress_until_it_is_searchable_never_404(models_dir, tmp_path):
    """From the first request on, a search of the default index answers 503 ``not_ready`` with Retry-After and what
    the build is doing, then 200 (over the documents added so far, then all); never 404 as if it would not come."""
    from fastapi.testclient import TestClient

    from thoughtvec.service.http.app import create_app

    sample = write_sample(tmp_path / "search_sample.tsv.gz", n=60)
    settings = settings_for(models_dir, tmp_path / "idx", build_default_index=True, search_sample=sample, default_index_max_docs=50)
    seen: list[tuple[int, str]] = []
    with TestClient(create_app(settings)) as c:
        deadline = time.time() + 60
        while time.time() < deadline:
            r = c.post("/v1/search", json={"query": "the old man read a book", "k": 1})
            if r.status_code != 200:
                assert r.status_code == 503 and r.json()["error"]["code"] == "not_ready" and r.headers["Retry-After"], r.text
                assert "index 'default' is being built (" in r.json()["error"]["message"]
            seen.append((r.status_code, r.text))
            if r.status_code == 200:
                break
            time.sleep(0.01)
        assert seen[-1][0] == 200, seen[-1]
        assert wait_for_index(c, "default")["documents"] == 50
    print(f"{len(seen) - 1} answers 503 before the first search answered: {sorted({t for code, t in seen if code == 503})[:3]}")


def test_an_interrupted_default_index_build_goes_on_at_the_next_start(models_dir, tmp_path, caplog):
    from thoughtvec.service.index.build import fill_index, read_documents
    from thoughtvec.service.index.contents import NewIndex
    from thoughtvec.service.index.indexes import new_config
    from thoughtvec.service.index.store import IndexStore

    sample = write_sample(tmp_path / "search_sample.tsv.gz", n=60)
    settings = settings_for(models_dir, tmp_path / "idx", build_default_index=True, search_sample=sample, default_index_max_docs=50)
    with serve_test(settings) as c:
        full = wait_for_index(c, "default")
        expected = c.post("/v1/search", json={"query": "the old man read a book", "k": 50, "mode": "dense"}).json()["results"]
        c.delete("/v1/indexes/default")  # made again below with only its first 20 documents, as a build stopped there leaves it
    store = IndexStore(tmp_path / "idx")
    docs = read_documents(sample, 50)
    store.create(
        new_config(
            NewIndex("default", full["model"], full["view"], full["dim"], fingerprint=full.get("fingerprint", ""), mode=full["mode"])
        )
    )
    fill_index(store, lambda texts: np.zeros((len(texts), full["dim"]), np.float32) + 1, "default", docs[:20])
    store.close()
    caplog.set_level("INFO")
    with serve_test(settings) as c:
        stats = wait_for_index(c, "default")
        assert stats["documents"] == 50  # the 30 missing added, none twice
        got = c.post("/v1/search", json={"query": "the old man read a book", "k": 50, "mode": "dense"}).json()["results"]
    assert "resuming default index" in caplog.text
    first = {d.id for d in docs[:20]}  # left as they were (vectors of ones); the others embedded as in a full build
    assert [h["id"] for h in got[0] if h["id"] not in first] == [h["id"] for h in expected[0] if h["id"] not in first]


def test_a_stopped_build_of_another_export_is_not_resumed_with_this_one(models_dir, tmp_path, caplog):
    """A default index stopped midway whose vectors came from an earlier export of its model is left as it is
    (its searches answer 409 saying why): new vectors would not be comparable with its own."""
    from thoughtvec.service.index.build import fill_index, read_documents
    from thoughtvec.service.index.contents import NewIndex
    from thoughtvec.service.index.indexes import new_config
    from thoughtvec.service.index.store import IndexStore

    sample = write_sample(tmp_path / "search_sample.tsv.gz", n=60)
    settings = settings_for(models_dir, tmp_path / "idx", build_default_index=True, search_sample=sample, default_index_max_docs=50)
    store = IndexStore(tmp_path / "idx")
    store.create(new_config(NewIndex("default", "tiny", "mean", 8, fingerprint="an-earlier-export", mode="lexical")))
    fill_index(store, lambda texts: np.ones((len(texts), 8), np.float32), "default", read_documents(sample, 50)[:20])
    store.close()
    caplog.set_level("INFO")
    with serve_test(settings) as c:
        assert wait_for_index(c, "default")["documents"] == 20
        r = c.post("/v1/search", json={"query": "the old man read a book", "mode": "dense"})
        assert r.status_code == 409 and "an-earlier-export" in r.json()["error"]["message"], r.text
    assert "default index 'default' not built" in caplog.text and "resuming" not in caplog.text


def test_no_model_to_build_it_with_leaves_no_default_index_waiting(tmp_path):
    """With no bundle to serve, the build stops waiting once every bundle has loaded or failed: 404, not 503 forever."""
    from fastapi.testclient import TestClient

    from thoughtvec.service.http.app import create_app

    (tmp_path / "models").mkdir()
    sample = write_sample(tmp_path / "search_sample.tsv.gz", n=10)
    settings = settings_for(tmp_path / "models", tmp_path / "idx", build_default_index=True, search_sample=sample, default_model=None)
    with TestClient(create_app(settings)) as c:
        deadline = time.time() + 20
        while c.app.state.core.indexes.building and time.time() < deadline:
            time.sleep(0.05)
        r = c.post("/v1/search", json={"index": "default", "query": "x"})
        assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_index", r.text


def test_no_sample_no_default_index(models_dir, tmp_path):
    settings = settings_for(models_dir, tmp_path / "idx", build_default_index=True, search_sample=tmp_path / "missing.tsv.gz")
    with serve_test(settings) as c:
        r = c.post("/v1/search", json={"query": "x"})
        assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_index"


def test_index_build_and_list_commands(models_dir, tmp_path, capsys):
    src = tmp_path / "docs.jsonl"
    src.write_text(
        "".join(
            json.dumps({"id": f"j{i}", "text": t, "metadata": {"i": i}}) + "\n"
            for i, t in enumerate(["the cat sat", "a dog ran", "she walked"])
        )
    )
    idx = tmp_path / "idx"
    build = [
        "index",
        "build",
        "--model",
        "tiny",
        "--input",
        str(src),
        "--name",
        "mine",
        "--models-dir",
        str(models_dir),
        "--index-dir",
        str(idx),
    ]
    rc = main(build)
    out = capsys.readouterr().out
    assert rc == 0 and out.startswith("index 'mine': 3 documents added (0 already there) in ")
    assert "; 3 documents, Flat cosine, model tiny/mean (dim 8), searched lexical" in out  # the dev rule
    assert main(build) == 0  # run again: the index holds every id, nothing is embedded again
    assert "index 'mine': 0 documents added (3 already there); 3 documents," in capsys.readouterr().out
    sample = write_sample(tmp_path / "s.tsv.gz", n=20)
    assert (
        main(
            [
                "index",
                "build",
                "--model",
                str(models_dir / "tiny2"),
                "--input",
                str(sample),
                "--name",
                "hn",
                "--factory",
                "HNSW16",
                "--index-dir",
                str(idx),
                "--limit",
                "10",
                "--mode",
                "hybrid",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["index", "list", "--index-dir", str(idx)]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:-1]}
    assert rows["hn"][1:4] == ["tiny2/mean", "hybrid", "4"] and rows["hn"][4] == "HNSW16" and rows["mine"][2] == "lexical"
    with serve_test(settings_for(models_dir, idx)) as c:
        answer = c.post("/v1/search", json={"index": "mine", "query": "a dog ran", "k": 1}).json()
        hit = answer["results"][0][0]
        assert answer["mode"] == "lexical" and hit == {"id": "j1", "text": "a dog ran", "score": hit["score"], "metadata": {"i": 1}}
        assert c.post("/v1/search", json={"index": "hn", "query": "a dog ran", "k": 1}).json()["mode"] == "hybrid"


def test_index_build_of_a_lexical_only_index_runs_no_model(models_dir, tmp_path, capsys, monkeypatch):
    """``--mode lexical`` named makes a lexical-only index, as ``POST /v1/indexes`` does: its documents are not
    embedded (the encoder never runs), lexical search finds them, and dense or hybrid search is the 422 naming
    ``mode``. Without ``--mode``, the dev rule's lexical default still embeds them (dense search on request)."""
    from thoughtvec.service.core.embedding import EmbeddingService

    src = tmp_path / "docs.txt"
    src.write_text("the cat sat on the mat\na dog ran in the park\nshe walked home\n")
    idx = tmp_path / "idx"
    ran: list[int] = []
    real = EmbeddingService.embed_bulk  # the build embeds every chunk through it

    async def spy(self, model, view, texts):
        ran.append(len(texts))
        return await real(self, model, view, texts)

    monkeypatch.setattr(EmbeddingService, "embed_bulk", spy)
    build = ["index", "build", "--model", "tiny", "--input", str(src), "--models-dir", str(models_dir), "--index-dir", str(idx)]
    assert main([*build, "--name", "words", "--mode", "lexical"]) == 0
    assert ran == [] and "searched lexical" in capsys.readouterr().out
    assert main([*build, "--name", "ruled"]) == 0  # the dev rule's lexical: embedded
    assert ran == [3]
    with serve_test(settings_for(models_dir, idx)) as c:
        store = c.app.state.core.indexes.store
        assert store.config("words").embedded is False and store.config("ruled").embedded is True
        answer = c.post("/v1/search", json={"index": "words", "query": "a dog in the park", "k": 1}).json()
        assert answer["mode"] == "lexical" and answer["results"][0][0]["id"] == "docs.txt:2", answer
        for mode in ("dense", "hybrid"):
            r = c.post("/v1/search", json={"index": "words", "query": "a dog", "mode": mode})
            assert r.status_code == 422 and r.json()["error"]["field"] == "mode" and "lexical-only" in r.json()["error"]["message"], r.text
        assert c.post("/v1/search", json={"index": "ruled", "query": "a dog", "mode": "dense"}).status_code == 200


def test_serve_settings_table_and_bad_setting(capsys, monkeypatch):
    assert main(["serve", "--settings-table"]) == 0
    assert "| `THOUGHTVEC_MAX_BATCH_SIZE` | `--max-batch-size` | `32` |" in capsys.readouterr().out
    monkeypatch.setenv("THOUGHTVEC_MAX_BACH_SIZE", "3")
    assert main(["serve"]) == 2
    assert "THOUGHTVEC_MAX_BACH_SIZE" in capsys.readouterr().err


def test_fill_index_adds_a_small_batch_first_each_searchable_before_the_next_is_embedded(tmp_path):
    from thoughtvec.service.index.build import fill_index, is_filled
    from thoughtvec.service.index.contents import Doc, NewIndex
    from thoughtvec.service.index.indexes import new_config
    from thoughtvec.service.index.store import IndexStore

    store = IndexStore(tmp_path / "idx")
    store.create(new_config(NewIndex("default", "m", "v", 4, mode="hybrid")))
    docs = [Doc(str(i), f"sentence number {i} about topic{i % 7}") for i in range(1, 24)]
    seen: list[int] = []

    def encode(texts: list[str]) -> np.ndarray:
        seen.append(store.count("default"))  # what a search finds while this batch is embedded
        if seen[-1]:
            assert store.lexical_search("default", ["topic1"], 3)[0], "the batches before are searchable"
        return np.eye(len(texts), 4, dtype=np.float32)

    assert not is_filled(store, "default", docs)
    assert fill_index(store, encode, "default", docs, first=5, chunk=8) == 23
    assert seen == [0, 5, 13, 21] and is_filled(store, "default", docs)
    assert fill_index(store, encode, "default", docs, first=5, chunk=8, resume=True) == 0  # all there: nothing embedded
    assert seen == [0, 5, 13, 21] and store.count("default") == 23

    def encode_new(texts: list[str]) -> np.ndarray:  # a new index is made once its first batch is embedded: never empty
        assert "new" not in store or store.count("new") >= 5
        return np.eye(len(texts), 4, dtype=np.float32)

    config = new_config(NewIndex("new", "m", "v", 4, mode="hybrid"))
    assert fill_index(store, encode_new, "new", docs, first=5, chunk=8, create=config) == 23 and store.count("new") == 23
    store.close()
