"""Unit tests for dpbench.privacy.mechanisms (anchors: docs/studies/vdm2020.md#derived)."""

import math
import warnings

import numpy as np
import pytest
from dp_accounting import get_sigma_gaussian
from scipy import stats
from scipy.stats import norm

from dpbench.privacy import (
    analytic_gaussian_alpha,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    exponential_mechanism,
    gaussian_mechanism_delta,
    l2_laplace_rows,
    l2_laplace_sum,
    sample_gaussian,
    sample_l2_laplace,
    sample_laplace,
)
from dpbench.privacy.mechanisms import _analytic_gaussian_alpha_array


def sig(x, n):
    return float(f"{x:.{n}g}")


# --- analytic Gaussian (Alg. 2) anchors ----------------------------------------------------------------


@pytest.mark.parametrize(
    "eps, delta, alpha, mult, classic",
    [
        (1.0, 1e-5, 5.27591, 3.73063, 4.84481),
        (0.5, 1e-5, 7.03183, 7.03183, 9.68961),
        (0.1, 1e-5, 13.7516, 30.7496, 48.4481),
        (0.01, 1e-7, None, 362.018, None),
    ],
)
def test_analytic_gaussian_anchors(eps, delta, alpha, mult, classic):
    if alpha is not None:
        assert sig(analytic_gaussian_alpha(eps, delta), 6) == alpha
    assert sig(analytic_gaussian_sigma(eps, delta), 6) == mult
    if classic is not None:
        assert sig(classic_gaussian_sigma(eps, delta, allow_large_epsilon=True), 6) == classic


def _delta0(eps):
    return 0.5 - math.exp(eps) * norm.cdf(-math.sqrt(2 * eps))


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("side", ["below", "above"])
def test_analytic_gaussian_exact_criterion_both_branches(eps, side):
    d0 = _delta0(eps)
    delta = d0 / 10 if side == "below" else d0 + (1 - d0) / 2
    alpha = analytic_gaussian_alpha(eps, delta)
    # lower branch (δ < δ0) has α > 1, upper branch (δ ≥ δ0) α ≤ 1
    assert (alpha > 1) == (side == "below")
    for sens in (1.0, 0.37):
        sigma = analytic_gaussian_sigma(eps, delta, sensitivity=sens)
        assert sigma == pytest.approx(alpha * sens / math.sqrt(2 * eps), rel=1e-15)
        assert gaussian_mechanism_delta(sigma, eps, sensitivity=sens) == pytest.approx(delta, rel=1e-9)
        # slightly less noise violates (ε, δ): σ is the smallest valid std
        assert gaussian_mechanism_delta(sigma * (1 - 1e-6), eps, sensitivity=sens) > delta


@pytest.mark.parametrize("eps, delta", [(1.0, 1e-5), (0.1, 1e-8), (2.5, 0.2), (0.5, 0.3), (50.0, 1e-10), (800.0, 1e-5)])
def test_analytic_gaussian_matches_dp_accounting(eps, delta):
    assert analytic_gaussian_sigma(eps, delta) == pytest.approx(get_sigma_gaussian(eps, delta, tol=1e-14), rel=1e-10)


@pytest.mark.parametrize("eps", [0.05, 0.1, 0.5, 0.9, 0.99])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-8])
def test_analytic_not_worse_than_classic(eps, delta):
    classic = classic_gaussian_sigma(eps, delta)
    assert analytic_gaussian_sigma(eps, delta) <= classic
    # the classic mechanism is valid, i.e. its exact δ is ≤ the nominal δ
    assert gaussian_mechanism_delta(classic, eps) <= delta


def test_vectorised_alpha_equals_scalar():
    rng = np.random.default_rng(0)
    eps = 10 ** rng.uniform(-3, 1, 50)
    delta = 10 ** rng.uniform(-12, -0.05, 50)
    vec = _analytic_gaussian_alpha_array(eps, delta)
    for e, d, a in zip(eps, delta, vec):
        assert a == analytic_gaussian_alpha(float(e), float(d))


def test_classic_gaussian_requires_small_epsilon():
    with pytest.raises(ValueError, match="epsilon must be < 1"):
        classic_gaussian_sigma(1.0, 1e-5)
    assert classic_gaussian_sigma(2.0, 1e-5, sensitivity=3.0, allow_large_epsilon=True) == pytest.approx(
        3.0 * math.sqrt(2 * math.log(1.25e5)) / 2.0
    )


