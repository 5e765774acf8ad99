"""Post-processing of sentence vectors for cosine similarity: remove the common mean and the top
principal components (Arora et al. 2017; Mu & Viswanath 2018, "all-but-the-top").

Sentence encoders trained without a similarity objective put most vectors in a narrow cone: one or
two directions shared by every sentence dominate the cosine (the uni-skip card's nearest
neighbours all have cosine 0.99+). Subtracting the mean and projecting out the top ``k``
directions, all estimated once on training text, removes that. It is a fixed per-row affine map,
so a sentence's vector still does not depend on its batch.

A bundle stores the map per view in an ``.npz`` (``<key>.mean``, ``<key>.components``) named by
the view's ``postprocess`` field; :class:`thoughtvec.service.core.encoder.Encoder` applies it after the graph.
``training/postprocess.py`` estimates it and chooses ``center`` and ``k`` on dev data.

The same file holds each cosine view's principal axes (``<key>.axes``, float16), for vectors of
fewer ``dimensions``: a request for ``d`` of them gets the view's vector projected on its top ``d``
axes (:class:`Axes`), which keeps the directions along which training sentences differ most,
where cutting the vector would keep whichever coordinates come first.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from thoughtvec.service.bundle.atomic import atomic_write_bytes
from thoughtvec.service.bundle.errors import BundleError

AXES = 512  # principal axes a bundle stores per cosine view (at most its dim): `dimensions` from 8 to this, or the full size


@dataclass(frozen=True)
class Postprocess:
    mean: np.ndarray  # (dim,) float32; zeros when not centring
    components: np.ndarray  # (k, dim) float32, orthonormal rows

    def apply(self, x: np.ndarray) -> np.ndarray:
        """``(x − mean)`` with its projection on ``components`` removed; rows independent."""
        y = x - self.mean
        if len(self.components):
            y = y - (y @ self.components.T) @ self.components
        return y.astype(np.float32, copy=False)


@dataclass(frozen=True)
class Axes:
    axes: np.ndarray  # (count, dim) float32, orthonormal rows, largest second moment first

    def project(self, x: np.ndarray, d: int) -> np.ndarray:
        """Rows ``x`` (n, dim) on the top ``d`` axes -> (n, d); rows independent."""
        return (x @ self.axes[:d].T).astype(np.float32, copy=False)


def fit_axes(x: np.ndarray, count: int) -> np.ndarray:
    """The top ``count`` principal axes (count, dim) of the L2-normalised rows of ``x``, uncentred: the
    subspace that keeps the most of the unit vectors, so inner products (cosines) change least. Each
    axis's largest component is positive, so fitting the same vectors again gives the same axes."""
    unit = l2_normalize(np.asarray(x, np.float64))
    _, vecs = np.linalg.eigh(unit.T @ unit)  # ascending
    top = vecs[:, ::-1].T[:count]  # (count, dim), largest first
    signs = np.sign(top[np.arange(len(top)), np.abs(top).argmax(1)])
    return np.ascontiguousarray(top * signs[:, None], np.float32)


def l2_normalize(x: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """Row-wise L2 normalisation; an all-zero row stays zero."""
    norm = np.sqrt(np.add.reduce(x * x, axis=-1, keepdims=True))  # np.linalg.norm's own sum, without its checks
    return x / np.maximum(norm, eps)


def fit(x: np.ndarray, center: bool, k: int) -> Postprocess:
    """Estimate the map on the rows of ``x`` (sentence vectors of training text)."""
    return fit_many(x, center, [k])[k]


def fit_many(x: np.ndarray, center: bool, ks: list[int]) -> dict[int, Postprocess]:
    """:func:`fit` for several ``k`` at once: one eigendecomposition of the (dim × dim) second-moment
    matrix, whose top eigenvectors are ``x``'s top right singular vectors."""
    x = np.asarray(x, np.float64)
    mean = x.mean(axis=0) if center else np.zeros(x.shape[1])
    y = x - mean
    vals, vecs = np.linalg.eigh(y.T @ y)  # ascending
    top = vecs[:, ::-1].T  # rows, largest first
    m32 = mean.astype(np.float32)
    return {k: Postprocess(m32, np.ascontiguousarray(top[:k], np.float32)) for k in ks}


def save(path: str | Path, maps: dict[str, Postprocess], axes: dict[str, np.ndarray] | None = None) -> None:
    """Write ``{key: map}`` and ``{key: axes}`` (stored as float16: half the bytes, and a projection keeps
    cosines to ~1e-4) to one ``.npz`` atomically."""
    arrays = {f"{k}.{f}": getattr(m, f) for k, m in maps.items() for f in ("mean", "components")}
    arrays |= {f"{k}.axes": np.asarray(a, np.float16) for k, a in (axes or {}).items()}
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    atomic_write_bytes(Path(path), buf.getvalue())


def load_axes(path: str | Path, key: str, dim: int, count: int, where: str, field: str) -> Axes:
    """The axes ``key`` of the ``.npz`` at ``path``, checked against the view's ``dim`` and their ``count``."""
    try:
        with np.load(path, allow_pickle=False) as z:
            axes = z[f"{key}.axes"].astype(np.float32)
    except (OSError, ValueError, KeyError) as e:
        raise BundleError(where, field, f"cannot read axes {key!r} from {Path(path).name}: {_said(e)}") from None
    if axes.shape != (count, dim) or not np.isfinite(axes).all():
        raise BundleError(where, field, f"axes {key!r} have shape {axes.shape}; expected ({count}, {dim}), finite")
    return Axes(axes)


def load(path: str | Path, key: str, dim: int, k: int, where: str, field: str) -> Postprocess:
    """The map ``key`` of the ``.npz`` at ``path``, checked against the view's ``dim`` and ``k``."""
    try:
        with np.load(path, allow_pickle=False) as z:
            mean, comps = z[f"{key}.mean"].astype(np.float32), z[f"{key}.components"].astype(np.float32)
    except (OSError, ValueError, KeyError) as e:
        raise BundleError(where, field, f"cannot read map {key!r} from {Path(path).name}: {_said(e)}") from None
    if mean.shape != (dim,) or comps.shape != (k, dim) or not (np.isfinite(mean).all() and np.isfinite(comps).all()):
        raise BundleError(
            where, field, f"map {key!r} has mean {mean.shape} and components {comps.shape}; expected ({dim},) and ({k}, {dim}), finite"
        )
    return Postprocess(mean, comps)


def _said(e: Exception) -> str:
    """A read error's reason without the file's path (an OSError's text names it; the message names the file)."""
    return (e.strerror or "an I/O error") if isinstance(e, OSError) else str(e)
