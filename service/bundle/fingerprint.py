"""What a view's vectors are a function of, as 16 hex digits: an index records it at creation, and the model
guide (``thoughtvec.service.core.guide``) records it beside each bundle's dev figures, so neither is taken for
a re-exported bundle of the same name. The encoder computes it from what it loaded; :func:`fingerprint` from
the folder alone (no ONNX session), for the training side that writes the guide."""

from __future__ import annotations

import hashlib

import numpy as np

from thoughtvec.service.bundle import postprocess
from thoughtvec.service.bundle.format import Bundle, BundleSpec
from thoughtvec.service.bundle.postprocess import Postprocess


def files_digest(bundle: Bundle) -> bytes:
    """SHA-256 of the graph and tokenizer files (a 30 MB graph: tens of ms; read once at load)."""
    h = hashlib.sha256()
    for path in (bundle.onnx_path, bundle.tokenizer_file):
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    return h.digest()


def view_fingerprint(digest: bytes, spec: BundleSpec, view: str, pp: Postprocess | None) -> str:
    """The files' ``digest``, the tokenizer, the view's spec, how long inputs are cut and its post-processing map.
    Fields that do not change a view's full vectors (its description, its principal axes) are left out, so adding
    them keeps indexes."""
    h = hashlib.sha256(digest)
    h.update(spec.tokenizer.model_dump_json(exclude_none=True).encode())
    h.update(spec.views[view].model_dump_json(exclude={"description", "axes"}).encode())
    if spec.long_inputs != "sentences":  # how long inputs are cut (left out at its default: older indexes stay valid)
        h.update(f"long_inputs={spec.long_inputs}".encode())
    if pp is not None:
        h.update(np.ascontiguousarray(pp.mean, np.float32).tobytes())
        h.update(np.ascontiguousarray(pp.components, np.float32).tobytes())
    return h.hexdigest()[:16]


def fingerprint(bundle: Bundle, view: str) -> str:
    """:func:`view_fingerprint` of a bundle folder's ``view``, reading its map from the bundle."""
    v = bundle.spec.views[view]
    pp = None
    if v.postprocess:
        pp = postprocess.load(
            bundle.file(v.postprocess.file),
            v.postprocess.key,
            v.dim,
            v.postprocess.components,
            str(bundle.path),
            f"views.{view}.postprocess",
        )
    return view_fingerprint(files_digest(bundle), bundle.spec, view, pp)
