"""What a tight calibration gains: for every figure with a tight-calibration series (``<series>_tight``, drawn
dashed beside ``<series>``), the difference tight − source of every metric at every x (e.g. ε), with its 95 %
interval — one figure per study (``figures/<study>/tight_gain.png``) and its numbers (``tight_gain.csv``).

The difference is paired by repetition where both series have the same repetitions at a point (the studies draw
each repetition's split and data from the repetition, so the pair shares them), else unpaired (Welch). The sign is
as measured: for accuracy a positive difference is a gain, for an error (MSE) or an attack's accuracy a
negative one is. Presentation only: reads result rows, computes nothing private.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from dpbench.results import tight_source
COLUMNS = ["study", "figure", "series", "metric", "point", "x_name", "x", "source_mean", "tight_mean", "difference",
           "se", "ci_low", "ci_high", "n", "paired"]
Z95 = 1.959963984540054
#: the metrics drawn when a figure has them (utility, error, attack success); the CSV keeps every metric
PRIMARY_METRICS = ("accuracy", "test_accuracy", "mse", "mi_accuracy", "advantage", "value")
#: columns that identify a point but are not drawn as separate lines (they follow from series, metric and x)
_SAME_LINE = {"study", "figure", "series", "method", "metric", "x_name", "x", "dataset_variant", "method_label",
              "calibration", "epsilon"}


def tight_pairs(series: list[str]) -> list[tuple[str, str]]:
    """(source, tight) series names of a figure: every ``<s>_tight`` whose ``<s>`` is also drawn."""
    names = set(series)
    return [(tight_source(s), s) for s in series if tight_source(s) in names]


def gain_table(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of :data:`COLUMNS` from a study's result rows (every figure, every metric but ``*_scaled``): one per
    point of a source series that its tight series also has. A point is what the reference summaries call one
    (:func:`dpbench.results.point_columns`: series, metric, x and every axis such as an attack or a panel);
    ``point`` names the axes beyond series, metric and x."""
    from dpbench.results import point_columns

    out = []
    for (study, figure), g in df.groupby(["study", "figure"], sort=False):
        pairs = tight_pairs(list(dict.fromkeys(g["series"].astype(str))))
        if not pairs:
            continue
        if "metric" in g:
            g = g[~g["metric"].astype(str).str.endswith("_scaled")]
        keys = [c for c in point_columns(g) if c not in ("series", "method", "dataset_variant", "method_label",
                                                         "calibration")]
        axes = [c for c in keys if c not in _SAME_LINE]
        for src, tight in pairs:
            a = g[g["series"] == src]
            b = g[g["series"] == tight]
            bk = {k: v for k, v in b.groupby(keys, dropna=False)}
            for k, ga in a.groupby(keys, dropna=False):
                gb = bk.get(k)
                if gb is None:
                    continue
                d = dict(zip(keys, k if isinstance(k, tuple) else (k,)))
                out.append({"study": study, "figure": figure, "series": src,
                            "metric": str(d.get("metric", "value")),
                            "point": ", ".join(f"{c}={d[c]}" for c in axes if not pd.isna(d[c]) and d[c] != ""),
                            "x_name": str(d.get("x_name", "x")), "x": float(d.get("x", float("nan"))),
                            **_difference(ga, gb)})
    return pd.DataFrame(out, columns=COLUMNS)


def _difference(a: pd.DataFrame, b: pd.DataFrame) -> dict:
    with np.errstate(invalid="ignore"):   # an infinite value on both sides gives a NaN difference (not drawn)
        return _difference_of(a, b)


def _difference_of(a: pd.DataFrame, b: pd.DataFrame) -> dict:
    va, vb = a["value"].to_numpy(float), b["value"].to_numpy(float)
    paired = ("rep" in a and len(a) == len(b) and len(a) > 1 and a["rep"].is_unique and b["rep"].is_unique
              and set(a["rep"]) == set(b["rep"]))
    if paired:
        d = b.set_index("rep")["value"].astype(float) - a.set_index("rep")["value"].astype(float)
        n, diff = len(d), float(d.mean())
        se = float(d.std(ddof=1) / math.sqrt(n))
    else:
        n, diff = min(len(va), len(vb)), float(vb.mean() - va.mean())
        se = math.sqrt((va.var(ddof=1) / len(va) if len(va) > 1 else math.nan)
                       + (vb.var(ddof=1) / len(vb) if len(vb) > 1 else math.nan))
    return {"source_mean": float(va.mean()), "tight_mean": float(vb.mean()), "difference": diff, "se": se,
            "ci_low": diff - Z95 * se, "ci_high": diff + Z95 * se, "n": int(n), "paired": bool(paired)}


