"""song2018 chapter 7 — the Laplace scales of the Pufferfish mechanisms for the experiments' classes Θ (Song 2018,
§7.4–7.6): binary chains with Θ = [α, 1 − α] × every initial distribution (Fig. 7.4, Table 7.2) and Θ = {(π̂, P̂)}
estimated from chains (Tables 7.1–7.3, Fig. 7.5). Mechanisms: :mod:`dpbench.methods.pufferfish`.

Part of the chapter's compute code: :mod:`dpbench.studies.song2018.ch7_compute` imports it, so the chapter's code
hash covers it. A record's ``sigma`` is the Laplace scale per unit of the query's L1-Lipschitz constant (σ = ∞:
not applicable, e.g. GK16 with ‖Φ‖₂ ≥ 1).
"""

from __future__ import annotations

import math
import time

import numpy as np

from dpbench.data import markov
from dpbench.methods import pufferfish as pf


def scale_record(sigma: float, res: pf.MQMResult | None = None, **extra) -> dict:
    out = {"sigma": float(sigma), "applicable": bool(math.isfinite(sigma)), "reason": "", "node": None,
           "quilt": None, "card": None, "influence": None, "ell": None}
    if res is not None:
        out.update(node=res.node, quilt=list(res.quilt), card=res.card, influence=res.influence, ell=res.ell,
                   chain_length=res.chain_length)
    out.update(extra)
    return out


def gk16_record(norm: float, eps: float, **extra) -> dict:
    sigma = pf.gk16_scale(1.0, norm, eps)
    rec = scale_record(sigma, norm=float(norm), **extra)
    if not rec["applicable"]:
        rec["reason"] = (f"influence-matrix spectral norm {norm:.3g} >= 1" if math.isfinite(norm)
                         else "influence matrix unbounded (a transition of probability 0)")
    return rec


# ---------------------------------------------------------------------------------------------------------
# synthetic binary chains: Θ = [α, 1 − α] (Fig. 7.4, Table 7.2)
# ---------------------------------------------------------------------------------------------------------


def binary_grid(alpha: float, step: float) -> np.ndarray:
    """Grid over [α, 1 − α] with spacing ≤ ``step``, both endpoints included."""
    n = int(math.ceil((1 - 2 * alpha) / step - 1e-9)) + 1
    return np.linspace(alpha, 1 - alpha, max(n, 2))


def binary_class_parameters(alpha: float, bound: str) -> tuple[float, float]:
    """(π_Θ^min, g_Θ) of Θ = [α, 1−α] in closed form: π_min = α (at p₀ = α, p₁ = 1 − α); the second eigenvalue
    λ = p₀ + p₁ − 1 has |λ| ≤ 1 − 2α, so g = 2α for the reversible bound and 1 − (1 − 2α)² for the eigengap
    of P P* = P² (binary chains are reversible, P* = P)."""
    return alpha, (2 * alpha if bound == "reversible" else 1 - (1 - 2 * alpha) ** 2)


def binary_class_scale(method: str, alpha: float, T: int, eps_list, step: float, bound: str) -> dict:
    """σ (the Laplace scale per unit L) of ``method`` for Θ = [α, 1−α] × (every initial distribution), chains of
    length T, for each ε: {repr(ε): record}. MQMExact and GK16 take the max over a (p₀, p₁) grid of spacing
    ``step`` (endpoints included); MQMApprox uses the closed-form class parameters; GroupDP σ = T/ε."""
    t0 = time.perf_counter()
    out = {}
    if method == "group_dp":
        for e in eps_list:
            out[repr(e)] = scale_record(pf.group_dp_scale(1.0, T, e))
    elif method == "mqm_approx":
        pi_min, g = binary_class_parameters(alpha, bound)
        for e, r in zip(eps_list, pf.mqm_approx(pi_min, g, [T], list(eps_list), ell=T, bound=bound)):
            out[repr(e)] = scale_record(r.sigma_max, r, pi_min=pi_min, g=g, bound=bound)
    elif method == "mqm_exact":
        grid = binary_grid(alpha, step)
        thetas = [(None, markov.binary_transition(a, b)) for a in grid for b in grid]
        for e, r in zip(eps_list, pf.mqm_exact(thetas, T, list(eps_list), ell=T)):
            P = thetas[r.theta][1]
            out[repr(e)] = scale_record(r.sigma_max, r, theta=f"p0={P[0, 0]:.4g}, p1={P[1, 1]:.4g}", grid_points=len(thetas))
    elif method == "gk16":
        grid = binary_grid(alpha, step)
        norms = [(pf.gk16_norm(pf.gk16_influences(markov.binary_transition(a, b)), [T]), a, b)
                 for a in grid for b in grid]
        norm, a, b = max(norms)
        for e in eps_list:
            out[repr(e)] = gk16_record(norm, e, theta=f"p0={a:.4g}, p1={b:.4g}")
    else:
        raise ValueError(f"unknown fig7_4 series {method!r}")
    dt = time.perf_counter() - t0
    for r in out.values():
        r["runtime_s"] = dt
    return out


