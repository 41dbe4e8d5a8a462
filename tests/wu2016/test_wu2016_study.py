"""wu2016 chapter 3 study: configuration rules, training units, rows, caching, plots and anchor checks on tiny
substitute data."""

import copy

import numpy as np
import pandas as pd
import pytest

from dpbench.config import DEFAULT_CONFIG_PATH, ConfigError
from dpbench.studies import load_config
from dpbench.learn import psgd_many
from dpbench.methods import private_psgd_many
from dpbench.studies import wu2016
from dpbench.studies.wu2016 import ch3_compute as ch3

SMALL = {
    "repetitions": 2,
    "datasets": {"mnist": {"n_train": 500, "n_test": 200}, "protein": {"n_train": 400, "n_test": 200},
                 "covertype": {"n_train": 400, "n_test": 200}},
    "figures": {
        "fig3_2": {"datasets": ["mnist", "covertype"], "tests": [1, 2, 3, 4], "passes": 2,
                   "epsilons": {"mnist": [1.0, 4.0], "covertype": [0.1, 0.4]}},
        "fig3_3": {"epsilons": [1.0, 4.0], "passes": [1, 2], "batch_sizes": [1, 10], "panel_c_passes": 2},
        "fig3_4": {"datasets": ["protein"], "epochs": [1, 2], "batch_sizes": [1, 50], "runs": 2, "warmup": 0},
    },
}


@pytest.fixture
def config(tmp_path, data_dir):
    over = {"cache_dir": str(tmp_path / "cache"),
            "data": {"cache_dir": str(data_dir), "mnist_source": "substitute", "covertype_source": "substitute",
                     "protein_source": "substitute"},
            "studies": {"wu2016": copy.deepcopy(SMALL)}}
    return load_config(DEFAULT_CONFIG_PATH, overrides=over)


def run_all(config, name):
    st = config["studies"]["wu2016"]
    return pd.concat([wu2016.run_series(config, name, s) for s in wu2016.series(st, name)], ignore_index=True)


def test_default_config_has_the_paper_grids():
    cfg = load_config(DEFAULT_CONFIG_PATH)["studies"]["wu2016"]
    f2 = cfg["figures"]["fig3_2"]
    assert f2["batch_size"] == 50 and f2["passes"] == 10 and f2["tests"] == [1, 2, 3, 4]
    assert f2["epsilons"]["mnist"] == [0.1, 0.2, 0.5, 1.0, 2.0, 4.0]
    assert f2["epsilons"]["covertype"] == f2["epsilons"]["protein"] == [0.01, 0.02, 0.05, 0.1, 0.2, 0.4]
    assert cfg["l2"] == 1e-4 and cfg["projection"]["dim"] == 50
    assert cfg["figures"]["fig3_3"]["passes"] == [1, 10, 20] and cfg["figures"]["fig3_4"]["epsilon"] == 0.1
    assert wu2016.series(cfg, "fig3_2")[:4] == ["mnist_noiseless", "mnist_bolt_on", "mnist_scs13", "mnist_bst14"]


@pytest.mark.parametrize("override,key", [
    ({"figures": {"fig3_2": {"epsilons": {"protein": [0.1, 0.1]}}}}, "figures.fig3_2.epsilons.protein"),
    ({"figures": {"fig3_3": {"passes": [1, 1]}}}, "figures.fig3_3.passes"),
    ({"choices": {"convex_eta": 9.0}}, "choices.convex_eta"),
    ({"choices": {"sc_sensitivity": "loose"}}, "choices.sc_sensitivity"),
    ({"figures": {"fig3_2": {"tests": [5]}}}, r"figures.fig3_2.tests\[0\]"),
    ({"figures": {"fig3_2": {"epsilons": {"covertype": [0.1, 2.0]}}}}, "figures.fig3_2.epsilons.covertype"),
])
def test_bad_config_names_the_key(override, key):
    with pytest.raises(ConfigError, match=f"studies.wu2016.{key}"):
        load_config(DEFAULT_CONFIG_PATH, overrides={"studies": {"wu2016": override}})


