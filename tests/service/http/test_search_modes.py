"""Search modes through the API: an index's default mode by the dev rule, ``mode`` per request, answers that
say which mode answered and, in hybrid, each hit's place in both rankings fused."""

from __future__ import annotations

import shutil
import time

import pytest

from tests.service.conftest import SEARCH_MODEL, SENTENCES, serve_test, settings_for, write_guide, write_sample
from tests.tiny_bundle import make_tiny_bundle
from thoughtvec.service.index.fusion import Fusion

EXTRA = "the king rode into battle at dawn . a storm broke over the sea . the letter was read aloud in the city".split(" . ")
DOCS = [{"id": f"d{i}", "text": t} for i, t in enumerate(SENTENCES + EXTRA + [f"{s} again" for s in SENTENCES])]


def filled(c, name: str = "m", **create) -> None:
    assert c.post("/v1/indexes", json={"name": name, "model": "tiny"} | create).status_code == 201
    assert c.post(f"/v1/indexes/{name}/documents", json={"documents": DOCS}).status_code == 200


def search(c, **body) -> dict:
    r = c.post("/v1/search", json={"index": "m"} | body)
    assert r.status_code == 200, r.text
    return r.json()


def test_new_indexes_default_to_the_best_search_on_dev(search_models_dir, tmp_path):
    """No model named: the search model chosen on dev, its default view, hybrid. A model named: hybrid only if it
    is that one (its hybrid beat BM25 on dev), BM25 alone otherwise. A mode named: that mode."""
    with serve_test(settings_for(search_models_dir, tmp_path / "idx")) as c:
        made = {
            name: c.post("/v1/indexes", json={"name": name} | body).json()
            for name, body in {
                "a": {},
                "b": {"model": "tiny"},
                "c": {"model": "tiny", "mode": "dense"},
                "d": {"model": SEARCH_MODEL},
                "e": {"mode": "lexical"},
            }.items()
        }
        chosen = SEARCH_MODEL
        assert [(s["model"], s["mode"]) for s in made.values()] == [
            (chosen, "hybrid"), ("tiny", "lexical"), ("tiny", "dense"), (chosen, "hybrid"), (chosen, "lexical"),
        ]  # fmt: skip
        assert made["a"]["view"] == "mean" and made["a"]["dim"] == 6
        assert {s["name"]: s["mode"] for s in c.get("/v1/indexes").json()["data"]} == {n: s["mode"] for n, s in made.items()}


def test_without_the_search_model_a_new_index_is_bm25_over_the_default_model(client):
    made = client.post("/v1/indexes", json={"name": "a"}).json()
    assert (made["model"], made["mode"]) == ("tiny", "lexical")


def test_a_choice_applies_only_to_the_bundle_it_was_measured_on(search_models_dir, tmp_path):
    """The same folder, but the search model re-exported (its vectors changed, its name kept): the guide's choices
    no longer apply to it. No rule names it, and an index over it searches BM25 alone by default; a hybrid search of
    it fuses with the fallback fusion."""
    models = tmp_path / "models"
    shutil.copytree(search_models_dir, models)
    make_tiny_bundle(models / SEARCH_MODEL, name=SEARCH_MODEL, dim=6, seed=8)  # another export under the name
    with serve_test(settings_for(models, tmp_path / "idx")) as c:
        made = c.post("/v1/indexes", json={"name": "a"}).json()
        assert (made["model"], made["mode"]) == ("tiny", "lexical")  # the guide's next retrieval model, measured
        over = c.post("/v1/indexes", json={"name": "b", "model": SEARCH_MODEL}).json()
        assert over["mode"] == "lexical"
        assert c.get(f"/v1/models/{SEARCH_MODEL}").json()["best_for"] == []
        state = c.app.state.core.search.state
        config = state.store.config("b")
        assert state.fusion(config) == Fusion()  # the fallback
    write_guide(models, ["tiny", "tiny2", SEARCH_MODEL], retrieval=[SEARCH_MODEL], hybrid=[SEARCH_MODEL])  # measured again
    with serve_test(settings_for(models, tmp_path / "idx2")) as c:
        made = c.post("/v1/indexes", json={"name": "a"}).json()
        assert (made["model"], made["mode"]) == (SEARCH_MODEL, "hybrid")
        state = c.app.state.core.search.state
        assert state.fusion(state.store.config("a")) == state.search_settings.fusion != Fusion()


