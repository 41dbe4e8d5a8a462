"""Continual release of graph statistics under node differential privacy (Song 2018, PhD dissertation, ch. 6).

* :func:`sensdiff` — SENSDIFF (Algorithm 5, §6.3): Laplace noise of scale GS_D(Δ)/ε on every term of the
  difference sequence Δ_t = f(G_t) − f(G_{t−1}) (f(G₀) = 0), GS_D(Δ) the global sensitivity of the WHOLE
  difference sequence (Table 6.1, Lemmas 6.5.1-6.5.4: :mod:`dpbench.privacy.graph_sensitivity`); releases the
  partial sums. ε-node-DP for D-bounded sequences; expected L1 error O(T^{3/2}/ε).
* :func:`compose` — COMPOSE-D-BOUNDED (§6.6.1.1): every f(G_t) with noise of scale GS(f)/(ε/T), GS(f) the
  sensitivity of one D-bounded snapshot (sequential composition over the T releases); Θ(T²/ε).
* :func:`compose_projection` — COMPOSE-PROJECTION (§6.6.1.1): the same on the projected graphs G̃_t (online
  edge-addition projection of Day, Li, Lyu [35], :func:`dpbench.data.graphs.project`) with the sensitivity of f on
  a D̃-bounded graph, D̃ tuned over a grid by the lowest mean error at NO privacy cost (as in the thesis, §6.6.1.2:
  optimistic for this baseline).

Every release draws from :func:`dpbench.privacy.mechanisms.sample_laplace`; ``runs`` independent releases at once
(arrays (runs, T)). Error: the relative L1 error Σ_t |A(G_t) − f(G_t)| / f(G_t) of §6.6.3, with f(G_t) = 0 counted
as 1 (the thesis does not say how a zero count is handled).
"""

from __future__ import annotations

import numpy as np

from dpbench.data import graphs as G
from dpbench.privacy import graph_sensitivity as S
from dpbench.privacy.mechanisms import sample_laplace

METHODS = ("sensdiff", "compose_d_bounded", "compose_projection")
LABELS = {"sensdiff": "SENSDIFF", "compose_d_bounded": "COMPOSE-D-BOUNDED", "compose_projection": "COMPOSE-PROJECTION"}
STATISTICS = ("high_degree", "edges")


def sensdiff(f: np.ndarray, gs_diff: float, epsilon: float, rng: np.random.Generator, runs: int) -> np.ndarray:
    """Algorithm 5: (runs, T) released sequences Σ_{s≤t} (Δ_s + Lap(GS_D(Δ)/ε))."""
    f = np.asarray(f, np.float64)
    delta = np.diff(f, prepend=0.0)
    noisy = delta[None, :] + sample_laplace(rng, gs_diff / epsilon, (runs, f.size))
    return np.cumsum(noisy, axis=1)


def compose(f: np.ndarray, gs_single: float, epsilon: float, rng: np.random.Generator, runs: int) -> np.ndarray:
    """COMPOSE-D-BOUNDED: (runs, T) releases f(G_t) + Lap(GS(f)·T/ε) (ε/T per release)."""
    f = np.asarray(f, np.float64)
    return f[None, :] + sample_laplace(rng, gs_single * f.size / epsilon, (runs, f.size))


def relative_l1(released: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Σ_t |A(G_t) − f(G_t)| / max(f(G_t), 1) per run (§6.6.3)."""
    f = np.asarray(f, np.float64)
    return (np.abs(released - f[None, :]) / np.maximum(f, 1.0)[None, :]).sum(axis=1)


def compose_projection(f: np.ndarray, projected: dict, gs: dict, epsilon: float, rng: np.random.Generator,
                       runs: int) -> tuple[np.ndarray, object, dict]:
    """COMPOSE-PROJECTION: for every candidate D̃ (keys of ``projected``: f on the projected graphs, (T,); ``gs``:
    the sensitivity of f on a D̃-bounded graph) the releases f(G̃_t) + Lap(GS_D̃·T/ε); the same standard Laplace
    draws serve every candidate, and the candidate with the lowest mean relative L1 error against the TRUE f(G_t)
    is kept (tuning at no privacy cost, §6.6.1.2). Returns (errors of the kept candidate (runs,), its D̃, the mean
    error of every candidate)."""
    T = len(f)
    z = sample_laplace(rng, 1.0, (runs, T))
    best, best_err, means = None, None, {}
    for key, fp in projected.items():
        rel = np.asarray(fp, np.float64)[None, :] + (gs[key] * T / epsilon) * z
        err = relative_l1(rel, f)
        means[key] = float(err.mean())
        if best is None or means[key] < means[best]:
            best, best_err = key, err
    return best_err, best, means


# ---------------------------------------------------------------------------------------------------------
# statistics of a graph sequence and their sensitivities
# ---------------------------------------------------------------------------------------------------------


def bounds(g: G.GraphSequence, step: int = 5) -> dict:
    """D (undirected) and (D_in, D_out): the actual maxima rounded up to a multiple of 5 (§6.6.1.2) — a
    non-private step, as in the thesis."""
    st = G.statistics(g)
    return {"D": G.degree_bound(st["max_degree"], step), "D_in": G.degree_bound(st["max_in_degree"], step),
            "D_out": G.degree_bound(st["max_out_degree"], step)}


def threshold(g: G.GraphSequence, directed: bool, q: float = 90.0) -> int:
    """τ: the q-th percentile of the (non-private) degree — out-degree if directed — distribution of the final
    graph (§6.6.1.2), at least 1 (τ = 0 would count every node)."""
    gg = g if directed else G.undirected(g)
    deg = np.bincount(gg.src, minlength=g.n) if directed else np.bincount(np.concatenate([gg.src, gg.dst]),
                                                                         minlength=g.n)
    return max(1, int(np.ceil(np.percentile(deg, q))))


def true_sequence(g: G.GraphSequence, statistic: str, directed: bool, cutoffs: np.ndarray, tau: int,
                  keep: np.ndarray | None = None) -> np.ndarray:
    """f(G_t) at each release (``g`` already undirected when ``directed`` is False): highDeg_τ / highOutDeg_τ or
    the edge count; ``keep`` restricts to projected edges."""
    if statistic == "edges":
        return G.edge_counts(g.time, g.src, g.dst, cutoffs, keep)
    if statistic == "high_degree":
        deg = G.degree_matrix(g.time, g.src, g.dst, cutoffs, "out" if directed else "undirected", keep)
        return G.high_degree_counts(deg, tau)
    raise ValueError(f"unknown statistic {statistic!r}; known: {STATISTICS}")


def sensitivity(statistic: str, directed: bool, b: dict, difference: bool) -> int:
    """GS of the difference sequence (SENSDIFF) or of one snapshot (the baselines) for bounds ``b`` (keys D, or
    D_in and D_out; a projection passes its thresholds)."""
    if statistic == "high_degree":
        if directed:
            return S.high_out_degree_diff(b["D_in"]) if difference else S.high_out_degree_single(b["D_in"])
        return S.high_degree_diff(b["D"]) if difference else S.high_degree_single(b["D"])
    if statistic == "edges":
        return S.edges_single(D_in=b["D_in"], D_out=b["D_out"]) if directed else S.edges_single(D=b["D"])
    raise ValueError(f"unknown statistic {statistic!r}; known: {STATISTICS}")


def projection_grid(bound: int, fractions) -> list[int]:
    """Candidate thresholds D̃ = ceil(q·bound) for the configured fractions q (unique, ≥ 1)."""
    return sorted({max(1, int(np.ceil(q * bound - 1e-9))) for q in fractions})
