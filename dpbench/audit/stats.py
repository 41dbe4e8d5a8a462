"""Test statistics of the white-box privacy audit and the ε lower bound they imply.

Likelihood-ratio statistics (Neyman–Pearson: for a fixed pair of output distributions P = A(D), Q = A(D′) the
log-likelihood ratio ln p(z)/q(z) is the most powerful test statistic at every level, so thresholding it traces
the optimal trade-off curve that (ε, δ)-DP constrains; Kairouz, Oh & Viswanath 2015, Thm 2.1; the auditing use of
Jagielski et al. 2020 and Nasr et al. 2021, 2023):

* :func:`gaussian_llr` — release z = f + N(0, σ²I): ln p/q = (⟨z, f − f′⟩ − (‖f‖² − ‖f′‖²)/2)/σ², an affine
  function of the projection of z on the direction f − f′ (the projection is therefore the optimal statistic).
* :func:`laplace_llr` — z = f + Lap(b) i.i.d. per coordinate: ln p/q = Σᵢ (|zᵢ − f′ᵢ| − |zᵢ − fᵢ|)/b (exact).
* :func:`l2_laplace_llr` — z = f + κ with density ∝ exp(−β‖κ‖₂) (Chaudhuri, Monteleoni & Sarwate 2011, Alg. 1;
  vdm2020 Alg. 1): ln p/q = β(‖z − f′‖ − ‖z − f‖) (exact; the normaliser does not depend on f).

The ε lower bound (:func:`epsilon_lower_bound_split`): an (ε, δ)-DP mechanism satisfies, for every test
"say D iff S ≥ t", TPR ≤ e^ε·FPR + δ and 1 − FPR ≤ e^ε·(1 − TPR) + δ (Kairouz et al. 2015, the hypothesis-testing
characterisation; Dwork & Roth 2014, §2.3). The trials are split at random into a selection half (chooses the
threshold maximising the lower bound) and an evaluation half, on which TPR is taken at its Clopper–Pearson lower
and FPR at its upper limit (α/2 each, joint coverage ≥ 1 − α) and ε̂ = max of ln((TPR_lo − δ)/FPR_hi) and
ln((1 − FPR_hi − δ)/(1 − TPR_lo)). With probability ≥ 1 − α over the evaluation trials ε̂ ≤ the true ε of the
mechanism on this pair (the threshold is independent of the evaluation trials), so ε̂ > claimed ε refutes the claim.
One home for the split/Clopper–Pearson procedure: :func:`dpbench.attacks.metrics.epsilon_audit`.

Closed forms used by the tests: :func:`laplace_epsilon` (Δ/b) and :func:`gaussian_epsilon` (the exact ε(δ) of a
Gaussian shift μ = Δ/σ: δ = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2); Balle & Wang 2018, Thm 8).
"""

from __future__ import annotations

import math

import numpy as np

from dpbench.attacks.metrics import epsilon_audit

__all__ = ["gaussian_llr", "laplace_llr", "l2_laplace_llr", "epsilon_lower_bound_split", "laplace_epsilon",
           "gaussian_epsilon", "gaussian_delta"]


def _flat(z, f, fp):
    z = np.asarray(z, dtype=np.float64)
    f = np.asarray(f, dtype=np.float64).reshape(-1)
    fp = np.asarray(fp, dtype=np.float64).reshape(-1)
    if f.shape != fp.shape:
        raise ValueError("f and f' must have the same shape")
    return z.reshape(-1, f.size), f, fp


def gaussian_llr(z, f, fp, sigma: float) -> np.ndarray:
    """ln p(z)/q(z) for z ~ N(f, σ²I) vs N(f′, σ²I); z of shape (T, …) (each trial flattened)."""
    z, f, fp = _flat(z, f, fp)
    return (z @ (f - fp) - 0.5 * (f @ f - fp @ fp)) / float(sigma) ** 2


