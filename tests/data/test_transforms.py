import numpy as np
import pytest

from dpbench.data import add_bias_feature, first_classes, pca_project, row_norms, unit_ball_normalise


def _data(dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    Xtr = (rng.random((200, 30)) * rng.random((200, 1)) * 5).astype(dtype)
    Xte = (rng.random((80, 30)) * 7).astype(dtype)  # larger norms than train
    return Xtr, Xte


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_unit_ball_normalise(dtype):
    Xtr, Xte = _data(dtype)
    Ntr, Nte = unit_ball_normalise(Xtr, Xte)
    assert Ntr.dtype == dtype and Nte.dtype == dtype
    assert row_norms(Ntr).max() <= 1.0 and row_norms(Nte).max() <= 1.0
    assert row_norms(Ntr).max() == pytest.approx(1.0, abs=1e-6)
    scale = row_norms(Xtr).max()
    np.testing.assert_allclose(Ntr, Xtr / scale, rtol=1e-5)
    small = row_norms(Xte) <= scale * (1 - 1e-6)
    np.testing.assert_allclose(Nte[small], Xte[small] / scale, rtol=1e-5)  # training scale, not test's own
    assert np.allclose(row_norms(Nte[~small]), 1.0, atol=1e-6)
    assert (~small).any()
    assert Xtr.max() > 1  # inputs untouched


def test_add_bias_feature():
    Ntr, _ = unit_ball_normalise(*_data())
    B = add_bias_feature(Ntr)
    assert B.shape == (200, 31)
    np.testing.assert_allclose(B[:, -1], 1 / np.sqrt(2))
    np.testing.assert_allclose(B[:, :-1], Ntr / np.sqrt(2))
    assert row_norms(B).max() <= 1.0
    with pytest.raises(ValueError, match="unit_ball_normalise"):
        add_bias_feature(np.full((2, 3), 2.0))


def test_first_classes():
    X = np.arange(20).reshape(10, 2)
    y = np.array([0, 1, 2, 3, 0, 1, 2, 3, 4, 5])
    Xc, yc = first_classes(X, y, 3)
    np.testing.assert_array_equal(yc, [0, 1, 2, 0, 1, 2])
    np.testing.assert_array_equal(Xc[:, 0], X[np.isin(y, [0, 1, 2]), 0])
    with pytest.raises(ValueError):
        first_classes(X, y, 0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pca_project_renormalises(dtype):
    Ntr, Nte = unit_ball_normalise(*_data(dtype))
    Ztr, Zte = pca_project(Ntr, Nte, 5)
    assert Ztr.shape == (200, 5) and Zte.shape == (80, 5) and Ztr.dtype == dtype
    assert row_norms(Ztr).max() <= 1.0 and row_norms(Zte).max() <= 1.0
    assert row_norms(Ztr).max() == pytest.approx(1.0, abs=1e-6)
    # matches sklearn's PCA up to sign and the final scaling
    from sklearn.decomposition import PCA

    ref = PCA(5).fit(Ntr.astype(np.float64)).transform(Ntr.astype(np.float64))
    ref /= row_norms(ref).max()
    np.testing.assert_allclose(np.abs(Ztr), np.abs(ref), atol=1e-4)
    Btr = add_bias_feature(Ztr)
    assert row_norms(Btr).max() <= 1.0
    with pytest.raises(ValueError, match="D must lie"):
        pca_project(Ntr, Nte, 31)


def test_pca_without_renormalisation_would_break_the_ball():
    # vdm2020 erratum 12: centring unit-ball data (the authors' PCA) can produce norms near 2
    Xtr = np.array([[1.0, 0.0], [-1.0, 0.0], [1.0, 0.0]])
    Xte = np.array([[-1.0, 0.0]])
    Ztr, Zte = pca_project(Xtr, Xte, 1)
    assert row_norms(Ztr).max() <= 1.0 and row_norms(Zte).max() <= 1.0
