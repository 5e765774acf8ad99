"""``docs/RESULTS.md`` and ``docs/results.json`` from the saved run records (``docs/results/*.json``).

The report is generated, never edited: one table per task group with our bundles and views, the
baselines measured by the same harness, and the papers' published numbers (see :mod:`papers`);
then macro averages, wall times with the exact commands, the protocol and the data licences.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from thoughtvec import paths
from thoughtvec.service.bundle.atomic import atomic_write_text
from thoughtvec.training.evaluation import retrieval_report, runner
from thoughtvec.training.evaluation.classifiers import MODES
from thoughtvec.training.evaluation.papers import CITATIONS, PUBLISHED
from thoughtvec.training.evaluation.runner import SCHEMA
from thoughtvec.training.evaluation.tasks import MACRO6_TASKS, MACRO_TASKS, select
from thoughtvec.training.export.postprocess import MIN_GAIN

KIND_ORDER = {"bundle": 0, "server": 1, "baseline": 2}
BASELINE_ORDER = {
    "glove-avg": 0,
    "glove-avg-pp": 1,
    "sif": 2,
    "sif-glove-spacy": 3,
    "sif-glove-spacy-pp": 4,
    "sif-glove-spacy-w2v": 5,
    "sif-glove-spacy-w2v-pp": 6,
    "minilm": 7,
}

# (title, intro, columns): a column is (header, key, digits); key "TASK" = accuracy, "TASK.metric" otherwise.
GROUPS = [
    ("Classification", "Accuracy (%). MR, CR, SUBJ, MPQA: nested cross-validation; SST-2: train/dev/test; TREC: k-fold on train, test.",
     [("MR", "MR", 1), ("CR", "CR", 1), ("SUBJ", "SUBJ", 1), ("MPQA", "MPQA", 1), ("SST-2", "SST2", 1), ("TREC", "TREC", 1)]),
    ("Paraphrase and entailment", "Features [|u−v|, u⊙v] and logistic regression. MRPC: accuracy and F1 (%); SICK-E: accuracy (%).",
     [("MRPC acc", "MRPC", 1), ("MRPC F1", "MRPC.f1", 1), ("SICK-E", "SICK-E", 1)]),
    ("Relatedness, supervised", "Tai et al. soft-label regression on [|u−v|, u⊙v], early stopping on dev; test Pearson r, Spearman ρ, MSE.",
     [("SICK-R r", "SICK-R.pearson", 4), ("SICK-R ρ", "SICK-R.spearman", 4), ("SICK-R MSE", "SICK-R.mse", 4),
      ("STS-B r", "STS-B.pearson", 4), ("STS-B ρ", "STS-B.spearman", 4), ("STS-B MSE", "STS-B.mse", 4)]),
    ("Similarity, unsupervised", "Cosine of the two vectors on the test pairs; Pearson r and Spearman ρ (the invertible-decoders paper's "
     "SICK14 column is Pearson). *dev ρ*: the same on the dev pairs (SICK trial, STS-B dev), on which models, views and "
     "post-processing are chosen.",
     [("SICK-R r", "SICK-R-cos.pearson", 4), ("SICK-R ρ", "SICK-R-cos.spearman", 4), ("STS-B r", "STS-B-cos.pearson", 4), ("STS-B ρ", "STS-B-cos.spearman", 4),
      ("SICK-R dev ρ", "SICK-R-cos.dev_spearman", 4), ("STS-B dev ρ", "STS-B-cos.dev_spearman", 4)]),
]  # fmt: skip

LICENCES = """\
The SentEval data are read in place from `../shared/data/senteval` (see its `PROVENANCE.md`); nothing is copied
into this repository. Their terms travel with any use of these numbers:
- **MRPC**: Microsoft Research Shared Source License — non-commercial use only.
- **SICK** (SICK-E, SICK-R): CC BY-NC-SA 3.0 — non-commercial, share-alike. A relatedness head trained on SICK
  (`relatedness.npz` in a bundle) is derived from it.
