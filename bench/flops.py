"""FLOPs of a bundle's ONNX graph, for achieved-FLOP/s figures in benchmarks.

Counted from the graph with ONNX Runtime's symbolic shape inference at two sentence lengths (one
sentence each): matrix products (``MatMul``, ``Gemm``, and int8 ``MatMulInteger``: 2·M·K·N) and recurrent cells (``GRU``:
2·3H·(I+H) per step and direction, ``LSTM`` 2·4H·(I+H)). Element-wise work (gates, norms, softmax)
is left out, so the figure is a floor. The two lengths split the count into a part per token and a
part per sentence (pooling, projections of pooled vectors).

Needs ``onnx`` and ``sympy`` (the training and dev installs have both; the serving install does not).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _count(model, length: int) -> float:
    import onnx
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    m = onnx.ModelProto()
    m.CopyFrom(model)
    for inp in m.graph.input:
        for i, d in enumerate(inp.type.tensor_type.shape.dim):
            d.ClearField("dim_param")
            d.dim_value = 1 if i == 0 else length
    m = SymbolicShapeInference.infer_shapes(m, auto_merge=True)
    shape = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in [*m.graph.value_info, *m.graph.input, *m.graph.output]}
    shape.update({t.name: list(t.dims) for t in m.graph.initializer})
    total = 0.0
    for n in m.graph.node:
        if n.op_type in ("MatMul", "MatMulInteger", "Gemm"):
            a, b, y = shape.get(n.input[0]), shape.get(n.input[1]), shape.get(n.output[0])
            if not a or not b or not y:
                continue
            k = a[-1] if n.op_type != "Gemm" or not any(at.name == "transA" and at.i for at in n.attribute) else a[0]
            total += 2.0 * float(np.prod(y)) * k
        elif n.op_type in ("GRU", "LSTM", "RNN"):
            x, w, r = (shape.get(i) for i in n.input[:3])
            if not x or not w or not r:
                continue
            steps, batch = x[0], x[1]
            dirs, gates_h, inp = w  # (dirs, gates·H, I)
            total += 2.0 * steps * batch * dirs * gates_h * (inp + r[2])
    return total


def graph_flops(onnx_path: str | Path, lengths: tuple[int, int] = (10, 30)) -> dict[str, float]:
    """``{"per_token", "per_sentence"}``: FLOPs per token and per sentence of the graph at ``onnx_path``."""
    import onnx

    model = onnx.load(str(onnx_path))
    a, b = lengths
    fa, fb = _count(model, a), _count(model, b)
    per_token = (fb - fa) / (b - a)
    return {"per_token": per_token, "per_sentence": max(fa - a * per_token, 0.0)}
