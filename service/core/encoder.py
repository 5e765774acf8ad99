"""Sentence encoder on ONNX Runtime: tokenize, map to ids, pad, run the bundle's graph; fewer ``dimensions`` on request.

This is the one code path that turns text into vectors: the server's batcher, ``thoughtvec
index build`` and the evaluation harness all go through :class:`Encoder`.

A sentence's vector never depends on its batch: graphs take explicit ``lengths`` and mask every
padded position, so padding a batch to its longest member changes nothing (tests assert ≤ 1e-5).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort
from threadpoolctl import ThreadpoolController

from thoughtvec.service.bundle import postprocess
from thoughtvec.service.bundle.fingerprint import files_digest, view_fingerprint
from thoughtvec.service.bundle.format import Bundle, load_bundle
from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.core.longinput import pool, prepare
from thoughtvec.service.core.planner import plan_batches
from thoughtvec.service.core.runtime import ONNXRUNTIME, OPENVINO, CpuRuntime, OpenVinoSession, RuntimeDescription, choose, openvino_support
from thoughtvec.service.errors import BundleError, InputTooLong, InvalidInput, UnknownView
from thoughtvec.service.settings import Truncation

log = logging.getLogger(__name__)

# Padded tokens per run on the bulk paths: with the default 128 inputs, any batch of inputs up to 256 tokens.
BULK_BATCH_TOKENS = 128 * 256
MIN_DIMENSIONS = 8  # fewer principal axes than this keep too little of a sentence to compare


CUDA = "CUDAExecutionProvider"
_preloaded = False


def keep_blas_off_onnx_runtime_cores() -> None:
    """Run numpy's matrix products (post-processing maps, similarities) on one thread; at each model load.

    numpy's wheels link OpenBLAS with its own pthreads pool, whose idle workers busy-wait for a while
    after every product: on the cores ONNX Runtime's threads need next. The products here are small
    (a batch times a 20 × 1 024 map), so the pool never paid for itself, and its spinning cost a view
    with a post-processing map over half its throughput (invertible-linear ``de-sif``, in-process batch
    32 on 2 cores: 302–328 → 713–727 sentences/s; ``thoughtvec bench --models invertible-linear``). OpenMP
    BLAS builds (FAISS's) are left alone: their threads are FAISS's search parallelism.
    """
    spinning = [
        lib
        for lib in ThreadpoolController().lib_controllers
        if lib.internal_api == "openblas" and lib.info().get("threading_layer") == "pthreads"
    ]
    for lib in spinning:
        lib.set_num_threads(1)
    if spinning:
        log.debug("numpy BLAS limited to one thread: %s", [lib.filepath for lib in spinning])


def available_providers(prefer_cuda: bool = True) -> list[str]:
    """ONNX Runtime execution providers to use, CUDA first when this build of ONNX Runtime has it."""
    have = ort.get_available_providers()
    order = ([CUDA] if prefer_cuda else []) + ["CPUExecutionProvider"]
    return [p for p in order if p in have]


def preload_cuda_libraries() -> None:
    """Load CUDA and cuDNN from the ``nvidia-*`` pip packages, if any, before the first CUDA session.

    onnxruntime-gpu does not find those packages' libraries on its own (they are not on the loader's
    path); without this, a pip-only CUDA install makes every session fall back to the CPU. Libraries
    already on the system path (a CUDA base image) are used as they are. Once per process.
    """
    global _preloaded
    if not _preloaded and hasattr(ort, "preload_dlls"):  # onnxruntime >= 1.21
        try:
            ort.preload_dlls(directory="")  # "": the nvidia-* packages in site-packages, else the system path
        except Exception as e:  # noqa: BLE001 - best effort: a missing package only means the system libraries are used
            log.debug("onnxruntime.preload_dlls: %s", e)
    _preloaded = True


class Encoder:
    """One loaded bundle with its session: ONNX Runtime's, or OpenVINO's where the bundle chose it
    (``thoughtvec.service.core.runtime``: ``runtime`` is the ``cpu_runtime`` setting; ``runs``, how many threads
    call it at once, each on ``threads``)."""

    session: ort.InferenceSession | OpenVinoSession
    runtime: RuntimeDescription  # what runs the graph, and why it was chosen
    providers: list[str]  # ONNX Runtime's providers as its session uses them (none on OpenVINO)

    def __init__(
        self,
        bundle: Bundle,
        *,
        providers: Sequence[str] | None = None,
        threads: int | None = None,
        session_config: dict[str, str] | None = None,
        runtime: CpuRuntime = "auto",
        runs: int = 1,
    ):
        keep_blas_off_onnx_runtime_cores()
        self.bundle = bundle
        self.spec = bundle.spec
        self.vocab = bundle.vocab
        self.tokenizer = bundle.tokenizer()
        wanted = list(providers or available_providers())
        chosen, why = choose(runtime, bundle.spec.onnx.cpu_runtime, on_gpu=CUDA in wanted)
        if chosen == OPENVINO:
            self._open_openvino(threads, runs, why)
        else:
            self._open_onnxruntime(wanted, threads, session_config, why)
        self._check_graph()
        self.postprocess = {name: postprocess.load(self.bundle.file(v.postprocess.file), v.postprocess.key, v.dim,
                                                   v.postprocess.components, str(bundle.path), f"views.{name}.postprocess")
                            for name, v in self.spec.views.items() if v.postprocess}  # fmt: skip
        self.axes = {name: postprocess.load_axes(self.bundle.file(v.axes.file), v.axes.key, v.dim, v.axes.count,
                                                 str(bundle.path), f"views.{name}.axes")
                     for name, v in self.spec.views.items() if v.axes}  # fmt: skip
        self._fingerprints: dict[str, str] = {}
        self._files_digest = files_digest(bundle)  # read once at load, never on the event loop

    def _cannot_load(self, runtime: str, e: Exception) -> BundleError:
        said = str(e).replace(str(self.bundle.onnx_path), self.bundle.onnx_path.name)  # its file by name: the folder is the server's
        return BundleError(str(self.bundle.path), "onnx.file", f"{runtime} cannot load it: {said}")

    def _open_openvino(self, threads: int | None, runs: int, why: str) -> None:
        try:
            self.session = OpenVinoSession(self.bundle.onnx_path, threads=threads, runs=runs, bf16=openvino_support().bf16)
        except Exception as e:  # noqa: BLE001 - OpenVINO's errors derive from Exception alone
            raise self._cannot_load("OpenVINO", e) from None
        self.runtime = RuntimeDescription(OPENVINO, openvino_support().version or "", self.session.precision, why)
        self.providers = []

    def _open_onnxruntime(self, wanted: list[str], threads: int | None, session_config: dict[str, str] | None, why: str) -> None:
        bundle = self.bundle
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        for key, value in (session_config or {}).items():  # e.g. session.intra_op.allow_spinning
            opts.add_session_config_entry(key, value)
        if CUDA in wanted:
            preload_cuda_libraries()
        try:
            self.session = ort.InferenceSession(str(bundle.onnx_path), sess_options=opts, providers=wanted)
        except Exception as e:  # noqa: BLE001 - onnxruntime's errors (Fail, NoSuchFile, InvalidProtobuf…) derive from Exception alone
            raise self._cannot_load("ONNX Runtime", e) from None
        precision = "int8" if bundle.spec.onnx.weights_dtype == "int8" else "float32"  # int8: its products; float32 elsewhere
        self.runtime = RuntimeDescription(ONNXRUNTIME, ort.__version__, precision, why)
        self.providers = self.session.get_providers()
        if CUDA in wanted and CUDA not in self.providers:
            # ONNX Runtime falls back to the CPU silently when the CUDA provider's libraries do not
            # load (no driver, CUDA or cuDNN of another major version): say so, loudly, once per model.
            log.warning(
                "%s: CUDAExecutionProvider was asked for but did not load (CUDA/cuDNN libraries missing or of "
                "another version); this model runs on the CPU",
                bundle.spec.name,
            )

    def fingerprint(self, view: str | None = None) -> str:
        """16 hex digits of what a view's vectors are a function of: the graph and vocabulary files, the
        tokenizer, the view's spec and its post-processing (``thoughtvec.service.bundle.fingerprint``). An index
        records it at creation, so that vectors of an earlier export are never compared with a re-exported
        bundle's (same name, new vectors)."""
        name = self.view(view)
        if name not in self._fingerprints:
            self._fingerprints[name] = view_fingerprint(self._files_digest, self.spec, name, self.postprocess.get(name))
        return self._fingerprints[name]

    @property
    def device(self) -> str:
        """``cuda`` when the session runs on the CUDA provider, else ``cpu``."""
        return "cuda" if CUDA in self.providers else "cpu"

    @classmethod
    def load(cls, path: str | os.PathLike, **kw) -> Encoder:
        return cls(load_bundle(Path(path)), **kw)

    # -- contract checks -------------------------------------------------------------------
    def _check_graph(self) -> None:
        where = str(self.bundle.path)
        inputs = [i.name for i in self.session.get_inputs()]
        if sorted(inputs) != sorted(self.spec.onnx.inputs):
            raise BundleError(where, "onnx.inputs", f"graph takes {inputs}, bundle.json says {list(self.spec.onnx.inputs)}")
        outputs = {o.name: o for o in self.session.get_outputs()}
        for vname, view in self.spec.views.items():
            if view.output not in outputs:
                raise BundleError(where, f"views.{vname}.output", f"graph has no output {view.output!r} (it has {sorted(outputs)})")
            shape = outputs[view.output].shape
            if len(shape) != 2 or (isinstance(shape[1], int) and shape[1] != view.dim):
                raise BundleError(where, f"views.{vname}.dim", f"is {view.dim} but graph output {view.output!r} has shape {shape}")

    # -- text -> ids -----------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def max_tokens(self) -> int:
        return self.spec.max_input_tokens

    @property
    def vocab_size(self) -> int:
        """The token ids the model has: ``0 .. vocab_size - 1``."""
        return self.tokenizer.vocab_size

    def view(self, name: str | None) -> str:
        """Resolve a view name (``None`` = the bundle's default) or raise :class:`UnknownView`."""
        if name is None:
            return self.spec.default_view
        if name not in self.spec.views:
            raise UnknownView(f"model '{self.name}' has no view '{name}'; its views are {sorted(self.spec.views)}", field="view")
        return name

    def dim(self, view: str | None = None) -> int:
        return self.spec.views[self.view(view)].dim

    @property
    def long_inputs(self) -> str:
        """What a split input is cut into: ``sentences``, or ``passages`` (sentences packed up to the limit)."""
        return self.spec.long_inputs

    @property
    def specials(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The special ids around every input's tokens: ``((), (<eos>,))``, ``((), ())``, ``((CLS,), (SEP,))``."""
        return self.tokenizer.prefix, self.tokenizer.suffix

    def token_ids(self, text: str) -> list[int]:
        """Ids of ``text`` as the model sees them, its special tokens (``<eos>``, ``[CLS]``...) included; not truncated."""
        return self.tokenizer.ids(text)

    def fit(self, ids: list[int], truncation: Truncation = "reject", field: str = "input") -> list[int]:
        """Apply the bundle's token limit: cut (keeping the final special: ``<eos>``, ``[SEP]``) or raise :class:`InputTooLong`."""
        limit = self.spec.max_input_tokens
        if len(ids) <= limit:
            return ids
        if truncation == "reject":
            raise InputTooLong(f"{field} has {len(ids)} tokens; the limit is {limit}", field=field)
        tail = list(self.tokenizer.suffix)
        return ids[: limit - len(tail)] + tail

    # -- fewer dimensions ------------------------------------------------------------------
    def dimensions(self, view: str | None, requested: int | None) -> int | None:
        """The ``dimensions`` a request may have for ``view``: ``None`` for the full vector (none asked, or the
        view's own size), else ``d`` with ``MIN_DIMENSIONS <= d <=`` the view's principal axes; :class:`InvalidInput` (422) otherwise."""
        name = self.view(view)
        dim = self.dim(name)
        if requested is None or requested == dim:
            return None
        where = f"model '{self.name}' view '{name}'"
        if requested > dim:
            raise InvalidInput(f"dimensions is {requested}; the limit is {dim}, the size of {where}", field="dimensions")
        if requested < MIN_DIMENSIONS:
            raise InvalidInput(f"dimensions is {requested}; the smallest is {MIN_DIMENSIONS} (up to {dim} for {where})", field="dimensions")
        axes = self.spec.views[name].axes
        if axes is None:
            kind = (
                "a feature view, meant for a classifier over all its"
                if self.spec.views[name].pooling == "supervised"
                else "a view without principal axes, so it serves only its"
            )
            raise InvalidInput(f"dimensions is {requested}; {where} is {kind} {dim} dimensions", field="dimensions")
        if requested > axes.count:
            raise InvalidInput(
                f"dimensions is {requested}; {where} keeps {axes.count} principal axes: send {MIN_DIMENSIONS} to {axes.count}, or {dim}",
                field="dimensions",
            )
        return requested

    def reduce(self, x: np.ndarray, view: str | None, dimensions: int | None) -> np.ndarray:
        """Vectors ``x`` of ``view`` (after its post-processing, before normalisation) with ``dimensions`` as
        :meth:`dimensions` allows: projected on the view's top principal axes; ``None``: unchanged."""
        return self.project(x, view, self.dimensions(view, dimensions))

    def project(self, x: np.ndarray, view: str | None, reduced: int | None) -> np.ndarray:
        """:meth:`reduce` for a ``reduced`` that :meth:`dimensions` already returned (a request's, checked before
        its work): ``x`` on the view's top ``reduced`` principal axes; ``None``: unchanged."""
        return x if reduced is None else self.axes[self.view(view)].project(x, reduced)

    # -- ids -> vectors --------------------------------------------------------------------
    def run_ids(self, batch: Sequence[Sequence[int]], view: str | None = None) -> np.ndarray:
        """Raw (not normalised) float32 vectors ``(len(batch), dim)`` for already-fitted id lists."""
        name = self.view(view)
        return self.run_views(batch, [name])[name]

    def inputs(self, batch: Sequence[Sequence[int]]) -> dict[str, np.ndarray]:
        """The graph's feeds for a non-empty batch of id lists: ids padded to the longest, and the lengths."""
        lengths = np.fromiter((len(s) for s in batch), dtype=np.int64, count=len(batch))
        ids = np.full((len(batch), max(1, int(lengths.max()))), self.tokenizer.pad_id, dtype=np.int64)
        for i, row in enumerate(batch):
            ids[i, : len(row)] = row
        return {"input_ids": ids, "lengths": lengths}

    def run_views(self, batch: Sequence[Sequence[int]], views: Sequence[str]) -> dict[str, np.ndarray]:
        """Several views of one batch in a single graph run (the graph computes them together)."""
        specs = {v: self.spec.views[self.view(v)] for v in views}
        if not batch:
            return {v: np.zeros((0, s.dim), np.float32) for v, s in specs.items()}
        names = list(dict.fromkeys(s.output for s in specs.values()))  # views may share an output
        outs = dict(zip(names, self.session.run(names, self.inputs(batch))))
        res = {}
        for v, s in specs.items():
            x = np.asarray(outs[s.output], dtype=np.float32)
            res[v] = self.postprocess[v].apply(x) if v in self.postprocess else x
        return res

    def encode(
        self,
        texts: Sequence[str],
        view: str | None = None,
        *,
        normalize: bool = True,
        truncation: Truncation = "truncate",
        batch_size: int = 128,
        max_batch_tokens: int = BULK_BATCH_TOKENS,
        dimensions: int | None = None,
    ) -> np.ndarray:
        """Vectors for ``texts`` in order, in batches planned as the server plans them (by length)."""
        name = self.view(view)
        return self.encode_views(
            texts,
            [name],
            normalize=normalize,
            truncation=truncation,
            batch_size=batch_size,
            max_batch_tokens=max_batch_tokens,
            dimensions=dimensions,
        )[name]

    def encode_views(
        self,
        texts: Sequence[str],
        views: Sequence[str],
        *,
        normalize: bool = True,
        truncation: Truncation = "truncate",
        batch_size: int = 128,
        max_batch_tokens: int = BULK_BATCH_TOKENS,
        progress: Callable[[int], None] | None = None,
        dimensions: int | None = None,
    ) -> dict[str, np.ndarray]:
        """:meth:`encode` for several views at once: each text is tokenized and run once.

        Batches come from :func:`~thoughtvec.service.core.planner.plan_batches` (the batcher's planner): at most
        ``batch_size`` inputs and ``max_batch_tokens`` padded tokens each. ``progress(n)`` is called after
        each batch with the ``n`` texts it finished. ``truncation="split"`` embeds a long text's sentences
        and pools them, as the server does (``thoughtvec.service.core.longinput``). ``dimensions``: each
        view's vectors projected on its top principal axes (:meth:`reduce`)."""
        views = [self.view(v) for v in views]
        reduced = {v: self.dimensions(v, dimensions) for v in views}  # a bad request fails before any work
        prep = prepare(self, texts, [f"input[{i}]" for i in range(len(texts))], truncation, allow_empty=True)
        ids = prep.parts
        out = {v: np.zeros((len(ids), self.dim(v)), np.float32) for v in views}
        left = np.bincount(np.asarray(prep.owner, dtype=np.int64), minlength=len(texts))  # parts still to run, per text
        for idx in plan_batches([len(s) for s in ids], batch_size, max_batch_tokens):
            for v, vecs in self.run_views([ids[i] for i in idx], views).items():
                out[v][idx] = vecs
            if progress:  # in texts, not parts: a split text counts once its last part has run
                owners = np.asarray(prep.owner, dtype=np.int64)[idx]
                np.subtract.at(left, owners, 1)
                progress(int(np.count_nonzero(left[np.unique(owners)] == 0)))
        if progress and (empty := int(np.count_nonzero(np.bincount(prep.owner, minlength=len(texts)) == 0))):
            progress(empty)  # texts without a part (blank under allow_empty) are done too
        pooled = {v: self.project(pool(x, prep, len(texts)), v, reduced[v]) for v, x in out.items()}
        return {v: l2_normalize(x) if normalize else x for v, x in pooled.items()}
