"""The gate (``service/http/gate.py``): which routes it calls directly, and that it answers as the router does.

A route of the plain shape whose path has no parameters is found in the gate's table and called without FastAPI's
router; every other request goes to the router. Each request below is sent both ways (the table emptied sends
everything to the router) and must get the same status, bytes and headers, errors included.
"""

from __future__ import annotations

import json
import logging

import pytest
from fastapi import APIRouter, Request, Response
from pydantic import BaseModel

from thoughtvec.service.http.gate import Gate, direct_table
from thoughtvec.service.http.routes.deps import JsonRoute
from thoughtvec.service.http.rules import Access

from .test_json_route import REQUESTS, same


def gate_of(client) -> Gate:
    stack = client.app.middleware_stack
    return stack if isinstance(stack, Gate) else stack.app  # CORS around it where configured


def both_ways(client, path: str, body: bytes, headers: dict[str, str]):
    """(the answer through the gate's table, the router's answer) to the same request."""
    gate = gate_of(client)
    direct = client.post(path, content=body, headers=headers)
    table, gate.direct = gate.direct, {}
    try:
        routed = client.post(path, content=body, headers=headers)
    finally:
        gate.direct = table
    return direct, routed


def test_which_routes_the_gate_calls_directly(client):
    table = gate_of(client).direct
    assert {("POST", "/v1/embeddings"), ("POST", "/embed"), ("POST", "/v1/similarity"), ("POST", "/v1/search")} <= set(table)
    assert ("POST", "/") not in table  # a union of two bodies: FastAPI's handler, through the router
    assert not any("{" in path for _, path in table)  # a path parameter: the router
    assert not any(m == "GET" for m, _ in table)  # no body
    assert all(access is Access.key for _, access in table.values())


@pytest.mark.parametrize(("path", "payload"), REQUESTS, ids=[f"{p} {json.dumps(b)[:40]}" for p, b in REQUESTS])
@pytest.mark.parametrize("keys", [False, True], ids=["open", "keys"])
def test_the_gate_answers_as_the_router_does(make_client, path, payload, keys):
    settings = {"api_keys": "k1"} if keys else {}
    client = make_client(headers={"Authorization": "Bearer k1"} if keys else None, **settings)
    direct, routed = both_ways(client, path, json.dumps(payload).encode(), {"Content-Type": "application/json"})
    assert (direct.status_code, same(direct.content)) == (routed.status_code, same(routed.content)), path
    for h in ("content-type", "x-split-inputs", "x-truncated-inputs", "retry-after", "www-authenticate"):
        assert direct.headers.get(h) == routed.headers.get(h), h


def test_refusals_and_the_body_limit_hold_on_the_direct_way(make_client):
    client = make_client(api_keys="k1", max_body_bytes=2000)
    for path in ("/v1/embeddings", "/embed"):
        assert ("POST", path) in gate_of(client).direct
        assert client.post(path, json={"input": "a cat", "inputs": "a cat"}).status_code == 401
        big = json.dumps({"input": "a cat " * 1000}).encode()
        assert client.post(path, content=big, headers={"Authorization": "Bearer k1", "Content-Type": "application/json"}).status_code == 413


def test_an_unexpected_exception_on_the_router_s_way_is_a_json_500(client, caplog, monkeypatch):
    monkeypatch.setattr(client.app.state.core.embedding, "describe", lambda name: 1 / 0)
    with caplog.at_level(logging.ERROR, logger="thoughtvec.service.http.middleware"):
        r = client.get("/v1/models/tiny")
    assert r.status_code == 500 and r.json()["error"]["code"] == "internal_error"
    assert any(rec.exc_info for rec in caplog.records)
    sample = client.app.state.core.metrics.registry.get_sample_value
    assert sample("thoughtvec_requests_total", {"route": "/v1/models/{name}", "method": "GET", "status": "500"}) == 1


class Body(BaseModel):
    text: str


async def plain(body: Body, request: Request) -> Response:
    return Response(body.text)


def test_a_route_an_earlier_route_would_take_is_left_to_the_router():
    router = APIRouter(route_class=JsonRoute)
    router.add_api_route("/items/special", plain, methods=["POST"])  # first: the router picks it, so may the gate
    router.add_api_route("/things/{name}", plain, methods=["POST"])
    router.add_api_route("/things/special", plain, methods=["POST"])  # shadowed by /things/{name}
    table = {("POST", r.path): Access.key for r in router.routes}
    assert set(direct_table(router.routes, table)) == {("POST", "/items/special")}
