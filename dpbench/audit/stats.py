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

Under a μ-GDP model of the mechanism (:func:`gdp_epsilon_lower_bound`; Dong, Roth & Su 2022): the area under the
ROC curve of every test is at most Φ(μ/√2), so a lower confidence limit on the AUC of any statistic is one on μ,
and ε(δ) of μ-GDP follows. Valid when the mechanism's trade-off curve is (close to) Gaussian — the central limit
theorem of compositions makes it so for the thousands of subsampled Gaussian steps of DP-SGD; the published tight
audits of DP-SGD use the same model (Nasr et al. 2023). It is an assumption, reported in its own column.

Closed forms used by the tests: :func:`laplace_epsilon` (Δ/b) and :func:`gaussian_epsilon` (the exact ε(δ) of a
Gaussian shift μ = Δ/σ: δ = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2); Balle & Wang 2018, Thm 8).
"""

from __future__ import annotations

import math

import numpy as np

from dpbench.attacks.metrics import epsilon_audit

__all__ = ["gaussian_llr", "laplace_llr", "l2_laplace_llr", "subsampled_gaussian_transcript_llr",
           "replacement_gaussian_transcript_llr", "binomial_tail_bound",
           "epsilon_lower_bound_split", "gdp_epsilon_lower_bound", "laplace_epsilon", "gaussian_epsilon",
           "gaussian_delta"]


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


def subsampled_gaussian_transcript_llr(y, q: float, sigma: float | None = None) -> np.ndarray:
    """ln p/q of R transcripts ``y`` (R, T) of a Poisson-subsampled Gaussian mechanism observed along the canary's
    direction, in units of the canary's clipped gradient: on D y_t = B_t + σZ_t, on D′ y_t = −B_t + σZ_t, with
    B_t ~ Bernoulli(q) and Z_t ~ N(0, 1) independent over steps (DP-SGD on a pair whose other records have zero
    gradient; Abadi et al. 2016, Alg. 1). Exact for known σ:

        Σ_t ln[(1 − q) φ_σ(y_t) + q φ_σ(y_t − 1)] − ln[(1 − q) φ_σ(y_t) + q φ_σ(y_t + 1)].

    ``sigma`` None: σ is estimated per run from its own steps, σ̂² = mean_t y_t² − q — the auditor reads the
    noise off the release instead of trusting the implementation's claim (a twin with less noise is then tested
    with its own, near-optimal statistic); a function of the run alone, so the trials stay independent."""
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 2:
        raise ValueError("y must have shape (runs, steps)")
    q = float(q)
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be in (0, 1), got {q!r}")
    if sigma is None:
        s2 = np.maximum(np.mean(y * y, axis=1, keepdims=True) - q, 1e-12)
    else:
        s2 = float(sigma) ** 2
    base = math.log1p(-q) - y * y / (2 * s2)
    lq = math.log(q)
    up = np.logaddexp(base, lq - (y - 1.0) ** 2 / (2 * s2))
    down = np.logaddexp(base, lq - (y + 1.0) ** 2 / (2 * s2))
    return (up - down).sum(axis=1)


def binomial_tail_bound(b: int, p: float, c_max: int) -> float:
    """P(Binomial(b, p) > c_max) ≤ C(b, c_max + 1)·p^(c_max+1) (union bound over the (c_max + 1)-subsets)."""
    return float(math.comb(int(b), int(c_max) + 1) * float(p) ** (int(c_max) + 1))


def replacement_gaussian_transcript_llr(y, g_d, g_dp, batch_size: int, n: int, sigma: float | None = None,
                                        censor=None, c_max: int = 3) -> np.ndarray:
    """ln p/q of R transcripts of a with-replacement-subsampled Gaussian mechanism (BST14; Bassily, Smith &
    Thakurta 2014, Alg. 1) observed along the canary's coordinate. Per step t the observation is, in units of the
    gradient SUM of a batch of b indices drawn uniformly with replacement from n,

        y_t = c_t·g_t + σZ_t,   c_t ~ Binomial(b, 1/n) (the canary's multiplicity),   Z_t ~ N(0, 1),

    with g_t = ``g_d`` (R, T) on D and ``g_dp`` on D′ (the canary's gradient at the previous iterate: known to a
    white-box auditor; the other records have zero gradient). Exact for known σ up to the truncation c ≤ c_max:

        Σ_t ln Σ_{c≤c_max} π_c φ_σ(y_t − c·g_d) − ln Σ_{c≤c_max} π_c φ_σ(y_t − c·g_dp),   π_c = Bin(c; b, 1/n);

    the neglected mass is P(c_t > c_max) ≤ C(b, c_max+1)/n^(c_max+1) per step (:func:`binomial_tail_bound`;
    b = 50, n = 72,876, c_max = 3: 8·10⁻¹⁵, 1.2·10⁻¹⁰ over 14,576 steps). Any function of the transcript is a valid
    audit statistic; the truncation only costs power on events of that probability.

    ``censor`` None or (R, T) in {−1, 0, +1}: +1 = the step was only observed as y_t ≤ ``y`` (the projection onto
    the ball bound: the iterate sits on the sphere), −1 = y_t ≥ ``y``; the term is then ln Σ π_c Φ(±(y − c·g)/σ).
    ``sigma`` None: σ is estimated per run from its own uncensored steps, σ̂ = median|y_t|/Φ⁻¹(3/4) — the canary
    is in a fraction ≈ b/n of the steps, so the median is the noise's (robust where a mean square would mix the
    canary's steps in when the noise is tiny); the auditor reads the noise off the release rather than trusting
    the implementation (as :func:`subsampled_gaussian_transcript_llr`), a function of the run alone."""
    from scipy import special, stats

    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 2:
        raise ValueError("y must have shape (runs, steps)")
    g_d = np.broadcast_to(np.asarray(g_d, dtype=np.float64), y.shape)
    g_dp = np.broadcast_to(np.asarray(g_dp, dtype=np.float64), y.shape)
    b, n, c_max = int(batch_size), int(n), int(c_max)
    if not (1 <= b and 1 <= n and 0 <= c_max):
        raise ValueError("need batch_size >= 1, n >= 1, c_max >= 0")
    cen = np.zeros(y.shape, dtype=np.int8) if censor is None else np.asarray(censor).astype(np.int8)
    exact = cen == 0
    if sigma is None:
        yy = np.where(exact, np.abs(y), np.nan)
        s = np.nanmedian(yy, axis=1, keepdims=True) / float(stats.norm.ppf(0.75))
        s = np.maximum(np.nan_to_num(s, nan=1.0), 1e-300)
    else:
        s = np.full((y.shape[0], 1), float(sigma))
    c = np.arange(min(c_max, b) + 1, dtype=np.float64)
    logpi = stats.binom.logpmf(c, b, 1.0 / n)

    def logp(g):
        r = (y[..., None] - c * g[..., None]) / s[..., None]           # (R, T, C)
        dens = -0.5 * r * r                                             # constants cancel in the ratio
        cdf = special.log_ndtr(np.where(cen[..., None] > 0, r, -r))     # P(Y ≤ y) or P(Y ≥ y)
        return special.logsumexp(logpi + np.where(exact[..., None], dens, cdf), axis=-1)
    return (logp(g_d) - logp(g_dp)).sum(axis=1)


#: fewer trials per side than this and the GDP bound is not computed (the AUC's normal interval needs many)
GDP_MIN_TRIALS = 200


def gdp_epsilon_lower_bound(s_d, s_dp, delta: float, alpha: float = 0.05) -> dict:
    """ε lower bound (1 − α) ASSUMING the mechanism is μ-GDP for some μ (Dong, Roth & Su 2022, Def. 2.6).

    Under μ-GDP every test's ROC curve lies below TPR = Φ(Φ⁻¹(FPR) + μ), whose area is Φ(μ/√2); so for any
    statistic (larger = "D") AUC ≤ Φ(μ/√2) and μ ≥ √2·Φ⁻¹(AUC). The AUC's one-sided lower limit (DeLong variance,
    normal interval, :func:`dpbench.attacks.metrics.auc_delong`) gives μ_lo, and ε̂ = ε(δ) of μ_lo-GDP
    (:func:`gaussian_epsilon`). No threshold is chosen, so no trials are spent on selection. Returns ``auc``,
    ``auc_lower``, ``mu_lower``, ``eps_lower`` (0 when the AUC's limit is ≤ ½); NaN fields with fewer than
    :data:`GDP_MIN_TRIALS` trials per side."""
    from scipy import stats

    from dpbench.attacks.metrics import auc_delong

    s_d = np.asarray(s_d, dtype=np.float64).ravel()
    s_dp = np.asarray(s_dp, dtype=np.float64).ravel()
    if min(s_d.size, s_dp.size) < GDP_MIN_TRIALS:
        return {"auc": math.nan, "auc_lower": math.nan, "mu_lower": math.nan, "eps_lower": math.nan}
    labels = np.r_[np.ones(s_d.size, dtype=bool), np.zeros(s_dp.size, dtype=bool)]
    auc, lo, _ = auc_delong(np.r_[s_d, s_dp], labels, 2.0 * float(alpha))   # two-sided 2α = one-sided α
    # near-perfect separation: the DeLong variance collapses to 0, but n trials per side cannot certify an AUC
    # above 1 − 1/n (one discordant pair in n² is below the resolution): cap the limit there
    lo = min(lo, 1.0 - 1.0 / min(s_d.size, s_dp.size))
    mu = math.sqrt(2.0) * float(stats.norm.ppf(lo)) if lo > 0.5 else 0.0
    return {"auc": float(auc), "auc_lower": float(lo), "mu_lower": mu,
            "eps_lower": gaussian_epsilon(mu, delta) if mu > 0 else 0.0}


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
    return float(stats.norm.cdf(-e / m + m / 2) - math.exp(e + stats.norm.logcdf(-e / m - m / 2)))  # no overflow


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