@pytest.mark.parametrize("served", [True, False])
def test_the_default_index_is_built_with_the_same_defaults(served, search_models_dir, models_dir, tmp_path):
    models = search_models_dir if served else models_dir
    sample = write_sample(tmp_path / "s.tsv.gz", 30)
    with serve_test(settings_for(models, tmp_path / "idx", build_default_index=True, search_sample=sample)) as c:
        deadline = time.time() + 60
        while c.get("/v1/indexes/default").status_code != 200 and time.time() < deadline:
            time.sleep(0.05)
        stats = c.get("/v1/indexes/default").json()
        assert (stats["model"], stats["mode"]) == ((SEARCH_MODEL, "hybrid") if served else ("tiny", "lexical"))
        answer = c.post("/v1/search", json={"query": "the man read a book", "k": 3}).json()
        assert answer["mode"] == stats["mode"] and len(answer["results"][0]) == 3


def test_each_mode_answers_and_says_so(client):
    filled(client, mode="hybrid")
    for mode in ("dense", "lexical", "hybrid"):
        answer = search(client, query=[EXTRA[0], SENTENCES[2]], k=4, mode=mode)
        assert answer["mode"] == mode and [r[0]["id"] for r in answer["results"]] == ["d7", "d2"], mode
        for row in answer["results"]:
            assert all(("ranks" in h) == (mode == "hybrid") for h in row)
            assert [h["score"] for h in row] == sorted((h["score"] for h in row), reverse=True)
        tokens = answer["usage"]["prompt_tokens"]
        assert tokens == 0 if mode == "lexical" else tokens > 0  # BM25 alone runs no model
    assert search(client, query="a storm at sea", k=2)["mode"] == "hybrid"  # no mode: the index's
    assert search(client, query="zebra quokka", k=2, mode="lexical")["results"] == [[]]  # no shared term: no BM25 hit


def test_hybrid_fuses_the_two_rankings_and_gives_each_hit_its_ranks(client):
    filled(client, mode="hybrid")
    depth = Fusion().depth
    for query in ("the old man read a letter", "a red car in the city", "the cat"):
        dense = search(client, query=query, k=depth, mode="dense")["results"][0]
        lexical = search(client, query=query, k=depth, mode="lexical")["results"][0]
        hybrid = search(client, query=query, k=10, mode="hybrid")["results"][0]
        want = Fusion().fuse([(h["id"], h["score"]) for h in dense], [(h["id"], h["score"]) for h in lexical], 10)
        assert [h["id"] for h in hybrid] == [i for i, _ in want], query
        assert [h["score"] for h in hybrid] == pytest.approx([s for _, s in want], abs=1e-6)
        place = {side: {h["id"]: r for r, h in enumerate(hits, 1)} for side, hits in (("dense", dense), ("lexical", lexical))}
        for h in hybrid:
            assert h["ranks"] == {"dense": place["dense"].get(h["id"]), "lexical": place["lexical"].get(h["id"])}
        assert any(h["ranks"]["lexical"] is None for h in hybrid), query  # found by the vectors alone: null on that side


def test_explain_says_what_each_ranking_added_and_which_put_the_hit_there(client):
    """Each hybrid hit's explain: each side's rank and own score (as that mode's search answers them) and what it
    added, the two summing to the hit's score; `by` the side that added more. Asked only: absent by default, and in a
    one-signal mode, whose score is the signal's own."""
    filled(client, mode="hybrid")
    query = "the old man read a letter"
    depth = Fusion().depth
    own = {
        mode: {h["id"]: h["score"] for h in search(client, query=query, k=depth, mode=mode)["results"][0]} for mode in ("dense", "lexical")
    }
    plain = search(client, query=query, k=10)["results"][0]
    hits = search(client, query=query, k=10, explain=True)["results"][0]
    assert all("explain" not in h for h in plain) and [h["id"] for h in hits] == [h["id"] for h in plain]
    for h in hits:
        why = h["explain"]
        assert {side: why[side]["rank"] for side in ("dense", "lexical")} == h["ranks"]
        for side in ("dense", "lexical"):
            want = own[side].get(h["id"])
            assert why[side]["score"] == (None if want is None else pytest.approx(want, abs=1e-6)), (h["id"], side)
            assert (why[side]["added"] == 0.0) if want is None else why[side]["added"] >= 0.0  # minmax: 0..weight
        assert why["dense"]["added"] + why["lexical"]["added"] == pytest.approx(h["score"])
        assert why["by"] == ("lexical" if why["lexical"]["added"] > why["dense"]["added"] else "dense")
    assert {h["explain"]["by"] for h in hits} == {"dense", "lexical"}  # this query's top 10 has hits of both kinds
    for mode in ("dense", "lexical"):
        assert all("explain" not in h for h in search(client, query=query, k=5, mode=mode, explain=True)["results"][0])


