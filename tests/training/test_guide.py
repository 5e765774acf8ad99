"""The model guide: what each bundle is for, picked on dev; the committed one in the serving package is the one the
committed records make, and the server shows an entry only for the bundle it was measured on."""

from __future__ import annotations

import json
from pathlib import Path

from tests.training.test_models_table import IMPORTED, RECORDS, RETRIEVAL, retrieval
from thoughtvec.service.core.guide import GUIDE_FILE
from thoughtvec.training.evaluation import guide, retrieval_report
from thoughtvec.training.evaluation.report import dev_choices, load_records, pick

ROOT = Path(__file__).resolve().parents[2]


def test_entries_name_the_uses_and_the_dev_figures(monkeypatch):
    monkeypatch.setattr(guide, "REPO", ROOT / "tests")  # no bundle folders here: point at fake ones
    made = guide.figures(pick([*RECORDS, IMPORTED]), [*RETRIEVAL, retrieval("t", "mean", 0.6)])
    best, here = guide.picks(made), guide.picks(made, trained_here=True)
    assert {u: f.name for u, f in best.items()} == {"similarity": "t", "search": "t", "features": "t", "speed": "c"}
    assert {u: f.name for u, f in here.items()} == {"similarity": "a", "search": "b", "features": "b", "speed": "c"}
    assert made["b"].dev() == {"sts_b_rho": 0.6, "sick_r_rho": 0.6, "senteval_macro": 80.0, "senteval_view": "feat", "scifact_ndcg10": 0.3}
    assert made["c"].ndcg10 is None  # a hybrid figure is not what /v1/embeddings serves
    assert guide.retrieval_preference(made) == ["t", "b", "a"]


def test_similarity_among_the_trained_here_is_the_default_model_rule():
    records = pick(load_records(ROOT / "docs" / "results"))
    made = guide.figures(records, retrieval_report.load(ROOT / "docs" / "results"))
    assert guide.picks(made, trained_here=True)["similarity"].name == dev_choices(records)["default_model"]["name"]


def test_the_committed_guide_is_the_generated_one():
    results = ROOT / "docs" / "results"
    made = guide.guide(pick(load_records(results)), retrieval_report.load(results))
    assert json.loads(GUIDE_FILE.read_text(encoding="utf-8")) == made, "run `thoughtvec eval report`"
    assert set(made["models"]) == {p.parent.name for p in (ROOT / "models").glob("*/bundle.json")}  # every committed bundle
