"""The model tables of the README and ``docs/models.md``, generated from the evaluation records.

``thoughtvec eval`` (and ``thoughtvec eval report``) rewrites them in place, between marker comments,
in the files beside the report (``README.md`` one folder up, ``models.md`` in the same folder); a file
without the markers is left alone. Two tables, both from :func:`report.dev_choices`, so every pick is
made on dev numbers and the test columns are only reported:

- *which model for what* (README): per use (similarity, search, classifier features, small and fast)
  the bundle to use, its test figure, and the modern reference encoder's figure beside it;
- *bundled models* (docs): one row per bundle with its size, training and dev / test scores.
"""

from __future__ import annotations

import json
from pathlib import Path

from thoughtvec.training.evaluation.report import bundle_bytes, dev_choices, dev_cosine, dev_macro, flatten, macro, pick
from thoughtvec.training.evaluation.tasks import MACRO_TASKS

USE_MARKERS = ("<!-- models-table:begin -->", "<!-- models-table:end -->")
BUNDLE_MARKERS = ("<!-- bundles-table:begin -->", "<!-- bundles-table:end -->")
# The modern reference encoder, compared beside ours: its bundle once there is one, else the eval baseline.
REFERENCE = ("all-minilm-l6-v2", "minilm")
REFERENCE_LABEL = "all-MiniLM-L6-v2"
# The retrieval figure of a record (``flatten`` key); rows show "–" until a record carries it.
RETRIEVAL_KEY = "SciFact.ndcg@10"


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


def use_table(records: list[dict]) -> str:
    """Per use, the bundle chosen on dev, its test figure and the reference encoder's figure."""
    ours = pick(records)
    ref_names = {r["name"] for r in _reference(ours)}
    bundles = [r for r in ours if r["kind"] == "bundle" and r["name"] not in ref_names]
    ch = dev_choices(bundles)
    if "default_model" not in ch:
        return "No evaluated bundles yet: run `thoughtvec eval --bundle models/<name>`."
    ref = _reference(ours)
    ref_cos = max(ref, key=lambda r: dev_cosine(flatten(r)) or -1.0, default=None)
    ref_feat = max(ref, key=lambda r: dev_macro(flatten(r)) or -1.0, default=None)
    ref_ret = next((r for r in ref if RETRIEVAL_KEY in flatten(r)), None)
    rows = []

    d = ch["default_model"]
    sim = _record(bundles, d["name"], d["view"])
    rows.append(("similarity (cosine)", sim, _cosine_cell(flatten(sim)), _cosine_cell(flatten(ref_cos)) if ref_cos else "–"))

    with_ret = [r for r in bundles if RETRIEVAL_KEY in flatten(r)]
    ret = max(with_ret, key=lambda r: flatten(r)[RETRIEVAL_KEY]) if with_ret else sim
    ret_cell = f"SciFact nDCG@10 {_fmt(flatten(ret)[RETRIEVAL_KEY], 3)}" if with_ret else "no retrieval figure: the similarity pick"
    rows.append(("search", ret, ret_cell, f"SciFact nDCG@10 {_fmt(flatten(ref_ret).get(RETRIEVAL_KEY), 3)}" if ref_ret else "–"))

    feats = [r for r in bundles if dev_macro(flatten(r)) is not None]
    feat = max(feats, key=lambda r: dev_macro(flatten(r)))
    rows.append(("classifier features", feat, f"SentEval macro {_fmt(macro(flatten(feat), MACRO_TASKS), 2)}",
                 f"SentEval macro {_fmt(macro(flatten(ref_feat), MACRO_TASKS), 2)}" if ref_feat else "–"))  # fmt: skip

    # small and fast: the bundle whose default view is narrowest (index memory and search time follow the
    # dimension), the smaller on disk on a tie; its own default view's cosine figures
    newest = _newest(bundles)
    defaults = [r for r in bundles if r["view"] == newest[r["name"]].get("source", {}).get("default_view")]
    small = min(defaults, key=lambda r: (r["dim"], bundle_bytes(r)))
    rows.append(("small and fast", small, _cosine_cell(flatten(small)), "–"))

    lines = [f"| use | model | view (dim) | its test figures | {REFERENCE_LABEL}, same harness |", "|---|---|---|---|---|"]
    for use, r, ours_cell, ref_cell in rows:
        size = bundle_bytes(r)
        mb = f", {size / 1e6:.0f} MB" if size != float("inf") else ""
        lines.append(f"| {use} | `{r['name']}`{mb} | `{r['view']}` ({r['dim']}) | {ours_cell} | {ref_cell} |")
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


def bundles_table(records: list[dict]) -> str:
    """One row per evaluated bundle: family, default view, training, size, dev and test scores."""
    from thoughtvec.training.evaluation.report import REPO

    ours = [r for r in pick(records) if r["kind"] == "bundle"]
    ch = dev_choices(ours)
    default = ch.get("default_model", {}).get("name")
    lines = ["| bundle | family | default view (dim) | training | wall time | size | dev cosine ρ | STS-B cosine ρ (test) | "
             "SICK-R cosine ρ (test) | feature view by dev macro: test macro |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---|"]  # fmt: skip
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
            f"{_fmt(s.get('STS-B-cos.spearman'), 3)} | {_fmt(s.get('SICK-R-cos.spearman'), 3)} | "
            f"`{views['macro']}` {_fmt(macro(flatten(feat), MACRO_TASKS) if feat else None, 2)} |"
        )
    ref = [r for r in _reference(pick(records)) if r["kind"] != "bundle"]
    if ref:  # the reference encoder as an evaluation baseline, until it is a bundle with a row of its own
        s = flatten(max(ref, key=lambda r: dev_cosine(flatten(r)) or -1.0))
        feat_s = flatten(max(ref, key=lambda r: dev_macro(flatten(r)) or -1.0))
        lines.append(f"| *{REFERENCE_LABEL}* (baseline) | transformer | ({ref[0]['dim']}) | pretrained | – | – | "
                     f"{_fmt(dev_cosine(s), 3)} | {_fmt(s.get('STS-B-cos.spearman'), 3)} | {_fmt(s.get('SICK-R-cos.spearman'), 3)} | "
                     f"{_fmt(macro(feat_s, MACRO_TASKS), 2)} |")  # fmt: skip
    return "\n".join(lines)


def replace_between(text: str, markers: tuple[str, str], body: str) -> str | None:
    """``text`` with what lies between the two marker lines replaced by ``body``; None without the markers."""
    begin, end = markers
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < i:
        return None
    return text[: i + len(begin)] + "\n" + body.strip("\n") + "\n" + text[j:]


def write_tables(records: list[dict], report: Path) -> list[Path]:
    """Rewrite the tables in ``README.md`` (one folder above ``report``) and ``models.md`` (beside it)
    where those files hold the markers; returns the files written."""
    from thoughtvec.service.bundle.atomic import atomic_write_text

    written = []
    for path, markers, render in ((Path(report).parent.parent / "README.md", USE_MARKERS, use_table),
                                  (Path(report).parent / "models.md", BUNDLE_MARKERS, bundles_table)):  # fmt: skip
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        new = replace_between(text, markers, render(records))
        if new is not None and new != text:
            atomic_write_text(path, new)
            written.append(path)
    return written
