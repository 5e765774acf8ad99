import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from thoughtvec.bench.flops import graph_flops, graph_ops


def test_counts_gru_steps_and_matmuls(tmp_path):
    """A GRU (I=6, H=4, two directions) over the embedded words, then a per-token 8x5 projection."""
    V, I, H = 20, 6, 4  # noqa: E741 - I, H: the input and hidden sizes, as ONNX's GRU spec names them
    inits = [
        numpy_helper.from_array(np.zeros((V, I), np.float32), "emb"),
        numpy_helper.from_array(np.zeros((2, 3 * H, I), np.float32), "W"),
        numpy_helper.from_array(np.zeros((2, 3 * H, H), np.float32), "R"),
        numpy_helper.from_array(np.zeros((2 * H, 5), np.float32), "P"),
        numpy_helper.from_array(np.array([1, 0, 2], np.int64), "perm_shape"),
    ]
    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["x"]),  # (B, T, I)
        helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),  # (T, B, I)
        helper.make_node("GRU", ["xt", "W", "R"], ["y"], hidden_size=H, direction="bidirectional"),  # (T, 2, B, H)
        helper.make_node("Transpose", ["y"], ["yt"], perm=[2, 0, 1, 3]),  # (B, T, 2, H)
        helper.make_node("Flatten", ["yt"], ["flat"], axis=2),  # (B·T, 2H)
        helper.make_node("MatMul", ["flat", "P"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "time"]),
            helper.make_tensor_value_info("lengths", TensorProto.INT64, ["batch"]),
        ],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        inits,
    )
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    f = graph_flops(path)
    per_token = 2 * (2 * 3 * H * (I + H)) + 2 * (2 * H) * 5  # both directions' cells + the projection
    assert f["per_token"] == per_token and f["per_sentence"] == 0


def test_counts_int8_matrix_products_like_float_ones(tmp_path):
    """An int8 product (MatMulInteger, as ``thoughtvec quantize`` writes) does the float one's multiply-adds."""
    inits = [numpy_helper.from_array(np.zeros((20, 6), np.float32), "emb"), numpy_helper.from_array(np.zeros((6, 5), np.int8), "Wq")]
    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["x"]),  # (B, T, 6)
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("MatMulInteger", ["xq", "Wq"], ["out"]),  # (B, T, 5) int32
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "time"])],
        [helper.make_tensor_value_info("out", TensorProto.INT32, None)],
        inits,
    )
    path = tmp_path / "q.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    assert graph_flops(path) == {"per_token": 2 * 6 * 5, "per_sentence": 0}


def test_counts_a_transformer_layer_int8_and_float_apart_with_attention_growing_in_the_length(tmp_path):
    """One attention layer and a feed-forward product: Q and K float, V and the feed-forward int8, as a
    per-token-quantised export writes them; Q·Kᵀ and softmax·V grow with the length twice."""
    V, d, f = 30, 8, 12
    inits = [
        numpy_helper.from_array(np.zeros((V, d), np.float32), "emb"),
        numpy_helper.from_array(np.zeros((d, d), np.float32), "Wq"),
        numpy_helper.from_array(np.zeros((d, d), np.float32), "Wk"),
        numpy_helper.from_array(np.zeros((d, d), np.int8), "Wv"),
        numpy_helper.from_array(np.zeros((d, f), np.int8), "W1"),
    ]
    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["x"]),  # (B, L, d)
        helper.make_node("MatMul", ["x", "Wq"], ["q"]),
        helper.make_node("MatMul", ["x", "Wk"], ["k"]),
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("MatMulInteger", ["xq", "Wv"], ["v32"]),  # (B, L, d) int32
        helper.make_node("Cast", ["v32"], ["v"], to=TensorProto.FLOAT),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),  # (B, d, L)
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),  # (B, L, L)
        helper.make_node("Softmax", ["scores"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["ctx"]),  # (B, L, d)
        helper.make_node("DynamicQuantizeLinear", ["ctx"], ["cq", "cs", "cz"]),
        helper.make_node("MatMulInteger", ["cq", "W1"], ["out"]),  # (B, L, f) int32
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "time"]),
            helper.make_tensor_value_info("lengths", TensorProto.INT64, ["batch"]),
        ],
        [helper.make_tensor_value_info("out", TensorProto.INT32, None)],
        inits,
    )
    path = tmp_path / "t.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    ops = graph_ops(path)
    # by hand, a sentence of L tokens: Q and K 2·L·d·d each, Q·Kᵀ and softmax·V 2·L·L·d each; V 2·L·d·d, the feed-forward 2·L·d·f
    assert ops.floating == (0, 4 * d * d, 4 * d) and ops.int8 == (0, 2 * d * d + 2 * d * f, 0)
    L = 11
    assert ops.sentence(L) == (2 * L * d * d + 2 * L * d * f, 4 * L * d * d + 4 * L * L * d)
    assert ops.int8_op == "MatMulInteger" and ops.int8_types == (TensorProto.UINT8, TensorProto.INT8)
    assert graph_flops(path, (10, 30))["per_token"] == 2 * d * d + 2 * d * f + 4 * d * d + 4 * d * (10 + 30)
