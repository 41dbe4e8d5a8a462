"""song2018 chapter 6 — the figure declarations (Figs 6.1, 6.2, Tables 6.1, 6.4) and the configuration rules of
the ``ch6`` block; light to import (nothing is computed here)."""

from __future__ import annotations

from dpbench.config import ConfigError
from dpbench.methods.graph_release import METHODS
from dpbench.studies.base import FigureSpec
from dpbench.studies.song2018.ch6_compute import STUDY

FIGURES: dict[str, FigureSpec] = {
    "fig6_1": FigureSpec(STUDY, "fig6_1", "Continual release of graph statistics: relative L1 error vs ε", "epsilon",
                         "ε", "relative L1 error Σ_t |A(G_t) − f(G_t)| / f(G_t)", METHODS,
                         "Fig. 6.1: relative L1 error summed over the releases vs ε, one release per year, averaged "
                         "over 100 runs; columns: number of high-(out-)degree nodes (directed / undirected) and number "
                         "of edges (directed / undirected); rows: data sets. SENSDIFF (Alg. 5) vs COMPOSE-D-BOUNDED "
                         "and COMPOSE-PROJECTION (ε/T per release).", xscale="log",
                         anchors=("A6.1", "A6.4")),
    "fig6_2": FigureSpec(STUDY, "fig6_2", "Continual release of graph statistics: relative L1 error vs T (ε = 5)",
                         "releases", "number of releases T", "relative L1 error Σ_t |A(G_t) − f(G_t)| / f(G_t)",
                         METHODS,
                         "Fig. 6.2: relative L1 error vs the number of releases T at ε = 5, averaged over 100 runs; "
                         "same columns and rows as Fig. 6.1.", xscale="log", anchors=("A6.2", "A6.3", "A6.4b")),
    "table6_1": FigureSpec(STUDY, "table6_1", "Sensitivity of the difference sequence: formula vs brute force",
                           "bound", "degree bound", "global sensitivity", ("brute_force", "construction"),
                           "Table 6.1 (and Lemmas 6.5.2, 6.5.4): global sensitivity of the difference sequence of "
                           "degree statistics and subgraph counts on D-bounded (D_in, D_out)-bounded graph "
                           "sequences, beside the maximum measured by a search over small sequences.",
                           xscale="linear", anchors=("A6.T1",)),
    "table6_4": FigureSpec(STUDY, "table6_4", "Graph data sets: generated vs Table 6.4", "column", "statistic",
                           "value", ("generator",),
                           "Table 6.4: nodes, edges, timespan (years), max degree (undirected version), max in- and "
                           "out-degree (directed version) of the five data sets; here the generated graphs beside "
                           "the thesis's rows.", xscale="linear", anchors=("A6.T4",)),
}

DATA_NOTE = ("Figs 6.1-6.2, Table 6.4: Synthetic I and II are the thesis's own generators; the HIV transmission "
             "(private), patent citation and paper citation (download-only) graphs are SURROGATES matched to their "
             "Table 6.4 rows, labelled on every image and row.")


def validate(cfg: dict, prefix: str = "studies.song2018") -> None:
    """Chapter-6 cross-field rules; raise ConfigError naming the key."""
    def bad(key, msg):
        raise ConfigError(f"invalid config: {prefix}.{key}: {msg}")

    figs = {k: v for k, v in cfg.get("figures", {}).items() if k in FIGURES and v}
    if not figs:
        return
    if cfg.get("ch6") is None:
        bad("ch6", "the chapter-6 settings are required when fig6_1, fig6_2, table6_1 or table6_4 is enabled")
    f1 = figs.get("fig6_1")
    if f1 and len(set(f1["epsilons"])) != len(f1["epsilons"]):
        bad("figures.fig6_1.epsilons", f"duplicate values in {f1['epsilons']}")
    f2 = figs.get("fig6_2")
    if f2:
        rel = f2["releases"]
        if len(set(rel)) != len(rel):
            bad("figures.fig6_2.releases", f"duplicate values in {rel}")
        if len([t for t in rel if t <= 15]) < 2:
            bad("figures.fig6_2.releases", f"needs at least two values ≤ 15 (the shortest timespan), got {rel}")
    t1 = figs.get("table6_1")
    if t1:
        for key in ("undirected_bounds", "construction_bounds"):
            if len(set(t1[key])) != len(t1[key]):
                bad(f"figures.table6_1.{key}", f"duplicate values in {t1[key]}")
        if any(d >= t1["undirected_nodes"] for d in t1["undirected_bounds"]):
            bad("figures.table6_1.undirected_bounds", f"a bound ≥ the {t1['undirected_nodes']} nodes is never binding")
