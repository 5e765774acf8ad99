"""Each endpoint's happy path through HTTP (TestClient, tiny bundles)."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from tests.service.conftest import SENTENCES
from thoughtvec.service.bundle.heads import load
from thoughtvec.service.core.encoder import Encoder


def test_health_ready_models(client, models_dir):
    assert client.get("/health").json() == {"status": "ok"}
    ready = client.get("/ready").json()
    assert ready["ready"] and ready["models"] == {"tiny": "ready", "tiny2": "ready"} and ready["pending"] == []
    data = client.get("/v1/models").json()["data"]
    tiny = next(m for m in data if m["id"] == "tiny")
    assert tiny["family"] == "skip-thought" and tiny["variant"] == "tiny-test" and tiny["dimension"] == 8
    assert set(tiny["views"]) == {"mean", "meanmax"} and tiny["max_input_tokens"] == 32
    assert tiny["default"] and tiny["relatedness_head"] and "CPUExecutionProvider" in tiny["providers"]
    assert tiny["runtime"]["name"] == "onnxruntime" and tiny["runtime"]["precision"] == "float32"  # the bundle's choice
    assert "the bundle's choice" in tiny["runtime"]["note"]
    assert client.get("/v1/models/tiny2").json()["dimension"] == 4
    assert "/v1/embeddings" in client.get("/openapi.json").json()["paths"]


def test_the_model_list_is_a_summary_and_each_model_has_its_provenance(client):
    listed = client.get("/v1/models").json()["data"]
    assert all("training" not in m for m in listed)  # the bundles' training records: one model at a time
    tiny = client.get("/v1/models/tiny").json()
    assert tiny["training"] == {"note": "not trained: fixed random embeddings"}
    assert {k: v for k, v in tiny.items() if k != "training"} == next(m for m in listed if m["id"] == "tiny")
    alias = client.get("/v1/models/text-embedding-ada-002").json()
    assert alias["training"] == tiny["training"] and alias["views"] == tiny["views"] and alias["alias_of"] == "tiny"
    assert next(m for m in listed if m["id"] == "text-embedding-ada-002") == {
        "id": "text-embedding-ada-002",
        "object": "model",
        "created": 0,
        "owned_by": "thoughtvec",
        "dimension": 8,
        "default": False,
        "alias_of": "tiny",
    }


def test_an_idle_server_reports_no_batches(client):
    """Warm-up runs are not traffic: the batch histograms start empty (and /metrics small) until requests come."""
    sample = client.app.state.core.metrics.registry.get_sample_value
    for name in ("thoughtvec_batch_size_count", "thoughtvec_batch_tokens_count", "thoughtvec_inference_seconds_count"):
        assert not sample(name, {"model": "tiny"}), name
    assert sample("thoughtvec_tokens_total", {"model": "tiny"}) == 0  # the counters are there, at zero
    assert client.post("/v1/embeddings", json={"input": "the cat", "model": "tiny"}).status_code == 200
    assert sample("thoughtvec_batch_size_count", {"model": "tiny"}) == 1


def test_embeddings_match_the_encoder(client, models_dir):
    enc = Encoder.load(models_dir / "tiny")
    r = client.post("/v1/embeddings", json={"input": SENTENCES, "model": "tiny"})
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "list" and body["model"] == "tiny"
    assert [d["index"] for d in body["data"]] == list(range(len(SENTENCES)))
    got = np.array([d["embedding"] for d in body["data"]])
    np.testing.assert_allclose(got, enc.encode(SENTENCES), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    tokens = sum(len(enc.token_ids(s)) for s in SENTENCES)
    assert body["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens, "split_inputs": 0, "truncated_inputs": 0}


def test_embeddings_string_base64_view_and_raw(client, models_dir):
    enc = Encoder.load(models_dir / "tiny")
    one = client.post("/v1/embeddings", json={"input": "the cat sat"}).json()  # default model
    assert len(one["data"]) == 1 and one["model"] == "tiny"
    b64 = client.post("/v1/embeddings", json={"input": ["the cat sat"], "encoding_format": "base64"}).json()
    vec = np.frombuffer(base64.b64decode(b64["data"][0]["embedding"]), "<f4")
    np.testing.assert_allclose(vec, one["data"][0]["embedding"], atol=1e-7)
    mm = client.post("/v1/embeddings", json={"input": ["the cat sat"], "view": "meanmax", "normalize": False}).json()
    np.testing.assert_allclose(mm["data"][0]["embedding"], enc.encode(["the cat sat"], "meanmax", normalize=False)[0], atol=1e-6)
    other = client.post("/v1/embeddings", json={"input": ["the cat sat"], "model": "tiny2"}).json()
    assert len(other["data"][0]["embedding"]) == 4


def test_similarity_pairs_and_source_targets(client, models_dir):
    enc = Encoder.load(models_dir / "tiny")
    head = load(models_dir / "tiny" / "relatedness.npz")
    pairs = [["the cat sat", "the dog sat"], ["a man", "a man"], ["she walked", "the cat sat"]]
    body = client.post("/v1/similarity", json={"pairs": pairs}).json()
    u = enc.encode([p[0] for p in pairs])
    v = enc.encode([p[1] for p in pairs])
    np.testing.assert_allclose([d["score"] for d in body["data"]], (u * v).sum(1), atol=1e-6)
    assert body["data"][1]["score"] == 1.0
    raw_u = enc.encode([p[0] for p in pairs], normalize=False)
    raw_v = enc.encode([p[1] for p in pairs], normalize=False)
    np.testing.assert_allclose([d["relatedness"] for d in body["data"]], head.predict(raw_u, raw_v), atol=1e-5)
    assert all(1 <= d["relatedness"] <= 5 for d in body["data"])
    st = client.post("/v1/similarity", json={"source": "the cat sat", "targets": ["the dog sat", "she walked"]}).json()
    np.testing.assert_allclose([d["score"] for d in st["data"]], [body["data"][0]["score"], body["data"][2]["score"]], atol=1e-6)
    no_head = client.post("/v1/similarity", json={"model": "tiny2", "pairs": pairs}).json()
    assert "relatedness" not in no_head["data"][0]


def test_index_lifecycle_and_search(client):
    r = client.post("/v1/indexes", json={"name": "docs", "model": "tiny", "factory": "Flat", "mode": "dense"})
    assert r.status_code == 201 and r.json()["documents"] == 0 and r.json()["mode"] == "dense"
    docs = [{"text": s, "id": f"d{i}", "metadata": {"n": i}} for i, s in enumerate(SENTENCES)]
    r = client.post("/v1/indexes/docs/documents", json={"documents": docs[:4]})
    assert r.status_code == 200 and r.json()["ids"] == ["d0", "d1", "d2", "d3"]
    r = client.post("/v1/indexes/docs/documents", json={"documents": docs[4:] + [{"text": "no id given"}]})
    assert r.json()["documents"] == len(SENTENCES) + 1 and len(r.json()["ids"][-1]) == 32
    hit = client.post("/v1/search", json={"index": "docs", "query": SENTENCES[2], "k": 3}).json()
    top = hit["results"][0][0]
    assert top["id"] == "d2" and top["text"] == SENTENCES[2] and top["metadata"] == {"n": 2} and abs(top["score"] - 1) < 1e-5
    assert len(hit["results"][0]) == 3 and hit["metric"] == "cosine" and hit["mode"] == "dense"
    many = client.post("/v1/search", json={"index": "docs", "query": [SENTENCES[0], SENTENCES[3]], "k": 1}).json()
    assert [r[0]["id"] for r in many["results"]] == ["d0", "d3"]
    vec = client.post("/v1/embeddings", json={"input": SENTENCES[5]}).json()["data"][0]["embedding"]
    by_vec = client.post("/v1/search", json={"index": "docs", "query": vec, "k": 1}).json()
    assert by_vec["results"][0][0]["id"] == "d5"
    r = client.post("/v1/indexes/docs/documents/delete", json={"ids": ["d2", "nope"]})
    assert r.json()["deleted"] == ["d2"] and r.json()["not_found"] == ["nope"]
    assert client.delete("/v1/indexes/docs/documents/d3").json()["deleted"] == ["d3"]
    after = client.post("/v1/search", json={"index": "docs", "query": SENTENCES[2], "k": 10}).json()
    assert {"d2", "d3"}.isdisjoint(h["id"] for h in after["results"][0])
    stats = client.get("/v1/indexes/docs").json()
    assert stats["documents"] == len(SENTENCES) - 1 and stats["factory"] == "Flat"
    assert [i["name"] for i in client.get("/v1/indexes").json()["data"]] == ["docs"]
    assert client.delete("/v1/indexes/docs").status_code == 204
    assert client.get("/v1/indexes").json()["data"] == []


def test_other_factories_and_metrics(client):
    for name, factory, metric in [("h", "HNSW32", "cosine"), ("ivf", "IVF4,Flat", "l2"), ("pq", "PQ2x4", "ip")]:
        body = {"name": name, "model": "tiny2", "factory": factory, "metric": metric, "train_size": 30, "mode": "dense"}
        assert client.post("/v1/indexes", json=body).status_code == 201, client.post("/v1/indexes", json=body).text
        docs = [{"text": f"{s} {i}", "id": str(i)} for i, s in enumerate(SENTENCES * 6)]
        client.post(f"/v1/indexes/{name}/documents", json={"documents": docs[:10]})
        res = client.post("/v1/search", json={"index": name, "query": docs[3]["text"], "k": 2}).json()["results"][0]
        assert res[0]["id"] == "3"  # exact while untrained (HNSW: exact enough at this size)
        client.post(f"/v1/indexes/{name}/documents", json={"documents": docs[10:]})
        stats = client.get(f"/v1/indexes/{name}").json()
        assert stats["trained"] and stats["documents"] == len(docs)
        client.post(f"/v1/indexes/{name}/documents/delete", json={"ids": ["3"]})  # HNSW: tombstone
        res = client.post("/v1/search", json={"index": name, "query": docs[3]["text"], "k": 5}).json()["results"][0]
        assert "3" not in [h["id"] for h in res] and len(res) == 5


def test_a_dead_worker_turns_ready_false(client):
    core = client.app.state.core
    batcher = core.embedding.registry.models["tiny2"].batcher
    client.portal.call(lambda: _cancel(batcher))
    for _ in range(100):
        if not batcher.alive:
            break
    r = client.get("/ready")
    assert r.status_code == 503 and r.json()["models"]["tiny2"] == "dead worker"
    r = client.post("/v1/embeddings", json={"input": "x", "model": "tiny2"})
    assert r.status_code == 503 and r.json()["error"]["code"] == "worker_dead"


async def _cancel(batcher):
    import asyncio

    batcher._task.cancel()
    await asyncio.sleep(0.01)


def test_every_answer_is_checked_against_the_schema(client):
    """serve_test's clients validate each documented JSON answer (tests/service/openapi_check.py); a wrong body fails."""
    checker = client.app.state.response_checker
    before = checker.checked
    client.post("/v1/similarity", json={"pairs": [["the cat", "a dog"]]})
    client.post("/v1/embeddings", json={"input": "the cat", "encoding_format": "base64"})
    client.post("/v1/embeddings", json={"input": ""})  # 422, ErrorBody
    assert checker.checked == before + 3
    with pytest.raises(AssertionError, match="does not match its OpenAPI schema"):
        checker.check("POST", "/v1/similarity", 200, b'{"object": "list", "model": "tiny", "data": [{"index": 0, "score": "high"}]}')


def test_models_are_timed_at_warm_up_unless_planning_is_greedy(make_client):
    timed = make_client().app.state.core.embedding.registry.models
    assert all(m.batcher.cost is not None and m.batcher.cost.per_row_step > 0 for m in timed.values())
    greedy = make_client(batch_planning="greedy").app.state.core.embedding.registry.models
    assert all(m.batcher.cost is None for m in greedy.values())
