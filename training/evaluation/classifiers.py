"""The evaluation protocols on top of :mod:`solver`: nested cross-validation, k-fold on train then
test, train/dev/test selection, and Tai et al.'s soft-label regression with early stopping.

Each protocol batches all of its (fold, C) problems into one :func:`solver.fit` call per outer
fold. Model selection follows SentEval: the C with the best mean held-out accuracy (the first, i.e.
the most regularised, on ties); fold splits are ``StratifiedKFold(shuffle=True, random_state=seed)``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import pearsonr, spearmanr
from sklearn.model_selection import StratifiedKFold

from thoughtvec.training.evaluation.solver import Design, fit


@dataclass(frozen=True)
class Protocol:
    """Folds, grids and solver settings of one evaluation mode (recorded in every result file)."""

    mode: str
    folds: int  # outer folds for MR/CR/SUBJ/MPQA; k-fold on train for TREC/MRPC
    inner_folds: int  # inner folds of the nested cross-validation
    grid: tuple[float, ...]  # sklearn's C (inverse L2 strength), on the design's scale
    relatedness_grid: tuple[float, ...]
    seed: int = 1111
    tol: float = 1e-4
    max_iter: int = 300
    patience: int = 5  # early stopping: dev checks (solver iterations) without improvement
    grid_patience: int = 2  # stop going up the C grid after this many values worse than the best
    rank: int = 256  # preconditioner rank

    def as_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


# C from 1/16 to 1024 in steps of 4 (SentEval's sklearn grid is 1/4 … 8 in steps of 2, on unscaled vectors):
# on our unit-scale features low-dimensional baselines want large C, paired features of good encoders small C.
FULL = Protocol("full", folds=10, inner_folds=10, grid=tuple(4.0**k for k in range(-2, 6)), relatedness_grid=(1.0, 4.0, 16.0, 64.0, 256.0))
QUICK = Protocol("quick", folds=5, inner_folds=5, grid=(0.25, 4.0, 64.0), relatedness_grid=(4.0, 64.0))
MODES = {"full": FULL, "quick": QUICK}


# -- soft labels (Tai et al. 2015, §4.2; skip-thought §3.2) ------------------------------------
def soft_labels(scores: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Scores in [lo, hi] → distributions over the integers lo..hi, (n, hi − lo + 1).

    p[⌊y⌋] = ⌊y⌋ − y + 1 and p[⌊y⌋ + 1] = y − ⌊y⌋; an integer score puts all its mass on itself.
    """
    y = np.asarray(scores, np.float64)
    if y.size and (y.min() < lo or y.max() > hi):
        raise ValueError(f"scores must lie in [{lo}, {hi}], got [{y.min()}, {y.max()}]")
    n_cls = hi - lo + 1
    fl = np.floor(y).astype(int)
    P = np.zeros((len(y), n_cls + 1))
    rows = np.arange(len(y))
    P[rows, fl - lo] = fl - y + 1.0
    P[rows, fl - lo + 1] += y - fl  # y = hi lands in the spare column with weight 0
    return P[:, :n_cls]


def expected_score(p: np.ndarray, lo: int) -> np.ndarray:
    """Inverse of :func:`soft_labels`: ``rᵀp`` with r = lo..hi. Shape (n,)."""
    return np.asarray(p) @ np.arange(lo, lo + p.shape[-1], dtype=np.float64)


# -- pair features ---------------------------------------------------------------------------
def pair_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``[|u − v|, u ⊙ v]`` (n, 2d), as skip-thought §3.2 and SentEval's MRPC/SICK."""
    return np.concatenate([np.abs(u - v), u * v], axis=1)


# -- protocols -------------------------------------------------------------------------------
@dataclass
class Selection:
    """What a protocol found: test score(s), held-out score of the chosen C, the chosen C(s)."""

    test: float
    dev: float
    C: list[float]
    predictions: np.ndarray | None = None
    extra: dict = field(default_factory=dict)


def _onehot(y: np.ndarray, n_cls: int) -> np.ndarray:
    return np.eye(n_cls)[np.asarray(y)]


def _predict(F, j: int, rows: np.ndarray) -> np.ndarray:
    """Class predictions of problem ``j`` on ``rows`` (a one-logit fit is binary)."""
    z = F.logits[rows, j]
    return z.argmax(-1) if z.shape[-1] > 1 else (z[:, 0] > 0).astype(int)


