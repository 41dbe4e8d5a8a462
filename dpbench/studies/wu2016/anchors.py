"""wu2016 — the thesis's claims checked on the results (chapter 3: A1–A8, :mod:`.ch3_anchors`; chapter 4: B1–B7,
:mod:`.ch4_anchors`; docs/studies/wu2016.md#anchors) and the study's report table."""

from __future__ import annotations

import math

import pandas as pd

from dpbench import verdicts as V
from dpbench.studies.wu2016 import ch3_anchors, ch4_anchors
from dpbench.studies.wu2016.summaries import ratio_summary

#: every claim of the study, as data: {id: verdicts.Claim(id, figure, section, statement template)}
CLAIMS = V.claim_table(*ch3_anchors.CLAIMS.values(), *ch4_anchors.CLAIMS.values())


def anchor_checks(frames: dict) -> pd.DataFrame:
    """The anchor rows A1–A8 (chapter 3) and B1–B7 (chapter 4); every difference of means and every threshold is
    decided beyond V.Z standard errors over the repetitions (dpbench.verdicts)."""
    rows = ch3_anchors.anchor_checks(frames) + ch4_anchors.anchor_checks(frames)
    return pd.DataFrame(rows, columns=V.COLUMNS)


def report_html(config: dict, frames: dict) -> str:
    """The measured runtime ratios of Fig. 3.4 as a table (mean ± 90% half-width)."""
    if "fig3_4" not in frames:
        return ""
    s = ratio_summary(frames["fig3_4"])
    s["ratio"] = [f"{m:.2f} ± {h:.2f}" if math.isfinite(h) else f"{m:.2f}" for m, h in zip(s["mean"], s["half_width"])]
    t = s.pivot_table(index=["dataset", "sweep", "x"], columns="method", values="ratio", aggfunc="first")
    return "<h3>wu2016 fig3_4: runtime / noiseless (mean ± 90% CI half-width)</h3>" + t.to_html()
