"""The audit's likelihood-ratio statistics against closed forms, and the soundness / power of the split-half
Clopper–Pearson ε lower bound on 1-D mechanisms whose exact ε is known."""

import math

import numpy as np
import pytest
from scipy import stats

from dpbench.audit import stats as S


def test_llr_statistics_match_closed_form_log_density_ratios():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(50, 1)) * 3
    f, fp, b, sigma = np.array([0.7]), np.array([-0.4]), 1.3, 0.8
    lap = stats.laplace.logpdf(z[:, 0], f[0], b) - stats.laplace.logpdf(z[:, 0], fp[0], b)
    np.testing.assert_allclose(S.laplace_llr(z, f, fp, b), lap, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(S.l2_laplace_llr(z, f, fp, 1 / b), lap, rtol=1e-12, atol=1e-12)  # 1-D: Laplace
    gau = stats.norm.logpdf(z[:, 0], f[0], sigma) - stats.norm.logpdf(z[:, 0], fp[0], sigma)
    np.testing.assert_allclose(S.gaussian_llr(z, f, fp, sigma), gau, rtol=1e-10, atol=1e-10)
    # d dimensions: the Gaussian LLR is the multivariate log-density ratio
    z3, f3, fp3 = rng.normal(size=(20, 3)), rng.normal(size=3), rng.normal(size=3)
    mv = (stats.multivariate_normal.logpdf(z3, f3, sigma**2) - stats.multivariate_normal.logpdf(z3, fp3, sigma**2))
    np.testing.assert_allclose(S.gaussian_llr(z3, f3, fp3, sigma), mv, rtol=1e-10, atol=1e-10)


def test_gaussian_epsilon_inverts_the_balle_wang_delta():
    for mu in (0.3, 1.0, 2.5):
        e = S.gaussian_epsilon(mu, 1e-5)
        assert math.isclose(S.gaussian_delta(e, mu), 1e-5, rel_tol=1e-6)


def _laplace_bound(eps, trials, seed, factor=1.0):
    rng = np.random.default_rng(seed)
    f, fp, b = np.array([0.1]), np.array([0.1 - eps]), 1.0      # shift eps, scale 1: exactly eps-DP
    zd = f + factor * rng.laplace(0, b, size=(trials, 1))
    zp = fp + factor * rng.laplace(0, b, size=(trials, 1))
    return S.epsilon_lower_bound_split(S.laplace_llr(zd, f, fp, b), S.laplace_llr(zp, f, fp, b), 0.0, rng)["eps_lower"]


def _gauss_bound(mu, delta, trials, seed):
    rng = np.random.default_rng(seed)
    f, fp = np.array([mu]), np.array([0.0])
    zd = f + rng.standard_normal((trials, 1))
    zp = fp + rng.standard_normal((trials, 1))
    return S.epsilon_lower_bound_split(S.gaussian_llr(zd, f, fp, 1.0), S.gaussian_llr(zp, f, fp, 1.0), delta,
                                       rng)["eps_lower"]


def test_laplace_bound_approaches_exact_epsilon_as_trials_grow():
    small = [_laplace_bound(1.0, 2_000, s) for s in range(3)]
    large = [_laplace_bound(1.0, 200_000, s) for s in range(3)]
    assert max(large) <= 1.0                       # never above the true epsilon
    assert min(large) >= 0.93                      # and within 7 % of it at 2e5 trials per side
    assert np.mean(large) > np.mean(small) + 0.05  # closer with more trials


def test_gaussian_bound_approaches_exact_epsilon_as_trials_grow():
    mu, delta = 1.0, 1e-5
    exact = S.gaussian_epsilon(mu, delta)          # ≈ 3.9: most of it lives in far tails
    small = [_gauss_bound(mu, delta, 2_000, s) for s in range(2)]
    large = [_gauss_bound(mu, delta, 150_000, s) for s in range(2)]
    assert max(large) <= exact
    assert np.mean(large) > np.mean(small) + 0.2
    assert min(large) >= 0.5 * exact


def test_plateau_rounding_does_not_create_false_alarms():
    """Regression: 1-D Laplace LLRs sit on a plateau whose float values depended on the side of the release;
    without quantisation a threshold inside the plateau 'detected' ε̂ ≈ 2ε on a correct mechanism."""
    assert _laplace_bound(0.45, 200_000, 7) <= 0.45


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_false_alarm_rate_of_split_half_bound_on_correct_1d_mechanisms(mechanism):
    """Repeated audits of a correct mechanism: the (1 − α) lower bound exceeds the true ε in at most α of the runs
    (measured: 0 of 100 in both cases)."""
    runs = 100
    if mechanism == "laplace":
        bounds = [_laplace_bound(1.0, 3_000, 1000 + s) for s in range(runs)]
        true = 1.0
    else:
        mu, delta = 0.5, 1e-3
        true = S.gaussian_epsilon(mu, delta)
        bounds = [_gauss_bound(mu, delta, 3_000, 2000 + s) for s in range(runs)]
    rate = np.mean(np.array(bounds) > true)
    assert rate <= 0.05, f"false-alarm rate {rate:.3f} > alpha"


def test_half_noise_twin_of_1d_laplace_is_caught():
    assert _laplace_bound(1.0, 20_000, 3, factor=0.5) > 1.0


def _gdp_bound(mu, delta, trials, seed):
    """The μ-GDP bound on a 1-D Gaussian shift mechanism (exactly μ-GDP), statistic the release itself."""
    rng = np.random.default_rng(seed)
    return S.gdp_epsilon_lower_bound(mu + rng.standard_normal(trials), rng.standard_normal(trials), delta)


def test_gdp_bound_approaches_exact_epsilon_and_does_not_false_alarm():
    """On an exactly μ-GDP mechanism: the AUC-based bound comes close to the exact ε(δ) with many trials, never
    exceeds it more often than α = 5 % (measured on 60 repeated audits: 2/60 at 4,000 trials per side; median 4.19 of 4.38) and needs
    far fewer trials than the threshold bound, which at 2,000 trials shows only a fraction of ε."""
    mu, delta = 1.0, 1e-5
    exact = S.gaussian_epsilon(mu, delta)
    runs = [_gdp_bound(mu, delta, 4_000, s) for s in range(60)]
    eps = np.array([r["eps_lower"] for r in runs])
    assert np.mean(eps > exact) <= 0.10
    assert np.median(eps) >= 0.85 * exact
    assert np.median(eps) > _gauss_bound(mu, delta, 2_000, 0) + 1.0
    # μ_lo is a lower limit on μ: below μ in ≥ 90 % of the runs
    assert np.mean([r["mu_lower"] <= mu for r in runs]) >= 0.9
    # a mechanism with no signal: AUC ≈ ½, bound 0; too few trials: not computed
    assert _gdp_bound(0.0, delta, 4_000, 1)["eps_lower"] <= 0.3
    assert math.isnan(_gdp_bound(mu, delta, S.GDP_MIN_TRIALS - 1, 0)["eps_lower"])
