"""song2018 chapters 3-4 study: config errors name the key, every series runs on a tiny config (through the song2018
dispatch and the runner), figures and anchors are produced, preprocessing and the chapter-4 data plan are right."""

import copy

import numpy as np
import pytest

from dpbench.config import DEFAULT_CONFIG_PATH, ConfigError, deep_merge
from dpbench.studies import load_config
from dpbench.figures import plot_from_files
from dpbench.report import run_anchor_checks
from dpbench.results import read_results
from dpbench.runner import run_series
from dpbench.studies import song2018
from dpbench.studies.song2018 import ch34_compute as ch34
from dpbench.studies.song2018 import ch34_data


def s18(**kw):
    return {"studies": {"song2018": kw}}


@pytest.mark.parametrize("override,key", [
    (s18(figures={"fig4_1": {"order": {"cs": [100, 500]}}}), "studies.song2018.figures.fig4_1.order.cs"),
    (s18(figures={"fig4_1": {"epsn": {"epsilon_noisys": [1, 20]}}}),
     "studies.song2018.figures.fig4_1.epsn.epsilon_noisys"),
    (s18(figures={"fig4_1": {"epsn": {"runs": 1}}}), "studies.song2018.figures.fig4_1.epsn.runs"),
    (s18(figures={"fig3_2": {"batch_sizes": [1, 5, 5]}}), "studies.song2018.figures.fig3_2.batch_sizes"),
    (s18(figures={"fig3_1": {"datasets": ["protein"]}}), "studies.song2018.figures.fig3_1.datasets[0]"),
    (s18(figures={"fig3_2": {"schedules": ["inv_t"]}}), "studies.song2018.figures.fig3_2.schedules[0]"),
    (s18(ch3={"large_step": {"T": "horizn"}}), "studies.song2018.ch3.large_step.T"),
    (s18(ch3={"datasets": {"kddcup99": {"n": 30}}}), "studies.song2018.ch3.datasets.kddcup99.n"),
    (s18(ch4={"datasets": {"covertype": {"n": 100}}}), "studies.song2018.ch4.datasets.covertype.n"),
    (s18(ch4={"beta_clean": 1.5}), "studies.song2018.ch4.beta_clean"),
    (s18(preprocessing={"feature_normalisation": "zscore"}), "studies.song2018.preprocessing.feature_normalisation"),
    ({"data": {"kddcup99_source": "web"}}, "data.kddcup99_source"),
])
def test_bad_config_names_the_key(override, key):
    with pytest.raises(ConfigError) as err:
        load_config(DEFAULT_CONFIG_PATH, overrides=override)
    assert f"invalid config: {key}" in str(err.value)


def test_default_config_has_the_thesis_settings_and_null_disables():
    cfg = load_config(DEFAULT_CONFIG_PATH)["studies"]["song2018"]
    assert cfg["ch3"]["permutations"] == 20 and cfg["ch3"]["l2"] == 1e-4 and cfg["ch3"]["epsilon"] == 1.0
    assert cfg["figures"]["fig3_2"]["batch_sizes"] == [1, 2, 5, 10, 20, 50]
    assert cfg["figures"]["fig4_1"]["epsn"]["runs"] == 100 and cfg["ch4"]["l2"] == 1e-3
    assert cfg["ch4"]["datasets"]["covertype"]["n"] == 500_000 and cfg["ch3"]["datasets"]["kddcup99"]["n"] == 50_000
    assert song2018.series(cfg, "fig4_1") == [f"ch4_{d}_{p}" for d in ("mnist", "covertype")
                                              for p in ("order", "epsn", "c2")]
    assert song2018.series(cfg, "fig3_1") == ["ch3_mnist", "ch3_kddcup99"]
    assert song2018.series_code_hash("ch3_mnist") == ch34.code_hash() != song2018.series_code_hash("mqm_exact")
    off = load_config(DEFAULT_CONFIG_PATH, overrides=s18(figures={"fig3_3": None, "fig4_1": None}))
    assert "fig3_3" not in song2018.figure_names(off["studies"]["song2018"])
    assert "fig3_2" in song2018.figure_names(off["studies"]["song2018"])
    devs = " ".join(song2018.deviations(cfg, "fig3_2"))
    assert "10/√T" in devs and "horizon" not in devs or "T = ⌊n/b⌋" in devs


