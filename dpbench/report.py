"""Anchor checks and their HTML table, from result Parquet files only.

Every row carries a three-valued verdict (holds / does not hold / undecided, with the reason for undecided;
:mod:`dpbench.verdicts`) and ``reduced_grid``: True when the row's figure was computed on a configuration that
differs from the study's full configuration (the repository's ``config.yaml``; :func:`dpbench.verdicts.reduced_grid`).
Such rows, and the page, are marked "reduced grid: indicative only".
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from dpbench import verdicts as V
from dpbench.results import provenance, read_results, write_parquet
from dpbench.store import atomic_write_bytes

COLOURS = {V.HOLDS: "green", V.FAILS: "darkred", V.UNDECIDED: "#b36b00"}


def normalise_checks(checks: pd.DataFrame) -> pd.DataFrame:
    """``checks`` with the columns of :data:`dpbench.verdicts.COLUMNS`: rows a study built without a ``verdict``
    (plain ``passed`` bools) get one by :func:`dpbench.verdicts.verdict_of` (a NaN value: undecided)."""
    recs = []
    for r in checks.to_dict("records"):
        if not isinstance(r.get("verdict"), str) or r["verdict"] not in V.STATUSES:
            r.update(V.row(r["study"], r["claim"], r["figure"], r["statement"], r["measured"], r["value"],
                           r.get("passed")))
        recs.append(r)
    out = pd.DataFrame(recs, columns=list(dict.fromkeys(V.COLUMNS + list(checks.columns))))
    out["reason"] = out["reason"].fillna("")
    out["passed"] = out["verdict"] == V.HOLDS
    return out


def mark_reduced(checks: pd.DataFrame, config: dict, study_name: str) -> pd.DataFrame:
    """Add ``reduced_grid`` per row: by the row's figure when the config names it, else by the whole study."""
    figs = ((config.get("studies") or {}).get(study_name) or {}).get("figures") or {}
    full = V.full_config()
    red = {f: V.reduced_grid(config, study_name, f if f in figs else None, full=full)
           for f in checks["figure"].unique()}
    return checks.assign(reduced_grid=checks["figure"].map(red).astype(bool))


def run_anchor_checks(config: dict, study_name: str, inputs: list[str], out_parquet: str | Path,
                      out_html: str | Path) -> pd.DataFrame:
    from dpbench.studies import study

    st = study(study_name)
    df = read_results(*inputs)
    frames = {f: g for f, g in df.groupby("figure")}
    checks = mark_reduced(normalise_checks(st.anchor_checks(frames)), config, study_name)
    checks["dataset_variant"] = ", ".join(sorted(df["dataset_variant"].unique()))
    write_parquet(checks, out_parquet, provenance(config, study=study_name, kind="anchor_checks"))
    extra = st.report_html(config, frames) if hasattr(st, "report_html") else ""
    lead = st.report_lead_html(config, frames) if hasattr(st, "report_lead_html") else ""
    atomic_write_bytes(Path(out_html), anchors_html(checks, extra, lead).encode())
    return checks


def verdict_text(r) -> str:
    """'holds', 'does not hold' or 'undecided: <reason>' of one row (a namedtuple or dict-like)."""
    status = getattr(r, "verdict", None) or (V.HOLDS if getattr(r, "passed") else V.FAILS)
    reason = getattr(r, "reason", "") or ""
    return f"{status}: {reason}" if status == V.UNDECIDED and reason else status


def summary_line(checks: pd.DataFrame) -> str:
    """'N checks: a hold, b do not hold, c undecided' (+ the reduced-grid mark when any row is reduced)."""
    c = V.counts(checks)
    s = (f"{len(checks)} checks: {c[V.HOLDS]} hold, {c[V.FAILS]} do not hold, {c[V.UNDECIDED]} undecided")
    if "reduced_grid" in checks and checks["reduced_grid"].astype(bool).any():
        s += f" — {int(checks['reduced_grid'].astype(bool).sum())} on a {V.REDUCED_LABEL}"
    return s


def anchors_html(checks: pd.DataFrame, extra: str = "", lead: str = "") -> str:
    """The anchor-check table; ``lead`` is study-specific HTML shown above it (e.g. a privacy-bug summary),
    ``extra`` below it (e.g. regenerated tables)."""
    if "verdict" not in checks:
        checks = normalise_checks(checks)
    reduced = checks["reduced_grid"].astype(bool) if "reduced_grid" in checks else pd.Series(False, checks.index)
    rows = "".join(
        "<tr><td>{}</td><td style='color:{};font-weight:bold'>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"
        .format(html.escape(r.claim), COLOURS.get(r.verdict, "black"), html.escape(verdict_text(r)),
                html.escape(r.figure), html.escape(r.statement), html.escape(r.measured),
                f"<i>{V.REDUCED_LABEL}</i>" if red else "full grid")
        for r, red in zip(checks.itertuples(), reduced))
    variant = html.escape(str(checks["dataset_variant"].iloc[0])) if len(checks) and "dataset_variant" in checks else ""
    banner = (f"<p style='color:#b36b00;font-weight:bold'>{V.REDUCED_LABEL.capitalize()}: these results come from a "
              "configuration smaller than the study's full grid (config.yaml); the verdicts are indicative only.</p>"
              if reduced.any() else "")
    legend = ("<p style='font-size:12px'>Verdicts: <b>holds</b> / <b>does not hold</b> are decided beyond two "
              "standard errors where the measurement is random; <b>undecided</b> says why (too few informative "
              "points, empty set, NaN measurement, interval too wide). An empty set never passes.</p>")
    return ("<html><head><meta charset='utf-8'><title>Anchor checks</title></head><body>"
            f"<h3>Anchor checks (data: {variant})</h3>{banner}<p><b>{html.escape(summary_line(checks))}</b></p>"
            f"{lead}{legend}<table border='1' cellpadding='4' "
            "style='border-collapse:collapse;font-family:sans-serif;font-size:13px'>"
            "<tr><th>claim</th><th>verdict</th><th>figure</th><th>paper</th><th>measured</th><th>grid</th></tr>"
            f"{rows}</table>{extra}</body></html>")


