"""Smooth-sensitivity sanitisation (GNSS) of PATE's data-dependent privacy cost (Papernot, Song, Mironov,
Raghunathan, Talwar and Erlingsson, "Scalable private learning with PATE", ICLR 2018, arXiv:1802.08908, App. B.4
"smooth sensitivity" and App. C, Theorem 23; Song 2018, PhD dissertation, §5.3.2, which cites it).

The data-dependent RDP β(x) = Σ_queries RDP_q(λ) of :mod:`dpbench.privacy.pate` depends on the teachers' votes x,
so it is itself private. GNSS releases β(x) + SS_β(x)·N(0, σ_ss²) at one order λ, where
SS_β(x) = max_{d ≥ 0} e^{−βd} A⁽ᵈ⁾(x) is a β-smooth upper bound on the local sensitivity (Nissim, Raskhodnikova and
Smith 2007, §2; Papernot et al. 2018, App. B.4) with A⁽ᵈ⁾(x) ≥ max_{y: d(x,y) ≤ d} LS(y). Two vote
histograms are at distance d when d teachers change their votes; per query each change moves one vote from a
class to another. The release costs (Papernot et al. 2018, Theorem 23), for 1 < λ < 1/(2β),

    RDP_GNSS(λ) = λ e^{2β}/σ_ss² + (βλ − ½ log(1 − 2λβ))/(λ − 1).

Local-sensitivity bounds (vectorised over queries and distances; rigorous given condition C5 below):

* GNMax (:func:`ls_gnmax`): β_q = RDP of Theorem 5.3.1 as a function of q̃ (:func:`dpbench.privacy.pate.rdp_gaussian`
  with :func:`~dpbench.privacy.pate.logq_gnmax`), non-decreasing in q̃ — condition C5 of Papernot et al. 2018,
  §B.4.2, checked numerically on the grid of :func:`gnmax_cells` (an error if it fails; between grid points,
  ~10⁻³ apart in log q̃, it is assumed).
  (i) One step: a neighbour of a vote vector with q̃ = q has q̃ in [B_L(q), B_U(q)], B_{U,L}(q) =
  (m − 1)·Φ̄(Φ̄⁻¹(q/(m − 1)) ∓ √2/σ) (the authors' Algorithm 3 / Prop. 13; Jensen on the concave/convex per-term
  maps), so LS(y) ≤ Λ(q̃(y)) = max(β(B_U(q)) − β(q), β(q) − β(B_L(q))), tabulated as a maximum per cell of a
  fine grid of log q̃ (:func:`gnmax_cells`).
  (ii) Distance d: d teachers move the top count by a ≤ d and add Σ_i b_i ≤ d votes to the other classes, so the
  gaps to the (possibly new) plurality class satisfy (g_i − d − b_i)⁺ ≤ g'_i ≤ g_i + 2d. Hence
  q̃ ≥ L(d) = Σ Φ̄((g_i + 2d)/(√2σ)) (a sub-sum: the r smallest gaps) and q̃ ≤ U(d) = Σ Φ̄((g_i − d)⁺/c) (c = √2σ) + the
  largest possible increase from the b_i: the whole ψ_i = Φ̄((g_i − 2d)⁺/c) − Φ̄((g_i − d)⁺/c) of every class with
  g_i < 2d, plus the largest ψ_i of the others (there ψ_i(b) is convex in b, so ≤ ψ_i(d)·b/d); gaps beyond the
  r-th are bounded by the (r+1)-th minus 2d; both capped at 1 − 1/m.
  (iii) A⁽ᵈ⁾ ≤ max Λ over the cells that [L(d), U(d)] meets (a range-maximum query). Unlike the authors'
  Algorithms 4-5, which walk one vote path, this needs no condition C6.
* Threshold step (:func:`ls_threshold`): β_q is a function of the rounded max vote v (Papernot et al. 2018, §4.1,
  §B.4.3); one teacher moves max_j n_j (or max_j (n_j − M p_j) for Interactive-GNMax) by ≤ 1, so
  A⁽ᵈ⁾ ≤ the largest one-step change |β(u+1) − β(u)| for u within d of v (one more step either side, and
  two-step changes, when the max vote is not an integer and rounding may jump).

The total over queries is A⁽ᵈ⁾_total = Σ_q A_q⁽ᵈ⁾ (one teacher changes its vote on every query at once; which
queries were answered is the mechanism's output, fixed). Distances are evaluated on a grid d_0 = 0 < d_1 < ... < D
(:func:`distance_grid`): since A⁽ᵈ⁾ is non-decreasing in d, SS_β ≤ max_j e^{−β(d_{j−1}+1)} A⁽ᵈʲ⁾_total, and beyond
D by e^{−β(D+1)} · Σ_q (data-independent RDP) (every β_q lies in [0, its data-independent bound]): a rigorous
upper bound.
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


def _sparse_table(x: np.ndarray) -> np.ndarray:
    """Levels of running maxima (level k, position i: max x[i..i + 2^k − 1], padded) for O(1) range-maximum
    queries (:func:`_range_max`). Shape (levels, len(x))."""
    x = np.asarray(x, dtype=np.float64)
    levels = [x]
    while 2 ** len(levels) <= x.size:
        p, h = levels[-1], 2 ** (len(levels) - 1)
        levels.append(np.r_[np.maximum(p[:-h], p[h:]), np.full(h, -np.inf)])
    return np.stack(levels)


def _range_max(table: np.ndarray, start, stop) -> np.ndarray:
    """max(x[start..stop]) (inclusive) elementwise over integer arrays ``start <= stop``."""
    start, stop = np.asarray(start, dtype=np.int64), np.asarray(stop, dtype=np.int64)
    k = np.floor(np.log2(stop - start + 1)).astype(np.int64)
    return np.maximum(table[k, start], table[k, stop - (1 << k) + 1])


def _log_bu(logq, sigma: float, m: int, sign: float) -> np.ndarray:
    """log of (m − 1)·Φ̄(Φ̄⁻¹(q/(m − 1)) ∓ √2/σ): the largest (sign = +1) / smallest (sign = −1) q̃ of a neighbour
    (one vote moved: every gap n_i* − n_i changes by ≤ 2) of a vote vector with q̃ = q. Per term
    x ↦ Φ̄(Φ̄⁻¹(x) − t) is concave and x ↦ Φ̄(Φ̄⁻¹(x) + t) convex, so Jensen's inequality puts the extremes at
    equal terms (Papernot et al. 2018, App. B.4, the functions B_U, B_L of their Algorithm 3 / Prop. 13)."""
    lm = math.log(m - 1)
    return lm + special.log_ndtr(special.ndtri_exp(np.asarray(logq, dtype=np.float64) - lm)
                                 + sign * math.sqrt(2.0) / sigma)


@dataclasses.dataclass
class _Cells:
    lo: float
    h: float
    n: int
    levels: np.ndarray


def gnmax_cells(sigma: float, order: float, classes: int, n: int = 20000) -> _Cells:
    """Λ per cell of a uniform grid of log q̃ from ``lo`` to the cap log(1 − 1/m): for vote vectors y with
    log q̃(y) in cell [ℓ_j, ℓ_{j+1}], LS(y) ≤ max(β(B_U(ℓ_{j+1})) − β(ℓ_j), β(ℓ_{j+1}) − β(B_L(ℓ_j))) (β the
    data-dependent RDP of GNMax at ``order``, non-decreasing in q̃ — condition C5, checked on the grid — and
    :func:`_log_bu`); cell 0 is (−inf, ℓ_0] (β ≥ 0). Raises if C5 fails on the grid."""
    cap = math.log(1.0 - 1.0 / classes)
    lo = max(-700.0, -(4.0 * ((order + 1.0) / sigma) ** 2 + 50.0))
    grid = np.linspace(lo, cap, n + 1)
    b = _beta_gn(grid, sigma, order)
    if np.any(np.diff(b) < -1e-12 * np.maximum(1.0, np.abs(b[1:]))):
        raise ValueError(f"GNMax's data-dependent RDP is not monotone in q at sigma={sigma}, order={order}")
    up = _beta_gn(np.minimum(_log_bu(grid, sigma, classes, 1.0), cap), sigma, order)
    dn = _beta_gn(np.minimum(_log_bu(grid, sigma, classes, -1.0), cap), sigma, order)
    lam = np.maximum(up[1:] - b[:-1], b[1:] - dn[:-1])
    lam = np.r_[max(up[0], b[0]), lam]
    return _Cells(float(lo), float(grid[1] - grid[0]), n, _sparse_table(np.maximum(lam, 0.0)))


def check_monotone(sigma: float, order: float, classes: int, points: int = 4000) -> bool:
    """Condition C5 (Papernot et al. 2018, §B.4.2): the data-dependent RDP of GNMax at ``order`` is non-decreasing
    in q̃ on a log-grid from −(4((λ + 1)/σ)² + 50) to the cap log(1 − 1/m)."""
    try:
        gnmax_cells(sigma, order, classes, points)
    except ValueError:
        return False
    return True


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
    args = (g + 2.0 * dd, np.maximum(g - dd, 0.0), np.maximum(g - 2.0 * dd, 0.0))
    if np.all(v == np.round(v)):                 # integer votes: Φ̄(n/c) from a table of the integers n
        table = special.ndtr(-np.arange(int(np.max(args[0])) + 1) / c)
        lo_t, t1, t2 = (table[x.astype(np.int64)] for x in args)
    else:
        lo_t, t1, t2 = (special.ndtr(-x / c) for x in args)
    low = np.sum(lo_t[..., :r], axis=-1)         # L: a sub-sum (the r smallest gaps, each + 2d)
    psi = t2[..., :r] - t1[..., :r]              # what moving up to d more votes into class i adds
    clipped = g[..., :r] < 2.0 * dd              # classes whose gap can close: the whole ψ_i counts
    first = np.argmax(~clipped, axis=-1)[..., None]
    convex = np.where(np.any(~clipped, axis=-1), np.take_along_axis(psi, first, axis=-1)[..., 0], 0.0)
    up = np.sum(t1[..., :r], axis=-1) + np.sum(np.where(clipped, psi, 0.0), axis=-1) + convex
    if m - 1 > r:                                # the other gaps, each bounded by the (r+1)-th with − 2d
        up = up + (m - 1 - r) * t2[..., r]
    cap = math.log(1.0 - 1.0 / m)
    with np.errstate(divide="ignore"):
        return np.minimum(np.log(low), cap), np.minimum(np.log(up), cap)


def ls_gnmax(votes, sigma: float, order: float, distances, weights=None, chunk_cells: int = 2_000_000):
    """A⁽ᵈ⁾ per query for GNMax's data-dependent RDP at ``order``: shape (Q, len(distances)); with ``weights``
    (Q,), the weighted sum over queries (len(distances),), computed in chunks of queries: the largest Λ
    (:func:`gnmax_cells`) over the cells that [L(d), U(d)] meets. Raises if condition C5 fails."""
    v = P._votes(votes)
    cells = gnmax_cells(sigma, order, v.shape[1])
    d = np.asarray(distances, dtype=np.float64)
    k = d.size
    step = max(1, chunk_cells // (k * min(TOP_GAPS + 1, v.shape[1])))
    parts = []
    for s in range(0, len(v), step):
        lo, up = _logq_bounds(v[s:s + step], sigma, d)
        j = [np.clip(np.floor((x - cells.lo) / cells.h), -1, cells.n - 1).astype(np.int64) + 1 for x in (lo, up)]
        a = _range_max(cells.levels, j[0], j[1])
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
    levels = _sparse_table(jump)
    ur, inv = np.unique(r, return_inverse=True)
    start = (ur[:, None] - d[None, :] - extra - step) - lo_v         # jumps starting in [v − d − e − s, v + d + e]
    stop = (ur[:, None] + d[None, :] + extra) - lo_v
    out = _range_max(levels, start, stop)
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


def distance_grid(teachers: int, beta_min: float, tail: float = 12.0, slack: float = 0.05) -> np.ndarray:
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