TINY34 = {
    "ch3": {"permutations": 3, "checkpoints": 4,
            "datasets": {"kddcup99": {"n": 400}, "mnist": {"n": 300}}},
    "ch4": {"datasets": {"mnist": {"n": 600}, "covertype": {"n": 1000}}},
    "figures": {
        "fig3_1": {"datasets": ["kddcup99"], "batch_sizes": {"kddcup99": [1, 5]}},
        "fig3_2": {"datasets": ["kddcup99"], "batch_sizes": [1, 10], "schedules": ["inv_sqrt", "large"]},
        "fig3_3": {"batch_size": 50, "schedules": ["inv_sqrt", "inv_lambda_t"]},
        "fig4_1": {"datasets": ["mnist", "covertype"], "order": {"epsilon_noisy": 3.0, "cs": [300, 3000], "runs": 2},
                   "epsn": {"epsilon_noisys": [1, 10], "runs": 2},
                   "c2": {"epsilon_noisy": {"mnist": 2.0, "covertype": 1.0}, "points": 2, "widen": 3.0, "runs": 2}},
    },
}


@pytest.fixture
def config34(tiny_config):
    cfg = copy.deepcopy(tiny_config)
    cfg["studies"]["song2018"] = deep_merge(cfg["studies"]["song2018"], TINY34)
    cfg["studies"]["song2018"]["ch3"]["datasets"]["synthetic"]["n"] = 1000
    return cfg


def test_every_series_figure_and_anchor(config34, tmp_path):
    study = config34["studies"]["song2018"]
    song2018.validate(study)
    manifest = song2018.prepare_dataset(config34)
    assert manifest["datasets"]["ch3_kddcup99"]["variant"] == "substitute:synthetic-kddcup99"
    assert manifest["datasets"]["ch4_covertype"]["dim"] == 54 and manifest["datasets"]["ch4_mnist"]["dim"] == 25
    inputs_all = []
    for fig in ("fig3_1", "fig3_2", "fig3_3", "fig4_1"):
        assert fig in song2018.figure_names(study)
        inputs = []
        for s in song2018.series(study, fig):
            out = tmp_path / "res" / fig / f"{s}.parquet"
            df = run_series(config34, "song2018", fig, s, out, n_jobs=1)
            for col in ("study", "figure", "series", "method", "method_label", "dataset", "dataset_variant",
                        "is_substitute", "x_name", "x", "rep", "metric", "value", "seed", "applicable", "na_reason"):
                assert col in df.columns, (fig, s, col)
            assert df["applicable"].all() and np.isfinite(df["value"]).all()
            assert (df["is_substitute"] == (df["dataset"] != "synthetic")).all()
            inputs.append(str(out))
        inputs_all += inputs
        png = tmp_path / "fig" / f"{fig}.png"
        caption = plot_from_files(config34, "song2018", fig, inputs, png)
        assert png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size > 10_000
        if fig != "fig3_3":
            assert "SUBSTITUTE DATA" in caption
        assert "Note:" in caption
    df = read_results(*inputs_all)
    f31 = df[df["figure"] == "fig3_1"]
    assert set(f31["batch_size"]) == {1, 5} and f31["rep"].nunique() == 3
    f41 = df[df["figure"] == "fig4_1"]
    assert set(f41["method"]) == set(ch34.ORDER_METHODS + ch34.EPSN_METHODS + ch34.C2_METHODS)
    o = f41[f41["panel"] == "order"]
    np.testing.assert_allclose(o["value"], np.abs(o["f_w"] - o["f_v"]))
    checks = run_anchor_checks(config34, "song2018", inputs_all, tmp_path / "a.parquet",
                               tmp_path / "a.html").set_index("claim")
    assert checks.loc["A4.alg2", "passed"]
    assert {"A3.1", "A3.2a", "A3.2b", "A3.3", "A4.1a", "A4.1b", "A4.1c"} <= set(checks.index)
    assert {"R1", "R2"} <= set(checks.index)                 # chapter 7's checks still run