def plot_gain(table: pd.DataFrame, study: str, out_png: str | Path, out_csv: str | Path) -> str:
    """Draw one panel per (figure, metric) of ``table`` (the difference and its 95 % interval per source series),
    write the PNG, its caption (.txt) and the table (CSV). Returns the caption."""
    from dpbench.plot import _pyplot, save_figure
    from dpbench.results import atomic_write_bytes

    plt = _pyplot()
    finite = table[np.isfinite(table["difference"].to_numpy(float)) & np.isfinite(table["x"].to_numpy(float))]
    drawn, panels = set(), []
    for figure, tf in finite.groupby("figure", sort=False):
        metrics = list(dict.fromkeys(tf["metric"]))
        primary = [m for m in PRIMARY_METRICS if m in metrics]
        for metric in primary or metrics:   # a panel whose every line repeats one drawn already is left out
            t = tf[tf["metric"] == metric]    # (figures that share cells draw the same lines)
            lines = {(m, tuple(np.round(s["x"].to_numpy(float), 12)),
                      tuple(np.round(s["difference"].to_numpy(float), 12)))
                     for m, s in t.groupby(["metric", "series", "point"])}
            if lines and not lines <= drawn:
                drawn |= lines
                panels.append((figure, metric))
    cols = min(3, max(1, len(panels)))
    rows = max(1, math.ceil(len(panels) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.4 * rows), dpi=110, squeeze=False)
    for ax, (figure, metric) in zip(axes.flat, panels):
        t = finite[(finite["figure"] == figure) & (finite["metric"] == metric)]
        for i, ((series, point), s) in enumerate(t.groupby(["series", "point"], sort=False)):
            s = s.sort_values("x")
            ax.errorbar(s["x"], s["difference"], yerr=Z95 * s["se"].fillna(0), marker="o", markersize=3,
                        capsize=2, label=f"{series} {point}".strip(), color=f"C{i % 10}")
        ax.axhline(0.0, color="gray", linewidth=0.8)
        mag = np.abs(t["difference"].to_numpy(float))
        mag = mag[np.isfinite(mag) & (mag > 0)]
        if len(mag) > 1 and mag.max() > 100 * np.median(mag):   # e.g. an MSE that explodes at the smallest ε
            ax.set_yscale("symlog", linthresh=float(np.median(mag)))
        xs = t["x"].to_numpy(float)
        if len(xs) and xs.min() > 0 and xs.max() / xs.min() > 10:   # finite points only (above)
            ax.set_xscale("log")
        ax.set_title(f"{study} {figure}", fontsize=9)
        ax.set_xlabel(str(t["x_name"].iloc[0]) if len(t) else "x")
        ax.set_ylabel(f"{metric}: tight − source")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    if not panels:
        axes.flat[0].text(0.5, 0.5, "no figure of this run has a tight-calibration series", ha="center", va="center")
    fig.suptitle(f"{study}: what the tight calibration gains (tight − source, 95 % interval)", fontsize=10)
    fig.tight_layout()
    caption = (f"{study}: the tight calibration against the source's, per figure and metric: the difference of the "
               "means (tight − source) at every point, with its 95 % interval (paired by repetition where both "
               "series share their repetitions, else Welch). Positive is a gain for an accuracy, a loss for an "
               "error (MSE) or an attack's accuracy. Numbers: tight_gain.csv beside this figure.")
    atomic_write_bytes(Path(out_csv), table.to_csv(index=False).encode())
    return save_figure(fig, out_png, caption)


def run(inputs: list[str], study: str, out_png: str | Path, out_csv: str | Path) -> pd.DataFrame:
    from dpbench.results import read_results

    df = read_results(*inputs) if inputs else pd.DataFrame(columns=["study", "figure", "series", "x", "value"])
    table = gain_table(df)
    plot_gain(table, study, out_png, out_csv)
    return table


__all__ = ["COLUMNS", "gain_table", "plot_gain", "run", "tight_pairs"]
