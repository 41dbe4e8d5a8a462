"""song2018 — the figures (titles, axes, captions) of both parts and the configuration hooks.

Light to import (no compute is run here): the workflow reads it to build the DAG.
"""

from __future__ import annotations

import json

from dpbench.config import ConfigError
from dpbench.data import markov
from dpbench.studies.base import FigureSpec, lookup_figure
from dpbench.studies.song2018 import ch34_compute as ch34
from dpbench.studies.song2018 import ch34_data
from dpbench.studies.song2018 import ch5_spec as ch5
from dpbench.studies.song2018.ch5_compute import series as ch5_series
from dpbench.studies.song2018 import ch6_compute as ch6
from dpbench.studies.song2018 import ch6_spec
from dpbench.studies.song2018.ch7_compute import SERIES, STUDY

DATA_NOTE = ("Data: Fig. 7.4 uses the thesis's own synthetic binary chains; Tables 7.1-7.3 and Fig. 7.5 use "
             "SIMULATED stand-ins for the private activity data and the download-only AMPds electricity data, "
             "labelled in red on every image, in every result row and in the anchor-check table. Figs 3.1-3.3 and "
             "4.1 use MNIST, KDDCup99 and Covertype (checksummed downloads) or, when unavailable, labelled "
             "SUBSTITUTE data (red box on the panel), and the thesis's synthetic sphere data. " + ch6_spec.DATA_NOTE)

FIGURES: dict[str, FigureSpec] = {
    "fig7_4": FigureSpec(STUDY, "fig7_4", "Synthetic binary chains: L1 error vs α", "alpha", "α  (Θ = [α, 1−α])",
                         "L1 error of the frequency of state 1", SERIES["fig7_4"],
                         "Fig. 7.4: L1 error of the released frequency of state 1 vs α for ε = 0.2, 1, 5 on synthetic "
                         "binary Markov chains of length T = 100, Θ = [α, 1−α] (p₀, p₁ ∈ [α, 1−α], every initial "
                         "distribution), averaged over 500 trials. GK16 does not apply left of the dashed line; "
                         "GroupDP (error ≈ 1/ε) is not plotted.", xscale="linear", anchors=("A7.4a", "A7.4b")),
    "table7_1": FigureSpec(STUDY, "table7_1", "Physical activity: L1 error (ε = 1)", "epsilon", "ε",
                           "L1 error of the relative-frequency histogram", SERIES["table7_1"],
                           "Table 7.1: L1 error of the relative-frequency histograms (4 activity states) for the "
                           "aggregate and individual tasks of three participant groups, ε = 1, averaged over 20 "
                           "trials.", anchors=("A7.1",)),
    "table7_2": FigureSpec(STUDY, "table7_2", "Time to compute the Laplace scale (ε = 1)", "epsilon", "ε", "seconds",
                           SERIES["table7_2"],
                           "Table 7.2: running time in seconds of the procedure that computes the scale of the "
                           "Laplace noise (averaged over runs), ε = 1.", anchors=("A7.2",)),
    "table7_3": FigureSpec(STUDY, "table7_3", "Electricity: L1 error", "epsilon", "ε",
                           "L1 error of the relative-frequency histogram", SERIES["table7_3"],
                           "Table 7.3: L1 error of the 51-bin relative-frequency histogram of household power "
                           "consumption, ε ∈ {0.2, 1, 5}, averaged over 20 trials.", anchors=("A7.3",)),
    "fig7_5": FigureSpec(STUDY, "fig7_5", "Physical activity: exact vs private aggregated histograms (ε = 1)",
                         "state", "activity", "relative frequency", SERIES["fig7_5"],
                         "Fig. 7.5: exact and private aggregated relative-frequency histograms of the three groups "
                         "(ε = 1, 20 trials). GK16 does not apply.", xscale="linear", anchors=("A7.5",)),
}

