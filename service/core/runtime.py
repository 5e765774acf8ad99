"""Which runtime runs a bundle's graph on a CPU: ONNX Runtime, or OpenVINO where the bundle chose it and it can.

A bundle records the CPU runtime its graph was measured fastest on (``onnx.cpu_runtime`` in ``bundle.json``,
chosen by ``python -m thoughtvec.bench.runtimes``). OpenVINO runs the same ONNX file, at bfloat16 precision
with float32 accumulation, which is where its speed comes from: the same graph at float32 precision runs little or
no faster than on ONNX Runtime (docs/BENCHMARKS.md, "CPU runtimes"). So a bundle is served on OpenVINO only where

* the ``cpu_runtime`` setting allows it (``auto``: as the bundle says; ``onnxruntime``: never; ``openvino``:
  every bundle, whatever it says),
* the model runs on the CPU (a CUDA session stays ONNX Runtime's),
* OpenVINO is installed (``pip install 'thoughtvec[openvino]'``), and
* under ``auto``, the CPU has bfloat16 instructions (AVX-512 BF16 or AMX); without them OpenVINO would run the
  graph at float32, measured little or no faster.

Everywhere else ONNX Runtime serves the graph, and the log says why once per model. The runtime does not change
what a vector is a function of (the graph, ``thoughtvec.service.bundle.fingerprint``): a bundle is marked for
OpenVINO only where its vectors there agree with ONNX Runtime's (least cosine over the check sentences
≥ 0.999, a sentence's vector identical alone and in a padded batch), so indexes stay comparable across both.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import numpy as np

log = logging.getLogger(__name__)

CpuRuntime = Literal["auto", "onnxruntime", "openvino"]
ONNXRUNTIME, OPENVINO = "onnxruntime", "openvino"
OPENVINO_INSTALL = "pip install 'thoughtvec[openvino]'"


@dataclass(frozen=True, slots=True)
class RuntimeDescription:
    """What runs a model's graph, as ``/v1/models`` shows it."""

    name: str  # onnxruntime | openvino
    version: str
    precision: str  # float32 | bfloat16 (OpenVINO's inference precision; ONNX Runtime's is the graph's)
    note: str = ""  # why: the bundle's measured choice, or why it is not followed here

    def __str__(self) -> str:
        return f"{self.name} {self.version} at {self.precision}"  # e.g. openvino 2026.4.1 at bfloat16


@dataclass(frozen=True, slots=True)
class OpenVinoSupport:
    """OpenVINO on this machine: installed or not, and whether its CPU plugin runs bfloat16."""

    version: str | None  # None: not installed
    bf16: bool

    @property
    def why_not(self) -> str | None:
        """Why a bundle that chose OpenVINO is served by ONNX Runtime here under ``auto`` (None: it is not)."""
        if self.version is None:
            return f"OpenVINO is not installed ({OPENVINO_INSTALL})"
        if not self.bf16:
            return "this CPU has no bfloat16 instructions (OpenVINO's speed on the bundle was bfloat16's)"
        return None


def openvino_version() -> str | None:
    """The installed OpenVINO's version (None: not installed), read from its package metadata, not imported."""
    try:
        return metadata.version("openvino")
    except metadata.PackageNotFoundError:
        return None


@cache
def openvino_support() -> OpenVinoSupport:
    """Once per process, and only where a bundle may run on it: importing OpenVINO and asking its CPU plugin takes
    0.16 s and 37 MB."""
    try:
        import openvino as ov  # noqa: PLC0415 - optional extra, imported only where a bundle may use it
    except ImportError:
        return OpenVinoSupport(None, False)
    try:
        caps = ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    except Exception as e:  # noqa: BLE001 - a plugin that cannot answer is a plugin without bf16
        log.warning("OpenVINO %s cannot describe its CPU plugin (%s): ONNX Runtime serves every bundle", ov.get_version(), e)
        return OpenVinoSupport(ov.get_version().split("-")[0], False)
    return OpenVinoSupport(ov.get_version().split("-")[0], "BF16" in caps)


