"""Every bad input gets a 4xx JSON error naming the field and the limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from thoughtvec.service.index.factory_grammar import SCHEMA_PATTERN

LONG_TOKENS = " ".join(["cat"] * 40)  # 41 tokens with <eos>; tiny's limit is 32


@pytest.fixture
def indexed(client):
    client.post("/v1/indexes", json={"name": "docs", "model": "tiny"})
    client.post("/v1/indexes/docs/documents", json={"documents": [{"text": "the cat sat", "id": "a"}]})
    return client


# A table, one case per line: the formatter leaves it as written.
# fmt: off
CASES = [
    # (path, body, status, code, field, words in the message)
    ("/v1/embeddings", {"input": []}, 422, "invalid_input", "input", "empty"),
    ("/v1/embeddings", {"input": ""}, 422, "invalid_input", "input", "empty or only whitespace"),
    ("/v1/embeddings", {"input": ["ok", "  \t "]}, 422, "invalid_input", "input[1]", "empty or only whitespace"),
    ("/v1/embeddings", {"input": ["ok", 7]}, 422, "invalid_input", "input[1]", "must be a string, got int"),
    ("/v1/embeddings", {"input": ["ok", ["nested"]]}, 422, "invalid_input", "input[1]", "must be a string, got list"),
    ("/v1/embeddings", {"input": ["x"] * 5}, 413, "too_many_inputs", "input", "has 5 items; the limit is 4"),
    ("/v1/embeddings", {"input": ["x" * 201]}, 413, "input_too_long", "input[0]", "201 characters; the limit is 200"),
    ("/v1/embeddings", {"input": ["ok", LONG_TOKENS], "truncation": "reject"}, 413, "input_too_long", "input[1]", "41 tokens; the limit is 32"),
    ("/v1/embeddings", {"input": "x", "truncation": "cut"}, 422, "invalid_request", "truncation", "'split', 'truncate' or 'reject'"),
    ("/v1/embeddings", {"input": [[1820, 10**7]]}, 422, "invalid_input", "input[0][1]", "not a cl100k_base token id"),
    ("/v1/embeddings", {"input": "x", "model": "nope"}, 404, "unknown_model", "model", "no model 'nope'"),
    ("/v1/embeddings", {"input": "x", "view": "nope"}, 404, "unknown_view", "view", "has no view 'nope'"),
    ("/v1/embeddings", {"input": "x", "dimensions": 3}, 422, "invalid_input", "dimensions", "the smallest is 8"),
    ("/v1/embeddings", {"input": "x", "dimensions": 9}, 422, "invalid_input", "dimensions", "dimensions is 9; the limit is 8"),
    ("/v1/embeddings", {"input": "x", "encoding_format": "hex"}, 422, "invalid_request", "encoding_format", "'float' or 'base64'"),
    ("/v1/embeddings", {"inptu": "x"}, 422, "invalid_request", "inptu", "not a field"),
    ("/v1/embeddings", {}, 422, "invalid_request", "input", "Field required"),
    ("/v1/similarity", {"pairs": [["a", "b", "c"]]}, 422, "invalid_input", "pairs[0]", "two texts"),
    ("/v1/similarity", {"pairs": [["a", ""]]}, 422, "invalid_input", "pairs[0][1]", "empty"),
    ("/v1/similarity", {"source": "a"}, 422, "invalid_input", "targets", "source and targets"),
    ("/v1/similarity", {"source": "a", "targets": ["b"], "pairs": [["a", "b"]]}, 422, "invalid_input", "pairs", "not both"),
    ("/v1/similarity", {"source": "a", "targets": ["b", 3]}, 422, "invalid_input", "targets[1]", "must be a string"),
    ("/v1/search", {"index": "nope", "query": "x"}, 404, "unknown_index", "index", "no index 'nope'"),
    ("/v1/search", {"index": "docs", "query": "x", "k": 0}, 422, "invalid_input", "k", "between 1 and 50"),
    ("/v1/search", {"index": "docs", "query": "x", "k": 51}, 422, "invalid_input", "k", "between 1 and 50"),
    ("/v1/search", {"index": "docs", "query": [0.1, 0.2, 0.3]}, 422, "invalid_input", "query", "3 dimensions; index 'docs' has 8"),
    ("/v1/search", {"index": "docs", "query": []}, 422, "invalid_input", "query", "non-empty"),
    ("/v1/search", {"index": "docs", "query": ["a", 1]}, 422, "invalid_input", "query[1]", "must be a string"),
    ("/v1/search", {"index": "docs", "query": {"text": "a"}}, 422, "invalid_input", "query", "a vector of numbers"),
    ("/v1/indexes", {"name": "Bad Name"}, 422, "invalid_request", "name", "pattern"),
    ("/v1/indexes", {"name": "docs", "model": "tiny"}, 409, "conflict", "name", "already exists"),
    ("/v1/indexes", {"name": "z", "model": "tiny", "factory": "Nonsense99"}, 422, "invalid_input", "factory", "is not supported"),
    # accepted by FAISS, then fatal or broken: a crash at the first add (and at every start), failed adds, unreadable files
    *[("/v1/indexes", {"name": "z", "model": "tiny", "factory": f}, 422, "invalid_input", "factory", words) for f, words in [
        ("HNSW1", "between 4 and 256"), ("HNSW0", "between 4 and 256"), ("RR0,Flat", "not supported"), ("NSG32", "not supported"),
        ("PRQ2x4x8", "not supported"), ("IVF0,Flat", "between 1 and 65536"), ("IDMap,Flat", "not supported"),
        ("IVF4,PQ3", "divisible by 3"), ("PCA9,IVF4,Flat", "between 1 and 8"), ("IVF4,PQ2x12", "4 to 8")]],
    ("/v1/indexes", {"name": "z", "model": "tiny", "metric": "manhattan"}, 422, "invalid_request", "metric", "cosine"),
    ("/v1/indexes/docs/documents", {"documents": [{"text": "x", "id": "a"}]}, 409, "conflict", "documents[0].id", "already exists"),
    ("/v1/indexes/docs/documents", {"documents": [{"text": "x", "id": "b"}, {"text": "y", "id": "b"}]}, 409, "conflict", "documents[1].id", "already exists"),
    ("/v1/indexes/docs/documents", {"documents": [{"text": 5}]}, 422, "invalid_input", "documents[0].text", "must be a string"),
    ("/v1/indexes/docs/documents", {"documents": [{"text": "x", "metadata": {"k": "v" * 300}}]}, 422, "invalid_input", "documents[0].metadata", "the limit is 256"),
    ("/v1/indexes/docs/documents", {"documents": [{"text": "x", "metadata": {"k": "é" * 125}}]}, 422, "invalid_input", "documents[0].metadata", "258 bytes of UTF-8 JSON"),
    ("/v1/indexes/docs/documents", {"documents": []}, 422, "invalid_input", "documents", "empty"),
    ("/v1/indexes/nope/documents", {"documents": [{"text": "x"}]}, 404, "unknown_index", "index", "no index 'nope'"),
]
# fmt: on


@pytest.mark.parametrize("path, body, status, code, field, words", CASES, ids=[f"{c[0]}-{c[4]}-{c[2]}-{i}" for i, c in enumerate(CASES)])
def test_error_table(make_client, path, body, status, code, field, words):
    client = make_client(max_inputs=4, max_input_chars=200, max_k=50, max_metadata_bytes=256)
    client.post("/v1/indexes", json={"name": "docs", "model": "tiny"})
    client.post("/v1/indexes/docs/documents", json={"documents": [{"text": "the cat sat", "id": "a"}]})
    r = client.post(path, json=body)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code and err["field"] == field and words in err["message"], err
    assert_no_internals(r.text, client)


def assert_no_internals(text: str, client) -> None:
    """An answer names nothing of the server: no folder of it, no Python hint or trace."""
    settings = client.app.state.settings
    for path in (settings.models_dir, settings.index_dir):
        assert str(Path(path).resolve()) not in text and str(path) not in text, text
    for hint in ("Traceback", "sys.", "site-packages", "/root/", "/tmp/", "Errno", 'File "'):
        assert hint not in text, (hint, text)


def test_truncate_setting_cuts_instead(make_client):
    client = make_client(truncation="truncate", max_input_chars=200)
    r = client.post("/v1/embeddings", json={"input": [LONG_TOKENS, "x" * 500]})
    assert r.status_code == 200 and r.json()["usage"]["prompt_tokens"] == 32 + 2
    assert r.json()["usage"]["truncated_inputs"] == 1 and r.headers["X-Truncated-Inputs"] == "1"


def test_malformed_json_oversized_body_unknown_route(make_client):
    client = make_client(max_body_bytes=2048)
    r = client.post("/v1/embeddings", content=b'{"input": ["a",', headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "malformed_json" and "not valid JSON" in r.json()["error"]["message"]
    big = b'{"input": ["' + b"a " * 2000 + b'"]}'
    r = client.post("/v1/embeddings", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"] == {
        "code": "body_too_large",
        "field": "body",
        "message": r.json()["error"]["message"],
    }
    assert "the limit is 2048" in r.json()["error"]["message"]

    def chunks():  # no Content-Length: the limit is enforced while streaming
        for _ in range(10):
            yield b"a " * 200

    r = client.post("/v1/embeddings", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and "larger than 2048 bytes" in r.json()["error"]["message"]
    r = client.get("/v2/nothing")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    r = client.get("/v1/embeddings")
    assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"


def test_not_ready_while_building_and_no_models(tmp_path, models_dir):
    from tests.service.conftest import serve_test, settings_for

    empty = tmp_path / "empty"
    empty.mkdir()
    from fastapi.testclient import TestClient

    from thoughtvec.service.http.app import create_app

    with TestClient(create_app(settings_for(empty, tmp_path / "i"))) as c:
        for _ in range(100):
            body = c.get("/ready").json()
            if "problem" in body:
                break
        assert c.get("/ready").status_code == 503 and "no bundle" in c.get("/ready").json()["problem"]
        r = c.post("/v1/embeddings", json={"input": "x", "model": "tiny"})
        assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_model"
        assert c.get("/health").status_code == 200
    with serve_test(settings_for(models_dir, tmp_path / "i")) as c:
        c.app.state.core.indexes.building["default"] = "10/50 sentences embedded"
        r = c.post("/v1/search", json={"query": "x"})
        assert r.status_code == 503 and r.headers["retry-after"] == "1" and "being built (10/50" in r.json()["error"]["message"]
        assert c.get("/ready").json()["indexes"]["default"].startswith("building")


def test_405_allow_names_every_method_of_the_path(client):
    for method, path, allow in [
        ("GET", "/v1/embeddings", "POST"),
        ("PUT", "/v1/indexes", "GET, POST"),
        ("PATCH", "/v1/indexes/docs", "DELETE, GET"),
        ("GET", "/v1/indexes/docs/documents", "POST"),
    ]:
        r = client.request(method, path)
        assert r.status_code == 405 and r.headers["allow"] == allow, (method, path, r.headers.get("allow"))
        assert r.json()["error"]["code"] == "method_not_allowed"


def test_the_schema_refuses_what_the_server_refuses(client):
    """Bodies the server rejects are not valid by its OpenAPI schema either (schemathesis checks the rest)."""
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    text = schemas["EmbeddingsRequest"]["properties"]["input"]["anyOf"]
    assert text[0]["minLength"] == 1 and text[1]["minItems"] == 1
    assert schemas["DeleteDocumentsRequest"]["properties"]["ids"]["minItems"] == 1
    factory = schemas["CreateIndexRequest"]["properties"]["factory"]["anyOf"]  # a string of the grammar, or null: the default
    assert factory[0]["minLength"] == 1 and factory[0]["pattern"] == SCHEMA_PATTERN and factory[1] == {"type": "null"}
    assert schemas["AddDocumentsRequest"]["properties"]["documents"]["minItems"] == 1
    assert client.post("/v1/indexes", json={"name": "z", "factory": ""}).json()["error"]["field"] == "factory"
