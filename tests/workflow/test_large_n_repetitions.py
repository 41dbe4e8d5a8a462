"""vdm2020 Fig. 4's ``large_n_repetitions``: fewer repetitions at the costly large-N points. Repetition r of a
point is the same cell whatever the count, so the reduced series is the full series less its later repetitions
there — unsharded or gathered from shards — and the plan, the captions and the config checks follow the rule."""

from __future__ import annotations

import copy

import pytest

from dpbench import shards
from dpbench.config import ConfigError
from dpbench.plan import figure_plan
from dpbench.runner import run_series
from dpbench.studies import STUDIES
from tests.workflow.test_shards import _cfg, _run_sharded

RULE = {"from_n_train": 640, "repetitions": 2}


def _with_rule(config, reps=3, rule=RULE):
    cfg = copy.deepcopy(config)
    cfg["studies"]["vdm2020"]["repetitions"] = reps
    cfg["studies"]["vdm2020"]["figures"]["fig4"]["large_n_repetitions"] = dict(rule)
    return cfg


def test_the_hook_counts_repetitions_per_point(tiny_config):
    st = STUDIES["vdm2020"]
    cfg = _with_rule(tiny_config)["studies"]["vdm2020"]
    got = {p.x: st.repetitions(cfg, "fig4", p) for p in st.points(cfg, "fig4")}
    assert got == {200.0: 3, 640.0: 2}
    # never more than the study's repetitions, and other figures are untouched
    cfg["repetitions"] = 1
    assert {st.repetitions(cfg, "fig4", p) for p in st.points(cfg, "fig4")} == {1}
    assert {st.repetitions(cfg, "fig1a", p) for p in st.points(cfg, "fig1a")} == {1}


@pytest.mark.parametrize("series", ["loss_perturbation", "subsample_aggregate"])
def test_reduced_series_is_the_full_series_less_its_later_repetitions(tiny_config, tmp_path, series):
    full = copy.deepcopy(tiny_config)
    full["studies"]["vdm2020"]["repetitions"] = 3
    full["cache_dir"] = str(tmp_path / "full")
    cfg = _with_rule(tiny_config)
    cfg["cache_dir"] = str(tmp_path / "reduced")
    a = run_series(full, "vdm2020", "fig4", series, n_jobs=1)
    b = run_series(cfg, "vdm2020", "fig4", series, n_jobs=1)
    assert a.groupby("x")["rep"].nunique().to_dict() == {200.0: 3, 640.0: 3}
    assert b.groupby("x")["rep"].nunique().to_dict() == {200.0: 3, 640.0: 2}
    keep = ~((a["x"] >= 640) & (a["rep"] >= 2))
    shards.assert_same_results(a[keep].reset_index(drop=True), b)
    # sharded: the same rows, whatever the shard size
    sh = _cfg(cfg, tmp_path / "unused", 1e-6)
    sp, got = _run_sharded(sh, tmp_path / "sharded", "fig4", series, 1, False)
    assert len(sp.final) > 1
    shards.assert_same_results(b, got)
    # the plan counts the cells of the rule
    assert sum(s.cells for s in sp.final) == len(b)


def test_the_plan_and_caption_follow_the_rule(tiny_config):
    from dpbench.studies.vdm2020.captions import deviations

    full = copy.deepcopy(tiny_config)
    full["studies"]["vdm2020"]["repetitions"] = 3
    cfg = _with_rule(tiny_config)
    cells = lambda c: figure_plan(c, "vdm2020", "fig4").cells  # noqa: E731
    assert cells(cfg) < cells(full)
    text = " ".join(deviations(cfg["studies"]["vdm2020"], "fig4"))
    assert "3 repetitions (paper: 100), 2 at N ≥ 640" in text
    assert "at N ≥" not in " ".join(deviations(full["studies"]["vdm2020"], "fig4"))


def test_the_figure_caption_gives_the_range_of_repetitions():
    import pandas as pd

    from dpbench.plot import caption_text
    from dpbench.studies.vdm2020 import figure

    rows = [{"series": s, "x": x, "curve": "", "rep": r, "dataset_variant": "real", "is_substitute": False}
            for s in ("a", "b") for x, n in ((1.0, 3), (2.0, 2)) for r in range(n)]
    assert "mean ± std over 2–3 repetitions" in caption_text(figure("fig4"), [], pd.DataFrame(rows))
    same = [r for r in rows if r["x"] == 1.0]
    assert "mean ± std over 3 repetitions" in caption_text(figure("fig4"), [], pd.DataFrame(same))


def test_the_default_grid_uses_it_at_large_n():
    from dpbench.cli import DEFAULT_CONFIG_PATH
    from dpbench.studies import load_config

    cfg = load_config(DEFAULT_CONFIG_PATH)["studies"]["vdm2020"]
    st = STUDIES["vdm2020"]
    got = {int(p.x): st.repetitions(cfg, "fig4", p) for p in st.points(cfg, "fig4")}
    assert got[200_000] == 100 and got[500_000] == 25 and got[1_000_000] == 25


@pytest.mark.parametrize("where, rule, message", [
    ("fig5a", RULE, "figures.fig5a.large_n_repetitions"),
    ("fig4", {"from_n_train": 640, "repetitions": 1}, "large_n_repetitions"),
    ("fig4", {"from_n_train": 640}, "large_n_repetitions"),
])
def test_a_bad_rule_is_refused_naming_the_key(tiny_config, where, rule, message):
    from dpbench.studies import validate_config

    cfg = copy.deepcopy(tiny_config)
    cfg["studies"]["vdm2020"]["figures"][where]["large_n_repetitions"] = rule
    with pytest.raises(ConfigError, match=message):
        validate_config(cfg)
