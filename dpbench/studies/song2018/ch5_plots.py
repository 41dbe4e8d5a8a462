"""song2018 chapter 5 — Table 5.1 and Figs 5.1, 5.4-5.6 drawn from result rows only."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpbench.studies.song2018.ch5_anchors import table_frame, thesis_frame
from dpbench.studies.song2018.ch5_captions import caption_text
from dpbench.studies.song2018.ch5_spec import FIGURES

STYLE = {"lnmax": dict(color="tab:blue", marker="s"), "gnmax": dict(color="tab:red", marker="o"),
         "confident": dict(color="tab:green", marker="^"),
         "confident_moderate": dict(color="tab:green", marker=None),
         "confident_aggressive": dict(color="tab:purple", marker=None)}
NAMES = {"lnmax": "LNMax", "gnmax": "GNMax", "confident": "Confident-GNMax",
         "confident_moderate": "Confident-GNMax (moderate)", "confident_aggressive": "Confident-GNMax (aggressive)"}


def _label(fig, df):
    sub = sorted(df.loc[df["is_substitute"].astype(bool), "dataset_variant"].unique())
    if sub:
        fig.text(0.01, 0.005, "SIMULATED / SUBSTITUTE DATA: " + ", ".join(sub), fontsize=8, va="bottom", ha="left",
                 color="darkred", bbox=dict(boxstyle="round", facecolor="mistyrose", edgecolor="darkred"))


def _curves(ax, df, shade: bool):
    for m, g in df[df["metric"] == "eps_curve"].groupby("method", sort=False):
        g = g.sort_values("queries")
        st = STYLE.get(m, {})
        ax.plot(g["x"], g["value"], color=st.get("color"), label=NAMES.get(m, m))
        if shade:
            thr = g["value"] * g["threshold_share"]
            if thr.max() > 0:
                ax.fill_between(g["x"], 0, thr, color=st.get("color"), alpha=0.35, linewidth=0)
    ax.set_xlabel("number of queries answered")
    ax.set_ylabel("privacy cost ε")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def _bars(ax, df, methods, bins):
    width = 0.8 / len(methods)
    for i, m in enumerate(methods):
        g = df[(df["method"] == m) & (df["metric"] == "answered_in_bin")].sort_values("x")
        ax.bar(g["x"] + (i - (len(methods) - 1) / 2) * width, g["value"], width=width,
               color=STYLE.get(m, {}).get("color"), label=NAMES.get(m, m))
    ax.set_xticks(range(bins))
    ax.set_xticklabels([f"{100 * b // bins}-{100 * (b + 1) // bins}" for b in range(bins)], fontsize=7,
                       rotation=45)
    ax.set_xlabel("% teachers that agree")
    ax.set_ylabel("number of queries answered")
    ax.legend(fontsize=7)


def plot(config: dict, name: str, df: pd.DataFrame, out) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dpbench.plot import save_figure

    caption = caption_text(config, name, df)
    spec = FIGURES[name]
    if name == "table5_1":
        t, th = table_frame(df), thesis_frame()
        fig, axes = plt.subplots(2, 1, figsize=(15, 2.2 + 0.36 * (len(t) + len(th))), dpi=110)
        for ax, tab, title in ((axes[0], t, f"song2018 table5_1: {spec.title} (this run)"),
                               (axes[1], th, "Table 5.1 as printed in the thesis (for comparison)")):
            ax.axis("off")
            tb = ax.table(cellText=tab.values, colLabels=list(tab.columns), loc="center", cellLoc="center")
            tb.auto_set_font_size(False)
            tb.set_fontsize(7)
            tb.auto_set_column_width(col=list(range(len(tab.columns))))
            tb.scale(1, 1.3)
            ax.set_title(title, fontsize=9)
        _label(fig, df)
        fig.tight_layout(rect=(0, 0.04, 1, 0.97))
        from dpbench.studies.song2018.tables import markdown_table

        caption += "\n\nMeasured (this run):\n\n" + markdown_table(t.set_index("Dataset")) + "\n"
        return save_figure(fig, out, caption)
    if name == "fig5_1":
        fig, axes = plt.subplots(1, 3, figsize=(14, 4.2), dpi=110)
        left = df[df["panel"] == "left"]
        axes[0].bar(range(len(left)), left["value"], color=[STYLE[m]["color"] for m in left["method"]])
        axes[0].set_xticks(range(len(left)))
        axes[0].set_xticklabels([f"{NAMES[m]}\n({int(x):,} answered)" for m, x in zip(left["method"], left["x"])],
                                fontsize=7)
        axes[0].set_ylabel("student accuracy")
        axes[0].set_ylim(0, 1)
        _curves(axes[1], df[df["panel"] == "middle"], shade=False)
        right = df[df["panel"] == "right"]
        _bars(axes[2], right, ["lnmax", "confident"], int(right["bins"].iloc[0]))
    elif name == "fig5_4":
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), dpi=110)
        left = df[df["series"] == "ch5_left"]
        for m, g in left.groupby("method"):
            g = g.sort_values("x")
            axes[0].plot(g["epsilon"], g["value"], label=f"{NAMES[m]} (M = {int(g['teachers'].iloc[0])})",
                         **STYLE[m])
            for r in g.itertuples():
                axes[0].annotate(f"{r.x:g}", (r.epsilon, r.value), fontsize=5, xytext=(2, 2),
                                 textcoords="offset points")
        right = df[df["series"] == "ch5_right"]
        cmap = plt.get_cmap("viridis")
        ms = sorted(right["teachers"].unique())
        for i, M in enumerate(ms):
            g = right[right["teachers"] == M].sort_values("x")
            axes[1].plot(g["epsilon"], g["value"], marker="o", color=cmap(i / max(len(ms) - 1, 1)),
                         label=f"GNMax, M = {int(M)}")
        from matplotlib.ticker import NullFormatter

        for ax, title in zip(axes, ("LNMax vs GNMax (labels: noise scale)", "GNMax, number of teachers M")):
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel(spec.x_label)
            ax.set_ylabel(spec.y_label)
            ax.set_title(title, fontsize=9)
            ax.grid(True, alpha=0.3, which="both")
            ax.legend(fontsize=7)
    elif name == "fig5_5":
        fig, ax = plt.subplots(1, 1, figsize=(8, 4.5), dpi=110)
        bins = int(df["bins"].iloc[0])
        _bars(ax, df, ["lnmax", "confident_moderate", "confident_aggressive"], bins)
        ax.legend(fontsize=7, loc="upper left")
        ax.set_ylabel("number of queries")
        ax2 = ax.twinx()
        e = df[df["metric"] == "expected_rdp"].sort_values("x")
        pos = e["value"] > 0
        ax2.scatter(e["x"][pos], e["value"][pos], color="black", zorder=5, s=14,
                    label=f"expected per-query GNMax RDP (order {e['order'].iloc[0]:g})")
        ax2.set_yscale("log")
        ax2.set_ylabel("per-query privacy cost (RDP)")
        ax2.legend(fontsize=7, loc="center left")
    else:   # fig5_6
        fig, ax = plt.subplots(1, 1, figsize=(7, 4.5), dpi=110)
        _curves(ax, df, shade=True)
        xmax = np.nanmax(df.loc[df["method"] == "lnmax", "x"]) if (df["method"] == "lnmax").any() else None
        if xmax:
            ax.set_xlim(0, xmax)
            ax.set_ylim(0, df.loc[df["x"] <= xmax, "value"].max() * 1.05)
    fig.suptitle(f"song2018 {name}: {spec.title}", fontsize=10)
    _label(fig, df)
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    return save_figure(fig, out, caption)
