"""The model guide: what each bundle is for and every choice the server follows, picked on dev; the committed one in
the serving package is the one the committed records make, the server shows an entry only for the bundle it was
measured on, and every dev retrieval record was measured with the rankers' defaults the guide gives the code."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.training.test_models_table import IMPORTED, RECORDS, RETRIEVAL, retrieval
from thoughtvec.training.evaluation import dev_choices as guide
from thoughtvec.training.evaluation import retrieval_report
from thoughtvec.training.evaluation.rankers import measured_search
from thoughtvec.training.evaluation.report import dev_choices, load_records, pick

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
LEXICAL = {"stemmer": "porter", "stopwords": "en", "method": "atire", "k1": 0.9, "b": 0.5}
FUSION = {"method": "minmax", "lexical_weight": 1.5, "rrf_k": 60, "depth": 200}


def test_entries_name_the_uses_and_the_dev_figures(monkeypatch):
    monkeypatch.setattr(guide, "REPO", ROOT / "tests")  # no bundle folders here: point at fake ones
    made = guide.figures(pick([*RECORDS, IMPORTED]), [*RETRIEVAL, retrieval("t", "mean", 0.6)])
    best, here = guide.picks(made), guide.picks(made, trained_here=True)
    assert {u: f.name for u, f in best.items()} == {"similarity": "t", "search": "t", "features": "t", "speed": "c"}
    assert {u: f.name for u, f in here.items()} == {"similarity": "a", "search": "b", "features": "b", "speed": "c"}
    assert made["b"].dev() == {"sts_b_rho": 0.6, "sick_r_rho": 0.6, "senteval_macro": 80.0, "senteval_view": "feat", "scifact_ndcg10": 0.3}
    assert made["c"].ndcg10 is None  # a hybrid figure is not what /v1/embeddings serves
    assert guide.retrieval_preference(made) == ["t", "b", "a"]
    assert guide.default_models(made) == ["t", "a", "b", "c"]  # every bundle competes, the imported one too


def test_within_the_noise_margin_the_default_model_is_the_smaller():
    small, big = (guide.Figures(n, "f", f"models/{n}", "v", 8, size, cos, cos, None, None, None)
                  for n, size, cos in (("small", 1e6, 0.700), ("big", 2e6, 0.701)))  # fmt: skip
    assert guide.default_models({"big": big, "small": small}) == ["small", "big"]


def test_the_default_model_is_one_rule_in_the_report_and_the_guide():
    records = pick(load_records(RESULTS))
    made = guide.figures(records, retrieval_report.load(RESULTS))
    chosen = dev_choices(records)["default_model"]["name"]
    assert guide.default_models(made)[0] == guide.picks(made)["similarity"].name == chosen


def test_the_committed_guide_is_the_generated_one():
    made = guide.guide(pick(load_records(RESULTS)), retrieval_report.load(RESULTS))
    assert json.loads(guide.GUIDE_PATH.read_text(encoding="utf-8")) == made, "run `thoughtvec eval report`"
    bundles = {p.parent.name for p in (ROOT / "models").glob("*/bundle.json")}
    assert set(made["models"]) == bundles  # every committed bundle
    assert set(made["choices"]["retrieval_models"]) == bundles, (
        "every committed bundle has its retrieval record: thoughtvec eval --retrieval"
    )
    assert set(made["choices"]["default_models"]) == bundles


def _ranked(name: str, mode: str, lexical: dict, fusion: dict | None = None) -> dict:
    ranker = {"kind": "lexical", **lexical} if mode == "lexical" else {"kind": "bundle", "lexical": {"kind": "lexical", **lexical}}
    if fusion is not None:
        ranker["rerank" if mode == "rerank" else "fusion"] = fusion
    return retrieval(name, "v", 0.5, mode=mode, kind="lexical" if mode == "lexical" else "bundle") | {"ranker": ranker}


def test_search_settings_are_the_records_and_records_that_disagree_are_refused():
    agreed = [_ranked("bm25", "lexical", LEXICAL), _ranked("a", "hybrid", LEXICAL, FUSION), _ranked("b", "hybrid", LEXICAL, FUSION)]
    assert guide.search_settings(agreed) == {
        "analyzer": {"stemmer": "porter", "stopwords": "en"}, "bm25": {"method": "atire", "k1": 0.9, "b": 0.5}, "fusion": FUSION,
    }  # fmt: skip
    stale = [*agreed, _ranked("c", "hybrid", LEXICAL, FUSION | {"lexical_weight": 1.0})]
    with pytest.raises(ValueError, match="one fusion setting.*scifact-dev__c__v__hybrid"):
        guide.search_settings(stale)
    with pytest.raises(ValueError, match="one lexical setting"):
        guide.search_settings([*agreed, _ranked("bm25", "lexical", LEXICAL | {"k1": 1.2})])
    with pytest.raises(ValueError, match="found: none"):
        guide.search_settings([])


def test_a_rerank_record_gives_the_guide_its_rerank_fusion_and_two_that_disagree_are_refused():
    base = [_ranked("bm25", "lexical", LEXICAL), _ranked("a", "hybrid", LEXICAL, FUSION)]
    assert "rerank" not in guide.search_settings(base)  # optional: the server falls back
    rerank = {"method": "zscore", "lexical_weight": 0.5, "rrf_k": 60, "depth": 100, "sentence_weight": 2.0}
    assert guide.search_settings([*base, _ranked("a", "rerank", LEXICAL, rerank)])["rerank"] == rerank
    # the fusion applies to the bundles it was measured on: those with a rerank record, served (here)
    records = [*base, _ranked("a", "rerank", LEXICAL, rerank), _ranked("gone", "rerank", LEXICAL, rerank)]
    assert guide.rerank_models(dict.fromkeys(["a", "b"]), records) == ["a"]  # type: ignore[arg-type]
    older = {k: v for k, v in rerank.items() if k != "sentence_weight"}  # a record from before the third signal: none
    assert guide.search_settings([*base, _ranked("a", "rerank", LEXICAL, older)])["rerank"] == older | {"sentence_weight": 0.0}
    with pytest.raises(ValueError, match="one rerank setting.*scifact-dev__b__v__rerank"):
        guide.search_settings(
            [*base, _ranked("a", "rerank", LEXICAL, rerank), _ranked("b", "rerank", LEXICAL, rerank | {"lexical_weight": 1.0})]
        )


def test_every_dev_retrieval_record_was_measured_with_the_guides_settings():
    """The analyser, BM25 and fusion of each committed retrieval record are the model guide's, the ones the rankers
    (the server's and the harness's) search with; a record measured with others is stale: run its command again."""
    measured = measured_search()
    defaults = dataclasses.asdict(measured.analyzer) | dataclasses.asdict(measured.bm25)
    fusion = dataclasses.asdict(measured.fusion)
    checked = 0
    for r in retrieval_report.load(RESULTS):
        ranker = r["ranker"]
        lexical = ranker if ranker.get("kind") == "lexical" else ranker.get("lexical")
        if lexical is not None:
            assert {k: v for k, v in lexical.items() if k != "kind"} == defaults, f"{r['command']}: measured with other BM25 settings"
            checked += 1
        if "fusion" in ranker:
            assert ranker["fusion"] == fusion, f"{r['command']}: measured with another fusion"
        if "rerank" in ranker:
            assert ranker["rerank"] == dataclasses.asdict(measured.rerank), f"{r['command']}: measured with another rerank fusion"
    assert checked > 1  # BM25 alone and the hybrids
