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
from dpbench.results import tight_source
from dpbench.tight_gain import tight_pairs

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
    out["calibration"] = out["calibration"].fillna(SOURCE) if "calibration" in out else SOURCE
    out["passed"] = out["verdict"] == V.HOLDS
    return out


def mark_reduced(checks: pd.DataFrame, config: dict, study_name: str) -> pd.DataFrame:
    """Add ``reduced_grid`` per row: by the row's figure when the config names it, else by the whole study."""
    figs = ((config.get("studies") or {}).get(study_name) or {}).get("figures") or {}
    full = V.full_config()
    red = {f: V.reduced_grid(config, study_name, f if f in figs else None, full=full)
           for f in checks["figure"].unique()}
    return checks.assign(reduced_grid=checks["figure"].map(red).astype(bool))


#: ``calibration`` of a claim row: the figures as the sources calibrate them | with each method's tight
#: calibration in place of its source calibration (:func:`tight_frames`; claim ids end in :data:`TIGHT_CLAIM`)
SOURCE, TIGHT = "source", "tight"
TIGHT_CLAIM = "@tight"


def tight_frames(frames: dict[str, pd.DataFrame]) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """The figures' rows with every tight-calibration series (``<series>_tight``) standing in for its source
    series (renamed to it, the source rows dropped), and the figures where that happened: what a study's claims
    say when each method is calibrated tightly (issue: privacy left on the table)."""
    out, changed = {}, []
    for fig, df in frames.items():
        swap = {tight: src for src, tight in tight_pairs(list(dict.fromkeys(df["series"].astype(str))))}
        if not swap:
            out[fig] = df
            continue
        changed.append(fig)
        d = df[~df["series"].isin(set(swap.values()))].copy()
        d["series"] = d["series"].replace(swap)
        if "method" in d:
            m = d["method"].astype(str)
            d["method"] = m.map(lambda x: tight_source(x) or x)
        out[fig] = d
    return out, changed


