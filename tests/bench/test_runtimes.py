"""``python -m thoughtvec.bench.runtimes``: both runtimes on a bundle, the table, and the choice written into
bundle.json and nothing else (its layout kept)."""

from __future__ import annotations

import json

import pytest

from tests.tiny_bundle import make_tiny_bundle
from thoughtvec.bench import runtimes
from thoughtvec.service.bundle.format import load_bundle
from thoughtvec.service.core.runtime import openvino_support

pytestmark = pytest.mark.skipif(openvino_support().version is None, reason="OpenVINO is not installed")


def test_it_measures_both_runtimes_and_records_the_choice_alone(tmp_path, capsys):
    path = make_tiny_bundle(tmp_path / "models" / "tiny").path
    before = json.loads((path / "bundle.json").read_text(encoding="utf-8"))
    runtimes.main(["--models-dir", str(tmp_path / "models"), "--sentences", "64", "--sentences-1", "8", "--rounds", "1", "--record"])
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| `tiny`"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "float32" and float(cells[8]) >= 0.999 and cells[10] in ("onnxruntime", "openvino")
    after = json.loads((path / "bundle.json").read_text(encoding="utf-8"))
    onnx = after.pop("onnx")
    assert after == {k: v for k, v in before.items() if k != "onnx"}  # nothing but the choice changed
    assert onnx["cpu_runtime"] == cells[10] and "python -m thoughtvec.bench.runtimes" in onnx["cpu_runtime_note"]
    assert load_bundle(path).spec.onnx.cpu_runtime == cells[10]


def test_another_graph_is_measured_for_one_bundle_and_never_recorded(tmp_path):
    make_tiny_bundle(tmp_path / "models" / "tiny")
    with pytest.raises(SystemExit):
        runtimes.main(["--models-dir", str(tmp_path / "models"), "--graph", str(tmp_path / "x.onnx"), "--record", "--models", "tiny"])
    with pytest.raises(SystemExit):
        runtimes.main(["--models-dir", str(tmp_path / "models"), "--graph", str(tmp_path / "x.onnx")])
