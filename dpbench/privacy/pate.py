"""Rényi-DP accounting of the PATE aggregators (Song 2018, PhD dissertation, ch. 5 "Scalable private learning
with PATE", §5.3; Papernot, Song, Mironov, Raghunathan, Talwar and Erlingsson, "Scalable private learning with
PATE", ICLR 2018, arXiv:1802.08908).

Everything is vectorised over queries × orders (numpy arrays of shape (Q, K)); no Python loop per query.

* GNMax, ``argmax_i n_i + N(0, σ²)``: data-independent RDP λ/σ² (Song 2018, §5.3.1, eq. after Alg. GNMax;
  Papernot et al. 2018, Prop. 8) and the data-dependent bound of Theorem 5.3.1 (Papernot et al. 2018, Theorem 6
  with the higher orders μ₁, μ₂ of their Prop. 10): :func:`rdp_gaussian`, with q̃ of Prop. 5.3.2 (Papernot et al.
  2018, Prop. 7) from :func:`logq_gnmax` in log space, capped at log(1 − 1/m).
* The threshold step of Confident-GNMax (Song 2018, Algorithm 3; Papernot et al. 2018, §4.1): the noisy max vote
  ``max_j n_j + N(0, σ₁²)`` against T has sensitivity 1 (GNMax's vote vector moves by √2 in L2), so its RDP is
  the Gaussian bound at scale √2·σ₁, data-dependent with q̃ = min(p, 1 − p), p = P(answered)
  (:func:`log_pr_answered`, :func:`rdp_threshold`).
* LNMax, ``argmax_i n_i + Lap(b)`` (the original PATE; Song 2018, §5.2): pure ε₀ = 2/b per query (Song 2018,
  §5.2: Lap(1/γ) is 2γ-DP), RDP min(ε₀²λ/2, ε₀) and the data-dependent bound of Papernot et al. 2017
  (arXiv:1610.05755, Theorem 3) with q̃ from their Lemma 4 (:func:`logq_lnmax`, :func:`rdp_laplace`).
* Composition: RDP adds over queries (Song 2018, Thm 2.2.3); conversion to (ε, δ): ε = min_λ RDP(λ) +
  log(1/δ)/(λ − 1) over the order grid :data:`ORDERS` (Song 2018, Thm 2.2.4; ``conversion="improved"``: the
  tighter conversion dp-accounting uses, Canonne, Kamath and Steinke 2020, Prop. 12).
* The smooth-sensitivity sanitisation of the data-dependent ε (GNSS; Song 2018, §5.3.2 cites it; Papernot et al.
  2018, App. B-C): :mod:`dpbench.privacy.pate_smooth`. The ε of Table 5.1 is the raw data-dependent value.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

#: the order grid of the authors' released analysis: 2, 2.5, ..., 100, then 100 log-spaced orders up to 500
ORDERS = np.concatenate((np.arange(2.0, 100.5, 0.5), np.logspace(np.log10(100.0), np.log10(500.0), 100)))

__all__ = ["ORDERS", "logq_gnmax", "logq_lnmax", "rdp_gaussian_independent", "rdp_gaussian", "log_pr_answered",
           "rdp_threshold", "rdp_threshold_independent", "rdp_laplace", "eps_from_rdp", "eps_curve"]


def _orders(orders) -> np.ndarray:
    o = np.atleast_1d(np.asarray(ORDERS if orders is None else orders, dtype=np.float64))
    if o.ndim != 1 or np.any(o <= 1):
        raise ValueError("orders must be a 1-D array of values > 1")
    return o


def log1mexp(x):
    """log(1 − e^x) for x ≤ 0, elementwise and numerically stable (−inf at x = 0)."""
    x = np.asarray(x, dtype=np.float64)
    if np.any(x > 0):
        raise ValueError("log1mexp needs x <= 0")
    with np.errstate(divide="ignore"):
        return np.where(x < -math.log(2.0), np.log1p(-np.exp(np.minimum(x, 0.0))),
                        np.log(-np.expm1(np.minimum(x, -0.0))))


def _votes(votes) -> np.ndarray:
    v = np.asarray(votes, dtype=np.float64)
    if v.ndim == 1:
        v = v[None, :]
    if v.ndim != 2 or v.shape[1] < 2:
        raise ValueError(f"votes must have shape (queries, classes >= 2), got {np.shape(votes)}")
    return v


def _gaps(v: np.ndarray) -> np.ndarray:
    """n_{i*} − n_i with the plurality class (first argmax) excluded as +inf."""
    top = np.argmax(v, axis=1)
    gaps = v[np.arange(len(v)), top][:, None] - v
    gaps[np.arange(len(v)), top] = np.inf
    return gaps


def logq_gnmax(votes, sigma: float) -> np.ndarray:
    """log q̃ per query: Prop. 5.3.2, q̃ = Σ_{i≠i*} ½ erfc((n_{i*} − n_i)/(2σ)) = Σ Φ̄((n_{i*} − n_i)/(√2 σ)),
    computed as a log-sum-exp of ``norm.logsf``, capped at log(1 − 1/m) (m classes). Shape (Q,)."""
    v = _votes(votes)
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0, got {sigma}")
    lsf = special.log_ndtr(-_gaps(v) / (math.sqrt(2.0) * sigma))          # log Φ̄; +inf gap -> -inf
    return np.minimum(special.logsumexp(lsf, axis=1), math.log(1.0 - 1.0 / v.shape[1]))


def logq_lnmax(votes, b: float) -> np.ndarray:
    """log q̃ per query for LNMax with Laplace scale b: the union bound Σ_{j≠i*} (2 + Δ_j)/4 · e^{−Δ_j},
    Δ_j = (n_{i*} − n_j)/b (Papernot et al. 2017, Lemma 4), capped at log(1 − 1/m). Shape (Q,)."""
    v = _votes(votes)
    if not b > 0:
        raise ValueError(f"b must be > 0, got {b}")
    d = _gaps(v) / b
    with np.errstate(invalid="ignore"):
        terms = np.where(np.isinf(d), -np.inf, np.log(2.0 + np.where(np.isinf(d), 0.0, d)) + math.log(0.25) - d)
    return np.minimum(special.logsumexp(terms, axis=1), math.log(1.0 - 1.0 / v.shape[1]))


def rdp_gaussian_independent(sigma: float, orders=None) -> np.ndarray:
    """GNMax's data-independent RDP λ/σ² (Song 2018, §5.3.1; Papernot et al. 2018, Prop. 8). Shape (K,)."""
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0, got {sigma}")
    return _orders(orders) / sigma ** 2


