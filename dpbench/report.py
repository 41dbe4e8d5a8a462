"""Anchor checks and their HTML table, from result Parquet files only."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from dpbench.results import provenance, read_results, write_parquet
from dpbench.store import atomic_write_bytes


def run_anchor_checks(config: dict, study_name: str, inputs: list[str], out_parquet: str | Path,
                      out_html: str | Path) -> pd.DataFrame:
    from dpbench.studies import study

    st = study(study_name)
    df = read_results(*inputs)
    frames = {f: g for f, g in df.groupby("figure")}
    checks = st.anchor_checks(frames)
    checks["dataset_variant"] = ", ".join(sorted(df["dataset_variant"].unique()))
    write_parquet(checks, out_parquet, provenance(config, study=study_name, kind="anchor_checks"))
    extra = st.report_html(config, frames) if hasattr(st, "report_html") else ""
    atomic_write_bytes(Path(out_html), anchors_html(checks, extra).encode())
    return checks


def anchors_html(checks: pd.DataFrame, extra: str = "") -> str:
    """The anchor-check table; ``extra`` is study-specific HTML appended below it (e.g. regenerated tables)."""
    rows = "".join(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td style='color:{}'>{}</td></tr>".format(
            html.escape(r.claim), html.escape(r.figure), html.escape(r.statement), html.escape(r.measured),
            "green" if r.passed else "darkred", "holds" if r.passed else "does not hold")
        for r in checks.itertuples())
    variant = html.escape(str(checks["dataset_variant"].iloc[0])) if len(checks) else ""
    return ("<html><head><meta charset='utf-8'><title>Anchor checks</title></head><body>"
            f"<h3>Anchor checks (data: {variant})</h3><table border='1' cellpadding='4' "
            "style='border-collapse:collapse;font-family:sans-serif;font-size:13px'>"
            "<tr><th>claim</th><th>figure</th><th>paper</th><th>measured</th><th>verdict</th></tr>"
            f"{rows}</table>{extra}</body></html>")
