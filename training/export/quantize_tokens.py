"""Per-token int8 products: each matrix product with a constant weight, rewritten to run on integers with
the activations scaled row by row at run time.

Static quantisation fixes one scale per activation tensor, calibrated once; a transformer's activations
vary too much from token to token for one scale to fit them all. ONNX Runtime's dynamic quantisation scales
the whole tensor by its range at run time, so a sentence's vector would depend on its batch. Here every
row (one token of one sentence) gets its own scale, so a row's result depends on that row alone:

    s = max(|x|) / 127 over the row's K features                       # (…, 1)
    x8 = round(x / s) clipped to ±127, stored as uint8 with 128 added   # (…, K); zero point 128: x8 − 128 = round(x / s)
    y = MatMulInteger(x8, W8, 128) · s · w                               # (…, N); W8 = round(W / w) per output column

``MatMulInteger`` with a uint8 input and an int8 weight is the pair ONNX Runtime's x86 kernels run on VNNI
(an int8 input takes a slower path). A row's rounding is its own, so the batch changes nothing but the order
rows are computed in. Products that read the same activation (a layer's query, key and value)
share its quantisation.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def weight_int8(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``W`` (K, N) as int8 and one scale per output column: ``W ≈ W8 · w``; symmetric, so zero maps to zero."""
    scale = np.abs(w).max(axis=0) / 127.0
    scale[scale == 0] = 1.0
    return np.clip(np.round(w / scale), -127, 127).astype(np.int8), scale.astype(np.float32)


def rewrite(model, nodes: list[str]):
    """``model`` with each ``MatMul`` in ``nodes`` (constant 2-D weight) replaced by its per-token int8 product."""
    inits = {t.name: t for t in model.graph.initializer}
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 17)
    consts = [numpy_helper.from_array(np.array(v, dtype), f"pt_{name}") for name, v, dtype in
              (("eps", 1e-12, np.float32), ("127", 127.0, np.float32), ("m127", -127.0, np.float32),
               ("128", 128.0, np.float32), ("zp", 128, np.uint8), ("axes", [-1], np.int64))]  # fmt: skip
    quantised: dict[str, tuple[str, str]] = {}  # activation -> (its uint8 form, its row scales)
    out, added, wanted = [], list(consts), set(nodes)

    def quantise(x: str) -> list:
        p = f"pt_{len(quantised)}_"
        reduce = (helper.make_node("ReduceMax", [p + "abs", "pt_axes"], [p + "amax"], keepdims=1) if opset >= 18
                  else helper.make_node("ReduceMax", [p + "abs"], [p + "amax"], keepdims=1, axes=[-1]))  # fmt: skip
        quantised[x] = (p + "x8", p + "s")
        return [
            helper.make_node("Abs", [x], [p + "abs"]),
            reduce,  # (…, 1): the row's range
            helper.make_node("Max", [p + "amax", "pt_eps"], [p + "amax1"]),  # an all-zero row keeps a finite scale
            helper.make_node("Div", [p + "amax1", "pt_127"], [p + "s"]),
            helper.make_node("Div", [x, p + "s"], [p + "xs"]),
            helper.make_node("Round", [p + "xs"], [p + "xr"]),
            helper.make_node("Clip", [p + "xr", "pt_m127", "pt_127"], [p + "xc"]),
            helper.make_node("Add", [p + "xc", "pt_128"], [p + "xu"]),
            helper.make_node("Cast", [p + "xu"], [p + "x8"], to=TensorProto.UINT8),
        ]

    for n in model.graph.node:
        if n.name not in wanted:
            out.append(n)
            continue
        w8, ws = weight_int8(numpy_helper.to_array(inits[n.input[1]]).astype(np.float32))
        x = n.input[0]
        if x not in quantised:
            out += quantise(x)
        x8, s = quantised[x]
        p = f"pt_{n.name}_".replace("/", "_")
        added += [numpy_helper.from_array(w8, p + "w8"), numpy_helper.from_array(ws, p + "w")]
        out += [
            helper.make_node("MatMulInteger", [x8, p + "w8", "pt_zp"], [p + "y32"]),
            helper.make_node("Cast", [p + "y32"], [p + "yf"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [p + "yf", s], [p + "ys"]),
            helper.make_node("Mul", [p + "ys", p + "w"], [n.output[0]]),
        ]
    used = {i for node in out for i in node.input}
    keep = [t for t in model.graph.initializer if t.name in used] + [t for t in added if t.name in used]
    del model.graph.node[:]
    model.graph.node.extend(out)
    del model.graph.initializer[:]
    model.graph.initializer.extend(keep)
    return model
