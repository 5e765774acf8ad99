"""The bundles committed under models/: each loads without torch (checked in a subprocess), encodes
every view at its declared dimension, stays padding-invariant, keeps within the size budget, and
has its evaluation in docs/results/ (so docs/RESULTS.md covers it)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from thoughtvec.service.bundle import heads
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.core.runtime import openvino_support
from thoughtvec.training.export.onnx_export import PADDING_TOL, PARITY_TOL

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


def test_a_bundle_on_openvino_gives_onnx_runtimes_vectors(committed):
    """A bundle that chose OpenVINO (onnx.cpu_runtime) runs on it where it can, and every view's vectors agree with
    ONNX Runtime's on the same graph (the rule it was chosen by: least cosine 0.999; thoughtvec.bench.runtimes)."""
    name, enc = committed
    if enc.spec.onnx.cpu_runtime != "openvino":
        pytest.skip(f"{name} is served by ONNX Runtime")
    assert "python -m thoughtvec.bench.runtimes" in enc.spec.onnx.cpu_runtime_note  # what the choice was measured on
    if openvino_support().why_not is not None:
        pytest.skip(f"{name} chose OpenVINO, but here {openvino_support().why_not}")
    assert enc.runtime.name == "openvino" and enc.runtime.precision == "bfloat16"
    reference = Encoder.load(ROOT / "models" / name, threads=1, runtime="onnxruntime")
    texts = [t for t in TEXTS if "zyxxqv" not in t]  # all-unknown words: the invertible models' zero vector on both
    for view in enc.spec.views:
        least = float((enc.encode(texts, view) * reference.encode(texts, view)).sum(1).min())
        assert least >= 0.999, f"{name}/{view}: least cosine {least:.5f} to ONNX Runtime's vectors"


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


def test_the_models_page_lists_the_post_processing_each_bundle_carries():
    """docs/models.md's table of maps says what each committed bundle's bundle.json says (map and dev figures)."""
    carried = set()
    for path in sorted((ROOT / "models").glob("*/bundle.json")):
        spec = json.loads(path.read_text(encoding="utf-8"))
        for view, s in spec["views"].items():
            if s.get("postprocess"):
                note = s["postprocess"]["note"]
                raw, mapped = re.search(r"cosine Spearman ([0-9.]+) raw -> ([0-9.]+)\)", note).groups()
                carried.add(f"| `{spec['name']}` / `{view}` | {note.split(', estimated')[0]} | {raw} → {mapped} |")
    page = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    table = page.split("The maps the committed bundles carry")[1].split("\n\n")[1]
    listed = {line for line in table.splitlines() if line.startswith("| `")}
    assert listed == carried
