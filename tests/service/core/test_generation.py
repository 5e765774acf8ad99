"""The generation service on tiny trained bundles: every task, decoding, story, path, arithmetic and vector input,
every bound (422 naming the field and the limit; 413 over the model's queue or a text's limits; 429 from the
model's queue, with places held while a request decodes and given back), the default generation model, and the
decoding rules (no ``<unk>``, no repeated n-gram) on a decoder made to loop."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from tests.decoder_bundles import decoder_models
from thoughtvec.service.bundle.vocab import EOS_ID, PAD_ID, UNK
from thoughtvec.service.core.decoding import repeating
from thoughtvec.service.core.engine import Core
from thoughtvec.service.errors import InputTooLong, InvalidInput, QueueFull, RequestTooLarge
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
            settings = Settings(**dict(models_dir=models, index_dir=tmp_path / "idx", build_default_index=False,
                                       default_model="uni-skip", warmup=False) | kw)  # fmt: skip
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
        vec = (await core.embedding.encode(m, dec.view, core.embedding.texts([TEXT], ["input"]), normalize=False, mode="truncate")).vectors[
            0
        ]
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
        raw = (await core.embedding.encode(m, dec.view, core.embedding.texts([TEXT], ["input"]), normalize=False, mode="truncate")).vectors[
            0
        ]
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
        with m.batcher.admit(m.batcher.limits.max_queue_size):  # as if max_queue_size sentences waited
            with pytest.raises(QueueFull) as e:
                await core.generation.generate([0.1] * 24)
        return e.value, m.batcher._held

    err, held = run(fn, retry_after_s=3)
    assert err.retry_after_s == 3 and held == 0


def test_a_request_is_refused_before_its_texts_are_encoded_and_never_for_its_own_places(run, monkeypatch):
    async def fn(core):
        m = core.embedding.model("uni-skip")
        m.batcher.limits.max_queue_size = _one_request_places(core, 6)  # room for this request's places, and no more
        whole = await core.generation.generate(TEXT, plus=OTHER, minus=TEXT, max_tokens=6)  # the whole queue: its texts within
        encoded = []
        encode = core.embedding.encode

        async def counted(*args, **kw):
            encoded.append(args)
            return await encode(*args, **kw)

        monkeypatch.setattr(core.embedding, "encode", counted)
        with m.batcher.admit(m.batcher.limits.max_queue_size):  # other requests hold the queue
            with pytest.raises(QueueFull):
                await core.generation.generate(TEXT, max_tokens=6)
        return whole, encoded, m.batcher._held

    whole, encoded, held = run(fn)
    assert whole.tokens > 0 and whole.data[0].words and encoded == [] and held == 0


def _one_request_places(core, max_tokens: int) -> int:
    """What a greedy request of one sentence holds in uni-skip's queue, by the rule of ``places``."""
    from thoughtvec.service.core.generation import STEP_PLACES

    per_run, per_row = STEP_PLACES[core.embedding.model("uni-skip").encoder.spec.decoder.kind]
    return max_tokens * (per_run + per_row)


def test_requests_beyond_the_room_get_429_while_the_admitted_finish(run):
    """The queue has room for one request's places: of several at once, those admitted decode to the end and the
    others are refused at once (429), and every place is given back."""

    async def fn(core):
        m = core.embedding.model("uni-skip")
        vec = (await core.generation.generate(TEXT)).data  # the decoder loaded
        assert vec
        m.batcher.limits.max_queue_size = _one_request_places(core, 6)
        raw = (await core.embedding.encode(m, "uni", core.embedding.texts([TEXT], ["input"]), normalize=False)).vectors[0].tolist()
        answers = await asyncio.gather(*(core.generation.generate(raw, max_tokens=6) for _ in range(5)), return_exceptions=True)
        return answers, m.batcher._held, await core.generation.generate(raw, max_tokens=6)

    answers, held, after = run(fn, retry_after_s=2)
    done = [a for a in answers if not isinstance(a, BaseException)]
    refused = [a for a in answers if isinstance(a, BaseException)]
    assert done and refused and all(isinstance(e, QueueFull) and e.retry_after_s == 2 for e in refused), answers
    assert all(len(g.data) == 1 and g.data[0].words for g in done)
    assert held == 0 and after.data[0].text == done[0].data[0].text  # the room is free again, and decoding is deterministic


