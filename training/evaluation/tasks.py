"""The transfer tasks: one small function per protocol family and one registry, :data:`TASKS`.

A task function gets the loaded data (:class:`datasets.Task`) and a :class:`Context` that looks up
the vectors of any sentence (every distinct sentence was encoded once, before any task runs) and
caches feature designs (SICK-E and SICK-R share theirs). It returns plain numbers: accuracies in
percent, correlations in [-1, 1], and what was chosen (C, early-stopping iteration).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from sklearn.metrics import f1_score

from thoughtvec.training.evaluation.classifiers import (
    Protocol,
    cosine_correlation,
    dev_select,
    kfold_then_test,
    nested_cv,
    pair_features,
    soft_label_regression,
)
from thoughtvec.training.evaluation.datasets import Pairs, Sentences, Task
from thoughtvec.training.evaluation.solver import Design, make_design


@dataclass
class Context:
    """One view's vectors for every sentence of the run, the protocol, and a design cache."""

    index: dict[str, int]  # sentence -> row of ``vectors``
    vectors: np.ndarray  # (n_sentences, dim) float32
    protocol: Protocol
    log: Callable[[str], None] = lambda msg: None
    keep_head: bool = False  # keep SICK-R's chosen model for the relatedness head
    designs: dict[str, Design] = field(default_factory=dict)
    head: dict | None = None

    def of(self, sentences: Sequence[str]) -> np.ndarray:
        return self.vectors[[self.index[s] for s in sentences]]

    def single(self, key: str, splits: Sequence[Sentences]) -> Design:
        """Design over the concatenated splits' sentence vectors."""
        return self._design(key, lambda: np.concatenate([self.of(s.sentences) for s in splits]))

    def pairs(self, key: str, splits: Sequence[Pairs]) -> Design:
        """Design over ``[|u − v|, u ⊙ v]`` of the concatenated splits' pairs."""
        return self._design(key, lambda: np.concatenate([pair_features(self.of(p.first), self.of(p.second)) for p in splits]))

    def _design(self, key: str, features: Callable[[], np.ndarray]) -> Design:
        if key in self.designs:
            return self.designs[key]
        D = make_design(features(), rank=self.protocol.rank, seed=self.protocol.seed, overwrite=True)
        if key in SHARED_DESIGNS:  # only these are reused; the rest would just hold memory
            self.designs[key] = D
        return D


# SICK-E and SICK-R train on the same pairs.
SHARED_DESIGNS = {"SICK"}


def _ranges(*sizes: int) -> list[np.ndarray]:
    """Row ranges of consecutive splits: _ranges(3, 2) -> [0 1 2], [3 4]."""
    ends = np.cumsum(sizes)
    return [np.arange(e - n, e) for n, e in zip(sizes, ends)]


def _labels(*splits) -> np.ndarray:
    return np.concatenate([np.asarray(s.labels) for s in splits])


# -- task families ---------------------------------------------------------------------------
def binary_cv(task: Task, ctx: Context) -> dict:
    """MR, CR, SUBJ, MPQA: nested k-fold cross-validation (skip-thought §3.5)."""
    split = task.single("all")
    D = ctx.single(task.name, [split])
    sel = nested_cv(D, np.asarray(split.labels), ctx.protocol, progress=lambda m: ctx.log(f"{task.name} {m}"))
    return {"acc": 100 * sel.test, "dev_acc": 100 * sel.dev, "C": sel.C, "n": len(split)}


def trec(task: Task, ctx: Context) -> dict:
    """TREC: C by k-fold on train, test accuracy on the 500 test questions."""
    tr, te = task.single("train"), task.single("test")
    D = ctx.single(task.name, [tr, te])
    rows = _ranges(len(tr), len(te))
    sel = kfold_then_test(D, _labels(tr, te), rows[0], rows[1], ctx.protocol)
    return {"acc": 100 * sel.test, "dev_acc": 100 * sel.dev, "C": sel.C, "n_train": len(tr), "n_test": len(te)}


def sst2(task: Task, ctx: Context) -> dict:
    """SST-2: train, choose C on dev, test."""
    tr, dv, te = (task.single(s) for s in ("train", "dev", "test"))
    D = ctx.single(task.name, [tr, dv, te])
    train, dev, test = _ranges(len(tr), len(dv), len(te))
    sel = dev_select(D, _labels(tr, dv, te), train, dev, test, ctx.protocol)
    return {"acc": 100 * sel.test, "dev_acc": 100 * sel.dev, "C": sel.C, "n_train": len(tr), "n_test": len(te)}


def mrpc(task: Task, ctx: Context) -> dict:
    """MRPC: features [|u − v|, u ⊙ v], C by k-fold on train; accuracy and F1 (paraphrase = positive)."""
    tr, te = task.pairs("train"), task.pairs("test")
    D = ctx.pairs(task.name, [tr, te])
    rows = _ranges(len(tr), len(te))
    y = _labels(tr, te)
    sel = kfold_then_test(D, y, rows[0], rows[1], ctx.protocol)
    f1 = f1_score(y[rows[1]], sel.predictions)
    return {"acc": 100 * sel.test, "f1": 100 * float(f1), "dev_acc": 100 * sel.dev, "C": sel.C, "n_test": len(te)}


