"""song2018 chapter 5 (Scalable PATE): config errors name the key, every series runs on a tiny config through the
runner (result schema, SIMULATED/SUBSTITUTE labels), figures and anchors are produced, the streams are
reproducible, and the votes have the declared structure."""

import copy

import numpy as np
import pytest

from dpbench.config import DEFAULT_CONFIG_PATH, ConfigError, deep_merge
from dpbench.figures import plot_from_files
from dpbench.report import run_anchor_checks
from dpbench.results import read_results
from dpbench.runner import run_series
from dpbench.studies import load_config, song2018
from dpbench.studies.song2018 import ch5_anchors
from dpbench.studies.song2018 import ch5_compute as ch5
from dpbench.studies.song2018 import ch5_votes as V

FIGS = ("table5_1", "fig5_1", "fig5_4", "fig5_5", "fig5_6")

TINY5 = {
    "ch5": {"mnist": {"teachers": 10, "n_train": 400, "n_test": 200, "projection_dim": 20},
            "glyph": {"classes": 20, "pool": 800, "test": 300, "teachers": 200, "feature_dim": 8}},
    "figures": {
        "table5_1": {"mnist": [{"aggregator": "lnmax", "b": 2.0, "queries": 50},
                               {"aggregator": "confident", "T": 7.0, "sigma1": 3.0, "sigma2": 1.0, "queries": 100}],
                     "glyph": [{"aggregator": "lnmax", "b": 5.0, "queries": 200},
                               {"aggregator": "confident", "T": 120.0, "sigma1": 40.0, "sigma2": 5.0, "queries": 400},
                               {"aggregator": "interactive", "gamma": 0.9,
                                "round1": {"T": 120.0, "sigma1": 40.0, "sigma2": 5.0, "queries": 300},
                                "round2": {"T": 120.0, "sigma1": 50.0, "sigma2": 8.0, "queries": 300}}]},
        "fig5_1": {"lnmax": {"aggregator": "lnmax", "b": 5.0, "queries": 200},
                   "confident": {"aggregator": "confident", "T": 120.0, "sigma1": 40.0, "sigma2": 5.0,
                                 "queries": 400},
                   "right_confident": {"T": 140.0, "sigma1": 60.0, "sigma2": 5.0}, "bins": 5},
        "fig5_4": {"queries": 300, "left": {"teachers": 200, "sigmas": [2, 10, 30]},
                   "right": {"teachers": [50, 200], "sigmas": [2, 10, 30]}},
        "fig5_5": {"teachers": 200, "queries": 800, "moderate": {"T": 140.0, "sigma1": 60.0},
                   "aggressive": {"T": 200.0, "sigma1": 60.0}, "sigma2": 5.0, "bins": 10, "order": 50.0},
        "fig5_6": {"teachers": 200, "queries": 800, "max_answered": 300, "lnmax_b": 5.0, "sigma2": 5.0,
                   "moderate": {"T": 140.0, "sigma1": 60.0}, "aggressive": {"T": 200.0, "sigma1": 60.0}},
    },
}


@pytest.fixture
def config5(tiny_config):
    cfg = copy.deepcopy(tiny_config)
    cfg["studies"]["song2018"] = deep_merge(cfg["studies"]["song2018"], TINY5)
    return cfg


def s18(**kw):
    return {"studies": {"song2018": kw}}


@pytest.mark.parametrize("override,key", [
    (s18(figures={"table5_1": {"mnist": [{"aggregator": "lnmax", "queries": 10}]}}),
     "studies.song2018.figures.table5_1.mnist[0]"),
    (s18(figures={"table5_1": {"mnist": [{"aggregator": "interactive", "gamma": 0.9,
                                          "round1": {"T": 1, "sigma1": 1, "sigma2": 1, "queries": 5},
                                          "round2": {"T": 1, "sigma1": 1, "sigma2": 1, "queries": 5}}]}}),
     "studies.song2018.figures.table5_1.mnist[0]"),
    (s18(figures={"fig5_5": {"queries": 10 ** 6}}), "studies.song2018.figures.fig5_5.queries"),
    (s18(ch5={"glyph": {"label_noise": 1.5}}), "studies.song2018.ch5.glyph.label_noise"),
])
def test_bad_config_names_the_key(override, key):
    with pytest.raises(ConfigError) as err:
        load_config(DEFAULT_CONFIG_PATH, overrides=override)
    assert f"invalid config: {key}" in str(err.value)