def _accuracy(F, j: int, rows: np.ndarray, y: np.ndarray) -> float:
    return float((_predict(F, j, rows) == y[rows]).mean())


def _path(D: Design, y: np.ndarray, W: np.ndarray, held: list[np.ndarray], P: Protocol, n_cls: int):
    """Up the C grid (ascending), each C warm-started from the last: mean held-out accuracy of the
    k problems (rows of W, scored on ``held``). Stops once ``P.grid_patience`` values in a row are
    worse than the best so far: the large-C fits are the slow ones, and a falling curve rarely rises.

    Returns the accuracies per C tried and the fit at the best C.
    """
    T = _onehot(y, n_cls)
    accs, best_fit, init = [], None, None
    for C in P.grid:
        F = fit(D, T, W, [C] * len(W), max_iter=P.max_iter, tol=P.tol, init=init)
        init = (F.theta, F.bias)
        accs.append(float(np.mean([_accuracy(F, j, te, y) for j, te in enumerate(held)])))
        if int(np.argmax(accs)) == len(accs) - 1:
            best_fit = F
        elif len(accs) - 1 - int(np.argmax(accs)) >= P.grid_patience:
            break
    return accs, best_fit


def _cv_select(D: Design, y: np.ndarray, rows: np.ndarray, P: Protocol, k: int, n_cls: int) -> tuple[float, float]:
    """k-fold cross-validation over P.grid on ``rows``: the best C and its mean held-out accuracy."""
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=P.seed)
    folds = list(skf.split(rows, y[rows]))
    W = np.zeros((k, D.n))
    for j, (tr, _) in enumerate(folds):
        W[j, rows[tr]] = 1.0
    accs, _ = _path(D, y, W, [rows[te] for _, te in folds], P, n_cls)
    best = int(np.argmax(accs))  # first maximum: the smallest C among ties
    return P.grid[best], accs[best]


def _final(D: Design, y: np.ndarray, train_sets: list[np.ndarray], Cs: list[float], P: Protocol, n_cls: int):
    W = np.zeros((len(train_sets), D.n))
    for j, rows in enumerate(train_sets):
        W[j, rows] = 1.0
    return fit(D, _onehot(y, n_cls), W, Cs, max_iter=P.max_iter, tol=P.tol)


def nested_cv(D: Design, y: np.ndarray, P: Protocol, progress=None) -> Selection:
    """MR/CR/SUBJ/MPQA: outer k-fold for the test accuracy, inner k-fold on each outer train set for C."""
    y = np.asarray(y)
    n_cls = int(y.max()) + 1
    outer = list(StratifiedKFold(n_splits=P.folds, shuffle=True, random_state=P.seed).split(np.zeros(len(y)), y))
    chosen: list[float] = []
    devs: list[float] = []
    for i, (tr, _) in enumerate(outer):
        C, dev = _cv_select(D, y, tr, P, P.inner_folds, n_cls)
        chosen.append(C)
        devs.append(dev)
        if progress:
            progress(f"fold {i + 1}/{len(outer)}: C={C:g} inner acc {100 * dev:.2f}")
    F = _final(D, y, [tr for tr, _ in outer], chosen, P, n_cls)
    tests = [_accuracy(F, j, te, y) for j, (_, te) in enumerate(outer)]
    return Selection(float(np.mean(tests)), float(np.mean(devs)), chosen, extra={"fold_test": tests})


def kfold_then_test(D: Design, y: np.ndarray, train: np.ndarray, test: np.ndarray, P: Protocol) -> Selection:
    """TREC/MRPC: choose C by k-fold cross-validation on train, refit on all of train, score test."""
    y = np.asarray(y)
    n_cls = int(y.max()) + 1
    C, dev = _cv_select(D, y, train, P, P.folds, n_cls)
    F = _final(D, y, [train], [C], P, n_cls)
    return Selection(_accuracy(F, 0, test, y), dev, [C], predictions=_predict(F, 0, test))


def dev_select(D: Design, y: np.ndarray, train: np.ndarray, dev: np.ndarray, test: np.ndarray, P: Protocol) -> Selection:
    """SST-2/SICK-E: one model per C trained on train; the best on dev is scored on test."""
    y = np.asarray(y)
    W = np.zeros((1, D.n))
    W[0, train] = 1.0
    accs, F = _path(D, y, W, [dev], P, int(y.max()) + 1)
    best = int(np.argmax(accs))
    return Selection(_accuracy(F, 0, test, y), accs[best], [P.grid[best]], predictions=_predict(F, 0, test))


