"""torch → ONNX for bundle encoders: dynamic batch and length axes, optional fp16 weight storage,
and the two checks every export must pass (ONNX Runtime parity, padding invariance)."""

from __future__ import annotations

import io
import logging
import warnings

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

log = logging.getLogger(__name__)

OPSET = 17
PARITY_TOL = 1e-4  # relative: ||onnx − torch|| / ||torch|| per vector
PADDING_TOL = 1e-5  # absolute: a vector alone vs inside a padded batch


def to_onnx(encoder: torch.nn.Module, output_names: list[str]) -> onnx.ModelProto:
    """Export ``encoder(input_ids, lengths)`` with dynamic batch and time axes.

    We use the TorchScript exporter: it maps ``nn.GRU`` to ONNX's native ``GRU`` op with truly
    dynamic sequence length, where the dynamo exporter (torch 2.13) rewrites GRUs into loops and
    can silently specialise the time axis. :func:`_assert_dynamic` guards against that either way.
    """
    encoder.eval()
    ids = torch.randint(3, 10, (3, 7), dtype=torch.int64)
    lengths = torch.tensor([7, 4, 2], dtype=torch.int64)
    buf = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            encoder,
            (ids, lengths),
            buf,  # type: ignore[arg-type]  # torch annotates a path, but the TorchScript exporter writes to a file object too
            dynamo=False,
            input_names=["input_ids", "lengths"],
            output_names=output_names,
            dynamic_axes={"input_ids": {0: "batch", 1: "time"}, "lengths": {0: "batch"}, **{n: {0: "batch"} for n in output_names}},
            opset_version=OPSET,
            do_constant_folding=True,
        )
    model = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(model)
    _assert_dynamic(model)
    return model


def _assert_dynamic(model: onnx.ModelProto) -> None:
    for inp in model.graph.input:
        dims = [d.dim_param or d.dim_value for d in inp.type.tensor_type.shape.dim]
        if any(isinstance(d, int) for d in dims):
            raise RuntimeError(f"ONNX export fixed an axis of input {inp.name}: {dims}; it must stay dynamic")


def round_to_fp16(module: torch.nn.Module) -> None:
    """Round every float parameter to fp16 precision (kept in fp32): the fp16 reference the
    exported graph is compared against when weights are stored as fp16."""
    with torch.no_grad():
        for p in module.parameters():
            if p.dtype == torch.float32:
                p.copy_(p.half().float())
        for b in module.buffers():
            if b.dtype == torch.float32:
                b.copy_(b.half().float())


def store_weights_fp16(model: onnx.ModelProto, min_elements: int = 1024) -> onnx.ModelProto:
    """Store large float32 initializers as float16 with a Cast back to float32 in front of their
    users: half the file size, and compute stays float32 (ONNX Runtime folds the Cast at load)."""
    graph = model.graph
    casts = []
    for init in graph.initializer:
        if init.data_type != TensorProto.FLOAT:
            continue
        arr = numpy_helper.to_array(init)
        if arr.size < min_elements:
            continue
        half = numpy_helper.from_array(arr.astype(np.float16), init.name + "__fp16")
        init.CopyFrom(half)
        casts.append(helper.make_node("Cast", [init.name], [init.name[: -len("__fp16")]], to=TensorProto.FLOAT, name=init.name + "_cast"))
    for node in reversed(casts):
        graph.node.insert(0, node)
    onnx.checker.check_model(model)
    return model


def parity(torch_out: dict[str, np.ndarray], onnx_out: dict[str, np.ndarray]) -> dict[str, float]:
    """Largest per-vector relative error, per view."""
    res = {}
    for name, ref in torch_out.items():
        got = onnx_out[name]
        err = np.linalg.norm(got - ref, axis=1) / np.maximum(np.linalg.norm(ref, axis=1), 1e-6)
        res[name] = float(err.max())
    return res
