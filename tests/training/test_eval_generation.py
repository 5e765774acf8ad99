"""``thoughtvec eval --generation``: BLEU, the held-out split, and the decoders scored against the baselines."""

from __future__ import annotations

import json
import math

import pytest

from tests.decoder_bundles import decoder_models
from thoughtvec.cli import main
from thoughtvec.training.evaluation.generation import bleu, evaluate_generation


def test_bleu_by_hand():
    hyp, ref = "the cat sat on the mat".split(), "the cat sat on a mat".split()
    # clipped precisions 5/6, 3/5, 2/4, 1/3; equal lengths: no brevity penalty
    assert bleu([hyp], [ref]) == pytest.approx(100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25)
    assert bleu([ref], [ref]) == pytest.approx(100.0)
    assert bleu([["a", "mat"]], [ref]) == 0.0  # no 3-gram or 4-gram in common
    short = bleu([ref[:5]], [ref])  # all n-grams right, one word short: the brevity penalty alone
    assert short == pytest.approx(100 * math.exp(1 - 6 / 5))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return decoder_models(tmp_path_factory)


def test_held_out_sentences_scored_against_the_baselines(models):
    skip = evaluate_generation(models / "uni-skip", sentences=60)
    aae = evaluate_generation(models / "mean-max-aae", sentences=60)
    assert set(skip["tasks"]) == {"next", "previous"} and set(aae["tasks"]) == {"reconstruct"}
    for task in ("next", "previous"):
        t = skip["tasks"][task]
        assert t["sentences"] == 60  # of the 80 held-out sentences with a neighbour in their story (100 held out, 5 a story)
        assert t["decoder"]["perplexity"] < t["unigram"]["perplexity"]  # the vector tells the decoder something
    r = aae["tasks"]["reconstruct"]
    assert r["copy"]["exact_match"] == 1.0 and r["copy"]["bleu"] == pytest.approx(100.0)  # the identity, for scale
    assert r["decoder"]["bleu"] > r["unigram"]["bleu"] and 0 <= r["decoder"]["exact_match"] <= 1
    assert len(r["examples"]) == 5 and all(set(e) == {"input", "reference", "generated"} for e in r["examples"])


def test_the_command(models, tmp_path, capsys):
    out = tmp_path / "gen.json"
    assert main(["eval", "--generation", "--bundle", str(models / "mean-max-aae"), "--sentences", "20", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| reconstruct | decoder | 20 |" in printed and "thoughtvec eval --generation --bundle" in printed
    assert json.loads(out.read_text())[0]["tasks"]["reconstruct"]["sentences"] == 20
    assert main(["eval", "--generation", "--bundle", str(models / "tiny")]) == 2
    assert "has no decoder" in capsys.readouterr().err