def synthetic_scale_once(method: str, P, T: int, eps: float) -> float:
    """σ for the singleton transition matrix P with every initial distribution (the per-θ procedure the thesis
    times on the (p₀, p₁) grid)."""
    if method == "mqm_exact":
        return pf.mqm_exact([(None, P)], T, eps, ell=T).sigma_max
    if method == "mqm_approx":
        return pf.mqm_approx(float(pf.stationary_distribution(P).min()), pf.reversible_gap(P), [T], eps, ell=T,
                             bound="reversible").sigma_max
    if method == "gk16":
        return pf.gk16_scale(1.0, pf.gk16_norm(pf.gk16_influences(P), [T]), eps)
    raise ValueError(f"unknown table7_2 series {method!r}")


# ---------------------------------------------------------------------------------------------------------
# real-data stand-ins: Θ = {(π̂, P̂)} estimated from the (simulated) chains (Tables 7.1–7.3, Fig. 7.5)
# ---------------------------------------------------------------------------------------------------------


def chain_model(d: markov.ChainData) -> tuple[np.ndarray, np.ndarray]:
    """Θ = {(π̂, P̂)}: the empirical transition matrix of the (pooled) chains and its stationary distribution.

    θ̂ lives on the largest strongly connected set of observed transitions (by observations): a state seen too
    rarely to be both entered and left there has probability 0 under θ̂ and so no secret; transitions out of
    the set are removed and rows renormalised. With the full-size data every state is kept.
    """
    from scipy.sparse.csgraph import connected_components

    P = markov.empirical_transition_matrix(d.states, d.lengths, d.k)
    _, comp = connected_components(P > 0, directed=True, connection="strong")
    counts = np.bincount(comp, weights=np.bincount(d.states, minlength=d.k))
    keep = np.flatnonzero(comp == int(np.argmax(counts)))
    if keep.size < d.k:
        P = P[np.ix_(keep, keep)]
        P = P / P.sum(axis=1, keepdims=True)
    markov.require_ergodic(P, d.name)
    return P, pf.stationary_distribution(P)


def chain_scale(method: str, P, pi, lengths, eps: float, tables=None) -> dict:
    """σ of ``method`` for Θ = {(π, P)} and independent chains of the given lengths (per unit L).

    MQMApprox: Lemma 7.4.6 (general bound: empirical chains need not be reversible) with ℓ = 4a* of
    Lemma 7.4.7; MQMExact: ℓ = card(X_N) of the optimal MQMApprox quilt (Song 2018, §7.6.3); GroupDP: the longest
    chain; GK16: influence matrix with q = π."""
    t0 = time.perf_counter()
    lengths = np.asarray(lengths, int)
    if method == "group_dp":
        rec = scale_record(pf.group_dp_scale(1.0, int(lengths.max()), eps))
    elif method in ("mqm_approx", "mqm_exact"):
        pi_min, g = float(pi.min()), pf.eigengap(P)
        ra = pf.mqm_approx(pi_min, g, lengths, eps)
        if method == "mqm_approx":
            rec = scale_record(ra.sigma_max, ra, pi_min=pi_min, g=g, bound="general")
        else:
            rx = pf.mqm_exact_stationary(P, lengths, eps, ra.card, pi=pi, tables=tables)
            rule = "card of the optimal MQMApprox quilt"
            if rx.sigma_max > ra.sigma_max and ra.ell > ra.card:
                # ℓ from MQMApprox's optimal quilt left out quilts MQMApprox used elsewhere: search its full ℓ
                big = tables if tables is not None and tables[0].shape[0] > ra.ell else None
                rx = pf.mqm_exact_stationary(P, lengths, eps, ra.ell, pi=pi, tables=big)
                rule = "MQMApprox's ℓ (the thesis's rule gave a larger scale than MQMApprox)"
            rec = scale_record(rx.sigma_max, rx, pi_min=pi_min, g=g, ell_rule=rule)
    elif method == "gk16":
        rec = gk16_record(pf.gk16_norm(pf.gk16_influences(P, pi), lengths), eps)
    else:
        raise ValueError(f"unknown series {method!r}")
    rec["runtime_s"] = time.perf_counter() - t0
    return rec
