"""The tight calibration of prediction sensitivity (δ > 0) against brute force. The B noisy answers are one
Gaussian mechanism on the vector of answers, of L2 sensitivity Δ'·√B: checked (1) by random search over model
differences and unit-norm queries (never above Δ'·√B; attained by repeating the top singular direction), (2) by
integrating the two output densities along the difference — δ(ε) at the tight σ is ≤ δ and 3 % less noise
exceeds it —, (3) by Monte Carlo in the full B·C-dimensional output space, and (4) through the runner: rows carry
``calibration: tight``, 0.19× the source's σ at B = 100, and δ = 0 points leave the method out."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpbench.methods.sensitivity import minimiser_sensitivity, prediction_sensitivity_noise


def _exact_delta(epsilon: float, mu: float) -> float:
    """∫ max(0, φ(x − μ) − e^ε φ(x)) dx on a fine grid: δ(ε) of N(μ, 1) against N(0, 1)."""
    x = np.linspace(-12.0, mu + 12.0, 400_001)
    gap = np.maximum(stats.norm.pdf(x, mu, 1.0) - math.exp(epsilon) * stats.norm.pdf(x), 0.0)
    return float(gap.sum() * (x[1] - x[0]))


def test_answers_sensitivity_is_delta_times_sqrt_b():
    rng = np.random.default_rng(7)
    D, C, B, delta_theta = 5, 3, 40, 0.3
    worst = 0.0
    for _ in range(2000):
        d_theta = rng.normal(size=(D, C))
        d_theta *= delta_theta / np.linalg.norm(d_theta)
        X = rng.normal(size=(B, D))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        worst = max(worst, float(np.linalg.norm(X @ d_theta)))
    assert worst <= delta_theta * math.sqrt(B) * (1 + 1e-12)
    u, s, vt = np.linalg.svd(d_theta)
    X = np.repeat(u[:, :1].T, B, axis=0)                  # every query the top singular direction
    assert np.linalg.norm(X @ d_theta) == pytest.approx(delta_theta * math.sqrt(B) * s[0] / np.linalg.norm(s))
    rank1 = np.outer(u[:, 0], vt[0]) * delta_theta         # a rank-one difference: the bound is attained
    assert np.linalg.norm(X @ rank1) == pytest.approx(delta_theta * math.sqrt(B))


@pytest.mark.parametrize("epsilon,delta,budget", [(1.0, 1e-5, 100), (0.1, 1e-5, 100), (1.0, 1e-3, 10)])
def test_tight_sigma_meets_delta_exactly_and_less_noise_does_not(epsilon, delta, budget):
    n, lam = 60_000, 1e-3
    kind, sigma, comp = prediction_sensitivity_noise(n, lam, epsilon, delta, budget, calibration="tight")
    assert (kind, comp) == ("gaussian_analytic", "gaussian_exact")
    sens = minimiser_sensitivity(n, lam) * math.sqrt(budget)
    assert _exact_delta(epsilon, sens / sigma) <= delta * (1 + 1e-4)
    assert _exact_delta(epsilon, sens / (0.97 * sigma)) > delta
    source = prediction_sensitivity_noise(n, lam, epsilon, delta, budget)[1]
    assert sigma < source                                   # the composition theorems are loose


def test_monte_carlo_in_the_full_output_space():
    """B = 3 answers of C = 2 logits: outputs Y ~ N(v, σ²I₆) on D and N(0, σ²I₆) on D′ with ‖v‖ the worst-case
    sensitivity; δ(ε) = E_D[(1 − e^{ε − L})₊] with L the exact log-likelihood ratio."""
    eps, delta, B = 1.0, 1e-3, 3
    sigma = prediction_sensitivity_noise(1000, 1e-2, eps, delta, B, calibration="tight")[1]
    sens = minimiser_sensitivity(1000, 1e-2) * math.sqrt(B)
    rng = np.random.default_rng(11)
    v = rng.normal(size=2 * B)
    v *= sens / np.linalg.norm(v)
    Y = v + sigma * rng.normal(size=(2_000_000, 2 * B))
    L = ((Y ** 2).sum(1) - ((Y - v) ** 2).sum(1)) / (2 * sigma ** 2)
    terms = np.maximum(1.0 - np.exp(eps - L), 0.0)
    est, se = terms.mean(), terms.std() / math.sqrt(len(terms))
    assert est <= delta + 4 * se
    assert est > 0.5 * delta                                # and not far below: the calibration is tight


def test_source_and_tight_agree_for_one_query_and_tight_refuses_delta_zero():
    a = prediction_sensitivity_noise(60_000, 1e-3, 1.0, 1e-5, 1)
    b = prediction_sensitivity_noise(60_000, 1e-3, 1.0, 1e-5, 1, calibration="tight")
    assert b[1] == pytest.approx(a[1], rel=1e-9)
    with pytest.raises(ValueError, match="delta > 0"):
        prediction_sensitivity_noise(60_000, 1e-3, 1.0, 0.0, 100, calibration="tight")


def test_tight_rows_through_the_runner(tiny_config):
    import copy

    from dpbench.runner import run_series
    from dpbench.studies.vdm2020.spec import series

    cfg = copy.deepcopy(tiny_config)
    cfg["studies"]["vdm2020"]["figures"]["fig2b"]["methods"] = ["prediction_sensitivity",
                                                                "prediction_sensitivity_tight"]
    src = run_series(cfg, "vdm2020", "fig2b", "prediction_sensitivity")
    tight = run_series(cfg, "vdm2020", "fig2b", "prediction_sensitivity_tight")
    assert set(tight["calibration"]) == {"tight"} and set(src["calibration"]) == {"source"}
    a = src.groupby("budget")["noise_scale"].first()
    b = tight.groupby("budget")["noise_scale"].first()
    assert b.loc[1] == pytest.approx(a.loc[1], rel=1e-9)   # one query: the same σ
    assert b.loc[100] / a.loc[100] == pytest.approx(0.19, abs=0.01)
    cfg["studies"]["vdm2020"]["figures"]["fig1a"]["methods"] = ["prediction_sensitivity_tight", "non_private"]
    assert "prediction_sensitivity_tight" not in series(cfg["studies"]["vdm2020"], "fig1a")