def laplace_llr(z, f, fp, scale: float) -> np.ndarray:
    """ln p(z)/q(z) for i.i.d. Laplace(scale) noise per coordinate around f vs f′."""
    z, f, fp = _flat(z, f, fp)
    return (np.abs(z - fp).sum(axis=1) - np.abs(z - f).sum(axis=1)) / float(scale)


def l2_laplace_llr(z, f, fp, beta: float) -> np.ndarray:
    """ln p(z)/q(z) for the L2-Laplace density ∝ exp(−β‖z − f‖₂) around f vs f′."""
    z, f, fp = _flat(z, f, fp)
    return float(beta) * (np.linalg.norm(z - fp, axis=1) - np.linalg.norm(z - f, axis=1))


SELECT_ALPHA = 1e-6
MAX_THRESHOLDS = 4000
"""Level of the selection half's criterion: the threshold maximising the Clopper–Pearson bound at 1e-6 (not α)
avoids far-tail thresholds whose selection counts are a handful (see :func:`~dpbench.attacks.metrics.epsilon_audit`)."""


def epsilon_lower_bound_split(s_d, s_dp, delta: float, rng: np.random.Generator, alpha: float = 0.05) -> dict:
    """ε lower bound (1 − α confidence) from statistics of trials on D (``s_d``, larger = "D") and on D′
    (``s_dp``): split half, threshold on the selection half, Clopper–Pearson on the evaluation half (module
    docstring). Returns the evaluation counts, ``eps_point`` and ``eps_lower``."""
    s_d = np.asarray(s_d, dtype=np.float64).ravel()
    s_dp = np.asarray(s_dp, dtype=np.float64).ravel()
    if s_d.size < 4 or s_dp.size < 4:
        raise ValueError("need at least 4 trials per side")
    if not (np.isfinite(s_d).all() and np.isfinite(s_dp).all()):
        raise ValueError("non-finite audit statistics")
    s = quantise(np.r_[s_d, s_dp])
    labels = np.r_[np.ones(s_d.size, dtype=int), np.zeros(s_dp.size, dtype=int)]
    return epsilon_audit(s, labels, float(delta), rng, alpha, select_alpha=SELECT_ALPHA,
                         max_thresholds=MAX_THRESHOLDS)


def quantise(s, digits: int = 9) -> np.ndarray:
    """``s`` rounded to a grid of 10^−digits × max|s|. The likelihood ratios of Laplace-type noise are constant
    on half-spaces (a plateau at the largest privacy loss); in floating point the plateau values differ in the
    last bits depending on which side the release came from (z − f is rounded differently for f = f(D) and
    f(D′)), and a threshold inside the plateau would then separate the sides by rounding error, not by the
    mechanism. Rounding is a fixed post-processing of the release, so the bound stays valid."""
    s = np.asarray(s, dtype=np.float64)
    step = 10.0 ** (-digits) * max(float(np.max(np.abs(s))), 1e-300)
    return np.round(s / step) * step


def laplace_epsilon(shift: float, scale: float) -> float:
    """Exact ε of the 1-D Laplace mechanism with shift Δ and scale b: Δ/b (pure DP)."""
    return abs(float(shift)) / float(scale)


def gaussian_delta(epsilon: float, mu: float) -> float:
    """δ(ε) of the Gaussian shift mechanism with μ = Δ/σ (Balle & Wang 2018, Thm 8)."""
    from scipy import stats

    e, m = float(epsilon), float(mu)
    return float(stats.norm.cdf(-e / m + m / 2) - math.exp(e) * stats.norm.cdf(-e / m - m / 2))


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact ε of the Gaussian shift mechanism μ = Δ/σ at δ (inverse of :func:`gaussian_delta`); 0 if δ is
    already ≥ δ(0)."""
    from scipy import optimize

    if gaussian_delta(0.0, mu) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_delta(hi, mu) > delta:
        hi *= 2
    return float(optimize.brentq(lambda e: gaussian_delta(e, mu) - delta, 0.0, hi, xtol=1e-12))
