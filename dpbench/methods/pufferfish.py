"""Pufferfish privacy mechanisms for correlated data (song2018 ch. 7; Song, Wang & Chaudhuri, SIGMOD 2017).

Source: S. Song, "Privacy-Preserving Algorithms for Machine Learning", PhD dissertation, UC San Diego, 2018
(Song 2018), chapter 7: §7.3 (Wasserstein Mechanism), §7.4 (Markov Quilt Mechanism), §7.6 (experiments);
reconstructions and deviations in docs/studies/song2018.md#pufferfish-mechanisms. Everything here is plain
numpy and works on arrays:

* :func:`winf_distance`, :func:`wasserstein_scale` — the ∞-Wasserstein mechanism (Alg. 6, eq. 7.1).
* :func:`mqm_scale` — the Markov Quilt Mechanism in general form (Alg. 7) from per-node quilt tables.
* :func:`mqm_exact` — MQMExact for Markov chains (Alg. 8, max-influence of eq. 7.3, quilt set of Lemma 7.4.4
  restricted to card(X_N) ≤ ℓ). ``q=None`` means "every initial distribution" (the vertex argument,
  docs/studies/song2018.md#quilt-sets-and-initial-distributions).
* :func:`mqm_exact_stationary` — the same for one chain θ = (π, P) started in its stationary distribution
  (the real-data setting): the influence of {X_{i−a}, X_{i+b}} depends on (a, b) only, so one (ℓ × ℓ) table
  serves every node and every chain length (Song 2018, §7.4.3.1, the remark closing 'Running Time Analysis').
* :func:`mqm_approx` — MQMApprox (Alg. 9) with the bound of Lemma 7.4.6, its one-sided analogues and a
  reversible-chain variant (both RECONSTRUCTED: the thesis defers them to the full paper; derivation below),
  ℓ from Lemma 7.4.7 (:func:`lemma_7_4_7`).
* :func:`group_dp_scale`, :func:`gk16_norm` / :func:`gk16_scale` — the GroupDP and GK16 baselines.

Conventions: nodes are 1-based (X_1..X_T) in every returned quilt, as in the thesis. A chain class is given by
transition matrices; the secret pairs are (X_i = x, X_i = x') for every node and every pair of values with
positive probability (Def. 2.4.1). The released value is F(X) + L·σ_max·Lap(1) per coordinate, F L-Lipschitz
in L1 (Song 2018, Alg. 7 and the "Vector-Valued Functions" remark after it, §7.4.2).

Derivation of the approximate bounds (used for MQMApprox; checked numerically against (7.3) in the tests).
For a chain with stationary π and any initial distribution, P(X_{i+b}=y|X_i=x)/P(X_{i+b}=y|X_i=x') =
Pᵇ(x,y)/Pᵇ(x',y) and P(X_{i−a}=z|X_i=x)/P(X_{i−a}=z|X_i=x') ≤ max_w Pᵃ(z,x)Pᵃ(w,x')/(Pᵃ(w,x)Pᵃ(z,x')).
If |Pᵈ(u,y)/π(y) − 1| ≤ δ_d/π_min for all u, y, both ratios are bounded by ρ(δ) = (π_min + δ)/(π_min − δ):
once forward, twice backward — the 1 + 2 structure of Lemma 7.4.6. For any chain δ_d = (1 − g)^{d/2} ≤
e^{−g·d/2} with g the eigengap of P P* (singular values of P in L²(π)), which is Lemma 7.4.6; for a reversible
chain δ_d = |λ*|^d ≤ e^{−g_rev·d} with g_rev = 1 − |λ*| and λ* the second-largest |eigenvalue| of P (the
"tighter bound for reversible chains"). A denominator ≤ 0 means no bound (influence ∞).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "MQMResult",
    "stationary_distribution",
    "time_reversal",
    "eigengap",
    "reversible_gap",
    "class_parameters",
    "matrix_powers",
    "winf_distance",
    "wasserstein_scale",
    "flu_conditionals",
    "mqm_scale",
    "chain_influence_terms",
    "max_influence_chain",
    "mqm_exact",
    "mqm_exact_stationary",
    "approx_influence",
    "lemma_7_4_7",
    "mqm_approx",
    "group_dp_scale",
    "gk16_influences",
    "gk16_matrix",
    "gk16_norm",
    "gk16_scale",
    "laplace_release",
]

_CHUNK = 4_000_000  # elements per temporary array in the chunked max-plus products


# ---------------------------------------------------------------------------------------------------------
# Markov-chain helpers
# ---------------------------------------------------------------------------------------------------------


def _check_stochastic(P) -> np.ndarray:
    P = np.asarray(P, dtype=float)
    if P.ndim != 2 or P.shape[0] != P.shape[1] or P.shape[0] < 1:
        raise ValueError(f"a transition matrix must be square, got shape {P.shape}")
    if (P < 0).any() or not np.allclose(P.sum(axis=1), 1.0, atol=1e-9):
        raise ValueError("a transition matrix must have non-negative rows summing to 1")
    return P


def stationary_distribution(P) -> np.ndarray:
    """The stationary distribution π (πP = π, Σπ = 1) of an irreducible transition matrix (least squares)."""
    P = _check_stochastic(P)
    k = P.shape[0]
    A = np.vstack([P.T - np.eye(k), np.ones((1, k))])
    b = np.zeros(k + 1)
    b[-1] = 1.0
    pi = np.linalg.lstsq(A, b, rcond=None)[0]
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()


def time_reversal(P, pi=None) -> np.ndarray:
    """P*(x, y) = P(y, x)π(y)/π(x) (Def. 7.4.5)."""
    P = _check_stochastic(P)
    pi = stationary_distribution(P) if pi is None else np.asarray(pi, float)
    return P.T * pi[None, :] / pi[:, None]


def eigengap(P) -> float:
    """g_θ = min{1 − |λ| : λ eigenvalue of P P*, |λ| < 1} (eq. 7.5); 0 if there is no such eigenvalue."""
    P = _check_stochastic(P)
    lam = np.abs(np.linalg.eigvals(P @ time_reversal(P)))
    lam = lam[lam < 1 - 1e-12]
    return float(1 - lam.max()) if lam.size else 1.0


def reversible_gap(P) -> float:
    """1 − |λ*| with λ* the second-largest eigenvalue of P in modulus (absolute spectral gap)."""
    P = _check_stochastic(P)
    lam = np.sort(np.abs(np.linalg.eigvals(P)))[::-1]
    return float(1 - lam[1]) if lam.size > 1 else 1.0


def class_parameters(Ps, bound: str = "general") -> tuple[float, float]:
    """(π_Θ^min, g_Θ) of a class of transition matrices (eqs. 7.4, 7.5); ``bound="reversible"`` uses
    :func:`reversible_gap` instead of the eigengap of P P*."""
    gap = reversible_gap if bound == "reversible" else eigengap
    pis = [stationary_distribution(P).min() for P in Ps]
    gs = [gap(P) for P in Ps]
    return float(min(pis)), float(min(gs))


def matrix_powers(P, n: int) -> np.ndarray:
    """Array of shape (n + 1, k, k) holding P⁰ = I, P¹, …, Pⁿ (precomputed once, reused by every quilt)."""
    P = np.asarray(P, float)
    out = np.empty((n + 1,) + P.shape)
    out[0] = np.eye(P.shape[0])
    for d in range(1, n + 1):
        out[d] = out[d - 1] @ P
    return out


def _log(x):
    with np.errstate(divide="ignore"):
        return np.log(x)


def _max_log_ratio(num, den, axis):
    """max over ``axis`` of log(num/den); x/0 → +inf, 0/0 terms are ignored (they never occur)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        d = _log(num) - _log(den)
    d = np.where((num == 0) & (den == 0), -np.inf, d)
    return d.max(axis=axis)


