"""song2018 chapter 6 — caption notes (every choice the thesis leaves open, every deviation; collected in
docs/studies/song2018.md#chapter-6-continual-release-of-graph-statistics) and the caption text."""

from __future__ import annotations

import pandas as pd

from dpbench.studies.base import preprocessing_note
from dpbench.studies.song2018.ch6_spec import FIGURES

SURROGATE_NOTE = ("SURROGATE DATA: the HIV transmission graph is private and the patent (NBER) and paper (ACL) "
                  "citation graphs are download-only; their rows use generated graphs matched to Table 6.4 (nodes "
                  "and timespan exact, edges in expectation, maximum degree / in- / out-degree as caps; "
                  "dpbench.data.graphs.surrogate), NOT the real graphs. Errors are compared with the thesis only "
                  "qualitatively.")

METHOD_NOTES = [
    "SENSDIFF (Alg. 5): Lap(GS_D(Δ)/ε) on every difference, GS of the whole difference sequence from Table 6.1 / "
    "Lemma 6.5.2: highDeg_τ 2D + 1, highOutDeg_τ 2D_in + 1, edges D (undirected) or D_in + D_out (directed).",
    "COMPOSE-D-BOUNDED: Lap(GS·T/ε) per release with the single-snapshot GS the thesis does not state [DERIVED]: "
    "highDeg_τ D + 1, highOutDeg_τ D_in + 1, edges D or D_in + D_out.",
    "COMPOSE-PROJECTION: the edge-addition projection of Day, Li, Lyu (SIGMOD 2016) run online (nodes by time "
    "stamp, edges by their later end point, so G̃_t is a prefix of G̃_T), noise GS(D̃)·T/ε with GS(D̃) = D̃ + 1 "
    "(highDeg), D̃_in + 1 (highOutDeg), D̃ or D̃_in + D̃_out (edges) [INFERRED; optimistic: it ignores how removing "
    "one node can change later projection decisions]. D̃ = ceil(q·D) over the configured fractions q (directed: "
    "(ceil(q·D_in), ceil(q·D_out)) with one q) [INFERRED: 'a predetermined list'], for high-degree nodes only "
    "D̃ > τ (D̃_out > τ; §6.4.1.1: otherwise highDeg_τ of the projection is meaningless), the best by mean error "
    "at no privacy cost, the same noise draws for every candidate (optimistic, as the thesis says, §6.6.1.2).",
    "D: the actual maximum degree (in-, out-degree) rounded up to a multiple of 5; τ: the 90th percentile of the "
    "final graph's degree (out-degree) distribution, at least 1 (§6.6.1.2); both read from the data, as in the "
    "thesis (not covered by ε).",
    "Relative L1 error Σ_t |A(G_t) − f(G_t)| / f(G_t) (§6.6.3); a release with f(G_t) = 0 is divided by 1 "
    "[INFERRED].",
    "Nodes dated before the first release (Synthetic I's m₀ initial nodes, Synthetic II's n₀ seeds, the "
    "surrogates' earlier nodes) enter with the first release.",
]


def deviations(cfg: dict, name: str) -> list[str]:
    c6 = cfg.get("ch6") or {}
    fc = cfg["figures"][name]
    out: list[str] = []
    if name in ("fig6_1", "fig6_2"):
        out += METHOD_NOTES
        out.append(f"{c6.get('runs')} runs per point (noise draws on one generated graph per data set); curves: mean, "
                   "bands: ± one standard deviation.")
        if name == "fig6_1":
            out.append(f"ε grid {fc['epsilons']} [INFERRED: not given in the thesis]; one release per year.")
        else:
            out.append(f"T grid {fc['releases']} [INFERRED: not given]; T releases spread evenly over the timespan, "
                       "the last at its end (release r at year first − 1 + ceil(r·span/T)); T above a data set's "
                       f"timespan is left out; ε = {fc['epsilon']}.")
    if name in ("fig6_1", "fig6_2", "table6_4"):
        s1, s2 = c6.get("synthetic1", {}), c6.get("synthetic2", {})
        out += [
            f"Synthetic I (§6.6.2.2): {s1}; the attachment weight is (out-deg + 1)·(now − time + 1)^(−c) — the "
            "thesis's deg·(…)^(−c) is 0 for every initial node [INFERRED fix]; 'isolated with probability "
            "proportional to P_isolated' read as probability P_isolated; it has m₀ + n·Y nodes (1900 with the "
            "thesis's parameters; Table 6.4 says 1990).",
            f"Synthetic II (§6.6.2.2): {s2}; n₀ not given [INFERRED from Table 6.4: 1088 − 588 = 500]; the SIR "
            "process as described transmits more than Table 6.4's 588 edges (see Table 6.4 here).",
        ]
        if float(c6.get("surrogate_scale", 1.0)) != 1.0:
            out.append(f"REDUCED: surrogates at {c6['surrogate_scale']:g}× the Table 6.4 sizes (nodes, edges).")
    if name == "table6_1":
        out += [
            f"Brute force: every undirected graph on {fc['undirected_nodes']} nodes and every directed graph on "
            f"{fc['directed_nodes']} nodes (reciprocal pairs allowed) with every time stamp in 1..{fc['releases']}, "
            "kept when it respects the bound; node 0 is added/removed with its edges; the L1 distance of the "
            "difference sequences over the releases (and the degrees, for histograms); τ = 1; k-stars with k = 2.",
            "A bound is only reached when the graph has enough nodes (e.g. 2D + 1 needs 2D + 1 nodes): the "
            "Lemma 6.4.1 construction rows reach 2D + 1 for larger D.",
            "Lemma 6.4.2 (the projection's difference sequence has GS ≥ D̃T) is not measured.",
        ]
    return out


def caption_text(config: dict, name: str, df: pd.DataFrame) -> str:
    cfg = config["studies"]["song2018"]
    lines = [FIGURES[name].caption, f"Data: {', '.join(sorted(df['dataset_variant'].unique()))}."]
    if df["is_substitute"].astype(bool).any():
        lines.append(SURROGATE_NOTE)
    if name in ("fig6_1", "fig6_2"):
        lines += preprocessing_note(df)
    lines += [f"Note: {d}" for d in deviations(cfg, name)]
    return "\n".join(lines)
