"""Privacy of the chapter 3/4 pipeline end to end (song2018 ch. 3, update (3.6); ch. 4, oracle (4.5)): from raw
neighbouring data sets (one raw row replaced by a worst-case row) through the study's own preprocessing
(``_prepare``) to the quantity the noise is calibrated for.

Update (3.6) adds noise calibrated to a batch-gradient sum of sensitivity 2 (replace-one neighbours, ‖∇ℓ‖ ≤ ‖x‖ ≤ 1)
and the pass is ε-DP by parallel composition: only the batch holding the replaced row may change, by at most 2.
So over a pass, Σ_t ‖b·(G_t(D) − G_t(D′))‖ ≤ 2 must hold at any common iterate. The gradients are the study's
training engine's (:func:`dpbench.methods.ldp_sgd.sgd_runs`, one noiseless step from w = 0 per batch).
The data-independent default keeps it; the source's per-feature min-max on the training rows does not."""

import copy

import numpy as np
import pytest

from dpbench.config import DEFAULT_CONFIG_PATH, ConfigError
from dpbench.studies import load_config
from dpbench.data import kddcup99 as kdd
from dpbench.data.registry import Dataset
from dpbench.methods import ldp_sgd as L
from dpbench.studies import song2018
from dpbench.studies.song2018 import ch34_data as ch34

CLAIMED = 2.0          # sensitivity of the batch-gradient sum of update (3.6)


def _raw_kdd(n: int, n_onehot: int, seed: int) -> np.ndarray:
    """Rows inside the KDD'99 feature domain: small byte counts and durations, rates, window counts, one-hot."""
    rng = np.random.default_rng(seed)
    k = len(kdd.NUMERIC_DOMAIN)
    hi = np.array([h for _, h, _ in kdd.NUMERIC_DOMAIN])
    X = np.zeros((n, k + n_onehot))
    X[:, :k] = rng.uniform(0, 1, (n, k)) * np.minimum(hi, 1000.0)
    X[np.arange(n), k + rng.integers(0, n_onehot, n)] = 1.0
    return X


def _raw_covertype(n: int, seed: int) -> np.ndarray:
    from dpbench.data import covertype as cov

    rng = np.random.default_rng(seed)
    lo, hi = cov.domain_bounds()
    X = lo + rng.uniform(0.3, 0.6, (n, 54)) * (hi - lo)
    X[:, 10:] = rng.random((n, 44)) < 0.1
    return X


def _prepared(monkeypatch, config, key, Xraw, y):
    name = key.split("_", 1)[1]
    ds = Dataset(name=name, variant=name, is_substitute=False, X_train=Xraw, y_train=y, X_test=Xraw[:1],
                 y_test=y[:1], n_classes=2, description="generated")
    monkeypatch.setattr(ch34, "load_dataset", lambda *a, **k: ds)
    return ch34._prepare(config, key)["X"]


def _config(variant: str, n: int):
    cfg = load_config(DEFAULT_CONFIG_PATH)
    s = cfg["studies"]["song2018"]
    s["preprocessing"]["variant"] = variant
    s["ch3"]["datasets"]["kddcup99"]["n"] = n
    s["ch4"]["datasets"]["covertype"]["n"] = n
    return cfg