def test_gaussian_delta_stable_for_huge_epsilon_and_tiny_delta():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # e^800 overflows a float; the log-space evaluation still hits δ exactly
        sigma = analytic_gaussian_sigma(800.0, 1e-5)
        assert gaussian_mechanism_delta(sigma, 800.0) == pytest.approx(1e-5, rel=1e-9)
        assert gaussian_mechanism_delta(0.05, 1000.0) == 0.0  # true value ~1e-350 underflows cleanly
        tiny = gaussian_mechanism_delta(20.0, 1.0)
    assert 0 < tiny < 1e-20
    # closed form at ε = 0: total variation 2Φ(Δ/2σ) − 1
    assert gaussian_mechanism_delta(2.0, 0.0) == pytest.approx(2 * norm.cdf(0.25) - 1, rel=1e-12)


# --- samplers ---------------------------------------------------------------------------------------


def test_l2_laplace_shape_and_moments():
    rng = np.random.default_rng(1)
    dim, beta, n = 5, 2.0, 200_000
    b = sample_l2_laplace(rng, beta, dim, size=n)
    assert b.shape == (n, dim)
    r = np.linalg.norm(b, axis=1)
    # E‖b‖ = dim/β, sd(‖b‖) = √dim/β  (Gamma(dim, 1/β) radius)
    assert abs(r.mean() - dim / beta) < 4 * math.sqrt(dim) / beta / math.sqrt(n)
    assert r.var() == pytest.approx(dim / beta**2, rel=0.02)
    # isotropic: E[b bᵀ] = E r²/dim · I = (dim+1)/β² · I
    cov = b.T @ b / n
    assert np.allclose(np.diag(cov), (dim + 1) / beta**2, rtol=0.03)
    assert np.abs(cov - np.diag(np.diag(cov))).max() < 0.03 * (dim + 1) / beta**2
    assert sample_l2_laplace(rng, 1.0, 3).shape == (3,)
    assert sample_l2_laplace(rng, 1.0, 3, size=(4, 2)).shape == (4, 2, 3)


def test_l2_laplace_dim1_is_laplace():
    rng = np.random.default_rng(2)
    x = sample_l2_laplace(rng, 0.5, 1, size=50_000)[:, 0]
    assert stats.kstest(x, stats.laplace(scale=2.0).cdf).pvalue > 1e-3


def test_l2_laplace_reproducible():
    a = sample_l2_laplace(np.random.default_rng(7), 1.0, 4, size=10)
    b = sample_l2_laplace(np.random.default_rng(7), 1.0, 4, size=10)
    assert np.array_equal(a, b)


# Draws of the samplers before they were merged (the copies in learn/psgd_many.py and learn/ldp_sgd.py), frozen:
# the shared samplers must keep every caller's draws bit-identical.
_OLD_L2 = [[0.016784262855950707, 4.076096364802606, -3.740348140480716],
           [-2.4549051944305544, -1.253294296780646, -2.7334612478561704]]
_OLD_MANY = [[0.008392131427975354, 2.038048182401303, -1.870174070240358],
             [-0.3068631493038193, -0.15666178709758075, -0.3416826559820213]]
_OLD_SUM = [[-1.497028875768369, 4.18095516338361, -3.2186059359855093, 0.4759466198688038],
            [19.771810161294912, 0.4447884785972729, 12.142359854705084, 8.7957342410221]]


def test_l2_laplace_samplers_keep_the_draws_of_the_merged_copies():
    assert np.allclose(sample_l2_laplace(np.random.default_rng(7), 0.5, 3, 2), _OLD_L2, rtol=1e-14, atol=0)
    # psgd_many's per-model SCS13 noise: Gamma scales 2/ε per row, divided by the batch size 4 afterwards
    rows = l2_laplace_rows(np.random.default_rng(7), 3, 2.0 / np.array([0.5, 2.0]), 2) / 4
    assert np.allclose(rows, _OLD_MANY, rtol=1e-14, atol=0)
    sums = l2_laplace_sum(np.random.default_rng(7), 4, np.array([[1.0, 2, 3], [4, 5, 6]]))
    assert np.allclose(sums, _OLD_SUM, rtol=1e-12, atol=0)   # float32 directions, float64 accumulation
    # scalar scale 1/β is sample_l2_laplace itself
    assert np.array_equal(l2_laplace_rows(np.random.default_rng(3), 4, 1 / 0.5, (5,)),
                          sample_l2_laplace(np.random.default_rng(3), 0.5, 4, 5))


def test_l2_laplace_sum_moments():
    # each row sums b = 4 independent vectors with radius ~ Gamma(d, s): E‖Σ‖² = Σ_j d(d+1)s_j²
    d, k = 3, 40_000
    s = np.array([[0.5, 1.0, 1.5, 2.0]])
    z = l2_laplace_sum(np.random.default_rng(5), d, np.repeat(s, k, axis=0))
    assert z.shape == (k, d)
    assert np.mean(np.sum(z * z, axis=1)) == pytest.approx(d * (d + 1) * np.sum(s**2), rel=0.03)
    assert abs(z.mean()) < 0.05
    with pytest.raises(ValueError, match="scale"):
        l2_laplace_sum(np.random.default_rng(5), d, np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="scale"):
        l2_laplace_rows(np.random.default_rng(5), d, np.array([1.0, 0.0]), 2)


