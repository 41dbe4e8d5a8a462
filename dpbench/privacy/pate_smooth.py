"""Smooth-sensitivity sanitisation (GNSS) of PATE's data-dependent privacy cost (Papernot, Song, Mironov,
Raghunathan, Talwar and Erlingsson, "Scalable private learning with PATE", ICLR 2018, arXiv:1802.08908, App. B.4
"smooth sensitivity" and App. C, Theorem 23; Song 2018, PhD dissertation, §5.3.2, which cites it).

The data-dependent RDP β(x) = Σ_queries RDP_q(λ) of :mod:`dpbench.privacy.pate` depends on the teachers' votes x,
so it is itself private. GNSS releases β(x) + SS_β(x)·N(0, σ_ss²) at one order λ, where
SS_β(x) = max_{d ≥ 0} e^{−βd} A⁽ᵈ⁾(x) is a β-smooth upper bound on the local sensitivity (Nissim, Raskhodnikova and
Smith 2007, Def. 2.1/Lemma 2.3; Papernot et al. 2018, Def. 19) with A⁽ᵈ⁾(x) ≥ max_{y: d(x,y) ≤ d} LS(y). Two vote
histograms are at distance d when d teachers change their votes; per query each change moves one vote from a
class to another. The release costs (Papernot et al. 2018, Theorem 23), for 1 < λ < 1/(2β),

    RDP_GNSS(λ) = λ e^{2β}/σ_ss² + (βλ − ½ log(1 − 2λβ))/(λ − 1).

Local-sensitivity bounds (our derivation, rigorous given (C5) below; vectorised over queries and distances):

* GNMax (:func:`ls_gnmax`): β_q = RDP of Theorem 5.3.1 as a function of q̃ (:func:`dpbench.privacy.pate.rdp_gaussian`
  with :func:`~dpbench.privacy.pate.logq_gnmax`). Within distance d every count moves by ≤ d, so every gap to the
  (possibly new) plurality class satisfies max(g_i − 2d, 0) ≤ g'_i ≤ g_i + 2d, which brackets q̃ between
  L(d) = Σ Φ̄((g_i + 2d)/(√2σ)) (a sub-sum of the r smallest gaps) and U(d) = Σ Φ̄(max(g_i − 2d, 0)/(√2σ)) (the
  r smallest gaps exactly, the others bounded by the (r+1)-th), capped at 1 − 1/m. With β_q non-decreasing in q̃ —
  condition C5 of Papernot et al. 2018, §B.4.2, checked numerically on a grid by :func:`check_monotone` — a
  vote vector y within d and its neighbour z (within d + 1) give
  A⁽ᵈ⁾ ≤ max(β(U(d+1)) − β(L(d)), β(U(d)) − β(L(d+1))). This bound is looser than the authors' Algorithms 3-5
  (which walk one vote path under their condition C6) but needs no further condition.
* Threshold step (:func:`ls_threshold`): β_q is a function of the rounded max vote v (Papernot et al. 2018, §4.1,
  §B.4.3); one teacher moves max_j n_j (or max_j (n_j − M p_j) for Interactive-GNMax) by ≤ 1, so
  A⁽ᵈ⁾ = the largest one-step change |β(u+1) − β(u)| for u within d of v (one more step either side, and
  two-step changes, when the max vote is not an integer and rounding may jump).

The total over queries is A⁽ᵈ⁾_total = Σ_q A_q⁽ᵈ⁾ (one teacher changes its vote on every query at once; which
queries were answered is the mechanism's output, fixed). Distances are evaluated on a grid d_0 = 0 < d_1 < ...:
since the bounds are non-decreasing in d, SS_β ≤ max_j e^{−β(d_{j−1}+1)} A⁽ᵈʲ⁾_total, plus the tail
e^{−β(D+1)} · Σ_q max β_q beyond the last grid point D (rigorous upper bound).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import special

from dpbench.privacy import pate as P

__all__ = ["check_monotone", "ls_gnmax", "ls_threshold", "distance_grid", "smooth_sensitivity", "rdp_gnss",
           "GNSS", "sanitise"]

#: exact terms of q̃ kept per query in the GNMax bounds (the rest bounded by the (r+1)-th smallest gap)
TOP_GAPS = 8


def _beta_gn(logq, sigma: float, order: float) -> np.ndarray:
    lq = np.asarray(logq, dtype=np.float64)
    return P.rdp_gaussian(lq.ravel(), sigma, [order])[:, 0].reshape(lq.shape)


def check_monotone(sigma: float, order: float, classes: int, points: int = 4000) -> bool:
    """Condition C5 (Papernot et al. 2018, §B.4.2) for our bound: the data-dependent RDP of GNMax at ``order`` is
    non-decreasing in q̃ on a log-grid from log q̃ = −(4((λ + 1)/σ)² + 50) (below which the bound of Theorem 5.3.1
    applies and decreases to 0) to the cap log(1 − 1/m)."""
    top = math.log(1.0 - 1.0 / classes)
    lo = -(4.0 * ((order + 1.0) / sigma) ** 2 + 50.0)
    g = np.linspace(lo, top, points)
    b = _beta_gn(g, sigma, order)
    return bool(np.all(np.diff(b) >= -1e-12 * np.maximum(1.0, np.abs(b[1:]))))


def _logq_bounds(votes, sigma: float, d: np.ndarray):
    """log L(d), log U(d) of q̃ over vote vectors within distance d (module docstring). Shapes (Q, len(d))."""
    v = np.asarray(votes, dtype=np.float64)
    m = v.shape[1]
    top = np.argmax(v, axis=1)
    gaps = v[np.arange(len(v)), top][:, None] - v
    gaps[np.arange(len(v)), top] = np.inf
    gaps = np.sort(gaps, axis=1)[:, : m - 1]                          # the m − 1 gaps, ascending
    r = min(TOP_GAPS, m - 1)
    c = math.sqrt(2.0) * sigma
    dd = np.asarray(d, dtype=np.float64)[None, :, None]
    g = gaps[:, None, : r + 1]
    lo_arg, up_arg = g + 2.0 * dd, np.maximum(g - 2.0 * dd, 0.0)
    if np.all(v == np.round(v)):                 # integer votes: log Φ̄(n/c) from a table of the integers n
        table = special.log_ndtr(-np.arange(int(np.max(lo_arg)) + 1) / c)
        lo_t, up_t = table[lo_arg.astype(np.int64)], table[up_arg.astype(np.int64)]
    else:
        lo_t, up_t = special.log_ndtr(-lo_arg / c), special.log_ndtr(-up_arg / c)
    if m - 1 > r:                                # U: the gaps beyond the r-th bounded by the (r+1)-th
        up_t[..., r] += math.log(m - 1 - r)
    else:
        lo_t, up_t = lo_t[..., :r], up_t[..., :r]
    lo_t = lo_t[..., :r]                         # L: a sub-sum (the r smallest gaps)
    # log-sum-exp along the last axis; the terms are in decreasing order except U's tail term
    low = lo_t[..., 0] + np.log(np.sum(np.exp(lo_t - lo_t[..., :1]), axis=-1))
    mx = np.max(up_t, axis=-1, keepdims=True)
    up = mx[..., 0] + np.log(np.sum(np.exp(up_t - mx), axis=-1))
    cap = math.log(1.0 - 1.0 / m)
    return np.minimum(low, cap), np.minimum(up, cap)


def ls_gnmax(votes, sigma: float, order: float, distances, weights=None, chunk_cells: int = 2_000_000):
    """A⁽ᵈ⁾ per query for GNMax's data-dependent RDP at ``order``: shape (Q, len(distances)); with ``weights``
    (Q,), the weighted sum over queries (len(distances),), computed in chunks of queries. Raises if condition C5
    fails on the grid (the bound would not be valid)."""
    v = P._votes(votes)
    if not check_monotone(sigma, order, v.shape[1]):
        raise ValueError(f"GNMax's data-dependent RDP is not monotone in q at sigma={sigma}, order={order}")
    d = np.asarray(distances, dtype=np.float64)
    k = d.size
    step = max(1, chunk_cells // (2 * k * min(TOP_GAPS + 1, v.shape[1])))
    parts = []
    for s in range(0, len(v), step):
        lo, up = _logq_bounds(v[s:s + step], sigma, np.r_[d, d + 1.0])
        b_lo, b_up = _beta_gn(lo, sigma, order), _beta_gn(up, sigma, order)
        a = np.maximum(np.maximum(b_up[:, k:] - b_lo[:, :k], b_up[:, :k] - b_lo[:, k:]), 0.0)
        parts.append(a if weights is None else np.asarray(weights, dtype=np.float64)[s:s + step] @ a)
    if weights is None:
        return np.concatenate(parts) if parts else np.zeros((0, k))
    return np.sum(parts, axis=0) if parts else np.zeros(k)


def ls_threshold(max_votes, threshold: float, sigma1: float, order: float, distances, weights=None):
    """A⁽ᵈ⁾ per query for the threshold step's data-dependent RDP at ``order``: shape (Q, len(distances)); with
    ``weights`` (Q,), the weighted sum over queries (len(distances),)."""
    x = np.asarray(max_votes, dtype=np.float64)
    r = np.round(x).astype(np.int64)
    integer = np.all(x == np.round(x))
    extra, step = (0, 1) if integer else (1, 2)
    d = np.asarray(distances, dtype=np.int64)
    lo_v, hi_v = int(r.min()) - int(d.max()) - extra - step - 1, int(r.max()) + int(d.max()) + extra + step + 1
    u = np.arange(lo_v, hi_v + 1)
    b = P.rdp_threshold(P.log_pr_answered(u, threshold, sigma1), sigma1, [order])[:, 0]
    jump = np.abs(b[1:] - b[:-1])                                     # jump[i] = |β(u_i + 1) − β(u_i)|
    if step == 2:
        jump = np.maximum(jump, np.r_[np.abs(b[2:] - b[:-2]), 0.0])
    # sparse table for range maxima of ``jump``
    levels = [jump]
    while 2 ** len(levels) <= jump.size:
        p = levels[-1]
        h = 2 ** (len(levels) - 1)
        levels.append(np.maximum(p[:-h], p[h:]))
    ur, inv = np.unique(r, return_inverse=True)
    start = (ur[:, None] - d[None, :] - extra - step) - lo_v         # jumps starting in [v − d − e − s, v + d + e]
    stop = (ur[:, None] + d[None, :] + extra) - lo_v
    length = stop - start + 1
    k = np.floor(np.log2(length)).astype(np.int64)
    out = np.empty(start.shape)
    for lev in np.unique(k):
        sel = k == lev
        t = levels[lev]
        out[sel] = np.maximum(t[start[sel]], t[stop[sel] - 2 ** lev + 1])
    if weights is None:
        return out[inv.ravel()]
    return np.bincount(inv.ravel(), weights=np.asarray(weights, dtype=np.float64), minlength=len(ur)) @ out


def rdp_gnss(beta, sigma_ss, order: float):
    """RDP at ``order`` of releasing f(x) + SS_β(x)·N(0, σ_ss²) (Papernot et al. 2018, Theorem 23):
    λ e^{2β}/σ_ss² + (βλ − ½ log(1 − 2λβ))/(λ − 1), valid for 1 < λ < 1/(2β)."""
    beta = np.asarray(beta, dtype=np.float64)
    if not order > 1 or np.any(2.0 * order * beta >= 1.0) or np.any(beta < 0):
        raise ValueError("GNSS needs 1 < order < 1/(2 beta), beta >= 0")
    return order * np.exp(2.0 * beta) / np.asarray(sigma_ss) ** 2 + (beta * order - 0.5 * np.log1p(
        -2.0 * order * beta)) / (order - 1.0)


def distance_grid(teachers: int, beta_min: float, tail: float = 40.0, slack: float = 0.05) -> np.ndarray:
    """Distances 0..D, D = min(M, ⌈tail/β_min⌉), step ⌊slack/β_min⌋ (≥ 1) so that the discount within a step is
    ≥ e^{−slack}: the grid's looseness."""
    D = int(min(teachers, math.ceil(tail / beta_min)))
    s = max(1, int(slack / beta_min))
    return np.unique(np.r_[np.arange(0, D + 1, s), D])