FIGURES.update({  # chapters 3-4 (DP SGD, LDP SGD; computed by ch34_compute)
    "fig3_1": FigureSpec(STUDY, "fig3_1", "Objective vs samples processed, private vs non-private (ε = 1)",
                         "samples", "number of samples processed (iterations × b)", "objective (3.1)",
                         ("private", "non_private"),
                         "Fig. 3.1: objective (3.1) vs number of iterations, the axis scaled to the number of samples "
                         "processed, for private (update 3.6, ε = 1) and non-private mini-batch SGD, η_t = 1/√t, "
                         "λ = 1e-4, one pass; MNIST (top: b = 1, bottom: b = 10) and KDDCup99 (b = 1 and b = 5).",
                         xscale="linear", anchors=("A3.1",)),
    "fig3_2": FigureSpec(STUDY, "fig3_2", "Objective vs batch size (ε = 1)", "batch_size", "batch size b",
                         "objective (3.1)", ("private", "non_private", "centralized"),
                         "Fig. 3.2: final objective (3.1) after one pass vs batch size b ∈ {1, 2, 5, 10, 20, 50} for "
                         "private and non-private SGD and a centralized solver on all data, MNIST and KDDCup99, "
                         "step sizes 1/√t and 10/√T.", xscale="log", anchors=("A3.2a", "A3.2b")),
    "fig3_3": FigureSpec(STUDY, "fig3_3", "Synthetic data, b = 5: two step-size schedules", "samples",
                         "number of samples processed", "objective (3.1)", ("private", "non_private"),
                         "Fig. 3.3: objective (3.1) vs number of data points processed on the synthetic data "
                         "(10,000 points on the 5-d unit sphere, margin 0.001), b = 5, η_t = 1/√t and η_t = 1/(λt), "
                         "private (ε = 1) and non-private.", xscale="linear", anchors=("A3.3",)),
    "fig4_1": FigureSpec(STUDY, "fig4_1", "LDP SGD with heterogeneous privacy", "panel", "see panels",
                         "objective (4.1)", ch34.ORDER_METHODS + ch34.EPSN_METHODS + ("alg1",),
                         "Fig. 4.1: column 1 |f(w_T+1) − f(v_T+1)| vs c (η_t = c/t, ε_C = 10, ε_N = 3); column 2 "
                         "final objective vs ε_N (ε_C = 10); column 3 final objective vs c₂ (c₁ = 1/λ) with c₂(L) and "
                         "c₂(U) marked (ε_N = 2 MNIST, 1 Covertype). λ = 1e-3, β_C = 10 %, batch 50; top row MNIST "
                         "(1 vs rest, 25-d), bottom row Covertype (type 2 vs rest, 54-d).", xscale="log",
                         anchors=("A4.1a", "A4.1b", "A4.1c", "A4.alg2")),
})

FIGURES.update(ch5.FIGURES)  # chapter 5 (Scalable PATE; computed by ch5_compute)
FIGURES.update(ch6_spec.FIGURES)  # chapter 6 (continual release of graph statistics; computed by ch6_compute)

#: dataset names of chapters 3-4 in captions, panel titles and claim statements
DATASET_LABELS = {"mnist": "MNIST", "kddcup99": "KDDCup99", "synthetic": "Synthetic (5-d sphere)",
                  "covertype": "Covertype"}


# ---------------------------------------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------------------------------------


def validate(cfg: dict, prefix: str = "studies.song2018") -> None:
    """Cross-field rules the JSON schema cannot express; raise ConfigError naming the key."""
    def bad(key, msg):
        raise ConfigError(f"invalid config: {prefix}.{key}: {msg}")

    _validate_ch34(cfg, prefix)
    ch5.validate(cfg, prefix)
    ch6_spec.validate(cfg, prefix)
    for name, fig in cfg.get("figures", {}).items():
        if name in ch34.FIGURES or name in ch5.FIGURES or name in ch6.FIGURES or fig is None:  # null = disabled
            continue
        for key in ("alphas", "epsilons"):
            values = fig.get(key)
            if values is not None and len(set(values)) != len(values):
                bad(f"figures.{name}.{key}", f"duplicate values in {values}")
        for i, m in enumerate(fig.get("methods", [])):
            if m not in figure(name).methods:
                bad(f"figures.{name}.methods[{i}]", f"{m!r} is not a series of {name}; its series are "
                                                    f"{list(figure(name).methods)}")
    t2 = cfg.get("figures", {}).get("table7_2")
    if t2 is not None:
        lo, hi = t2["theta_range"]
        if not lo < hi:
            bad("figures.table7_2.theta_range", f"needs lo < hi, got {t2['theta_range']}")
        if t2["theta_grid_step"] > hi - lo:
            bad("figures.table7_2.theta_grid_step", f"{t2['theta_grid_step']} exceeds the range width {hi - lo:g}")
    obs = cfg.get("activity", {}).get("observations")
    if obs is not None and obs[0] > obs[1]:
        bad("activity.observations", f"needs [lo, hi] with lo <= hi, got {obs}")


