"""Intervals for membership trials pooled over independently trained models (clusters): the design effect by
hand, the effective-sample-size Clopper–Pearson interval (never narrower than the binomial one, equal to it
without over-dispersion), its coverage on simulated over-dispersed clusters against the naive pooled
Clopper–Pearson."""

import math

import numpy as np
import pytest
from scipy import stats

from dpbench.attacks import metrics as M


def test_design_effect_by_hand():
    # p̂ = 1/2, v_clu = 2/1·(10² + 10²)/200² = 0.01, v_bin = 0.25/200 = 0.00125 → deff = 8
    assert M.design_effect([40, 60], [100, 100]) == pytest.approx(8.0)
    assert M.design_effect([50, 50, 50], [100, 100, 100]) == 1.0          # identical clusters: floor
    assert M.design_effect([0, 0], [10, 10]) == 1.0 and M.design_effect([10, 10], [10, 10]) == 1.0
    assert math.isnan(M.design_effect([3], [10]))                          # one model: not estimable
    with pytest.raises(ValueError):
        M.design_effect([11], [10])


def test_clustered_interval_equals_clopper_pearson_without_dispersion():
    lo, hi, deff = M.clustered_clopper_pearson([50, 50, 50, 50, 50], [100] * 5, 0.05)
    assert deff == 1.0 and (lo, hi) == M.clopper_pearson(250, 500, 0.05)
    assert M.clustered_clopper_pearson([37], [100], 0.05)[:2] == M.clopper_pearson(37, 100, 0.05)   # K = 1
    assert M.rate_interval([40, 60], [100, 100], 0.05, "clopper_pearson")[:2] == M.clopper_pearson(100, 200, 0.05)
    with pytest.raises(ValueError, match="unknown interval method"):
        M.rate_interval([40, 60], [100, 100], 0.05, "bootstrap")
    # binomial clusters with a common rate: the interval always contains the binomial one
    rng = np.random.default_rng(0)
    for K in (2, 3, 5, 20):
        for _ in range(50):
            n = rng.integers(20, 200, size=K)
            k = rng.binomial(n, 0.2)
            lo, hi, deff = M.clustered_clopper_pearson(k, n, 0.05)
            clo, chi = M.clopper_pearson(int(k.sum()), int(n.sum()), 0.05)
            assert deff >= 1.0 and lo <= clo and hi >= chi


def test_clustered_interval_widens_with_disagreement_and_small_k():
    agree = M.clustered_clopper_pearson([50, 50, 50, 50], [100] * 4)
    mild = M.clustered_clopper_pearson([44, 56, 47, 53], [100] * 4)
    strong = M.clustered_clopper_pearson([30, 70, 40, 60], [100] * 4)
    widths = [hi - lo for lo, hi, _ in (agree, mild, strong)]
    assert widths[0] < widths[1] < widths[2] and 1.0 < mild[2] < strong[2]
    # the same estimated design effect from fewer models: the variance estimate has fewer degrees of freedom,
    # so the inflation is larger; it tends to the design effect itself as K grows
    f = [M._variance_inflation(2.0, K, 0.05) for K in (2, 5, 20, 10_000)]
    assert f[0] > f[1] > f[2] > f[3] > 2.0 and f[3] == pytest.approx(2.0, rel=1e-3)
    assert M._variance_inflation(1.0, 5, 0.05) == 1.0 and M._variance_inflation(float("nan"), 1, 0.05) == 1.0


def _coverage(K, n, p, deff_true, studies, alpha, rng):
    rho = (deff_true - 1) / (n - 1)                     # beta-binomial: deff = 1 + (n − 1)ρ, ρ = 1/(a + b + 1)
    if rho > 0:
        ab = 1 / rho - 1
        pj = rng.beta(p * ab, (1 - p) * ab, size=(studies, K))
    else:
        pj = np.full((studies, K), p)
    k = rng.binomial(n, pj)
    nn = np.full(K, n)
    naive = adj = 0
    for row in k:
        lo, hi = M.clopper_pearson(int(row.sum()), K * n, alpha)
        naive += lo <= p <= hi
        lo, hi, _ = M.clustered_clopper_pearson(row, nn, alpha)
        adj += lo <= p <= hi
    return naive / studies, adj / studies


def test_coverage_on_overdispersed_clusters():
    """2000 simulated studies of K = 20 models × 100 trials, per-model success rate ~ Beta with design effect
    1.5 (mean 0.3): the adjusted 95% interval covers close to nominally, the pooled Clopper–Pearson does not."""
    naive, adj = _coverage(K=20, n=100, p=0.3, deff_true=1.5, studies=2000, alpha=0.05,
                           rng=np.random.default_rng(20261123))
    assert adj >= 0.93, (naive, adj)
    assert naive <= 0.925 and adj - naive >= 0.02, (naive, adj)


def test_cluster_mean_interval_is_a_t_interval():
    mean, half, se = M.cluster_mean_interval([0.5, 0.6, 0.7])
    assert mean == pytest.approx(0.6) and se == pytest.approx(0.1 / math.sqrt(3))
    assert half == pytest.approx(stats.t.ppf(0.975, 2) * se)
    assert math.isnan(M.cluster_mean_interval([0.5])[1])


def test_pooled_epsilon_lower_bound_matches_unclustered_without_dispersion():
    out = M.pooled_epsilon_lower_bound([30, 30], [50, 50], [2, 2], [50, 50], 0.0, 0.05)
    assert (out["eps_point"], out["eps_lower"]) == M.epsilon_lower_bound(60, 100, 4, 100, 0.0, 0.05)
    spread = M.pooled_epsilon_lower_bound([20, 40], [50, 50], [0, 4], [50, 50], 0.0, 0.05)
    assert spread["eps_point"] == out["eps_point"] and spread["eps_lower"] < out["eps_lower"]
    assert spread["deff_tpr"] > 1 and spread["deff_fpr"] > 1