def rdp_gaussian(logq, sigma: float, orders=None) -> np.ndarray:
    """Data-dependent RDP of GNMax at every order, per query: Theorem 5.3.1 (Song 2018, §5.3.2; its explicit form
    is Theorem 6 of Papernot et al. 2018 with μ₂ = σ√(log 1/q̃), μ₁ = μ₂ + 1, ε_i = μ_i/σ² (their Prop. 10)):

        RDP(λ) ≤ min(λ/σ², 1/(λ−1) · log((1 − q̃)·A^{λ−1} + q̃·B^{λ−1})),
        A = (1 − q̃)/(1 − (q̃ e^{ε₂})^{(μ₂−1)/μ₂}),  B = e^{ε₁}/q̃^{1/(μ₁−1)},

    the second term only where its conditions hold: λ < μ₁, μ₂ > 1, log q̃ ≤ (μ₂ − 1)ε₂ − μ₂(log(1 + 1/(μ₁ − 1)) +
    log(1 + 1/(μ₂ − 1))) and −log q̃ > ε₂; elsewhere the data-independent λ/σ². q̃ = 0 (log q̃ = −inf) gives 0.
    ``logq``: shape (Q,) (or a scalar); returns shape (Q, K)."""
    lq = np.atleast_1d(np.asarray(logq, dtype=np.float64))
    if np.any(lq > 0) or not sigma > 0:
        raise ValueError("need log q <= 0 and sigma > 0")
    o = _orders(orders)
    var = sigma ** 2
    out = np.broadcast_to(o / var, (lq.size, o.size)).copy()
    finite = np.isfinite(lq)
    out[~finite] = 0.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mu2 = np.sqrt(var * -np.where(finite, lq, -1.0))
        mu1 = mu2 + 1.0
        e1, e2 = mu1 / var, mu2 / var
        ok = finite & (mu2 > 1.0) & (-lq > e2)
        ok &= lq <= (mu2 - 1.0) * e2 - mu2 * (np.log1p(1.0 / (mu1 - 1.0)) + np.log1p(1.0 / (mu2 - 1.0)))
        if not np.any(ok):
            return out
        lqo, mu1o, mu2o, e1o, e2o = (a[ok][:, None] for a in (lq, mu1, mu2, e1, e2))
        log1q = log1mexp(lqo)
        log_a = (o - 1.0) * (log1q - log1mexp((lqo + e2o) * (1.0 - 1.0 / mu2o)))
        log_b = (o - 1.0) * (e1o - lqo / (mu1o - 1.0))
        dep = np.logaddexp(log1q + log_a, lqo + log_b) / (o - 1.0)
        sub = out[ok]
        use = mu1o > o
        sub[use] = np.minimum(sub, dep)[use]
        out[ok] = sub
    return out


