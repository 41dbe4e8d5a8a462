"""song2018 chapter 6 (Song 2018, PhD dissertation, §6.6; setting, inferred values and deviations in
docs/studies/song2018.md#chapter-6-continual-release-of-graph-statistics): continual release of graph statistics
under node DP — SENSDIFF (Alg. 5) vs COMPOSE-D-BOUNDED vs COMPOSE-PROJECTION.

Figures and series:

* fig6_1 / fig6_2 — series ``ch6_<dataset>`` (synthetic1, synthetic2, and the SURROGATES hiv, patent, paper):
  both versions of the graph (directed, undirected) × both statistics (high-(out-)degree nodes, edges) × the three
  methods; relative L1 error over the releases, ``runs`` noise draws per point. fig6_1: one release per year, vs
  ε; fig6_2: vs the number of releases T at one ε (releases spread over the timespan,
  :func:`dpbench.data.graphs.release_times`).
* table6_1 — series ``ch6_sensitivity``: the formulas of Table 6.1 and Lemmas 6.5.2 / 6.5.4 beside the maximum a
  brute-force search measures (:func:`dpbench.privacy.graph_sensitivity.search`), and the Lemma 6.4.1
  construction that reaches 2D + 1.
* table6_4 — series ``ch6_graphs``: the generated graphs' statistics beside Table 6.4.

Streams: the noise of a point is ``generator(seed, key)`` keyed by (figure, dataset, graph version, statistic,
method, ε, T, runs); the graphs by their generator parameters (:mod:`dpbench.data.graphs`). This module and what it
imports are the chapter's compute code (:mod:`dpbench.codehash`).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from dpbench.data import graphs as G
from dpbench.methods import graph_release as R
from dpbench.privacy import graph_sensitivity as S
from dpbench.rng import generator

STUDY = "song2018"
FIGURES = ("fig6_1", "fig6_2", "table6_1", "table6_4")
DATASETS = ("synthetic1", "synthetic2", "hiv", "patent", "paper")
KINDS = ("directed", "undirected")
METRIC = "relative_l1_error"
BOUND_NOTE = ("non-private step, as in the source: the degree bound D (D_in, D_out) is the actual maximum rounded "
              "up to a multiple of 5 and τ the 90th percentile of the actual degree distribution (Song 2018, "
              "§6.6.1.2); COMPOSE-PROJECTION's D̃ is tuned on the true error at no privacy cost")


def code_hash() -> str:
    """Every chapter-6 series: this module and, transitively, the generators, sensitivities and mechanisms."""
    from dpbench.codehash import code_hash as closure_hash

    return closure_hash(__name__)


def is_ch6_series(name: str) -> bool:
    return name.startswith("ch6_")


def series(cfg: dict, name: str) -> list[str]:
    fc = cfg["figures"][name]
    if name in ("fig6_1", "fig6_2"):
        return [f"ch6_{d}" for d in DATASETS if d in fc["datasets"]]
    return {"table6_1": ["ch6_sensitivity"], "table6_4": ["ch6_graphs"]}[name]


def load_graph(config: dict, name: str) -> G.GraphSequence:
    c6 = config["studies"][STUDY]["ch6"]
    if name in G.SURROGATES:
        return G.surrogate(int(config["seed"]), name, float(c6["surrogate_scale"]))
    return G.load(int(config["seed"]), name, c6[name])


def _row(config, figure, series_name, **kw) -> dict:
    row = {"study": STUDY, "figure": figure, "series": series_name, "method": "", "method_label": "", "dataset": "",
           "dataset_variant": "", "is_substitute": False, "graph": "", "statistic": "", "x_name": "", "x": np.nan,
           "epsilon": np.nan, "delta": 0.0, "budget": np.nan, "rep": 0, "metric": METRIC, "value": np.nan,
           "seed": int(config["seed"]), "runtime_s": np.nan, "releases": -1, "D": -1, "D_in": -1, "D_out": -1,
           "tau": -1, "sensitivity": np.nan, "noise_scale": np.nan, "d_tilde": "", "formula": np.nan,
           "source_value": np.nan, "searched": -1, "note": "",
           "preprocessing": BOUND_NOTE, "preprocessing_data_dependent": True}
    row.update(kw)
    return row


# ---------------------------------------------------------------------------------------------------------
# fig6_1 / fig6_2
# ---------------------------------------------------------------------------------------------------------


class _Panel:
    """One graph version of a data set with what every release needs: bounds, τ, the projections."""

    def __init__(self, g: G.GraphSequence, kind: str, b: dict, tau_pct: float, fractions, seed: int):
        self.kind, self.directed, self.seed = kind, kind == "directed", seed
        self.g = g if self.directed else G.undirected(g)
        self.b = b
        self.tau = R.threshold(g, self.directed, tau_pct)
        if self.directed:
            self.cands = {(i, o): {"D_in": i, "D_out": o} for i, o in zip(R.projection_grid(b["D_in"], fractions),
                                                                         R.projection_grid(b["D_out"], fractions))}
            self.keeps = {c: G.project(self.g.time, self.g.src, self.g.dst, c[1], c[0]) for c in self.cands}
        else:
            self.cands = {d: {"D": d} for d in R.projection_grid(b["D"], fractions)}
            self.keeps = {d: G.project(self.g.time, self.g.src, self.g.dst, d) for d in self.cands}

    def candidates(self, statistic: str) -> list:
        """The D̃ the tuning may pick: for high-(out-)degree nodes only D̃ > τ (D̃_out > τ), as §6.4.1.1 requires
        for highDeg_τ(G^D̃) to be meaningful (a smaller D̃ projects every node below τ); the largest candidate if
        none is."""
        if statistic != "high_degree":
            return list(self.cands)
        ok = [c for c in self.cands if (c[1] if self.directed else c) > self.tau]
        return ok or [max(self.cands)]

    def point(self, statistic: str, cutoffs, eps: float, runs: int, key: str) -> dict:
        """method → (errors (runs,), sensitivity, noise scale, D̃ label)."""
        f = R.true_sequence(self.g, statistic, self.directed, cutoffs, self.tau)
        T = len(cutoffs)
        out = {}
        gs = R.sensitivity(statistic, self.directed, self.b, True)
        rel = R.sensdiff(f, gs, eps, generator(self.seed, f"{key}/sensdiff"), runs)
        out["sensdiff"] = (R.relative_l1(rel, f), gs, gs / eps, "")
        gs1 = R.sensitivity(statistic, self.directed, self.b, False)
        rel = R.compose(f, gs1, eps, generator(self.seed, f"{key}/compose_d_bounded"), runs)
        out["compose_d_bounded"] = (R.relative_l1(rel, f), gs1, gs1 * T / eps, "")
        cands = self.candidates(statistic)
        proj = {c: R.true_sequence(self.g, statistic, self.directed, cutoffs, self.tau, self.keeps[c])
                for c in cands}
        gsp = {c: R.sensitivity(statistic, self.directed, self.cands[c], False) for c in cands}
        err, best, _ = R.compose_projection(f, proj, gsp, eps, generator(self.seed, f"{key}/compose_projection"),
                                            runs)
        out["compose_projection"] = (err, gsp[best], gsp[best] * T / eps,
                                     "/".join(map(str, best)) if isinstance(best, tuple) else str(best))
        return out


def run_releases(config: dict, figure: str, series_name: str) -> pd.DataFrame:
    """fig6_1 (vs ε, one release per year) or fig6_2 (vs T at one ε) for the data set of ``series_name``."""
    t0 = time.process_time()
    cfg = config["studies"][STUDY]
    c6, fc = cfg["ch6"], cfg["figures"][figure]
    name = series_name[len("ch6_"):]
    g = load_graph(config, name)
    b = R.bounds(g, int(c6["degree_step"]))
    runs = int(c6["runs"])
    rows = []
    for kind in KINDS:
        p = _Panel(g, kind, b, float(c6["tau_percentile"]), c6["projection_fractions"], int(config["seed"]))
        if figure == "fig6_1":
            grid = [("epsilon", float(e), float(e), None) for e in fc["epsilons"]]
        else:
            e = float(fc["epsilon"])
            grid = [("releases", float(T), e, int(T)) for T in fc["releases"] if int(T) <= g.timespan]
        for stat in R.STATISTICS:
            for x_name, x, eps, T in grid:
                cut = G.release_times(g, T)
                key = f"song2018/ch6/{figure}/{name}/{kind}/{stat}/eps={eps!r}/T={len(cut)}/runs={runs}"
                for method, (err, gs, scale, dt) in p.point(stat, cut, eps, runs, key).items():
                    base = _row(config, figure, series_name, method=method, method_label=R.LABELS[method],
                                dataset=name, dataset_variant=g.variant, is_substitute=g.is_substitute, graph=kind,
                                statistic=stat, x_name=x_name, x=x, epsilon=eps, releases=len(cut), D=b["D"],
                                D_in=b["D_in"], D_out=b["D_out"], tau=p.tau if stat == "high_degree" else -1,
                                sensitivity=float(gs), noise_scale=float(scale), d_tilde=dt)
                    rows.extend({**base, "rep": r, "value": float(err[r])} for r in range(runs))
    df = pd.DataFrame(rows)
    df["runtime_s"] = time.process_time() - t0
    return df


# ---------------------------------------------------------------------------------------------------------
# table6_1, table6_4
# ---------------------------------------------------------------------------------------------------------

#: (row label, statistic of the search, kind, formula(bounds))
TABLE_6_1 = (
    ("degree histogram (Lemma 6.4.3)", "histogram", "undirected", lambda b: S.histogram_diff(b["D"])),
    ("high-degree nodes (Lemma 6.4.1)", "high_degree", "undirected", lambda b: S.high_degree_diff(b["D"])),
    ("out-degree histogram (Lemma 6.4.5)", "out_histogram", "directed",
     lambda b: S.out_histogram_diff(b["D_in"], b["D_out"])),
    ("high-out-degree nodes (Lemma 6.4.4)", "high_out_degree", "directed", lambda b: S.high_out_degree_diff(b["D_in"])),
    ("edge (Lemma 6.5.2)", "edge", "undirected", lambda b: S.subgraph_diff("edge", D=b["D"])),
    ("triangle (Lemma 6.5.2)", "triangle", "undirected", lambda b: S.subgraph_diff("triangle", D=b["D"])),
    ("2-star (Lemma 6.5.2)", "kstar", "undirected", lambda b: S.subgraph_diff("kstar", D=b["D"], k=2)),
    ("directed edge (Lemma 6.5.4)", "edge_d", "directed", lambda b: S.subgraph_diff("edge_d", **_io(b))),
    ("triangle I (Lemma 6.5.4)", "triangle1", "directed", lambda b: S.subgraph_diff("triangle1", **_io(b))),
    ("triangle II (Lemma 6.5.4)", "triangle2", "directed", lambda b: S.subgraph_diff("triangle2", **_io(b))),
    ("out-2-star (Lemma 6.5.4)", "out_kstar", "directed", lambda b: S.subgraph_diff("out_kstar", **_io(b), k=2)),
    ("in-2-star (Lemma 6.5.4)", "in_kstar", "directed", lambda b: S.subgraph_diff("in_kstar", **_io(b), k=2)),
)


def _io(b):
    return {"D_in": b["D_in"], "D_out": b["D_out"]}


def run_table6_1(config: dict, series_name: str) -> pd.DataFrame:
    """Formula vs brute-force maximum, per configured bound: exhaustive over every graph on ``nodes`` nodes and
    every time stamp in 1..``releases`` (node 0 added/removed), τ = 1; plus the Lemma 6.4.1 construction."""
    fc = config["studies"][STUDY]["figures"]["table6_1"]
    rows = []
    common = dict(method="brute_force", method_label="brute-force search", dataset="small graph sequences",
                  dataset_variant="exhaustive", x_name="bound", metric="sensitivity",
                  preprocessing="none", preprocessing_data_dependent=False)
    for kind, bounds_list, n in (("undirected", fc["undirected_bounds"], int(fc["undirected_nodes"])),
                                 ("directed", fc["directed_bounds"], int(fc["directed_nodes"]))):
        for bb in bounds_list:
            b = {"D": int(bb)} if kind == "undirected" else {"D_in": int(bb[0]), "D_out": int(bb[1])}
            t0 = time.process_time()
            got = S.search(n, int(fc["releases"]), kind == "directed", tau=1, mutual=kind == "directed", **b)
            dt = time.process_time() - t0
            label_b = f"D = {b['D']}" if kind == "undirected" else f"D_in = {b['D_in']}, D_out = {b['D_out']}"
            for label, stat, k, formula in TABLE_6_1:
                if k != kind:
                    continue
                rows.append(_row(config, "table6_1", series_name, graph=kind, statistic=label, x=float(len(rows)),
                                 value=float(got[stat]["diff"]), formula=float(formula(b)),
                                 searched=int(got["_searched"]), releases=int(fc["releases"]),
                                 D=b.get("D", -1), D_in=b.get("D_in", -1), D_out=b.get("D_out", -1), tau=1,
                                 note=f"{label_b}; {n} nodes", runtime_s=dt, **common))
    for D in fc["construction_bounds"]:
        D = int(D)
        for tau in sorted({1, D - 1}):
            adj, times = S.tight_high_degree(D, tau)
            diff, _ = S.measure(adj, times, 2, False, tau, D, triangles=False)["high_degree"]
            rows.append(_row(config, "table6_1", series_name, **{**common, "method": "construction",
                                                                   "method_label": "Lemma 6.4.1 construction",
                                                                   "dataset_variant": "constructed"},
                             graph="undirected", statistic="high-degree nodes (Lemma 6.4.1)", x=float(len(rows)),
                             value=float(diff[0]), formula=float(S.high_degree_diff(D)), searched=1, releases=2,
                             D=D, tau=tau, note=f"D = {D}, τ = {tau}; {adj.shape[1]} nodes"))
    return pd.DataFrame(rows)


def run_table6_4(config: dict, series_name: str) -> pd.DataFrame:
    """The configured data sets' statistics (Table 6.4 columns) beside the thesis's row; D, τ as used."""
    fc = config["studies"][STUDY]["figures"]["table6_4"]
    c6 = config["studies"][STUDY]["ch6"]
    rows = []
    for name in [d for d in DATASETS if d in fc["datasets"]]:
        t0 = time.process_time()
        g = load_graph(config, name)
        st = G.statistics(g)
        b = R.bounds(g, int(c6["degree_step"]))
        tau_u = R.threshold(g, False, float(c6["tau_percentile"]))
        tau_d = R.threshold(g, True, float(c6["tau_percentile"]))
        dt = time.process_time() - t0
        for i, (col, v) in enumerate(st.items()):
            rows.append(_row(config, "table6_4", series_name, method="generator", method_label="generated",
                             dataset=name, dataset_variant=g.variant, is_substitute=g.is_substitute,
                             statistic=col, x_name="column", x=float(i), metric="graph_statistic", value=float(v),
                             source_value=float(G.TABLE_6_4[name][col]), D=b["D"], D_in=b["D_in"],
                             D_out=b["D_out"], tau=tau_u, note=f"τ directed = {tau_d}", runtime_s=dt,
                             preprocessing="none", preprocessing_data_dependent=False))
    return pd.DataFrame(rows)


def run_series(config: dict, figure: str, series_name: str, n_jobs: int = 1) -> pd.DataFrame:
    if figure not in FIGURES:
        raise ValueError(f"unknown song2018 chapter-6 figure {figure!r}")
    if series_name not in series(config["studies"][STUDY], figure):
        raise ValueError(f"{series_name!r} is not a configured series of {STUDY}/{figure}")
    if figure in ("fig6_1", "fig6_2"):
        return run_releases(config, figure, series_name)
    if figure == "table6_1":
        return run_table6_1(config, series_name)
    return run_table6_4(config, series_name)
