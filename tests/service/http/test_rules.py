"""Every request rule (API keys, admin keys for index writes, the body limit, CORS) holds in the app (bodies
with a Content-Length and chunked ones) and in a real ``thoughtvec serve`` process over a socket.

The rules are defined once (``thoughtvec.service.http.rules``); these tests send the same requests
each way and expect the same answers.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.service.conftest import serve_process

KEY, ADMIN, ORIGIN, LIMIT = "k1", "boss", "https://app.example", 2048
RULES = {"api_keys": KEY, "admin_keys": ADMIN, "max_body_bytes": LIMIT, "cors_origins": ORIGIN}
WAYS = ["app", "serve"]
JSON = {"Content-Type": "application/json"}
EMBED = b'{"input": "the cat sat"}'


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def chunked(body: bytes, size: int = 512) -> Iterator[bytes]:
    """A generator: httpx sends it with ``Transfer-Encoding: chunked``, no Content-Length."""
    for i in range(0, len(body), size):
        yield body[i : i + size]


@pytest.fixture(params=WAYS)
def way(request, make_client, models_dir, tmp_path) -> Iterator[tuple[str, httpx.Client]]:
    """(the way, a client that sends requests that way)."""
    if request.param != "serve":
        yield request.param, make_client(**RULES)
        return
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in RULES.items()]
    proc, base = serve_process(models_dir, "--index-dir", str(tmp_path / "idx"), *flags, key=KEY)
    try:
        with httpx.Client(base_url=base, timeout=20) as client:
            yield request.param, client
    finally:
        proc.terminate()
        proc.wait(20)


def test_a_missing_or_invalid_key_is_401(way):
    _, c = way
    for headers in ({}, auth("wrong"), {"Authorization": "Basic k1"}):
        r = c.post("/v1/embeddings", content=EMBED, headers=JSON | headers)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", (headers, r.text)
        assert r.json()["error"]["code"] == "unauthorized" and r.json()["error"]["field"] == "Authorization"
    assert c.get("/v1/models").status_code == 401
    assert c.get("/health").status_code == 200  # open
    assert c.post("/v1/embeddings", content=EMBED, headers=JSON | auth(KEY)).status_code == 200
    assert c.post("/v1/embeddings", content=EMBED, headers=JSON | auth(ADMIN)).status_code == 200  # admin keys are API keys
    assert c.post("/v1/embeddings", content=chunked(EMBED), headers=JSON).status_code == 401  # chunked: the same rule
    assert c.post("/v1/embeddings", content=chunked(EMBED), headers=JSON | auth(KEY)).status_code == 200


def test_index_writes_need_an_admin_key(way):
    _, c = way
    create = {"name": "notes", "model": "tiny"}
    r = c.post("/v1/indexes", json=create, headers=auth(KEY))
    assert r.status_code == 403 and r.json()["error"] == {
        "code": "forbidden",
        "message": "this key may not write indexes; use an admin key",
        "field": "Authorization",
    }
    assert c.post("/v1/indexes", json=create).status_code == 401
    assert c.post("/v1/indexes", json=create, headers=auth(ADMIN)).status_code == 201
    docs = {"documents": [{"id": "a", "text": "the cat sat"}]}
    assert c.post("/v1/indexes/notes/documents", json=docs, headers=auth(KEY)).status_code == 403
    assert c.post("/v1/indexes/notes/documents", json=docs, headers=auth(ADMIN)).status_code == 200
    assert c.post("/v1/indexes/notes/documents/delete", json={"ids": ["a"]}, headers=auth(KEY)).status_code == 403
    assert c.delete("/v1/indexes/notes", headers=auth(KEY)).status_code == 403
    assert c.post("/v1/search", json={"index": "notes", "query": "a cat"}, headers=auth(KEY)).status_code == 200  # reads: any key
    assert c.delete("/v1/indexes/notes", headers=auth(ADMIN)).status_code == 204


@pytest.mark.parametrize("send", ["content-length", "chunked"])
def test_a_body_over_the_limit_is_413(way, send):
    _, c = way
    big = b'{"input": "%s"}' % (b"a " * LIMIT)
    r = c.post("/v1/embeddings", content=big if send == "content-length" else chunked(big), headers=JSON | auth(KEY))
    error = r.json()["error"]
    assert r.status_code == 413 and error["code"] == "body_too_large" and error["field"] == "body", r.text
    assert str(LIMIT) in error["message"] and "max_body_bytes" in error["message"]
    r = c.post("/v1/similarity", content=big, headers=JSON | auth(KEY))  # another route, the same rule
    assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"


def test_cors_preflight_and_headers(way):
    _, c = way
    preflight = {"Origin": ORIGIN, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"}
    r = c.options("/v1/embeddings", headers=preflight)  # no key: a preflight never carries one
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == ORIGIN
    assert {"GET", "POST", "DELETE"} <= {m.strip() for m in r.headers["access-control-allow-methods"].split(",")}
    assert {"authorization", "content-type"} <= {h.strip().lower() for h in r.headers["access-control-allow-headers"].split(",")}
    assert c.options("/v1/embeddings", headers=preflight | {"Origin": "https://other.example"}).status_code == 400
    ok = c.post("/v1/embeddings", content=EMBED, headers=JSON | auth(KEY) | {"Origin": ORIGIN})
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == ORIGIN
    for answer in (  # errors carry the headers too, so a page can read them
        c.post("/v1/embeddings", content=EMBED, headers=JSON | {"Origin": ORIGIN}),
        c.post("/v1/embeddings", content=b"x" * (LIMIT + 1), headers=JSON | auth(KEY) | {"Origin": ORIGIN}),
    ):
        assert answer.status_code in (401, 413) and answer.headers["access-control-allow-origin"] == ORIGIN
    other = c.post("/v1/embeddings", content=EMBED, headers=JSON | auth(KEY) | {"Origin": "https://other.example"})
    assert other.status_code == 200 and "access-control-allow-origin" not in other.headers