def log_pr_answered(max_votes, threshold: float, sigma1: float) -> np.ndarray:
    """log P(max_j n_j + N(0, σ₁²) ≥ T) per query (Song 2018, Algorithm 3); the max vote is rounded to an
    integer as in the authors' analysis (so that vote differences of Interactive-GNMax can be used)."""
    m = np.round(np.asarray(max_votes, dtype=np.float64))
    return special.log_ndtr((m - threshold) / sigma1)


def rdp_threshold_independent(sigma1: float, orders=None) -> np.ndarray:
    """Data-independent RDP of the threshold step: λ/(2σ₁²) (sensitivity 1: the Gaussian bound at √2·σ₁)."""
    return rdp_gaussian_independent(math.sqrt(2.0) * sigma1, orders)


def rdp_threshold(log_pr, sigma1: float, orders=None) -> np.ndarray:
    """Data-dependent RDP of the threshold step per query: the bound of :func:`rdp_gaussian` at √2·σ₁ with
    log q̃ = min(log p, log(1 − p)), p = P(answered) (Papernot et al. 2018, §4.1, Prop. 8 and Theorem 6).
    Shape (Q, K)."""
    lp = np.atleast_1d(np.asarray(log_pr, dtype=np.float64))
    lp = np.minimum(lp, 0.0)
    return rdp_gaussian(np.minimum(lp, log1mexp(lp)), math.sqrt(2.0) * sigma1, orders)


def rdp_laplace(logq, b: float, orders=None) -> np.ndarray:
    """RDP of LNMax with Laplace scale b per query (pure ε₀ = 2/b; Song 2018, §5.2): the minimum of ε₀²λ/2 (the
    pure-ε to RDP bound, Bun and Steinke 2016), ε₀ (the pure-ε fallback: D_λ ≤ D_∞ ≤ ε₀) and, when
    q̃ ≤ 1/(e^{ε₀} + 1), the data-dependent 1/(λ−1)·log((1 − q̃)((1 − q̃)/(1 − e^{ε₀} q̃))^{λ−1} + q̃ e^{ε₀(λ−1)})
    (Papernot et al. 2017, Theorem 3). Shape (Q, K)."""
    lq = np.atleast_1d(np.asarray(logq, dtype=np.float64))
    if not b > 0 or np.any(lq > 0):
        raise ValueError("need b > 0 and log q <= 0")
    o = _orders(orders)
    eps0 = 2.0 / b
    out = np.broadcast_to(np.minimum(0.5 * eps0 ** 2 * o, eps0), (lq.size, o.size)).copy()
    ok = np.exp(lq) <= 1.0 / (math.exp(eps0) + 1.0)
    if np.any(ok):
        lqo = lq[ok][:, None]
        log1q = log1mexp(lqo)
        with np.errstate(divide="ignore"):
            t1 = log1q + (log1q - log1mexp(np.minimum(eps0 + lqo, 0.0))) * (o - 1.0)
            t2 = lqo + eps0 * (o - 1.0)
            dep = np.logaddexp(t1, t2) / (o - 1.0)
        out[ok] = np.minimum(out[ok], dep)
    return out


def eps_from_rdp(rdp, delta: float, orders=None, conversion: str = "classic"):
    """(ε, best order) from RDP curves: ``rdp`` of shape (..., K). ``classic``: ε = min_λ RDP(λ) + log(1/δ)/(λ − 1)
    (Song 2018, Thm 2.2.4); ``improved``: ε = min_λ RDP(λ) + log(1 − 1/λ) − log(δλ)/(λ − 1) (Canonne et al.
    2020, Prop. 12; dp-accounting's conversion). Returns arrays of shape (...)."""
    o = _orders(orders)
    r = np.asarray(rdp, dtype=np.float64)
    if r.shape[-1] != o.size:
        raise ValueError(f"rdp has {r.shape[-1]} orders, the grid {o.size}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if conversion == "classic":
        eps = r - math.log(delta) / (o - 1.0)
    elif conversion == "improved":
        eps = r + np.log1p(-1.0 / o) - np.log(delta * o) / (o - 1.0)
    else:
        raise ValueError(f"conversion must be 'classic' or 'improved', got {conversion!r}")
    i = np.argmin(eps, axis=-1)
    best = np.take_along_axis(eps, i[..., None], axis=-1)[..., 0]
    return np.maximum(best, 0.0), o[i]


def eps_curve(rdp_per_query, delta: float, orders=None, conversion: str = "classic") -> np.ndarray:
    """ε after each of the Q queries (RDP composes additively, Song 2018, Thm 2.2.3): shape (Q,)."""
    return eps_from_rdp(np.cumsum(np.asarray(rdp_per_query, dtype=np.float64), axis=0), delta, orders,
                        conversion)[0]
