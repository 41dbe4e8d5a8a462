"""wu2016 — the figures of both chapters, drawn from result rows only."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpbench.plot import log_axis_at, mean_std_band, save_figure, substitute_box
from dpbench.studies.wu2016 import ch3_compute as ch3
from dpbench.studies.wu2016 import ch4_compute as ch4
from dpbench.studies.wu2016.captions import caption_text
from dpbench.studies.wu2016.ch3_compute import LABELS
from dpbench.studies.wu2016.ch3_data import DATASET_LABELS, DATASETS
from dpbench.studies.wu2016.ch4_compute import LABELS as CH4_LABELS
from dpbench.studies.wu2016.spec import figure
from dpbench.studies.wu2016.summaries import ratio_summary

STYLE = {"noiseless": dict(color="black", marker=None, linestyle="--"),
         "bolt_on": dict(color="tab:red", marker="o", linestyle="-"),
         "scs13": dict(color="tab:blue", marker="s", linestyle="-"),
         "bst14": dict(color="tab:green", marker="^", linestyle="-"),
         "bst14_tight": dict(color="tab:green", marker="^", linestyle="--")}   # tight calibration: dashed
CURVE_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")


# ---------------------------------------------------------------------------------------------------------
# chapter 3 (Figs. 3.2–3.4)
# ---------------------------------------------------------------------------------------------------------


def _plot_fig3_2(df, plt):
    datasets = [d for d in DATASETS if d in set(df["dataset"])]
    tests = sorted(df["test"].unique())
    fig, axes = plt.subplots(len(datasets), len(tests), figsize=(3.6 * len(tests), 3.0 * len(datasets)), dpi=110,
                             squeeze=False)
    for i, d in enumerate(datasets):
        for j, t in enumerate(tests):
            ax = axes[i][j]
            g = df[(df["dataset"] == d) & (df["test"] == t)]
            for m in ch3.METHODS:
                gm = g[g["method"] == m]
                if len(gm):
                    mean_std_band(ax, gm, LABELS[m], **STYLE[m])
            log_axis_at(ax, g["x"])
            ax.set_title(f"({chr(97 + i * len(tests) + j)}) {DATASET_LABELS[d]}: {ch3.TEST_LABELS[t]}",
                         fontsize=8)
            ax.set_xlabel("ε", fontsize=8)
            ax.set_ylabel("test accuracy", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
            if len(g) and bool(g["is_substitute"].iloc[0]):
                substitute_box(ax, g["dataset_variant"].iloc[0])
    handles, labels = axes[0][0].get_legend_handles_labels()
    for row in axes:
        for ax in row:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
    fig.legend(handles, labels, loc="upper right", ncol=len(labels), fontsize=8, frameon=False)
    return fig


def _plot_fig3_3(df, plt):
    panels = [p for p in ch3.FIG3_3_PANELS if p in set(df["series"])]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels), 3.6), dpi=110, squeeze=False)
    titles = {"panel_a": "(a) Test 1 (convex, ε-DP), b = {b}", "panel_b": "(b) Test 3 (strongly convex, ε-DP), b = {b}",
              "panel_c": "(c) Test 1, {k} passes"}
    for ax, p in zip(axes[0], panels):
        g = df[df["series"] == p]
        title = titles[p].format(b=int(g["batch_size"].iloc[0]), k=int(g["passes"].iloc[0]))
        curves = sorted(g["curve"].unique(), key=lambda c: float(c.split("=")[1]))
        for c, color in zip(curves, CURVE_COLORS):
            gc = g[g["curve"] == c]
            mean_std_band(ax, gc[gc["method"] == "bolt_on"], f"ours, {c}", color=color, marker="o")
            ref = gc[gc["method"] == "noiseless"].groupby("x")["value"].mean().sort_index()
            ax.plot(ref.index, ref.to_numpy(), color=color, linestyle="--", linewidth=1, label=f"noiseless, {c}")
        log_axis_at(ax, g["x"])
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("ε")
        ax.set_ylabel("test accuracy")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        if bool(g["is_substitute"].iloc[0]):
            substitute_box(ax, g["dataset_variant"].iloc[0])
    return fig


def _plot_fig3_4(df, plt):
    s = ratio_summary(df)
    datasets = [d for d in DATASETS if d in set(s["dataset"])]
    fig, axes = plt.subplots(2, len(datasets), figsize=(4.2 * len(datasets), 6.6), dpi=110, squeeze=False)
    for j, d in enumerate(datasets):
        for i, sweep in enumerate(("epochs", "batch")):
            ax = axes[i][j]
            g = s[(s["dataset"] == d) & (s["sweep"] == sweep)]
            for m in ch3.RUNTIME_METHODS:
                gm = g[g["method"] == m].sort_values("x")
                st = STYLE[m]
                hw = np.nan_to_num(gm["half_width"].to_numpy(float))  # a runtime ratio is > 0: clip the bar at 0
                ax.errorbar(gm["x"], gm["mean"], yerr=np.vstack([np.minimum(hw, gm["mean"].to_numpy(float)), hw]),
                            label=LABELS[m],
                            color=st["color"], marker=st["marker"] or "", linestyle=st["linestyle"], capsize=3)
            letter = chr(97 + j + 3 * i)
            b = int(df[(df["dataset"] == d) & (df["sweep"] == sweep)]["batch_size"].iloc[0])
            ax.set_title(f"({letter}) {DATASET_LABELS[d]}: " + (f"epochs, b = {b}" if sweep == "epochs"
                                                                     else "mini-batch size, 1 epoch"), fontsize=9)
            ax.set_xlabel("epochs" if sweep == "epochs" else "mini-batch size")
            if sweep == "batch":
                log_axis_at(ax, g["x"])
            ax.set_ylabel("runtime / noiseless")
            ax.grid(alpha=0.3)
            sub = df[df["dataset"] == d]
            if bool(sub["is_substitute"].iloc[0]):
                substitute_box(ax, sub["dataset_variant"].iloc[0])
        axes[0][j].legend(fontsize=7)
    return fig

# ---------------------------------------------------------------------------------------------------------
# chapter 4 (Figs. 4.1–4.8)
# ---------------------------------------------------------------------------------------------------------

CH4_STYLE = {"non_private": dict(color="black", linestyle="--", marker=None),
             "op_oracle": dict(color="tab:purple", linestyle="-", marker="D"),
             "op_data_independent": dict(color="tab:red", linestyle="-", marker="o"),
             "op_tuned_r1": dict(color="tab:orange", linestyle="-", marker="^"),
             "op_tuned_r2": dict(color="tab:brown", linestyle="-", marker="v"),
             "objp_tuned_r1": dict(color="tab:cyan", linestyle="-.", marker="s"),
             "objp_tuned_r2": dict(color="tab:blue", linestyle="-.", marker="P"),
             "fm": dict(color="tab:green", linestyle="-", marker="x")}
CH4_STYLE.update({m + ch4.TIGHT: {**CH4_STYLE[m], "linestyle": "--"}    # tight calibration: same colour, dashed
                  for m in ("op_data_independent", "op_tuned_r1", "op_tuned_r2", "fm")})
METRIC_OF = {"fig4_1": "accuracy", "fig4_2": "mse", "fig4_3": "mse", "fig4_5": "mse", "fig4_6": "mi_accuracy",
             "fig4_7": "mi_accuracy"}


def _prior_line(ax, g):
    p = g["prior_baseline"].dropna()
    if len(p):
        ax.axhline(float(p.mean()), color="gray", linestyle=":", linewidth=1.5, label="prior-only baseline")


def _plot_ch4(df, plt, name):
    methods = [m for m in ch4.METHODS if m in set(df["method"])]
    if name == "fig4_8":
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), dpi=110)
        for ax, metric, ylab in zip(axes, ("mse", "mi_accuracy"), ("test MSE", "MI accuracy (VKORC1)")):
            g = df[df["metric"] == metric]
            for m in methods:
                for e in sorted(g["epsilon"].unique()):
                    gm = g[(g["method"] == m) & (g["epsilon"] == e)]
                    if len(gm):
                        mean_std_band(ax, gm, f"{CH4_LABELS[m]}, ε = {e:g}", **CH4_STYLE[m])
            if metric == "mi_accuracy":
                _prior_line(ax, g)
            ax.set_xlabel("training-chunk sampling rate r")
            ax.set_ylabel(ylab)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    else:
        metric = METRIC_OF[name]
        g = df[df["metric"] == metric]
        fig, ax = plt.subplots(figsize=(6.2, 4.2), dpi=110)
        for m in methods:
            gm = g[g["method"] == m]
            if len(gm):
                mean_std_band(ax, gm, CH4_LABELS[m], **CH4_STYLE[m])
        if metric == "mi_accuracy":
            _prior_line(ax, g)
        if metric == "mse":
            ax.set_yscale("log")
        log_axis_at(ax, g["x"])
        ax.set_xlabel("ε")
        ax.set_ylabel(figure(name).y_label + (" (√dose units)" if metric == "mse" else ""))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        if len(g) and bool(g["is_substitute"].iloc[0]):
            substitute_box(ax, g["dataset_variant"].iloc[0])
    return fig


def plot(config: dict, name: str, df: pd.DataFrame, out) -> str:
    """Draw one figure from result rows only; write the PNG and the caption beside it (``.txt``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    caption = caption_text(config, name, df)
    if name in ch4.FIGURE_NAMES:
        fig = _plot_ch4(df, plt, name)
        fig.suptitle(f"wu2016 {name}: {figure(name).title}", fontsize=10)
        fig.tight_layout()
        return save_figure(fig, out, caption)
    fig = {"fig3_2": _plot_fig3_2, "fig3_3": _plot_fig3_3, "fig3_4": _plot_fig3_4}[name](df, plt)
    fig.suptitle(f"wu2016 {name}: {figure(name).title}", fontsize=10, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.97) if name == "fig3_2" else (0, 0, 1, 1))
    return save_figure(fig, out, caption)
