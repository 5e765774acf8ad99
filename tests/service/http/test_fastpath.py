"""The embeddings fast path (``thoughtvec.service.http.fastpath``) answers exactly as the FastAPI route does.

A request sent with chunked transfer encoding (no Content-Length) always goes through FastAPI; the
same request with a Content-Length takes the fast path when it validates. Both must give the same
status, headers that matter and bytes, for good requests and bad ones alike.
"""

from __future__ import annotations

import json

import pytest

from thoughtvec.service.http.schemas import EmbeddingsRequest

BODIES = [
    {"input": "The cat sat on the mat."},
    {"input": ["The cat sat.", "A dog ran in the park."], "encoding_format": "base64"},
    {"input": [[791, 8415, 7731, 389, 279, 5634, 13]], "normalize": False},
    {"input": "the cat sat .", "view": "mean", "dimensions": 999},  # a domain error (422 dimensions)
    {"input": "the cat .", "model": "no-such-model"},  # 404 unknown_model
    {"input": " "},  # 422 input[0] empty
    {"input": "x", "truncation": "sideways"},  # fails validation: FastAPI's own 422
    {"input": "x", "modle": "typo"},  # extra field
    {"inputs": "x"},
]


def _chunked(body: bytes):
    yield body  # a generator: httpx sends it chunked, without Content-Length


@pytest.fixture
def calls(monkeypatch):
    """How many bodies the fast path validated (it alone uses pydantic's JSON parser on them)."""
    seen = []
    original = EmbeddingsRequest.model_validate_json.__func__

    def spy(cls, data, *a, **kw):
        seen.append(data)
        return original(cls, data, *a, **kw)

    monkeypatch.setattr(EmbeddingsRequest, "model_validate_json", classmethod(spy))
    return seen


@pytest.mark.parametrize("payload", BODIES, ids=[json.dumps(b)[:40] for b in BODIES])
def test_fast_path_and_route_answer_alike(client, calls, payload):
    body = json.dumps(payload).encode()
    headers = {"Content-Type": "application/json"}
    fast = client.post("/v1/embeddings", content=body, headers=headers)
    assert calls == [body], "the fast path did not see the request"
    routed = client.post("/v1/embeddings", content=_chunked(body), headers=headers)
    assert len(calls) == 1, "a request without Content-Length took the fast path"
    assert (fast.status_code, fast.content) == (routed.status_code, routed.content)
    for h in ("content-type", "x-split-inputs", "x-truncated-inputs", "retry-after"):
        assert fast.headers.get(h) == routed.headers.get(h), h


def test_malformed_json_falls_back_to_the_route(client, calls):
    r = client.post("/v1/embeddings", content=b'{"input": "x",', headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "malformed_json"
    assert len(calls) == 1  # tried, failed, answered by FastAPI


def test_other_content_types_and_paths_skip_the_fast_path(client, calls):
    client.post("/v1/embeddings", content=b'{"input": "x"}', headers={"Content-Type": "text/plain"})
    client.post("/v1/similarity", json={"pairs": [["a cat .", "a dog ."]]})
    assert calls == []


def test_fast_path_requests_are_counted_under_their_route(client, calls):
    sample = client.app.state.core.metrics.registry.get_sample_value
    labels = {"route": "/v1/embeddings", "method": "POST", "status": "200"}
    before = sample("thoughtvec_requests_total", labels) or 0.0
    assert client.post("/v1/embeddings", json={"input": "a cat sat ."}).status_code == 200
    assert calls, "the fast path did not see the request"
    assert sample("thoughtvec_requests_total", labels) == before + 1
