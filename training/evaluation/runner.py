"""One evaluation run: load the tasks' data, encode every distinct sentence once (all requested
views in one pass), run each task per view, and return one result record per view.

A record is plain JSON (see :func:`evaluate`); :mod:`report` turns the saved records into
``docs/RESULTS.md`` without re-encoding anything.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from thoughtvec.service.bundle.atomic import atomic_write_text
from thoughtvec.service.bundle.format import HeadSpec, add_head
from thoughtvec.service.bundle.heads import RelatednessHead, save
from thoughtvec.training.evaluation import datasets
from thoughtvec.training.evaluation.classifiers import Protocol
from thoughtvec.training.evaluation.plots import tsne_panels
from thoughtvec.training.evaluation.sources import Source, encode_views
from thoughtvec.training.evaluation.tasks import Context, EvalTask
from thoughtvec.training.export.modelcard import set_card_section
from thoughtvec.training.train.provenance import git_commit

SCHEMA = "thoughtvec-eval-v1"
Log = Callable[[str], None]


@dataclass
class RunOptions:
    tasks: list[EvalTask]
    protocol: Protocol
    data_root: Path | None  # None: datasets.default_root()
    check_counts: bool = True
    batch_size: int = 256
    plots_dir: Path | None = None  # write t-SNE plots of TREC / SUBJ here (None: no plots)
    keep_head: bool = False  # keep each view's SICK-R model for the relatedness head
    command: str = ""
    threads: int | None = None  # BLAS threads for the classifiers (None: the library's default, all cores)


def load_data(tasks: Sequence[EvalTask], root: Path | None, check_counts: bool = True) -> dict[str, datasets.Task]:
    """Each needed SentEval set once, sizes checked against PROVENANCE.md's counts."""
    out: dict[str, datasets.Task] = {}
    for t in tasks:
        if t.dataset not in out:
            out[t.dataset] = datasets.load_task(t.dataset, root, check_counts=check_counts)
    return out


def distinct_sentences(data: dict[str, datasets.Task]) -> list[str]:
    """Every distinct sentence of the loaded sets, in first-seen order."""
    seen: dict[str, None] = {}
    for task in data.values():
        for s in task.sentences():
            seen.setdefault(s, None)
    return list(seen)


def evaluate(source: Source, views: Sequence[str], opts: RunOptions, log: Log = print) -> list[dict]:
    """Score ``source`` on ``opts.tasks`` for each view; one record per view."""
    t0 = time.perf_counter()
    stamp = {"versions": versions(), "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}  # the code that runs
    data = load_data(opts.tasks, opts.data_root, opts.check_counts)
    texts = distinct_sentences(data)
    t_load = time.perf_counter() - t0
    log(f"{source.name}: {len(texts)} distinct sentences from {len(data)} data sets ({t_load:.1f}s); encoding views {', '.join(views)}")
    t1 = time.perf_counter()
    vectors = encode_views(source, texts, views, batch_size=opts.batch_size, progress=_progress_bar(len(texts), source.name))
    t_encode = time.perf_counter() - t1
    log(f"{source.name}: encoded in {t_encode:.1f}s ({len(texts) / max(t_encode, 1e-9):.0f} sentences/s)")
    index = {s: i for i, s in enumerate(texts)}
    with threadpool_limits(opts.threads):  # None leaves the BLAS default
        records = [_evaluate_view(source, view, vectors[view], index, data, opts, log) for view in views]
    total = round(time.perf_counter() - t0, 2)
    for r in records:
        r["timing"] |= {"load_s": round(t_load, 2), "encode_s": round(t_encode, 2), "views_in_run": len(views), "run_total_s": total}
        r |= {"sentences": len(texts)} | stamp
    return records


def _evaluate_view(source: Source, view: str, vectors: np.ndarray, index: dict[str, int], data: dict, opts: RunOptions,
                   log: Log) -> dict:  # fmt: skip
    """Every task on one view's vectors: the record, less the run-wide fields :func:`evaluate` adds."""
    ctx = Context(index, vectors, opts.protocol, log=lambda m: log(f"  [{source.name}/{view}] {m}"), keep_head=opts.keep_head)
    t0 = time.perf_counter()
    results, task_times = {}, {}
    for task in opts.tasks:
        ts = time.perf_counter()
        results[task.name] = task.run(data[task.dataset], ctx)
        task_times[task.name] = round(time.perf_counter() - ts, 2)
        log(f"  [{source.name}/{view}] {task.name}: {_headline(results[task.name])} ({task_times[task.name]:.1f}s)")
    plots = _plots(source.name, source.kind, view, data, ctx, opts, opts.plots_dir) if opts.plots_dir else {}
    return {
        "schema": SCHEMA, "name": source.name, "kind": source.kind, "view": view, "dim": int(vectors.shape[1]),
        "mode": opts.protocol.mode, "protocol": opts.protocol.as_dict(), "normalize": source.normalize,
        "source": source.describe(), "tasks": results, "plots": plots,
        "timing": {"eval_s": round(time.perf_counter() - t0, 2), "tasks_s": task_times},
        "command": opts.command, "host": {"cpus": os.cpu_count(), "machine": platform.machine()},
        "_head": ctx.head,  # not saved: arrays for the relatedness head
    }  # fmt: skip


def _headline(m: dict) -> str:
    if "acc" in m:
        return (
            f"acc {m['acc']:.2f}"
            + (f" F1 {m['f1']:.2f}" if "f1" in m else "")
            + (f" (C={m['C'][0]:g})" if len(m.get("C", [])) == 1 else "")
        )
    return f"pearson {m['pearson']:.4f} spearman {m['spearman']:.4f}" + (f" mse {m['mse']:.4f}" if "mse" in m else "")


def _progress_bar(total: int, name: str):
    bar = tqdm(total=total, desc=f"encode {name}", unit="sent", mininterval=2.0, file=sys.stderr, leave=False)

    def update(n: int) -> None:
        bar.update(n)
        if bar.n >= total:
            bar.close()

    return update


def _plots(name: str, kind: str, view: str, data: dict, ctx: Context, opts: RunOptions, plots_dir: Path) -> dict:
    """t-SNE of TREC and SUBJ vectors coloured by label (skip-thought Figure 2), if those sets were loaded."""
    panels = []
    for key, split in (("TREC", "train"), ("SUBJ", "all")):
        if key in data:
            s = data[key].single(split)
            panels.append((f"{key} ({split})", ctx.of(s.sentences), np.asarray(s.labels), data[key].classes))
    if not panels:
        return {}
    path = plots_dir / f"{slug(name, view, opts.protocol.mode, kind)}-tsne.png"
    tsne_panels(panels, path, f"{name} / {view}: t-SNE coloured by label", seed=opts.protocol.seed, sample=1000)
    return {"tsne": path.name}


def slug(name: str, view: str, mode: str, kind: str = "bundle") -> str:
    """File stem of a result: ``uni-skip__uni`` (full), ``uni-skip__uni__quick``, ``uni-skip@server__uni``."""
    return f"{name}{'@server' if kind == 'server' else ''}__{view}" + ("" if mode == "full" else f"__{mode}")


def save_record(record: dict, results_dir: Path) -> Path:
    """Write a record as ``<results_dir>/<slug>.json`` (atomically), without its arrays."""
    path = Path(results_dir) / f"{slug(record['name'], record['view'], record['mode'], record['kind'])}.json"
    clean = {k: v for k, v in record.items() if not k.startswith("_")}
    atomic_write_text(path, json.dumps(clean, indent=1, default=_jsonable) + "\n")
    return path


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"cannot write {type(x).__name__} to JSON")


