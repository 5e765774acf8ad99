"""A deterministic tiny bundle built with ``onnx.helper`` alone (no torch): fast, model-free tests.

The graph embeds ids with a fixed random table and pools over the valid positions only:
view ``mean`` (default, dim D) and view ``meanmax`` (dim 2D). It honours the bundle contract
exactly (``input_ids`` + ``lengths`` in, one output per view, padding ignored).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from thoughtvec.service.bundle.format import BundleSpec, OnnxSpec, TokenizerSpec, ViewSpec, VocabularySpec, write_bundle
from thoughtvec.service.bundle.vocab import Vocabulary

WORDS = (
    "the a an of and to in is was he she it they we you i that this with for on at by from as "
    "cat dog man woman child car house tree river city book letter hand coat table door "
    "runs ran sits sat walks walked reads read drives drove opens opened sleeps slept "
    "big small red green happy sad old new fast slow , . ! ? ' \" n't 's"
).split()


def tiny_graph(vocab_size: int, dim: int, seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    emb = rng.standard_normal((vocab_size, dim)).astype(np.float32)
    emb[0] = 0.0  # <pad>
    inits = [
        numpy_helper.from_array(emb, "emb"),
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
        numpy_helper.from_array(np.array(1, np.int64), "one"),
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
        numpy_helper.from_array(np.array(1.0, np.float32), "onef"),
        numpy_helper.from_array(np.array(-1e9, np.float32), "neg"),
        numpy_helper.from_array(np.array(0.0, np.float32), "zerof"),
    ]
    n = helper.make_node
    nodes = [
        n("Gather", ["emb", "input_ids"], ["E"]),  # (B, T, D)
        n("Shape", ["input_ids"], ["shape"]),
        n("Gather", ["shape", "one"], ["T"]),  # scalar T
        n("Range", ["zero", "T", "one"], ["pos"]),  # (T,)
        n("Unsqueeze", ["pos", "zero_axis"], ["pos2"]),  # (1, T)
        n("Unsqueeze", ["lengths", "axis1"], ["len2"]),  # (B, 1)
        n("Less", ["pos2", "len2"], ["valid"]),  # (B, T)
        n("Cast", ["valid"], ["validf"], to=TensorProto.FLOAT),
        n("Unsqueeze", ["validf", "two_axis"], ["mask"]),  # (B, T, 1)
        n("Mul", ["E", "mask"], ["Em"]),
        n("ReduceSum", ["Em", "axis1"], ["sum"], keepdims=0),  # (B, D)
        n("Cast", ["len2"], ["lenf"], to=TensorProto.FLOAT),
        n("Max", ["lenf", "onef"], ["count"]),
        n("Div", ["sum", "count"], ["mean"]),
        # max over valid positions; an empty input gives zeros
        n("Unsqueeze", ["valid", "two_axis"], ["valid3"]),
        n("Where", ["valid3", "E", "neg"], ["Eneg"]),
        n("ReduceMax", ["Eneg"], ["mx_raw"], axes=[1], keepdims=0),
        n("Cast", ["len2"], ["haslen_f"], to=TensorProto.FLOAT),
        n("Min", ["haslen_f", "onef"], ["haslen"]),
        n("Mul", ["mx_raw", "haslen"], ["mx"]),
        n("Concat", ["mean", "mx"], ["meanmax"], axis=1),
    ]
    inits += [
        numpy_helper.from_array(np.array([0], np.int64), "zero_axis"),
        numpy_helper.from_array(np.array([2], np.int64), "two_axis"),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "time"]),
            helper.make_tensor_value_info("lengths", TensorProto.INT64, ["batch"]),
        ],
        [
            helper.make_tensor_value_info("mean", TensorProto.FLOAT, ["batch", dim]),
            helper.make_tensor_value_info("meanmax", TensorProto.FLOAT, ["batch", 2 * dim]),
        ],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="thoughtvec-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def make_tiny_bundle(
    dest: str | Path,
    name: str = "tiny",
    dim: int = 8,
    max_input_tokens: int = 32,
    append_eos: bool = True,
    seed: int = 0,
    cpu_runtime: str = "onnxruntime",
):
    vocab = Vocabulary.from_words(WORDS)
    spec = BundleSpec(
        name=name,
        family="skip-thought",
        variant="tiny-test",
        description="deterministic test bundle (mean of fixed random embeddings)",
        tokenizer=TokenizerSpec(append_eos=append_eos),
        vocabulary=VocabularySpec(size=len(vocab), trained_size=len(vocab)),
        max_input_tokens=max_input_tokens,
        onnx=OnnxSpec(opset=17, cpu_runtime=cpu_runtime),
        views={
            "mean": ViewSpec(output="mean", dim=dim, description="mean of word vectors", pooling="unsupervised"),
            "meanmax": ViewSpec(output="meanmax", dim=2 * dim, description="[mean, max]", pooling="supervised"),
        },
        default_view="mean",
        training={"note": "not trained: fixed random embeddings"},
    )
    return write_bundle(dest, spec, vocab, tiny_graph(len(vocab), dim, seed).SerializeToString())
