"""The evaluation's learning parts: soft labels, the batched solver against sklearn, the selection
protocols on separable (≈100 %) and random (≈ chance) features, pair features, cosine STS."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from thoughtvec.training.evaluation.classifiers import (
    QUICK,
    cosine_correlation,
    dev_select,
    expected_score,
    kfold_then_test,
    nested_cv,
    pair_features,
    soft_label_regression,
    soft_labels,
)
from thoughtvec.training.evaluation.solver import fit, make_design

P = dataclasses.replace(QUICK, folds=3, inner_folds=3)


# -- soft labels -------------------------------------------------------------------------------
def test_soft_labels_examples():
    P5 = soft_labels(np.array([1.0, 2.3, 4.5, 5.0]), 1, 5)
    np.testing.assert_allclose(P5, [[1, 0, 0, 0, 0], [0, 0.7, 0.3, 0, 0], [0, 0, 0, 0.5, 0.5], [0, 0, 0, 0, 1]], atol=1e-12)
    np.testing.assert_allclose(P5.sum(axis=1), 1.0)


@pytest.mark.parametrize("lo,hi", [(1, 5), (0, 5)])
def test_soft_labels_inverse(lo, hi):
    y = np.random.default_rng(0).uniform(lo, hi, 500)
    y[:3] = [lo, hi, (lo + hi) / 2]
    np.testing.assert_allclose(expected_score(soft_labels(y, lo, hi), lo), y, atol=1e-12)


def test_soft_labels_range_checked():
    with pytest.raises(ValueError, match=r"\[1, 5\]"):
        soft_labels(np.array([0.5]), 1, 5)


# -- the solver ----------------------------------------------------------------------------------
@pytest.mark.parametrize("n_cls,d,rank", [(2, 30, 256), (4, 40, 256), (2, 300, 32), (3, 200, 16)])
def test_solver_matches_sklearn(n_cls, d, rank):
    rng = np.random.default_rng(n_cls * d)
    X = (rng.standard_normal((400, d)) * rng.uniform(0.1, 3, d) + 1.5).astype(np.float32)
    y = (X @ rng.standard_normal((d, n_cls)) / np.sqrt(d) + rng.gumbel(size=(400, n_cls))).argmax(1)
    D = make_design(X, rank=rank)
    train = np.arange(300)  # the last 100 rows are held out (weight 0)
    W = np.zeros((3, 400))
    W[:, train] = 1
    Cs = [0.05, 1.0, 20.0]
    F = fit(D, np.eye(n_cls)[y], W, Cs, max_iter=500, tol=1e-9)
    assert F.converged.all()
    for j, C in enumerate(Cs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = LogisticRegression(C=C, tol=1e-10, max_iter=10_000).fit(D.X[train], y[train])
        np.testing.assert_allclose(F.proba()[:, j], ref.predict_proba(D.X), atol=3e-3)


def test_design_is_centred_and_scaled():
    X = np.random.default_rng(1).standard_normal((200, 20)).astype(np.float32) * 7 + 3
    D = make_design(X)
    np.testing.assert_allclose(D.X.mean(axis=0), 0, atol=1e-5)
    assert np.mean(np.sum(D.X.astype(np.float64) ** 2, axis=1)) == pytest.approx(1.0, rel=1e-4)
    np.testing.assert_allclose(D.transform(X), D.X, atol=1e-5)


# -- protocols -------------------------------------------------------------------------------------
def _blobs(n: int, d: int, separable: bool, n_cls: int = 2, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_cls
    X = rng.standard_normal((n, d)).astype(np.float32)
    if separable:
        X[:, :n_cls] += 6.0 * np.eye(n_cls)[y]
    return make_design(X), y


def test_nested_cv_separable_and_random():
    D, y = _blobs(300, 10, separable=True)
    good = nested_cv(D, y, P)
    assert good.test > 0.98 and len(good.C) == P.folds
    D, y = _blobs(300, 10, separable=False)
    chance = nested_cv(D, y, P)
    assert abs(chance.test - 0.5) < 0.12


def test_kfold_then_test_and_dev_select_multiclass():
    D, y = _blobs(360, 12, separable=True, n_cls=3)
    train, dev, test = np.arange(240), np.arange(240, 300), np.arange(300, 360)
    assert kfold_then_test(D, y, train, test, P).test > 0.97
    sel = dev_select(D, y, train, dev, test, P)
    assert sel.test > 0.97 and sel.C[0] in P.grid and len(sel.predictions) == len(test)
    D, y = _blobs(360, 12, separable=False, n_cls=3)
    assert abs(dev_select(D, y, train, dev, test, P).test - 1 / 3) < 0.15


def test_soft_label_regression_learns_and_stops_early():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((500, 8)).astype(np.float32)
    scores = np.clip(3 + X[:, 0] + 0.5 * X[:, 1] + 0.1 * rng.standard_normal(500), 1, 5)
    D = make_design(X)
    sel = soft_label_regression(D, scores, 1, 5, np.arange(300), np.arange(300, 400), np.arange(400, 500), P)
    assert sel.extra["pearson"] > 0.9 and sel.dev > 0.9
    assert sel.extra["mse"] < 0.2 and 1 <= sel.extra["stopped_at"] <= P.max_iter
    assert sel.extra["theta"].shape == (8, 5) and sel.extra["bias"].shape == (5,)
    assert np.all((sel.predictions >= 1) & (sel.predictions <= 5))


# -- pair features and cosine ------------------------------------------------------------------------
def test_pair_features():
    u = np.array([[1.0, -2.0, 0.5]])
    v = np.array([[0.0, 1.0, 0.5]])
    np.testing.assert_allclose(pair_features(u, v), [[1.0, 3.0, 0.0, 0.0, -2.0, 0.25]])
    assert pair_features(np.ones((4, 7)), np.ones((4, 7))).shape == (4, 14)


def test_pair_features_are_symmetric():
    rng = np.random.default_rng(0)
    u, v = rng.standard_normal((5, 6)), rng.standard_normal((5, 6))
    np.testing.assert_allclose(pair_features(u, v), pair_features(v, u))


def test_cosine_correlation():
    rng = np.random.default_rng(0)
    u = rng.standard_normal((100, 5))
    noise = rng.uniform(0, 2, 100)
    v = u + noise[:, None] * rng.standard_normal((100, 5))
    gold = -noise  # more noise, less similar
    out = cosine_correlation(u, v, gold)
    assert out["spearman"] > 0.5 and out["pearson"] > 0.4
    flat = np.ones((100, 5))
    assert cosine_correlation(flat, flat + 0.0, gold) == {"pearson": 0.0, "spearman": 0.0}  # constant cosine


def test_warm_start_resumes_at_the_solution():
    D, y = _blobs(300, 20, separable=False)
    W = np.ones((2, 300))
    cold = fit(D, np.eye(2)[y], W, [1.0, 4.0], tol=1e-9, max_iter=300)
    warm = fit(D, np.eye(2)[y], W, [1.0, 4.0], tol=1e-9, max_iter=300, init=(cold.theta, cold.bias))
    assert warm.n_iter.max() <= 3
    np.testing.assert_allclose(warm.logits, cold.logits, atol=1e-3)
