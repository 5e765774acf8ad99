import numpy as np

from thoughtvec.service.bundle import postprocess as pp


def test_fit_finds_the_top_principal_directions():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((500, 20)) * np.arange(1, 21) + 3.0  # axis 19 varies most, then 18, ...
    m = pp.fit(x, center=True, k=3)
    vt = np.linalg.svd(x - x.mean(0), full_matrices=False)[2][:3]
    np.testing.assert_allclose(np.abs(m.components @ vt.T), np.eye(3), atol=1e-6)
    np.testing.assert_allclose(m.mean, x.mean(0), atol=1e-5)
    y = m.apply(x.astype(np.float32))
    assert y.dtype == np.float32 and np.abs(y @ m.components.T).max() < 1e-3
    assert np.abs(y.mean(0)).max() < 1e-3  # centred
    # uncentred (Arora et al.): the first direction is the mean's
    far = x + 100.0  # a shared offset larger than any spread
    u = pp.fit(far, center=False, k=1)
    assert not u.mean.any() and abs(float(u.components[0] @ (far.mean(0) / np.linalg.norm(far.mean(0))))) > 0.99


def test_a_row_does_not_depend_on_the_others():
    m = pp.fit(np.random.default_rng(1).standard_normal((100, 8)), center=True, k=2)
    x = np.random.default_rng(2).standard_normal((5, 8)).astype(np.float32)
    np.testing.assert_allclose(m.apply(x)[:1], m.apply(x[:1]), atol=1e-7)


def test_save_then_load_round_trips(tmp_path):
    m = pp.fit(np.random.default_rng(1).standard_normal((50, 6)), center=True, k=2)
    pp.save(tmp_path / "p.npz", {"v": m})
    back = pp.load(tmp_path / "p.npz", "v", 6, 2, "b", "views.v.postprocess")
    np.testing.assert_array_equal(back.mean, m.mean)
    np.testing.assert_array_equal(back.components, m.components)


def test_axes_are_the_principal_directions_of_the_unit_vectors_and_survive_storage(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((400, 12)) * np.r_[10.0, 5.0, np.ones(10)]  # axis 0 carries most, then axis 1
    axes = pp.fit_axes(x, 5)
    assert axes.shape == (5, 12) and axes.dtype == np.float32
    np.testing.assert_allclose(axes @ axes.T, np.eye(5), atol=1e-5)
    assert abs(axes[0, 0]) > 0.95 and abs(axes[1, 1]) > 0.9
    assert (axes[np.arange(5), np.abs(axes).argmax(1)] > 0).all()  # one sign per axis: refits agree
    np.testing.assert_array_equal(pp.fit_axes(x, 5), axes)
    pp.save(tmp_path / "p.npz", {}, {"v": axes})
    back = pp.load_axes(tmp_path / "p.npz", "v", 12, 5, "b", "views.v.axes")
    np.testing.assert_allclose(back.axes, axes, atol=1e-3)  # float16 on disk
    np.testing.assert_allclose(back.project(x[:3].astype(np.float32), 2), x[:3] @ back.axes[:2].T, rtol=1e-5)
