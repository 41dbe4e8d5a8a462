"""Node-DP global sensitivities for continual release of graph statistics (Song 2018, PhD dissertation, ch. 6).

Difference sequences (Algorithm 5, SENSDIFF): for a D-bounded graph sequence (Def. 6.2.1) the global sensitivity
of the whole difference sequence Δ = (f(G₁), f(G₂) − f(G₁), …) under adding/removing one node with its edges,
measured in L1 over every release (and over the degrees for a histogram, §6.2.5):

* Table 6.1 — high-degree nodes 2D + 1 (Lemma 6.4.1, tight for any 1 ≤ τ < D), high-out-degree nodes 2D_in + 1
  (Lemma 6.4.4), degree histogram 4D² + 2D + 1 (Lemma 6.4.3), out-degree histogram 4D_out·D_in + 2D_out + 1
  (Lemma 6.4.5);
* Lemmas 6.5.1-6.5.4 — subgraph counts: S₊, the most copies of the subgraph one node of degree ≤ D (in-degree ≤
  D_in, out-degree ≤ D_out) can be part of: undirected edge D, triangle C(D, 2), k-star D·C(D−1, k−1) + C(D, k);
  directed edge D_in + D_out, triangle I (cycle) D_in·D_out, triangle II C(D_in + D_out, 2), out-k-star
  D_in·C(D_out−1, k−1) + C(D_out, k), in-k-star D_out·C(D_in−1, k−1) + C(D_in, k).

Single releases (the baselines COMPOSE-D-BOUNDED and COMPOSE-PROJECTION, §6.6.1.1: the thesis does not state
them; DERIVED here): one node changes highDeg_τ of one D-bounded graph by at most D + 1 (itself and its ≤ D
neighbours), highOutDeg_τ by at most D_in + 1 (itself and the nodes that point to it), the edge count by D
(undirected) or D_in + D_out (directed).

:func:`search` measures the sensitivities by brute force on small graph sequences (every graph on a few nodes
with every assignment of time stamps, or random ones): the tests and Table 6.1 of the study put its maxima beside
the formulas.
"""

from __future__ import annotations

import itertools
from math import comb, factorial

import numpy as np

# ---------------------------------------------------------------------------------------------------------
# formulas
# ---------------------------------------------------------------------------------------------------------


def _check(*bounds: int) -> None:
    for b in bounds:
        if int(b) != b or b < 0:
            raise ValueError(f"degree bounds must be non-negative integers, got {bounds}")


def high_degree_diff(D: int) -> int:
    """GS of the difference sequence of highDeg_τ, D-bounded undirected (Table 6.1, Lemma 6.4.1): 2D + 1."""
    _check(D)
    return 2 * D + 1


def high_out_degree_diff(D_in: int) -> int:
    """GS of the difference sequence of highOutDeg_τ, D_in-in-bounded (Table 6.1, Lemma 6.4.4): 2D_in + 1."""
    _check(D_in)
    return 2 * D_in + 1


def histogram_diff(D: int) -> int:
    """GS of the difference sequence of the degree histogram (Table 6.1, Lemma 6.4.3): 4D² + 2D + 1."""
    _check(D)
    return 4 * D * D + 2 * D + 1


def out_histogram_diff(D_in: int, D_out: int) -> int:
    """GS of the difference sequence of the out-degree histogram (Table 6.1, Lemma 6.4.5): 4D_out·D_in + 2D_out + 1."""
    _check(D_in, D_out)
    return 4 * D_out * D_in + 2 * D_out + 1


def subgraph_diff(subgraph: str, D: int | None = None, D_in: int | None = None, D_out: int | None = None,
                  k: int = 2) -> int:
    """S₊ of Lemma 6.5.2 (undirected: ``edge``, ``triangle``, ``kstar``; pass D) or Lemma 6.5.4 (directed:
    ``edge_d``, ``triangle1``, ``triangle2``, ``out_kstar``, ``in_kstar``; pass D_in, D_out) — the GS of the
    difference sequence of the subgraph count (Lemmas 6.5.1, 6.5.3)."""
    if subgraph in ("edge", "triangle", "kstar"):
        _check(D)
        return {"edge": D, "triangle": comb(D, 2), "kstar": D * comb(D - 1, k - 1) + comb(D, k)}[subgraph]
    _check(D_in, D_out)
    return {"edge_d": D_in + D_out, "triangle1": D_in * D_out, "triangle2": comb(D_in + D_out, 2),
            "out_kstar": D_in * comb(max(D_out - 1, 0), k - 1) + comb(D_out, k),
            "in_kstar": D_out * comb(max(D_in - 1, 0), k - 1) + comb(D_in, k)}[subgraph]


def high_degree_single(D: int) -> int:
    """GS of highDeg_τ of one D-bounded graph (DERIVED; COMPOSE-D-BOUNDED): D + 1."""
    _check(D)
    return D + 1


def high_out_degree_single(D_in: int) -> int:
    """GS of highOutDeg_τ of one D_in-in-bounded graph (DERIVED): D_in + 1."""
    _check(D_in)
    return D_in + 1