def smooth_sensitivity(ls_total, distances, beta, tail_bound: float) -> np.ndarray:
    """SS_β ≤ max(max_j e^{−β(d_{j−1}+1)} A⁽ᵈʲ⁾, e^{−β(D+1)}·tail_bound) with d_{−1} + 1 := 0 (module docstring);
    ``ls_total`` (len(distances),) non-decreasing bounds, ``beta`` scalar or array; returns the shape of beta."""
    d = np.asarray(distances, dtype=np.float64)
    a = np.maximum.accumulate(np.asarray(ls_total, dtype=np.float64))
    disc = np.r_[0.0, d[:-1] + 1.0]
    b = np.atleast_1d(np.asarray(beta, dtype=np.float64))[:, None]
    ss = np.max(np.exp(-b * disc[None, :]) * a[None, :], axis=1)
    ss = np.maximum(ss, np.exp(-b[:, 0] * (d[-1] + 1.0)) * tail_bound)
    return ss.reshape(np.shape(beta))


@dataclasses.dataclass
class GNSS:
    """The sanitised privacy cost at one order: ``raw_rdp`` β(x) at ``order``; ``beta``, ``ss`` (SS_β),
    ``sigma_ss``, ``cost`` (RDP_GNSS); ε values at δ (classic conversion at ``order``): ``eps_raw_at_order``
    (β(x) alone), ``eps_expected`` (β(x) + RDP_GNSS: the noise has mean 0), ``eps_quantile`` (+ the ``quantile``
    of SS·N(0, σ_ss²)), ``eps_released`` (the seeded draw: β(x) + SS·σ_ss·Z + RDP_GNSS)."""
    order: float
    raw_rdp: float
    beta: float
    ss: float
    sigma_ss: float
    cost: float
    eps_raw_at_order: float
    eps_expected: float
    eps_quantile: float
    quantile: float
    eps_released: float


