"""estimation — slopes and ratios of the privacy term, shared by the captions, plots and anchor checks."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpbench.methods import estimation as est
from dpbench.studies.estimation.compute import MAIN_METRIC, SERIES

# exponent of the RMS privacy term in x (d or n), unsquared error (squared error: twice these)
THEORY_SLOPE = {("mean_vs_d", "laplace"): 1.5, ("mean_vs_d", "gaussian_classic"): 1.0,
                ("mean_vs_d", "gaussian_analytic"): 1.0, ("cov_vs_d", "laplace"): 3.0,
                ("cov_vs_d", "gaussian_classic"): 2.0, ("cov_vs_d", "gaussian_analytic"): 2.0,
                ("ldp_vs_n", "local"): -0.5, ("ldp_vs_n", "central"): -1.0}


def fit_slope(x, y) -> float:
    """Least-squares slope of log y on log x (NaN with fewer than two positive points)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = (x > 0) & (y > 0) & np.isfinite(y)
    if ok.sum() < 2 or np.unique(x[ok]).size < 2:
        return float("nan")
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])


def privacy_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per (series, curve, x): RMS of the privacy term, its closed form, the relative standard error of the
    mean square (for the ratio checks), and the number of repetitions."""
    p = df[df["metric"] == "privacy_error"].assign(sq=lambda t: t["value"] ** 2)
    g = p.groupby(["series", "curve", "x"])
    out = g.agg(ms=("sq", "mean"), sd=("sq", "std"), reps=("sq", "size"),
                expected=("expected_privacy_rms", "first")).reset_index()
    out["rms"] = np.sqrt(out["ms"])
    out["rel_se_ms"] = out["sd"] / (out["ms"] * np.sqrt(out["reps"]))
    return out


def slope_table(name: str, df: pd.DataFrame) -> pd.DataFrame:
    """Fitted privacy-term slopes per (series, curve): measured, closed form on the same grid, asymptotic."""
    s = privacy_summary(df)
    rows = []
    for (ser, curve), g in s.groupby(["series", "curve"], sort=False):
        rows.append({"series": ser, "curve": curve, "measured": fit_slope(g["x"], g["rms"]),
                     "closed_form": fit_slope(g["x"], g["expected"]), "theory": THEORY_SLOPE.get((name, ser), np.nan),
                     "points": len(g)})
    floor = df[(df["series"] == "non_private") & (df["metric"] == MAIN_METRIC[name])]
    if not floor.empty:
        m = floor.groupby("x")["value"].mean()
        rows.append({"series": "non_private", "curve": "", "measured": fit_slope(m.index, m.to_numpy()),
                     "closed_form": np.nan, "theory": {"mean_vs_d": 0.5, "cov_vs_d": 1.0, "ldp_vs_n": -0.5}[name],
                     "points": len(m)})
    order = {s: i for i, s in enumerate(SERIES[name])}
    t = pd.DataFrame(rows)
    if t.empty:
        return t
    return t.sort_values(["series", "curve"], key=lambda c: c.map(order) if c.name == "series" else c).reset_index(
        drop=True)


def ratio_frame(s: pd.DataFrame, num: str, den: str) -> pd.DataFrame:
    """RMS(num)/RMS(den) per x (and curve) with the standard error of its log (delta method)."""
    a = s[s["series"] == num].set_index(["curve", "x"])
    b = s[s["series"] == den].set_index(["curve", "x"])
    j = a.add_suffix("_a").join(b.add_suffix("_b"), how="inner").reset_index()
    j["ratio"] = j["rms_a"] / j["rms_b"]
    j["se_log"] = 0.5 * np.sqrt(j["rel_se_ms_a"] ** 2 + j["rel_se_ms_b"] ** 2)
    return j


def laplace_gaussian_ratios(df: pd.DataFrame):
    """Yield (Gaussian series, measured Laplace/Gaussian privacy-term ratio frame, theory array) of mean_vs_d."""
    s = privacy_summary(df)
    for g in ("gaussian_classic", "gaussian_analytic"):
        j = ratio_frame(s, "laplace", g)
        if j.empty:
            continue
        eps = float(df.loc[df["series"] == g, "epsilon"].iloc[0])
        delta = float(df.loc[df["series"] == g, "delta"].iloc[0])
        yield g, j, np.array([est.laplace_gaussian_rms_ratio(int(x), eps, delta, g) for x in j["x"]])
