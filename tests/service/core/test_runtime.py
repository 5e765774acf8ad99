"""Which runtime runs a bundle's graph on the CPU (thoughtvec.service.core.runtime): the choice, and OpenVINO's
session giving ONNX Runtime's vectors, batch-independent, from several threads at once."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tests.tiny_bundle import make_tiny_bundle
from thoughtvec.service.core import runtime
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.core.runtime import OpenVinoSupport, choose

READY = OpenVinoSupport("2026.4.1", bf16=True)


@pytest.mark.parametrize(
    ("setting", "bundle", "support", "on_gpu", "expected", "why"),
    [
        ("auto", "openvino", READY, False, "openvino", "the bundle's choice"),
        ("auto", "onnxruntime", READY, False, "onnxruntime", "the bundle's choice"),
        ("auto", "openvino", READY, True, "onnxruntime", "on the GPU"),
        ("openvino", "onnxruntime", READY, True, "onnxruntime", "on the GPU"),
        ("onnxruntime", "openvino", READY, False, "onnxruntime", "setting is onnxruntime"),
        ("auto", "openvino", OpenVinoSupport(None, False), False, "onnxruntime", "pip install 'thoughtvec[openvino]'"),
        ("auto", "openvino", OpenVinoSupport("2026.4.1", False), False, "onnxruntime", "no bfloat16 instructions"),
        ("openvino", "onnxruntime", OpenVinoSupport("2026.4.1", False), False, "openvino", "setting is openvino"),
    ],
)
def test_a_bundle_runs_on_openvino_only_where_it_chose_it_and_it_can(monkeypatch, setting, bundle, support, on_gpu, expected, why):
    monkeypatch.setattr(runtime, "openvino_support", lambda: support)
    chosen, said = choose(setting, bundle, on_gpu)
    assert chosen == expected and why in said, said


def test_asking_for_openvino_where_it_is_not_installed_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(runtime, "openvino_support", lambda: OpenVinoSupport(None, False))
    with pytest.raises(RuntimeError, match=r"not installed \(pip install 'thoughtvec\[openvino\]'\)"):
        choose("openvino", "onnxruntime", on_gpu=False)


def test_a_bundle_that_chose_openvino_is_served_by_onnx_runtime_without_it(tmp_path, monkeypatch):
    monkeypatch.setattr(runtime, "openvino_support", lambda: OpenVinoSupport(None, False))
    enc = Encoder(make_tiny_bundle(tmp_path / "tiny", cpu_runtime="openvino"))
    assert enc.runtime.name == "onnxruntime" and "not installed" in enc.runtime.note
    assert enc.providers == ["CPUExecutionProvider"]


needs_openvino = pytest.mark.skipif(runtime.openvino_support().version is None, reason="OpenVINO is not installed")


@needs_openvino
def test_openvino_gives_onnx_runtimes_vectors_whatever_the_batch(tmp_path):
    path = make_tiny_bundle(tmp_path / "tiny", cpu_runtime="openvino").path
    ov, ref = Encoder.load(path, threads=1, runs=2), Encoder.load(path, runtime="onnxruntime")
    assert ov.runtime.name == "openvino" and ov.providers == [] and ref.runtime.name == "onnxruntime"
    texts = ["a dog ran .", "the old man walked to the river and sat by the big tree .", "she reads ."]
    for view in ("mean", "meanmax"):
        got, want = ov.encode(texts, view), ref.encode(texts, view)
        assert float((got * want).sum(1).min()) >= 0.999, view
        alone = np.concatenate([ov.encode([t], view) for t in texts])
        np.testing.assert_array_equal(alone, got)  # each alone and padded in one batch: the same numbers


@needs_openvino
def test_openvino_serves_several_threads_at_once(tmp_path):
    enc = Encoder(make_tiny_bundle(tmp_path / "tiny", cpu_runtime="openvino"), threads=1, runs=2)
    texts = [[f"the {w} sat ."] * 4 for w in ("cat", "dog", "man", "car", "tree", "book")]
    want = [enc.encode(t) for t in texts]
    got: dict[int, np.ndarray] = {}

    def run(i: int) -> None:
        for _ in range(20):
            got[i] = enc.encode(texts[i])
            np.testing.assert_array_equal(got[i], want[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(len(texts)))  # every thread finished its runs with its own vectors


@needs_openvino
def test_a_graph_openvino_cannot_read_names_the_file_and_the_runtime(tmp_path):
    path = make_tiny_bundle(tmp_path / "tiny", cpu_runtime="openvino").path
    (path / "model.onnx").write_bytes(b"not a graph")
    with pytest.raises(Exception, match="onnx.file: OpenVINO cannot load it") as e:
        Encoder.load(path)
    assert str(tmp_path) not in str(e.value).split("onnx.file:", 1)[1]  # the file by name, not the server's folder


def test_a_bundle_on_onnx_runtime_never_asks_openvino(monkeypatch):
    """Importing OpenVINO and asking its CPU plugin costs a start 0.16 s and 37 MB: only a bundle that chose it pays."""
    monkeypatch.setattr(runtime, "openvino_support", lambda: pytest.fail("OpenVINO was asked about"))
    assert choose("auto", "onnxruntime", on_gpu=False)[0] == "onnxruntime"
    assert choose("onnxruntime", "openvino", on_gpu=False)[0] == "onnxruntime"


def test_the_devices_name_openvinos_version_without_importing_it(tmp_path):
    import subprocess
    import sys

    code = (
        "import sys; from thoughtvec.service.core.runtime import openvino_version; v = openvino_version(); "
        "assert 'openvino' not in sys.modules, 'imported'; print(v)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == str(runtime.openvino_support().version)
