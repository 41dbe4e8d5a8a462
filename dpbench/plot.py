"""Figures from Parquet only: mean ± std over repetitions per series, the paper's axes and labels,
a visible "substitute data" label when a substitute was used, caption notes beside the PNG."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dpbench.methods import REGISTRY
from dpbench.results import read_results
from dpbench.store import atomic_write_bytes


def _pyplot():
    """matplotlib.pyplot with the file-only Agg backend, imported on first use (not when a study imports the
    drawing helpers below, which every Snakemake job does while parsing the Snakefile)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt

STYLE = {
    "loss_perturbation": dict(color="tab:blue", marker="o"),
    "model_sensitivity": dict(color="tab:orange", marker="s"),
    "prediction_sensitivity": dict(color="tab:green", marker="^"),
    "subsample_aggregate": dict(color="tab:red", marker="D"),
    "dpsgd": dict(color="tab:purple", marker="v"),
    "non_private": dict(color="black", linestyle="--", marker=None),
    "dpsgd_mlp": dict(color="tab:purple", marker="v"),
    "subsample_aggregate_mlp": dict(color="tab:red", marker="D"),
    "non_private_mlp": dict(color="black", linestyle="--", marker=None),
}
CURVE_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink")


def _curve_order(curve: str):
    """Curves named like "ε = 0.1" sort by their number."""
    try:
        return (0, float(curve.split("=")[-1]))
    except ValueError:
        return (1, curve)


def caption_text(spec, deviations: list[str], df: pd.DataFrame) -> str:
    variants = sorted(df["dataset_variant"].unique())
    reps = int(df["rep"].max()) + 1
    lines = [spec.caption, f"Data: {', '.join(variants)}; mean ± std over {reps} repetitions."]
    if spec.substitute_note:
        lines.append(spec.substitute_note)
    if df["is_substitute"].any():
        lines.append("SUBSTITUTE DATA: real MNIST was not available; an InfiMNIST-style generator of deformed "
                     "scikit-learn digits (28×28) was used. Absolute accuracies are not the paper's.")
    lines += [f"Note: {d}" for d in deviations]
    return "\n".join(lines)


def actual_epsilon_note(rows: pd.DataFrame, tol: float = 1e-6) -> str:
    """A legend suffix when a series is less private than its axis says: the rows' ``epsilon_achieved``
    (the true ε of the release, under the study's neighbouring relation) exceeds ``epsilon``. Empty
    otherwise — the correct calibrations never get one."""
    if not {"epsilon", "epsilon_achieved"} <= set(rows.columns) or rows.empty:
        return ""
    eps = rows["epsilon"].to_numpy(float)
    ach = rows["epsilon_achieved"].to_numpy(float)
    ok = np.isfinite(eps) & np.isfinite(ach) & (eps > 0)
    if not ok.any():
        return ""
    ratio = ach[ok] / eps[ok]
    lo, hi = float(ratio.min()), float(ratio.max())
    if hi <= 1 + tol:
        return ""
    span = f"{hi:.2g}" if hi - lo < 0.01 else f"{lo:.2g}–{hi:.2g}"
    return f" [actual ε = {span} × axis]"


