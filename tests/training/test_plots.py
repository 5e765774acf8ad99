"""The training-curve figure: the loss on top, one panel per validation metric on its own scale."""

from __future__ import annotations

import json

from thoughtvec.training.train.plots import plot_loss_curve


def _log(path, evals: bool):
    rows = [{"step": s, "loss": 3.0 - s / 1000} for s in range(50, 1001, 50)]
    if evals:
        rows += [{"step": s, "eval": {"ns_loss": 2.3 - s / 1e5, "max_abs_WWt_minus_I": 0.05}} for s in (500, 1000)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_one_panel_per_validation_metric(tmp_path):
    import matplotlib.image

    plain = tmp_path / "plain.png"
    assert plot_loss_curve(_log(tmp_path / "a.jsonl", evals=False), plain, "t")
    with_evals = tmp_path / "evals.png"
    assert plot_loss_curve(_log(tmp_path / "b.jsonl", evals=True), with_evals, "t")
    h_plain, h_evals = (matplotlib.image.imread(p).shape[0] for p in (plain, with_evals))
    assert h_evals > 1.6 * h_plain  # two more panels below the loss


def test_nothing_to_plot(tmp_path):
    assert not plot_loss_curve(tmp_path / "missing.jsonl", tmp_path / "x.png", "t")
    (tmp_path / "evals-only.jsonl").write_text(json.dumps({"step": 1, "eval": {"ns_loss": 1.0}}) + "\n")
    assert not plot_loss_curve(tmp_path / "evals-only.jsonl", tmp_path / "x.png", "t") and not (tmp_path / "x.png").exists()
