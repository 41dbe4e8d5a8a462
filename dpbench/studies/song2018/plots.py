"""song2018 — the figures and table images, drawn from result rows only (chapter 7, then chapters 3-4; chapter 6:
:mod:`~dpbench.studies.song2018.ch6_plots`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dpbench.data import markov
from dpbench.plot import mean_std_band, substitute_box
from dpbench.studies.song2018 import ch5_plots
from dpbench.studies.song2018 import ch6_plots
from dpbench.studies.song2018.captions import caption_text
from dpbench.studies.song2018.ch7_compute import LABELS, STUDY
from dpbench.studies.song2018.ch34_compute import C2_METHODS, CH4_DATASETS, CH4_PANELS, EPSN_METHODS, ORDER_METHODS
from dpbench.studies.song2018.ch34_compute import FIGURES as CH34_FIGURES
from dpbench.studies.song2018.ch34_compute import LABELS as CH34_LABELS
from dpbench.studies.song2018.spec import DATASET_LABELS, figure
from dpbench.studies.song2018.tables import GROUP_LABELS, markdown_table, table_frame, thesis_frame

STYLE = {"group_dp": dict(color="tab:gray", marker="x"), "gk16": dict(color="tab:green", marker="^"),
         "mqm_approx": dict(color="tab:blue", marker="s"), "mqm_exact": dict(color="tab:red", marker="o"),
         "dp": dict(color="tab:purple", marker="v"), "exact": dict(color="black", marker=None)}

CH34_STYLE = {"private": dict(color="tab:red", marker="o"), "non_private": dict(color="tab:blue", marker="s"),
              "centralized": dict(color="black", linestyle="--"), "clean_first": dict(color="tab:blue", marker="o"),
              "noisy_first": dict(color="tab:red", marker="s"), "arbitrary": dict(color="tab:green", marker="^"),
              "optimal": dict(color="black", linestyle="--", marker=None),
              "clean_only": dict(color="tab:gray", marker="x"),
              "same_clean": dict(color="tab:blue", marker="s"), "same_noisy": dict(color="tab:red", marker="v"),
              "alg2": dict(color="tab:purple", marker="o"), "alg1": dict(color="tab:purple", marker="o")}


# ---------------------------------------------------------------------------------------------------------
# plots of chapter 7
# ---------------------------------------------------------------------------------------------------------


def _simulated_label(fig, text, top: bool = True):
    fig.text(0.01, 0.995 if top else 0.01, text, fontsize=8, va="top" if top else "bottom", ha="left",
             color="darkred", bbox=dict(boxstyle="round", facecolor="mistyrose", edgecolor="darkred"))


def _save(fig, out: Path, caption: str) -> str:
    from dpbench.plot import save_figure

    return save_figure(fig, out, caption)


def _plot_fig7_4(df, ax_list):
    eps_list = sorted(df["epsilon"].unique())
    for ax, e in zip(ax_list, eps_list):
        d = df[df["epsilon"] == e]
        for s in ("gk16", "mqm_approx", "mqm_exact"):
            ds = d[(d["series"] == s) & d["applicable"].astype(bool)]
            if ds.empty:
                continue
            g = ds.groupby("x")["value"].agg(["mean", "std", "count"]).reset_index().sort_values("x")
            sem = g["std"].fillna(0) / np.sqrt(g["count"])
            ax.plot(g["x"], g["mean"], label=LABELS[s], markersize=4, **STYLE[s])
            ax.fill_between(g["x"], np.maximum(g["mean"] - sem, 1e-12), g["mean"] + sem, color=STYLE[s]["color"],
                            alpha=0.2, linewidth=0)
        gk = d[d["series"] == "gk16"]
        if not gk.empty:
            ok = gk.groupby("x")["applicable"].all()
            if ok.any() and not ok.all():
                line = 0.5 * (ok[~ok].index.max() + ok[ok].index.min())
                ax.axvline(line, color="black", linestyle="--", linewidth=1, label="GK16 applies right of this")
            elif not ok.any():
                ax.text(0.98, 0.02, "GK16 N/A at every α", transform=ax.transAxes, ha="right", va="bottom",
                        fontsize=7)
        gd = d[d["series"] == "group_dp"]
        if not gd.empty:
            ax.text(0.98, 0.98, f"GroupDP (not plotted): mean error {gd['value'].mean():.3g}", transform=ax.transAxes,
                    ha="right", va="top", fontsize=7, color="dimgray", gid="dpbench-label")  # moved off data
        ax.set_yscale("log")
        ax.set_title(f"ε = {e:g}", fontsize=9)
        ax.set_xlabel(figure("fig7_4").x_label)
        ax.grid(True, alpha=0.3, which="both")
    ax_list[0].set_ylabel(figure("fig7_4").y_label)
    ax_list[0].legend(fontsize=7, loc="lower left")


def _plot_fig7_5(df, axes):
    states = markov.ACTIVITY_STATES
    ok = df.groupby("series")["applicable"].all()
    order = [s for s in figure("fig7_5").methods if ok.get(s, False)]
    width = 0.8 / max(1, len(order))
    for ax, g in zip(axes, markov.ACTIVITY_GROUPS):
        d = df[df["group"] == g]
        for j, s in enumerate(order):
            ds = d[d["series"] == s]
            if ds.empty or not ds["applicable"].astype(bool).all():
                continue
            st = ds.groupby("x")["value"].agg(["mean", "std"]).reindex(range(len(states)))
            xs = np.arange(len(states)) - 0.4 + width * (j + 0.5)
            ax.bar(xs, st["mean"], width, yerr=st["std"].fillna(0) if s != "exact" else None, capsize=2,
                   color=STYLE[s]["color"], alpha=0.85 if s != "exact" else 1.0, label=LABELS[s])
        ax.set_xticks(range(len(states)))
        ax.set_xticklabels([s.replace(" ", "\n") for s in states], fontsize=7)
        ax.set_title(GROUP_LABELS[g], fontsize=9)
        ax.axhline(0, color="black", linewidth=0.5)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel(figure("fig7_5").y_label)
    axes[0].legend(fontsize=7, loc="upper left")


def _table_image(name, df, t: pd.DataFrame, simulated: str | None):
    import matplotlib.pyplot as plt

    thesis = thesis_frame(name, [s for s in figure(name).methods if LABELS[s] in t.index])
    width = min(18, 2.2 + 1.45 * len(t.columns))
    fig, axes = plt.subplots(2, 1, figsize=(width, 1.6 + 0.42 * (len(t) + len(thesis))), dpi=120)
    for ax, tab, title in ((axes[0], t, f"song2018 {name}: {figure(name).title} (this run)"),
                           (axes[1], thesis, f"{name} as printed in the thesis (for comparison)")):
        ax.axis("off")
        tb = ax.table(cellText=tab.values, rowLabels=list(tab.index), colLabels=list(tab.columns), loc="center",
                      cellLoc="center")
        tb.auto_set_font_size(False)
        tb.set_fontsize(8)
        tb.scale(1, 1.3)
        ax.set_title(title, fontsize=9)
    if simulated:
        _simulated_label(fig, simulated)
    fig.tight_layout(rect=(0, 0, 1, 0.93 if simulated else 1))
    return fig


def plot(config: dict, name: str, df: pd.DataFrame, out) -> str:
    """Draw a figure or render a table (image + Markdown in the caption file) from result rows only."""
    if name in CH34_FIGURES:
        return _plot_ch34(config, name, df, out)
    if name in ch5_plots.FIGURES:
        return ch5_plots.plot(config, name, df, out)
    if name in ch6_plots.FIGURES:
        return ch6_plots.plot(config, name, df, out)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    caption = caption_text(config, name, df)
    simulated = None
    if df["is_substitute"].astype(bool).any():
        simulated = ("SIMULATED DATA (stand-in for the private activity data)" if name in ("table7_1", "fig7_5")
                     else "SIMULATED DATA (stand-ins for the activity / AMPds data)" if name == "table7_2"
                     else "SIMULATED DATA (stand-in for the AMPds electricity data)")
    if name == "fig7_4":
        n = df["epsilon"].nunique()
        fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 4.0), dpi=120, squeeze=False)
        _plot_fig7_4(df, list(axes[0]))
        fig.suptitle(f"song2018 fig7_4: {figure(name).title}", fontsize=10)
        fig.tight_layout()
        return _save(fig, out, caption)
    if name == "fig7_5":
        fig, axes = plt.subplots(1, 3, figsize=(12, 4.2), dpi=120, sharey=True)
        _plot_fig7_5(df, list(axes))
        fig.suptitle(f"song2018 fig7_5: {figure(name).title}", fontsize=10)
        fig.tight_layout(rect=(0, 0.05, 1, 1))
        if simulated:
            _simulated_label(fig, simulated, top=False)
        return _save(fig, out, caption)
    t = table_frame(name, df)
    fig = _table_image(name, df, t, simulated)
    thesis = thesis_frame(name, [s for s in figure(name).methods if LABELS[s] in t.index])
    caption += ("\n\nMeasured (this run):\n\n" + markdown_table(t) + "\n\nThesis (for comparison):\n\n"
                + markdown_table(thesis) + "\n")
    return _save(fig, out, caption)


# ---------------------------------------------------------------------------------------------------------
# plots of chapters 3-4
# ---------------------------------------------------------------------------------------------------------


def _substitute_box(ax, df):
    from matplotlib.ticker import NullFormatter

    for axis in (ax.xaxis, ax.yaxis):            # no minor tick labels on log axes (they overlap)
        if axis.get_scale() == "log":
            axis.set_minor_formatter(NullFormatter())
    substitute_box(ax, sorted(df.loc[df["is_substitute"].astype(bool), "dataset_variant"].unique()), fontsize=6)


def _band(ax, g, label, style, xcol="x"):
    mean_std_band(ax, g, label, xcol=xcol, alpha=0.18, markersize=3, **style)


def _plot_trace(df, plt, group_col: str, title_fn):
    dsets = list(df["dataset"].unique())
    nval = max(len(df[df["dataset"] == d][group_col].unique()) for d in dsets)
    one = len(dsets) == 1                        # a single dataset: its panels side by side
    nrow, ncol = (1, nval) if one else (nval, len(dsets))
    fig, axes = plt.subplots(nrow, ncol, figsize=(5.2 * ncol, 3.6 * nrow), dpi=110, squeeze=False)
    for j, d in enumerate(dsets):
        vals = sorted(df[df["dataset"] == d][group_col].unique())
        for i, v in enumerate(vals):
            ax = axes[0][i] if one else axes[i][j]
            g = df[(df["dataset"] == d) & (df[group_col] == v)]
            for m in ("private", "non_private"):
                gm = g[g["method"] == m]
                if not gm.empty:
                    _band(ax, gm, CH34_LABELS[m], CH34_STYLE[m])
            ax.set_title(title_fn(d, v, g), fontsize=9)
            ax.set_xlabel("samples processed")
            ax.set_ylabel("objective (3.1)")
            ax.set_yscale("log")
            ax.grid(True, alpha=0.3, which="both")
            ax.legend(fontsize=7, loc="upper right")
            _substitute_box(ax, g)
    return fig


def _plot_fig3_2(df, plt):
    ds = list(df["dataset"].unique())
    scheds = list(df["curve"].unique())
    fig, axes = plt.subplots(len(scheds), len(ds), figsize=(5.2 * len(ds), 3.6 * len(scheds)), dpi=110, squeeze=False)
    for j, d in enumerate(ds):
        for i, s in enumerate(scheds):
            ax = axes[i][j]
            g = df[(df["dataset"] == d) & (df["curve"] == s)]
            for m in ("private", "non_private"):
                if not g[g["method"] == m].empty:
                    _band(ax, g[g["method"] == m], CH34_LABELS[m], CH34_STYLE[m])
            c = g[g["method"] == "centralized"]
            if not c.empty:
                ax.axhline(c["value"].mean(), label=CH34_LABELS["centralized"], **CH34_STYLE["centralized"])
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(sorted(g["x"].unique()))
            ax.set_xticklabels([f"{v:g}" for v in sorted(g["x"].unique())])
            ax.set_title(f"{DATASET_LABELS[d]}, {s}", fontsize=9)
            ax.set_xlabel("batch size b")
            ax.set_ylabel("objective (3.1) after one pass")
            ax.grid(True, alpha=0.3, which="both")
            ax.legend(fontsize=7)
            _substitute_box(ax, g)
    return fig


def _plot_fig4_1(df, plt, lam):
    ds = [d for d in CH4_DATASETS if d in set(df["dataset"])]
    panels = [p for p in CH4_PANELS if p in set(df["panel"])]
    fig, axes = plt.subplots(len(ds), len(panels), figsize=(4.8 * len(panels), 3.8 * len(ds)), dpi=110,
                             squeeze=False)
    for i, d in enumerate(ds):
        for j, p in enumerate(panels):
            ax = axes[i][j]
            g = df[(df["dataset"] == d) & (df["panel"] == p)]
            if g.empty:
                ax.axis("off")
                continue
            methods = {"order": ORDER_METHODS, "epsn": EPSN_METHODS, "c2": C2_METHODS}[p]
            for m in methods:
                gm = g[g["method"] == m]
                if not gm.empty:
                    _band(ax, gm, CH34_LABELS[m], CH34_STYLE[m])
            if p == "order":
                ax.axvline(1.0 / lam, color="black", linestyle=":", linewidth=1, label="c = 1/λ")
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_xlabel("c  (η_t = c/t)")
                ax.set_ylabel("|f(w_T+1) − f(v_T+1)|")
                ax.set_title(f"{DATASET_LABELS[d]}: ε_C = {g['epsilon_clean'].iloc[0]:g}, ε_N = "
                             f"{g['epsilon_noisy'].iloc[0]:g}", fontsize=9)
            elif p == "epsn":
                ax.set_yscale("log")
                ax.set_xlabel("ε_N")
                ax.set_ylabel("final objective (4.1)")
                ax.set_title(f"{DATASET_LABELS[d]}: ε_C = {g['epsilon_clean'].iloc[0]:g}", fontsize=9)
            else:
                lo, hi = float(g["c2_lower"].iloc[0]), float(g["c2_upper"].iloc[0])
                ax.axvline(lo, color="tab:green", linestyle="--", linewidth=1, label=f"c₂(L) = {lo:.4g}")
                ax.axvline(hi, color="tab:orange", linestyle="--", linewidth=1, label=f"c₂(U) = {hi:.4g}")
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_xlabel(f"c₂  (order {g['order'].iloc[0]})")
                ax.set_ylabel("final objective (4.1)")
                ax.set_title(f"{DATASET_LABELS[d]}: ε_N = {g['epsilon_noisy'].iloc[0]:g}", fontsize=9)
            ax.grid(True, alpha=0.3, which="both")
            ax.legend(fontsize=6)
            _substitute_box(ax, g)
    return fig


def _plot_ch34(config: dict, name: str, df: pd.DataFrame, out) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dpbench.plot import save_figure

    caption = caption_text(config, name, df)
    if name == "fig3_1":
        fig = _plot_trace(df, plt, "batch_size", lambda d, v, g: f"{DATASET_LABELS[d]}, b = {v}, η_t = 1/√t")
    elif name == "fig3_3":
        fig = _plot_trace(df, plt, "curve", lambda d, v, g: f"{DATASET_LABELS[d]}, b = {g['batch_size'].iloc[0]}, {v}")
    elif name == "fig3_2":
        fig = _plot_fig3_2(df, plt)
    elif name == "fig4_1":
        fig = _plot_fig4_1(df, plt, float(config["studies"][STUDY]["ch4"]["l2"]))
    else:
        raise ValueError(f"unknown figure {name!r}")
    fig.suptitle(f"song2018 {name}: {figure(name).title}", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, out, caption)
