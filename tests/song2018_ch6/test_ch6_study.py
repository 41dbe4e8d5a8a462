"""song2018 chapter 6 study: config errors name the key, every series runs on a tiny config (through the song2018
dispatch and the runner) into schema-valid rows, reproducibly; figures, captions and anchor checks are produced."""

import copy

import numpy as np
import pytest

from dpbench.config import DEFAULT_CONFIG_PATH, ConfigError, deep_merge
from dpbench.figures import plot_from_files
from dpbench.report import run_anchor_checks
from dpbench.results import read_results
from dpbench.runner import run_series
from dpbench.studies import load_config, song2018
from dpbench.studies.song2018 import ch6_compute as ch6


def s18(**kw):
    return {"studies": {"song2018": kw}}


@pytest.mark.parametrize("override,key", [
    (s18(figures={"fig6_1": {"datasets": ["karate"], "epsilons": [1.0]}}),
     "studies.song2018.figures.fig6_1.datasets[0]"),
    (s18(figures={"fig6_1": {"datasets": ["hiv"], "epsilons": [1.0, 1.0]}}),
     "studies.song2018.figures.fig6_1.epsilons"),
    (s18(figures={"fig6_2": {"datasets": ["hiv"], "epsilon": 5.0, "releases": [2, 20]}}),
     "studies.song2018.figures.fig6_2.releases"),
    (s18(ch6={"runs": 1}), "studies.song2018.ch6.runs"),
    (s18(figures={"table6_1": {"undirected_bounds": [5]}}), "studies.song2018.figures.table6_1.undirected_bounds[0]"),
])
def test_bad_config_names_the_key(override, key):
    with pytest.raises(ConfigError) as err:
        load_config(DEFAULT_CONFIG_PATH, overrides=override)
    assert f"invalid config: {key}" in str(err.value)


def test_default_config_has_the_thesis_settings():
    cfg = load_config(DEFAULT_CONFIG_PATH)["studies"]["song2018"]
    c6 = cfg["ch6"]
    assert c6["runs"] == 100 and c6["degree_step"] == 5 and c6["tau_percentile"] == 90
    assert c6["synthetic1"] == {"m0": 500, "n": 70, "years": 20, "k": 1, "p_isolated": 0.5, "c": 1.0}
    assert c6["synthetic2"]["p_r"] == 0.1 and c6["synthetic2"]["p_i"] == 0.18 and c6["synthetic2"]["nodes"] == 10000
    assert cfg["figures"]["fig6_2"]["epsilon"] == 5.0
    assert song2018.series(cfg, "fig6_1") == [f"ch6_{d}" for d in ch6.DATASETS]
    assert song2018.series_code_hash("ch6_hiv") == ch6.code_hash() != song2018.series_code_hash("mqm_exact")


TINY6 = {
    "ch6": {"runs": 6, "surrogate_scale": 0.2, "projection_fractions": [0.5, 1.0],
            "synthetic2": {"nodes": 2000, "n0": 100, "steps": 10}},
    "figures": {
        "fig6_1": {"datasets": ["hiv", "synthetic1"], "epsilons": [1.0, 5.0]},
        "fig6_2": {"datasets": ["synthetic2"], "epsilon": 5.0, "releases": [2, 5, 10]},
        "table6_1": {"releases": 2, "undirected_nodes": 4, "undirected_bounds": [2], "directed_nodes": 3,
                     "directed_bounds": [[1, 2]], "construction_bounds": [3]},
        "table6_4": {"datasets": ["hiv", "synthetic2"]},
    },
}


@pytest.fixture
def config6(tiny_config):
    cfg = copy.deepcopy(tiny_config)
    cfg["studies"]["song2018"] = deep_merge(cfg["studies"]["song2018"], TINY6)
    return cfg


def test_every_series_figure_and_anchor(config6, tmp_path):
    study = config6["studies"]["song2018"]
    song2018.validate(study)
    inputs_all = []
    for fig in ch6.FIGURES:
        assert fig in song2018.figure_names(study)
        inputs = []
        for s in song2018.series(study, fig):
            out = tmp_path / "res" / fig / f"{s}.parquet"
            df = run_series(config6, "song2018", fig, s, out, n_jobs=1)
            assert np.isfinite(df["value"]).all() and (df["seed"] == config6["seed"]).all()
            if fig in ("fig6_1", "fig6_2"):
                assert (df["is_substitute"] == (df["dataset"] == "hiv")).all()
                assert set(df["method"]) == {"sensdiff", "compose_d_bounded", "compose_projection"}
                assert df["rep"].nunique() == 6 and (df["value"] >= 0).all()
            inputs.append(str(out))
        inputs_all += inputs
        if fig == "fig6_2":                   # drawn like fig6_1 (the smoke run draws it)
            continue
        png = tmp_path / "fig" / f"{fig}.png"
        caption = plot_from_files(config6, "song2018", fig, inputs, png)
        assert png.read_bytes()[:4] == b"\x89PNG" and "Note:" in caption
        if fig in ("fig6_1", "table6_4"):
            assert "SURROGATE DATA" in caption
    df = read_results(*inputs_all)
    t1 = df[df["figure"] == "table6_1"]
    assert (t1["value"] <= t1["formula"]).all()
    checks = run_anchor_checks(config6, "song2018", inputs_all, tmp_path / "a.parquet",
                               tmp_path / "a.html").set_index("claim")
    assert checks.loc["A6.T1", "passed"]
    ids = {c.split("/")[0] for c in checks.index}
    assert {"A6.1", "A6.2", "A6.3", "A6.4", "A6.4b", "A6.T4"} <= ids


def test_series_are_reproducible(config6, tmp_path):
    a, b = copy.deepcopy(config6), copy.deepcopy(config6)
    a["cache_dir"], b["cache_dir"] = str(tmp_path / "c1"), str(tmp_path / "c2")
    x = ch6.run_series(a, "fig6_1", "ch6_hiv")
    y = ch6.run_series(b, "fig6_1", "ch6_hiv")
    np.testing.assert_array_equal(x["value"].to_numpy(), y["value"].to_numpy())
    with pytest.raises(ValueError, match="not a configured series"):
        ch6.run_series(a, "fig6_1", "ch6_patent")


def test_chapter_6_hashes_its_own_compute_closure_only():
    from dpbench import codehash

    mods = set(codehash.closure(["dpbench.studies.song2018.ch6_compute"]))
    assert {"dpbench.data.graphs", "dpbench.privacy.graph_sensitivity", "dpbench.methods.graph_release",
            "dpbench.privacy.mechanisms"} <= mods
    views = ("ch6_spec", "ch6_captions", "ch6_plots", "ch6_anchors", "ch7_", "ch34_", "spec", "plots", "anchors")
    assert not [m for m in mods if m.split(".")[-1].startswith(views) or m in ("dpbench.plot", "dpbench.verdicts")]


def test_frozen_values(config6):
    """Bit-identical results: values computed when chapter 6 was added (seed 20200710, the tiny config above); a
    refactor must keep the same draws in the same order."""
    df = ch6.run_series(config6, "fig6_1", "ch6_synthetic1")
    got = df["value"].iloc[[0, 1, 50, 100, 143]].tolist()
    assert got == [4.477556063564681, 2.533037209288841, 8.888239339157044, 11.99094379086962, 1.6812924702363456]
    assert df["value"].sum() == pytest.approx(1953.7757301213744, rel=1e-12)
