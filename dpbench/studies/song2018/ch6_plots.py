"""song2018 chapter 6 — Figs 6.1, 6.2 and the Table 6.1 / 6.4 images, drawn from result rows only."""

from __future__ import annotations

import pandas as pd

from dpbench.data.graphs import LABELS as DATASET_LABELS
from dpbench.methods.graph_release import LABELS, METHODS
from dpbench.plot import log_axis_at, mean_std_band, save_figure, substitute_box
from dpbench.studies.song2018.ch6_captions import caption_text
from dpbench.studies.song2018.ch6_spec import FIGURES

STYLE = {"sensdiff": dict(color="tab:red", marker="o"), "compose_d_bounded": dict(color="tab:gray", marker="x"),
         "compose_projection": dict(color="tab:blue", marker="s")}
#: the four columns of Figs 6.1 / 6.2
PANELS = (("high_degree", "directed", "high-out-degree nodes, directed"),
          ("high_degree", "undirected", "high-degree nodes, undirected"),
          ("edges", "directed", "edges, directed"), ("edges", "undirected", "edges, undirected"))
DATASET_ORDER = ("hiv", "patent", "paper", "synthetic1", "synthetic2")


def table_frame(name: str, df: pd.DataFrame) -> pd.DataFrame:
    """Table 6.1: one row per (graph, statistic, bound) with the formula and the measured maximum; Table 6.4: one
    row per data set, measured / thesis per column."""
    if name == "table6_1":
        t = pd.DataFrame({"graph": df["graph"], "bound": df["note"], "method": df["method_label"],
                          "formula": df["formula"].astype(int), "measured max": df["value"].astype(int),
                          "sequences searched": df["searched"]})
        t.index = df["statistic"].to_list()
        return t
    rows = {}
    for ds in [d for d in DATASET_ORDER if d in set(df["dataset"])]:
        g = df[df["dataset"] == ds].set_index("statistic")
        rows[DATASET_LABELS[ds]] = {c: f"{g.loc[c, 'value']:.0f} / {g.loc[c, 'source_value']:.0f}" for c in g.index}
        rows[DATASET_LABELS[ds]]["D, τ"] = f"{g['D'].iloc[0]}, {g['tau'].iloc[0]}"
    return pd.DataFrame.from_dict(rows, orient="index")


def _markdown(t: pd.DataFrame) -> str:
    head = "| | " + " | ".join(map(str, t.columns)) + " |"
    sep = "|---|" + "---|" * len(t.columns)
    return "\n".join([head, sep] + ["| " + str(i) + " | " + " | ".join(map(str, r)) + " |"
                                    for i, r in zip(t.index, t.values)])


def plot(config: dict, name: str, df: pd.DataFrame, out) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    caption = caption_text(config, name, df)
    if name in ("table6_1", "table6_4"):
        t = table_frame(name, df)
        fig, ax = plt.subplots(figsize=(min(18, 3 + 1.9 * len(t.columns)), 1.4 + 0.34 * len(t)), dpi=120)
        ax.axis("off")
        tb = ax.table(cellText=t.values, rowLabels=list(t.index), colLabels=list(t.columns), loc="center",
                      cellLoc="center")
        tb.auto_set_font_size(False)
        tb.set_fontsize(7)
        tb.scale(1, 1.25)
        title = (f"song2018 {name} — " + ("measured / Table 6.4 (SURROGATE rows: generated, not the real graphs)"
                                         if name == "table6_4" else "formula vs brute-force maximum"))
        ax.set_title(title, fontsize=9)
        fig.tight_layout()
        caption += "\n\nThis run:\n\n" + _markdown(t) + "\n"
        return save_figure(fig, out, caption)
    dsets = [d for d in DATASET_ORDER if d in set(df["dataset"])]
    fig, axes = plt.subplots(len(dsets), 4, figsize=(16, 3.1 * len(dsets)), dpi=100, squeeze=False)
    for i, ds in enumerate(dsets):
        for j, (stat, kind, title) in enumerate(PANELS):
            ax = axes[i][j]
            g = df[(df["dataset"] == ds) & (df["statistic"] == stat) & (df["graph"] == kind)]
            for m in METHODS:
                gm = g[g["method"] == m]
                if not gm.empty:
                    mean_std_band(ax, gm, LABELS[m], markersize=3, **STYLE[m])
            ax.set_yscale("log")
            log_axis_at(ax, sorted(g["x"].unique()))
            ax.grid(True, alpha=0.3, which="both")
            tau = g.loc[g["tau"] >= 0, "tau"]
            extra = f", τ = {int(tau.iloc[0])}" if len(tau) else ""
            ax.set_title(f"{DATASET_LABELS[ds]}: {title}{extra}", fontsize=8)
            if i == len(dsets) - 1:
                ax.set_xlabel(FIGURES[name].x_label)
            if j == 0:
                ax.set_ylabel("relative L1 error", fontsize=8)
            if g["is_substitute"].astype(bool).any():
                substitute_box(ax, "SURROGATE graph (Table 6.4 match)")
    axes[0][0].legend(fontsize=7, loc="upper right")
    fig.suptitle(f"song2018 {name}: {FIGURES[name].title}", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, out, caption)
