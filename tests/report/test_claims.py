"""The claims page: every checked claim of every study in one table, counted per study, linking each figure —
as its own page, as the Snakemake report's landing-page fragment, and as report metadata (dpbench.report)."""

from __future__ import annotations

import copy

import pandas as pd
import yaml

from dpbench import verdicts as V
from dpbench.report import claims_counts, claims_frame, claims_html, write_claims
from dpbench.results import read_metadata, write_parquet
from dpbench.sources import SOURCES
from tests.conftest import TINY


def _anchors(path, study, rows, reduced):
    recs = [V.row(study, claim, fig, f"statement {claim}", f"measured {claim}", value, passed)
            for claim, fig, value, passed in rows]
    df = pd.DataFrame(recs).assign(reduced_grid=reduced, dataset_variant=f"{study} data")
    write_parquet(df, path, {"kind": "anchor_checks"})
    return path


def test_claims_of_every_study_in_one_table_with_counts_and_links(tmp_path):
    a = _anchors(tmp_path / "vdm.parquet", "vdm2020",
                 [("claim1", "fig1a", 0.9, True), ("claim2", "fig1a", 0.1, False),
                  ("claim3", "fig99", float("nan"), True)], reduced=True)       # NaN: undecided
    b = _anchors(tmp_path / "wu.parquet", "wu2016", [("A1", "fig3_1", 1.0, True)], reduced=False)
    config = copy.deepcopy({**TINY, "figures_dir": str(tmp_path / "figures"), "results_dir": str(tmp_path)})
    paths = [tmp_path / "claims.parquet", tmp_path / "claims.html", tmp_path / "front.html", tmp_path / "meta" / "m.yaml"]
    claims = write_claims(config, [a, b], *paths)

    assert len(claims) == 4 and list(claims["study"]) == ["vdm2020"] * 3 + ["wu2016"]
    assert set(claims["source"]) == {SOURCES["vdm2020"].short, SOURCES["wu2016"].short}
    assert list(claims["verdict"]) == [V.HOLDS, V.FAILS, V.UNDECIDED, V.HOLDS]
    counts = claims_counts(claims).set_index("study")
    assert counts.loc["vdm2020", ["n", "hold", "fail", "undecided", "reduced"]].tolist() == [3, 1, 1, 1, 3]
    assert counts.loc["wu2016", ["n", "hold", "reduced"]].tolist() == [1, 1, 0]

    stored = pd.read_parquet(paths[0])
    assert len(stored) == 4 and read_metadata(paths[0])["kind"] == "claims"

    page = paths[1].read_text()
    assert "reproduced 1 of 3" in page and "reproduced 1 of 1" in page
    assert "4 claims: 2 hold, 1 do not hold, 1 undecided" in page
    assert f"{V.UNDECIDED}: {V.NAN}" in page and V.REDUCED_LABEL in page and "wu2016 data" in page
    assert "href=\"vdm2020/fig1a.png\"" in page          # an enabled figure: its PNG beside the page
    assert "href=\"vdm2020/anchors.html\"" in page       # a figure the run did not draw: the anchor page
    assert page.startswith("<html>")

    front = paths[2].read_text()
    assert not front.startswith("<html>") and "statement claim2" in front
    fig = (tmp_path / "figures" / "vdm2020" / "fig1a.png").as_posix()
    assert f"javascript:app.showResultInfo(&#x27;{fig}&#x27;)" in front   # opens the figure inside the report

    meta = yaml.safe_load(paths[3].read_text())
    assert meta == {"claims checked": 4, "hold": 2, "do not hold": 1, "undecided": 1}


def test_no_claims_is_an_empty_table_not_an_error():
    empty = claims_frame([])
    assert len(empty) == 0 and "0 claims" in claims_html(empty)


def test_tight_frames_swap_each_tight_series_for_its_source_series():
    from dpbench.report import tight_frames

    df = pd.DataFrame({"series": ["lp", "lp_tight", "np", "other_tight"], "method": ["lp", "lp_tight", "np", "x"],
                       "value": [0.1, 0.5, 0.9, 0.3]})
    out, changed = tight_frames({"f1": df, "f2": df[df.series == "np"]})
    assert changed == ["f1"]
    f1 = out["f1"].set_index("series")["value"]
    assert f1["lp"] == 0.5 and f1["np"] == 0.9 and "lp_tight" not in f1
    assert f1["other_tight"] == 0.3          # a tight series without its source series stays as it is
    assert set(out["f1"]["method"]) == {"lp", "np", "x"} and out["f2"] is not None


def test_the_sources_claims_are_checked_without_the_tight_series():
    """A claim over every method of a figure (e.g. wu2016's A4: some private point above noiseless) must not count a
    tight series the source never drew: the source's rows are the figure less each ``<s>_tight`` whose ``<s>`` is
    drawn (a tight series without its source stays: it is then the figure's own method)."""
    from dpbench.report import source_frames

    df = pd.DataFrame({"series": ["mnist_bst14", "mnist_bst14_tight", "np", "other_tight"], "value": [0.1, 0.5, 0.9,
                                                                                                    0.3]})
    out = source_frames({"f1": df, "f2": df[df.series == "np"]})
    assert list(out["f1"]["series"]) == ["mnist_bst14", "np", "other_tight"]
    assert out["f2"].equals(df[df.series == "np"])


