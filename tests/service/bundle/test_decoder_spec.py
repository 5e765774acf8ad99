"""The optional ``decoder`` of ``bundle.json``: bundles without one load as before; a decoder is validated
against the bundle's views and files, with the field at fault named."""

from __future__ import annotations

import json

import pytest

from tests.tiny_bundle import make_tiny_bundle
from thoughtvec.service.bundle.errors import BundleError
from thoughtvec.service.bundle.format import load_bundle

DECODER = {"kind": "recurrent", "tasks": ["previous", "next"], "output": "mean", "vocab_size": 10, "state_dim": 4,
           "max_tokens": 8, "vector_norm": 3.0, "opset": 17}  # fmt: skip


@pytest.fixture
def bundle(tmp_path):
    make_tiny_bundle(tmp_path / "b")
    return tmp_path / "b"


def _with(bundle, **decoder):
    meta = json.loads((bundle / "bundle.json").read_text())
    meta["decoder"] = {**DECODER, **decoder}
    (bundle / "bundle.json").write_text(json.dumps(meta))


def test_a_bundle_without_a_decoder_loads(bundle):
    spec = load_bundle(bundle).spec
    assert spec.decoder is None and spec.decoder_view is None


def test_a_decoder_names_its_view_and_files(bundle):
    (bundle / "decoder.onnx").write_bytes(b"graph")
    _with(bundle)
    spec = load_bundle(bundle).spec
    assert spec.decoder is not None and spec.decoder_view == "mean" and spec.decoder.vocabulary == "vocab.txt"


@pytest.mark.parametrize(
    "decoder, field, words",
    [
        ({}, "decoder.file", "'decoder.onnx' is missing"),
        ({"file": "../decoder.onnx"}, "decoder.file", "a file name inside the bundle"),
        ({"vocabulary": "decoder-vocab.txt"}, "decoder.vocabulary", "missing"),
        ({"output": "nope"}, "bundle.json", "decoder.output 'nope' is not the output of a view without post-processing"),
        ({"kind": "attention"}, "decoder", "carries none"),
        ({"kind": "attention", "state_dim": 0}, "decoder", "one task"),
        ({"tasks": ["next", "next"]}, "decoder", "twice"),
        ({"tasks": ["summarise"]}, "decoder.tasks.0", ""),
    ],
)
def test_a_bad_decoder_is_named(bundle, decoder, field, words):
    if decoder.get("file") != "../decoder.onnx" and decoder != {}:
        (bundle / "decoder.onnx").write_bytes(b"graph")
    _with(bundle, **decoder)
    with pytest.raises(BundleError) as e:
        load_bundle(bundle)
    assert e.value.field.startswith(field) and words in str(e.value)


def test_after_post_processing_the_decoder_reads_the_raw_twin(bundle):
    """``thoughtvec postprocess`` maps a view and keeps its output unmapped as ``<view>-raw``: the decoder reads that."""
    from thoughtvec.service.bundle.format import parse_spec

    meta = json.loads((bundle / "bundle.json").read_text())
    mean = meta["views"]["mean"]
    pp = {"file": "postprocess.npz", "key": "mean", "center": True, "components": 1}
    meta["views"] = {"mean": {**mean, "postprocess": pp}, "mean-raw": mean, "meanmax": meta["views"]["meanmax"]}
    meta["decoder"] = DECODER
    assert parse_spec(meta, "b").decoder_view == "mean-raw"
    del meta["views"]["mean-raw"]
    with pytest.raises(BundleError, match="decoder.output 'mean' is not the output of a view without post-processing"):
        parse_spec(meta, "b")
