"""Request bodies are strictly typed: no bool for a number, no string for a number or a bool, on every route."""

from __future__ import annotations

import jsonschema_rs
import pytest

# fmt: off
LOOSE = [
    ("/v1/search", {"query": "x", "k": True}, "k"),
    ("/v1/search", {"query": "x", "k": "5"}, "k"),
    ("/v1/search", {"query": "x", "k": 5.5}, "k"),
    ("/v1/embeddings", {"input": "x", "dimensions": "64"}, "dimensions"),
    ("/v1/embeddings", {"input": "x", "dimensions": True}, "dimensions"),
    ("/v1/embeddings", {"input": "x", "normalize": "yes"}, "normalize"),
    ("/v1/embeddings", {"input": "x", "normalize": 0}, "normalize"),
    ("/v1/embeddings", {"input": "x", "model": 5}, "model"),
    ("/v1/rerank", {"query": "x", "documents": ["y"], "return_documents": 0}, "return_documents"),
    ("/v1/rerank", {"query": "x", "documents": ["y"], "top_n": "1"}, "top_n"),
    ("/embed", {"inputs": "x", "normalize": 1}, "normalize"),
    ("/embed", {"inputs": "x", "dimensions": "8"}, "dimensions"),
    ("/embed", {"inputs": "x", "truncate": "false"}, "truncate"),
    ("/rerank", {"query": "x", "texts": ["y"], "raw_scores": 1}, "raw_scores"),
    ("/tokenize", {"inputs": "x", "add_special_tokens": "no"}, "add_special_tokens"),
    ("/v2/rerank", {"query": "x", "documents": ["y"], "top_n": True}, "top_n"),
    ("/v2/rerank", {"query": "x", "documents": ["y"], "max_tokens_per_doc": "40"}, "max_tokens_per_doc"),
    ("/v1/indexes", {"name": "z", "model": "tiny", "normalize": "true"}, "normalize"),
    ("/v1/indexes", {"name": "z", "model": "tiny", "train_size": True}, "train_size"),
    ("/v1/indexes/docs/map", {"limit": "10"}, "limit"),
    ("/v1/indexes/docs/map", {"k": False}, "k"),
]
# fmt: on


@pytest.mark.parametrize("path, body, field", LOOSE, ids=[f"{p}-{f}-{i}" for i, (p, _, f) in enumerate(LOOSE)])
def test_a_loose_type_is_a_422_naming_the_field(client, path, body, field):
    r = client.post(path, json=body)
    assert r.status_code == 422, r.text
    assert field in r.text, r.text


def test_token_ids_written_as_floats_are_token_ids(client):
    as_ints = client.post("/v1/embeddings", json={"input": [[1820, 8415]]}).json()["data"][0]["embedding"]
    r = client.post("/v1/embeddings", json={"input": [[1820.0, 8415.0]]})
    assert r.status_code == 200, r.text
    assert r.json()["data"][0]["embedding"] == as_ints
    bad = client.post("/v1/embeddings", json={"input": [[1820.5]]})
    assert bad.status_code == 422, bad.text


def test_the_unused_cl100k_ids_the_schema_names_are_those_no_token_has():
    from thoughtvec.service.core.token_ids import cl100k
    from thoughtvec.service.http.schemas import CL100K_UNUSED, TOKEN_IDS

    enc = cl100k()
    unused = []
    for i in range(enc.n_vocab):
        try:
            enc.decode([i])
        except KeyError:
            unused.append(i)
    assert unused == CL100K_UNUSED and TOKEN_IDS["items"]["maximum"] == enc.n_vocab - 1


def test_requests_the_schema_calls_valid_are_accepted(client):
    """What the schema allows, the server takes: an empty prompt_name, a map of one document."""
    assert client.post("/embed", json={"inputs": "x", "prompt_name": ""}).status_code == 200
    assert client.post("/tokenize", json={"inputs": "x", "prompt_name": ""}).status_code == 200
    named = client.post("/embed", json={"inputs": "x", "prompt_name": "query"})
    assert named.status_code == 422 and "prompt_name" in named.text
    client.post("/v1/indexes", json={"name": "one", "model": "tiny"})
    client.post("/v1/indexes/one/documents", json={"documents": [{"text": "the cat sat", "id": "a"}]})
    r = client.post("/v1/indexes/one/map", json={"query": "a cat"})
    assert r.status_code == 200, r.text
    assert [p["id"] for p in r.json()["points"]] == ["a"] and r.json()["query"]["text"] == "a cat"


def test_what_the_schema_calls_invalid_is_refused(client):
    """The schema's forms match the server's: similarity takes one form, never both; max_tokens_per_doc is at least 1."""
    schema = client.get("/openapi.json").json()["components"]["schemas"]
    both = {"pairs": [["a", "b"]], "source": "a"}
    assert not jsonschema_rs.validator_for(schema["SimilarityRequest"]).is_valid(both)
    assert jsonschema_rs.validator_for(schema["SimilarityRequest"]).is_valid({"pairs": [["a", "b"]], "source": None})
    assert client.post("/v1/similarity", json=both).status_code == 422
    zero = client.post("/v2/rerank", json={"query": "x", "documents": ["y"], "max_tokens_per_doc": 0})
    assert zero.status_code == 400 and zero.json()["message"].startswith("max_tokens_per_doc")  # a value Cohere refuses


def test_the_served_schema_states_the_servers_limits(make_client):
    client = make_client(max_k=7, max_inputs=9, max_input_chars=99)
    schema = client.get("/openapi.json").json()
    assert schema["components"]["schemas"]["SearchRequest"]["properties"]["k"]["maximum"] == 7
    assert '"x-max' not in str(schema)
    texts = schema["components"]["schemas"]["RerankRequest"]["properties"]["documents"]
    assert texts["maxItems"] == 9 and texts["items"]["anyOf"][0]["maxLength"] == 99  # a text, or Cohere's {text} object


def test_options_on_documents_delete_names_post_only(client):
    """``…/documents/delete`` is the POST route's, not a document id: DELETE there is a 405 naming POST."""
    for method in ("OPTIONS", "DELETE"):
        r = client.request(method, "/v1/indexes/default/documents/delete")
        assert r.status_code == 405 and r.headers["allow"] == "POST", (method, r.headers)
    client.post("/v1/indexes", json={"name": "d", "model": "tiny"})
    client.post("/v1/indexes/d/documents", json={"documents": [{"text": "x", "id": "deleted"}]})
    assert client.delete("/v1/indexes/d/documents/deleted").json()["deleted"] == ["deleted"]
