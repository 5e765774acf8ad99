"""Who may call what: the access table (``thoughtvec.service.http.routes.ACCESS``) decides per route and method.

Every route the app serves (those left out of the OpenAPI schema too), with every method, is sent a request
with no key, a wrong key, an API key and an admin key: what the table protects refuses a missing or wrong key (401), an admin route refuses a non-admin key
(403), and only what the table opens answers without a key. A route with no entry keeps the app from starting.
"""

from __future__ import annotations

import re

import httpx
import pytest
from fastapi import APIRouter, FastAPI

from tests.service.conftest import serve_process
from thoughtvec.service.http import app as app_module
from thoughtvec.service.http.error_answers import family
from thoughtvec.service.http.routes import ACCESS
from thoughtvec.service.http.rules import Access

KEY, ADMIN = "k1", "boss"
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
# Path parameters that name something real; any other parameter is filled with "x".
URLS = {"/v1/models/{name}": "/v1/models/tiny", "/docs-assets/{name}": "/docs-assets/favicon.png"}
# A body each POST route would answer 2xx with, so a request let through would do the work.
BODIES = {
    "/": {"inputs": ["the cat sat"]},
    "/embed": {"inputs": ["the cat sat"]},
    "/embed_sparse": {"inputs": ["the cat sat"]},
    "/v1/embeddings": {"input": "the cat sat"},
    "/tokenize": {"input": "the cat sat"},
    "/v1/similarity": {"pairs": [["a cat", "a dog"]]},
    "/v1/rerank": {"query": "a cat", "documents": ["a dog", "the cat sat"]},
    "/rerank": {"query": "a cat", "texts": ["a dog", "the cat sat"]},
    "/v2/rerank": {"query": "a cat", "documents": ["a dog", "the cat sat"]},
    "/v1/embed": {"texts": ["the cat sat"]},
    "/v2/embed": {"texts": ["the cat sat"], "embedding_types": ["int8"]},
    "/v1/search": {"index": "notes", "query": "a cat"},
    "/v1/indexes": {"name": "notes", "model": "tiny"},
    "/v1/indexes/{name}/documents": {"documents": [{"id": "n1", "text": "the cat sat"}]},
    "/v1/indexes/{name}/documents/delete": {"ids": ["n1"]},
    "/v1/indexes/{name}/map": {"limit": 3},
}


def unauthorized(body: dict, path: str) -> bool:
    """A 401's body in the shape of the path's API: ours and OpenAI's name the code and the field; TEI's give the
    message and an error type; Cohere's the message."""
    fam = family({"path": path})
    message = body["error"] if fam == "tei" else body["message"] if fam == "cohere" else body["error"]["message"]
    if not ("Authorization" in message or "API key" in message):
        return False
    if fam == "tei":
        return isinstance(body["error_type"], str)
    if fam == "cohere":
        return True
    return body["error"]["code"] == "unauthorized" and body["error"]["field"] == "Authorization"


def served(app: FastAPI) -> set[tuple[str, str]]:
    """(method, path) of every route the app's router holds, walked here independently of the app's own walk."""
    out: set[tuple[str, str]] = set()
    stack = list(app.router.routes)
    while stack:
        route = stack.pop()
        inner = getattr(route, "original_router", None) or getattr(route, "app", None)
        if inner is not None and hasattr(inner, "routes"):
            stack.extend(inner.routes)
        if hasattr(route, "path") and getattr(route, "methods", None):
            out.update((m, route.path_format) for m in route.methods)
    return out


def url(path: str) -> str:
    return URLS.get(path) or re.sub(r"\{[^}]+\}", "notes" if path.startswith("/v1/indexes") else "x", path)


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def send(client, method: str, path: str, headers: dict[str, str]):
    body = BODIES.get(path, {}) if method in ("POST", "PUT", "PATCH") else None
    return client.request(method, url(path), json=body, headers=headers)


def test_the_table_names_every_route_and_method_the_app_serves(make_client):
    app = make_client().app
    routes = served(app)
    assert routes == set(ACCESS), f"served, not in the table: {routes - set(ACCESS)}; in the table, not served: {set(ACCESS) - routes}"
    schema = {(m.upper(), p) for p, ops in app.openapi()["paths"].items() for m in ops}
    assert schema < routes  # the schema leaves some out (the playground, POST /, the docs pages): the table does not
    assert ACCESS["GET", "/"] is Access.open and ACCESS["POST", "/"] is Access.key
    assert {r for r, a in ACCESS.items() if a is Access.open} == {("GET", "/health"), ("GET", "/"), ("GET", "/favicon.ico")}


