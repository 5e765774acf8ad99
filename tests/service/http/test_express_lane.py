"""``JsonRoute`` (``routes/deps.py``) answers exactly as FastAPI's own handler does, with one validation pass.

A body that validates goes to the endpoint directly; dependency overrides send every request through FastAPI's
handler, so each request below is sent both ways and must get the same status, bytes and headers, good
requests and bad ones alike.
"""

from __future__ import annotations

import json
import re

import pytest
from pydantic import BaseModel

from thoughtvec.service.http.routes import deps

REQUESTS = [
    ("/v1/embeddings", {"input": "The cat sat on the mat."}),
    ("/v1/embeddings", {"input": ["The cat sat.", "A dog ran in the park."], "encoding_format": "base64"}),
    ("/v1/embeddings", {"input": [[791, 8415, 7731, 389, 279, 5634, 13]], "normalize": False}),
    ("/v1/embeddings", {"input": "the cat sat .", "view": "mean", "dimensions": 999}),  # a domain error (422 dimensions)
    ("/v1/embeddings", {"input": "the cat .", "model": "no-such-model"}),  # 404 unknown_model
    ("/v1/embeddings", {"input": " "}),  # 422 input[0] empty
    ("/v1/embeddings", {"input": "x", "truncation": "sideways"}),  # fails validation: FastAPI's own 422
    ("/v1/embeddings", {"input": "x", "modle": "typo"}),  # extra field
    ("/v1/embeddings", {"inputs": "x"}),
    ("/v1/embeddings", {"input": 5}),  # strict: no number for a text
    ("/embed", {"inputs": ["a cat sat .", "a dog ran ."], "truncate": True}),
    ("/embed", {"inputs": "a cat", "normalize": "yes"}),
    ("/v1/similarity", {"pairs": [["a cat sat .", "a dog ran ."]]}),
    ("/similarity", {"inputs": {"source_sentence": "a cat", "sentences": ["a dog", "the cat"]}}),
    ("/v1/rerank", {"query": "a cat", "documents": ["a dog ran .", "the cat sat ."], "top_n": 1}),
    ("/v2/rerank", {"query": "a cat", "documents": ["a dog ran .", "the cat sat ."], "model": "tiny"}),
    ("/v1/search", {"query": "a cat", "index": "no-such-index"}),
]


def both_ways(client, path: str, body: bytes, headers: dict[str, str]):
    """(the answer of the direct handler, FastAPI's answer) to the same request."""
    direct = client.post(path, content=body, headers=headers)
    client.app.dependency_overrides[deps.get_core] = deps.get_core  # the same dependency: FastAPI's handler answers
    try:
        standard = client.post(path, content=body, headers=headers)
    finally:
        client.app.dependency_overrides.clear()
    return direct, standard


def same(content: bytes) -> bytes:
    """The answer without what differs on every call (Cohere's response id)."""
    return re.sub(rb'"id":"[0-9a-f-]{36}"', b'"id":"?"', content)


@pytest.fixture
def validated(monkeypatch) -> list[bytes]:
    """The bodies validated from their bytes (FastAPI's handler validates decoded objects instead)."""
    seen: list[bytes] = []
    original = BaseModel.model_validate_json.__func__

    def spy(cls, data, *a, **kw):
        seen.append(data)
        return original(cls, data, *a, **kw)

    monkeypatch.setattr(BaseModel, "model_validate_json", classmethod(spy))
    return seen


@pytest.mark.parametrize(("path", "payload"), REQUESTS, ids=[f"{p} {json.dumps(b)[:40]}" for p, b in REQUESTS])
def test_the_direct_handler_answers_as_fastapi_does(client, validated, path, payload):
    body = json.dumps(payload).encode()
    direct, standard = both_ways(client, path, body, {"Content-Type": "application/json"})
    assert validated == [body], "the body was not validated from its bytes, once"
    assert (direct.status_code, same(direct.content)) == (standard.status_code, same(standard.content)), path
    for h in ("content-type", "x-split-inputs", "x-truncated-inputs", "retry-after"):
        assert direct.headers.get(h) == standard.headers.get(h), h


def test_malformed_json_is_answered_by_fastapi(client):
    r = client.post("/v1/embeddings", content=b'{"input": "x",', headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "malformed_json"
    r = client.post("/v1/embeddings", content=b'{"input": "\xff"}', headers={"Content-Type": "application/json"})
    assert r.status_code in (400, 422) and r.json()["error"]["code"] in ("malformed_json", "invalid_request"), r.text


def test_other_content_types_go_to_fastapi(client, validated):
    r = client.post("/v1/embeddings", content=b'{"input": "a cat"}', headers={"Content-Type": "text/plain"})
    assert r.status_code == 422 and validated == []
    assert r.json()["error"] == {
        "code": "invalid_request",
        "message": "body: send a JSON body with Content-Type: application/json",
        "field": "body",
    }


def test_requests_are_counted_under_their_route(client):
    sample = client.app.state.core.metrics.registry.get_sample_value
    labels = {"route": "/v1/embeddings", "method": "POST", "status": "200"}
    before = sample("thoughtvec_requests_total", labels) or 0.0
    assert client.post("/v1/embeddings", json={"input": "a cat sat ."}).status_code == 200
    assert sample("thoughtvec_requests_total", labels) == before + 1
