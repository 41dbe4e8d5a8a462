import numpy as np
import pytest

from dpbench.data import gaussian_projection_matrix, gaussian_random_projection, row_norms, unit_sphere_rows


def _data(seed=0, n=300, D=784):
    rng = np.random.default_rng(seed)
    return rng.random((n, D)).astype(np.float32), rng.random((n // 3, D)).astype(np.float32)


def test_shapes_and_dtypes():
    Xtr, Xte = _data()
    Ztr, Zte = gaussian_random_projection(Xtr, Xte, 50, seed=0)
    assert Ztr.shape == (300, 50) and Zte.shape == (100, 50) and Ztr.dtype == np.float32
    Z64, _ = gaussian_random_projection(Xtr.astype(np.float64), Xte, 50, seed=0)
    assert Z64.dtype == np.float64
    Zi, _ = gaussian_random_projection(np.ones((2, 784), dtype=np.uint8), Xte, 50, seed=0)
    assert Zi.dtype == np.float64
    with pytest.raises(ValueError, match="equal width"):
        gaussian_random_projection(Xtr, Xte[:, :10], 50, seed=0)
    with pytest.raises(ValueError, match="positive"):
        gaussian_projection_matrix(784, 0, seed=0)


def test_data_independent_and_deterministic():
    Xtr, Xte = _data(0)
    R = gaussian_projection_matrix(784, 50, seed=7)
    assert R.shape == (784, 50)
    Ztr, Zte = gaussian_random_projection(Xtr, Xte, 50, seed=7)
    np.testing.assert_allclose(Ztr, Xtr.astype(np.float64) @ R, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(Zte, Xte.astype(np.float64) @ R, rtol=1e-5, atol=1e-5)
    # other data, same matrix: identity rows recover R itself
    E = np.eye(784)
    Zr, _ = gaussian_random_projection(E, E[:3], 50, seed=7)
    np.testing.assert_array_equal(Zr, R)
    np.testing.assert_array_equal(gaussian_projection_matrix(784, 50, seed=7), R)
    assert not np.allclose(gaussian_projection_matrix(784, 50, seed=8), R)
    # entries are N(0, 1/dim)
    assert abs(R.mean()) < 0.01 and R.var() == pytest.approx(1 / 50, rel=0.05)


def test_norms_preserved_on_average():
    # Johnson-Lindenstrauss sanity check: E||R^T x||^2 = ||x||^2, relative spread ~ sqrt(2/dim)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 784))
    Z, _ = gaussian_random_projection(X, X[:1], 50, seed=3)
    ratio = row_norms(Z) ** 2 / row_norms(X) ** 2
    assert ratio.mean() == pytest.approx(1.0, abs=0.05)
    assert 0.12 < ratio.std() < 0.28  # sqrt(2/50) = 0.2
    # averaged over independent matrices the ratio for one vector is unbiased
    x = X[:1]
    r = [row_norms(gaussian_random_projection(x, x, 50, seed=s)[0])[0] ** 2 for s in range(200)]
    assert np.mean(r) / row_norms(x)[0] ** 2 == pytest.approx(1.0, abs=0.05)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unit_sphere_rows(dtype):
    rng = np.random.default_rng(2)
    X = (rng.normal(size=(500, 50)) * rng.exponential(size=(500, 1)) * 100).astype(dtype)
    X[7] = 0.0
    U = unit_sphere_rows(X)
    assert U.dtype == dtype and U.shape == X.shape
    n = row_norms(U)
    nz = np.arange(500) != 7
    assert n.max() <= 1.0
    np.testing.assert_allclose(n[nz], 1.0, atol=4 * np.finfo(dtype).eps * 4)
    np.testing.assert_array_equal(U[7], 0.0)  # zero rows stay zero
    np.testing.assert_allclose(U[nz] * row_norms(X)[nz, None], X[nz], rtol=1e-5, atol=1e-3)  # same direction
    assert X[7].sum() == 0 and row_norms(X).max() > 1  # input untouched
    Ui = unit_sphere_rows(np.array([[3, 4], [0, 0]]))
    np.testing.assert_allclose(Ui, [[0.6, 0.8], [0.0, 0.0]])


def test_mnist_pipeline_on_substitute(tmp_path):
    from dpbench.data import load_dataset

    ds = load_dataset("mnist", cache_dir=tmp_path, source="substitute", n_train=60, n_test=20)
    Ztr, Zte = gaussian_random_projection(ds.X_train, ds.X_test, 50, seed=0)
    Utr, Ute = unit_sphere_rows(Ztr), unit_sphere_rows(Zte)
    assert Utr.shape == (60, 50) and Ute.shape == (20, 50)
    np.testing.assert_allclose(row_norms(Utr), 1.0, atol=1e-6)
    assert row_norms(Ute).max() <= 1.0