def test_claims_under_tight_calibration_are_a_row_group_not_counted(tmp_path, monkeypatch):
    """A study's claim re-evaluated with the tight series in place of the source series: a row ``<id>@tight``
    with ``calibration = tight`` when its measurement moves; the page shows both verdicts; the counts (and the
    report metadata) are the sources' claims only."""
    from types import SimpleNamespace

    from dpbench.report import run_anchor_checks

    def anchor_checks(frames):
        f = frames["fig1"]
        m = f.groupby("series")["value"].mean()
        return pd.DataFrame([
            V.row("vdm2020", "c1", "fig1", "lp beats np", f"lp {m['lp']:.2f} vs np {m['np']:.2f}", m["lp"] - m["np"],
                  bool(m["lp"] > m["np"])),
            V.row("vdm2020", "c2", "fig1", "np is above 0.5", f"np {m['np']:.2f}", m["np"], bool(m["np"] > 0.5))])

    st = SimpleNamespace(anchor_checks=anchor_checks, report_html=lambda c, f: "", report_lead_html=lambda c, f: "")
    monkeypatch.setattr("dpbench.studies.study", lambda name: st)
    monkeypatch.setattr("dpbench.report.mark_reduced", lambda checks, config, name: checks.assign(reduced_grid=False))
    rows = pd.DataFrame({"figure": "fig1", "series": ["lp", "lp_tight", "np"], "value": [0.4, 0.8, 0.6],
                         "dataset_variant": "d"})
    res = tmp_path / "fig1.parquet"
    write_parquet(rows, res, {})
    checks = run_anchor_checks({}, "vdm2020", [str(res)], tmp_path / "anchors.parquet", tmp_path / "anchors.html")
    assert list(checks["claim"]) == ["c1", "c2", "c1@tight"]          # c2 does not move: no tight row
    assert list(checks["calibration"]) == ["source", "source", "tight"]
    assert list(checks["verdict"]) == [V.FAILS, V.HOLDS, V.HOLDS]
    assert "2 checks: 1 hold, 1 do not hold" in (tmp_path / "anchors.html").read_text()
    config = copy.deepcopy({**TINY, "figures_dir": str(tmp_path / "figures"), "results_dir": str(tmp_path)})
    paths = [tmp_path / "claims.parquet", tmp_path / "claims.html", tmp_path / "front.html", tmp_path / "m.yaml"]
    claims = write_claims(config, [tmp_path / "anchors.parquet"], *paths)
    assert claims_counts(claims).set_index("study").loc["vdm2020", "n"] == 2
    assert yaml.safe_load((tmp_path / "m.yaml").read_text())["claims checked"] == 2
    page = (tmp_path / "claims.html").read_text()
    assert "Under tight calibration" in page and "1 re-evaluated, 1 verdicts change" in page and "c1@tight" in page


def test_studies_that_check_every_series_on_its_own_get_no_tight_rows():
    from types import SimpleNamespace

    from dpbench.report import TIGHT_CLAIMS_SKIP, normalise_checks, tight_checks

    frames = {"fig1": pd.DataFrame({"series": ["lp", "lp_tight"], "value": [0.1, 0.2]})}
    rows = normalise_checks(pd.DataFrame([V.row("audit", "c", "fig1", "s", "m", 1.0, True)]))
    called = []
    st = SimpleNamespace(anchor_checks=lambda f: called.append(f) or rows)
    assert set(TIGHT_CLAIMS_SKIP) == {"audit", "membership"}
    assert tight_checks("audit", st, frames, rows).empty and not called


def test_landing_fragment_puts_the_verdict_first_and_fits_the_pane():
    """The report's landing page (issue: at 1400×1000 the verdict, 6th of 14 columns, was off-screen and the top of
    the page clipped): the claim table's first column is the verdict, its layout is fixed with widths summing to
    100 % of the pane, and the style rule that stops the report's vertical centring comes with it."""
    import re

    import pandas as pd

    from dpbench import report as R

    claims = pd.DataFrame([{"study": "vdm2020", "source": "van der Maaten & Hannun (2020)", "figure": "fig1a",
                            "claim": "claim1a", "statement": "s", "measured": "m", "verdict": "holds", "reason": "",
                            "dataset_variant": "mnist", "reduced_grid": False, "calibration": "source"}])
    frag = R.claims_html(claims, link=lambda s, f: f"{s}/{f}.png", fragment=True)
    assert frag.startswith(R.LANDING_STYLE) and "align-items:flex-start" in R.LANDING_STYLE
    heads = re.findall(r"<th style='text-align:left'>([^<]*)</th>", frag)
    assert heads[0] == "verdict" and heads[:6] == ["verdict", "study", "figure", "claim", "statement", "measured"]
    assert "table-layout:fixed" in frag
    assert sum(float(w.rstrip("%")) for _, w in R.LANDING_COLUMNS) == 100
    first_row = frag.split("</th></tr>", 1)[1]
    assert first_row.index("holds") < first_row.index("fig1a") < first_row.index("claim1a")