def _validate_ch34(cfg: dict, prefix: str) -> None:
    """Cross-field rules of the chapter 3/4 settings; raise ConfigError naming the key."""
    def bad(key, msg):
        raise ConfigError(f"invalid config: {prefix}.{key}: {msg}")

    figs = {k: v for k, v in cfg.get("figures", {}).items() if k in ch34.FIGURES and v}
    if not figs:
        return
    pre = cfg.get("preprocessing") or {}
    if pre.get("variant", "data_independent") == "data_independent" and pre.get("feature_normalisation") == "standardise":
        bad("preprocessing.feature_normalisation", "'standardise' needs the mean and standard deviation of the "
            "training data (non-private); use 'minmax' (fixed domain bounds) or set "
            "studies.song2018.preprocessing.variant: source")
    ch3, ch4 = cfg.get("ch3"), cfg.get("ch4")
    if any(f.startswith("fig3") for f in figs) and ch3 is None:
        bad("ch3", "the chapter-3 settings are required when fig3_1, fig3_2 or fig3_3 is enabled")
    if "fig4_1" in figs and ch4 is None:
        bad("ch4", "the chapter-4 settings are required when fig4_1 is enabled")
    for name in ("fig3_1", "fig3_2"):
        fc = figs.get(name)
        if not fc:
            continue
        ds = fc["datasets"]
        if len(set(ds)) != len(ds):
            bad(f"figures.{name}.datasets", f"duplicate values in {ds}")
        for d in ds:
            bs = fc["batch_sizes"][d] if name == "fig3_1" else fc["batch_sizes"]
            if name == "fig3_1" and d not in fc["batch_sizes"]:
                bad(f"figures.{name}.batch_sizes", f"no batch sizes for dataset {d!r}")
            if len(set(bs)) != len(bs):
                key = f"figures.{name}.batch_sizes" + (f".{d}" if name == "fig3_1" else "")
                bad(key, f"duplicate values in {bs}")
            n = ch3["datasets"][d]["n"]
            if n is not None and max(bs) > n:
                bad(f"ch3.datasets.{d}.n", f"{n} rows cannot fill one batch of b = {max(bs)} ({name})")
        if name == "fig3_2" and len(set(fc["schedules"])) != len(fc["schedules"]):
            bad("figures.fig3_2.schedules", f"duplicate values in {fc['schedules']}")
    f3 = figs.get("fig3_3")
    if f3 and len(set(f3["schedules"])) != len(f3["schedules"]):
        bad("figures.fig3_3.schedules", f"duplicate values in {f3['schedules']}")
    f4 = figs.get("fig4_1")
    if f4:
        ds = f4["datasets"]
        if len(set(ds)) != len(ds):
            bad("figures.fig4_1.datasets", f"duplicate values in {ds}")
        lam, eps_c, b, beta = ch4["l2"], ch4["epsilon_clean"], ch4["batch_size"], ch4["beta_clean"]
        for d in ds:
            n = ch4["datasets"][d]["n"]
            if n is not None and beta * n < b:
                bad(f"ch4.datasets.{d}.n", f"β_C·n = {beta * n:g} clean rows cannot fill one batch of {b}")
        o = f4.get("order")
        if o:
            if o["epsilon_noisy"] > eps_c:
                bad("figures.fig4_1.order.epsilon_noisy", f"{o['epsilon_noisy']} exceeds ε_C = {eps_c}: D_N must be "
                    "the noisier set")
            cs = o["cs"]
            if len(set(cs)) != len(cs):
                bad("figures.fig4_1.order.cs", f"duplicate values in {cs}")
            if not min(cs) < 1.0 / lam < max(cs):
                bad("figures.fig4_1.order.cs", f"the grid must straddle 1/λ = {1.0 / lam:g} (Thm 4.3.1), got {cs}")
        e = f4.get("epsn")
        if e:
            en = e["epsilon_noisys"]
            if len(set(en)) != len(en):
                bad("figures.fig4_1.epsn.epsilon_noisys", f"duplicate values in {en}")
            if max(en) > eps_c:
                bad("figures.fig4_1.epsn.epsilon_noisys", f"values above ε_C = {eps_c}: D_N must be the noisier set")
        c2 = f4.get("c2")
        if c2:
            for d in ds:
                if d not in c2["epsilon_noisy"]:
                    bad("figures.fig4_1.c2.epsilon_noisy", f"no ε_N for dataset {d!r}")
                if c2["epsilon_noisy"][d] > eps_c:
                    bad(f"figures.fig4_1.c2.epsilon_noisy.{d}", f"exceeds ε_C = {eps_c}")


def figure_names(cfg: dict) -> list[str]:
    figs = cfg.get("figures", {})
    return [f for f in FIGURES if figs.get(f) is not None and (f not in ch34.FIGURES or figs[f])]   # null = disabled


def figure(name: str) -> FigureSpec:
    return lookup_figure(FIGURES, STUDY, name)


def series(cfg: dict, name: str) -> list[str]:
    """The figure's series, optionally restricted by ``figures.<name>.methods``."""
    if name in ch34.FIGURES:
        return ch34.series(cfg, name)
    if name in ch5.FIGURES:
        return ch5_series(cfg, name)
    if name in ch6.FIGURES:
        return ch6.series(cfg, name)
    wanted = cfg["figures"][name].get("methods")
    return [m for m in figure(name).methods if wanted is None or m in wanted]


def series_threads(cfg: dict, figure_name: str, series_name: str) -> int:
    """Joblib workers a series job can use: only Fig. 7.4's grid searches run in parallel; Table 7.2 asks for
    every core so that nothing runs beside its timings; the rest is serial (1 thread, jobs run side by side).
    Chapter 3/4 series run their units in parallel."""
    if figure_name in ch34.FIGURES:
        return 1 << 10
    if figure_name in ch6.FIGURES:   # chapter 6: serial numpy
        return 1
    if figure_name == "table7_2" or (figure_name == "fig7_4" and series_name in ("mqm_exact", "gk16")):
        return 1 << 10
    return 1


def dataset_signature(config: dict) -> str:
    cfg = config["studies"][STUDY]
    return json.dumps({"seed": config["seed"], "cache_dir": config["data"]["cache_dir"],
                       "activity": cfg.get("activity"), "electricity": cfg.get("electricity"),
                       "figures": sorted(f for f, fc in cfg.get("figures", {}).items() if fc is not None),
                       "v": markov.VERSION,
                       "ch34": ch34_data.dataset_signature(config)}, sort_keys=True)
