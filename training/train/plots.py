"""Plots written next to runs and bundles (PNG, atomically)."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from thoughtvec.service.bundle.atomic import atomic_write_bytes


def _figure():
    import matplotlib  # noqa: PLC0415  # its Agg backend must be chosen before pyplot loads

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415  # only when a plot is drawn

    return plt


def save_png(fig, path: str | Path) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    atomic_write_bytes(path, buf.getvalue())


def plot_loss_curve(log_path: str | Path, png_path: str | Path, title: str) -> bool:
    """Training loss per logged step on top; below it, one panel per validation metric, each on its own
    scale (on one shared axis a metric near 0.05 flattened a loss near 2.3 into a line). False if nothing to plot."""
    log_path = Path(log_path)
    if not log_path.exists():
        return False
    entries = [json.loads(ln) for ln in log_path.read_text().splitlines() if ln.strip()]
    steps = [e["step"] for e in entries if "loss" in e]
    if not steps:
        return False
    evals = [e for e in entries if "eval" in e]
    keys = sorted(evals[-1]["eval"]) if evals else []
    plt = _figure()
    fig, axes = plt.subplots(1 + len(keys), 1, figsize=(7, 3.2 + 1.6 * len(keys)), sharex=True,
                             gridspec_kw={"height_ratios": [2] + [1] * len(keys)}, squeeze=False)  # fmt: skip
    ax = axes[0][0]
    ax.plot(steps, [e["loss"] for e in entries if "loss" in e], lw=1, label="training loss")
    ax.set_ylabel("loss")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title(title)
    for (vax,), key in zip(axes[1:], keys, strict=True):
        points = [(e["step"], e["eval"][key]) for e in evals if e["eval"].get(key) is not None]
        vax.plot([x for x, _ in points], [y for _, y in points], "o--", ms=3, color="tab:orange")
        vax.set_ylabel(key, fontsize=8)
        vax.grid(alpha=0.3)
        if points:
            vax.set_title(f"validation {key}: {points[0][1]:.4g} at step {points[0][0]:,} → {points[-1][1]:.4g} at step {points[-1][0]:,}",
                          fontsize=8, loc="left")  # fmt: skip
    axes[-1][0].set_xlabel("step")
    save_png(fig, png_path)
    plt.close(fig)
    return True


def plot_memory_attention(rows: Sequence[tuple[list[str], np.ndarray]], png_path: str | Path) -> None:
    """Figure 2 of the mean-max AAE paper: per decoding step, attention to the mean and max slots.

    ``rows``: (tokens, weights (T, 2)) per sentence."""
    plt = _figure()
    fig, axes = plt.subplots(1, len(rows), figsize=(3.2 * len(rows), 0.28 * max(len(t) for t, _ in rows) + 1.2))
    axes = axes if len(rows) > 1 else [axes]
    for ax, (tokens, w) in zip(axes, rows):
        ax.imshow(w, cmap="Blues", vmin=0, vmax=1, aspect="auto")
        ax.set_xticks(range(w.shape[1]), ["mean", "max"][: w.shape[1]])
        ax.set_yticks(range(len(tokens)), tokens, fontsize=8)
        for i in range(w.shape[0]):
            for j in range(w.shape[1]):
                ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=7, color="black" if w[i, j] < 0.6 else "white")
    fig.suptitle("decoder attention over [mean, max] at each step")
    save_png(fig, png_path)
    plt.close(fig)


def plot_singular_values(values: list[float], png_path: str | Path) -> None:
    plt = _figure()
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot(range(1, len(values) + 1), values, "o-", ms=3)
    ax.axhline(1.0, color="gray", lw=0.8, ls="--")
    ax.set_xlabel("index")
    ax.set_ylabel("singular value of W")
    ax.set_ylim(min(0.9, min(values) - 0.02), max(1.1, max(values) + 0.02))
    ax.grid(alpha=0.3)
    save_png(fig, png_path)
    plt.close(fig)
