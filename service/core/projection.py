"""A 2-D map of an index for the playground: PCA of some of its documents' vectors, with queries placed on it.

The documents are embedded again through the index's model (the same path as a search query),
rather than read back from FAISS: compressed factories (PQ, SQ) cannot give their vectors back.
"""

from __future__ import annotations

import numpy as np


def pca_2d(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean (dim,), the top two principal axes (2, dim), their share of the variance (2,)) of rows ``x``."""
    mean = x.mean(0)
    _, s, vt = np.linalg.svd(x - mean, full_matrices=False)  # rows of vt: axes, by variance
    var = s**2
    axes = vt[:2] if len(vt) >= 2 else np.vstack([vt, np.zeros((2 - len(vt), x.shape[1]), x.dtype)])
    share = (var[:2] / max(var.sum(), 1e-12)) if len(var) >= 2 else np.pad(var / max(var.sum(), 1e-12), (0, 2 - len(var)))
    return mean, axes, share


def project(x: np.ndarray, mean: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """Rows ``x`` (n, dim) on the plane of ``axes`` -> (n, 2)."""
    return (x - mean) @ axes.T
