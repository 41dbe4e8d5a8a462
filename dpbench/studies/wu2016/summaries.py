"""wu2016 — summaries of the result rows shared by the plots and the anchor checks."""

from __future__ import annotations

import numpy as np
import pandas as pd


def ratio_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Mean, 90% t-interval half-width and count of the runtime ratio per (dataset, sweep, x, method)."""
    from scipy import stats

    r = df[df["metric"] == "runtime_ratio"]
    g = r.groupby(["dataset", "sweep", "x", "method"])["value"]
    s = g.agg(["mean", "std", "count"]).reset_index()
    tq = s["count"].map(lambda c: stats.t.ppf(0.95, c - 1) if c > 1 else np.nan)
    s["half_width"] = tq * s["std"] / np.sqrt(s["count"])
    return s
