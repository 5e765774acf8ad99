"""The express lane (``transport.ExpressLane``) answers exactly as FastAPI's own handler does, with one validation pass.

A body that validates goes to the marked endpoint directly; with the lane emptied every request goes through
FastAPI's handler, so each request below is sent both ways and must get the same status, bytes and headers, good
requests and bad ones alike.
"""

from __future__ import annotations

import json
import re

import pytest
from fastapi import APIRouter, FastAPI, Request, Response
from pydantic import BaseModel

from thoughtvec.service.http.routes import deps
from thoughtvec.service.http.rules import routes_of
from thoughtvec.service.http.transport import ExpressLane, express

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
    ("/v1/rerank", {"query": "a cat", "documents": [{"text": "a dog ran .", "title": "t"}], "return_documents": True}),
    ("/v1/embeddings", {"input": ["The cat sat.", "A dog ran."], "embedding_type": "int8"}),
    ("/embed", {"inputs": "a cat sat .", "embedding_type": "ubinary"}),
    ("/v1/embed", {"texts": ["a cat sat .", "a dog ran ."], "model": "embed-english-v3.0"}),
    ("/v1/embed", {"texts": ["a cat sat ."], "embedding_types": ["float", "int8", "binary", "base64"]}),
    ("/v1/embed", {"texts": ["a cat"], "images": ["data:image/png;base64,AAAA"]}),  # a domain error raised by validation (422)
    ("/v2/embed", {"inputs": [{"content": [{"type": "text", "text": "a cat"}]}], "embedding_types": ["uint8"]}),
    ("/v2/embed", {"texts": ["a cat"], "output_dimension": 3}),  # 400 naming output_dimension
    ("/v2/embed", {"texts": ["a cat"], "truncate": "sideways"}),  # fails validation: FastAPI's own 422
    ("/v1/search", {"query": "a cat", "index": "no-such-index"}),
]


def both_ways(client, path: str, body: bytes, headers: dict[str, str]):
    """(the express lane's answer, FastAPI's answer) to the same request."""
    direct = client.post(path, content=body, headers=headers)
    lane = client.app.state.door.express
    calls, lane.calls = lane.calls, {}
    try:
        standard = client.post(path, content=body, headers=headers)
    finally:
        lane.calls = calls
    return direct, standard


def same(content: bytes) -> bytes:
    """The answer without what differs on every call (Cohere's response id)."""
    return re.sub(rb'"id":"[0-9a-f-]{36}"', b'"id":"?"', content)


class Spy:
    """A body's type adapter that records what it validates from JSON."""

    def __init__(self, adapter, seen: list[bytes]):
        self.adapter, self.seen = adapter, seen

    def validate_json(self, data, *a, **kw):
        self.seen.append(data)
        return self.adapter.validate_json(data, *a, **kw)


@pytest.fixture
def validated(client) -> list[bytes]:
    """The bodies the express lane validated from their bytes (FastAPI's handler validates decoded objects)."""
    seen: list[bytes] = []
    calls = client.app.state.door.express.calls
    for call in calls.values():
        object.__setattr__(call, "body", Spy(call.body, seen))  # a frozen record: set for the test alone
    yield seen
    for call in calls.values():
        object.__setattr__(call, "body", call.body.adapter)


@pytest.mark.parametrize(("path", "payload"), REQUESTS, ids=[f"{p} {json.dumps(b)[:40]}" for p, b in REQUESTS])
def test_the_express_lane_answers_as_fastapi_does(client, validated, path, payload):
    assert ("POST", path) in client.app.state.door.express.calls
    body = json.dumps(payload).encode()
    direct, standard = both_ways(client, path, body, {"Content-Type": "application/json"})
    # validated from its bytes first, unless the door refused its shape before (a misspelt key)
    assert validated[:1] == [body] or (not validated and direct.status_code == 422), "the body was not validated from its bytes first"
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


def test_the_hot_routes_take_the_lane_and_no_route_with_path_parameters_does(client):
    calls = client.app.state.door.express.calls
    assert {("POST", "/v1/embeddings"), ("POST", "/embed"), ("POST", "/"), ("POST", "/v1/similarity"), ("POST", "/v1/search")} <= set(calls)
    assert not any("{" in path for _, path in calls) and all(m == "POST" for m, _ in calls)


class Body(BaseModel):
    text: str


def lane_of(*endpoints) -> ExpressLane:
    app = FastAPI()
    router = APIRouter()
    for i, endpoint in enumerate(endpoints):
        router.add_api_route(f"/e{i}", endpoint, methods=["POST"])
    app.include_router(router)
    return ExpressLane(routes_of(app.routes))


def test_an_endpoint_the_lane_cannot_call_keeps_the_app_from_starting():
    async def two_bodies(a: Body, b: Body) -> Response:
        return Response(a.text + b.text)

    async def not_a_response(body: Body) -> dict:
        return {}

    async def sync_dependency(body: Body, core: deps.Annotated[int, deps.Depends(lambda request: 1)]) -> Response:
        return Response(body.text)

    for endpoint, reason in (
        (two_bodies, "neither its body"),
        (not_a_response, "must return a Response"),
        (sync_dependency, "async function"),
    ):
        with pytest.raises(TypeError, match=reason):
            lane_of(express(endpoint))


def test_an_unmarked_endpoint_is_not_in_the_lane():
    async def plain(body: Body, request: Request) -> Response:
        return Response(body.text)

    assert lane_of(plain).calls == {} and set(lane_of(express(plain)).calls) == {("POST", "/e0")}