def test_default_config_has_the_thesis_settings():
    cfg = load_config(DEFAULT_CONFIG_PATH)["studies"]["song2018"]
    c5 = cfg["ch5"]
    assert c5["delta"] == {"mnist": 1e-5, "glyph": 1e-8} and c5["mnist"]["teachers"] == 250
    assert c5["glyph"]["classes"] == 150 and c5["glyph"]["teachers"] == 5000 and c5["glyph"]["pool"] == 25000
    t = cfg["figures"]["table5_1"]
    assert t["mnist"][2] == {"aggregator": "confident", "T": 200.0, "sigma1": 150.0, "sigma2": 40.0, "queries": 1000}
    assert t["glyph"][1]["T"] == 1000.0 and t["glyph"][1]["sigma1"] == 500.0 and t["glyph"][1]["sigma2"] == 100.0
    assert cfg["figures"]["fig5_4"]["right"]["teachers"] == [100, 500, 1000, 5000]
    assert cfg["figures"]["fig5_5"]["moderate"] == {"T": 3500.0, "sigma1": 1500.0}
    assert set(FIGS) <= set(song2018.figure_names(cfg))
    assert song2018.series_code_hash("ch5_glyph") == ch5.code_hash() != song2018.series_code_hash("mqm_exact")


def test_every_series_figure_and_anchor(config5, tmp_path):
    study = config5["studies"]["song2018"]
    song2018.validate(study)
    inputs_all = []
    for fig in FIGS:
        inputs = []
        for s in song2018.series(study, fig):
            out = tmp_path / "res" / fig / f"{s}.parquet"
            df = run_series(config5, "song2018", fig, s, out, n_jobs=1)
            assert len(df) and (df["study"] == "song2018").all()
            if s != "ch5_mnist":
                assert (df["dataset_variant"] == ch5.GLYPH_VARIANT).all() and df["is_substitute"].all()
            inputs.append(str(out))
        inputs_all += inputs
        png = tmp_path / "fig" / f"{fig}.png"
        caption = plot_from_files(config5, "song2018", fig, inputs, png)
        assert png.read_bytes()[:4] == b"\x89PNG"
        assert "SIMULATED" in caption and "Note:" in caption
    df = read_results(*inputs_all)
    t = df[df["figure"] == "table5_1"]
    m = t[(t["dataset"] == "glyph")].pivot_table(index="row", columns="metric", values="value")
    assert m.loc[0, "answered"] == 200 and m.loc[1, "answered"] <= 400 and m.loc[2, "n_queries"] == 600
    assert (m.loc[[0, 1, 2], "eps"] <= m.loc[[0, 1, 2], "eps_independent"] + 1e-9).all()
    checks = run_anchor_checks(config5, "song2018", inputs_all, tmp_path / "a.parquet",
                               tmp_path / "a.html").set_index("claim")
    assert checks.loc["A5.motivating", "passed"]
    assert {"A5.gnmax", "A5.teachers", "A5.threshold", "A5.bins", "A5.confident/glyph", "A5.gnss"} <= set(checks.index)
    assert "table5_1: thesis" in (tmp_path / "a.html").read_text()


def test_chapter5_hashes_its_own_compute_closure_only():
    from dpbench import codehash

    pkg = "dpbench.studies.song2018"
    mods = codehash.closure([f"{pkg}.ch5_compute"])
    assert {"dpbench.methods.pate", "dpbench.privacy.pate", f"{pkg}.ch5_votes"} <= set(mods)
    views = ("captions", "plots", "tables", "anchors", "spec", "compute")
    own = f"{pkg}.ch5_compute"
    assert not [m for m in mods if (m != own and m.split(".")[-1].removeprefix("ch5_") in views)
                or m.split(".")[-1].startswith(("ch7_", "ch34_"))
                or m in (pkg, "dpbench.plot", "dpbench.verdicts", "dpbench.studies.base")], mods
    assert codehash.code_hash(f"{pkg}.ch5_compute") not in (codehash.code_hash(f"{pkg}.ch7_compute"),
                                                             codehash.code_hash(f"{pkg}.ch34_compute"))


def test_units_are_reproducible(config5, tmp_path):
    a, b = copy.deepcopy(config5), copy.deepcopy(config5)
    a["cache_dir"], b["cache_dir"] = str(tmp_path / "c1"), str(tmp_path / "c2")
    spec = {"aggregator": "confident", "T": 120.0, "sigma1": 40.0, "sigma2": 5.0, "queries": 400}
    ra, rb = ch5.answer_unit(a, "glyph", spec), ch5.answer_unit(b, "glyph", spec)
    for k in ("answered", "eps", "label_accuracy", "student_accuracy", "curve"):
        assert ra[k] == rb[k]
    np.testing.assert_array_equal(V.glyph_votes(a, 200), V.glyph_votes(b, 200))