def test_series_are_reproducible_and_independent_of_workers(config34, tmp_path):
    a, b = copy.deepcopy(config34), copy.deepcopy(config34)
    a["cache_dir"], b["cache_dir"] = str(tmp_path / "c1"), str(tmp_path / "c2")
    for fig, s in (("fig3_2", "ch3_kddcup99"), ("fig4_1", "ch4_covertype_epsn")):
        x = ch34.run_series(a, fig, s, n_jobs=1)
        y = ch34.run_series(b, fig, s, n_jobs=2)
        np.testing.assert_array_equal(x["value"].to_numpy(), y["value"].to_numpy())
    with pytest.raises(ValueError, match="not a series"):
        ch34.run_series(a, "fig3_3", "ch3_mnist")


def test_preprocessing_order_and_unit_ball():
    rng = np.random.default_rng(0)
    X = rng.exponential(5.0, (200, 30))
    X[:, 3] = 7.0                                            # a constant feature
    for norm in ("minmax", "standardise"):
        Z = ch34_data.preprocess(X, norm, 6, seed=1)
        assert Z.shape == (200, 6) and np.linalg.norm(Z, axis=1).max() <= 1.0
    # without projection: the normalised rows projected into the unit ball, constant column 0
    Z = ch34_data.preprocess(X, "minmax", None, seed=1)
    B = (X - X.min(0)) / np.where(np.ptp(X, 0) > 0, np.ptp(X, 0), 1)
    B[:, 3] = 0
    np.testing.assert_allclose(Z, B / np.maximum(1, np.linalg.norm(B, axis=1))[:, None], rtol=1e-12)


def test_synthetic_sphere_is_separable_with_margin():
    X, y, w = ch34_data.synthetic_sphere(5000, 5, 0.001, seed=3)
    assert X.shape == (5000, 5)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-12)
    assert np.all(y * (X @ w) >= 0.001)


def test_chapter4_plan_uses_every_record_once_with_its_own_epsilon():
    rng = np.random.default_rng(0)
    nc, nn = ch34.ch4_sizes(1030, 50, 0.1)
    assert (nc, nn) == (100, 900)
    for order in ("CN", "NC", "AO", "C"):
        seq, eps = ch34._ch4_sequences(rng, 1030, nc, nn, 3, order, 10.0, 2.0)
        for r in range(3):
            assert len(set(seq[r])) == seq.shape[1]             # one pass: each record reports once
            assert (eps[r] == 10.0).sum() == nc
        if order == "CN":
            assert np.all(eps[:, :nc] == 10.0) and np.all(eps[:, nc:] == 2.0)
        if order == "NC":
            assert np.all(eps[:, :nn] == 2.0)
    # clean/noisy membership is the same set under both orders of one run (first nc of the permutation)
    a = ch34._ch4_sequences(np.random.default_rng(1), 1030, nc, nn, 1, "CN", 10.0, 2.0)[0][0]
    b = ch34._ch4_sequences(np.random.default_rng(1), 1030, nc, nn, 1, "NC", 10.0, 2.0)[0][0]
    assert set(a[:nc]) == set(b[nn:])


def test_chapter4_rules_follow_the_theory(config34):
    rule = ch34.ch4_rule(config34, 25, "alg2", 2.0)
    assert rule["order"] == "NC" and rule["c1"] == pytest.approx(1000.0) and rule["c2"] == pytest.approx(10326, rel=0.01)
    assert ch34.ch4_rule(config34, 25, "clean_only", 2.0)["order"] == "C"
    assert ch34.ch4_rule(config34, 25, "same_noisy", 2.0)["order"] == "NC"
    br = ch34.c2_brackets(config34, 25, 2.0)
    assert br["order"] == "NC" and br["c2_upper"] == pytest.approx(rule["c2"])
    grid = ch34.c2_grid(config34, 25, 2.0)
    assert min(grid) < min(br["c2_lower"], br["c2_upper"]) and br["c2_lower"] in grid
