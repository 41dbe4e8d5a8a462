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
