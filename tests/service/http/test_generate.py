"""``POST /v1/generate`` over tiny trained bundles: the answer's shape, the API key, the errors' shape, the
model's queue shared with every request (429 with ``Retry-After``; 413 for more than it holds), long texts, and
the default generation model (``GET /v1/generate/models``)."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from tests.decoder_bundles import decoder_models
from tests.service.conftest import live_server, serve_test, settings_for
from thoughtvec.service.core.decoding import Decoder
from thoughtvec.service.core.generation import STEP_PLACES

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


def test_the_default_generation_model_and_the_list(client, tmp_path_factory):
    listing = client.get("/v1/generate/models").json()
    assert listing["default"] == "uni-skip" and [m["id"] for m in listing["data"]] == ["mean-max-aae", "uni-skip"]
    assert listing["data"][0] == {"id": "mean-max-aae", "tasks": ["reconstruct"], "view": "mean_max", "max_tokens": 40, "default": False}
    models = decoder_models(tmp_path_factory)
    settings = settings_for(models, tmp_path_factory.mktemp("idx"), default_model="tiny", warmup=False)  # no decoder
    with serve_test(settings) as c:
        assert c.get("/v1/generate/models").json()["default"] == "mean-max-aae"  # first with one in the guide's order
        r = c.post("/v1/generate", json={"input": "anna walked into the garden ."})
        assert r.status_code == 200 and r.json()["model"] == "mean-max-aae" and r.json()["task"] == "reconstruct", r.text


def test_long_texts_are_413_unless_truncated(client):
    long = "anna walked into the garden . " * 100
    r = client.post("/v1/generate", json={"input": "anna walked .", "to": long})
    err = r.json()["error"]
    assert r.status_code == 413 and err["field"] == "to" and "max_input_tokens of model 'uni-skip'" in err["message"], r.text
    r = client.post("/v1/generate", json={"input": long, "truncation": "truncate"})
    assert r.status_code == 200 and r.json()["usage"]["truncated_inputs"] == 1 and r.headers["x-truncated-inputs"] == "1", r.text
    assert r.json()["notes"][0].startswith("input was cut to ") and "(truncation: truncate)" in r.json()["notes"][0]
    r = client.post("/v1/generate", json={"input": "anna walked .", "truncation": "split"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "truncation"
    assert "notes" not in client.post("/v1/generate", json={"input": "anna walked ."}).json()


def test_more_work_than_the_queue_holds_is_413(client):
    body = {"input": "anna walked .", "story": 16, "decoding": "beam", "beam_width": 8}
    r = client.post("/v1/generate", json=body)
    err = r.json()["error"]
    assert r.status_code == 413 and err["field"] == "max_tokens", r.text
    assert "story 16, beam_width 8, max_tokens 32" in err["message"] and "the limit is 2048 (max_queue_size)" in err["message"]


def test_concurrent_requests_beyond_the_room_get_429(tmp_path_factory, monkeypatch):
    """The queue holds one request's places: the others of a burst are refused at once with Retry-After while the
    admitted one decodes, and the places are given back."""
    models = decoder_models(tmp_path_factory)
    room = 6 * sum(STEP_PLACES["recurrent"])  # a greedy sentence of 6 words
    settings = settings_for(models, tmp_path_factory.mktemp("idx"), default_model="uni-skip", warmup=False, max_queue_size=room,
                            retry_after_s=4)  # fmt: skip
    step = Decoder.step

    def slow(self, *args):  # decoding takes long enough for the burst to arrive while it runs
        time.sleep(0.05)
        return step(self, *args)

    body = {"input": "anna walked into the garden .", "max_tokens": 6}
    with live_server(settings) as (base, app):
        assert httpx.post(base + "/v1/generate", json=body).status_code == 200  # the decoder loaded
        monkeypatch.setattr(Decoder, "step", slow)

        async def burst():
            async with httpx.AsyncClient(base_url=base, timeout=30) as c:
                return await asyncio.gather(*(c.post("/v1/generate", json=body) for _ in range(6)))

        answers = asyncio.run(burst())
        codes = [r.status_code for r in answers]
        assert 200 in codes and 429 in codes and set(codes) == {200, 429}, codes
        busy = next(r for r in answers if r.status_code == 429)
        assert busy.headers["retry-after"] == "4" and busy.json()["error"]["code"] == "queue_full"
        assert f"the limit is {room}" in busy.json()["error"]["message"]
        assert all(r.json()["data"][0]["tokens"] for r in answers if r.status_code == 200)
        assert app.state.core.embedding.model("uni-skip").batcher._held == 0
        assert httpx.post(base + "/v1/generate", json=body).status_code == 200
