"""Plots written next to runs and bundles (PNG, atomically)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from service.bundle.atomic import atomic_write_bytes


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_png(fig, path: str | Path) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    atomic_write_bytes(path, buf.getvalue())


def plot_loss_curve(log_path: str | Path, png_path: str | Path, title: str) -> bool:
    """Training loss per logged step, validation metrics on a second axis. False if nothing to plot."""
    log_path = Path(log_path)
    if not log_path.exists():
        return False
    entries = [json.loads(ln) for ln in log_path.read_text().splitlines() if ln.strip()]
    steps = [e["step"] for e in entries if "loss" in e]
    if not steps:
        return False
    plt = _figure()
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, [e["loss"] for e in entries if "loss" in e], lw=1, label="training loss")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.grid(alpha=0.3)
    evals = [e for e in entries if "eval" in e]
    if evals:
        ax2 = ax.twinx()
        for key in sorted(evals[-1]["eval"]):
            ax2.plot([e["step"] for e in evals], [e["eval"].get(key) for e in evals], "o--", ms=3, label=f"validation {key}")
        ax2.set_ylabel("validation")
        lines = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
        ax.legend(lines, [ln.get_label() for ln in lines], loc="upper right", fontsize=8)
    else:
        ax.legend(loc="upper right", fontsize=8)
    ax.set_title(title)
    save_png(fig, png_path)
    plt.close(fig)
    return True


def plot_memory_attention(rows: list[tuple[list[str], object]], png_path: str | Path) -> None:
    """Figure 2 of the mean-max AAE paper: per decoding step, attention to the mean and max slots."""
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
