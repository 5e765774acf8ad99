"""2-D pictures of sentence vectors, as skip-thought's Figure 2: t-SNE coloured by label."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from sklearn.decomposition import PCA
from sklearn.manifold import TSNE
from threadpoolctl import threadpool_limits

from thoughtvec.training.train.plots import _figure, save_png

Panel = tuple[str, np.ndarray, np.ndarray, Sequence[str]]  # title, vectors (n, d), labels (n,), class names


def embed_2d(X: np.ndarray, seed: int) -> np.ndarray:
    """t-SNE (after PCA to ≤ 50 dimensions, which keeps it fast) of the rows of ``X``, (n, 2)."""
    X = np.asarray(X, np.float32)
    k = min(50, X.shape[1], len(X))
    Z = PCA(n_components=k, random_state=seed).fit_transform(X) if X.shape[1] > k else X
    perplexity = float(min(30, max(2, (len(X) - 1) // 3)))
    # one thread: t-SNE's OpenMP threads spin against each other on a busy 2-core machine (40 s vs 0.2 s here)
    with threadpool_limits(1):
        return TSNE(n_components=2, init="pca", random_state=seed, perplexity=perplexity).fit_transform(Z)


def tsne_panels(panels: Sequence[Panel], path: str | Path, title: str, seed: int = 1111, sample: int = 1000) -> None:
    """One scatter per panel (a fixed random sample of ``sample`` points), saved as a PNG."""
    plt = _figure()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 5), squeeze=False)
    rng = np.random.default_rng(seed)
    for ax, (name, X, y, classes) in zip(axes[0], panels):
        keep = np.sort(rng.choice(len(X), size=min(sample, len(X)), replace=False))
        xy = embed_2d(X[keep], seed)
        for c, label in enumerate(classes):
            m = y[keep] == c
            ax.scatter(xy[m, 0], xy[m, 1], s=6, alpha=0.7, label=f"{label} ({int(m.sum())})")
        ax.set_title(name)
        ax.set_xticks([]), ax.set_yticks([])
        ax.legend(fontsize=7, markerscale=2, loc="best")
    fig.suptitle(title)
    save_png(fig, path)
    plt.close(fig)
