"""API keys on and off, admin keys for index writes, CORS, and /metrics counters moving."""

from __future__ import annotations

import re


def test_no_keys_configured_means_open(client):
    assert client.post("/v1/embeddings", json={"input": "the cat"}).status_code == 200
    assert client.post("/v1/indexes", json={"name": "a", "model": "tiny"}).status_code == 201


def test_api_keys_protect_everything_but_health(make_client):
    c = make_client(api_keys="k1,k2", admin_keys="boss")
    assert c.get("/health").status_code == 200
    for method, path in [("get", "/ready"), ("get", "/v1/models"), ("get", "/metrics"), ("get", "/docs"), ("get", "/v1/indexes")]:
        r = getattr(c, method)(path)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", path
        assert r.json()["error"]["field"] == "Authorization"
    r = c.post("/v1/embeddings", json={"input": "x"}, headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401 and "not valid" in r.json()["error"]["message"]
    ok = {"Authorization": "Bearer k2"}
    assert c.post("/v1/embeddings", json={"input": "x"}, headers=ok).status_code == 200
    # index writes need the admin key; an ordinary key may read
    r = c.post("/v1/indexes", json={"name": "a", "model": "tiny"}, headers=ok)
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    boss = {"Authorization": "Bearer boss"}
    assert c.post("/v1/indexes", json={"name": "a", "model": "tiny"}, headers=boss).status_code == 201
    assert c.post("/v1/indexes/a/documents", json={"documents": [{"text": "x"}]}, headers=ok).status_code == 403
    assert c.post("/v1/indexes/a/documents", json={"documents": [{"text": "x"}]}, headers=boss).status_code == 200
    assert c.post("/v1/search", json={"index": "a", "query": "x"}, headers=ok).status_code == 200
    assert c.delete("/v1/indexes/a", headers=ok).status_code == 403


def test_admin_keys_alone_guard_only_writes(make_client):
    c = make_client(admin_keys="boss")
    assert c.get("/v1/models").status_code == 200
    r = c.post("/v1/indexes", json={"name": "a", "model": "tiny"})
    assert r.status_code == 401 and "admin key" in r.json()["error"]["message"]


def test_cors(make_client):
    c = make_client(cors_origins="https://app.example")
    r = c.options("/v1/embeddings", headers={"Origin": "https://app.example", "Access-Control-Request-Method": "POST"})
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "https://app.example"
    r = c.get("/health", headers={"Origin": "https://other.example"})
    assert "access-control-allow-origin" not in r.headers


def metric(text: str, name: str, **labels) -> float:
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            if all(f'{k}="{v}"' in line for k, v in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
    return total


def test_metrics_counters_move(client):
    before = client.get("/metrics").text
    client.post("/v1/embeddings", json={"input": ["the cat", "a dog ran"]})
    client.post("/v1/embeddings", json={"input": []})
    client.post("/v1/indexes", json={"name": "m", "model": "tiny"})
    client.post("/v1/indexes/m/documents", json={"documents": [{"text": "x"}, {"text": "y"}]})
    after = client.get("/metrics").text
    route = dict(route="/v1/embeddings", method="POST")
    assert (
        metric(after, "thoughtvec_requests_total", status="200", **route)
        == metric(before, "thoughtvec_requests_total", status="200", **route) + 1
    )
    assert (
        metric(after, "thoughtvec_requests_total", status="422", **route)
        == metric(before, "thoughtvec_requests_total", status="422", **route) + 1
    )
    assert metric(after, "thoughtvec_request_seconds_count", status="200", **route) >= 1
    assert metric(after, "thoughtvec_batch_size_count", model="tiny") > metric(before, "thoughtvec_batch_size_count", model="tiny")
    assert metric(after, "thoughtvec_batch_tokens_sum", model="tiny") > metric(before, "thoughtvec_batch_tokens_sum", model="tiny")
    assert metric(after, "thoughtvec_queue_wait_seconds_count", model="tiny") > 0
    assert metric(after, "thoughtvec_inference_seconds_count", model="tiny") > 0
    assert metric(after, "thoughtvec_queue_depth", model="tiny") == 0
    assert metric(after, "thoughtvec_index_documents", index="m") == 2
    client.get("/no/such/path")
    assert re.search(r'thoughtvec_requests_total\{method="GET",route="unmatched",status="404"\} 1', client.get("/metrics").text)