def test_units_group_tests_by_convexity():
    assert ch3.units("bolt_on", [1, 2, 3, 4]) == [("convex", (1, 2)), ("strongly_convex", (3, 4))]
    assert ch3.units("noiseless", [2, 3]) == [("convex", (2,)), ("strongly_convex", (3,))]
    assert ch3.units("scs13", [1, 2]) == [("convex", (1,)), ("convex", (2,))]
    assert ch3.units("bst14", [1, 2, 3, 4]) == [("convex", (2,)), ("strongly_convex", (4,))]
    assert ch3.units("bst14", [1, 3]) == []


def test_budget_splits_over_the_one_vs_all_models():
    a = {"X_train": np.zeros((60000, 2)), "n_classes": 10}
    eps, delta_m, delta = ch3.budget(a, [1.0, 4.0], True)
    np.testing.assert_allclose(eps, [0.1, 0.4])
    assert delta == pytest.approx(1 / 60000) and delta_m == pytest.approx(1 / 600000)
    eps, delta_m, _ = ch3.budget({"X_train": np.zeros((100, 2)), "n_classes": 2}, [0.5], False)
    assert eps[0] == 0.5 and delta_m == 0.0


def test_test_accuracy_argmax_and_sign():
    X = np.eye(3)
    a = {"X_test": X, "y_test": np.array([0, 1, 2]), "n_classes": 3}
    W = np.eye(3)[None]                              # (1, K=3, d=3): perfect one-vs-all scores
    assert ch3.test_accuracy(W, a).tolist() == [1.0]
    b = {"X_test": X, "y_test": np.array([1.0, -1.0, 1.0]), "n_classes": 2}
    W = np.array([[[1.0, -1.0, 0.0]]])               # scores 1, -1, 0 (0 predicts +1)
    assert ch3.test_accuracy(W, b).tolist() == [1.0]


def test_fig3_2_rows_are_reproducible_and_cached(config, monkeypatch):
    df = run_all(config, "fig3_2")
    assert set(df["method"]) == {"noiseless", "bolt_on", "scs13", "bst14", "bst14_tight"}
    assert set(df[df["method"] == "bst14"]["test"]) == {2, 4} == set(df[df["method"] == "bst14_tight"]["test"])
    assert set(df.loc[df["method"] == "bst14_tight", "calibration"]) == {"tight"}
    assert set(df.loc[df["method"] != "bst14_tight", "calibration"]) == {"source"}
    # the tight calibration: the same (ε, δ), less noise than the thesis' composition (docs: σ × 0.06-0.4 here)
    key = ["dataset", "test", "epsilon", "rep"]
    src = df[df["method"] == "bst14"].set_index(key)["noise_scale"]
    tight = df[df["method"] == "bst14_tight"].set_index(key)["noise_scale"]
    assert (tight < src.loc[tight.index]).all()
    assert (df[df["method"] == "bst14_tight"].set_index(key)["delta"] == df[df["method"] == "bst14"].set_index(key)[
        "delta"].loc[tight.index]).all()
    assert df["is_substitute"].all() and df["dataset_variant"].str.startswith("substitute").all()
    assert df["value"].between(0, 1).all() and set(df["rep"]) == {0, 1}
    # noiseless is flat in epsilon; the bolt-on noise scale falls as 1/epsilon at fixed sensitivity (pure DP)
    nl = df[(df["method"] == "noiseless") & (df["rep"] == 0)]
    assert nl.groupby(["dataset", "test"])["value"].nunique().max() == 1
    b = df[(df["method"] == "bolt_on") & (df["test"] == 1) & (df["rep"] == 0) & (df["dataset"] == "covertype")]
    np.testing.assert_allclose(b["noise_scale"] * b["epsilon"], b["sensitivity"], rtol=1e-12)

    def boom(*a, **k):
        raise AssertionError("a cached unit was retrained")

    monkeypatch.setattr(psgd_many, "psgd_many", boom)
    monkeypatch.setattr(private_psgd_many, "psgd_many", boom)
    again = run_all(config, "fig3_2")
    pd.testing.assert_frame_equal(df, again)