def edges_single(D: int | None = None, D_in: int | None = None, D_out: int | None = None) -> int:
    """GS of the edge count of one graph (DERIVED): D undirected, D_in + D_out directed; equal to the
    difference-sequence GS (Lemmas 6.5.2, 6.5.4: the count only grows)."""
    if D is not None:
        _check(D)
        return D
    _check(D_in, D_out)
    return D_in + D_out


# ---------------------------------------------------------------------------------------------------------
# brute-force measurement on small graph sequences
# ---------------------------------------------------------------------------------------------------------

#: statistics the search measures, by graph kind
UNDIRECTED_STATS = ("high_degree", "histogram", "edge", "triangle", "kstar")
DIRECTED_STATS = ("high_out_degree", "out_histogram", "edge_d", "triangle1", "triangle2", "out_kstar", "in_kstar")


def _present(times: np.ndarray, T: int) -> np.ndarray:
    """(B, T, n): node present in G_t, t = 1..T."""
    return times[:, None, :] <= np.arange(1, T + 1)[None, :, None]


def _sequences(adj: np.ndarray, times: np.ndarray, T: int, directed: bool, tau: int, D: int, k: int,
               triangles: bool = True) -> dict:
    """Statistic sequences (B, T[, bins]) of every graph in the batch (node 0 included); ``triangles`` False
    skips the triangle counts (cubic in the nodes) and reports them as 0."""
    pres = _present(times, T)                                   # (B, T, n)
    live = adj[:, None, :, :] & pres[:, :, :, None] & pres[:, :, None, :]   # (B, T, n, n) edges of G_t
    out = live.sum(axis=3)
    indeg = live.sum(axis=2)
    deg = out                                                   # undirected: the adjacency is symmetric
    bins = np.arange(1, D + 1)
    hist = ((deg[..., None] == bins) & pres[..., None]).sum(axis=2)   # (B, T, D); degree 0 is not counted
    res = {}
    n = adj.shape[1]
    trip = (np.array(list(itertools.permutations(range(n), 3))) if n >= 3 and triangles
            else np.zeros((0, 3), int))
    if directed:
        res["high_out_degree"] = (out >= tau).sum(axis=2)
        res["out_histogram"] = hist
        res["edge_d"] = live.sum(axis=(2, 3))
        if len(trip):
            a, b, c = trip[:, 0], trip[:, 1], trip[:, 2]
            cyc = live[:, :, a, b] & live[:, :, b, c] & live[:, :, c, a]
            tra = live[:, :, a, b] & live[:, :, a, c] & live[:, :, b, c]
            res["triangle1"] = cyc.sum(axis=2) // 3
            res["triangle2"] = tra.sum(axis=2)
        else:
            res["triangle1"] = res["triangle2"] = np.zeros_like(res["edge_d"])
        res["out_kstar"] = _comb(out, k).sum(axis=2)
        res["in_kstar"] = _comb(indeg, k).sum(axis=2)
    else:
        res["high_degree"] = (deg >= tau).sum(axis=2)
        res["histogram"] = hist
        res["edge"] = live.sum(axis=(2, 3)) // 2
        if len(trip):
            a, b, c = trip[:, 0], trip[:, 1], trip[:, 2]
            res["triangle"] = (live[:, :, a, b] & live[:, :, b, c] & live[:, :, c, a]).sum(axis=2) // 6
        else:
            res["triangle"] = np.zeros_like(res["edge"])
        res["kstar"] = _comb(deg, k).sum(axis=2)
    return res


def _comb(x: np.ndarray, k: int) -> np.ndarray:
    out = np.ones_like(x)
    for i in range(k):
        out = out * (x - i)
    return out // factorial(k)


def measure(adj: np.ndarray, times: np.ndarray, T: int, directed: bool, tau: int, D: int, k: int = 2,
            triangles: bool = True) -> dict:
    """Per graph of the batch and statistic: the L1 distance between the difference sequences of G (with node 0)
    and G' (node 0 and its edges removed) over releases 1..T, and the largest single-release change
    ``max_t |f(G_t) − f(G'_t)|``. ``adj`` (B, n, n) bool, ``times`` (B, n) ints in 1..T. Returns
    ``{stat: (diff_l1 (B,), single (B,))}``; ``triangles`` False: triangle counts not measured (0)."""
    with_v = _sequences(adj, times, T, directed, tau, D, k, triangles)
    adj2 = adj.copy()
    adj2[:, 0, :] = False
    adj2[:, :, 0] = False
    t2 = times.copy()
    t2[:, 0] = T + 1                                           # node 0 never enters
    without = _sequences(adj2, t2, T, directed, tau, D, k, triangles)
    res = {}
    for s, f in with_v.items():
        g = without[s]
        df = np.diff(f, axis=1, prepend=0) - np.diff(g, axis=1, prepend=0)
        axes = tuple(range(1, df.ndim))
        single = np.abs(f - g)
        single = single.reshape(single.shape[0], single.shape[1], -1).sum(axis=2).max(axis=1)
        res[s] = (np.abs(df).sum(axis=axes), single)
    return res


