"""GNSS (Papernot et al. 2018, App. B-C, Theorem 23): the local-sensitivity bounds at distance d hold against
brute force over every vote vector of small ensembles, the smooth sensitivity is monotone in β, the GNSS cost
matches a direct evaluation, and the sanitised ε is never below the raw one in expectation."""

import itertools
import math

import numpy as np
import pytest

from dpbench.privacy import pate as P
from dpbench.privacy import pate_smooth as S


def _histograms(M, m):
    return np.array([c for c in itertools.product(range(M + 1), repeat=m) if sum(c) == M], dtype=np.float64)


def _true_A(H, beta, D):
    """A⁽ᵈ⁾(x) = max over y within d of x of max over neighbours z of y |β(y) − β(z)|, d = 0..D, every x."""
    dist = np.abs(H[:, None, :] - H[None, :, :]).sum(axis=2) / 2        # teachers to change
    ls = np.max(np.where(dist == 1, np.abs(beta[:, None] - beta[None, :]), 0.0), axis=1)
    return np.stack([np.max(np.where(dist <= d, ls[None, :], 0.0), axis=1) for d in range(D + 1)], axis=1)


@pytest.mark.parametrize("M,m,sigma,order", [(8, 3, 0.7, 2.0), (8, 3, 1.0, 3.0), (8, 2, 0.5, 2.0), (6, 3, 0.6, 4.0),
                                           (6, 4, 0.7, 2.0)])
def test_gnmax_local_sensitivity_bound_holds_by_brute_force(M, m, sigma, order):
    H = _histograms(M, m)
    beta = P.rdp_gaussian(P.logq_gnmax(H, sigma), sigma, [order])[:, 0]
    assert np.ptp(beta) > 0                                      # the data-dependent bound bites somewhere
    true = _true_A(H, beta, M)
    bound = S.ls_gnmax(H, sigma, order, np.arange(M + 1))
    assert np.all(bound >= true - 1e-12)
    assert np.any(bound[:, 0] < order / sigma ** 2)              # and is not the trivial data-independent bound


@pytest.mark.parametrize("M,m,T,sigma1,order", [(8, 3, 6.0, 1.0, 3.0), (8, 2, 5.0, 0.8, 2.0), (7, 3, 9.0, 0.6, 2.0)])
def test_threshold_local_sensitivity_bound_holds_by_brute_force(M, m, T, sigma1, order):
    H = _histograms(M, m)
    beta = P.rdp_threshold(P.log_pr_answered(H.max(axis=1), T, sigma1), sigma1, [order])[:, 0]
    assert np.ptp(beta) > 0
    true = _true_A(H, beta, M)
    bound = S.ls_threshold(H.max(axis=1), T, sigma1, order, np.arange(M + 1))
    assert np.all(bound >= true - 1e-12)
    w = np.arange(len(H), dtype=np.float64)
    assert np.allclose(S.ls_threshold(H.max(axis=1), T, sigma1, order, np.arange(M + 1), weights=w), w @ bound)


def test_threshold_bound_on_vote_differences_by_brute_force():
    """Interactive-GNMax thresholds max_j (n_j − M p_j): real-valued, rounded; the bound still holds."""
    M, m, T, sigma1, order = 8, 3, 1.0, 1.0, 3.0
    H = _histograms(M, m)
    p = np.array([0.37, 0.41, 0.22])
    x = (H - M * p).max(axis=1)
    beta = P.rdp_threshold(P.log_pr_answered(x, T, sigma1), sigma1, [order])[:, 0]
    assert np.ptp(beta) > 0
    true = _true_A(H, beta, M)
    assert np.all(S.ls_threshold(x, T, sigma1, order, np.arange(M + 1)) >= true - 1e-12)