def test_gaussian_sampler():
    x = sample_gaussian(np.random.default_rng(3), np.array([[1.0], [3.0]]), (2, 50_000))
    assert x.std(axis=1) == pytest.approx([1.0, 3.0], rel=0.02)
    assert np.array_equal(sample_gaussian(np.random.default_rng(4), 2.0, 5),
                          np.random.default_rng(4).standard_normal(5) * 2.0)
    with pytest.raises(ValueError, match="sigma"):
        sample_gaussian(np.random.default_rng(3), -1.0, 3)


def test_laplace_sampler():
    x = sample_laplace(np.random.default_rng(3), 1.5, 100_000)
    assert x.shape == (100_000,)
    assert abs(np.abs(x).mean() - 1.5) < 4 * 1.5 / math.sqrt(100_000)


# --- exponential mechanism -----------------------------------------------------------------------------


def test_exponential_mechanism_distribution():
    rng = np.random.default_rng(4)
    u = np.array([0.0, 1.0, 3.0, 3.0, -2.0])
    beta = 0.7
    n = 200_000
    draws = exponential_mechanism(rng, u, beta, size=n)
    assert draws.shape == (n,)
    p = np.exp(beta * u) / np.exp(beta * u).sum()
    counts = np.bincount(draws, minlength=len(u))
    assert stats.chisquare(counts, n * p).pvalue > 1e-4


def test_exponential_mechanism_vectorised_rows_and_stability():
    rng = np.random.default_rng(5)
    u = np.zeros((3, 4, 6))
    u[..., 2] = 1e6  # huge utilities: a naive softmax would overflow
    u[1, 2, :] = 0.0
    u[1, 2, 5] = -np.inf
    out = exponential_mechanism(rng, u, 1.0, size=(7,))
    assert out.shape == (7, 3, 4)
    mask = np.ones((3, 4), bool)
    mask[1, 2] = False
    assert np.all(out[:, mask] == 2)
    assert np.all(out[:, 1, 2] != 5)
    assert exponential_mechanism(rng, u, 1.0).shape == (3, 4)


def test_exponential_mechanism_beta_zero_and_inf():
    rng = np.random.default_rng(6)
    u = np.array([0.0, 5.0, 5.0, 1.0])
    inf_draws = exponential_mechanism(rng, u, math.inf, size=10_000)
    assert set(np.unique(inf_draws)) == {1, 2}  # argmax, ties broken at random
    zero = np.bincount(exponential_mechanism(rng, u, 0.0, size=40_000), minlength=4)
    assert stats.chisquare(zero).pvalue > 1e-4


# --- per-update noise of noisy mini-batch SGD (SCS13) ----------------------------------------------------


def test_scs13_calibration_splits_the_budget_over_passes():
    from dpbench.privacy.noisy_sgd import scs13_calibration

    c = scs13_calibration([0.5, 2.0], 0.0, passes=4)
    assert c["noise_kind"] == "l2_laplace"
    np.testing.assert_array_equal(c["epsilon_per_pass"], [0.125, 0.5])
    np.testing.assert_array_equal(c["noise_scale"], [16.0, 4.0])           # Gamma scale 2/ε_pass of ‖Z_t‖
    g = scs13_calibration(0.8, 1e-5, passes=2)
    assert g["noise_kind"] == "gaussian" and g["delta_per_pass"] == 5e-6
    assert g["noise_scale"][0] == pytest.approx(2 * math.sqrt(2 * math.log(1.25 / 5e-6)) / 0.4)
    with pytest.raises(ValueError, match="L = 1"):
        scs13_calibration(1.0, 0.0, 1, lipschitz=2.0)


def test_gradient_sum_noise_divisor_orders_agree():
    from dpbench.privacy.noisy_sgd import gradient_sum_noise, gradient_sum_noise_hook

    a = gradient_sum_noise(np.random.default_rng(1), "l2_laplace", [1.0, 4.0], 3, 5)
    b = gradient_sum_noise(np.random.default_rng(1), "l2_laplace", [1.0, 4.0], 3, 5, divide_scale=True)
    np.testing.assert_allclose(a, b, rtol=1e-14)                             # two float orders, same Z / b
    hook = gradient_sum_noise_hook("gaussian", [1.0, 2.0], batch_size=2)
    np.testing.assert_array_equal(hook(np.random.default_rng(2), 2, 3, 7),
                                  np.random.default_rng(2).standard_normal((2, 3)) * (np.array([[1.0], [2.0]]) / 2))
    with pytest.raises(ValueError, match="kind"):
        gradient_sum_noise_hook("laplace", 1.0)