def source_frames(frames: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The figures' rows without their tight-calibration series (``<series>_tight`` drawn beside ``<series>``): the
    rows the sources' claims are checked on — a claim over "every method" of a figure must not count a tight
    series the source never drew (those are the ``@tight`` rows of :func:`tight_checks`)."""
    out = {}
    for fig, df in frames.items():
        tight = {t for _, t in tight_pairs(list(dict.fromkeys(df["series"].astype(str))))}
        out[fig] = df[~df["series"].isin(tight)] if tight else df
    return out


#: studies whose claims already check every series on its own, a tight calibration included (re-evaluating them
#: with the tight series in the source's place would only repeat those rows)
TIGHT_CLAIMS_SKIP = {"audit": "each audited calibration is its own method with its own claims",
                     "membership": "each training method, a tight calibration included, has its own claims"}


def tight_checks(study_name: str, st, frames: dict[str, pd.DataFrame], checks: pd.DataFrame) -> pd.DataFrame:
    """The study's claims re-evaluated under tight calibration (:func:`tight_frames`): the rows of the figures
    that have a tight series whose measurement moved, claim ids suffixed ``@tight``, ``calibration = tight``
    (none for the studies of :data:`TIGHT_CLAIMS_SKIP`)."""
    if study_name in TIGHT_CLAIMS_SKIP:
        return checks.iloc[:0]
    swapped, changed = tight_frames(frames)
    if not changed:
        return checks.iloc[:0]
    t = normalise_checks(st.anchor_checks(swapped))
    before = dict(zip(zip(checks["claim"], checks["statement"]), checks["measured"]))
    keep = [any(f.strip() in changed for f in str(r.figure).split(","))
            and before.get((r.claim, r.statement)) != r.measured for r in t.itertuples()]
    t = t[keep].copy()
    t["claim"] = t["claim"].astype(str) + TIGHT_CLAIM
    t["calibration"] = TIGHT
    return t


def run_anchor_checks(config: dict, study_name: str, inputs: list[str], out_parquet: str | Path,
                      out_html: str | Path) -> pd.DataFrame:
    from dpbench.studies import study

    st = study(study_name)
    df = read_results(*inputs)
    frames = {f: g for f, g in df.groupby("figure")}
    checks = normalise_checks(st.anchor_checks(frames if study_name in TIGHT_CLAIMS_SKIP else source_frames(frames)))
    checks = mark_reduced(pd.concat([checks, tight_checks(study_name, st, frames, checks)], ignore_index=True),
                          config, study_name)
    checks["dataset_variant"] = ", ".join(sorted(df["dataset_variant"].unique()))
    write_parquet(checks, out_parquet, provenance(config, study=study_name, kind="anchor_checks"))
    extra, lead = st.report_html(config, frames), st.report_lead_html(config, frames)
    atomic_write_bytes(Path(out_html), anchors_html(checks, extra, lead).encode())
    return checks


def verdict_text(r) -> str:
    """'holds', 'does not hold' or 'undecided: <reason>' of one row (a namedtuple or dict-like)."""
    status = getattr(r, "verdict", None) or (V.HOLDS if getattr(r, "passed") else V.FAILS)
    reason = getattr(r, "reason", "") or ""
    return f"{status}: {reason}" if status == V.UNDECIDED and reason else status


def summary_line(checks: pd.DataFrame) -> str:
    """'N checks: a hold, b do not hold, c undecided' (+ the reduced-grid mark when any row is reduced)."""
    n_tight = len(checks) - len(source_claims(checks))
    checks = source_claims(checks)
    c = V.counts(checks)
    s = (f"{len(checks)} checks: {c[V.HOLDS]} hold, {c[V.FAILS]} do not hold, {c[V.UNDECIDED]} undecided")
    if n_tight:
        s += f" (and {n_tight} re-evaluated under tight calibration)"
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


def thumbnail_png(path: str | Path, width: int = THUMB_WIDTH, colours: int | None = None) -> bytes:
    """``path`` (a PNG) scaled down to ``width`` pixels (never up), as PNG bytes; with ``colours`` reduced to a
    palette of that many colours (plots have few: ~3x smaller files); unreadable images as they are."""
    import io

    raw = Path(path).read_bytes()
    try:
        from PIL import Image

        im = Image.open(io.BytesIO(raw))
        if im.width > width:
            im = im.convert("RGB").resize((width, max(1, round(im.height * width / im.width))), Image.LANCZOS)
        if colours:
            im = im.convert("RGB").quantize(colors=colours, method=Image.Quantize.MEDIANCUT)
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


# -- the claims page: every checked claim of every study in one table (the report's landing page) ---------------

CLAIM_COLUMNS = ["study", "source", "figure", "claim", "statement", "measured", "verdict", "reason",
                 "dataset_variant", "reduced_grid", "calibration"]


def claims_frame(anchor_parquets: list[str | Path]) -> pd.DataFrame:
    """Every row of the studies' ``anchors.parquet`` files in one frame (:data:`CLAIM_COLUMNS`), with the
    study's source (:mod:`dpbench.sources`); rows in the order of the files, then as the study listed them."""
    from dpbench.sources import source

    frames = []
    for p in anchor_parquets:
        df = normalise_checks(pd.read_parquet(p))
        df["reduced_grid"] = df["reduced_grid"].astype(bool) if "reduced_grid" in df else False
        df["dataset_variant"] = df["dataset_variant"].astype(str) if "dataset_variant" in df else ""
        frames.append(df)
    if not frames:
        return pd.DataFrame(columns=CLAIM_COLUMNS)
    out = pd.concat(frames, ignore_index=True)
    out["source"] = out["study"].map(lambda s: source(s).short)
    return out[CLAIM_COLUMNS]


def source_claims(claims: pd.DataFrame) -> pd.DataFrame:
    """The rows of the sources' claims as calibrated by them (not the ``@tight`` re-evaluations)."""
    return claims[claims["calibration"] != TIGHT] if "calibration" in claims else claims


def claims_counts(claims: pd.DataFrame) -> pd.DataFrame:
    """Per study (in order of appearance): ``n`` checks, how many ``hold``, ``fail``, are ``undecided``, and
    ``reduced`` (rows computed on a reduced grid) — the sources' claims as calibrated by them (the re-evaluations
    under tight calibration are not claims of the sources and are not counted)."""
    rows = []
    claims = source_claims(claims)
    for st, g in claims.groupby("study", sort=False):
        c = V.counts(g)
        rows.append({"study": st, "source": g["source"].iloc[0], "n": len(g), "hold": c[V.HOLDS],
                     "fail": c[V.FAILS], "undecided": c[V.UNDECIDED], "reduced": int(g["reduced_grid"].sum())})
    return pd.DataFrame(rows, columns=["study", "source", "n", "hold", "fail", "undecided", "reduced"])


def report_link(path: str) -> str:
    """A link that opens ``path`` (an output marked for the Snakemake report, as the Snakefile names it) in the
    report's result view — the same ``javascript:`` link Snakemake writes for ``path_`` in a report caption."""
    from urllib.parse import quote

    return f"javascript:app.showResultInfo('{quote(str(path), safe='/')}')"


def claims_html(claims: pd.DataFrame, link=None, fragment: bool = False) -> str:
    """The claims page: a count per study ("reproduced k of n") and one table of every checked claim — source,
    figure, claim, statement, measured number, verdict, dataset variant, grid. ``link(study, figure)`` gives the
    href of a figure (None: no link); ``fragment``: no ``<html>`` wrapper (for the report's landing page)."""
    counts = claims_counts(claims)
    any_reduced = bool(claims["reduced_grid"].any()) if len(claims) else False
    tight = claims[claims["calibration"] == TIGHT] if "calibration" in claims else claims.iloc[:0]
    claims = source_claims(claims)
    total = V.counts(claims)  # zeros for no claims (claims_frame keeps the columns)
    esc = html.escape

    def a(study, figure, text):
        href = link(study, figure) if link is not None else None
        return f"<a href=\"{esc(href)}\">{esc(text)}</a>" if href else esc(text)

    head = ("<h2 style='margin:6px 0'>Claims of the sources, checked on this run's results</h2>"
            f"<p><b>{len(claims)} claims: {total[V.HOLDS]} hold, {total[V.FAILS]} do not hold, "
            f"{total[V.UNDECIDED]} undecided.</b> A claim <i>holds</i> or <i>does not hold</i> when the measurement "
            "decides it (differences beyond two standard errors where the measurement is random); otherwise it is "
            "<i>undecided</i> and says why. An empty set never passes.</p>")
    if any_reduced:
        head += (f"<p style='color:#b36b00;font-weight:bold'>{V.REDUCED_LABEL.capitalize()}: rows marked so come "
                 "from a configuration smaller than the study's full grid (config.yaml).</p>")
    summary = "".join(
        f"<tr><td>{esc(r.study)}</td><td>{esc(r.source)}</td><td><b>reproduced {r.hold} of {r.n}</b></td>"
        f"<td>{r.fail}</td><td>{r.undecided}</td><td>{'all' if r.reduced == r.n else r.reduced}</td></tr>"
        for r in counts.itertuples())
    table_style = ("border='1' cellpadding='3' style='border-collapse:collapse;font-family:sans-serif;"
                   "font-size:12px;width:max-content;max-width:none'")
    summary = (f"<table {table_style}><tr><th>study</th><th>source</th><th>claims that hold</th>"
               f"<th>do not hold</th><th>undecided</th><th>on a reduced grid</th></tr>{summary}</table>")
    wrap = "style='min-width:260px;max-width:420px;white-space:normal'"   # long text wraps in its column
    tight_note = ""
    if len(tight):   # the row group "under tight calibration": each claim beside its verdict as the source calibrates
        was = {(r.study, r.claim): r for r in claims.itertuples()}
        trows = "".join(
            f"<tr style='vertical-align:top'><td>{esc(r.source)}</td><td>{a(r.study, r.figure, r.figure)}</td>"
            f"<td>{esc(r.claim)}</td><td {wrap}>{esc(r.statement)}</td><td {wrap}>{esc(r.measured)}</td>"
            f"<td style='color:{COLOURS.get(old.verdict, 'black') if old else 'black'}'>"
            f"{esc(verdict_text(old)) if old else ''}</td>"
            f"<td style='color:{COLOURS.get(r.verdict, 'black')};font-weight:bold'>{esc(verdict_text(r))}"
            f"{' (changed)' if old is not None and old.verdict != r.verdict else ''}</td></tr>"
            for r in tight.itertuples() for old in [was.get((r.study, r.claim[:-len(TIGHT_CLAIM)]))])
        n_changed = sum(1 for r in tight.itertuples()
                        if (o := was.get((r.study, r.claim[:-len(TIGHT_CLAIM)]))) is not None and o.verdict != r.verdict)
        tight_note = (f"<p><b>Under tight calibration</b> — the claims whose measurement moves when every method "
                      f"with a tight calibration (series <code>*_tight</code>, dashed in the figures) stands in for "
                      f"its source calibration: {len(tight)} re-evaluated, {n_changed} verdicts change. Not claims "
                      "of the sources; not counted above.</p>"
                      f"<table {table_style}><tr><th>source</th><th>figure</th><th>claim</th><th>statement</th>"
                      f"<th>measured (tight)</th><th>verdict (source calibration)</th><th>verdict (tight)</th></tr>"
                      f"{trows}</table>")
    if fragment:
        return _landing_fragment(claims, head, summary, tight_note, a)
    rows = "".join(
        f"<tr style='vertical-align:top'><td>{{}}</td><td>{{}}</td><td>{{}}</td><td {wrap}>{{}}</td><td {wrap}>{{}}</td>"
        "<td style='color:{};font-weight:bold;max-width:260px;white-space:normal'>{}</td><td>{}</td><td>{}</td></tr>".format(
            esc(r.source), a(r.study, r.figure, r.figure), esc(r.claim), esc(r.statement), esc(r.measured),
            COLOURS.get(r.verdict, "black"), esc(verdict_text(r)), esc(r.dataset_variant),
            f"<i>{V.REDUCED_LABEL}</i>" if r.reduced_grid else "full grid")
        for r in claims.itertuples())
    table = (f"<table {table_style}><tr><th>source</th><th>figure</th><th>claim</th><th>statement</th>"
             f"<th>measured</th><th>verdict</th><th>dataset variant</th><th>grid</th></tr>{rows}</table>")
    table += tight_note
    body = f"<div style='font-family:sans-serif'>{head}{summary}<p></p>{table}</div>"
    return ("<html><head><meta charset='utf-8'><title>Claims</title></head><body>" + body + "</body></html>")


#: the landing page's claim table: verdict first, then what is claimed and measured, in a fixed layout that fits
#: the report's content pane of a 1,400-px window (the sidebar takes ~280 px); long words break inside their cell
LANDING_COLUMNS = (("verdict", "15%"), ("study", "8%"), ("figure", "7%"), ("claim", "11%"), ("statement", "26%"),
                   ("measured", "25%"), ("data, grid", "8%"))
#: Snakemake's report centres the landing page vertically (a flex box of the window's height): content taller
#: than the window lost its top, which could not be scrolled to. While the fragment is shown it starts at the top.
LANDING_STYLE = "<style>div.h-screen.items-center{align-items:flex-start}</style>"


def _landing_fragment(claims: pd.DataFrame, head: str, summary: str, tight_note: str, a) -> str:
    """The report's landing page: the counts, then every claim with its verdict first (:data:`LANDING_COLUMNS`),
    the table scrolling inside a box of 60 % of the window's height, then the tight-calibration row group."""
    esc = html.escape
    cell = "style='overflow-wrap:anywhere;vertical-align:top'"
    rows = "".join(
        f"<tr><td {cell}><span style='color:{COLOURS.get(r.verdict, 'black')};font-weight:bold'>"
        f"{esc(verdict_text(r))}</span></td><td {cell}>{esc(r.study)}</td><td {cell}>{a(r.study, r.figure, r.figure)}"
        f"</td><td {cell}>{esc(r.claim)}</td><td {cell}>{esc(r.statement)}</td><td {cell}>{esc(r.measured)}</td>"
        f"<td {cell}>{esc(r.dataset_variant)}; "
        f"{'<i>' + V.REDUCED_LABEL + '</i>' if r.reduced_grid else 'full grid'}</td></tr>"
        for r in claims.itertuples())
    cols = "".join(f"<col style='width:{w}'>" for _, w in LANDING_COLUMNS)
    heads = "".join(f"<th style='text-align:left'>{esc(n)}</th>" for n, _ in LANDING_COLUMNS)
    table = ("<table border='1' cellpadding='3' style='border-collapse:collapse;font-family:sans-serif;"
             f"font-size:12px;width:100%;table-layout:fixed'><colgroup>{cols}</colgroup><tr>{heads}</tr>{rows}</table>")
    return (f"{LANDING_STYLE}<div style='font-family:sans-serif;width:calc(100vw - 340px);max-width:1500px'>"
            f"{head}{summary}<p><b>Every claim</b>, verdict first (scroll inside the table; a figure's name opens it):"
            f"</p><div style='max-height:60vh;overflow:auto;border:1px solid #ccc'>{table}</div>"
            f"<div style='overflow-x:auto'>{tight_note}</div></div>")


def write_claims(config: dict, anchor_parquets: list[str], out_parquet, out_html, out_fragment,
                 out_metadata=None) -> pd.DataFrame:
    """The claims of every study: ``claims.parquet`` (with provenance), a page that links each figure by its
    path beside the page, the landing-page fragment whose links open the figure in the Snakemake report, and
    the report's metadata (``snakemake --report-metadata``: its presence makes the landing page show the
    workflow description, which embeds the fragment)."""
    from dpbench.workflow import figures

    claims = claims_frame(anchor_parquets)
    fig_dir = Path(config["figures_dir"])
    pngs = set(figures(config))

    def target(study, figure):  # relative to figures_dir: the figure drawn by this run, else the anchor page
        return f"{study}/{figure}.png" if (study, figure) in pngs else f"{study}/anchors.html"

    write_parquet(claims, out_parquet, provenance(config, kind="claims"))
    atomic_write_bytes(Path(out_html), claims_html(claims, target).encode())  # the page sits in figures_dir
    atomic_write_bytes(Path(out_fragment), claims_html(claims, lambda s, f: report_link(fig_dir / target(s, f)),
                                                        fragment=True).encode())
    if out_metadata is not None:
        import yaml

        c = V.counts(source_claims(claims))
        # numbers only: Snakemake 9 renders a string value's every docutils part (whole, encoding, ...)
        meta = {"claims checked": len(source_claims(claims)), "hold": c[V.HOLDS], "do not hold": c[V.FAILS],
                "undecided": c[V.UNDECIDED]}
        atomic_write_bytes(Path(out_metadata), yaml.safe_dump(meta, sort_keys=False).encode())
    return claims