def test_a_route_without_an_entry_keeps_the_app_from_starting(monkeypatch, models_dir, tmp_path):
    extra = APIRouter()

    @extra.post("/v1/extra")
    async def unlisted() -> dict:
        return {}

    monkeypatch.setattr(app_module, "ROUTERS", [*app_module.ROUTERS, extra])
    with pytest.raises(ValueError, match=r"POST /v1/extra"):
        app_module.create_app(app_module.Settings(models_dir=models_dir, index_dir=tmp_path, build_default_index=False))


def test_only_what_the_table_opens_answers_without_a_key(make_client):
    c = make_client(api_keys=KEY, admin_keys=ADMIN)
    paths = {p for _, p in served(c.app)} | {"/no/such/route"}
    for path in sorted(paths):
        for method in METHODS:
            access = ACCESS.get((method, path), Access.key)  # what the table does not name (404, 405) needs a key
            for headers in ({}, auth("wrong"), {"Authorization": f"Basic {KEY}"}):
                r = send(c, method, path, headers)
                if access is Access.open:
                    assert r.status_code not in (401, 403), (method, path, headers, r.status_code)
                else:
                    assert r.status_code == 401, (method, path, headers, r.status_code, r.text)
                    assert r.headers["www-authenticate"] == "Bearer"
                    if method != "HEAD":
                        assert unauthorized(r.json(), path), (method, path, r.text)


def test_each_route_takes_the_key_its_entry_names(make_client):
    c = make_client(api_keys=KEY, admin_keys=ADMIN)
    assert c.post("/v1/indexes", json=BODIES["/v1/indexes"], headers=auth(ADMIN)).status_code == 201
    for (method, path), access in sorted(ACCESS.items(), key=lambda e: (e[1] is Access.admin, e[0])):
        if (method, path) == ("DELETE", "/v1/indexes/{name}"):
            continue  # last, below: the other routes use the index
        api, admin = send(c, method, path, auth(KEY)), send(c, method, path, auth(ADMIN))
        assert admin.status_code not in (401, 403), (method, path, admin.status_code, admin.text)
        if access is Access.admin:
            assert api.status_code == 403 and api.json()["error"] == {
                "code": "forbidden",
                "message": "this key may not write indexes; use an admin key",
                "field": "Authorization",
            }, (method, path)
        else:  # admin keys are API keys too
            assert api.status_code not in (401, 403), (method, path, api.status_code, api.text)
    assert c.delete("/v1/indexes/notes", headers=auth(KEY)).status_code == 403
    assert c.delete("/v1/indexes/notes", headers=auth(ADMIN)).status_code == 204


def test_admin_keys_alone_guard_the_admin_routes(make_client):
    c = make_client(admin_keys=ADMIN)
    for (method, path), access in sorted(ACCESS.items()):
        if access is not Access.admin:
            assert send(c, method, path, {}).status_code not in (401, 403), (method, path)
            continue
        none, other = send(c, method, path, {}), send(c, method, path, auth("wrong"))
        assert none.status_code == 401 and "admin key" in none.json()["error"]["message"], (method, path)
        assert other.status_code == 403 and other.json()["error"]["code"] == "forbidden", (method, path)


def test_a_real_server_refuses_tei_embeddings_at_the_base_url_without_a_key(models_dir, tmp_path):
    """What a client of ``thoughtvec serve --api-keys`` meets over a socket: the playground page is open,
    its POST (huggingface_hub's InferenceClient posts TEI's embeddings there) is not."""
    proc, base = serve_process(models_dir, "--index-dir", str(tmp_path / "idx"), f"--api-keys={KEY}", key=KEY)
    try:
        body = {"inputs": ["x"]}
        assert httpx.get(base + "/", timeout=20).status_code == 200
        for headers in ({}, auth("wrong")):
            r = httpx.post(base + "/", json=body, headers=headers, timeout=20)
            assert r.status_code == 401 and unauthorized(r.json(), "/"), r.text
        assert httpx.post(base + "/", json=body, headers=auth(KEY), timeout=20).status_code == 200
    finally:
        proc.terminate()
        proc.wait(20)