def test_gnmax_weighted_total_and_chunks():
    rng = np.random.default_rng(3)
    v = rng.multinomial(50, [0.7, 0.1, 0.1, 0.05, 0.05], size=40).astype(np.float64)
    d = np.arange(0, 30, 3)
    a = S.ls_gnmax(v, 4.0, 5.0, d)
    w = rng.random(40)
    assert np.allclose(S.ls_gnmax(v, 4.0, 5.0, d, weights=w, chunk_cells=500), w @ a)
    assert np.all(np.diff(a, axis=1) >= -1e-15)                  # non-decreasing in d


def test_smooth_sensitivity_monotone_in_beta_and_grid_is_conservative():
    rng = np.random.default_rng(4)
    a = np.cumsum(rng.random(200))
    betas = np.linspace(0.01, 0.5, 30)
    ss = S.smooth_sensitivity(a, np.arange(200), betas, tail_bound=0.0)
    assert np.all(np.diff(ss) <= 0)
    exact = np.max(np.exp(-betas[:, None] * np.arange(200)) * a, axis=1)
    assert np.allclose(ss, exact)                                # the full grid: the exact discounted max
    coarse = S.smooth_sensitivity(a[::7], np.arange(200)[::7], betas, tail_bound=0.0)
    assert np.all(coarse >= exact - 1e-12)                       # a coarser grid only over-estimates
    assert S.smooth_sensitivity(a, np.arange(200), 0.1, tail_bound=1e9) >= 1e9 * math.exp(-0.1 * 200)


def test_gnss_cost_formula():
    lam, beta, sig = 10.0, 0.04, 3.0
    direct = lam * math.exp(2 * beta) / sig ** 2 + (beta * lam - 0.5 * math.log(1 - 2 * lam * beta)) / (lam - 1)
    assert S.rdp_gnss(beta, sig, lam) == pytest.approx(direct, rel=1e-14)
    with pytest.raises(ValueError):
        S.rdp_gnss(0.05, sig, lam)                               # needs λ < 1/(2β)


def test_sanitised_eps_at_least_raw():
    rng = np.random.default_rng(5)
    d = np.arange(0, 100)
    a = 1e-3 * np.cumsum(rng.random(100))
    g = S.sanitise(0.5, a, d, tail_bound=1.0, order=12.0, delta=1e-5, rng=np.random.default_rng(0))
    conv = -math.log(1e-5) / 11.0
    assert g.eps_raw_at_order == pytest.approx(0.5 + conv)
    assert g.eps_expected > g.eps_raw_at_order and g.eps_quantile > g.eps_expected
    assert 0.3 / 12 <= g.beta < 0.495 / 12 and g.sigma_ss == pytest.approx((12 * math.exp(2 * g.beta) / g.ss) ** (1 / 3))
    z = np.random.default_rng(0).standard_normal()
    assert g.eps_released == pytest.approx(0.5 + g.ss * g.sigma_ss * z + g.cost + conv)


def test_monotonicity_check_at_study_settings():
    for sigma, lam, m in ((40.0, 10.0, 10), (100.0, 20.0, 150), (150 * math.sqrt(2), 30.0, 150), (5.0, 3.0, 20)):
        assert S.check_monotone(sigma, lam, m)


@pytest.mark.parametrize("top_gaps", [1, 8])
def test_q_bracket_contains_every_vote_vector_within_distance(monkeypatch, top_gaps):
    monkeypatch.setattr(S, "TOP_GAPS", top_gaps)
    M, m, sigma = 8, 4, 1.0
    H = _histograms(M, m)
    lq = P.logq_gnmax(H, sigma)
    dist = np.abs(H[:, None, :] - H[None, :, :]).sum(axis=2) / 2
    d = np.arange(M + 1)
    lo, up = S._logq_bounds(H, sigma, d)
    for k in d:
        within = dist <= k
        assert np.all(np.where(within, lq[None, :] <= up[:, k:k + 1] + 1e-12, True))
        assert np.all(np.where(within, lq[None, :] >= lo[:, k:k + 1] - 1e-12, True))