def plot_figure(spec, df: pd.DataFrame, out: str | Path, deviations: list[str]) -> str:
    """Draw ``spec`` from the rows in ``df``; write ``out`` (PNG) and ``out`` with .txt (caption)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.6), dpi=120)
    df = df.assign(curve=df["curve"].fillna("")) if "curve" in df else df.assign(curve="")
    agg = df.groupby(["series", "curve", "x"])["value"].agg(["mean", "std"]).reset_index()
    curves = sorted(set(agg["curve"]), key=_curve_order)
    for series in [m for m in spec.methods if m in set(agg["series"])]:
        for i, curve in enumerate(curves):
            s = agg[(agg["series"] == series) & (agg["curve"] == curve)].sort_values("x")
            if s.empty:
                continue
            style = dict(STYLE.get(series, {}))
            label = REGISTRY.get(series).label + actual_epsilon_note(df[df["series"] == series])
            if curve:  # several curves of one series (e.g. one per ε): colour by curve
                style["color"] = CURVE_COLORS[i % len(CURVE_COLORS)]
                label = f"{label}, {curve}"
            ax.plot(s["x"], s["mean"], label=label, markersize=4, **style)
            ax.fill_between(s["x"], s["mean"] - s["std"].fillna(0), s["mean"] + s["std"].fillna(0),
                            color=style.get("color"), alpha=0.15, linewidth=0)
    ax.set_xscale(spec.xscale)
    ax.set_xlabel(spec.x_label)
    ax.set_ylabel(spec.y_label)
    ax.set_ylim(0, 1.0)
    ax.set_title(f"{spec.study} {spec.name}: {spec.title}", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="best", framealpha=0.85)
    if df["is_substitute"].any() or spec.substitute_note:
        what = ["SUBSTITUTE DATA (deformed sklearn digits, not MNIST)"] if df["is_substitute"].any() else []
        if spec.substitute_note:
            what.insert(0, "SUBSTITUTE EXPERIMENT (MLP on digits, not ResNet-20 on CIFAR-10)")
        ax.text(0.02, 0.98, "\n".join(what), transform=ax.transAxes,
                fontsize=7, va="top", color="darkred",
                bbox=dict(boxstyle="round", facecolor="mistyrose", edgecolor="darkred"))
    fig.tight_layout()
    return save_figure(fig, out, caption_text(spec, deviations, df))


def save_figure(fig, out: str | Path, caption: str) -> str:
    """Write ``fig`` as PNG to ``out`` and ``caption`` beside it (``.txt``), both atomically; close ``fig``."""
    import io

    out = Path(out)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    _pyplot().close(fig)
    atomic_write_bytes(out, buf.getvalue())
    atomic_write_bytes(out.with_suffix(".txt"), caption.encode())
    return caption


def plot_from_files(config: dict, study_name: str, figure_name: str, inputs: list[str], out: str | Path) -> str:
    from dpbench.studies import study

    st = study(study_name)
    df = read_results(*inputs)
    if hasattr(st, "plot"):  # a study with its own figure kinds (panels, tables rendered as images)
        return st.plot(config, figure_name, df, out)
    return plot_figure(st.figure(figure_name), df, out, st.deviations(config["studies"][study_name], figure_name))


# -- small drawing helpers shared by the study plotters -------------------------------------------------


def substitute_box(ax, variants, fontsize: float = 6.5) -> None:
    """The red "SUBSTITUTE DATA" label in the lower left of a panel (``variants``: one name or several)."""
    names = [variants] if isinstance(variants, str) else list(variants)
    if names:
        ax.text(0.02, 0.02, "SUBSTITUTE DATA: " + ", ".join(names), transform=ax.transAxes, fontsize=fontsize,
                color="darkred", va="bottom", zorder=10,
                bbox=dict(boxstyle="round", facecolor="mistyrose", edgecolor="darkred"))


def log_axis_at(ax, xs) -> None:
    """Log x axis labelled at the grid values only (no overlapping minor labels)."""
    from matplotlib.ticker import NullFormatter

    ax.set_xscale("log")
    xs = sorted(set(float(x) for x in xs))
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{x:g}" for x in xs], fontsize=7)
    ax.xaxis.set_minor_formatter(NullFormatter())


def mean_std_band(ax, g: pd.DataFrame, label: str, xcol: str = "x", alpha: float = 0.15, **style) -> None:
    """Mean of ``g["value"]`` per ``xcol`` as a line, ± one standard deviation as a band."""
    s = g.groupby(xcol)["value"].agg(["mean", "std"]).sort_index()
    x, m, sd = s.index.to_numpy(), s["mean"].to_numpy(), s["std"].fillna(0).to_numpy()
    ax.plot(x, m, label=label, **style)
    ax.fill_between(x, m - sd, m + sd, color=style.get("color"), alpha=alpha, linewidth=0)