@dataclass
class _BestSoFar:
    """Per C of the relatedness grid: the best dev Pearson so far, the checks since it, and the model and
    test predictions at it (``None`` until the first check)."""

    r: np.ndarray  # (k,) float
    since: np.ndarray  # (k,) int
    iter: np.ndarray  # (k,) int: solver iteration of the best
    theta: list[np.ndarray | None]  # (d, c) each
    bias: list[np.ndarray | None]  # (c,) each
    test: list[np.ndarray | None]  # (n_test,) expected scores each

    @classmethod
    def empty(cls, k: int) -> _BestSoFar:
        return cls(np.full(k, -np.inf), np.zeros(k, int), np.zeros(k, int), [None] * k, [None] * k, [None] * k)


def soft_label_regression(D: Design, scores: np.ndarray, lo: int, hi: int, train: np.ndarray, dev: np.ndarray,
                          test: np.ndarray, P: Protocol) -> Selection:  # fmt: skip
    """SICK-R/STS-B: softmax regression on soft labels over lo..hi, one model per C, each stopped
    early at its best dev Pearson (patience ``P.patience``); the best on dev is scored on test.

    ``extra["theta"], extra["bias"]`` hold the chosen model (design space) for the relatedness head.
    """
    scores = np.asarray(scores, np.float64)
    T = soft_labels(np.clip(scores, lo, hi), lo, hi)
    k = len(P.relatedness_grid)
    best = _BestSoFar.empty(k)

    def monitor(it, idx, theta, bias, Z):
        p = _softmax(Z)
        stop = np.zeros(len(idx), bool)
        for a, j in enumerate(idx):
            r = _pearson(expected_score(p[dev, a], lo), scores[dev])
            if r > best.r[j]:
                best.r[j], best.since[j], best.iter[j] = r, 0, it
                best.theta[j], best.bias[j] = theta[a].copy(), bias[a].copy()
                best.test[j] = expected_score(p[test, a], lo)
            else:
                best.since[j] += 1
                stop[a] = best.since[j] >= P.patience
        return stop

    W = np.zeros((k, D.n))
    W[:, train] = 1.0
    fit(D, T, W, list(P.relatedness_grid), max_iter=P.max_iter, tol=P.tol * 0.01, monitor=monitor)
    j = int(np.argmax(best.r))
    yhat = best.test[j]
    if yhat is None:
        raise RuntimeError(f"the solver never checked C={P.relatedness_grid[j]:g} on dev (max_iter {P.max_iter})")
    gold = scores[test]
    metrics = {"pearson": _pearson(yhat, gold), "spearman": _spearman(yhat, gold),
               "mse": float(np.mean((yhat - gold) ** 2)), "stopped_at": int(best.iter[j])}  # fmt: skip
    return Selection(metrics["pearson"], float(best.r[j]), [P.relatedness_grid[j]], predictions=yhat,
                     extra=metrics | {"theta": best.theta[j], "bias": best.bias[j]})  # fmt: skip


def _softmax(Z: np.ndarray) -> np.ndarray:
    Z = Z - Z.max(axis=-1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=-1, keepdims=True)


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    return _finite(pearsonr, a, b)


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    return _finite(spearmanr, a, b)


def _finite(corr, a: np.ndarray, b: np.ndarray) -> float:
    """A correlation, 0 where it is undefined (a constant input), as SentEval maps NaN to 0."""
    if np.ptp(a) <= 1e-12 * max(1.0, float(np.abs(a).max(initial=0.0))) or np.ptp(b) == 0:
        return 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # near-constant inputs warn; the value is still defined
        r = float(corr(a, b)[0])
    return r if np.isfinite(r) else 0.0


def cosine_correlation(u: np.ndarray, v: np.ndarray, gold: np.ndarray) -> dict:
    """Unsupervised STS: Pearson and Spearman of cos(u, v) against the gold scores."""
    nu = np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1)
    cos = np.einsum("nd,nd->n", u, v) / np.maximum(nu, 1e-12)
    return {"pearson": _pearson(cos, gold), "spearman": _spearman(cos, gold)}