def _max_diff(lnum, lden, axis):
    """max over ``axis`` of lnum − lden for log-probabilities; −inf − (−inf) (a 0/0 ratio) is ignored."""
    with np.errstate(invalid="ignore"):
        r = np.fmax.reduce(lnum - lden, axis=axis)
    return np.where(np.isnan(r), -np.inf, r)


# ---------------------------------------------------------------------------------------------------------
# Wasserstein mechanism (Alg. 6)
# ---------------------------------------------------------------------------------------------------------


def winf_distance(support, mu, nu) -> float:
    """∞-Wasserstein distance between two distributions on the same finite support of reals (eq. 7.1).

    In one dimension W∞(μ, ν) = sup_{u∈(0,1)} |F_μ⁻¹(u) − F_ν⁻¹(u)|; the quantile functions are piecewise
    constant between the cumulative probabilities of μ and ν, so it suffices to evaluate one u per piece.
    """
    s = np.asarray(support, float)
    order = np.argsort(s)
    s = s[order]
    mu = np.asarray(mu, float)[order]
    nu = np.asarray(nu, float)[order]
    for name, p in (("mu", mu), ("nu", nu)):
        if (p < 0).any() or not math.isclose(p.sum(), 1.0, abs_tol=1e-9):
            raise ValueError(f"{name} must be a probability vector")
    cm, cn = np.cumsum(mu), np.cumsum(nu)
    cm[-1] = cn[-1] = 1.0
    br = np.unique(np.concatenate([[0.0, 1.0], cm, cn]))
    mid = 0.5 * (br[:-1] + br[1:])
    tol = 1e-12
    qm = s[np.minimum(np.searchsorted(cm, mid - tol), len(s) - 1)]
    qn = s[np.minimum(np.searchsorted(cn, mid - tol), len(s) - 1)]
    return float(np.max(np.abs(qm - qn)))


def wasserstein_scale(conditionals) -> float:
    """W of Alg. 6: the largest W∞ between P(F(X)|s_i, θ) and P(F(X)|s_j, θ) over the given
    (support, μ_i, μ_j) triples — one per secret pair and θ with P(s_i|θ), P(s_j|θ) ≠ 0. Release
    F(D) + Lap(W/ε)."""
    return max(winf_distance(s, m, n) for s, m, n in conditionals)


