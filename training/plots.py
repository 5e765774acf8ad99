"""Plots written next to runs and bundles (PNG, atomically)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from service.atomic import atomic_write_bytes


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
