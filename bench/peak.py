"""The machine's practical peak, as ONNX Runtime reaches it: one large matrix product in a one-node graph.

The int8 product is the one the bundle's graph uses (``MatMulInteger``, ``DynamicQuantizeMatMul``,
``QLinearMatMul`` or ``MatMulIntegerToFloat``, with the graph's element types), the float one ``MatMul``;
both on an n×n by n×n product (2·n³ operations), in a session with the served session's options (its
thread count and spinning). Best of a few runs: on a shared machine the best run is the one least disturbed.

Needs ``onnx`` (to write the one-node graph).
"""

from __future__ import annotations

import time

import numpy as np

MS = "com.microsoft"


def _graph(op: str, n: int, a_type: int, b_type: int) -> tuple[bytes, dict[str, np.ndarray]]:
    """A one-node graph ``Y = A·B`` with B a constant weight (n×n), and its feed A."""
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415  # optional: the bench extra

    rng = np.random.default_rng(0)
    np_of: dict[int, type] = {TensorProto.UINT8: np.uint8, TensorProto.INT8: np.int8, TensorProto.FLOAT: np.float32}
    int8 = op != "MatMul"
    b_np = rng.integers(-100, 100, (n, n)).astype(np_of[b_type]) if int8 else rng.random((n, n), dtype=np.float32)
    a_float = op in ("MatMul", "DynamicQuantizeMatMul")
    a_np = rng.random((n, n), dtype=np.float32) if a_float else rng.integers(0, 100, (n, n)).astype(np_of[a_type])
    inits = [numpy_helper.from_array(b_np, "B")]
    scalar = {  # per-tensor scales and zero points of the quantised operators
        "as": np.array(0.01, np.float32),
        "az": np.array(0, np_of.get(a_type, np.uint8)),
        "bs": np.array(0.01, np.float32),
        "bz": np.array(0, np_of.get(b_type, np.int8)),
        "ys": np.array(1.0, np.float32),
        "yz": np.array(0, np_of.get(a_type, np.uint8)),
    }
    inputs = {
        "MatMul": ["A", "B"],
        "MatMulInteger": ["A", "B", "az", "bz"],
        "MatMulIntegerToFloat": ["A", "B", "as", "bs", "az", "bz"],
        "DynamicQuantizeMatMul": ["A", "B", "bs", "bz"],
        "QLinearMatMul": ["A", "as", "az", "B", "bs", "bz", "ys", "yz"],
    }[op]
    inits += [numpy_helper.from_array(scalar[i], i) for i in inputs if i in scalar]
    domain = MS if op in ("MatMulIntegerToFloat", "DynamicQuantizeMatMul") else ""
    node = helper.make_node(op, inputs, ["Y"], domain=domain)
    a_elem = TensorProto.FLOAT if a_float else a_type
    y_elem = {"MatMulInteger": TensorProto.INT32, "QLinearMatMul": a_type}.get(op, TensorProto.FLOAT)
    graph = helper.make_graph(
        [node], "peak", [helper.make_tensor_value_info("A", a_elem, [n, n])], [helper.make_tensor_value_info("Y", y_elem, None)], inits
    )
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(MS, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets).SerializeToString(), {"A": a_np}


def matmul_peak(op: str, options, n: int = 1024, repeats: int = 7, types: tuple[int, int] = (2, 3)) -> float:
    """Best operations/s of ONNX Runtime's ``op`` on an n×n by n×n product, in a session with ``options``
    (an ``onnxruntime.SessionOptions``: pass a served session's, ``session.get_session_options()``, for its
    threads and spinning). ``types``: the int8 operands' ONNX element types (A, B)."""
    import onnxruntime as ort  # noqa: PLC0415  # loaded by the figures that run a graph

    model, feeds = _graph(op, n, *types)
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    session.run(None, feeds)
    best = 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        session.run(None, feeds)
        best = max(best, 2.0 * n**3 / (time.perf_counter() - t))
    return best
