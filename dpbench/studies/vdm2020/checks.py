"""vdm2020 — helpers of the anchor checks: means and standard errors over repetitions, crossings, humps."""

from __future__ import annotations

import math

import numpy as np

from dpbench import verdicts as V

PRIVATE = ("loss_perturbation", "model_sensitivity", "prediction_sensitivity", "subsample_aggregate", "dpsgd")
PAPER_CROSSOVER_B = 80.0
N_CLASSES = 10
CHANCE_MARGIN = 0.05  # a point is informative when some method beats chance (1/C) by at least this much


PRIVATE_MLP = ("dpsgd_mlp", "subsample_aggregate_mlp")


def _means(df, methods=PRIVATE):
    g = df[df["series"].isin(methods)].groupby(["x", "series"])["value"]
    return g.mean().unstack("series"), (g.std() / np.sqrt(g.count())).unstack("series")


def _stats(df, methods=PRIVATE):
    """(mean, standard error, count) tables (x × series) of ``value`` over the repetitions."""
    g = df[df["series"].isin(methods)].groupby(["x", "series"])["value"]
    return (g.mean().unstack("series"), (g.std() / np.sqrt(g.count())).unstack("series"),
            g.count().unstack("series"))


def _est(st, x, s) -> V.Est:
    """V.Est of series ``s`` at ``x`` from :func:`_stats` tables (n = 0 when the cell is missing)."""
    m, se, n = st
    if s not in m or x not in m.index or np.isnan(m.loc[x, s]):
        return V.Est(math.nan, math.nan, 0)
    return V.Est(float(m.loc[x, s]), float(se.loc[x, s]), float(n.loc[x, s]))


def _minus(a: V.Est, b: V.Est) -> V.Est:
    """a − b of two independent estimates."""
    return V.Est(a.mean - b.mean, math.hypot(a.se, b.se), min(a.n, b.n))


def _too_few(df, methods=PRIVATE):
    """Undecided (TOO_FEW) when a (x, series) cell of ``methods`` has fewer than 2 repetitions (standard error
    undefined: never a pass), else None."""
    keys = ["x", "series"] + (["curve"] if "curve" in df else [])  # fig6a: one curve per ε at the same x
    c = df[df["series"].isin(methods)].groupby(keys, dropna=False)["value"].count()
    return V.too_few(V.Est(math.nan, math.nan, int(c.min()))) if len(c) else None


def _first(tf, v):
    """The TOO_FEW verdict when there is one, else ``v``."""
    return tf if tf is not None else v


_BEYOND = f"differences beyond {V.Z:g} standard errors over the repetitions"


def _chance(df) -> float:
    return 1.0 / float(df["n_classes"].max()) if "n_classes" in df else 1.0 / N_CLASSES


def _fmt(series) -> str:
    return ", ".join(f"{x:g}: {v:.3f}" if not isinstance(x, str) else f"{x}: {v:.3f}" for x, v in series.items())


def _crossing(diff) -> float:
    """First x (log-interpolated) where ``diff`` (indexed by x, sorted) changes sign from < 0 to ≥ 0; the first
    x if it is ≥ 0 there already; nan if never."""
    d = diff.dropna().sort_index()
    if d.empty:
        return float("nan")
    xs, ys = np.log(d.index.to_numpy(float)), d.to_numpy()
    if ys[0] >= 0:
        return float(np.exp(xs[0]))
    for i in range(1, len(ys)):
        if ys[i] >= 0 > ys[i - 1]:
            return float(np.exp(xs[i - 1] + (xs[i] - xs[i - 1]) * -ys[i - 1] / (ys[i] - ys[i - 1])))
    return float("nan")


def _hump(curve, se) -> tuple[bool, float, str]:
    """Is a curve (indexed by x) hump-shaped: its maximum strictly inside the grid and above both ends by more
    than two standard errors? Returns (hump, argmax, description)."""
    c = curve.dropna().sort_index()
    if len(c) < 3:
        return False, float("nan"), "fewer than 3 points"
    arg = c.idxmax()
    s = se.reindex(c.index).fillna(0.0)
    margin_lo = c[arg] - c.iloc[0] - 2 * np.hypot(s[arg], s.iloc[0])
    margin_hi = c[arg] - c.iloc[-1] - 2 * np.hypot(s[arg], s.iloc[-1])
    inside = c.index[0] < arg < c.index[-1]
    return bool(inside and margin_lo > 0 and margin_hi > 0), float(arg), \
        f"max {c[arg]:.3f} at {arg:g}; ends {c.iloc[0]:.3f} ({c.index[0]:g}), {c.iloc[-1]:.3f} ({c.index[-1]:g})"


def _hump_verdict(curve, se):
    """Three-valued :func:`_hump`: holds for a hump beyond 2 s.e.; fails when the maximum is at an end of the
    grid; undecided with fewer than 3 points, or an interior maximum within 2 s.e. of an end."""
    c = curve.dropna().sort_index()
    if len(c) < 3:
        return V.undecided(f"{V.TOO_FEW} ({len(c)} < 3)")
    h, arg, _ = _hump(curve, se)
    if h:
        return V.holds()
    if not (c.index[0] < arg < c.index[-1]):
        return V.fails()
    return V.undecided(V.WIDE)


def crossover_budget(df) -> float:
    """First B (log-interpolated) at which subsagg's mean accuracy falls below loss perturbation's; nan if none."""
    m, _ = _means(df)
    if "subsample_aggregate" not in m or "loss_perturbation" not in m:
        return float("nan")
    d = (m["subsample_aggregate"] - m["loss_perturbation"]).sort_index()
    xs, ys = np.log(d.index.to_numpy(float)), d.to_numpy()
    if ys[0] < 0:
        return float(np.exp(xs[0]))
    for i in range(1, len(ys)):
        if ys[i] < 0 <= ys[i - 1]:
            return float(np.exp(xs[i - 1] + (xs[i] - xs[i - 1]) * ys[i - 1] / (ys[i - 1] - ys[i])))
    return float("nan")


