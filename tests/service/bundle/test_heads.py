"""The relatedness head: format round trip, scores in [1, 5], Σ p_i·i."""

from __future__ import annotations

import numpy as np
import pytest

from thoughtvec.service.bundle.heads import RelatednessHead, load, save


def test_round_trip_and_range(tmp_path):
    rng = np.random.default_rng(0)
    d, h = 6, 5
    head = RelatednessHead(
        W=rng.standard_normal((h, 5)),
        b=rng.standard_normal(5),
        normalize=True,
        mean=rng.standard_normal(2 * d),
        scale=rng.random(2 * d) + 0.5,
        W_hidden=rng.standard_normal((2 * d, h)),
        b_hidden=rng.standard_normal(h),
    )
    save(tmp_path / "r.npz", head)
    back = load(tmp_path / "r.npz")
    u, v = rng.standard_normal((10, d)), rng.standard_normal((10, d))
    np.testing.assert_allclose(back.predict(u, v), head.predict(u, v), atol=1e-5)  # stored as float32
    s = back.predict(u, v)
    assert s.shape == (10,) and ((s >= 1) & (s <= 5)).all() and back.dim == d and back.normalize


def test_score_is_the_expected_class():
    # logits that put all mass on class 4: the score is 4
    W = np.zeros((4, 5))
    b = np.array([0, 0, 0, 50.0, 0])
    head = RelatednessHead(W=W, b=b)
    assert head.predict(np.ones((1, 2)), np.ones((1, 2)))[0] == pytest.approx(4.0)
    # features are [|u - v|, u * v]
    np.testing.assert_allclose(head.features(np.array([[1.0, 2.0]]), np.array([[3.0, -1.0]])), [[2, 3, 3, -2]])


def test_bad_files_and_shapes(tmp_path):
    with pytest.raises(ValueError, match=r"W must be \(h, 5\)"):
        RelatednessHead(W=np.zeros((4, 3)), b=np.zeros(3))
    np.savez(tmp_path / "x.npz", W=np.zeros((4, 5)))
    with pytest.raises(ValueError, match="not a thoughtvec-relatedness-v1 file"):
        load(tmp_path / "x.npz")
    head = RelatednessHead(W=np.zeros((4, 5)), b=np.zeros(5))
    with pytest.raises(ValueError, match=r"must both be \(n, 2\)"):
        head.predict(np.zeros((1, 3)), np.zeros((1, 3)))
