"""The figure "accuracy gained by tight calibration" (dpbench.tight_gain): paired differences per point, its
files, and its place in the workflow's targets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpbench.tight_gain import gain_table, plot_gain, tight_pairs


def _rows(series, values, x=1.0, metric="accuracy", figure="fig1"):
    return pd.DataFrame({"study": "s", "figure": figure, "series": series, "metric": metric, "x_name": "epsilon",
                         "x": x, "rep": range(len(values)), "value": values})


def test_pairs_and_paired_difference_with_interval():
    assert tight_pairs(["a", "a_tight", "b_tight", "c"]) == [("a", "a_tight")]
    src, tight = np.array([0.5, 0.6, 0.7, 0.55]), np.array([0.7, 0.75, 0.9, 0.7])
    df = pd.concat([_rows("a", src), _rows("a_tight", tight), _rows("c", [0.1] * 4),
                    _rows("a", src, metric="mse_scaled")])     # a scaled duplicate of a metric is left out
    t = gain_table(df)
    assert len(t) == 1
    r = t.iloc[0]
    d = tight - src
    assert r["paired"] and r["n"] == 4 and r["difference"] == pytest.approx(d.mean())
    assert r["se"] == pytest.approx(d.std(ddof=1) / 2)
    assert r["ci_low"] < r["difference"] < r["ci_high"]
    # different repetitions: unpaired (Welch)
    t2 = gain_table(pd.concat([_rows("a", src), _rows("a_tight", tight[:3])]))
    assert not t2.iloc[0]["paired"] and t2.iloc[0]["difference"] == pytest.approx(tight[:3].mean() - src.mean())


def test_plot_writes_png_caption_and_csv(tmp_path):
    df = pd.concat([_rows("a", [0.5, 0.6, 0.7], x=x) for x in (0.1, 1.0, 10.0)]
                   + [_rows("a_tight", [0.6, 0.8, 0.7], x=x) for x in (0.1, 1.0, 10.0)])
    t = gain_table(df)
    cap = plot_gain(t, "s", tmp_path / "tight_gain.png", tmp_path / "tight_gain.csv")
    assert (tmp_path / "tight_gain.png").stat().st_size > 5000 and "tight − source" in cap
    back = pd.read_csv(tmp_path / "tight_gain.csv")
    assert list(back["x"]) == [0.1, 1.0, 10.0] and back["difference"].tolist() == pytest.approx([0.1] * 3)


def test_workflow_targets_the_gain_figure_of_studies_with_tight_series():
    from dpbench.config import DEFAULT_CONFIG_PATH
    from dpbench.studies import load_config
    from dpbench.workflow import all_targets, tight_gain_figures

    cfg = load_config(DEFAULT_CONFIG_PATH)
    assert tight_gain_figures(cfg, "wu2016") == ["fig3_2", "fig4_1", "fig4_2", "fig4_6"]   # fig3_2: bst14_tight
    assert tight_gain_figures(cfg, "estimation") == []
    targets = all_targets(cfg)
    assert f"{cfg['figures_dir']}/wu2016/tight_gain.png" in targets
    assert f"{cfg['figures_dir']}/estimation/tight_gain.png" not in targets


def test_the_figure_rule_never_claims_the_gain_figure():
    """``figures/<study>/tight_gain.png`` belongs to the tight_gain rule: the figure rule's wildcard must not match
    it (Snakemake would evaluate the figure rule's inputs for it and print an 'unknown figure' error)."""
    import re

    from dpbench.workflow import FIGURE_NAME

    pattern = rf"figures/(?P<study>[a-z0-9]+)/(?P<figure>{FIGURE_NAME})\.png"
    assert re.fullmatch(pattern, "figures/wu2016/tight_gain.png") is None
    assert re.fullmatch(pattern, "figures/wu2016/fig4_1.png") and re.fullmatch(pattern, "figures/x/tight_gain_b.png")


def test_points_with_axes_and_non_finite_values(tmp_path):
    """An attack figure: several attacks per (series, x, repetition) are separate points (an axis), a metric that
    is infinite on one side gives a non-finite difference that is kept in the CSV but not drawn (it once broke the
    log axis), and a point only the source series has is left out."""
    rows = []
    for s, shift in (("m", 0.0), ("m_tight", 0.1)):
        for attack in ("loss", "shadow"):
            for x in (0.1, 1.0, 10.0):
                for rep in range(3):
                    rows.append({"study": "s", "figure": "fa", "series": s, "metric": "accuracy", "x_name": "epsilon",
                                 "x": x, "rep": rep, "attack": attack, "value": 0.5 + shift + 0.01 * rep})
                    rows.append({"study": "s", "figure": "fa", "series": s, "metric": "eps_point", "x_name": "epsilon",
                                 "x": x, "rep": rep, "attack": attack, "value": np.inf if s == "m" else 1.0})
    rows.append({**rows[0], "x": 100.0})                   # the source alone: no pair
    t = gain_table(pd.DataFrame(rows))
    acc = t[t["metric"] == "accuracy"]
    assert len(acc) == 6 and set(acc["point"]) == {"attack=loss", "attack=shadow"} and acc["paired"].all()
    assert acc["difference"].to_numpy() == pytest.approx([0.1] * 6)
    assert not np.isfinite(t[t["metric"] == "eps_point"]["difference"]).any()
    plot_gain(t, "s", tmp_path / "g.png", tmp_path / "g.csv")      # draws the finite panels only
    assert (tmp_path / "g.png").stat().st_size > 5000 and len(pd.read_csv(tmp_path / "g.csv")) == len(t)
