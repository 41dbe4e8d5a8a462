"""song2018 — Tables 7.1-7.3 as text: the measured table of a run and the thesis's printed values, as DataFrames of
strings, Markdown (caption files) and HTML (report); shared by the plots and the report."""

from __future__ import annotations

import math

import pandas as pd

from dpbench.data import markov
from dpbench.studies.base import html_table as base_html_table
from dpbench.studies.song2018.ch7_compute import LABELS, RUNTIME_COLUMNS
from dpbench.studies.song2018.spec import figure

THESIS_TABLE_7_1 = {  # (group, task) -> {series: value}; None = N/A (Song 2018, Table 7.1)
    ("cyclist", "aggregate"): dict(dp=0.2918, group_dp=0.0834, gk16=None, mqm_approx=0.0107, mqm_exact=0.0074),
    ("cyclist", "individual"): dict(dp=None, group_dp=2.3157, gk16=None, mqm_approx=0.6319, mqm_exact=0.4077),
    ("older_woman", "aggregate"): dict(dp=0.8746, group_dp=0.1138, gk16=None, mqm_approx=0.0156, mqm_exact=0.0098),
    ("older_woman", "individual"): dict(dp=None, group_dp=1.7860, gk16=None, mqm_approx=0.2790, mqm_exact=0.1742),
    ("overweight_woman", "aggregate"): dict(dp=0.4763, group_dp=0.0458, gk16=None, mqm_approx=0.0048,
                                            mqm_exact=0.0033),
    ("overweight_woman", "individual"): dict(dp=None, group_dp=1.1492, gk16=None, mqm_approx=0.1967,
                                             mqm_exact=0.1316),
}
THESIS_TABLE_7_2 = {  # series -> {column: seconds}; None = N/A (Song 2018, Table 7.2)
    "gk16": dict(synthetic=6.3589e-4, cyclist=None, older_woman=None, overweight_woman=None, electricity=None),
    "mqm_approx": dict(synthetic=1.8458e-4, cyclist=0.0064, older_woman=0.0060, overweight_woman=0.0028,
                       electricity=0.0567),
    "mqm_exact": dict(synthetic=7.6794e-4, cyclist=1.5186, older_woman=1.2786, overweight_woman=0.6299,
                      electricity=282.2273),
}
THESIS_TABLE_7_3 = {  # series -> {ε: value} (Song 2018, Table 7.3)
    "group_dp": {0.2: 516.1555, 1.0: 102.8868, 5.0: 19.8712}, "gk16": {0.2: None, 1.0: None, 5.0: None},
    "mqm_approx": {0.2: 0.3369, 1.0: 0.0614, 5.0: 0.0113}, "mqm_exact": {0.2: 0.1298, 1.0: 0.0188, 5.0: 0.0022},
}
GROUP_LABELS = markov.ACTIVITY_LABELS
COLUMN_LABELS = {"synthetic": "Synthetic", "cyclist": "cyclist", "older_woman": "older woman",
                 "overweight_woman": "overweight woman", "electricity": "electricity power"}


def _fmt(v, digits=4) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "N/A"
    if abs(v) >= 1000 or (v != 0 and abs(v) < 1e-3):
        return f"{v:.4e}"
    return f"{v:.{digits}f}"


def table_frame(name: str, df: pd.DataFrame) -> pd.DataFrame:
    """The measured table as a DataFrame of strings (rows = algorithms, as in the thesis)."""
    order = [m for m in figure(name).methods if m in set(df["series"])]
    if name == "table7_1":
        cols = [(g, t) for g in markov.ACTIVITY_GROUPS for t in ("aggregate", "individual")]
        m = df.groupby(["series", "group", "task"])["value"].mean()
        ok = df.groupby(["series", "group", "task"])["applicable"].all()
        data = {f"{GROUP_LABELS[g]} {'Agg' if t == 'aggregate' else 'Indi'}":
                [_fmt(m.get((s, g, t)) if ok.get((s, g, t), False) else None) for s in order] for g, t in cols}
    elif name == "table7_3":
        m = df.groupby(["series", "epsilon"])["value"].mean()
        ok = df.groupby(["series", "epsilon"])["applicable"].all()
        data = {f"ε = {e:g}": [_fmt(m.get((s, e)) if ok.get((s, e), False) else None) for s in order]
                for e in sorted(df["epsilon"].unique())}
    elif name == "table7_2":
        m = df.groupby(["series", "dataset"])["value"].mean()
        ok = df.groupby(["series", "dataset"])["applicable"].all()
        data = {COLUMN_LABELS[c]: [_fmt(m.get((s, c)), 4) if ok.get((s, c), False) else
                                   (f"N/A ({_fmt(m.get((s, c)))} s)" if (s, c) in m else "")
                                   for s in order] for c in RUNTIME_COLUMNS}
    else:
        raise ValueError(f"{name} is not a table")
    return pd.DataFrame(data, index=[LABELS[s] for s in order])


def thesis_frame(name: str, order) -> pd.DataFrame:
    if name == "table7_1":
        data = {f"{GROUP_LABELS[g]} {'Agg' if t == 'aggregate' else 'Indi'}": [_fmt(THESIS_TABLE_7_1[(g, t)][s])
                                                                           for s in order]
                for g in markov.ACTIVITY_GROUPS for t in ("aggregate", "individual")}
    elif name == "table7_3":
        data = {f"ε = {e:g}": [_fmt(THESIS_TABLE_7_3[s][e]) for s in order] for e in (0.2, 1.0, 5.0)}
    else:
        data = {COLUMN_LABELS[c]: [_fmt(THESIS_TABLE_7_2[s][c]) for s in order] for c in RUNTIME_COLUMNS}
    return pd.DataFrame(data, index=[LABELS[s] for s in order])


def markdown_table(t: pd.DataFrame) -> str:
    head = "| Algorithm | " + " | ".join(t.columns) + " |"
    sep = "|---|" + "---|" * len(t.columns)
    body = ["| " + idx + " | " + " | ".join(str(v) for v in row) + " |" for idx, row in zip(t.index, t.values)]
    return "\n".join([head, sep, *body])


def html_table(t: pd.DataFrame, title: str) -> str:
    """A thesis/run table with the algorithms (the index) as its first column."""
    return base_html_table(t, title, index_label="Algorithm")
