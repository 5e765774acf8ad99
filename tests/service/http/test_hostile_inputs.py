"""Inputs a server can accept and then fail to answer: NaN, deep nesting, lone surrogates,
bodies that are not UTF-8 JSON, and any exception that is not ours. Each is a JSON 4xx naming the
field (or a JSON 500 with a request id), and nothing stored poisons later searches or restarts."""

from __future__ import annotations

import logging

import pytest

from tests.service.conftest import serve_test, settings_for

JSON = {"content-type": "application/json"}


def nested(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


def deep_object(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


# (path, raw JSON body, status, code, field; a field ending in * is its start: the place where the body went too deep)
# fmt: off
RAW = [
    ("/v1/indexes/docs/documents", '{"documents": [{"text": "x", "metadata": {"score": NaN}}]}', 422, "invalid_input", "documents[0].metadata.score"),
    ("/v1/indexes/docs/documents", '{"documents": [{"text": "x", "metadata": {"a": [1, Infinity]}}]}', 422, "invalid_input", "documents[0].metadata.a[1]"),
    ("/v1/indexes/docs/documents", '{"documents": [{"text": "y"}, {"text": "x", "metadata": {"b": -Infinity}}]}', 422, "invalid_input", "documents[1].metadata.b"),
    ("/v1/indexes/docs/documents", '{"documents": [{"text": "x", "metadata": ' + deep_object(500) + "}]}", 422, "invalid_request", "documents[0].metadata.a.a*"),
    ("/v1/indexes/docs/documents", '{"documents": [{"text": "x", "metadata": {"a": ' + nested(17) + "}}]}", 422, "invalid_input", "documents[0].metadata"),
    ("/v1/embeddings", '{"input": "cat", "model": "\\ud800"}', 422, "invalid_input", "model"),
    ("/v1/embeddings", '{"input": ["cat", "a \\udfff b"]}', 422, "invalid_input", "input[1]"),
    ("/v1/indexes/docs/documents", '{"documents": [{"text": "x\\ud83d"}]}', 422, "invalid_input", "documents[0].text"),
    ("/v1/indexes/docs/documents", '{"documents": [{"text": "x", "metadata": {"k": ["\\ud800"]}}]}', 422, "invalid_input", "documents[0].metadata.k[0]"),
    ("/v1/indexes/docs/documents", '{"documents": [{"text": "x", "metadata": {"\\ud800": 1}}]}', 422, "invalid_input", "documents[0].metadata"),
    ("/v1/indexes/docs/documents", '{"documents": [{"text": "x", "id": "\\udc00"}]}', 422, "invalid_input", "documents[0].id"),
    ("/v1/search", '{"index": "docs", "query": ["\\ud800"]}', 422, "invalid_input", "query[0]"),
    ("/v1/similarity", '{"source": "\\ud800", "targets": ["a"]}', 422, "invalid_input", "source"),
    ("/v1/indexes", '{"name": "z", "factory": "\\ud800"}', 422, "invalid_input", "factory"),
    ("/v1/embeddings", '{"input": ' + nested(500) + "}", 422, "invalid_request", "input[0][0]*"),
    ("/v1/embeddings", '{"input": ' + nested(10_000) + "}", 422, "invalid_request", "input[0][0]*"),
    ("/v1/embeddings", '{"input": "caf\xe9"}'.encode("latin-1"), 400, "malformed_json", "body"),
    ("/v1/embeddings", b'\xff\xfe{"input": "x"}', 400, "malformed_json", "body"),
    ("/v1/embeddings", '{"input": 1' + "0" * 5000 + "}", 422, "invalid_request", "input"),
    ("/v1/indexes", '{"name": "z", "train_size": 1' + "0" * 15_000_000 + "}", 422, "invalid_request", "train_size"),
]
# fmt: on


@pytest.fixture
def indexed(make_client):
    client = make_client(max_metadata_bytes=100_000)
    client.post("/v1/indexes", json={"name": "docs", "model": "tiny"})
    client.post("/v1/indexes/docs/documents", json={"documents": [{"text": "the cat sat", "id": "a", "metadata": {"page": 1}}]})
    return client


@pytest.mark.parametrize("path, body, status, code, field", RAW, ids=[f"{i}-{c[4]}" for i, c in enumerate(RAW)])
def test_hostile_body_is_a_json_4xx_naming_the_field(indexed, path, body, status, code, field):
    r = indexed.post(path, content=body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass"), headers=JSON)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code and (err["field"].startswith(field[:-1]) if field.endswith("*") else err["field"] == field), err
    assert "sys." not in err["message"] and "digits()" not in err["message"], err  # no Python hint
    # nothing was stored, nothing is poisoned
    assert indexed.get("/v1/indexes/docs").json()["documents"] == 1
    hit = indexed.post("/v1/search", json={"index": "docs", "query": "the cat sat", "k": 5}).json()["results"][0]
    assert [h["id"] for h in hit] == ["a"]


def test_accepted_metadata_comes_back_after_a_restart(models_dir, tmp_path):
    settings = settings_for(models_dir, tmp_path / "idx")
    meta = {"deep": [[[[{"x": 1.5e308, "y": -0.0, "z": None, "t": "ok ☃ \U0001f600"}]]]], "n": 10**30}
    with serve_test(settings) as c:
        c.post("/v1/indexes", json={"name": "docs", "model": "tiny"})
        assert c.post("/v1/indexes/docs/documents", json={"documents": [{"text": "a cat", "id": "a", "metadata": meta}]}).status_code == 200
        c.app.state.core.indexes.store.close = lambda: None  # a crash: only the log holds it
    with serve_test(settings) as c:
        hit = c.post("/v1/search", json={"index": "docs", "query": "a cat", "k": 1}).json()["results"][0][0]
        assert hit["metadata"] == meta


def test_an_unexpected_exception_is_a_json_500_with_a_request_id(client, caplog, monkeypatch):
    core = client.app.state.core

    async def broken(*_a, **_k):
        raise KeyError("a backend failure")

    monkeypatch.setattr(core.embedding, "embeddings", broken)
    with caplog.at_level(logging.ERROR, logger="thoughtvec.service.http.error_answers"):
        r = client.post("/v1/embeddings", json={"input": "cat"})
    assert r.status_code == 500
    err = r.json()["error"]
    rid = err["request_id"]
    assert err["code"] == "internal_error" and rid in err["message"] and r.headers["x-request-id"] == rid
    assert any(rid in rec.getMessage() and rec.exc_info for rec in caplog.records)
    monkeypatch.undo()
    assert client.post("/v1/embeddings", json={"input": "cat"}).status_code == 200  # the server goes on