def flu_conditionals(p_count) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The flu example (Song 2018, §7.3.1, the Example after Alg. 6): n exchangeable people (a clique), P(N = j)
    given for j = 0..n. Returns (support, P(N | X_i = 0), P(N | X_i = 1)) with P(X_i = 1 | N = j) = j/n."""
    p = np.asarray(p_count, float)
    n = len(p) - 1
    j = np.arange(n + 1)
    p1 = p * j / n
    p0 = p * (n - j) / n
    return j.astype(float), p0 / p0.sum(), p1 / p1.sum()


# ---------------------------------------------------------------------------------------------------------
# Markov Quilt Mechanism, general form (Alg. 7)
# ---------------------------------------------------------------------------------------------------------


def _scores(card, influence, eps):
    """σ(X_Q) = card(X_N)/(ε − e) if e < ε else ∞ (Alg. 7), elementwise."""
    card = np.asarray(card, float)
    e = np.asarray(influence, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = card / (eps - e)
    return np.where(e < eps, s, np.inf)


def mqm_scale(cards, influences, eps: float, valid=None) -> tuple[float, int, int]:
    """Alg. 7 on explicit tables: ``cards[i, j]`` = card(X_N) and ``influences[i, j]`` = e_Θ(X_Q|X_i) of quilt j
    of node i (pad with influence = inf). Each node's set must contain the trivial quilt (card n, influence 0)
    for the ε-Pufferfish guarantee (Thm 7.4.3). ``valid[i]`` = False skips a node (no secret pair).

    Returns (σ_max, argmax node index, index of that node's best quilt); release F + L·σ_max·Lap(1).
    """
    s = _scores(cards, influences, float(eps))
    best = s.min(axis=1)
    if valid is not None:
        best = np.where(np.asarray(valid, bool), best, -np.inf)
    i = int(np.argmax(best))
    return float(best[i]), i, int(np.argmin(s[i]))


@dataclass
class MQMResult:
    """Outcome of a Markov-quilt search: the Laplace scale per unit of L and where it is attained."""

    sigma_max: float              # max_i min_Q σ(X_Q); the noise is L·sigma_max·Lap(1)
    node: int                     # 1-based node attaining sigma_max (position in its chain)
    quilt: tuple                  # 1-based nodes of its best Markov quilt, () = trivial quilt
    card: int                     # card(X_N) of that quilt
    influence: float              # its max-influence (exact or the upper bound)
    ell: int                      # the quilt-size bound ℓ used (card(X_N) ≤ ℓ, plus the trivial quilt)
    chain_length: int             # length of the chain holding that node
    theta: int = 0                # index of the θ (transition matrix) attaining the max
    extra: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------------------
# Max-influence for Markov chains, eq. (7.3)
# ---------------------------------------------------------------------------------------------------------


def chain_influence_terms(P, n: int):
    """The two transition terms of (7.3) for distances d = 0..n, as arrays of shape (n+1, k, k):

    * ``back[d, x, x'] = max_z log Pᵈ(z, x)/Pᵈ(z, x')`` — the X_{i−a} term, maximised over ALL states z,
      including states of zero marginal probability (needed to reproduce the running example's 13.0219, Song 2018,
      §7.4.3.1; restricted to reachable states it gives 12.9341);
    * ``fwd[d, x, x'] = max_y log Pᵈ(x, y)/Pᵈ(x', y)`` — the X_{i+b} term.

    Computed from precomputed matrix powers in chunks of distances (O(n k³)).
    """
    P = _check_stochastic(P)
    k = P.shape[0]
    Pw = matrix_powers(P, n)
    back = np.empty((n + 1, k, k))
    fwd = np.empty((n + 1, k, k))
    step = max(1, _CHUNK // max(1, k ** 3))
    for lo in range(0, n + 1, step):
        W = _log(Pw[lo:lo + step])
        back[lo:lo + step] = _max_diff(W[:, :, :, None], W[:, :, None, :], axis=1)
        fwd[lo:lo + step] = _max_diff(W[:, :, None, :], W[:, None, :, :], axis=3)
    return back, fwd, Pw


def _node_priors(Pw, q, T: int):
    """Prior term log P(X_i = x')/P(X_i = x) of (7.3) for i = 1..T, shape (T, k, k) (0 off the secret pairs),
    and the mask of secret pairs (x ≠ x', both of positive probability). ``q=None``: supremum over every
    initial distribution — the term is linear-fractional in q, so the sup is at a vertex:
    max_z log P^{i−1}(z, x')/P^{i−1}(z, x) (our substitute for the thesis's unstated 'optimization procedure in the
    full paper', Song 2018, §7.6.2; docs/studies/song2018.md#quilt-sets-and-initial-distributions)."""
    k = Pw.shape[1]
    off = ~np.eye(k, dtype=bool)
    if q is None:
        W = Pw[:T]                                   # P^{i-1}, i = 1..T
        prior = _max_log_ratio(W[:, :, None, :], W[:, :, :, None], axis=1)  # [i, x, x'] over z
        support = W.max(axis=1) > 0                  # x reachable from some initial state
    else:
        q = np.asarray(q, float)
        if q.shape != (k,) or (q < 0).any() or not math.isclose(q.sum(), 1.0, abs_tol=1e-9):
            raise ValueError("q must be a probability vector over the k states")
        mu = np.einsum("z,izx->ix", q, Pw[:T])       # marginal of X_i
        lm = _log(mu)
        with np.errstate(invalid="ignore"):
            prior = lm[:, None, :] - lm[:, :, None]
        support = mu > 0
    secret = support[:, :, None] & support[:, None, :] & off[None]
    return np.where(secret, prior, 0.0), secret


def max_influence_chain(P, T: int, i: int, a: int | None, b: int | None, q=None) -> float:
    """e_{θ}(X_Q | X_i) of (7.3) for one quilt of node ``i`` (1-based): X_Q = {X_{i−a}, X_{i+b}}; ``a=None`` or
    ``b=None`` for a one-sided quilt ({X_{i+b}}: the X_{i+b} term only; {X_{i−a}}: prior and X_{i−a} terms).
    ``q=None``: supremum over all initial distributions. Reference implementation (no search); 0 for a node
    without a secret pair."""
    n = max(a or 0, b or 0, i)
    back, fwd, Pw = chain_influence_terms(P, n)
    prior, secret = _node_priors(Pw, q, i)
    pr, ok = prior[i - 1], secret[i - 1]
    if not ok.any():
        return 0.0
    terms = [np.zeros_like(pr)]
    if a is not None:
        terms += [pr, back[a]]
    if b is not None:
        terms += [fwd[b]]
    return float(np.where(ok, _add(*terms), -np.inf).max())


def _add(*terms):
    """Sum of influence terms where ∞ − ∞ (an undefined ratio) counts as +∞: never under-estimates."""
    with np.errstate(invalid="ignore"):
        s = sum(terms[1:], terms[0])
    return np.where(np.isnan(s), np.inf, s)


def _maxplus(A, B):
    """C[i, j] = max_p (A[i, p] + B[j, p]) in chunks of rows (a max-plus matrix product)."""
    n, K = A.shape
    m = B.shape[0]
    out = np.full((n, m), -np.inf)
    step = max(1, _CHUNK // max(1, m * K))
    plain = not (np.isneginf(A).any() or np.isneginf(B).any())   # then no ∞ − ∞ can occur
    for lo in range(0, n, step):
        if plain:
            out[lo:lo + step] = (A[lo:lo + step, None, :] + B[None, :, :]).max(axis=2)
        else:
            out[lo:lo + step] = _add(A[lo:lo + step, None, :], B[None, :, :]).max(axis=2)
    return out


def _maxplus_pruned(G, F, sample: int = 24, blocks: int = 32):
    """Exact max-plus product C[a, b] = max_p (G[a, p] + F[b, p]) for many columns p (secret pairs).

    Branch and bound: the pairs attaining the max on a coarse (a, b) grid and in every row give a lower bound
    C_low. The remaining pairs, split into blocks, contribute at most max_blocks (max_{p∈block} G[a, p] +
    max_{p∈block} F[b, p]); only the cells where that bound exceeds C_low are recomputed over every pair, so
    the result equals the full product (tested) at a fraction of its cost.
    """
    n, K = G.shape
    m = F.shape[0]
    if K <= 64 or n * m * K <= 4 * _CHUNK:
        return _maxplus(G, F)
    ia = np.unique(np.linspace(0, n - 1, sample).astype(int))
    ib = np.unique(np.linspace(0, m - 1, sample).astype(int))
    coarse = _add(G[ia, None, :], F[None, ib, :]).reshape(-1, K)
    S = np.unique(np.concatenate([coarse.argmax(axis=1), G.argmax(axis=1), F.argmax(axis=1)]))
    low = _maxplus(G[:, S], F[:, S])
    rest = np.setdiff1d(np.arange(K), S)
    if rest.size == 0:
        return low
    order = rest[np.argsort(np.nan_to_num(G[:, rest].max(axis=0) + F[:, rest].max(axis=0), posinf=1e300))]
    parts = np.array_split(order, min(blocks, order.size))
    Gb = np.stack([G[:, q].max(axis=1) for q in parts], axis=1)
    Fb = np.stack([F[:, q].max(axis=1) for q in parts], axis=1)
    ra, rb = np.nonzero(low < _maxplus(Gb, Fb))
    step = max(1, _CHUNK // K)
    plain = not (np.isneginf(G).any() or np.isneginf(F).any())
    for lo in range(0, ra.size, step):
        a, b = ra[lo:lo + step], rb[lo:lo + step]
        low[a, b] = (G[a] + F[b]).max(axis=1) if plain else _add(G[a], F[b]).max(axis=1)
    return low


def _eps_list(eps):
    out = [float(e) for e in np.atleast_1d(eps)]
    if any(not e > 0 for e in out):
        raise ValueError(f"epsilon must be > 0, got {eps!r}")
    return out


def _exact_one_theta(P, T: int, q, eps_list, ell: int) -> dict:
    """Alg. 8 for one transition matrix and one q (or every q): {ε: (σ_max, details of the worst node)}."""
    k = P.shape[0]
    back, fwd, Pw = chain_influence_terms(P, T)
    prior, secret = _node_priors(Pw, q, T)
    pairs = ~np.eye(k, dtype=bool).ravel()
    K = int(pairs.sum())
    Bf = back.reshape(T + 1, k * k)[:, pairs]          # [a, p]
    Ff = fwd.reshape(T + 1, k * k)[:, pairs]           # [b, p]
    Pr = prior.reshape(T, k * k)[:, pairs]             # [i-1, p]
    Sp = secret.reshape(T, k * k)[:, pairs]            # secret pair p at node i
    node_ok = Sp.any(axis=1)
    nodes = np.arange(1, T + 1)
    A = min(T - 1, ell)                                # a, b ∈ 1..A (card = a + b − 1 ≤ ℓ ⇒ a, b ≤ ℓ)
    ai = np.arange(1, A + 1)
    card2 = ai[:, None] + ai[None, :] - 1
    # one-sided quilts: {X_{i+b}} (the X_{i+b} term only) and {X_{i−a}} (prior + X_{i−a} terms), each maximised
    # over the node's secret pairs only
    ef = (np.where(Sp[:, None, :], Ff[None, 1:A + 1, :], -np.inf).max(axis=2) if A else np.zeros((T, 0)))
    eb = (np.where(Sp[:, None, :], _add(Pr[:, None, :], Bf[None, 1:A + 1, :]), -np.inf).max(axis=2)
          if A else np.zeros((T, 0)))
    best = {e: [np.full(T, np.inf), np.zeros(T, int), np.zeros(T, int), np.zeros(T, int)] for e in eps_list}
    if A:  # two-sided quilts {X_{i−a}, X_{i+b}}: the (node, a, b) cube, vectorised in node chunks
        step = max(1, _CHUNK // max(1, A * A * K))
        for lo in range(0, T, step):
            idx = np.arange(lo, min(T, lo + step))
            e2 = np.full((len(idx), A, A), -np.inf)
            for p in range(K):                           # K = k(k−1): 2 for binary chains
                v = _add(Pr[idx, p, None, None], Bf[1:A + 1, p][None, :, None], Ff[1:A + 1, p][None, None, :])
                np.maximum(e2, np.where(Sp[idx, p, None, None], v, -np.inf), out=e2)
            allowed = ((ai[None, :, None] <= nodes[idx, None, None] - 1)
                       & (ai[None, None, :] <= T - nodes[idx, None, None])
                       & (card2[None] <= ell))
            for e in eps_list:
                s = np.where(allowed, _scores(card2[None], e2, e), np.inf).reshape(len(idx), -1)
                j = s.argmin(axis=1)
                bs, ba, bb, kind = best[e]
                bs[idx] = s[np.arange(len(idx)), j]
                ba[idx], bb[idx], kind[idx] = j // A + 1, j % A + 1, 2
    out = {}
    rows = np.arange(T)
    for e in eps_list:
        bs, ba, bb, kind = best[e]
        if A:
            cf = nodes[:, None] + ai[None, :] - 1                                  # card of {X_{i+b}}
            sf = np.where((ai[None, :] <= T - nodes[:, None]) & (cf <= ell), _scores(cf, ef, e), np.inf)
            jf = sf.argmin(axis=1)
            take = sf[rows, jf] < bs
            bs[take], ba[take], bb[take], kind[take] = sf[rows, jf][take], 0, jf[take] + 1, 1
            cb = T - nodes[:, None] + ai[None, :]                                  # card of {X_{i−a}}
            sb = np.where((ai[None, :] <= nodes[:, None] - 1) & (cb <= ell), _scores(cb, eb, e), np.inf)
            jb = sb.argmin(axis=1)
            take = sb[rows, jb] < bs
            bs[take], ba[take], bb[take], kind[take] = sb[rows, jb][take], jb[take] + 1, 0, -1
        take = T / e < bs                                                           # trivial quilt
        bs[take], ba[take], bb[take], kind[take] = T / e, 0, 0, 0
        sig = np.where(node_ok, bs, -np.inf)
        i = int(np.argmax(sig))
        node, a, b, kd = i + 1, int(ba[i]), int(bb[i]), int(kind[i])
        if kd == 2:
            infl = float(np.where(Sp[i], _add(Pr[i], Bf[a], Ff[b]), -np.inf).max())
            det = dict(node=node, quilt=(node - a, node + b), card=a + b - 1, influence=infl)
        elif kd == 1:
            det = dict(node=node, quilt=(node + b,), card=node + b - 1, influence=float(ef[i, b - 1]))
        elif kd == -1:
            det = dict(node=node, quilt=(node - a,), card=T - node + a, influence=float(eb[i, a - 1]))
        else:
            det = dict(node=node, quilt=(), card=T, influence=0.0)
        out[e] = (float(sig[i]), det)
    return out


def _result(sig, det, ell, T, theta=0, **extra) -> MQMResult:
    return MQMResult(sigma_max=sig, node=det["node"], quilt=tuple(det["quilt"]), card=int(det["card"]),
                     influence=float(det["influence"]), ell=int(ell), chain_length=int(T), theta=theta,
                     extra=extra)


def mqm_exact(thetas, T: int, eps, ell: int | None = None):
    """MQMExact (Alg. 8) for a class Θ of chains of length T.

    ``thetas`` is a list of (q, P): q a probability vector, or None for "every initial distribution" with that
    P (the sup of (7.3) over the simplex, attained at a vertex, see :func:`_node_priors`). Max-influence from
    (7.3) with the X_{i−a} term maximised over all states; the quilt set is Lemma 7.4.4's {X_{i−a}, X_{i+b}},
    {X_{i−a}}, {X_{i+b}} with card(X_N) ≤ ℓ (ℓ bounds the size of the local set X_N, Song 2018, §7.4.3.2, text
    before Lemma 7.4.7; Alg. 8's printed quilt set mixes < and ≤), plus the trivial quilt (card T, e = 0).
    Nodes without a secret pair (single-point marginal support) are skipped. σ_max = max over θ of
    max_i min_Q σ(X_Q). Cost O(T·ℓ²·k²) per θ, vectorised over (node, a, b).

    Returns an :class:`MQMResult` (or a list of them, one per ε, if ``eps`` is a sequence).
    """
    T = int(T)
    if T < 1:
        raise ValueError(f"T must be >= 1, got {T}")
    ell = T if ell is None else int(ell)
    if ell < 1:
        raise ValueError(f"ell must be >= 1, got {ell}")
    eps_list = _eps_list(eps)
    best = {e: None for e in eps_list}
    for t, (q, P) in enumerate(thetas):
        res = _exact_one_theta(_check_stochastic(P), T, q, eps_list, ell)
        for e in eps_list:
            sig, det = res[e]
            if best[e] is None or sig > best[e].sigma_max:
                best[e] = _result(sig, det, ell, T, theta=t)
    out = [best[e] for e in eps_list]
    return out if np.ndim(eps) else out[0]


# ---------------------------------------------------------------------------------------------------------
# Stationary chains: one (a, b) table for every node and every chain length
# ---------------------------------------------------------------------------------------------------------


def _prefix_tables(e2, ef, eb, ell: int, eps: float):
    """Running minima of the quilt scores used by :func:`_search_tables` (tables of size (ℓ + 1)²)."""
    ar = np.arange(ell + 1)
    card2 = ar[:, None] + ar[None, :] - 1
    s2 = np.where((card2 <= ell) & (ar[:, None] >= 1) & (ar[None, :] >= 1), _scores(card2, e2, eps), np.inf)
    M2 = np.minimum.accumulate(np.minimum.accumulate(s2, axis=0), axis=1)
    c1 = ar[:, None] + ar[None, :]                       # card of a one-sided quilt: L + b (or R + a)
    ok1 = (ar[None, :] >= 1) & (c1 <= ell)
    FW = np.minimum.accumulate(np.where(ok1, _scores(c1, ef[None, :], eps), np.inf), axis=1)
    BW = np.minimum.accumulate(np.where(ok1, _scores(c1, eb[None, :], eps), np.inf), axis=1)
    return M2, FW, BW


def _search_tables(e2, ef, eb, ell: int, lengths, eps: float, prefix=None):
    """σ_max over every node of chains with the given lengths, when the influences depend on (a, b) only.

    ``e2[a, b]``, ``ef[b]``, ``eb[a]`` (index 0 unused, arrays of size ℓ + 1) are the influences of
    {X_{i−a}, X_{i+b}}, {X_{i+b}}, {X_{i−a}}. Node i of a chain of length n has L = i − 1 nodes on its left and
    R = n − i on its right; its options are two-sided quilts with a ≤ L, b ≤ R, forward-only (card L + b),
    backward-only (card R + a), each with card ≤ ℓ, and the trivial quilt (card n). Two-sided minima over
    a ≤ A, b ≤ B come from a 2-D running minimum; only nodes within ℓ of an end and one interior node need
    evaluating. Returns (σ_max, (n, L) of the worst node).
    """
    m = ell
    M2, FW, BW = prefix if prefix is not None else _prefix_tables(e2, ef, eb, ell, eps)
    best = (-np.inf, None)
    for n in np.unique(np.asarray(lengths, int)):
        n = int(n)
        span = np.arange(min(n, m + 1))
        L = np.unique(np.concatenate([span, n - 1 - span, [(n - 1) // 2]]))
        R = n - 1 - L
        Lc, Rc = np.minimum(L, m), np.minimum(R, m)
        s = np.minimum(M2[Lc, Rc], n / eps)
        s = np.minimum(s, np.where(L < m, FW[Lc, Rc], np.inf))
        s = np.minimum(s, np.where(R < m, BW[Rc, Lc], np.inf))
        j = int(np.argmax(s))
        if s[j] > best[0]:
            best = (float(s[j]), (n, int(L[j])))
    return best


def _node_quilt(e2, ef, eb, ell, n, L, eps) -> dict:
    """The best quilt of the node with L nodes on its left in a chain of length n (for reporting)."""
    R = n - 1 - L
    i = L + 1
    cands = [(n / eps, (), n, 0.0)]
    for a in range(1, min(L, ell) + 1):
        bmax = min(R, ell + 1 - a)
        if bmax >= 1:
            b = np.arange(1, bmax + 1)
            s = _scores(a + b - 1, e2[a, b], eps)
            j = int(np.argmin(s))
            cands.append((float(s[j]), (i - a, i + int(b[j])), a + int(b[j]) - 1, float(e2[a, b[j]])))
    bmax = min(R, ell - L)
    if bmax >= 1:
        b = np.arange(1, bmax + 1)
        s = _scores(L + b, ef[b], eps)
        j = int(np.argmin(s))
        cands.append((float(s[j]), (i + int(b[j]),), L + int(b[j]), float(ef[b[j]])))
    amax = min(L, ell - R)
    if amax >= 1:
        a = np.arange(1, amax + 1)
        s = _scores(R + a, eb[a], eps)
        j = int(np.argmin(s))
        cands.append((float(s[j]), (i - int(a[j]),), R + int(a[j]), float(eb[a[j]])))
    _, quilt, card, infl = min(cands, key=lambda c: c[0])
    return dict(node=i, quilt=quilt, card=card, influence=infl)


def stationary_influence_tables(P, pi, ell: int):
    """(7.3) influences of a chain started in its stationary distribution π, as tables over distances up to ℓ:
    (e2[a, b], ef[b], eb[a]) for {X_{i−a}, X_{i+b}}, {X_{i+b}}, {X_{i−a}}. With every marginal equal to π the
    prior term is log π(x')/π(x) for every node; e2 is an exact, pruned max-plus product over the secret pairs."""
    P = _check_stochastic(P)
    pi = np.asarray(pi, float)
    k = P.shape[0]
    back, fwd, _ = chain_influence_terms(P, ell)
    lp = _log(pi)
    pairs = (~np.eye(k, dtype=bool) & (pi[:, None] > 0) & (pi[None, :] > 0)).ravel()
    with np.errstate(invalid="ignore"):
        prior = (lp[None, :] - lp[:, None]).ravel()[pairs]                    # log π(x')/π(x)
    G = _add(prior[None, :], back.reshape(ell + 1, -1)[:, pairs])             # [a, p]
    F = fwd.reshape(ell + 1, -1)[:, pairs]                                    # [b, p]
    return _maxplus_pruned(G, F), F.max(axis=1), G.max(axis=1)


def mqm_exact_stationary(P, lengths, eps, ell: int, pi=None, tables=None):
    """MQMExact (Alg. 8) for Θ = {(π, P)}: chains (segments) of the given lengths, each started in the stationary
    distribution π of P, all independent (a node's quilts stay inside its own chain; Song 2018, §7.6.3,
    §7.6.3.1).

    With q = π every marginal is π, so the influence of {X_{i−a}, X_{i+b}} depends on (a, b) only (Song 2018,
    §7.4.3.1): one table of e(a, b) for a, b ≤ ℓ (O(ℓ²k²)) serves every node of every chain. ``tables`` may pass
    the output of :func:`stationary_influence_tables` for any ℓ' ≥ ℓ (e.g. shared by every person of a group).
    Returns an :class:`MQMResult` (or a list, one per ε).
    """
    P = _check_stochastic(P)
    pi = stationary_distribution(P) if pi is None else np.asarray(pi, float)
    ell = int(ell)
    if ell < 1:
        raise ValueError(f"ell must be >= 1, got {ell}")
    if (ell + 1) ** 2 > 6e7:
        raise ValueError(f"ell = {ell} is too large for the (a, b) table search; pass a smaller ell")
    lengths = np.atleast_1d(np.asarray(lengths, int))
    eps_list = _eps_list(eps)
    if tables is None:
        tables = stationary_influence_tables(P, pi, ell)
    e2, ef, eb = tables
    if e2.shape[0] < ell + 1:
        raise ValueError(f"tables cover distances up to {e2.shape[0] - 1} < ell = {ell}")
    e2, ef, eb = e2[:ell + 1, :ell + 1], ef[:ell + 1], eb[:ell + 1]
    out = []
    for e in eps_list:
        sig, (n, L) = _search_tables(e2, ef, eb, ell, lengths, e)
        out.append(_result(sig, _node_quilt(e2, ef, eb, ell, n, L, e), ell, n))
    return out if np.ndim(eps) else out[0]


# ---------------------------------------------------------------------------------------------------------
# MQMApprox (Alg. 9, Lemmas 7.4.6 and 7.4.7)
# ---------------------------------------------------------------------------------------------------------


def _log_rho(d, pi_min: float, g: float, rate: float):
    """log((π_min + e^{−rate·g·d})/(π_min − e^{−rate·g·d})), ∞ where the denominator is ≤ 0."""
    d = np.asarray(d, float)
    x = np.exp(-rate * g * d)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.log(pi_min + x) - np.log(pi_min - x)
    return np.where(x < pi_min, v, np.inf)


def approx_influence(a, b, pi_min: float, g: float, bound: str = "general"):
    """Upper bound on e_Θ(X_Q | X_i) (Lemma 7.4.6): X_Q = {X_{i−a}, X_{i+b}} gives ρ_b + 2ρ_a; ``a=None`` gives
    the one-sided {X_{i+b}} bound ρ_b, ``b=None`` the {X_{i−a}} bound 2ρ_a (RECONSTRUCTED one-sided forms).

    ``bound="general"``: ρ_d = log((π_min + e^{−g d/2})/(π_min − e^{−g d/2})) with g the eigengap of P P*
    (the thesis's Lemma 7.4.6). ``bound="reversible"``: e^{−g d} with g = 1 − |λ*| (RECONSTRUCTED tighter bound
    for reversible chains; see the module docstring for the derivation). Infinite where a denominator is ≤ 0.
    """
    if bound not in ("general", "reversible"):
        raise ValueError(f"bound must be 'general' or 'reversible', got {bound!r}")
    rate = 0.5 if bound == "general" else 1.0
    out = 0.0
    if b is not None:
        out = out + _log_rho(b, pi_min, g, rate)
    if a is not None:
        out = out + 2 * _log_rho(a, pi_min, g, rate)
    return out


def lemma_7_4_7(eps: float, pi_min: float, g: float) -> tuple[int, int]:
    """(a*, ℓ = 4a*) of Lemma 7.4.7: a* = 2⌈log((e^{ε/6}+1)/(e^{ε/6}−1)/π_min)/g⌉. If T ≥ 8a*, the optimal quilt
    of the middle node X_⌈T/2⌉ has a + b ≤ 4a* and σ_max = σ_⌈T/2⌉ (running example: a* = 12)."""
    r = math.exp(eps / 6)
    a_star = 2 * math.ceil(math.log((r + 1) / (r - 1) / pi_min) / g)
    return a_star, 4 * a_star


def _middle_node(rho, ell: int, eps: float, n: int) -> tuple[float, dict]:
    """Lemma 7.4.7 shortcut: min over two-sided quilts a + b ≤ ℓ of the middle node (chunked over a)."""
    mid = (n + 1) // 2                                         # ⌈n/2⌉, 1-based
    best = (n / eps, dict(node=mid, quilt=(), card=n, influence=0.0))
    b = np.arange(1, ell)
    step = max(1, _CHUNK // max(1, ell))
    for lo in range(1, ell, step):
        a = np.arange(lo, min(ell, lo + step))
        e = rho[b][None, :] + 2 * rho[a][:, None]
        card = a[:, None] + b[None, :] - 1
        s = np.where(a[:, None] + b[None, :] <= ell, _scores(card, e, eps), np.inf)
        j = int(np.argmin(s))
        if s.flat[j] < best[0]:
            ja, jb = divmod(j, len(b))
            best = (float(s.flat[j]), dict(node=mid, quilt=(mid - int(a[ja]), mid + int(b[jb])),
                                           card=int(card.flat[j]), influence=float(e.flat[j])))
    return best


@functools.lru_cache(maxsize=4)
def _approx_tables(pi_min: float, g: float, ell: int, bound: str, eps: float):
    """Lemma 7.4.6 influence tables and their running minima (memoised: persons of a group share them)."""
    rho = approx_influence(None, np.arange(ell + 1), pi_min, g, bound)
    e2 = rho[None, :] + 2 * rho[:, None]
    return e2, rho, _prefix_tables(e2, rho, 2 * rho, ell, eps)


def mqm_approx(pi_min: float, g: float, lengths, eps, ell: int | None = None, bound: str = "general",
               use_lemma_7_4_7: bool = True):
    """MQMApprox (Alg. 9) for a class with parameters π_Θ^min (7.4) and g_Θ (7.5, or the reversible gap).

    The bound of :func:`approx_influence` holds for every initial distribution and depends on (a, b) only.
    ℓ defaults to 4a* of Lemma 7.4.7 (capped at the longest chain). For a chain with n ≥ 8a* the lemma gives
    σ_max = σ_⌈n/2⌉ with quilts a + b ≤ 4a*, so only that node is searched (O(a*²)); shorter chains get the
    full node search of Alg. 9. Chains (segments) are independent; σ_max is the max over their lengths.
    Returns an :class:`MQMResult` (or a list, one per ε).
    """
    if not (0 < pi_min <= 0.5 + 1e-12) or not (0 < g <= 2):
        raise ValueError(f"need 0 < pi_min <= 1/2 and 0 < g <= 2, got pi_min={pi_min!r}, g={g!r}")
    lengths = np.atleast_1d(np.asarray(lengths, int))
    out = []
    for e in _eps_list(eps):
        a_star, ell_l = lemma_7_4_7(e, pi_min, g)
        lemma = use_lemma_7_4_7 and ell is None
        long = lengths[lengths >= 8 * a_star] if lemma else lengths[:0]
        short = np.setdiff1d(lengths, long)
        cands = []
        if long.size:
            n = int(long.max())
            rho = approx_influence(None, np.arange(ell_l + 1), pi_min, g, bound)
            sig, det = _middle_node(rho, ell_l, e, n)
            cands.append((sig, det, n, ell_l, True))
        if short.size:
            el = int(ell) if ell is not None else min(ell_l, int(short.max()))
            if (el + 1) ** 2 > 6e7:
                raise ValueError(f"ell = {el} is too large for the (a, b) table search; pass a smaller ell")
            e2, rho, prefix = _approx_tables(float(pi_min), float(g), el, bound, e)
            sig, (n, L) = _search_tables(e2, rho, 2 * rho, el, short, e, prefix)
            cands.append((sig, _node_quilt(e2, rho, 2 * rho, el, n, L, e), n, el, False))
        sig, det, n, el, used = max(cands, key=lambda c: c[0])
        out.append(_result(sig, det, el, n, a_star=a_star, bound=bound, lemma_7_4_7=used))
    return out if np.ndim(eps) else out[0]

# ---------------------------------------------------------------------------------------------------------
# Baselines: GroupDP and GK16
# ---------------------------------------------------------------------------------------------------------


def group_dp_scale(lipschitz: float, longest_chain: int, eps: float) -> float:
    """GroupDP: every entry of a connected chain may be correlated with every other, so the group is the whole
    chain: Laplace scale L·M/ε per coordinate, M = the longest chain (Song 2018, §7.6.1 'Algorithms', §7.6.3.1;
    the text's "Lap(1/ε) per bin" is read as L·M/ε: the histogram's L = 2/T reproduces Table 7.3's ≈ 102/ε, the
    scalar synthetic query's L = 1/T gives Fig. 7.4's 1/ε; docs/studies/song2018.md#groupdp-baseline)."""
    return float(lipschitz) * int(longest_chain) / float(eps)


def gk16_influences(P, q=None) -> dict:
    """Entries of the GK16 influence matrix of a chain (RECONSTRUCTED from Ghosh & Kleinberg, arXiv:1603.01508;
    the thesis gives no formula): φ_ij = max D∞(P(X_i | x_{−i}) ‖ P(X_i | x'_{−i})) over x_{−i}, x'_{−i} that
    differ in coordinate j only. In a chain only the neighbours matter, P(x_i | u, w) ∝ P(u, x_i)P(x_i, w):

    * ``left``: φ_{i,i−1} of an interior node; ``right``: φ_{i,i+1} of an interior node;
    * ``last_left``: φ_{T,T−1} (P(x_T | u) = P(u, x_T));
    * ``first_right``: φ_{1,2}, P(x_1 | w) ∝ q(x_1)P(x_1, w); ``q=None`` takes the sup over all q (a vertex).
    """
    P = _check_stochastic(P)
    J = P[:, :, None] * P[None, :, :]                  # J[u, x, w] = P(u, x) P(x, w)
    Z = J.sum(axis=1, keepdims=True)
    defined = Z > 0                                    # (u, w) configurations of positive probability
    with np.errstate(invalid="ignore", divide="ignore"):
        C = np.where(defined, J / np.where(defined, Z, 1.0), 0.0)     # C[u, x, w] = P(x | u, w)

    def dmax(num, den, ok):
        return float(np.where(ok, _max_log_ratio(num, den, axis=()), -np.inf).max())

    left = dmax(C[:, None, :, :], C[None, :, :, :], defined[:, None] & defined[None, :])    # vary u
    right = dmax(C[:, :, :, None], C[:, :, None, :], defined[:, :, :, None] & defined[:, :, None, :])  # vary w
    last_left = float(_max_log_ratio(P[:, None, :], P[None, :, :], axis=2).max())
    f = _max_log_ratio(P[:, :, None], P[:, None, :], axis=0)                          # [w, w']: P(x,w)/P(x,w')
    if q is None:
        g = _max_log_ratio(P[:, None, :], P[:, :, None], axis=0)                      # [w, w']: P(z,w')/P(z,w)
    else:
        lm = _log(np.asarray(q, float) @ P)
        with np.errstate(invalid="ignore"):
            g = lm[None, :] - lm[:, None]
    first_right = float(np.nanmax(_add(f, g)))
    return dict(left=left, right=right, last_left=last_left, first_right=first_right)


def gk16_matrix(phi: dict, T: int) -> np.ndarray:
    """The T × T tridiagonal influence matrix of one chain of length T from :func:`gk16_influences`."""
    M = np.zeros((T, T))
    if T < 2:
        return M
    i = np.arange(1, T - 1)
    M[i, i - 1] = phi["left"]
    M[i, i + 1] = phi["right"]
    M[0, 1] = phi["first_right"]
    M[T - 1, T - 2] = phi["last_left"]
    return M


def _tridiag(phi: dict, n: int):
    from scipy.sparse import diags

    lo = np.full(n - 1, phi["left"])
    up = np.full(n - 1, phi["right"])
    lo[-1], up[0] = phi["last_left"], phi["first_right"]
    return diags([lo, up], [-1, 1], shape=(n, n), format="csr")


def gk16_norm(phi: dict, lengths, exact_max: int = 4096) -> float:
    """Spectral norm ‖Φ‖₂ of the block-diagonal influence matrix of independent chains with the given lengths
    (the max over the blocks). A block of n ≤ ``exact_max`` nodes: √λ_max(ΦᵀΦ) with ΦᵀΦ pentadiagonal
    (banded eigensolver). A longer block: the upper bound √(‖Φ‖₁‖Φ‖∞), which equals the n → ∞ limit when the
    interior dominates; an over-estimate only adds GK16 noise (or makes it inapplicable), never less privacy.
    Blocks are visited longest first and the search stops at the first norm ≥ 1 (GK16 then does not apply;
    the value returned is a lower bound on the norm)."""
    from scipy.linalg import eigvals_banded

    if not np.all(np.isfinite(list(phi.values()))):
        return float("inf")
    out = 0.0
    for n in np.unique(np.asarray(lengths, int))[::-1]:
        n = int(n)
        if n < 2 or out >= 1:
            break
        M = _tridiag(phi, n)
        if n > exact_max:
            A = abs(M)
            out = max(out, math.sqrt(A.sum(axis=0).max() * A.sum(axis=1).max()))
            continue
        S = (M.T @ M).todia()
        band = np.zeros((3, n))                        # upper band storage: band[2 - d, j] = S[j - d, j]
        for d, row in zip(S.offsets, S.data):
            if d >= 0:
                band[2 - d, d:] = row[d:]
        lam = eigvals_banded(band, lower=False, select="i", select_range=(n - 1, n - 1))
        out = max(out, float(np.sqrt(max(lam[-1], 0.0))))
    return out


def gk16_scale(lipschitz: float, norm: float, eps: float) -> float:
    """GK16 noise: applicable only if ‖Φ‖₂ < 1; an ε_DP-DP release is then ε_DP/(1 − ‖Φ‖₂)-private, so the
    Laplace scale is L/(ε(1 − ‖Φ‖₂)) (RECONSTRUCTED reading, docs/studies/song2018.md#gk16-baseline). Returns
    inf when not applicable."""
    if not norm < 1:
        return float("inf")
    return float(lipschitz) / (float(eps) * (1.0 - float(norm)))


def laplace_release(rng: np.random.Generator, values, scale: float, size=None) -> np.ndarray:
    """F(D) + Lap(scale) per coordinate (one vectorised draw); scale = L·σ_max for MQM."""
    values = np.asarray(values, float)
    shape = values.shape if size is None else tuple(np.atleast_1d(size)) + values.shape
    return values + rng.laplace(0.0, float(scale), size=shape)
