"""The model tables of the README and ``docs/models.md``, generated from the evaluation records.

``thoughtvec eval`` (and ``thoughtvec eval report``) rewrites them in place, between marker comments,
in the files beside the report (``README.md`` one folder up, ``models.md`` in the same folder); a file
without the markers is left alone. Every pick is made on dev numbers (:mod:`guide` for the uses,
:func:`report.dev_choices` for the default model); the test columns are only reported:

- *which model for what* (README): per use (similarity, search, classifier features, small and fast)
  the bundle to use and its figures, and the best of the bundles trained here beside it;
- *bundled models* (docs): one row per bundle with its size, training and dev / test scores.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from thoughtvec.paths import REPO
from thoughtvec.service.bundle.atomic import atomic_write_text
from thoughtvec.training.evaluation import dev_choices as guide
from thoughtvec.training.evaluation.report import bundle_bytes, dev_choices, dev_cosine, dev_macro, flatten, macro, pick
from thoughtvec.training.evaluation.tasks import MACRO_TASKS

USE_MARKERS = ("<!-- models-table:begin -->", "<!-- models-table:end -->")
BUNDLE_MARKERS = ("<!-- bundles-table:begin -->", "<!-- bundles-table:end -->")
# The modern reference encoder as an evaluation baseline (its bundle, once there is one, has a row of its own).
REFERENCE = ("all-minilm-l6-v2", "minilm")
REFERENCE_LABEL = "all-MiniLM-L6-v2"
USE_LABELS = {"similarity": "similarity (cosine)", "search": "search", "features": "classifier features", "speed": "small and fast"}


def _fmt(v: float | None, digits: int) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _record(records: list[dict], name: str, view: str | None) -> dict | None:
    return next((r for r in records if r["name"] == name and r["view"] == view), None)


def _newest(records: list[dict]) -> dict[str, dict]:
    """Per bundle name, its newest record: the bundle's default view as it is now (``thoughtvec
    postprocess`` may have changed it since older records)."""
    return {r["name"]: r for r in sorted(records, key=lambda r: r.get("created", ""))}


def _reference(records: list[dict]) -> list[dict]:
    """The reference encoder's records (all its views), by the first name of :data:`REFERENCE` present."""
    for name in REFERENCE:
        found = [r for r in records if r["name"] == name]
        if found:
            return found
    return []


def _cosine_cell(s: dict[str, float]) -> str:
    return f"STS-B ρ {_fmt(s.get('STS-B-cos.spearman'), 3)}, SICK-R ρ {_fmt(s.get('SICK-R-cos.spearman'), 3)}"


def _use_cells(use: str, f: guide.Figures, bundles: list[dict], retrieval: Sequence[dict] = ()) -> tuple[str, str]:
    """(the model with its view, its figures) for ``use``: test figures, the retrieval task's dev figures (dense,
    and hybrid with BM25 where that is the model's default search)."""
    view = f.macro_view if use == "features" else f.default_view
    rec = _record(bundles, f.name, view)
    size = f", {f.bytes / 1e6:.0f} MB" if f.bytes != float("inf") else ""
    model = f"`{f.name}`{size}, `{view}` ({rec['dim'] if rec else '?'})"
    s = flatten(rec) if rec else {}
    if use == "search":
        hybrid = guide.hybrid_scores({f.name: f}, retrieval).get(f.name)  # shown where it is the index default
        both = f"{_fmt(f.ndcg10, 3)} dense, {_fmt(hybrid, 3)} hybrid with BM25" if hybrid is not None else _fmt(f.ndcg10, 3)
        return model, f"SciFact nDCG@10 {both} (dev)"
    if use == "features":
        return model, f"SentEval macro {_fmt(macro(s, MACRO_TASKS) if rec else None, 2)}"
    return model, _cosine_cell(s)


def use_table(records: list[dict], retrieval: Sequence[dict] = ()) -> str:
    """Per use, the bundle chosen on dev and its figures; beside it, the best of the bundles trained here."""
    bundles = [r for r in pick(records) if r["kind"] == "bundle"]
    figs = guide.figures(bundles, retrieval)
    if not figs:
        return "No evaluated bundles yet: run `thoughtvec eval --bundle models/<name>`."
    best, here = guide.picks(figs), guide.picks(figs, trained_here=True)
    lines = ["| for | use | its figures | or the best trained here | its figures |", "|---|---|---|---|---|"]
    for use in guide.USES:
        f, h = best[use], here[use]
        if f is None:
            continue
        ours = ("the same", "") if h is f else _use_cells(use, h, bundles, retrieval) if h else ("–", "")
        lines.append(f"| {USE_LABELS[use]} | {' | '.join(_use_cells(use, f, bundles, retrieval))} | {ours[0]} | {ours[1]} |")
    return "\n".join(lines)


