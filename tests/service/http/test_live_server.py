"""Against a real uvicorn on 127.0.0.1: the official openai client, batch invariance under
concurrency, 429 with Retry-After when the queue overflows. Bounded request counts and times."""

from __future__ import annotations

import asyncio
import base64
import threading
import time

import httpx
import numpy as np
import pytest

from tests.service.conftest import SENTENCES, live_server, settings_for
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.settings import COHERE_MODEL_NAMES, OPENAI_MODEL_NAMES


@pytest.fixture(scope="module")
def server(models_dir, tmp_path_factory):
    settings = settings_for(models_dir, tmp_path_factory.mktemp("idx"), max_batch_size=8, max_wait_ms=5)
    with live_server(settings) as (base, app):
        yield base, app


def test_official_openai_client(server, models_dir):
    openai = pytest.importorskip("openai")
    base, _ = server
    client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=10)
    enc = Encoder.load(models_dir / "tiny")
    res = client.embeddings.create(model="tiny", input=SENTENCES[:3])  # the client asks for base64
    assert res.model == "tiny" and [d.index for d in res.data] == [0, 1, 2]
    np.testing.assert_allclose(np.array([d.embedding for d in res.data]), enc.encode(SENTENCES[:3]), atol=1e-6)
    assert res.usage.prompt_tokens == sum(len(enc.token_ids(s)) for s in SENTENCES[:3])
    single = client.embeddings.create(model="tiny", input="the cat sat", encoding_format="float")
    assert len(single.data[0].embedding) == 8
    assert {m.id for m in client.models.list()} == {"tiny", "tiny2", *OPENAI_MODEL_NAMES, *COHERE_MODEL_NAMES}
    with pytest.raises(openai.NotFoundError, match="no model 'nope'"):
        client.embeddings.create(model="nope", input="x")
    with pytest.raises(openai.UnprocessableEntityError, match=r"input\[1\] is empty"):
        client.embeddings.create(model="tiny", input=["ok", " "])


def test_vectors_do_not_depend_on_batching_under_concurrency(server, models_dir):
    base, app = server
    enc = Encoder.load(models_dir / "tiny")
    alone = {s: enc.encode([s], batch_size=1)[0] for s in SENTENCES}
    rng = np.random.default_rng(0)
    requests = [list(rng.choice(SENTENCES, size=rng.integers(1, 6))) for _ in range(60)]
    sample = app.state.core.metrics.registry.get_sample_value  # the app's own registry, read as /metrics shows it
    sentences_before = sample("thoughtvec_batch_size_sum", {"model": "tiny"})

    async def run():
        async with httpx.AsyncClient(base_url=base, timeout=20) as c:
            return await asyncio.gather(
                *(c.post("/v1/embeddings", json={"model": "tiny", "input": r, "encoding_format": "base64"}) for r in requests)
            )

    answers = asyncio.run(run())
    for req, r in zip(requests, answers):
        assert r.status_code == 200, r.text
        for text, d in zip(req, r.json()["data"]):
            got = np.frombuffer(base64.b64decode(d["embedding"]), "<f4")
            np.testing.assert_allclose(got, alone[text], atol=1e-6)
    # the server really did put several requests' sentences in one batch
    assert sample("thoughtvec_batch_size_sum", {"model": "tiny"}) > sentences_before
    batches = sample("thoughtvec_batch_size_count", {"model": "tiny"})
    assert batches - sample("thoughtvec_batch_size_bucket", {"model": "tiny", "le": "2.0"}) > 0  # some batch had more than 2 sentences


def slow_down(app, seconds: float) -> threading.Event:
    """Make the tiny model's ONNX runs take ``seconds`` each (a slow model is what these tests are about);
    the event returned is set when a run starts."""
    model = app.state.core.embedding.registry.models["tiny"]
    run = model.encoder.run_ids
    running = threading.Event()

    def slow(batch, view=None):
        running.set()
        time.sleep(seconds)
        return run(batch, view)

    model.batcher.backend = type(
        "Slow",
        (),
        {"run_ids": staticmethod(slow), "token_ids": model.encoder.token_ids, "fit": model.encoder.fit, "dim": model.encoder.dim},
    )()
    return running


class Watch:
    """The batcher's observer (the app's Metrics), passed every report, with events for the tests to wait on."""

    def __init__(self, metrics):
        self.metrics = metrics
        self.queued = threading.Event()  # two or more sentences wait in the queue
        self.dropped_reported = threading.Event()

    def queue_depth(self, model: str, depth: int) -> None:
        self.metrics.queue_depth(model, depth)
        if depth >= 2:
            self.queued.set()

    def batch_done(self, *args) -> None:
        self.metrics.batch_done(*args)

    def dropped(self, model: str, sentences: int) -> None:
        self.metrics.dropped(model, sentences)
        self.dropped_reported.set()


def test_overfilled_queue_answers_429(models_dir, tmp_path):
    settings = settings_for(models_dir, tmp_path / "idx", max_batch_size=1, max_queue_size=2, max_wait_ms=0, retry_after_s=2)
    with live_server(settings) as (base, app):
        slow_down(app, 0.05)

        async def run():
            async with httpx.AsyncClient(base_url=base, timeout=20) as c:
                return await asyncio.gather(*(c.post("/v1/embeddings", json={"model": "tiny", "input": ["the cat"]}) for _ in range(12)))

        answers = asyncio.run(run())
        codes = [r.status_code for r in answers]
        assert 200 in codes and 429 in codes, codes
        busy = next(r for r in answers if r.status_code == 429)
        assert busy.headers["retry-after"] == "2" and busy.json()["error"]["code"] == "queue_full"
        assert "the limit is 2" in busy.json()["error"]["message"]


def test_requests_of_clients_that_left_are_dropped(models_dir, tmp_path):
    import socket

    settings = settings_for(models_dir, tmp_path / "idx", max_batch_size=1, max_wait_ms=0, concurrent_runs=1)  # one slow run holds
    with live_server(settings) as (base, app):
        running = slow_down(app, 0.4)
        watch = Watch(app.state.core.metrics)
        app.state.core.embedding.registry.models["tiny"].batcher.observer = watch
        port = int(base.rsplit(":", 1)[1])

        async def run():
            async with httpx.AsyncClient(base_url=base, timeout=20) as c:
                first = asyncio.create_task(c.post("/v1/embeddings", json={"model": "tiny", "input": ["the cat"]}))
                assert await asyncio.to_thread(running.wait, 10)  # the worker is busy with the first request
                body = b'{"model": "tiny", "input": ["a dog", "the man"]}'
                sock = socket.create_connection(("127.0.0.1", port))
                sock.sendall(
                    b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                    % (len(body), body)
                )
                assert await asyncio.to_thread(watch.queued.wait, 10)  # its two sentences are queued
                sock.close()  # the client goes away while its sentences wait
                return await first

        assert asyncio.run(run()).status_code == 200
        assert watch.dropped_reported.wait(10)  # reported when the worker next takes from the queue
        dropped = app.state.core.metrics.registry.get_sample_value("thoughtvec_dropped_sentences_total", {"model": "tiny"})
        assert dropped == 2