def test_fig3_3_and_fig3_4_rows_and_plots(config, tmp_path):
    d3 = run_all(config, "fig3_3")
    assert set(d3["series"]) == {"panel_a", "panel_b", "panel_c"}
    assert set(d3[d3["series"] == "panel_a"]["curve"]) == {"k = 1", "k = 2"}
    assert set(d3[d3["series"] == "panel_c"]["curve"]) == {"b = 1", "b = 10"}
    assert set(d3[d3["series"] == "panel_b"]["test"]) == {3}
    d4 = run_all(config, "fig3_4")
    r = d4[d4["metric"] == "runtime_ratio"]
    assert np.allclose(r[r["method"] == "noiseless"]["value"], 1.0)
    assert (d4[d4["metric"] == "runtime_s"]["value"] > 0).all()
    assert set(d4["sweep"]) == {"epochs", "batch"} and len(r) == 4 * 2 * 4   # methods × runs × points
    d2 = run_all(config, "fig3_2")
    for name, df in (("fig3_2", d2), ("fig3_3", d3), ("fig3_4", d4)):
        out = tmp_path / f"{name}.png"
        caption = wu2016.plot(config, name, df, out)
        assert out.read_bytes()[:4] == b"\x89PNG" and out.stat().st_size > 20_000
        assert "SUBSTITUTE DATA" in caption and "Note:" in caption
    assert "1/√m" in wu2016.caption_text(config, "fig3_2", d2)
    checks = wu2016.anchor_checks({"fig3_2": d2, "fig3_3": d3, "fig3_4": d4})
    assert {"A1-scs13", "A1-bst14", "A3", "A4", "A5", "A6", "A7", "A8"} <= set(checks["claim"])
    assert checks["passed"].map(type).eq(bool).all()
    assert "runtime / noiseless" in wu2016.report_html(config, {"fig3_4": d4})


def frame(acc: dict, dataset="covertype", tests=(2,)):
    rows = []
    for method, curve in acc.items():
        for t in tests:
            for e, v in curve.items():
                for rep, jitter in enumerate((-0.001, 0.001)):
                    rows.append({"dataset": dataset, "test": t, "method": method, "x": e, "value": v + jitter,
                                 "metric": "test_accuracy"})
    return pd.DataFrame(rows)


def test_anchor_a1_and_a3_on_constructed_results():
    eps = [0.01, 0.05, 0.1, 0.4]
    df = frame({"noiseless": dict.fromkeys(eps, 0.76),
                "bolt_on": {0.01: 0.70, 0.05: 0.755, 0.1: 0.758, 0.4: 0.76},
                "scs13": {0.01: 0.2, 0.05: 0.4, 0.1: 0.5, 0.4: 0.6},
                "bst14": {0.01: 0.5, 0.05: 0.6, 0.1: 0.7, 0.4: 0.755}})
    c = wu2016.anchor_checks({"fig3_2": df}).set_index("claim")
    assert c.loc["A1-scs13", "value"] == pytest.approx(0.70 / 0.2, rel=1e-2) and c.loc["A1-scs13", "passed"]
    assert c.loc["A3", "passed"] and "Ours (bolt-on) test 2: ε ≥ 0.05" in c.loc["A3", "measured"]
    assert "BST14 test 2: ε ≥ 0.4" in c.loc["A3", "measured"]
    worse = frame({"noiseless": dict.fromkeys(eps, 0.76), "bolt_on": dict.fromkeys(eps, 0.3),
                   "scs13": dict.fromkeys(eps, 0.5), "bst14": dict.fromkeys(eps, 0.6)})
    c = wu2016.anchor_checks({"fig3_2": worse}).set_index("claim")
    assert not c.loc["A1-scs13", "passed"] and not c.loc["A3", "passed"] and not c.loc["A4", "passed"]


def test_first_within():
    s = pd.Series([0.5, 0.75, 0.70, 0.755, 0.76], index=[0.01, 0.02, 0.05, 0.1, 0.4])
    assert wu2016.first_within(s, 0.76, 0.01) == 0.1
    assert np.isnan(wu2016.first_within(s, 0.9, 0.01))
