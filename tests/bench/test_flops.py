import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from thoughtvec.bench.flops import graph_flops


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
