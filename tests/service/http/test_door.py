"""The door (``service/http/door.py``): the bodies that took seconds to refuse are refused at their first problem, on
every route (the express lane's and FastAPI's), with one problem named; what passes is answered as before.
Timings are the benchmark's (``bench/hostile_bench.py``); here only what is answered."""

from __future__ import annotations

import json

import pytest

JSON = {"Content-Type": "application/json"}


def unknown_keys(n: int, last: dict) -> bytes:
    return ("{" + ",".join(f'"k{i}":1' for i in range(n)) + "," + json.dumps(last)[1:]).encode()


@pytest.mark.parametrize(
    ("path", "last", "field"),
    [
        ("/v1/embeddings", {"input": "x"}, "k0"),  # the express lane's
        ("/embed", {"inputs": "x"}, "k0"),
        ("/v1/indexes", {"name": "z"}, "k0"),  # FastAPI's
        ("/v1/generate", {"input": "x"}, "k0"),
    ],
)
def test_a_body_of_400k_unknown_keys_is_refused_naming_the_first(client, path, last, field):
    r = client.post(path, content=unknown_keys(400_000, last), headers=JSON)
    assert r.status_code == 422, r.text
    text = r.text
    assert "k0" in text and "more problem" not in text and len(text) < 400


def test_unknown_keys_deep_in_a_body_are_refused_where_they_are(client):
    docs = [{"text": "a"}] * 3 + [{"text": "b", **{f"colour{i}": 1 for i in range(1000)}}]
    r = client.post("/v1/indexes/nowhere/documents", json={"documents": docs})
    assert r.status_code == 422 and r.json()["error"]["field"] == "documents[3].colour0", r.text


def test_a_wide_metadata_object_is_refused_naming_the_limit(client):
    meta = {f"m{i}": 1 for i in range(100_000)}
    r = client.post("/v1/indexes/nowhere/documents", json={"documents": [{"text": "a", "metadata": meta}]})
    err = r.json()["error"]
    assert r.status_code == 413 and err["field"] == "documents[0].metadata" and "keys" in err["message"], r.text


def test_a_long_array_is_refused_before_it_is_parsed(make_client):
    client = make_client(max_inputs=10, max_request_tokens=100)
    r = client.post("/v1/embeddings", content=b'{"input": [' + b",".join([b"1"] * 1_000_000) + b"]}", headers=JSON)
    assert r.status_code == 413 and r.json()["error"]["field"] == "input" and "items" in r.json()["error"]["message"]


def test_a_15_mb_integer_is_refused_without_pythons_hint(make_client):
    client = make_client(max_body_bytes=32 * 2**20)
    r = client.post("/v1/indexes", content=b'{"name": "z", "train_size": 1' + b"0" * 15_000_000 + b"}", headers=JSON)
    assert r.status_code == 422 and r.json()["error"]["field"] == "train_size"
    assert "sys." not in r.text and "set_int_max_str_digits" not in r.text


def test_a_chunked_body_over_the_limit_is_413_while_it_streams(make_client):
    client = make_client(max_body_bytes=4096)

    def chunks():
        yield b'{"input": "'
        for _ in range(100):
            yield b"a" * 1000
        yield b'"}'

    r = client.post("/v1/embeddings", content=chunks(), headers=JSON)
    assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"


def test_a_body_within_every_limit_is_answered(client):
    r = client.post("/v1/embeddings", json={"input": ["a cat sat ."] * 300, "encoding_format": "base64"})
    assert r.status_code == 200 and len(r.json()["data"]) == 300


def test_requests_are_counted_under_their_route_on_either_way(client):
    sample = client.app.state.core.metrics.registry.get_sample_value

    def count(route: str, status: str) -> float:
        return sample("thoughtvec_requests_total", {"route": route, "method": "POST", "status": status}) or 0.0

    before = (count("/v1/embeddings", "200"), count("/v1/embeddings", "422"), count("/v1/indexes/{name}/documents", "422"))
    client.post("/v1/embeddings", json={"input": "a cat sat ."})
    client.post("/v1/embeddings", json={"input": "a cat sat .", "modle": "x"})
    client.post("/v1/indexes/nowhere/documents", json={"documents": [{"txt": "a"}]})
    after = (count("/v1/embeddings", "200"), count("/v1/embeddings", "422"), count("/v1/indexes/{name}/documents", "422"))
    assert [b - a for a, b in zip(before, after)] == [1, 1, 1]


def test_a_document_id_path_is_any_id_but_delete(client):
    client.post("/v1/indexes", json={"name": "ids", "model": "tiny"})
    client.post("/v1/indexes/ids/documents", json={"documents": [{"text": "a cat", "id": "delete"}, {"text": "a dog", "id": "d1"}]})
    r = client.delete("/v1/indexes/ids/documents/delete")
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    assert client.delete("/v1/indexes/ids/documents/d1").json()["deleted"] == ["d1"]
    assert client.post("/v1/indexes/ids/documents/delete", json={"ids": ["delete"]}).json()["deleted"] == ["delete"]
