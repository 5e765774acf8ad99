"""The embedding service without HTTP, over a fake runtime: vectors, batching, admission, long inputs, errors."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from tests.service.conftest import SENTENCES
from tests.service.core.fake_runtime import FakeEncoder, fake_services
from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.core.longinput import pool, prepare
from thoughtvec.service.errors import (
    InputTooLong,
    InvalidInput,
    NotReady,
    QueueFull,
    ThoughtvecError,
    TooManyInputs,
    UnknownModel,
    UnknownView,
)

pytestmark = pytest.mark.anyio

LONG = " ".join(["the cat sat on the table ."] * 8)  # 56 words: over the tiny bundle's 32 tokens


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def services(models_dir, tmp_path):
    return lambda **settings: fake_services(models_dir, tmp_path / "indexes", **settings)


async def test_vectors_are_the_models_in_order_with_their_usage(services):
    async with services() as (emb, _, fakes):
        enc = await emb.embeddings(SENTENCES, "tiny", None, normalize=True)
        want = np.stack([fakes["tiny"].expected(s) for s in SENTENCES])
        np.testing.assert_allclose(enc.vectors, want, atol=1e-6)
        assert (enc.model, enc.view, enc.tokens) == ("tiny", "mean", sum(len(fakes["tiny"].token_ids(s)) for s in SENTENCES))
        assert (enc.split, enc.truncated) == (0, 0)
        one = await emb.embeddings(SENTENCES[0], None, "meanmax", normalize=True)  # a string; the default model
        assert one.model == "tiny" and one.vectors.shape == (1, 16)
        np.testing.assert_allclose(one.vectors[0], fakes["tiny"].expected(SENTENCES[0], "meanmax"), atol=1e-6)
        raw = await emb.embeddings(SENTENCES[:2], "tiny2", None, normalize=False)
        np.testing.assert_allclose(raw.vectors[1], fakes["tiny2"].vector(fakes["tiny2"].token_ids(SENTENCES[1])), atol=1e-6)


async def test_normalised_vectors_are_exactly_the_raw_ones_normalised(services):
    """The model's thread normalises each batch beside its run; a request's vectors are those rows, bit for bit
    what normalising its own raw vectors gives, whatever shared its batch."""
    async with services(max_batch_size=4, max_wait_ms=20.0) as (emb, _, fakes):
        fakes["tiny"].gate.clear()  # the requests below queue together, then share batches
        unit = [asyncio.create_task(emb.embeddings(t, "tiny", None, normalize=True)) for t in SENTENCES]
        raw = [asyncio.create_task(emb.embeddings(t, "tiny", None, normalize=False)) for t in SENTENCES]
        assert await asyncio.to_thread(fakes["tiny"].entered.wait, 10)
        fakes["tiny"].gate.set()
        for u, r in zip(await asyncio.gather(*unit), await asyncio.gather(*raw)):
            assert np.array_equal(u.vectors, l2_normalize(r.vectors))
        alone = await emb.embeddings(SENTENCES, "tiny", None, normalize=True, dimensions=None)
        assert np.array_equal(alone.vectors, l2_normalize((await emb.embeddings(SENTENCES, "tiny", None, normalize=False)).vectors))


async def test_a_non_finite_vector_fails_its_own_request_alone(services):
    async with services(max_batch_size=4, max_wait_ms=20.0) as (emb, _, fakes):
        fake = fakes["tiny"]
        bad = "zebra zebra ."
        fake.table[fake.token_ids(bad)[0] % len(fake.table)] = np.nan  # the "model" gives this text NaNs
        fake.gate.clear()  # both requests queue, then share a batch
        calls = [asyncio.create_task(emb.embeddings(t, "tiny", None, normalize=True)) for t in (bad, SENTENCES[0])]
        assert await asyncio.to_thread(fake.entered.wait, 10)
        fake.gate.set()
        failed, served = await asyncio.gather(*calls, return_exceptions=True)
        assert isinstance(failed, ThoughtvecError) and "non-finite" in failed.message
        np.testing.assert_allclose(served.vectors[0], fake.expected(SENTENCES[0]), atol=1e-6)


async def test_concurrent_requests_share_batches_within_the_limits_and_each_gets_its_own(services):
    async with services(max_batch_size=4, max_wait_ms=20.0) as (emb, _, fakes):
        fake = fakes["tiny"]
        fake.gate.clear()  # the first batch waits in the model while the others queue
        texts = SENTENCES * 2
        calls = [asyncio.create_task(emb.embeddings(t, "tiny", None, normalize=True)) for t in texts]
        assert await asyncio.to_thread(fake.entered.wait, 10)
        fake.gate.set()
        results = await asyncio.gather(*calls)
        for t, r in zip(texts, results):
            np.testing.assert_allclose(r.vectors[0], fake.expected(t), atol=1e-6)
        assert sum(fake.batches) == len(texts) and max(fake.batches) > 1 and max(fake.batches) <= 4


async def test_a_full_queue_is_queue_full_before_any_work_and_the_queued_still_finish(services):
    async with services(max_batch_size=1, max_queue_size=2, retry_after_s=3, concurrent_runs=1) as (emb, _, fakes):  # one run holds
        fake = fakes["tiny"]
        batcher = emb.registry.models["tiny"].batcher
        fake.gate.clear()
        running = asyncio.create_task(emb.embeddings("the cat", "tiny", None, normalize=True))
        assert await asyncio.to_thread(fake.entered.wait, 10)  # taken by the worker, held in the model
        queued = [asyncio.create_task(emb.embeddings(t, "tiny", None, normalize=True)) for t in ("a dog", "she walked")]
        for _ in range(500):
            if batcher.depth == 2:
                break
            await asyncio.sleep(0.01)
        assert batcher.depth == 2
        with pytest.raises(QueueFull) as e:
            await emb.embeddings("one more", "tiny", None, normalize=True)
        assert e.value.retry_after_s == 3 and "the limit is 2" in str(e.value)
        with pytest.raises(QueueFull):  # the bulk path of the index service is admitted the same way
            await emb.encode(emb.model("tiny"), "mean", emb.texts(["x"], ["input"]))
        fake.gate.set()
        done = await asyncio.gather(running, *queued)
        assert [len(d.vectors) for d in done] == [1, 1, 1] and fake.batches == [1, 1, 1]


async def test_embed_bulk_waits_its_turn_at_a_full_queue(services):
    async with services(max_batch_size=1, max_queue_size=1) as (emb, _, fakes):
        fake = fakes["tiny"]
        fake.gate.clear()
        blocker = asyncio.create_task(emb.embeddings("the cat", "tiny", None, normalize=True))
        assert await asyncio.to_thread(fake.entered.wait, 10)
        bulk = asyncio.create_task(emb.embed_bulk(emb.model("tiny"), "mean", SENTENCES[:3]))
        await asyncio.sleep(0.05)
        fake.gate.set()
        vectors = await bulk
        await blocker
        want = np.stack([fake.vector(fake.token_ids(s)) for s in SENTENCES[:3]])
        np.testing.assert_allclose(vectors, want, atol=1e-6)


async def test_long_inputs_are_split_truncated_or_rejected_as_asked(services):
    async with services() as (emb, _, fakes):
        fake = fakes["tiny"]
        assert len(fake.token_ids(LONG)) > fake.max_tokens
        with pytest.raises(InputTooLong) as e:
            await emb.embeddings(["short", LONG], "tiny", None, normalize=True, truncation="reject")
        assert e.value.field == "input[1]" and f"the limit is {fake.max_tokens}" in str(e.value)
        cut = await emb.embeddings(["short", LONG], "tiny", None, normalize=True, truncation="truncate")
        assert (cut.truncated, cut.split) == (1, 0)
        kept = fake.fit(fake.token_ids(LONG), "truncate")
        assert len(kept) == fake.max_tokens
        np.testing.assert_allclose(cut.vectors[1], l2_normalize(fake.vector(kept)[None])[0], atol=1e-6)
        split = await emb.embeddings(["short", LONG], "tiny", None, normalize=True, truncation="split")
        assert (split.truncated, split.split) == (0, 1) and split.tokens > fake.max_tokens
        prep = prepare(fake, [LONG], ["input"], "split")
        assert len(prep.parts) > 1
        pooled = pool(np.stack([fake.vector(p) for p in prep.parts]), prep, 1)
        np.testing.assert_allclose(split.vectors[1], l2_normalize(pooled)[0], atol=1e-5)
        np.testing.assert_allclose(split.vectors[0], fake.expected("short"), atol=1e-6)  # its neighbour is untouched


async def test_the_character_limit_is_cut_only_under_truncate(services):
    async with services(max_input_chars=20) as (emb, _, fakes):
        text = "the cat sat on the table and the dog ran"
        for mode in ("split", "reject"):
            with pytest.raises(InputTooLong) as e:
                await emb.embeddings([text], "tiny", None, normalize=True, truncation=mode)
            assert e.value.field == "input[0]" and "the limit is 20 (max_input_chars)" in str(e.value)
        cut = await emb.embeddings([text], "tiny", None, normalize=True, truncation="truncate")
        np.testing.assert_allclose(cut.vectors[0], fakes["tiny"].expected(text[:20]), atol=1e-6)


async def test_bad_requests_are_domain_errors_naming_the_field(services):
    async with services(max_inputs=3) as (emb, _, _fakes):
        cases = [
            (dict(raw_input=["ok", "   "]), InvalidInput, "input[1]"),
            (dict(raw_input=["ok", 3]), InvalidInput, "input[1]"),
            (dict(raw_input=["a", "b", "c", "d"]), TooManyInputs, "input"),
            (dict(raw_input=[]), InvalidInput, "input"),
            (dict(raw_input="ok", model_name="nope"), UnknownModel, "model"),
            (dict(raw_input="ok", view="nope"), UnknownView, "view"),
            (dict(raw_input="ok", dimensions=3), InvalidInput, "dimensions"),
        ]
        for kw, error, fld in cases:
            kw = {"model_name": "tiny", "view": None, "normalize": True} | kw
            with pytest.raises(error) as e:
                await emb.embeddings(**kw)
            assert e.value.field == fld, (kw, e.value)


async def test_a_failed_run_fails_its_requests_with_its_error_and_the_next_one_runs(services):
    async with services() as (emb, _, fakes):
        fakes["tiny"].fail = RuntimeError("the model broke")
        with pytest.raises(RuntimeError, match="the model broke"):
            await emb.embeddings(SENTENCES[:3], "tiny", None, normalize=True)
        fakes["tiny"].fail = None
        again = await emb.embeddings(SENTENCES[:3], "tiny", None, normalize=True)
        assert again.vectors.shape == (3, 8) and emb.registry.models["tiny"].batcher.alive


async def test_a_model_still_loading_is_not_ready(services):
    async with services() as (emb, _, _fakes):
        emb.registry.started = False
        emb.registry.discovered.append("coming")
        with pytest.raises(NotReady) as e:
            emb.model("coming")
        assert e.value.field == "model" and "not loaded yet" in str(e.value)


def test_the_fake_model_is_batch_invariant(models_dir):
    fake = FakeEncoder(models_dir / "tiny")
    ids = [fake.token_ids(s) for s in SENTENCES]
    together = fake.run_ids(ids, "mean")
    alone = np.concatenate([fake.run_ids([i], "mean") for i in ids])
    np.testing.assert_array_equal(together, alone)
