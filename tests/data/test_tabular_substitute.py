import numpy as np
import pytest

from dpbench.data import DATASETS, available_datasets, load_dataset, load_tabular_substitute, unit_sphere_rows
from dpbench.data import tabular_substitute as ts


@pytest.mark.parametrize(
    "name, d, n_train, n_test, pos",
    [("covertype", 54, 498_010, 83_002, 0.488), ("protein", 74, 72_876, 72_875, 0.009)],
)
def test_specs_match_the_real_shapes(name, d, n_train, n_test, pos):
    spec = ts.SPECS[name]
    assert (spec.n_features, spec.n_train, spec.n_test, spec.positive_fraction) == (d, n_train, n_test, pos)
    assert spec.variant == f"substitute:synthetic-{name}"
    assert "synthetic" in spec.description and "SUBSTITUTE" in spec.description
    assert name in available_datasets() and DATASETS[name].substitute_variant == spec.variant


@pytest.mark.parametrize("name, d", [("covertype", 54), ("protein", 74)])
def test_registry_substitute(tmp_path, name, d):
    ds = load_dataset(name, cache_dir=tmp_path, source="substitute", n_train=5000, n_test=3000, seed=1)
    assert ds.is_substitute and ds.variant == f"substitute:synthetic-{name}" and ds.n_classes == 2
    assert ds.X_train.shape == (5000, d) and ds.X_test.shape == (3000, d)
    assert ds.X_train.dtype == np.float32 and ds.y_train.dtype == np.int64
    assert set(np.unique(ds.y_train)) == {-1, 1}
    assert abs(np.mean(ds.y_train == 1) - ts.SPECS[name].positive_fraction) < 0.02
    assert not list(tmp_path.iterdir())  # generated on the fly, nothing cached on disk


def test_determinism_prefix_and_seed():
    a = load_tabular_substitute("covertype", n_train=5000, n_test=100, seed=0)
    b = load_tabular_substitute("covertype", n_train=9000, n_test=50, seed=0)
    np.testing.assert_array_equal(a.X_train, b.X_train[:5000])
    np.testing.assert_array_equal(a.y_train, b.y_train[:5000])
    np.testing.assert_array_equal(a.X_test[:50], b.X_test)
    c = load_tabular_substitute("covertype", n_train=5000, n_test=100, seed=0)
    np.testing.assert_array_equal(a.X_train, c.X_train)
    d = load_tabular_substitute("covertype", n_train=5000, n_test=100, seed=1)
    assert not np.array_equal(a.X_train, d.X_train)
    assert not np.array_equal(a.X_train[:100], a.X_test)  # train and test use different streams
    with pytest.raises(ValueError, match="no tabular substitute"):
        load_tabular_substitute("mnist")


def test_full_size_default_and_speed():
    import time

    t0 = time.perf_counter()
    raw = load_tabular_substitute("protein")
    assert raw.X_train.shape == (72_876, 74) and raw.X_test.shape == (72_875, 74)
    assert time.perf_counter() - t0 < 10.0
    assert 0.006 < np.mean(raw.y_train == 1) < 0.012


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name, lo, hi", [("covertype", 0.73, 0.79), ("protein", 0.993, 1.0)])
def test_logistic_regression_accuracy_is_plausible(name, lo, hi):
    from sklearn.linear_model import LogisticRegression

    raw = load_tabular_substitute(name, n_train=20_000, n_test=10_000)
    Xtr, Xte = unit_sphere_rows(raw.X_train), unit_sphere_rows(raw.X_test)
    acc = LogisticRegression(max_iter=300).fit(Xtr, raw.y_train).score(Xte, raw.y_test)
    assert lo < acc < hi, acc
