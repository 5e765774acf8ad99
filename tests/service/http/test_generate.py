"""``POST /v1/generate`` over tiny trained bundles: the answer's shape, the API key, the errors' shape."""

from __future__ import annotations

import pytest

from tests.decoder_bundles import decoder_models
from tests.service.conftest import serve_test, settings_for

KEY = {"Authorization": "Bearer k1"}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    models = decoder_models(tmp_path_factory)
    settings = settings_for(models, tmp_path_factory.mktemp("idx"), default_model="uni-skip", api_keys=["k1"], warmup=False)
    with serve_test(settings, headers=KEY) as c:
        yield c


def test_a_story_and_its_usage(client):
    r = client.post("/v1/generate", json={"input": "anna walked into the garden .", "story": 2, "max_tokens": 12})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["model"] == "uni-skip" and body["task"] == "next" and body["view"] == "uni" and body["decoding"] == "greedy"
    assert [d["index"] for d in body["data"]] == [0, 1] and "seed" not in body
    assert all(len(d["tokens"]) <= 12 and d["text"] == " ".join(d["tokens"]) for d in body["data"])
    u = body["usage"]
    assert u["prompt_tokens"] > 0 and u["total_tokens"] == u["prompt_tokens"] + sum(len(d["tokens"]) for d in body["data"])


def test_a_vector_from_embeddings_and_a_path(client):
    emb = client.post("/v1/embeddings", json={"input": "ben saw a book there .", "model": "mean-max-aae", "view": "mean_max"}).json()
    vec = emb["data"][0]["embedding"]
    r = client.post(
        "/v1/generate", json={"model": "mean-max-aae", "task": "reconstruct", "input": vec, "to": "the coat was old .", "steps": 3}
    )
    assert r.status_code == 200, r.text
    assert [d["t"] for d in r.json()["data"]] == [0.0, 0.5, 1.0]
    same = client.post("/v1/generate", json={"model": "mean-max-aae", "input": "ben saw a book there ."}).json()
    assert r.json()["data"][0]["text"] == same["data"][0]["text"]  # the unit vector decodes as the text does


def test_sampling_says_its_seed(client):
    body = {"input": "the coat was old and small .", "decoding": "sample", "count": 2, "seed": 3}
    a, b = client.post("/v1/generate", json=body).json(), client.post("/v1/generate", json=body).json()
    assert a["seed"] == 3 and a["data"] == b["data"] and [d["sample"] for d in a["data"]] == [0, 1]


def test_needs_an_api_key(client):
    r = client.post("/v1/generate", json={"input": "hello ."}, headers={"Authorization": ""})
    assert r.status_code == 401 and r.json()["error"]["field"] == "Authorization"


@pytest.mark.parametrize(
    "body, field, words",
    [
        ({"input": "hello .", "model": "tiny"}, "model", "the models that can are ['mean-max-aae', 'uni-skip']"),
        ({"input": "hello .", "max_tokens": 1000}, "max_tokens", "max_generate_tokens"),
        ({"input": "hello .", "decoding": "beam", "beam_width": 100}, "beam_width", "max_beam_width"),
        ({"input": "hello .", "task": "summarise"}, "task", ""),
        ({"input": [1.0, 2.0]}, "input", "2 numbers"),
        ({"input": None}, "input", "send a text or a vector"),
        ({"input": {"text": "hello ."}}, "input", "a text or a list of numbers"),
        ({"input": "hello .", "plus": 3, "minus": "a ."}, "plus", "a text or a list of numbers"),
        ({"input": "hello .", "unknown": 1}, "unknown", ""),
    ],
)
def test_errors_name_the_field(client, body, field, words):
    r = client.post("/v1/generate", json=body)
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["field"] == field and words in err["message"]
