"""estimation — the figures, drawn from result rows only."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpbench.studies.estimation.captions import caption_text
from dpbench.studies.estimation.compute import LABELS, MAIN_METRIC, STUDY
from dpbench.studies.estimation.spec import figure
from dpbench.studies.estimation.summaries import privacy_summary, slope_table

STYLE = {"laplace": dict(color="tab:red", marker="o"), "gaussian_classic": dict(color="tab:blue", marker="s"),
         "gaussian_analytic": dict(color="tab:green", marker="^"),
         "non_private": dict(color="black", linestyle="--", marker=None)}
CURVE_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


def _band(ax, x, mean, std, color):
    lo = np.maximum(mean - std, 1e-3 * mean)
    ax.fill_between(x, lo, mean + std, color=color, alpha=0.15, linewidth=0)


def plot(config: dict, name: str, df: pd.DataFrame, out) -> str:
    """Draw one figure from result rows only; write the PNG and the caption beside it (``.txt``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure(name)
    df = df.assign(curve=df["curve"].fillna(""))
    main = MAIN_METRIC[name]
    slopes = slope_table(name, df).set_index(["series", "curve"])
    priv = privacy_summary(df)
    tot = df[df["metric"] == main].groupby(["series", "curve", "x"])["value"].agg(["mean", "std"]).reset_index()
    fig, ax = plt.subplots(figsize=(7.2, 5.0), dpi=120)
    curves = sorted({c for c in tot["curve"] if c}, key=lambda c: float(c.split("=")[-1]))
    for ser in [m for m in figure(name).methods if m in set(tot["series"]) and m != "non_private"]:
        for curve in (curves if name == "ldp_vs_n" else [""]):
            t = tot[(tot["series"] == ser) & (tot["curve"] == curve)].sort_values("x")
            if t.empty:
                continue
            if name == "ldp_vs_n":
                style = dict(color=CURVE_COLORS[curves.index(curve) % len(CURVE_COLORS)],
                             marker="o" if ser == "local" else "s", linestyle="-" if ser == "local" else "--")
                who = f"{LABELS[ser]}, {curve}"
            else:
                style, who = dict(STYLE[ser]), LABELS[ser]
            sl = slopes.loc[(ser, curve)] if (ser, curve) in slopes.index else None
            label = who + (f": slope {sl['measured']:.2f} (theory {sl['theory']:g})" if sl is not None else "")
            ax.plot(t["x"], t["mean"], label=label, markersize=4, **style)
            _band(ax, t["x"].to_numpy(), t["mean"].to_numpy(), t["std"].fillna(0).to_numpy(), style["color"])
            p = priv[(priv["series"] == ser) & (priv["curve"] == curve)].sort_values("x")
            ax.plot(p["x"], p["rms"], color=style["color"], linestyle=":", linewidth=1.2)
    f = tot[tot["series"] == "non_private"].sort_values("x")
    if not f.empty:
        sl = slopes.loc[("non_private", "")] if ("non_private", "") in slopes.index else None
        ax.plot(f["x"], f["mean"], color="black", linestyle="--", linewidth=1.5,
                label=LABELS["non_private"] + (f": slope {sl['measured']:.2f}" if sl is not None else ""))
        _band(ax, f["x"].to_numpy(), f["mean"].to_numpy(), f["std"].fillna(0).to_numpy(), "gray")
    ax.plot([], [], color="gray", linestyle=":", label="dotted: RMS privacy term (slopes fitted on it)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    spec = figure(name)
    ax.set_xlabel(spec.x_label)
    ax.set_ylabel(spec.y_label)
    fc = config["studies"][STUDY]["figures"][name]
    if name == "ldp_vs_n":
        sub = f"ε ∈ {{{', '.join(f'{e:g}' for e in fc['epsilons'])}}}, B = {df['clip'].max():.3f}"
    else:
        sub = f"n = {fc['n']}, ε = {fc['epsilon']:g}, δ = {fc['delta']:g}"
    ax.set_title(f"{STUDY} {name}: {spec.title}\n{sub}", fontsize=9)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="upper left" if name != "ldp_vs_n" else "lower left", framealpha=0.85)
    fig.tight_layout()
    from dpbench.plot import save_figure

    return save_figure(fig, out, caption_text(config, name, df))

