"""Growing graphs with node time stamps for song2018 chapter 6 (Song 2018, PhD dissertation, §6.2.1 and §6.6.2).

A graph sequence (§6.2.1) is stored as arrays: ``time[v]`` is the time stamp of node v (the year or step it
enters the graph; 0 = before the first release) and ``src[e] → dst[e]`` are the directed edges. G_t holds the
nodes with ``time ≤ t`` and the edges whose two end points are in it, so an edge enters with its later end point
(∂E_t of §6.2.1). The undirected version of a data set ignores the directions (:func:`undirected`). Releases are
cut-off times (:func:`release_times`): the r-th release is G at ``time ≤ cutoffs[r]``. Plain numpy — no graph
library is needed for degree counts, edge counts and the greedy projection.

Generators (every stream from ``dpbench.rng.generator(seed, key)``, keyed by the parameters):

* :func:`synthetic_one` — Synthetic I (§6.6.2.2): modified Barabási–Albert; m₀ initial nodes at time 0, then n
  nodes per year for Y years; each new node is isolated with probability P_isolated, otherwise it links to k
  existing nodes chosen with probability ∝ (out-deg(v) + 1)·(now − v.time + 1)^(−c); edges older → newer. The
  thesis's weight deg(v)·(…)^(−c) is 0 for every initial node (all degrees 0): the ``+1`` resolves it [INFERRED].
* :func:`synthetic_two` — Synthetic II (§6.6.2.2): SIR on a Barabási–Albert interaction graph (10,000 nodes,
  attachment k = 2); n₀ random initial infectious nodes (time 0; n₀ is not given: 500 inferred from 1088 nodes −
  588 edges of Table 6.4, since every other node has exactly one incoming transmission edge); per step an
  infectious node recovers with P_r, then every still-infectious u infects each susceptible neighbour with
  probability P_i / deg(u); the transmission edge u → v gets the infection step as v's time stamp.
* :func:`surrogate` — SURROGATES of the three real graphs (HIV transmission: private; patent and paper citation:
  download-only), matched to their Table 6.4 row: the node count and timespan exactly, the edge count in
  expectation, the maximum degree / in-degree / out-degree as caps (reached where the attachment allows). Age-
  decayed preferential attachment by yearly batches: every node of a year draws its out-degree (0 with
  probability ``p_isolated``, else geometric with the mean that gives the target edge count, one node forced to
  the maximum out-degree) and links to nodes of earlier years with probability ∝ (in-deg + 1)^a·(age + 1)^(−c),
  never beyond the in-degree or degree cap. They are NOT the real graphs: every row, figure and caption says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpbench.rng import generator

VERSION = "v1"  # bump when a generator changes: it is part of every stream key and dataset variant


@dataclass(frozen=True)
class GraphSequence:
    """A growing directed graph: node time stamps and edges ``src → dst`` (indices into ``time``)."""

    name: str
    variant: str
    is_substitute: bool
    time: np.ndarray          # (n,) int64, node time stamps; 0 = before the first release
    src: np.ndarray           # (m,) int64
    dst: np.ndarray           # (m,) int64
    first: int                # time of the first yearly release (nodes with time < first join it)
    last: int                 # time of the last release

    @property
    def n(self) -> int:
        return int(self.time.size)

    @property
    def m(self) -> int:
        return int(self.src.size)

    @property
    def timespan(self) -> int:
        """Number of yearly releases (Table 6.4's "timespan")."""
        return self.last - self.first + 1


def undirected(g: GraphSequence) -> GraphSequence:
    """The undirected version (§6.6.2): directions dropped, parallel edges and self-loops removed; edges stored as
    (min, max)."""
    a, b = np.minimum(g.src, g.dst), np.maximum(g.src, g.dst)
    keep = a != b
    pairs = np.unique(np.stack([a[keep], b[keep]], axis=1), axis=0) if keep.any() else np.zeros((0, 2), np.int64)
    return GraphSequence(g.name, g.variant, g.is_substitute, g.time, pairs[:, 0].astype(np.int64),
                         pairs[:, 1].astype(np.int64), g.first, g.last)


def edge_times(time: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """The time an edge enters: the later of its end points' time stamps (§6.2.1)."""
    return np.maximum(time[src], time[dst])


def release_times(g: GraphSequence, T: int | None = None) -> np.ndarray:
    """Cut-off times of T releases spread over the timespan, the last at ``g.last``: release r (0-based) publishes
    G at time ≤ first − 1 + ceil((r + 1)·span / T). T = span (default): one release per year (Fig. 6.1)."""
    span = g.timespan
    T = span if T is None else int(T)
    if not 1 <= T <= span:
        raise ValueError(f"T must be in [1, {span}] for {g.name} (timespan {span}), got {T}")
    r = np.arange(1, T + 1)
    return g.first - 1 + -(-r * span // T)


def _release_index(t: np.ndarray, cutoffs: np.ndarray) -> np.ndarray:
    """Index of the first release that contains an object entering at time t (len(cutoffs): never)."""
    return np.searchsorted(cutoffs, t, side="left")


def degree_matrix(time, src, dst, cutoffs, kind: str = "undirected", keep=None) -> np.ndarray:
    """(T, n) degrees of every node in each released graph: ``undirected`` (edges counted at both ends; pass an
    undirected edge list), ``out`` or ``in``. ``keep``: an optional edge mask (a projection)."""
    T, n = len(cutoffs), time.size
    if keep is not None:
        src, dst = src[keep], dst[keep]
    ridx = _release_index(edge_times(time, src, dst), cutoffs)
    M = np.zeros((T + 1, n), np.int64)
    if kind in ("undirected", "out"):
        np.add.at(M, (ridx, src), 1)
    if kind in ("undirected", "in"):
        np.add.at(M, (ridx, dst), 1)
    return np.cumsum(M, axis=0)[:T]


def high_degree_counts(deg: np.ndarray, tau: int) -> np.ndarray:
    """highDeg_τ(G_t) (or highOutDeg_τ on out-degrees), t = 1..T: nodes with degree ≥ τ ≥ 1 (§6.2.4). A node not
    yet present has degree 0 and is never counted."""
    if tau < 1:
        raise ValueError(f"τ must be ≥ 1 (τ = 0 counts every node), got {tau}")
    return (deg >= tau).sum(axis=1)


def edge_counts(time, src, dst, cutoffs, keep=None) -> np.ndarray:
    """|E_t|, t = 1..T."""
    if keep is not None:
        src, dst = src[keep], dst[keep]
    ridx = _release_index(edge_times(time, src, dst), cutoffs)
    return np.cumsum(np.bincount(ridx, minlength=len(cutoffs) + 1))[: len(cutoffs)]


def edge_order(time, src, dst) -> np.ndarray:
    """Edges in the order of the node ordering (§6.4.1.1, [35]): nodes by time stamp then index; an edge is ranked
    by its later end point, then its earlier one. Edges of G_t therefore come before every edge that enters later,
    so the projection of G_t is a prefix of the projection of G_T (the online adaptation)."""
    pos = np.lexsort((np.arange(time.size), time))
    rank = np.empty_like(pos)
    rank[pos] = np.arange(pos.size)
    ra, rb = rank[src], rank[dst]
    return np.lexsort((np.minimum(ra, rb), np.maximum(ra, rb)))


def project(time, src, dst, bound_out: int, bound_in: int | None = None) -> np.ndarray:
    """The edge-addition projection of Day, Li, Lyu (SIGMOD 2016) [35] as adapted online in §6.4.1.1: scan the
    edges in :func:`edge_order` and keep an edge iff neither end point's degree would exceed the threshold.
    Undirected (``bound_in`` None): both degrees < D̃. Directed: out-deg(src) < D̃_out and in-deg(dst) < D̃_in.
    Returns the kept-edge mask."""
    order = edge_order(time, src, dst)
    n = time.size
    keep = np.zeros(src.size, bool)
    s_l, d_l = src[order].tolist(), dst[order].tolist()
    a = [0] * n
    b = a if bound_in is None else [0] * n
    hi_b = bound_out if bound_in is None else bound_in
    kept = []
    for i, (u, v) in enumerate(zip(s_l, d_l)):
        if a[u] < bound_out and b[v] < hi_b:
            a[u] += 1
            b[v] += 1
            kept.append(i)
    keep[order[np.asarray(kept, np.int64)]] = True if kept else keep[:0]
    return keep


def statistics(g: GraphSequence) -> dict:
    """The Table 6.4 columns: nodes, edges, timespan, max degree (undirected version), max in-/out-degree."""
    u = undirected(g)
    deg = np.bincount(np.concatenate([u.src, u.dst]), minlength=g.n)
    return {"nodes": g.n, "edges": g.m, "timespan": g.timespan, "max_degree": int(deg.max(initial=0)),
            "max_in_degree": int(np.bincount(g.dst, minlength=g.n).max(initial=0)),
            "max_out_degree": int(np.bincount(g.src, minlength=g.n).max(initial=0))}


#: Table 6.4 of the thesis (§6.6.2), verbatim
TABLE_6_4 = {
    "hiv": {"nodes": 1660, "edges": 456, "timespan": 21, "max_degree": 13, "max_in_degree": 12, "max_out_degree": 8},
    "patent": {"nodes": 91614, "edges": 475427, "timespan": 15, "max_degree": 247, "max_in_degree": 211,
               "max_out_degree": 246},
    "paper": {"nodes": 9038, "edges": 5249, "timespan": 24, "max_degree": 36, "max_in_degree": 19,
              "max_out_degree": 36},
    "synthetic1": {"nodes": 1990, "edges": 665, "timespan": 20, "max_degree": 5, "max_in_degree": 1,
                   "max_out_degree": 4},
    "synthetic2": {"nodes": 1088, "edges": 588, "timespan": 20, "max_degree": 6, "max_in_degree": 1,
                   "max_out_degree": 5},
}
LABELS = {"hiv": "HIV transmission (surrogate)", "patent": "Patent citation (surrogate)",
          "paper": "Paper citation (surrogate)", "synthetic1": "Synthetic I", "synthetic2": "Synthetic II"}
SURROGATES = ("hiv", "patent", "paper")


# ---------------------------------------------------------------------------------------------------------
# generators
# ---------------------------------------------------------------------------------------------------------


def synthetic_one(seed: int, m0: int = 500, n: int = 70, years: int = 20, k: int = 1, p_isolated: float = 0.5,
                  c: float = 1.0) -> GraphSequence:
    """Synthetic I (§6.6.2.2; defaults: the thesis's P_isolated = 0.5, k = 1, m₀ = 500, n = 70, Y = 20, c = 1).
    Sequential: a new node may link to any node that arrived before it (also earlier in the same year)."""
    rng = generator(seed, f"song2018/graphs/{VERSION}/synthetic1/m0={m0}/n={n}/Y={years}/k={k}/"
                          f"p={p_isolated!r}/c={c!r}")
    N = m0 + n * years
    time = np.concatenate([np.zeros(m0, np.int64), np.repeat(np.arange(1, years + 1), n)])
    out = np.zeros(N, np.float64)
    src, dst = [], []
    iso = rng.random(N) < p_isolated
    for v in range(m0, N):
        if iso[v]:
            continue
        now = time[v]
        w = (out[:v] + 1.0) * (now - time[:v] + 1.0) ** (-c)
        kk = min(k, v)
        targets = rng.choice(v, size=kk, replace=False, p=w / w.sum())
        for u in targets:
            src.append(int(u))
            dst.append(v)
            out[u] += 1
    return GraphSequence("synthetic1", f"synthetic:synthetic-I-{VERSION}", False, time,
                         np.asarray(src, np.int64), np.asarray(dst, np.int64), 1, years)


def barabasi_albert(rng: np.random.Generator, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Undirected Barabási–Albert graph: a star on k + 1 nodes, then every new node links to k distinct nodes
    chosen ∝ degree (the repeated-end-point list). Returns the edges (a, b)."""
    a = list(range(1, k + 1))
    b = [0] * k
    ends = a + b
    for v in range(k + 1, n):
        chosen: set[int] = set()
        while len(chosen) < k:
            chosen.add(ends[int(rng.integers(len(ends)))])
        for u in chosen:
            a.append(v)
            b.append(u)
            ends += [v, u]
    return np.asarray(a, np.int64), np.asarray(b, np.int64)


def synthetic_two(seed: int, nodes: int = 10_000, k: int = 2, n0: int = 500, steps: int = 20, p_r: float = 0.1,
                  p_i: float = 0.18) -> GraphSequence:
    """Synthetic II (§6.6.2.2; defaults: the thesis's P_r = 0.1, P_i = 0.18, 10,000-node BA graph with k = 2, 20
    steps; n₀ = 500 [INFERRED]). A susceptible node reached by several infectious neighbours in one step is
    infected once, by the first in a random order (in-degree ≤ 1, as in Table 6.4)."""
    rng = generator(seed, f"song2018/graphs/{VERSION}/synthetic2/N={nodes}/k={k}/n0={n0}/steps={steps}/"
                          f"pr={p_r!r}/pi={p_i!r}")
    a, b = barabasi_albert(rng, nodes, k)
    deg = np.bincount(np.concatenate([a, b]), minlength=nodes)
    order = np.argsort(np.concatenate([a, b]), kind="stable")
    nbr = np.concatenate([b, a])[order]
    start = np.concatenate([[0], np.cumsum(deg)])
    state = np.zeros(nodes, np.int8)                  # 0 S, 1 I, 2 R
    infected_at = np.full(nodes, -1, np.int64)
    seeds = rng.choice(nodes, size=n0, replace=False)
    state[seeds] = 1
    infected_at[seeds] = 0
    src, dst = [], []
    for t in range(1, steps + 1):
        inf = np.flatnonzero(state == 1)
        state[inf[rng.random(inf.size) < p_r]] = 2
        inf = np.flatnonzero(state == 1)
        rng.shuffle(inf)
        new = []
        for u in inf.tolist():
            nb = nbr[start[u]:start[u + 1]]
            hit = nb[(rng.random(nb.size) < p_i / deg[u]) & (state[nb] == 0)]
            for v in hit.tolist():
                if infected_at[v] < 0:
                    infected_at[v] = t
                    src.append(u)
                    dst.append(v)
                    new.append(v)
        state[np.asarray(new, np.int64)] = 1
    ids = np.flatnonzero(infected_at >= 0)
    remap = np.full(nodes, -1, np.int64)
    remap[ids] = np.arange(ids.size)
    return GraphSequence("synthetic2", f"synthetic:synthetic-II-SIR-{VERSION}", False, infected_at[ids],
                         remap[np.asarray(src, np.int64)], remap[np.asarray(dst, np.int64)], 1, steps)


#: surrogate parameters: the Table 6.4 row plus the share of nodes dated before the first release (HIV: about a
#: third have no estimated infection date and get 1995, §6.6.2.1; citations: the earlier patents / papers),
#: the isolated share, the age decay c and the attachment exponent a [INFERRED: chosen so that the edge count and
#: the maxima match]
SURROGATE_PARAMS = {
    "hiv": {"pre_share": 1 / 3, "p_isolated": 0.75, "c": 0.5, "pref": 2.5},
    "patent": {"pre_share": 0.35, "p_isolated": 0.05, "c": 0.5, "pref": 1.3},
    "paper": {"pre_share": 0.2, "p_isolated": 0.6, "c": 0.5, "pref": 1.5},
}


def surrogate(seed: int, name: str, scale: float = 1.0) -> GraphSequence:
    """SURROGATE of a real graph of Table 6.4 (module docstring); ``scale`` < 1 shrinks nodes and edges (smoke
    runs) and keeps the timespan and the caps."""
    row, par = TABLE_6_4[name], SURROGATE_PARAMS[name]
    N = max(50, int(round(row["nodes"] * scale)))
    M = row["edges"] * N / row["nodes"]
    Y = row["timespan"]
    rng = generator(seed, f"song2018/graphs/{VERSION}/surrogate/{name}/N={N}/{sorted(par.items())}")
    n_pre = int(round(N * par["pre_share"]))
    time = np.concatenate([np.zeros(n_pre, np.int64), np.sort(rng.integers(1, Y + 1, N - n_pre))])
    cap_in, cap_out, cap = row["max_in_degree"], row["max_out_degree"], row["max_degree"]
    active = rng.random(N) >= par["p_isolated"]
    active[:n_pre] = False                             # dated-before nodes cite nothing that is released
    n_act = max(1, int(active.sum()))
    mean = M / n_act                                    # geometric on {1, 2, …} with this mean
    k = np.where(active, rng.geometric(min(1.0, 1.0 / max(mean, 1.0)), N), 0)
    k = np.minimum(k, cap_out)
    late = np.flatnonzero(active & (time >= max(2, Y // 2)))
    if late.size:
        k[late[int(rng.integers(late.size))]] = cap_out  # one node with the maximum out-degree
    indeg = np.zeros(N, np.int64)
    src, dst = [], []
    for y in range(1, Y + 1):                          # one batch per year: weights frozen within the year
        new = np.flatnonzero((time == y) & (k > 0))
        old = np.flatnonzero(time < y)
        if not new.size or not old.size:
            continue
        p = (indeg[old] + 1.0) ** par["pref"] * (y - time[old] + 1.0) ** (-par["c"])
        p *= (indeg[old] < cap_in) & (indeg[old] + k[old] < cap)
        if p.sum() <= 0:
            continue
        owner = np.repeat(new, k[new])
        target = old[rng.choice(old.size, size=owner.size, p=p / p.sum())]
        pair = np.unique(np.stack([owner, target], axis=1), axis=0)      # a node cites a node once
        pair = pair[rng.permutation(len(pair))]
        pair = pair[np.argsort(pair[:, 1], kind="stable")]
        first = np.searchsorted(pair[:, 1], pair[:, 1], side="left")
        rank = np.arange(len(pair)) - first             # the j-th new citation of its target (random order)
        t = pair[:, 1]
        allowed = np.minimum(cap_in - indeg[t], cap - indeg[t] - k[t])
        pair = pair[rank < allowed]
        src.append(pair[:, 0])
        dst.append(pair[:, 1])
        np.add.at(indeg, pair[:, 1], 1)
    src = np.concatenate(src) if src else np.zeros(0, np.int64)
    dst = np.concatenate(dst) if dst else np.zeros(0, np.int64)
    return GraphSequence(name, f"surrogate:{name}-table6.4-{VERSION}" + ("" if scale == 1 else f"-x{scale:g}"),
                         True, time, src.astype(np.int64), dst.astype(np.int64), 1, Y)


def load(seed: int, name: str, params: dict | None = None) -> GraphSequence:
    """A data set of chapter 6 by name (``synthetic1``, ``synthetic2``, ``hiv``, ``patent``, ``paper``)."""
    params = dict(params or {})
    if name == "synthetic1":
        return synthetic_one(seed, **params)
    if name == "synthetic2":
        return synthetic_two(seed, **params)
    if name in SURROGATES:
        return surrogate(seed, name, **params)
    raise ValueError(f"unknown graph data set {name!r}; known: {sorted(TABLE_6_4)}")


def degree_bound(max_degree: int, step: int = 5) -> int:
    """D: the actual maximum degree rounded up to a multiple of 5 (§6.6.1.2); at least ``step``."""
    return max(step, int(math.ceil(max_degree / step)) * step)
