"""The relatedness head: predicts SICK relatedness (1–5) from two sentence vectors, in numpy.

Tai et al. (2015) §4.2 soft-label regression, as SentEval's SICK-R does it: features
``x = [|u − v|, u ⊙ v]`` (element-wise; shape (n, 2d)), an optional sigmoid hidden layer, a softmax
over the classes 1..5, and the score ``Σ_i p_i · i``.

File format (``.npz``, written by :func:`save`, referenced from ``bundle.json`` as
``heads: {"relatedness": {"file": "relatedness.npz", "view": "<view>"}}``):

============  =========  ==============================================================
key           shape      meaning
============  =========  ==============================================================
format        ()         the string ``thoughtvec-relatedness-v1``
W             (h, 5)     output weights; h = 2d, or the hidden size
b             (5,)       output bias
normalize     ()         bool: L2-normalise u and v before building features
mean, scale   (2d,)      optional feature standardisation ``(x − mean) / scale``
W_hidden      (2d, h)    optional hidden layer ``h = sigmoid(x W_hidden + b_hidden)``
b_hidden      (h,)
============  =========  ==============================================================
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from thoughtvec.service.bundle.atomic import atomic_write_bytes

FORMAT = "thoughtvec-relatedness-v1"
CLASSES = np.arange(1, 6, dtype=np.float64)  # the SICK scores 1..5


@dataclass(frozen=True)
class RelatednessHead:
    W: np.ndarray  # (h, 5)
    b: np.ndarray  # (5,)
    normalize: bool = False
    mean: np.ndarray | None = None  # (2d,)
    scale: np.ndarray | None = None  # (2d,)
    W_hidden: np.ndarray | None = None  # (2d, h)
    b_hidden: np.ndarray | None = None  # (h,)

    def __post_init__(self) -> None:
        feat = self.W_hidden.shape[0] if self.W_hidden is not None else self.W.shape[0]
        if self.W.ndim != 2 or self.W.shape[1] != 5 or self.b.shape != (5,):
            raise ValueError(f"W must be (h, 5) and b (5,), got {self.W.shape} and {self.b.shape}")
        if feat % 2:
            raise ValueError(f"the feature size must be 2·dim, got {feat}")
        if (self.W_hidden is None) != (self.b_hidden is None):
            raise ValueError("W_hidden and b_hidden come together")
        if (
            self.W_hidden is not None
            and self.b_hidden is not None
            and (self.W_hidden.shape[1] != self.W.shape[0] or self.b_hidden.shape != (self.W.shape[0],))
        ):
            raise ValueError(f"hidden layer {self.W_hidden.shape} does not feed W {self.W.shape}")
        for name in ("mean", "scale"):
            arr = getattr(self, name)
            if arr is not None and arr.shape != (feat,):
                raise ValueError(f"{name} must be ({feat},), got {arr.shape}")

    @property
    def dim(self) -> int:
        """The sentence-vector dimension the head expects."""
        feat = self.W_hidden.shape[0] if self.W_hidden is not None else self.W.shape[0]
        return feat // 2

    def features(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        u = np.atleast_2d(np.asarray(u, np.float64))
        v = np.atleast_2d(np.asarray(v, np.float64))
        if u.shape != v.shape or u.shape[1] != self.dim:
            raise ValueError(f"u and v must both be (n, {self.dim}), got {u.shape} and {v.shape}")
        if self.normalize:
            u = u / np.maximum(np.linalg.norm(u, axis=1, keepdims=True), 1e-12)
            v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        x = np.concatenate([np.abs(u - v), u * v], axis=1)  # (n, 2d)
        if self.mean is not None:
            x = x - self.mean
        if self.scale is not None:
            x = x / np.where(self.scale == 0, 1.0, self.scale)
        return x

    def probabilities(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """(n, 5) class probabilities for the scores 1..5."""
        h = self.features(u, v)
        if self.W_hidden is not None:
            h = 1.0 / (1.0 + np.exp(-(h @ self.W_hidden + self.b_hidden)))  # (n, h)
        logits = h @ self.W + self.b  # (n, 5)
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Relatedness in [1, 5] for each row pair: ``Σ p_i · i``. Shape (n,)."""
        return self.probabilities(u, v) @ CLASSES


def save(path: str | Path, head: RelatednessHead) -> None:
    """Write ``head`` atomically in the format above."""
    arrays = {"format": np.array(FORMAT), "W": head.W, "b": head.b, "normalize": np.array(bool(head.normalize))}
    for name in ("mean", "scale", "W_hidden", "b_hidden"):
        if getattr(head, name) is not None:
            arrays[name] = getattr(head, name)
    buf = io.BytesIO()
    # Any: mypy checks a **dict's values against savez's allow_pickle: bool as well
    stored: dict[str, Any] = {k: np.asarray(v, np.float32) if k not in ("format", "normalize") else v for k, v in arrays.items()}
    np.savez(buf, **stored)
    atomic_write_bytes(path, buf.getvalue())


def load(path: str | Path) -> RelatednessHead:
    """Read a head written by :func:`save`; ``ValueError`` names what is wrong."""
    with np.load(Path(path), allow_pickle=False) as z:
        keys = set(z.files)
        if "format" not in keys or str(z["format"]) != FORMAT:
            raise ValueError(f"{path}: not a {FORMAT} file (format={z['format'] if 'format' in keys else None!r})")
        if not {"W", "b"} <= keys:
            raise ValueError(f"{path}: arrays W and b are required, found {sorted(keys)}")
        unknown = keys - {"format", "W", "b", "normalize", "mean", "scale", "W_hidden", "b_hidden"}
        if unknown:
            raise ValueError(f"{path}: unknown arrays {sorted(unknown)}")
        get = lambda k: np.asarray(z[k], np.float64) if k in keys else None  # noqa: E731
        return RelatednessHead(
            W=np.asarray(z["W"], np.float64),
            b=np.asarray(z["b"], np.float64),
            normalize=bool(z["normalize"]) if "normalize" in keys else False,
            mean=get("mean"),
            scale=get("scale"),
            W_hidden=get("W_hidden"),
            b_hidden=get("b_hidden"),
        )