def _bounded(adj: np.ndarray, directed: bool, D: int, D_in: int, D_out: int) -> np.ndarray:
    if directed:
        return (adj.sum(axis=2).max(axis=1) <= D_out) & (adj.sum(axis=1).max(axis=1) <= D_in)
    return adj.sum(axis=2).max(axis=1) <= D


def all_graphs(n: int, directed: bool, mutual: bool = False) -> np.ndarray:
    """(2^pairs, n, n) bool: every simple graph on n labelled nodes (directed: no self-loops; ``mutual`` False
    leaves out pairs with edges both ways)."""
    pairs = list(itertools.permutations(range(n), 2) if directed else itertools.combinations(range(n), 2))
    bits = ((np.arange(2 ** len(pairs))[:, None] >> np.arange(len(pairs))[None, :]) & 1).astype(bool)
    adj = np.zeros((bits.shape[0], n, n), bool)
    for j, (a, b) in enumerate(pairs):
        adj[:, a, b] = bits[:, j]
        if not directed:
            adj[:, b, a] = bits[:, j]
    if directed and not mutual:
        adj = adj[~(adj & adj.transpose(0, 2, 1)).any(axis=(1, 2))]
    return adj


def search(n: int, T: int, directed: bool, D: int = 0, D_in: int = 0, D_out: int = 0, tau: int = 1, k: int = 2,
           random: int = 0, seed: int = 0, mutual: bool = False, chunk: int = 4096) -> dict:
    """The largest measured sensitivity of every statistic over graph sequences on n nodes and T releases that
    respect the degree bound(s): node 0 is the one added/removed. ``random`` = 0: every graph on n nodes with every
    assignment of time stamps in 1..T (exhaustive); otherwise that many random (graph, time stamps) pairs
    (uniform edges, kept when bounded). Histograms use bins 1..max(D, D_out). Returns
    ``{stat: {"diff": max L1 over the difference sequence, "single": max single-release change}}`` and the
    number of bounded sequences searched under ``"_searched"``."""
    bins = max(D, D_out)
    best: dict = {}
    searched = 0
    if random:
        rng = np.random.default_rng(seed)
        p = rng.uniform(0.1, 0.6, random)[:, None, None]
        raw = rng.random((random, n, n)) < p
        up = np.triu(raw, 1)
        if directed and mutual:
            adj = raw & ~np.eye(n, dtype=bool)
        elif directed:                                  # one random orientation per pair
            flip = rng.random((random, n, n)) < 0.5
            adj = (up & flip) | (up & ~flip).transpose(0, 2, 1)
        else:
            adj = up | up.transpose(0, 2, 1)
        times = rng.integers(1, T + 1, (random, n))
        batches = [(adj, times)]
    else:
        graphs = all_graphs(n, directed, mutual)
        graphs = graphs[_bounded(graphs, directed, D, D_in, D_out)]
        stamps = np.array(list(itertools.product(range(1, T + 1), repeat=n)))
        gi, si = np.meshgrid(np.arange(len(graphs)), np.arange(len(stamps)), indexing="ij")
        gi, si = gi.ravel(), si.ravel()
        batches = ((graphs[gi[i:i + chunk]], stamps[si[i:i + chunk]]) for i in range(0, gi.size, chunk))
    for adj, times in batches:
        ok = _bounded(adj, directed, D, D_in, D_out)
        adj, times = adj[ok], times[ok]
        if not len(adj):
            continue
        searched += len(adj)
        for s, (diff, single) in measure(adj, times, T, directed, tau, bins, k).items():
            b = best.setdefault(s, {"diff": 0, "single": 0})
            b["diff"] = max(b["diff"], int(diff.max()))
            b["single"] = max(b["single"], int(single.max()))
    best["_searched"] = searched
    return best


def tight_high_degree(D: int, tau: int) -> tuple[np.ndarray, np.ndarray]:
    """The sequence that reaches 2D + 1 for highDeg_τ, 1 ≤ τ < D (Lemma 6.4.1): node 0 enters at t = 1 with D
    neighbours u_i, each with τ − 1 other neighbours at t = 1; at t = 2 one new node w_i links to each u_i. With
    node 0: node 0 and every u_i reach τ at t = 1 (D + 1); without it the u_i reach τ only at t = 2 (D more).
    Returns (adj (1, n, n), times (1, n)), T = 2."""
    if not 1 <= tau < D:
        raise ValueError(f"needs 1 ≤ τ < D, got τ = {tau}, D = {D}")
    u = list(range(1, D + 1))
    nxt = D + 1
    edges, times = [], {0: 1, **{i: 1 for i in u}}
    for i in u:
        edges.append((0, i))
        for _ in range(tau - 1):
            edges.append((i, nxt))
            times[nxt] = 1
            nxt += 1
        edges.append((i, nxt))
        times[nxt] = 2
        nxt += 1
    adj = np.zeros((1, nxt, nxt), bool)
    for a, b in edges:
        adj[0, a, b] = adj[0, b, a] = True
    return adj, np.array([[times[i] for i in range(nxt)]])