def test_places_are_given_back_after_a_failed_decode(run):
    async def fn(core):
        m = core.embedding.model("uni-skip")
        dec = await core.generation.decoder(m)

        def broken(*args):
            raise RuntimeError("the decoder broke")

        dec.step = broken
        for decoding in ("greedy", "beam"):
            with pytest.raises(RuntimeError, match="broke"):
                await core.generation.generate(TEXT, decoding=decoding, story=2)
        return m.batcher._held, m.batcher.depth

    assert run(fn) == (0, 0)


@pytest.mark.parametrize(
    "kw, field, words",
    [
        (dict(), "max_tokens", "max_tokens 32: 32 decoding steps of 1 row, 672 places"),
        (dict(story=5, max_tokens=4), "story", "story 5, max_tokens 4: 20 decoding steps of 1 row, 420 places"),
        (dict(decoding="beam", beam_width=8, max_tokens=5), "beam_width", "beam_width 8, max_tokens 5: 5 decoding steps of 8 rows"),
        (dict(to=OTHER, steps=16, decoding="beam", max_tokens=2), "steps", "ask for less steps or beam_width or max_tokens"),
    ],
)
def test_a_request_larger_than_the_queue_is_413_naming_the_limit(run, kw, field, words):
    async def fn(core):
        with pytest.raises(RequestTooLarge) as e:
            await core.generation.generate(TEXT, **kw)
        return e.value

    err = run(fn, max_queue_size=64, max_batch_size=8)
    assert err.field == field and words in err.message and "the limit is 64 (max_queue_size)" in err.message, err.message


def test_long_texts_are_refused_unless_truncation_truncate(run):
    async def fn(core):
        g = core.generation
        limit = core.embedding.model("uni-skip").encoder.max_tokens
        long = " ".join(["anna walked into the garden ."] * limit)
        errors = []
        for kw in (dict(input=long), dict(input=TEXT, to=long), dict(input=TEXT, plus=long, minus=OTHER)):
            with pytest.raises(InputTooLong) as e:
                await g.generate(kw.pop("input"), **kw)
            errors.append(e.value)
        cut = await g.generate(long, truncation="truncate")
        whole = await g.generate(TEXT, truncation="truncate")
        return limit, errors, cut, whole

    limit, errors, cut, whole = run(fn)
    assert [e.field for e in errors] == ["input", "to", "plus"]
    assert all(
        f"the limit is {limit}, the max_input_tokens of model 'uni-skip'" in e.message and "truncation: truncate" in e.message
        for e in errors
    )
    assert cut.truncated == 1 and cut.notes == [
        f"input was cut to {limit} tokens (max_input_tokens of model 'uni-skip') (truncation: truncate)"
    ]
    assert whole.truncated == 0 and whole.notes == []


def test_texts_over_max_input_chars(run):
    async def fn(core):
        with pytest.raises(InputTooLong) as e:
            await core.generation.generate("anna walked into the garden and sat down .")
        return e.value, await core.generation.generate("anna walked into the garden and sat down .", truncation="truncate")

    err, cut = run(fn, max_input_chars=20)
    assert err.field == "input" and "the limit is 20 (max_input_chars)" in err.message and "truncation: truncate" in err.message
    assert cut.truncated == 1 and cut.notes == ["input was cut to 20 characters (max_input_chars) (truncation: truncate)"]


def test_no_model_named_decodes_with_the_first_default_that_has_a_decoder(run):
    async def fn(core):
        return core.embedding.registry.default_model, core.generation.listing(), await core.generation.generate(TEXT)

    default, listing, g = run(fn, default_model="tiny")  # the server's default has no decoder
    assert default == "tiny" and listing.default == "mean-max-aae" == g.model  # the model guide's order: mean-max-aae first
    assert g.task == "reconstruct" and [m.id for m in listing.data] == ["mean-max-aae", "uni-skip"]
    assert [m.default for m in listing.data] == [True, False] and listing.data[1].tasks == ["previous", "next"]


