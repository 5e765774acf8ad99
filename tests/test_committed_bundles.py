"""The bundles committed under models/: each loads without torch (checked in a subprocess), encodes
every view at its declared dimension, stays padding-invariant, keeps within the size budget, and
has its evaluation in docs/results/ (so docs/RESULTS.md covers it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from thoughtvec.service.bundle import heads
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.training.onnx_export import PADDING_TOL, PARITY_TOL

ROOT = Path(__file__).resolve().parent.parent
BUNDLES = sorted(p.parent.name for p in (ROOT / "models").glob("*/bundle.json"))
SIZE_BUDGET = 40e6  # bytes on disk per bundle (issues 3-5)
TEXTS = ["The cat sat on the mat.", "A man is playing a guitar on the street while people watch.",
         "zyxxqv blorfing", "Don't stop!", "I", "He said: \"well... maybe\" — and left, 100% sure."]  # fmt: skip


def test_models_folder_has_the_default_bundles():
    expected = {"uni-skip", "bi-skip", "combine-skip", "mean-max-aae", "invertible-linear", "invertible-bijection"}
    assert expected <= set(BUNDLES), f"missing: {sorted(expected - set(BUNDLES))}"


@pytest.fixture(scope="module", params=BUNDLES)
def committed(request):
    return request.param, Encoder.load(ROOT / "models" / request.param, threads=1)


def test_bundle_validates_and_recorded_its_export_checks(committed):
    name, enc = committed
    b = enc.bundle
    assert b.spec.name == name and b.spec.default_view in b.spec.views
    checks = b.spec.training["export_checks"]
    assert max(checks["parity_max_rel_err"].values()) <= PARITY_TOL
    assert max(checks["padding_max_abs_diff"].values()) <= PADDING_TOL
    size = sum(f.stat().st_size for f in b.path.iterdir() if f.is_file())
    assert size <= SIZE_BUDGET, f"{name} is {size / 1e6:.1f} MB"
    assert (b.path / "MODEL_CARD.md").read_text().startswith(f"# {name}")


def test_every_view_encodes_at_its_dimension_without_padding_effects(committed):
    name, enc = committed
    for view, spec in enc.spec.views.items():
        together = enc.encode(TEXTS, view, normalize=False)
        assert together.shape == (len(TEXTS), spec.dim) and np.isfinite(together).all()
        alone = np.stack([enc.encode([t], view, normalize=False)[0] for t in TEXTS])
        np.testing.assert_allclose(together, alone, atol=PADDING_TOL, rtol=0, err_msg=f"{name}/{view}")
        known = [i for i, t in enumerate(TEXTS) if "zyxxqv" not in t]  # all-unknown words: the invertible models give 0
        assert np.linalg.norm(together[known], axis=1).min() > 0, f"{name}/{view}: a zero vector for a real sentence"


def test_relatedness_head_scores_in_range(committed):
    name, enc = committed
    spec = enc.spec.heads.get("relatedness")
    if spec is None:
        pytest.skip(f"{name} has no relatedness head")
    head = heads.load(ROOT / "models" / name / spec.file)
    u = enc.encode(["A man is playing a guitar."] * 2, spec.view)
    v = enc.encode(["A person plays an instrument.", "A woman is slicing an onion."], spec.view)
    scores = head.predict(u, v)
    assert scores.shape == (2,) and ((scores >= 1) & (scores <= 5)).all()


def test_every_bundle_has_its_evaluation(committed):
    name, enc = committed
    assert (ROOT / "docs" / "results" / f"{name}__{enc.spec.default_view}.json").exists(), (
        f"run: thoughtvec eval --bundle models/{name} --save-head"
    )


def test_serving_does_not_import_torch():
    code = ("import sys; from thoughtvec.service.core.encoder import Encoder; "
            f"e = Encoder.load({str(ROOT / 'models' / BUNDLES[0])!r}, threads=1); e.encode(['hello world'], e.spec.default_view); "
            "assert 'torch' not in sys.modules, 'torch was imported'")  # fmt: skip
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_the_default_model_is_the_one_chosen_on_dev():
    """The server's default model is the bundle docs/RESULTS.md chose on dev data, and its
    evaluation was of the bundle's current default view."""
    from thoughtvec.service.settings import Settings
    from thoughtvec.training.evaluation.report import dev_choices, load_records, pick

    chosen = dev_choices(pick(load_records(ROOT / "docs" / "results")))["default_model"]
    assert Settings().model_preference[0] == chosen["name"], "model_preference must start with the dev-chosen model"
    assert json.loads((ROOT / "models" / chosen["name"] / "bundle.json").read_text())["default_view"] == chosen["view"]


def test_openai_model_names_get_the_bundle_chosen_for_retrieval_on_dev():
    """RETRIEVAL_MODEL_PREFERENCE is the committed records' order: dense nDCG@10 of each bundle's default view on the
    retrieval dev set, best first (thoughtvec.training.evaluation.guide), over every committed bundle."""
    from thoughtvec.service.settings import RETRIEVAL_MODEL_PREFERENCE
    from thoughtvec.training.evaluation import guide, retrieval_report
    from thoughtvec.training.evaluation.report import load_records, pick

    results = ROOT / "docs" / "results"
    figures = guide.figures(pick(load_records(results)), retrieval_report.load(results))
    assert RETRIEVAL_MODEL_PREFERENCE == tuple(guide.retrieval_preference(figures))
    assert set(RETRIEVAL_MODEL_PREFERENCE) == set(BUNDLES), "every committed bundle has its retrieval record: thoughtvec eval --retrieval"


def test_new_indexes_search_hybrid_over_the_bundles_whose_hybrid_beats_bm25_on_dev():
    """HYBRID_MODELS is what the committed records say: the bundles whose hybrid search at their default view beats
    BM25 alone on the retrieval dev set (a new index over any other searches with BM25 alone)."""
    from thoughtvec.service.settings import HYBRID_MODELS
    from thoughtvec.training.evaluation import guide, retrieval_report
    from thoughtvec.training.evaluation.report import load_records, pick

    results = ROOT / "docs" / "results"
    retrieval = retrieval_report.load(results)
    figures = guide.figures(pick(load_records(results)), retrieval)
    assert HYBRID_MODELS == tuple(guide.hybrid_models(figures, retrieval))