def sanitise(raw_rdp: float, ls_total, distances, tail_bound: float, order: float, delta: float,
             rng: np.random.Generator, quantile: float = 0.99) -> GNSS:
    """GNSS release of the total data-dependent RDP ``raw_rdp`` at ``order``: β searched over
    arange(0.3/λ, 0.495/λ, 0.01/λ) with σ_ss = (λ e^{2β}/SS_β)^{1/3} (the authors' released choices; β picked to
    minimise RDP_GNSS + SS_β·σ_ss, the expected cost plus one standard deviation of the noise [INFERRED]); one
    standard normal draw from ``rng``."""
    lam = float(order)
    betas = np.arange(0.3 / lam, 0.495 / lam, 0.01 / lam)
    ss = smooth_sensitivity(ls_total, distances, betas, tail_bound)
    ss = np.maximum(ss, 1e-300)
    sig = (lam * np.exp(2.0 * betas) / ss) ** (1.0 / 3.0)
    cost = rdp_gnss(betas, sig, lam)
    i = int(np.argmin(cost + ss * sig))
    z = float(rng.standard_normal())
    conv = -math.log(delta) / (lam - 1.0)
    noise_q = float(ss[i] * sig[i] * special.ndtri(quantile))
    return GNSS(lam, float(raw_rdp), float(betas[i]), float(ss[i]), float(sig[i]), float(cost[i]),
                float(raw_rdp + conv), float(raw_rdp + cost[i] + conv), float(raw_rdp + cost[i] + noise_q + conv),
                float(quantile), float(max(raw_rdp + ss[i] * sig[i] * z + cost[i] + conv, 0.0)))