def _pass_gradient_difference(X, Xp, y, b):
    """Σ over the batches of one pass of ‖Σ_{i∈B} ∇ℓ(0; x_i) − ∇ℓ(0; x′_i)‖, via one noiseless step of the study's
    engine per batch (w₀ = 0, η = 1, λ = 0: w₁ = −G)."""
    n = X.shape[0]
    total = 0.0
    for t in range(n // b):
        seq = np.arange(t * b, (t + 1) * b)[None, :]
        W = L.sgd_runs(X, y, seq, b, [[1.0]], np.random.default_rng(0), l2=0.0, radius=None)["W"]
        Wp = L.sgd_runs(Xp, y, seq, b, [[1.0]], np.random.default_rng(0), l2=0.0, radius=None)["W"]
        total += b * float(np.linalg.norm(W - Wp))
    return total


@pytest.mark.parametrize("key,make", [
    ("ch3_kddcup99", lambda n: _raw_kdd(n, 6, 1)),
    ("ch4_covertype", lambda n: _raw_covertype(n, 2)),
])
def test_whole_pipeline_neighbours_within_the_claimed_sensitivity(monkeypatch, key, make):
    n, b = 200, 10
    X = make(n)
    y = np.where(np.arange(n) % 3 == 0, 1.0, -1.0)
    Xp = X.copy()
    Xp[7] = X[7]
    if key == "ch3_kddcup99":                  # a worst-case connection: every numeric field at its domain cap
        Xp[7, :len(kdd.NUMERIC_DOMAIN)] = [h for _, h, _ in kdd.NUMERIC_DOMAIN]
    else:                                      # an outlier cell: extreme elevation, distances, hillshade
        from dpbench.data import covertype as cov
        lo, hi = cov.domain_bounds()
        Xp[7, :10] = np.where(np.arange(10) % 2 == 0, hi[:10], lo[:10])
    measured = {}
    for variant in ("data_independent", "source"):
        cfg = _config(variant, n)
        Z, Zp = _prepared(monkeypatch, cfg, key, X, y), _prepared(monkeypatch, cfg, key, Xp, y)
        assert np.linalg.norm(Z, axis=1).max() <= 1.0 and np.linalg.norm(Zp, axis=1).max() <= 1.0
        changed = np.flatnonzero(np.any(Z != Zp, axis=1))
        measured[variant] = (_pass_gradient_difference(Z, Zp, y, b), changed)
    diff, changed = measured["data_independent"]
    assert changed.tolist() == [7]             # one raw row replaced -> one prepared row changed
    assert diff <= CLAIMED + 1e-12
    diff_src, changed_src = measured["source"]
    assert changed_src.size == n               # the training min/max moved every row
    assert diff_src > CLAIMED                  # the old behaviour breaks the per-pass sensitivity
    # chapter 4 (ε-LDP oracle 4.5): each individual's report may depend on its own row only
    w = np.full(Z.shape[1], 0.3)
    cfg = _config("data_independent", n)
    Z, Zp = _prepared(monkeypatch, cfg, key, X, y), _prepared(monkeypatch, cfg, key, Xp, y)
    r = L.gdp_reports(w, Z, y, 1.0, 0.0, np.random.default_rng(5))
    rp = L.gdp_reports(w, Zp, y, 1.0, 0.0, np.random.default_rng(5))
    moved = np.linalg.norm(r - rp, axis=1)
    assert np.flatnonzero(moved > 0).tolist() == [7] and moved[7] <= CLAIMED


def test_mnist_domain_is_the_pixel_range_and_substitutes_scale_rows():
    kind, (lo, hi) = ch34.feature_domain("mnist", True, 784)
    assert kind == "domain" and lo.max() == 0.0 and hi.min() == 1.0
    assert ch34.feature_domain("covertype", True, 54) == ("row", None)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 54)) * 30
    Z = ch34.preprocess(X, "row", None, seed=1)
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 1.0, rtol=1e-12)


def test_rows_and_caption_carry_the_preprocessing():
    cfg = load_config(DEFAULT_CONFIG_PATH)
    txt, dep = ch34.preprocessing_label(cfg, "kddcup99", False)
    assert not dep and "fixed domain bounds" in txt and "projection" in txt
    src = copy.deepcopy(cfg)
    src["studies"]["song2018"]["preprocessing"]["variant"] = "source"
    txt, dep = ch34.preprocessing_label(src, "covertype", False)
    assert dep and txt.startswith("non-private preprocessing, as in the source")
    assert "the ε does not cover it" in " ".join(song2018.deviations(src["studies"]["song2018"], "fig4_1"))
    assert "NON-PRIVATE" not in " ".join(song2018.deviations(cfg["studies"]["song2018"], "fig4_1"))


def test_standardise_needs_the_source_variant():
    with pytest.raises(ConfigError, match="preprocessing.feature_normalisation"):
        load_config(DEFAULT_CONFIG_PATH, overrides={"studies": {"song2018": {"preprocessing": {
            "feature_normalisation": "standardise"}}}})
    load_config(DEFAULT_CONFIG_PATH, overrides={"studies": {"song2018": {"preprocessing": {
        "feature_normalisation": "standardise", "variant": "source"}}}})