- **STS-B**: scores CC BY-SA 4.0; sentence sources carry their own terms (MSRpar/MSRvid: Microsoft Research licence).
- MR, CR, SUBJ, MPQA, TREC, SST-2: no licence stated in the sources; cite the papers listed in `PROVENANCE.md`."""


def load_records(results_dir: str | Path) -> list[dict]:
    """Every ``*.json`` run record under ``results_dir``."""
    out = []
    for p in sorted(Path(results_dir).glob("*.json")):
        rec = json.loads(p.read_text(encoding="utf-8"))
        if rec.get("schema") == SCHEMA:
            rec["_file"] = p.name
            out.append(rec)
    return out


def flatten(rec: dict) -> dict[str, float]:
    """A record's numbers under the report's keys (``"MR"``, ``"MRPC.f1"``, ``"SICK-R.pearson"``)."""
    out = {}
    for task, m in rec["tasks"].items():
        for metric, v in m.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[task if metric == "acc" else f"{task}.{metric}"] = float(v)
    return out


def macro(scores: Mapping[str, float | None], tasks: Sequence[str]) -> float | None:
    """Mean accuracy over ``tasks``, or None when one is missing."""
    vals = [v for t in tasks if (v := scores.get(t)) is not None]
    return None if len(vals) < len(tasks) else float(np.mean(vals))


def dev_macro(scores: dict[str, float], tasks: Sequence[str] = MACRO_TASKS) -> float | None:
    """Mean dev accuracy over ``tasks`` (inner folds, SST-2/SICK dev, k-fold on train): what views are chosen by."""
    return macro({t: scores.get(f"{t}.dev_acc") for t in tasks}, tasks)


def dev_cosine(scores: dict[str, float]) -> float | None:
    """Mean cosine Spearman on the SICK-R and STS-B dev pairs: what the default model is chosen by."""
    vals = [v for k in ("SICK-R-cos.dev_spearman", "STS-B-cos.dev_spearman") if (v := scores.get(k)) is not None]
    return None if len(vals) < 2 else float(np.mean(vals))


def quick_dev_macro(source, view: str, data_root: Path | None, seed: int = 1111, check_counts: bool = True) -> float | None:
    """The mean dev accuracy over the 8 macro tasks of ``source``'s ``view`` by the quick protocol: the
    feature score the choices between word-vector sources are made on."""
    opts = runner.RunOptions(tasks=select(",".join(MACRO_TASKS)), protocol=dataclasses.replace(MODES["quick"], seed=seed),
                             data_root=data_root, check_counts=check_counts)  # fmt: skip
    return dev_macro(flatten(runner.evaluate(source, [view], opts, log=lambda _: None)[0]))


def bundle_bytes(record: dict) -> float:
    """The size on disk of the bundle a record evaluated (its files under ``source.path``, relative paths
    from the repository); infinite when the folder is not here."""
    where = record.get("source", {}).get("path")
    path = paths.REPO / where if where else None  # an absolute ``where`` stays itself
    files = [f for f in path.iterdir() if f.is_file()] if path is not None and path.is_dir() else []
    return float(sum(f.stat().st_size for f in files)) if files else float("inf")


IMPORTED_FAMILY = "transformer"  # bundles imported from sentence-transformers, not trained here


def dev_choices(ours: list[dict]) -> dict:
    """The choices the README follows, made on dev numbers only: the default model (best dev cosine of a
    bundle's default view; among bundles within :data:`thoughtvec.training.export.postprocess.MIN_GAIN` of the best, the
    smallest, as post-processing keeps the simplest map within that margin), and per bundle the view
    with the best dev macro and the best dev cosine. Every bundle competes, the imported reference encoder
    (family ``transformer``) too: the server's default model is this one (the model guide's ``default_models``)."""
    bundles = [r for r in ours if r["kind"] == "bundle"]
    out: dict = {"views": {}}

    def cosine(r: dict) -> float:  # for the records below that have one
        return v if (v := dev_cosine(flatten(r))) is not None else float("-inf")

    def macro_of(r: dict) -> float:
        return v if (v := dev_macro(flatten(r))) is not None else float("-inf")

    # a bundle's default view as its newest record saw it (a later `thoughtvec postprocess` may change it)
    newest = {r["name"]: r for r in sorted(bundles, key=lambda r: r.get("created", ""))}
    default_of = {n: r.get("source", {}).get("default_view") for n, r in newest.items()}
    default_views = [r for r in bundles if r["view"] == default_of[r["name"]] and dev_cosine(flatten(r)) is not None]
    if default_views:
        top = max(cosine(r) for r in default_views)
        tied = [r for r in default_views if cosine(r) >= top - MIN_GAIN]
        best = min(tied, key=lambda r: (bundle_bytes(r), -cosine(r)))
        out["default_model"] = {"name": best["name"], "view": best["view"], "dev_cosine": dev_cosine(flatten(best)),
                                "tied": [{"name": r["name"], "dev_cosine": dev_cosine(flatten(r)), "bytes": bundle_bytes(r)}
                                         for r in sorted(tied, key=lambda r: -cosine(r)) if r is not best]}  # fmt: skip
    for name in dict.fromkeys(r["name"] for r in bundles):
        rs = [r for r in bundles if r["name"] == name]
        by_macro = [r for r in rs if dev_macro(flatten(r)) is not None]
        by_cos = [r for r in rs if dev_cosine(flatten(r)) is not None]
        out["views"][name] = {
            "macro": max(by_macro, key=macro_of)["view"] if by_macro else None,
            "cosine": max(by_cos, key=cosine)["view"] if by_cos else None,
        }
    return out


def _dev_section(ours: list[dict]) -> list[str]:
    ch = dev_choices(ours)
    lines = [
        "## Choices made on dev",
        "",
        "Nothing below looks at a test split. The default model is the bundle, of every one evaluated (the imported "
        "reference encoder too), whose default view has the best mean "
        f"cosine Spearman on the SICK-R and STS-B dev pairs, or, among bundles within {MIN_GAIN} of the best (the margin "
        "`thoughtvec postprocess` treats as noise), the smallest on disk; a bundle's best view for features is the one with the best "
        "mean dev accuracy over the 8 macro tasks (inner folds for MR/CR/SUBJ/MPQA, k-fold on train for TREC/MRPC, "
        "the dev sets of SST-2 and SICK-E).",
        "",
    ]
    if "default_model" in ch:
        d = ch["default_model"]
        ties = "".join(f"; within {MIN_GAIN} of {t['name']}'s {t['dev_cosine']:.4f} and smaller on disk" for t in d["tied"])
        lines += [f"Default model: **{d['name']}** (view `{d['view']}`, dev cosine ρ {d['dev_cosine']:.4f}{ties}).", ""]
    lines += [
        "| bundle | best view by dev macro | dev macro | test macro | best view by dev cosine | dev cosine ρ | test STS-B ρ |",
        "|---|---|---:|---:|---|---:|---:|",
    ]
    for name, v in ch["views"].items():
        rm = next((r for r in ours if r["kind"] == "bundle" and r["name"] == name and r["view"] == v["macro"]), None)
        rc = next((r for r in ours if r["kind"] == "bundle" and r["name"] == name and r["view"] == v["cosine"]), None)
        sm, sc = (flatten(rm) if rm else {}), (flatten(rc) if rc else {})
        lines.append(
            f"| **{name}** | {v['macro'] or '–'} | {_fmt(dev_macro(sm) if rm else None, 2)} | "
            f"{_fmt(macro(sm, MACRO_TASKS) if rm else None, 2)} | {v['cosine'] or '–'} | "
            f"{_fmt(dev_cosine(sc) if rc else None, 4)} | {_fmt(sc.get('STS-B-cos.spearman'), 4)} |"
        )
    return lines + [""]


def pick(records: list[dict]) -> list[dict]:
    """One record per (kind, name, view): the full-mode one when there is one. Sorted for the tables."""
    best: dict[tuple, dict] = {}
    for r in records:
        key = (r["kind"], r["name"], r["view"])
        if key not in best or (best[key]["mode"] != "full" and r["mode"] == "full"):
            best[key] = r
    return sorted(best.values(), key=lambda r: (KIND_ORDER.get(r["kind"], 9), BASELINE_ORDER.get(r["name"], 0), r["name"], r["view"]))


def _label(r: dict) -> str:
    name = f"**{r['name']}**" if r["kind"] == "bundle" else r["name"]
    tags = [t for t in ("via server" if r["kind"] == "server" else "", "quick mode" if r["mode"] != "full" else "",
                        "raw vectors" if not r.get("normalize", True) else "") if t]  # fmt: skip
    return name + (f" ({', '.join(tags)})" if tags else "")


def _fmt(v: float | None, digits: int) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _table(columns, ours: list[dict]) -> list[str]:
    head = ["model", "view", "dim"] + [c[0] for c in columns] + ["source"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 3 + "---:|" * len(columns) + "---|"]
    for r in ours:
        s = flatten(r)
        if any(c[1] in s for c in columns):
            cells = [_label(r), r["view"], str(r["dim"])] + [_fmt(s.get(c[1]), c[2]) for c in columns] + ["this repo"]
            lines.append("| " + " | ".join(cells) + " |")
    for p in PUBLISHED:
        if any(c[1] in p.scores for c in columns):
            cells = [f"*{p.label}*", "", ""] + [_fmt(p.scores.get(c[1]), c[2]) for c in columns] + [p.cite]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def _macro_table(ours: list[dict]) -> list[str]:
    lines = ["| model | view | macro (8 tasks) | macro (6 tasks) | source |", "|---|---|---:|---:|---|"]
    for r in ours:
        s = flatten(r)
        lines.append(f"| {_label(r)} | {r['view']} | {_fmt(macro(s, MACRO_TASKS), 2)} | {_fmt(macro(s, MACRO6_TASKS), 2)} | this repo |")
    for p in PUBLISHED:
        m8, m6 = macro(p.scores, MACRO_TASKS), macro(p.scores, MACRO6_TASKS)
        if m8 is not None or m6 is not None:
            lines.append(f"| *{p.label}* |  | {_fmt(m8, 2)} | {_fmt(m6, 2)} | computed from {p.cite} |")
    return lines


def _times(records: list[dict]) -> list[str]:
    lines = ["| model | view | mode | sentences | encode (s) | eval (s) | run total (s) | views in run | CPUs | command |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]  # fmt: skip
    for r in sorted(records, key=lambda r: (KIND_ORDER.get(r["kind"], 9), r["name"], r["view"], r["mode"])):
        t = r["timing"]
        lines.append(f"| {_label(r)} | {r['view']} | {r['mode']} | {r['sentences']} | {t['encode_s']:.0f} | {t['eval_s']:.0f} | "
                     f"{t['run_total_s']:.0f} ({t['run_total_s'] / 60:.1f} min) | {t['views_in_run']} | {r['host']['cpus']} | `{r['command']}` |")  # fmt: skip
    return lines


def _protocol(records: list[dict]) -> list[str]:
    seen: dict[str, dict] = {}
    for r in records:
        seen.setdefault(r["mode"], r)
    out = []
    for mode, r in sorted(seen.items()):
        p = r["protocol"]
        out.append(f"- **{mode}**: outer folds {p['folds']}, inner folds {p['inner_folds']} (MR/CR/SUBJ/MPQA; TREC/MRPC use "
                   f"{p['folds']}-fold on train), C grid {p['grid']} walked upwards with warm starts and left after "
                   f"{p.get('grid_patience', 'no')} values worse than the best, relatedness C grid {p['relatedness_grid']}, early-stopping "
                   f"patience {p['patience']}, solver tol {p['tol']}, preconditioner rank {p['rank']}, seed {p['seed']}. "
                   f"Versions: {', '.join(f'{k} {v}' for k, v in r['versions'].items())}.")  # fmt: skip
    return out


def render(records: list[dict], generated_by: str = "thoughtvec eval report", retrieval: Sequence[dict] = ()) -> str:
    ours = pick(records)
    out = ["# Evaluation results", "",
           f"Generated by `{generated_by}` from `docs/results/*.json` — do not edit by hand. "
           "Each number comes with the command that produced it (see *Wall time*).", "",
           "Rows in **bold** are our bundles, then baselines measured by the same harness, then *published* numbers "
           "(italics) with their table. † = quoted by the mean-max AAE paper from Conneau et al. (2017). Published "
           "skip-thought / AAE models are 2400–4800-d and trained for days to weeks on BookCorpus; ours are smaller.", ""]  # fmt: skip
    if not ours:
        out += ["No results yet: run `thoughtvec eval --baseline glove-avg` or `thoughtvec eval --bundle models/<name>`.", ""]
    for title, intro, columns in GROUPS:
        out += [f"## {title}", "", intro, ""] + _table(columns, ours) + [""]
    out += [
        "## Macro average",
        "",
        "Mean accuracy over MR, CR, SUBJ, MPQA, SST-2, TREC, MRPC, SICK-E (8 tasks, the mean-max AAE "
        "paper's *Macro*, Table 3) and over MR, CR, SUBJ, MPQA, TREC, MRPC (6 tasks, its Table 2, which skip-thought reports).",
        "",
    ]
    out += _macro_table(ours) + [""]
    if any(r["kind"] == "bundle" for r in ours):
        out += _dev_section(ours)
    out += retrieval_report.section(list(retrieval))
    out += ["## Wall time", "", "Seconds on this machine (CPU only). *encode*: every distinct sentence of the run once, all views in "
            "one pass; *eval*: classifiers for this view; *run total*: the whole command.", ""] + _times(records) + [""]  # fmt: skip
    plots = [r for r in ours if r.get("plots", {}).get("tsne")]
    if plots:
        out += [
            "## Plots",
            "",
            "t-SNE of sentence vectors coloured by label (1000 sampled sentences each), as skip-thought's Figure 2.",
            "",
        ]
        out += [f"- {r['name']} / {r['view']}: [{r['plots']['tsne']}](results/{r['plots']['tsne']})" for r in plots] + [""]
    heads = [r for r in ours if r.get("head")]
    if heads:
        out += ["## Relatedness heads", ""] + [f"- {r['name']}: view `{r['head']['view']}`, SICK-R dev r {r['head']['dev_pearson']:.4f}, "
                                               f"test r {r['head']['test_pearson']:.4f} → `{r['head']['file']}`" for r in heads] + [""]  # fmt: skip
    out += ["## Protocol", "", "Logistic regression with an L2 penalty (sklearn's C convention) on the vectors as the source gives "
            "them (L2-normalised unless noted); features are centred and scaled by one constant so one C grid suits every "
            "encoder; folds are stratified and shuffled with a fixed seed; ties pick the smaller C. See "
            "`training/evaluation/classifiers.py`.", ""] + _protocol(records) + [""]  # fmt: skip
    out += ["## Papers", ""] + [f"- {k}: {v}" for k, v in CITATIONS.items()] + [""]
    out += ["## Data and licences", "", LICENCES, ""]
    return "\n".join(out)


def write_report(results_dir: str | Path, report: str | Path, combined: str | Path | None = None) -> tuple[Path, int]:
    """Render ``report`` (Markdown) and ``combined`` (all records + published numbers, JSON)."""
    records = load_records(results_dir)
    retrieval = retrieval_report.load(results_dir)
    atomic_write_text(report, render(records, retrieval=retrieval))
    if combined is not None:
        clean = [{k: v for k, v in r.items() if not k.startswith("_")} for r in records]
        doc = {"runs": clean, "published": [{"label": p.label, "source": p.cite, "scores": p.scores} for p in PUBLISHED],
               "retrieval": [{k: v for k, v in r.items() if k != "per_query"} for r in retrieval]}  # fmt: skip
        atomic_write_text(combined, json.dumps(doc, indent=1) + "\n")
    return Path(report), len(records)