def _training_cells(path: Path) -> tuple[str, str]:
    """(steps and epochs of each part, total wall time) from a bundle's ``bundle.json``."""
    meta = json.loads((path / "bundle.json").read_text(encoding="utf-8")) if (path / "bundle.json").is_file() else {}
    training = meta.get("training", {})
    parts = training.get("parts") or ([training] if "steps" in training else [])  # combine-skip has one per trained model
    if not parts:
        return "–", "–"
    steps = " + ".join(f"{p['steps']:,} steps" + (f" ({p['epochs']:.2f} ep)" if p.get("epochs") else "") for p in parts)
    return steps, f"{sum(p.get('wall_time_s', 0) for p in parts) / 3600:.2f} h"


def bundles_table(records: list[dict], retrieval: Sequence[dict] = ()) -> str:
    """One row per evaluated bundle: family, default view, training, size, dev and test scores."""
    ours = [r for r in pick(records) if r["kind"] == "bundle"]
    ch = dev_choices(ours)
    figs = guide.figures(ours, retrieval)
    default = ch.get("default_model", {}).get("name")
    lines = ["| bundle | family | default view (dim) | training | wall time | size | dev cosine ρ | STS-B cosine ρ (test) | "
             "SICK-R cosine ρ (test) | SciFact nDCG@10 (dev) | feature view by dev macro: test macro |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|"]  # fmt: skip
    newest = _newest(ours)
    for name, views in ch["views"].items():
        src = newest[name].get("source", {})
        dv = _record(ours, name, src.get("default_view"))
        s = flatten(dv) if dv else {}
        feat = _record(ours, name, views["macro"])
        steps, wall = _training_cells(REPO / src.get("path", name))
        size = bundle_bytes(newest[name])
        label = f"**`{name}`** (default model)" if name == default else f"`{name}`"
        dim = src.get("views", {}).get(src.get("default_view"), "?")
        lines.append(
            f"| {label} | {src.get('family', '–')} | `{src.get('default_view')}` ({dim}) | {steps} | {wall} | "
            f"{_fmt(size / 1e6 if size != float('inf') else None, 1)} MB | {_fmt(dev_cosine(s) if dv else None, 3)} | "
            f"{_fmt(s.get('STS-B-cos.spearman'), 3)} | {_fmt(s.get('SICK-R-cos.spearman'), 3)} | {_fmt(figs[name].ndcg10, 3)} | "
            f"`{views['macro']}` {_fmt(macro(flatten(feat), MACRO_TASKS) if feat else None, 2)} |"
        )
    ref = [r for r in _reference(pick(records)) if r["kind"] != "bundle"]
    if ref and not any(r["kind"] == "bundle" for r in _reference(ours)):  # the reference as a baseline, until it is a bundle
        s = flatten(max(ref, key=lambda r: dev_cosine(flatten(r)) or -1.0))
        feat_s = flatten(max(ref, key=lambda r: dev_macro(flatten(r)) or -1.0))
        lines.append(f"| *{REFERENCE_LABEL}* (baseline) | transformer | ({ref[0]['dim']}) | pretrained | – | – | "
                     f"{_fmt(dev_cosine(s), 3)} | {_fmt(s.get('STS-B-cos.spearman'), 3)} | {_fmt(s.get('SICK-R-cos.spearman'), 3)} | – | "
                     f"{_fmt(macro(feat_s, MACRO_TASKS), 2)} |")  # fmt: skip
    return "\n".join(lines)


def replace_between(text: str, markers: tuple[str, str], body: str) -> str | None:
    """``text`` with what lies between the two marker lines replaced by ``body``; None without the markers."""
    begin, end = markers
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < i:
        return None
    return text[: i + len(begin)] + "\n" + body.strip("\n") + "\n" + text[j:]


def write_tables(records: list[dict], report: Path, retrieval: Sequence[dict] = ()) -> list[Path]:
    """Rewrite the tables in ``README.md`` (one folder above ``report``) and ``models.md`` (beside it)
    where those files hold the markers; returns the files written."""
    written = []
    for path, markers, render in ((Path(report).parent.parent / "README.md", USE_MARKERS, use_table),
                                  (Path(report).parent / "models.md", BUNDLE_MARKERS, bundles_table)):  # fmt: skip
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        new = replace_between(text, markers, render(records, retrieval))
        if new is not None and new != text:
            atomic_write_text(path, new)
            written.append(path)
    return written
