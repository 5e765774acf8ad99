"""The generation service on tiny trained bundles: every task, decoding, story, path, arithmetic and vector input,
and every bound (422 naming the field and the limit; 429 from the model's queue)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from tests.decoder_bundles import decoder_models
from thoughtvec.service.core.engine import Core
from thoughtvec.service.errors import InvalidInput, QueueFull
from thoughtvec.service.settings import Settings

TEXT = "anna walked into the garden ."
OTHER = "the coat was old and small ."


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return decoder_models(tmp_path_factory)


@pytest.fixture
def run(models, tmp_path):
    """``run(coro_fn)``: a started core over the decoder bundles, ``coro_fn(core)`` awaited on it."""

    def go(fn, **kw):
        async def main():
            settings = Settings(models_dir=models, index_dir=tmp_path / "idx", build_default_index=False, default_model="uni-skip",
                                warmup=False, **kw)  # fmt: skip
            core = Core(settings)
            await core.embedding.start()
            try:
                return await fn(core)
            finally:
                await core.embedding.stop()

        return asyncio.run(main())

    return go


def test_next_previous_and_reconstruct(run):
    async def fn(core):
        g = core.generation
        out = {t: await g.generate(TEXT, task=t) for t in ("next", "previous")}
        out["reconstruct"] = await g.generate(TEXT, model="mean-max-aae", task="reconstruct")
        default = await g.generate(TEXT)
        return out, default

    out, default = run(fn)
    assert default.task == "next" and default.data[0].text == out["next"].data[0].text
    for task, gen in out.items():
        assert gen.task == task and len(gen.data) == 1 and gen.tokens > 0
        d = gen.data[0]
        assert d.logprob <= 0 and d.text == " ".join(d.words) and "<pad>" not in d.words
    assert out["reconstruct"].view == "mean_max" and out["next"].view == "uni"


def test_logprob_is_the_decoders_score_for_greedy_and_beam(run):
    async def fn(core):
        g = core.generation
        m = core.embedding.model("uni-skip")
        dec = await g.decoder(m)
        vec = (await core.embedding.encode(m, dec.view, [TEXT], ["input"], normalize=False, mode="truncate")).vectors[0]
        res = []
        for decoding in ("greedy", "beam"):
            d = (await g.generate(TEXT, decoding=decoding, beam_width=3)).data[0]
            res.append((d.logprob, dec.score("next", vec, [dec.words.index(w) for w in d.words])))
        return res

    for got, scored in run(fn):
        assert got == pytest.approx(scored, abs=1e-3)


def test_story_chains_next_sentences(run):
    async def fn(core):
        g = core.generation
        story = await g.generate(TEXT, story=3)
        again = await g.generate(story.data[0].text)
        return story, again

    story, again = run(fn)
    assert [d.index for d in story.data] == [0, 1, 2]
    assert "<unk>" in story.data[0].words or story.data[1].text == again.data[0].text  # each from the one before


def test_path_ends_are_the_two_sentences_and_arithmetic(run):
    async def fn(core):
        g = core.generation
        path = await g.generate(TEXT, to=OTHER, steps=4, task="previous")
        ends = [await g.generate(s, task="previous") for s in (TEXT, OTHER)]
        same = await g.generate(TEXT, plus=OTHER, minus=OTHER, task="previous")
        return path, ends, same

    path, ends, same = run(fn)
    assert [d.t for d in path.data] == pytest.approx([0, 1 / 3, 2 / 3, 1])
    assert path.data[0].text == ends[0].data[0].text and path.data[-1].text == ends[1].data[0].text
    assert same.data[0].text == ends[0].data[0].text  # a + (b - b) = a


def test_vector_input_raw_and_unit(run):
    async def fn(core):
        g = core.generation
        m = core.embedding.model("mean-max-aae")
        dec = await g.decoder(m)
        raw = (await core.embedding.encode(m, dec.view, [TEXT], ["input"], normalize=False, mode="truncate")).vectors[0]
        unit = raw / np.linalg.norm(raw)
        kw = dict(model="mean-max-aae", task="reconstruct")
        return (
            await g.generate(TEXT, **kw),
            await g.generate(raw.tolist(), **kw),
            await g.generate(unit.tolist(), **kw),
            await g.generate((unit * dec.spec.vector_norm).tolist(), **kw),
        )

    text, raw, unit, scaled = run(fn)
    assert raw.data[0].text == text.data[0].text and raw.tokens == 0
    assert unit.data[0].text == scaled.data[0].text  # a unit vector is decoded at the norm recorded at export


def test_sampling_is_seeded(run):
    async def fn(core):
        g = core.generation
        kw = dict(decoding="sample", temperature=1.5, count=3)
        return await g.generate(TEXT, seed=7, **kw), await g.generate(TEXT, seed=7, **kw), await g.generate(TEXT, **kw)

    a, b, c = run(fn)
    assert [d.text for d in a.data] == [d.text for d in b.data] and a.seed == 7
    assert [d.sample for d in a.data] == [0, 1, 2]
    assert c.seed is not None  # drawn, and said


@pytest.mark.parametrize(
    "kw, field, words",
    [
        (dict(model="tiny"), "model", "['mean-max-aae', 'uni-skip']"),
        (dict(task="reconstruct"), "task", "['previous', 'next']"),
        (dict(max_tokens=65), "max_tokens", "1 to 64 (max_generate_tokens)"),
        (dict(max_tokens=0), "max_tokens", "1 to 64"),
        (dict(decoding="beam", beam_width=9), "beam_width", "1 to 8 (max_beam_width)"),
        (dict(decoding="sample", count=17), "count", "1 to 16 (max_generate_count)"),
        (dict(count=2), "count", "decoding: sample"),
        (dict(story=17), "story", "1 to 16"),
        (dict(to=OTHER, steps=1), "steps", "2 to 16"),
        (dict(to=OTHER, steps=17), "steps", "2 to 16"),
        (dict(steps=3), "steps", "send to as well"),
        (dict(story=2, to=OTHER), "story", "not both"),
        (dict(plus=OTHER), "minus", "plus and minus"),
        (dict(to=[0.5] * 3), "to", "3 numbers; model 'uni-skip' decodes vectors of its view 'uni'"),
        (dict(to=[float("nan")] * 24), "to", "finite"),
        (dict(plus=[1e300] * 24, minus=[0.0] * 24), "plus", "x the typical length"),
        (dict(to=["a"] * 24), "to", "a text or a list of numbers"),
        (dict(decoding="sample", temperature=0.0), "temperature", "from 0.01 to 100"),
        (dict(decoding="sample", temperature=1e-30), "temperature", "from 0.01 to 100"),
        (dict(model="mean-max-aae", story=2), "story", "reconstruct"),
    ],
)
def test_bounds_and_bad_requests_name_the_field(run, kw, field, words):
    async def fn(core):
        with pytest.raises(InvalidInput) as e:
            await core.generation.generate(TEXT, **kw)
        return e.value

    err = run(fn)
    assert err.field == field and words in str(err)


def test_a_full_queue_refuses_before_decoding(run):
    async def fn(core):
        m = core.embedding.model("uni-skip")
        m.batcher.limits.max_queue_size = 0  # as if max_queue_size sentences waited
        with pytest.raises(QueueFull):
            await core.generation.generate([0.1] * 24)

    run(fn)
