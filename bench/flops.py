"""Operations of a bundle's ONNX graph, for achieved-op/s figures in benchmarks.

Counted from the graph with ONNX Runtime's symbolic shape inference at three sentence lengths (one
sentence each), int8 and float apart:

* matrix products, 2·M·K·N: float ``MatMul``, ``Gemm``, ``FusedMatMul``; int8 ``MatMulInteger``,
  ``MatMulIntegerToFloat``, ``DynamicQuantizeMatMul``, ``QLinearMatMul``. A transformer's attention
  products (Q·Kᵀ and softmax·V) are float ``MatMul``\\ s whose size grows with the length twice;
* ONNX Runtime's fused attention (``Attention``/``QAttention``: the QKV projection, then 4·S·S·H;
  ``MultiHeadAttention``: 4·S·L·H);
* recurrent cells (``GRU``: 2·3H·(I+H) per step and direction, ``LSTM`` 2·4H·(I+H)).

Element-wise work (gates, norms, softmax, quantising) is left out, so the figure is a floor. A sentence
of L tokens costs ``per_sentence + per_token·L + per_token_pair·L²`` of each kind (exact: the counts are
polynomials of degree two in L); the three lengths give the three coefficients.

Needs ``onnx`` and ``sympy`` (the training and dev installs have both; the serving install does not).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

FLOAT_PRODUCTS = ("MatMul", "Gemm", "FusedMatMul")
INT8_PRODUCTS = ("MatMulInteger", "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "QLinearMatMul")
ATTENTION = ("Attention", "QAttention", "MultiHeadAttention")
RECURRENT = ("GRU", "LSTM", "RNN")
LENGTHS = (8, 16, 32)  # three lengths fix the three coefficients


@dataclass(frozen=True)
class Ops:
    """Operations of one sentence of L tokens: ``c[0] + c[1]·L + c[2]·L²``, int8 and float apart."""

    int8: tuple[float, float, float]
    floating: tuple[float, float, float]
    int8_op: str | None = None  # the graph's int8 product ("MatMulInteger"...), for the matching peak
    int8_types: tuple[int, int] = (2, 3)  # its inputs' ONNX element types (A, B); 2 uint8, 3 int8

    def sentence(self, length: int) -> tuple[float, float]:
        """(int8 ops, float FLOPs) of one sentence of ``length`` tokens."""
        return _poly(self.int8, length), _poly(self.floating, length)

    def per_token(self, length: int) -> tuple[float, float]:
        """(int8, float) per token of a sentence of ``length`` tokens."""
        i, f = self.sentence(length)
        return i / length, f / length


def _poly(c: tuple[float, float, float], x: int) -> float:
    return c[0] + c[1] * x + c[2] * x * x


def _attr(node, name: str, default: int = 0) -> int:
    return next((a.i for a in node.attribute if a.name == name), default)


def _count(model, length: int) -> tuple[float, float, str | None, tuple[int, int]]:
    """(int8 ops, float FLOPs, the int8 product's op type, its input element types) of one sentence."""
    import onnx  # noqa: PLC0415  # optional: the bench extra
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference  # noqa: PLC0415  # with onnx: the bench extra

    m = onnx.ModelProto()
    m.CopyFrom(model)
    for inp in m.graph.input:
        for i, d in enumerate(inp.type.tensor_type.shape.dim):
            d.ClearField("dim_param")
            d.dim_value = 1 if i == 0 else length
    m = SymbolicShapeInference.infer_shapes(m, auto_merge=True)
    infos = [*m.graph.value_info, *m.graph.input, *m.graph.output]
    shape = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in infos}
    dtype = {vi.name: vi.type.tensor_type.elem_type for vi in infos}
    shape.update({t.name: list(t.dims) for t in m.graph.initializer})
    dtype.update({t.name: t.data_type for t in m.graph.initializer})
    int8 = flt = 0.0
    int8_op: str | None = None
    int8_types = (2, 3)
    for n in m.graph.node:
        if n.op_type in FLOAT_PRODUCTS or n.op_type in INT8_PRODUCTS:
            a, y = shape.get(n.input[0]), shape.get(n.output[0])
            if not a or not y:
                continue
            k = a[0] if _attr(n, "transA") and len(a) == 2 else a[-2] if _attr(n, "transA") else a[-1]
            ops = 2.0 * float(np.prod(y)) * k
            if n.op_type in FLOAT_PRODUCTS:
                flt += ops
            else:
                int8 += ops
                b = n.input[3] if n.op_type == "QLinearMatMul" else n.input[1]
                int8_op, int8_types = n.op_type, (dtype.get(n.input[0], 1), dtype.get(b, 3))
        elif n.op_type in ("Attention", "QAttention"):  # input (B, S, D), weights (D, 3H)
            x, w = shape.get(n.input[0]), shape.get(n.input[1])
            if not x or not w:
                continue
            batch, s, d = x
            proj = 2.0 * batch * s * d * w[1]
            if n.op_type == "QAttention":
                int8 += proj
            else:
                flt += proj
            flt += 4.0 * batch * s * s * (w[1] // 3)  # Q·Kᵀ and softmax·V
        elif n.op_type == "MultiHeadAttention":  # query (B, S, H), key (B, L, H)
            q, k = shape.get(n.input[0]), shape.get(n.input[1])
            if not q or not k or len(q) != 3 or len(k) != 3:
                continue
            flt += 4.0 * q[0] * q[1] * k[1] * q[2]
        elif n.op_type in RECURRENT:
            x, w, r = (shape.get(i) for i in n.input[:3])
            if not x or not w or not r:
                continue
            steps, batch = x[0], x[1]
            dirs, gates_h, inp = w  # (dirs, gates·H, I)
            flt += 2.0 * steps * batch * dirs * gates_h * (inp + r[2])
    return int8, flt, int8_op, int8_types


def graph_ops(onnx_path: str | Path) -> Ops:
    """The int8 and float operations of the graph at ``onnx_path`` as polynomials in the sentence's length."""
    import onnx  # noqa: PLC0415  # optional: the bench extra

    model = onnx.load(str(onnx_path))
    counts = [_count(model, n) for n in LENGTHS]
    vander = np.array([[1.0, n, n * n] for n in LENGTHS])

    def fit(values: list[float]) -> tuple[float, float, float]:
        c = np.linalg.solve(vander, np.array(values))
        return (round(float(c[0]), 3) + 0.0, round(float(c[1]), 3) + 0.0, round(float(c[2]), 3) + 0.0)  # + 0.0: no -0.0

    int8_op, types = next(((c[2], c[3]) for c in counts if c[2]), (None, (2, 3)))
    return Ops(fit([c[0] for c in counts]), fit([c[1] for c in counts]), int8_op, types)


def graph_flops(onnx_path: str | Path, lengths: tuple[int, int] = (10, 30)) -> dict[str, float]:
    """``{"per_token", "per_sentence"}``: operations (int8 and float together) per token and per sentence of
    the graph at ``onnx_path``, a straight line through ``lengths`` (attention's growth with the length is
    folded into the slope between them)."""
    ops = graph_ops(onnx_path)
    a, b = lengths
    fa, fb = sum(ops.sentence(a)), sum(ops.sentence(b))
    per_token = (fb - fa) / (b - a)
    return {"per_token": per_token, "per_sentence": max(fa - a * per_token, 0.0)}