def save_head(bundle_dir: Path, records: Sequence[dict], log: Log = print) -> dict:
    """Save the SICK-R model of the view with the best SICK-R dev Pearson into the bundle as its
    relatedness head (``relatedness.npz`` + ``bundle.json`` ``heads.relatedness``)."""
    have = [r for r in records if r.get("_head")]
    if not have:
        raise ValueError("no SICK-R model to save: include the SICK-R task (--tasks ...,SICK-R)")
    best = max(have, key=lambda r: r["_head"]["dev_pearson"])
    h = best["_head"]
    theta = np.asarray(h["theta"], np.float64)  # (2d, 5) on the design's features
    head = RelatednessHead(W=theta, b=np.asarray(h["bias"], np.float64), normalize=bool(best["normalize"]),
                           mean=np.asarray(h["mean"], np.float64), scale=np.full(theta.shape[0], 1.0 / h["scale"]))  # fmt: skip
    save(Path(bundle_dir) / "relatedness.npz", head)
    add_head(bundle_dir, "relatedness", HeadSpec(file="relatedness.npz", view=best["view"]))
    info = {"file": "relatedness.npz", "view": best["view"], "dev_pearson": h["dev_pearson"],
            "test_pearson": best["tasks"]["SICK-R"]["pearson"]}  # fmt: skip
    best["head"] = info
    _card_note(Path(bundle_dir), info)
    log(f"saved relatedness head for view '{best['view']}' into {bundle_dir} (SICK-R dev r={h['dev_pearson']:.4f})")
    return info


def _card_note(bundle_dir: Path, info: dict) -> None:
    """Record the head in the bundle's model card (replacing an earlier note), with SICK's licence."""
    card = bundle_dir / "MODEL_CARD.md"
    if not card.is_file():
        return
    set_card_section(
        card,
        "## Relatedness head",
        f"`relatedness.npz`, written by `thoughtvec eval --save-head`: Tai et al.'s soft-label regression "
        f"on [|u−v|, u⊙v] of view `{info['view']}`, trained on SICK (train, early stopping on trial): "
        f"dev Pearson r {info['dev_pearson']:.4f}, test r {info['test_pearson']:.4f}. `/v1/similarity` returns its "
        "1–5 score as `relatedness`. SICK is CC BY-NC-SA 3.0, so this head is for non-commercial use.",
    )


def versions() -> dict:
    """Versions that can change a number: Python, the numeric stack, ONNX Runtime, this repo's commit."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for pkg in ("numpy", "scipy", "scikit-learn", "onnxruntime", "sentence-transformers", "transformers", "torch"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    out["thoughtvec_commit"] = git_commit("training/evaluation")
    return out
