"""membership — the figures and the generalisation table, drawn from result rows only."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpbench.privacy import attack_bounds as B
from dpbench.studies.membership import training as mc
from dpbench.studies.membership.captions import caption_text
from dpbench.studies.membership.spec import ATTACK_LABELS, STUDY, figure
from dpbench.studies.membership.summaries import auc_bound, generalisation_table, pooled

STYLE = {"non_private": dict(color="black", linestyle="--", marker=None),
         "output_perturbation": dict(color="tab:orange", marker="s"),
         "loss_perturbation": dict(color="tab:blue", marker="o"), "dpsgd": dict(color="tab:purple", marker="v"),
         "bolt_on": dict(color="tab:red", marker="D"), "scs13": dict(color="tab:green", marker="^"),
         "bst14": dict(color="tab:olive", marker="<"), "output_perturbation_erm": dict(color="tab:brown", marker=">"),
         "objective_perturbation": dict(color="tab:cyan", marker="P"),
         "functional_mechanism": dict(color="tab:pink", marker="X"),
         "output_perturbation_erm_tight": dict(color="tab:brown", marker=">", linestyle="--"),
         "loss_perturbation_tight": dict(color="tab:blue", marker="o", linestyle="--")}


def style_of(method: str) -> dict:
    """The study's style of a built-in method; a plugin's from the method registry (its declared style or a
    colour and marker chosen from its name)."""
    if method in STYLE:
        return STYLE[method]
    from dpbench.methods import REGISTRY, TRAINING

    reg = TRAINING if method in TRAINING.methods else REGISTRY
    return reg.style(method)


PANEL_METRICS = (("accuracy", "attack accuracy"), ("advantage", "advantage TPR − FPR"), ("auc", "AUC"),
                 ("tpr_at_fpr_1e-3", "TPR at FPR = 1e-3"))


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


TPR_FLOOR = 1e-4  # where a TPR of 0 is drawn on the log axis of the TPR at FPR = 1e-3 panel


def _figure_legend(fig, axes, ncol: int = 3) -> None:
    """One legend below all panels with every series of any panel (the datasets have different method sets),
    and the layout tightened above it: no legend over a curve."""
    seen: dict = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    fig.legend(list(seen.values()), list(seen), loc="lower center", ncol=ncol, fontsize=7, frameon=False)
    rows = -(-len(seen) // ncol)
    height = fig.get_size_inches()[1]
    fig.tight_layout(rect=(0, min(0.4, (0.12 + 0.17 * rows) / height), 1, 1))


def _rate_errorbars(v, half, floor: float | None = None):
    """(points, yerr) of rates ``v`` ± ``half``, the interval clipped to [0, 1]; with ``floor`` (a log axis) a 0
    and interval ends below the floor are drawn at the floor."""
    v = np.asarray(v, dtype=float)
    lo, hi = np.clip(v - half, 0, 1), np.clip(v + half, 0, 1)
    if floor is not None:
        v, lo = np.maximum(v, floor), np.maximum(lo, floor)
    return v, np.vstack([v - lo, np.maximum(hi - v, 0)])


def _sub_label(ax, df):
    from dpbench.plot import LABEL_GID  # save_figure moves such labels off the data

    if df["is_substitute"].any():
        ax.text(0.02, 0.98, "SUBSTITUTE DATA: " + ", ".join(sorted(df.loc[df["is_substitute"], "dataset_variant"].unique())),
                transform=ax.transAxes, fontsize=6, va="top", color="darkred", gid=LABEL_GID, zorder=10,
                bbox=dict(boxstyle="round", facecolor="mistyrose", edgecolor="darkred"))


def _best(p: pd.DataFrame, metric: str) -> pd.DataFrame:
    return p.loc[p.groupby(["dataset", "method", "epsilon"])[metric].idxmax()]


def plot(config: dict, name: str, df: pd.DataFrame, out) -> str:
    from dpbench.plot import save_figure

    plt = _plt()
    cfg = config["studies"][STUDY]
    figure(name)
    alpha = 1 - float(cfg["ci_level"])
    if name.startswith("fig_attack_"):
        fig = _plot_attack(plt, cfg, name, df, alpha)
    elif name == "fig_roc":
        fig = _plot_roc(plt, cfg, df)
    elif name == "fig_eps_lower_bound":
        fig = _plot_eps(plt, cfg, df, alpha)
    else:
        fig = _plot_table(plt, cfg, df, alpha)
    return save_figure(fig, out, caption_text(config, name, df))


def _plot_attack(plt, cfg, name, df, alpha):
    p = pooled(df, alpha, cfg.get("ci_method", "design_effect"))
    eps = np.array(sorted(e for e in p["epsilon"].unique() if np.isfinite(e)))
    grid = np.logspace(np.log10(eps.min()) - 0.1, np.log10(eps.max()) + 0.1, 60) if eps.size else np.array([0.1, 10])
    fig, axes = plt.subplots(2, 2, figsize=(11, 8), dpi=110)
    for ax, (metric, label) in zip(axes.ravel(), PANEL_METRICS):
        bound = {"accuracy": B.accuracy_bound(grid), "advantage": B.advantage_bound(grid),
                 "auc": [auc_bound(e) for e in grid], "tpr_at_fpr_1e-3": B.tpr_bound(1e-3, grid)}[metric]
        ax.plot(grid, bound, color="0.6", linewidth=3, alpha=0.6, label="ε-DP bound (δ = 0)")
        best = _best(p, metric)
        for m in [m for m in figure(name).methods if m in set(best["method"])]:
            b = best[best["method"] == m].sort_values("epsilon")
            if m == "non_private":
                v = float(b[metric].iloc[0])
                ax.axhline(v, color="black", linestyle="--", linewidth=1.3,
                           label=f"non-private (ε = ∞): {v:.3f} [{ATTACK_LABELS[b['attack'].iloc[0]]}]")
                continue
            v = b[metric].to_numpy(float)
            if metric in ("accuracy", "advantage"):
                err = np.vstack([v - b[f"{metric}_lo"].to_numpy(float), b[f"{metric}_hi"].to_numpy(float) - v])
            else:
                half = b[f"{metric}_half"].fillna(0).to_numpy()   # t interval over the repetitions' models
                v, err = _rate_errorbars(v, half, TPR_FLOOR if metric == "tpr_at_fpr_1e-3" else None)
            ax.errorbar(b["epsilon"], v, yerr=err, capsize=2, markersize=4, label=mc.label_of(m), **style_of(m))
        ax.set_xscale("log")
        ax.set_xlabel("ε (replace-one)")
        ax.set_ylabel(label + " (strongest attack)")
        if metric == "tpr_at_fpr_1e-3":  # a rate: log axis, 0 drawn at the floor, nothing below 0 or above 1
            ax.set_yscale("log")
            ax.set_ylim(TPR_FLOOR / 1.5, 1.5)
            ax.set_ylabel(f"{label} (strongest attack)\n0 drawn at 1e{int(round(np.log10(TPR_FLOOR)))}")
        ax.grid(True, which="both", alpha=0.25)
        _sub_label(ax, df)
    # one legend for the four panels, below them: it covers no curve
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7, frameon=False)
    d = name[len("fig_attack_"):]
    fig.suptitle(f"{STUDY} {name}: membership inference vs ε, {mc.DATASET_LABELS[d]} (n = "
                 f"{int(df['n_members'].iloc[0])} members + non-members × {int(df['rep'].max()) + 1} reps, "
                 f"{int(df['shadow_models'].iloc[0])} shadow models)", fontsize=9)
    fig.tight_layout(rect=(0, 0.015 + 0.022 * -(-len(labels) // 3), 1, 1))
    return fig


def _plot_roc(plt, cfg, df):
    fc = cfg["figures"]["fig_roc"]
    attack = fc.get("attack", "lira_offline")
    r = df[(df["metric"] == "roc_tpr") & (df["attack"] == attack)]
    dsets = [d for d in mc.DATASETS if d in set(r["dataset"])]
    epss = [float(e) for e in fc["epsilons"]]
    fig, axes = plt.subplots(len(dsets), len(epss), figsize=(3.6 * len(epss), 3.2 * len(dsets)), dpi=110,
                             squeeze=False)
    g = mc.ROC_GRID
    for i, d in enumerate(dsets):
        for j, e in enumerate(epss):
            ax = axes[i, j]
            ax.plot(g, g, color="gray", linestyle=":", linewidth=1)
            ax.plot(g, B.tpr_bound(g, e, 0.0), color="0.6", linewidth=3, alpha=0.6, label="ε-DP bound at the panel's ε")
            for m in mc.methods_for(d):
                sel = r[(r["dataset"] == d) & (r["method"] == m) & ((r["epsilon"] == e) | (m == "non_private"))]
                if sel.empty:
                    continue
                t = sel.groupby("x")["value"].mean()
                ax.plot(t.index, np.maximum(t.to_numpy(), 1e-4), label=mc.label_of(m), linewidth=1.2,
                        **{k: v for k, v in style_of(m).items() if k != "marker"})
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlim(1e-4, 1)
            ax.set_ylim(1e-4, 1.05)
            ax.set_title(f"{mc.DATASET_LABELS[d]}, ε = {e:g}", fontsize=8)
            ax.set_xlabel("FPR")
            ax.set_ylabel("TPR")
            ax.grid(True, which="both", alpha=0.2)
            _sub_label(ax, r[r["dataset"] == d])
    fig.suptitle(f"{STUDY} fig_roc: {ATTACK_LABELS[attack]} ROC (log-log), mean over repetitions", fontsize=9)
    _figure_legend(fig, axes.ravel(), ncol=4)
    return fig


def _plot_eps(plt, cfg, df, alpha):
    p = pooled(df, alpha, cfg.get("ci_method", "design_effect"))
    p = p[np.isfinite(p["epsilon_game"])]
    dsets = [d for d in mc.DATASETS if d in set(p["dataset"])]
    fig, axes = plt.subplots(1, max(1, len(dsets)), figsize=(4.4 * max(1, len(dsets)), 4.2), dpi=110, squeeze=False)
    for ax, d in zip(axes[0], dsets):
        q = p[p["dataset"] == d]
        lim = [q["epsilon_game"].min() / 1.5, q["epsilon_game"].max() * 1.5]
        ax.plot(lim, lim, color="0.5", linestyle="--", label="ε̂ = ε (bound)")
        best = q.loc[q.groupby(["method", "epsilon"])["eps_lower"].idxmax()]
        for m in [m for m in mc.methods_for(d) if m in set(best["method"])]:
            b = best[best["method"] == m].sort_values("epsilon_game")
            ax.plot(b["epsilon_game"], np.maximum(b["eps_lower"], 1e-3), label=mc.label_of(m), markersize=4,
                    **style_of(m))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(1e-3 * 0.8, lim[1])
        ax.set_xlabel("theoretical ε (replace-one)")
        ax.set_ylabel(f"empirical ε lower bound ({1 - alpha:.0%})\n0 drawn at 1e-3")
        ax.set_title(mc.DATASET_LABELS[d], fontsize=9)
        ax.grid(True, which="both", alpha=0.25)
        _sub_label(ax, df[df["dataset"] == d])
    fig.suptitle(f"{STUDY} fig_eps_lower_bound: strongest attack per method and ε", fontsize=9)
    _figure_legend(fig, axes.ravel(), ncol=4)
    return fig



def _plot_table(plt, cfg, df, alpha):
    t = generalisation_table(df, alpha, cfg.get("ci_method", "design_effect"))
    fig, ax = plt.subplots(figsize=(15, 0.32 * (len(t) + 3)), dpi=110)
    ax.axis("off")
    if len(t):
        tab = ax.table(cellText=t.values, colLabels=list(t.columns), loc="center", cellLoc="left")
        tab.auto_set_font_size(False)
        tab.set_fontsize(7)
        tab.auto_set_column_width(list(range(len(t.columns))))
    _sub_label(ax, df)
    ax.set_title(f"{STUDY} table_generalisation: privacy vs generalisation (private models at ε = "
                 f"{cfg['figures']['table_generalisation']['epsilon']:g})", fontsize=9)
    fig.tight_layout()
    return fig