def test_an_l2_index_fuses_distances_nearest_first(client):
    filled(client, mode="hybrid", metric="l2", normalize=False)
    dense = search(client, query=SENTENCES[4], k=5, mode="dense")["results"][0]
    assert dense[0]["id"] == "d4" and dense[0]["score"] == pytest.approx(0.0, abs=1e-4)  # a distance: lower is nearer
    hybrid = search(client, query=SENTENCES[4], k=5)["results"][0]
    assert hybrid[0]["id"] == "d4" and hybrid[0]["ranks"] == {"dense": 1, "lexical": 1}
    fusion = client.app.state.core.search.state.fusion(client.app.state.core.search.state.store.config("m"))
    top = fusion.fuse([("d4", 1.0)], [("d4", 1.0)], 1)[0][1]  # first on both sides, as the fusion scores it
    assert hybrid[0]["score"] == pytest.approx(top)


def test_a_vector_query_is_searched_by_vector_only(client):
    filled(client, mode="hybrid")
    vec = client.post("/v1/embeddings", json={"input": SENTENCES[3], "model": "tiny"}).json()["data"][0]["embedding"]
    answer = search(client, query=vec, k=1)
    assert answer["mode"] == "dense" and answer["results"][0][0]["id"] == "d3" and "ranks" not in answer["results"][0][0]
    for mode in ("lexical", "hybrid"):
        r = client.post("/v1/search", json={"index": "m", "query": vec, "mode": mode})
        assert r.status_code == 422 and r.json()["error"]["field"] == "mode" and "text query" in r.json()["error"]["message"]


def test_bad_modes_are_422_naming_mode(client):
    filled(client)
    for path, body in (
        ("/v1/search", {"index": "m", "query": "x", "mode": "bm25"}),
        ("/v1/indexes", {"name": "n", "mode": "sparse"}),
        ("/v1/indexes/m/map", {"query": "x", "k": 2, "mode": "both"}),
        ("/v1/indexes/m/map", {"query": "x", "mode": "dense"}),  # a mode for no search (k is 0)
    ):
        r = client.post(path, json=body)
        assert r.status_code == 422 and r.json()["error"]["field"] == "mode", (path, r.text)
    for body in ({"k": 2}, {"query": "x", "k": -1}, {"query": "x", "limit": 3, "k": 4}):
        r = client.post("/v1/indexes/m/map", json=body)
        assert r.status_code == 422 and r.json()["error"]["field"] == "k", (body, r.text)
    long = "word " * 5000  # over max_input_chars: refused as for dense, though BM25 reads no tokens
    r = client.post("/v1/search", json={"index": "m", "query": long, "mode": "lexical"})
    assert r.status_code == 413 and r.json()["error"]["field"] == "query"


def test_the_map_marks_what_the_search_finds(client):
    filled(client, mode="hybrid")
    for mode in (None, "dense", "lexical"):
        body = {"query": "the old man read a letter", "k": 4} | ({"mode": mode} if mode else {})
        found = search(client, **body)
        drawn = client.post("/v1/indexes/m/map", json=body | {"limit": 10}).json()
        hits = [h["id"] for h in found["results"][0]]
        assert drawn["mode"] == found["mode"] == (mode or "hybrid") and drawn["hits"] == hits
        assert hits and [p["id"] for p in drawn["points"][: len(hits)]] == hits and len(drawn["points"]) == 10  # drawn first
    plain = client.post("/v1/indexes/m/map", json={"query": "a cat", "limit": 5}).json()
    assert "hits" not in plain and "mode" not in plain  # k 0: no search, as before