# -- report pages: figure labels and the per-study overview (title, thumbnail and caption side by side) ---------


def figure_label(config: dict, study_name: str, figure: str) -> str:
    """'fig1a — <title>' (+ the reduced-grid mark): the one label of a figure in the Snakemake report's lists (one
    label only: the report turns a second label with two values into a toggle)."""
    from dpbench.studies import study

    spec = study(study_name).figure(figure)
    red = f" ({V.REDUCED_LABEL})" if V.reduced_grid(config, study_name, figure) else ""
    return f"{figure} — {spec.title}{red}"


def anchors_label(anchors_parquet: str | Path) -> str:
    """The verdict counts of an anchors.parquet, for the report's list of pages."""
    p = Path(anchors_parquet)
    if not p.exists():
        return "anchor checks"
    return "anchor checks — " + summary_line(normalise_checks(pd.read_parquet(p)))


THUMB_WIDTH = 520  # pixels: the overview page embeds every figure at this width (the report shows a page as a
#                    data URI, which browsers cap at about 2 MB: full-size PNGs of a study would not fit)


def thumbnail_png(path: str | Path, width: int = THUMB_WIDTH) -> bytes:
    """``path`` (a PNG) scaled down to ``width`` pixels (never up), as PNG bytes; unreadable images as they are."""
    import io

    raw = Path(path).read_bytes()
    try:
        from PIL import Image

        im = Image.open(io.BytesIO(raw))
        if im.width > width:
            im = im.convert("RGB").resize((width, max(1, round(im.height * width / im.width))), Image.LANCZOS)
        buf = io.BytesIO()
        im.save(buf, format="PNG", optimize=True)
        return buf.getvalue()
    except Exception:  # noqa: BLE001 - not an image PIL reads: embed it unchanged
        return raw


def gallery_html(config: dict, study_name: str, pngs: list[str], anchors_parquet: str | Path | None = None) -> str:
    """One page per study: the verdict counts, then every figure as a titled thumbnail with its caption and
    deviation notes beside it, each marked when computed on a reduced grid (full size: the "figures" list)."""
    import base64

    from dpbench.studies import study

    st = study(study_name)
    full = V.full_config()  # read once for every figure of the page
    head = f"<h2>{html.escape(study_name)}: figures and captions</h2>"
    if anchors_parquet is not None and Path(anchors_parquet).exists():
        head += f"<p><b>{html.escape(anchors_label(anchors_parquet))}</b> (see the anchor-check page)</p>"
    if V.reduced_grid(config, study_name, full=full):
        head += (f"<p style='color:#b36b00;font-weight:bold'>{V.REDUCED_LABEL.capitalize()}: this run's configuration "
                 "is smaller than the study's full grid (config.yaml).</p>")
    items = []
    for png in pngs:
        p = Path(png)
        fig = p.stem
        spec = st.figure(fig)
        uri = "data:image/png;base64," + base64.b64encode(thumbnail_png(p)).decode()
        cap_path = p.with_suffix(".txt")
        caption = cap_path.read_text() if cap_path.exists() else spec.caption
        paras = "".join(f"<p>{html.escape(line)}</p>" for line in caption.splitlines() if line.strip())
        red = (f" <span style='color:#b36b00'>({V.REDUCED_LABEL})</span>"
               if V.reduced_grid(config, study_name, fig, full=full) else "")
        items.append(
            f"<div id='{html.escape(fig)}' style='margin:18px 0;padding-top:8px;border-top:1px solid #ccc'>"
            f"<h3 style='margin:4px 0'>{html.escape(fig)}: {html.escape(spec.title)}{red}</h3>"
            "<div style='display:flex;gap:18px;align-items:flex-start'>"
            f"<img src='{uri}' alt='{html.escape(fig)}' style='width:{THUMB_WIDTH}px;flex:none;border:1px solid #ddd'>"
            f"<div style='font-size:13px;max-width:640px'>{paras}</div></div></div>")
    toc = " · ".join(f"<a href='#{html.escape(Path(p).stem)}'>{html.escape(Path(p).stem)}</a>" for p in pngs)
    return ("<html><head><meta charset='utf-8'><title>" + html.escape(study_name) + "</title></head>"
            "<body style='font-family:sans-serif'>" + head + f"<p>{toc}</p>" + "".join(items) + "</body></html>")


def write_gallery(config: dict, study_name: str, pngs: list[str], anchors_parquet, out_html) -> None:
    atomic_write_bytes(Path(out_html), gallery_html(config, study_name, pngs, anchors_parquet).encode())