def choose(setting: CpuRuntime, bundle_choice: str, on_gpu: bool) -> tuple[str, str]:
    """(runtime, why) for a bundle whose ``onnx.cpu_runtime`` is ``bundle_choice`` under the ``cpu_runtime`` setting.

    Raises ``RuntimeError`` where the setting asks for OpenVINO and it is not installed (the model is then not
    loaded, and ``/ready`` says why)."""
    if on_gpu:
        return ONNXRUNTIME, "the model runs on the GPU (CUDA), which is ONNX Runtime's"
    if setting == ONNXRUNTIME:
        return ONNXRUNTIME, "the cpu_runtime setting is onnxruntime"
    if setting == OPENVINO:
        if openvino_support().version is None:
            raise RuntimeError(f"the cpu_runtime setting is openvino, but OpenVINO is not installed ({OPENVINO_INSTALL})")
        return OPENVINO, "the cpu_runtime setting is openvino"
    if bundle_choice != OPENVINO:  # before asking OpenVINO anything: a process that never uses it never imports it
        return ONNXRUNTIME, "the bundle's choice (onnx.cpu_runtime)"
    if (why := openvino_support().why_not) is not None:
        return ONNXRUNTIME, f"the bundle chose openvino, but {why}"
    return OPENVINO, "the bundle's choice (onnx.cpu_runtime)"


@dataclass(frozen=True, slots=True)
class _Port:
    """An input or output as ONNX Runtime's ``NodeArg`` describes it: a name and a shape (a str for a free axis)."""

    name: str
    shape: list[int | str]


class OpenVinoSession:
    """A bundle's ONNX graph compiled by OpenVINO for the CPU, run through ONNX Runtime's session interface
    (``run``, ``get_inputs``, ``get_outputs``, ``get_providers``), so that :class:`~thoughtvec.service.core.encoder.Encoder`
    runs either the same way.

    ``threads`` per run and ``runs`` at once, as ONNX Runtime's session is used (the batcher's ``concurrent_runs``
    threads call ``run`` together): OpenVINO gets ``threads × runs`` threads in ``runs`` streams, and each calling
    thread its own infer request (a request serves one call at a time)."""

    def __init__(self, path: Path, *, threads: int | None, runs: int = 1, bf16: bool = True):
        import openvino as ov  # noqa: PLC0415 - optional extra

        config: dict[str, Any] = {"NUM_STREAMS": max(1, runs), "INFERENCE_PRECISION_HINT": "bf16" if bf16 else "f32"}
        if threads:
            config["INFERENCE_NUM_THREADS"] = threads * max(1, runs)
        self._compiled = ov.Core().compile_model(str(path), "CPU", config)
        hint = self._compiled.get_property("INFERENCE_PRECISION_HINT")  # an element type: bf16 or f32
        self.precision = "bfloat16" if hint == ov.Type.bf16 else "float32"
        self._outputs = {name: o for o in self._compiled.outputs for name in o.get_names()}  # an output may have several names
        self._local = threading.local()

    @staticmethod
    def _ports(ports) -> list[_Port]:
        """Each port under each of its names (OpenVINO keeps a graph output's name beside its tensor's)."""
        return [
            _Port(name, [d.get_length() if d.is_static else "?" for d in p.get_partial_shape()])
            for p in ports
            for name in sorted(p.get_names())
        ]

    def get_inputs(self) -> list[_Port]:
        return self._ports(self._compiled.inputs)

    def get_outputs(self) -> list[_Port]:
        return self._ports(self._compiled.outputs)

    def get_providers(self) -> list[str]:
        return []  # no ONNX Runtime provider runs it

    def run(self, names: Sequence[str], feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """The outputs ``names`` for ``feeds``, as ``InferenceSession.run`` returns them (arrays of their own)."""
        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self._compiled.create_infer_request()
        # share_inputs: the feeds are read in place, not copied (half of a small run's overhead); they are the
        # caller's own arrays, unchanged until this returns
        result = request.infer(dict(feeds), share_inputs=True)
        return [np.array(result[self._outputs[n]], copy=True) for n in names]  # the request's buffers are reused
