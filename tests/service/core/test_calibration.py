"""The fixed ranges of int8 and uint8 codes (``core/calibration.py``), over the fake runtime: made from the calibration
sentences once per model and view, the same for every request, and of the vectors as the request makes them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from tests.service.conftest import SENTENCES
from tests.service.core.fake_runtime import fake_services
from thoughtvec.service.core import calibration
from thoughtvec.service.core.calibration import CALIBRATION_SENTENCES, calibration_texts, compact
from thoughtvec.service.core.compact import Ranges, quantize
from thoughtvec.service.errors import RequestTooLarge
from thoughtvec.service.index.build import read_documents

pytestmark = pytest.mark.anyio
MODELS = Path(__file__).resolve().parents[3] / "models"


@pytest.fixture
def anyio_backend():
    return "asyncio"


def count_bulk(emb) -> list[str]:
    """The views the calibration embeds, one entry per embedding (the service's bulk path, spied on)."""
    seen: list[str] = []
    bulk = emb.embed_bulk

    async def spy(model, view, texts):
        seen.append(view)
        return await bulk(model, view, texts)

    emb.embed_bulk = spy
    return seen


def test_the_calibration_sentences_are_spread_over_every_source_of_the_sample():
    texts = calibration_texts()
    assert len(texts) == len(set(texts)) == CALIBRATION_SENTENCES
    source = {d.text: d.metadata["source"] for d in read_documents(calibration.SAMPLE)}
    assert {source[t] for t in texts} == set(source.values())  # not the first source's first sentences alone


async def test_ranges_come_from_the_calibration_sentences_once_per_model_and_view(models_dir, tmp_path):
    async with fake_services(models_dir, tmp_path) as (emb, _, fakes):
        seen = count_bulk(emb)
        texts = list(calibration_texts())
        enc = await emb.embeddings(texts, "tiny", None, normalize=True)
        codes = await asyncio.gather(*[compact(emb, enc, ["uint8"], None, True) for _ in range(3)])  # at once: one embedding
        u = codes[0]["uint8"]
        assert seen == ["mean"] and all((c["uint8"] == u).all() for c in codes)
        assert (u.min(axis=0) == 0).all() and (u.max(axis=0) == 255).all()  # the calibration's own vectors span every level
        other = await emb.embeddings(SENTENCES, "tiny", "meanmax", normalize=True)
        await compact(emb, other, ["int8"], None, True)
        await compact(emb, other, ["int8", "uint8", "binary"], None, False)  # another normalisation: the same embedding
        assert seen == ["mean", "meanmax"]
        raw = await emb.embeddings(texts, "tiny", "meanmax", normalize=False)
        r = (await compact(emb, raw, ["uint8"], None, False))["uint8"]
        assert (r.min(axis=0) == 0).all() and (r.max(axis=0) == 255).all()  # ranges of the raw vectors, not the unit ones
        fakes["tiny"].fail = RuntimeError("no more runs")
        await compact(emb, other, ["uint8"], None, True)  # kept: nothing runs again


async def test_a_texts_codes_do_not_depend_on_what_is_sent_beside_it(models_dir, tmp_path):
    async with fake_services(models_dir, tmp_path, max_batch_size=3) as (emb, _, _fakes):
        alone = await emb.embeddings(SENTENCES[2], "tiny", None, normalize=True)
        among = await emb.embeddings(SENTENCES[::-1], "tiny", None, normalize=True)  # SENTENCES[2] at index 4
        for p in ("int8", "uint8", "binary", "ubinary"):
            a = (await compact(emb, alone, [p], None, True))[p]
            b = (await compact(emb, among, [p], None, True))[p]
            np.testing.assert_array_equal(a[0], b[len(SENTENCES) - 3], err_msg=p)


async def test_a_failed_calibration_is_not_kept_and_a_request_that_leaves_does_not_stop_it(models_dir, tmp_path):
    async with fake_services(models_dir, tmp_path) as (emb, _, fakes):
        enc = await emb.embeddings(SENTENCES, "tiny", None, normalize=True)
        fakes["tiny"].fail = RuntimeError("the run failed")
        with pytest.raises(Exception, match="the run failed"):
            await compact(emb, enc, ["int8"], None, True)
        fakes["tiny"].fail = None
        seen = count_bulk(emb)
        fakes["tiny"].gate.clear()  # the calibration's runs wait
        first = asyncio.ensure_future(compact(emb, enc, ["int8"], None, True))
        await asyncio.to_thread(fakes["tiny"].entered.wait, 10)
        first.cancel()
        fakes["tiny"].gate.set()
        second = (await compact(emb, enc, ["int8"], None, True))["int8"]
        assert first.cancelled() and seen == ["mean"]  # the second waited for the same embedding, which went on
        want = Ranges.of(fakes["tiny"].encode(list(calibration_texts()), "mean", truncation="split"))
        np.testing.assert_array_equal(second, quantize(enc.vectors, "int8", want))


async def test_the_answer_of_every_type_asked_for_is_held_to_max_response_bytes(models_dir, tmp_path):
    async with fake_services(models_dir, tmp_path, max_response_bytes=1500) as (emb, _, _fakes):
        enc = await emb.embeddings(SENTENCES, "tiny", None, normalize=True)  # 7 x 8 floats: 1400 bytes, within the limit
        with pytest.raises(RequestTooLarge, match=r"7 vectors of 8 values as float, int8, uint8, binary\); the limit is 1500"):
            await compact(emb, enc, ["float", "int8", "uint8", "binary"], None, True, "texts")


@pytest.mark.skipif(not (MODELS / "mean-max-aae").is_dir(), reason="the bundled models are not in this checkout")
async def test_reduced_vectors_are_coded_on_the_ranges_of_the_reduced_calibration(tmp_path):
    """With ``dimensions``, the calibration sentences are projected as the request's vectors are: their codes span
    every level of every reduced dimension (ranges of the full view would not fit them)."""
    async with fake_services(MODELS, tmp_path, models=("mean-max-aae",), default_model="mean-max-aae") as (emb, _, _fakes):
        seen = count_bulk(emb)
        texts = list(calibration_texts())
        for d in (32, 64):
            enc = await emb.embeddings(texts, None, "mean", normalize=True, dimensions=d)
            u = (await compact(emb, enc, ["uint8"], d, True))["uint8"]
            assert u.shape == (len(texts), d) and (u.min(axis=0) == 0).all() and (u.max(axis=0) == 255).all()
        assert seen == ["mean"]  # the view's calibration vectors, embedded once, projected for each size