def sick_entailment(task: Task, ctx: Context) -> dict:
    """SICK-E: pair features, 3 classes, train / dev / test."""
    tr, dv, te = (task.pairs(s) for s in ("train", "dev", "test"))
    D = ctx.pairs("SICK", [tr, dv, te])
    train, dev, test = _ranges(len(tr), len(dv), len(te))
    sel = dev_select(D, _labels(tr, dv, te), train, dev, test, ctx.protocol)
    return {"acc": 100 * sel.test, "dev_acc": 100 * sel.dev, "C": sel.C, "n_test": len(te)}


def relatedness(task: Task, ctx: Context) -> dict:
    """SICK-R / STS-B supervised: Tai et al.'s soft-label regression on pair features,
    early stopping on dev Pearson; Pearson, Spearman and MSE on test."""
    tr, dv, te = (task.pairs(s) for s in ("train", "dev", "test"))
    if task.score_range is None:
        raise ValueError(f"{task.name} has no score range: not a relatedness task")
    key = "SICK" if task.name.startswith("SICK") else task.name
    D = ctx.pairs(key, [tr, dv, te])
    lo, hi = (int(round(x)) for x in task.score_range)
    scores = np.concatenate([np.asarray(s.scores) for s in (tr, dv, te)])
    train, dev, test = _ranges(len(tr), len(dv), len(te))
    sel = soft_label_regression(D, scores, lo, hi, train, dev, test, ctx.protocol)
    if ctx.keep_head and key == "SICK":
        ctx.head = {"theta": sel.extra["theta"], "bias": sel.extra["bias"], "mean": D.mean, "scale": D.scale,
                    "dev_pearson": sel.dev}  # fmt: skip
    keep = ("pearson", "spearman", "mse", "stopped_at")
    return {k: sel.extra[k] for k in keep} | {"dev_pearson": sel.dev, "C": sel.C, "n_test": len(te)}


def cosine(task: Task, ctx: Context) -> dict:
    """SICK-R / STS-B unsupervised: cosine of the two vectors on the test pairs, and on the dev
    pairs (``dev_pearson``, ``dev_spearman``): choices between models and views are made on dev."""
    dv, te = task.pairs("dev"), task.pairs("test")
    dev = cosine_correlation(ctx.of(dv.first), ctx.of(dv.second), np.asarray(dv.scores))
    return (cosine_correlation(ctx.of(te.first), ctx.of(te.second), np.asarray(te.scores))
            | {f"dev_{k}": v for k, v in dev.items()} | {"n_test": len(te), "n_dev": len(dv)})  # fmt: skip


@dataclass(frozen=True)
class EvalTask:
    name: str  # as the papers' column
    dataset: str  # key of datasets.TASKS
    group: str
    run: Callable[[Task, Context], dict]


TASKS: dict[str, EvalTask] = {t.name: t for t in [
    EvalTask("MR", "MR", "classification", binary_cv),
    EvalTask("CR", "CR", "classification", binary_cv),
    EvalTask("SUBJ", "SUBJ", "classification", binary_cv),
    EvalTask("MPQA", "MPQA", "classification", binary_cv),
    EvalTask("SST2", "SST2", "classification", sst2),
    EvalTask("TREC", "TREC", "classification", trec),
    EvalTask("MRPC", "MRPC", "pairs", mrpc),
    EvalTask("SICK-E", "SICKEntailment", "pairs", sick_entailment),
    EvalTask("SICK-R", "SICKRelatedness", "relatedness", relatedness),
    EvalTask("STS-B", "STSBenchmark", "relatedness", relatedness),
    EvalTask("SICK-R-cos", "SICKRelatedness", "similarity", cosine),
    EvalTask("STS-B-cos", "STSBenchmark", "similarity", cosine),
]}  # fmt: skip

# The macro average of the mean-max AAE paper (Table 3): the 8 tasks scored by accuracy.
MACRO_TASKS = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC", "SICK-E")
# The 6 tasks skip-thought reports by accuracy (mean-max AAE Table 2, "6 tasks").
MACRO6_TASKS = ("MR", "CR", "SUBJ", "MPQA", "TREC", "MRPC")


def select(names: str | None) -> list[EvalTask]:
    """``"MR,CR"`` (case-insensitive) or ``None``/``"all"`` → tasks in registry order."""
    if not names or names.lower() == "all":
        return list(TASKS.values())
    by_lower = {k.lower(): k for k in TASKS}
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n.lower() not in by_lower]
    if unknown:
        raise ValueError(f"unknown task(s) {', '.join(unknown)}; known: {', '.join(TASKS)}")
    keep = {by_lower[n.lower()] for n in wanted}
    return [t for name, t in TASKS.items() if name in keep]