def test_votes_structure(config5):
    g = config5["studies"]["song2018"]["ch5"]["glyph"]
    q = V.glyph_queries(config5)
    v = V.glyph_votes(config5, 200)
    assert v.shape == (g["pool"] + g["test"], g["classes"]) and (v.sum(axis=1) == 200).all()
    noise = np.mean(q["recorded"] != q["y"])
    assert 0.5 * g["label_noise"] < noise < 1.5 * g["label_noise"]
    counts = np.bincount(q["y"], minlength=g["classes"])
    assert counts.max() >= 2 * counts.min()                     # imbalanced (Zipf-like prior)
    r = V.mnist_votes(config5)
    assert r["votes"].shape == (100, 10) and (r["votes"].sum(axis=1) == 10).all()


# --- table5_1 with the GNSS-sanitised ε (ch5.gnss) ---------------------------------------------------------

#: table5_1 on TINY5 computed by the chapter-5 code before GNSS was added (merge 7303e14)
FROZEN = {"ch5_mnist/0/eps": 50.01151897706652, "ch5_mnist/1/eps": 50.98342662169611,
          "ch5_mnist/1/eps_independent": 80.62403657608148, "ch5_mnist/1/answered": 29.0,
          "ch5_mnist/1/label_accuracy": 0.7931034482758621,
          "ch5_glyph/0/eps": 4.065521527435952, "ch5_glyph/1/eps": 5.23134056295223,
          "ch5_glyph/2/eps": 5.892103585115942, "ch5_glyph/1/answered": 324.0, "ch5_glyph/2/answered": 421.0,
          "ch5_glyph/2/eps_independent": 44.07193074395211, "ch5_glyph/2/label_accuracy": 0.8432304038004751,
          "ch5_glyph/1/student_accuracy": 0.27}


def _table(cfg):
    out = {}
    for s in ("ch5_mnist", "ch5_glyph"):
        df = ch5.run_table5_1(cfg, "table5_1", s)
        out[s] = df
    return out


def _values(frames):
    return {f"{s}/{r['row']}/{r['metric']}": float(r["value"]) for s, df in frames.items() for _, r in df.iterrows()}


def test_table5_1_gnss_next_to_raw_and_raw_unchanged(config5):
    cfg = config5
    assert cfg["studies"]["song2018"]["ch5"]["gnss"]["enabled"]
    frames = _table(cfg)
    v = _values(frames)
    for k, want in FROZEN.items():
        assert v[k] == want, k                                          # bit-identical raw values
    for s, row in (("ch5_mnist", 0), ("ch5_glyph", 0)):
        assert f"{s}/{row}/eps_gnss_expected" not in v                  # LNMax: not applicable
    for s, row in (("ch5_mnist", 1), ("ch5_glyph", 1), ("ch5_glyph", 2)):
        raw, at = v[f"{s}/{row}/eps"], v[f"{s}/{row}/eps_raw_at_gnss_order"]
        exp, q = v[f"{s}/{row}/eps_gnss_expected"], v[f"{s}/{row}/eps_gnss_quantile"]
        assert at >= raw - 1e-9 and exp > at and q > exp and v[f"{s}/{row}/gnss_ss"] > 0
    tab = ch5_anchors.table_frame(frames["ch5_glyph"])
    assert list(tab[ch5_anchors.GNSS_COLUMN][:1]) == ["n/a"] and "λ=" in tab[ch5_anchors.GNSS_COLUMN].iloc[1]
    # reproducible from the cell's streams (a second store, same draws), and the option leaves raw values alone
    again = copy.deepcopy(cfg)
    again["cache_dir"] = cfg["cache_dir"] + "_again"
    w2 = _values(_table(again))
    assert all(w2[k] == v[k] for k in v if "runtime" not in k and v[k] == v[k])
    off = copy.deepcopy(again)
    off["cache_dir"] = cfg["cache_dir"] + "_off"
    off["studies"]["song2018"]["ch5"]["gnss"]["enabled"] = False
    w = _values({"ch5_glyph": ch5.run_table5_1(off, "table5_1", "ch5_glyph")})
    assert not any("gnss" in k for k in w)
    assert all(w[k] == v[k] for k in w if "runtime" not in k and k.startswith("ch5_glyph") and w[k] == w[k])


@pytest.mark.parametrize("gnss", [{"order": 1.0}, {"order": 3.3}, {"quantile": 0.4}, {"enabled": "yes"}])
def test_bad_gnss_option_names_the_key(gnss):
    with pytest.raises(ConfigError) as err:
        load_config(DEFAULT_CONFIG_PATH, overrides={"studies": {"song2018": {"ch5": {"gnss": gnss}}}})
    assert "studies.song2018.ch5.gnss" in str(err.value)