# -- the decoding rules ------------------------------------------------------------------------


def test_repeating_names_the_words_that_would_repeat_an_ngram():
    assert repeating([5, 6, 7, 5, 6], 3) == [7] and repeating([5, 6, 5, 6, 5, 6], 3) == [5, 5]
    assert repeating([5, 6], 3) == [] and repeating([5, 6, 7], 1) == [5, 6, 7] and repeating([4, 4], 0) == []


def _looping(dec, favourites: list[str]):
    """Make ``dec`` a decoder that loops: at every step the same words first, in ``favourites``' order, whatever
    it has said (``<eos>`` last of all), as a small decoder stuck on "the the the" is."""
    V = len(dec.words)
    order = [dec.words.index(w) for w in favourites]

    def step(task, prefixes, state, condition):
        logits = np.full((prefixes.shape[0], V), -20.0, np.float32)
        logits[:, order] = np.arange(len(order), 0, -1, dtype=np.float32)
        logits[:, EOS_ID] = -30.0
        logits[:, PAD_ID] = -np.inf
        return logits, state

    dec.step = step


def _trigrams_twice(words: list[str]) -> bool:
    grams = list(zip(words, words[1:], words[2:]))
    return len(grams) != len(set(grams))


def test_a_looping_decoder_repeats_no_3gram_and_says_no_unk(run):
    async def fn(core):
        g = core.generation
        m = core.embedding.model("uni-skip")
        dec = await g.decoder(m)
        favourites = [UNK, "the", "garden", "anna"]
        _looping(dec, favourites)
        ways = [dict(), dict(decoding="beam", beam_width=3), dict(decoding="sample", temperature=0.3, seed=5, count=3)]
        kw = dict(max_tokens=20)
        served = [await g.generate(TEXT, **w, **kw) for w in ways]
        again = [await g.generate(TEXT, **w, **kw) for w in ways]
        raw = await g.generate(TEXT, allow_unk=True, no_repeat_ngram_size=0, **kw)
        unk = [await g.generate(TEXT, allow_unk=True, **w, **kw) for w in ways]
        one = await g.generate(TEXT, no_repeat_ngram_size=1, **kw)
        return served, again, raw, unk, one

    served, again, raw, unk, one = run(fn)
    assert raw.data[0].words == [UNK] * 20  # as trained: the loop
    for gen, same in zip(served, again):
        for d in gen.data:
            assert UNK not in d.words and not _trigrams_twice(d.words) and len(d.words) > 3, d.words
        assert [d.words for d in gen.data] == [d.words for d in same.data]  # greedy, beam, and sampling with its seed
    assert served[0].data[0].words[:3] == ["the"] * 3  # the favourite word, until it would make a 3-gram twice
    for gen in unk:  # asked for: <unk> may be chosen, still never a 3-gram twice
        assert all(UNK in d.words and not _trigrams_twice(d.words) for d in gen.data)
    assert len(set(one.data[0].words)) == len(one.data[0].words)  # no word twice
    assert one.data[0].words[:3] == ["the", "garden", "anna"]


def test_no_unk_from_a_real_decoder_unless_asked(run):
    async def fn(core):
        kw = dict(decoding="sample", temperature=3.0, seed=1, count=16, max_tokens=12)
        return [await core.generation.generate(t, allow_unk=allow, **kw) for t in (TEXT, OTHER) for allow in (False, True)]

    words = [[w for d in g.data for w in d.words] for g in run(fn)]
    assert UNK not in words[0] + words[2]
    assert UNK in words[1] + words[3]  # hot sampling says it when it may


def test_the_rules_are_checked(run):
    async def fn(core):
        errors = []
        for kw in (dict(no_repeat_ngram_size=-1), dict(no_repeat_ngram_size=65), dict(truncation="split")):
            with pytest.raises(InvalidInput) as e:
                await core.generation.generate(TEXT, **kw)
            errors.append(e.value)
        return errors

    a, b, c = run(fn)
    assert a.field == b.field == "no_repeat_ngram_size" and "from 0 (no n-gram blocked) to 64 (max_generate_tokens)" in a.message
    assert c.field == "truncation" and "truncate or reject" in c.message
