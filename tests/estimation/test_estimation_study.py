"""estimation study: config errors name the key, run_series rows, determinism, figures, anchor checks, and the
slopes / ratios of the notes on a fixed seed."""

import copy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpbench.config import DEFAULT_CONFIG_PATH, ConfigError
from dpbench.studies import load_config
from dpbench.figures import plot_from_files
from dpbench.report import run_anchor_checks
from dpbench.results import read_metadata
from dpbench.runner import run_series
from dpbench.studies import STUDIES, estimation

ROOT = Path(__file__).resolve().parents[2]


def fig(name, **kw):
    return {"studies": {"estimation": {"figures": {name: kw}}}}


@pytest.mark.parametrize("override, key", [
    (fig("mean_vs_d", dims=[4, 4, 8]), "studies.estimation.figures.mean_vs_d.dims"),
    (fig("mean_vs_d", dims=[8]), "studies.estimation.figures.mean_vs_d.dims"),
    (fig("mean_vs_d", dims=[0, 8]), "studies.estimation.figures.mean_vs_d.dims[0]"),
    (fig("mean_vs_d", epsilon=1.0), "studies.estimation.figures.mean_vs_d.epsilon"),
    (fig("mean_vs_d", delta=0.0), "studies.estimation.figures.mean_vs_d.delta"),
    (fig("mean_vs_d", clip="auto"), "studies.estimation.figures.mean_vs_d.clip"),
    (fig("mean_vs_d", clip=-1.0), "studies.estimation.figures.mean_vs_d.clip"),
    (fig("mean_vs_d", methods=["local"]), "studies.estimation.figures.mean_vs_d.methods[0]"),
    (fig("mean_vs_d", repetitions=1), "studies.estimation.figures.mean_vs_d.repetitions"),
    (fig("mean_vs_d", sigma=1.0), "studies.estimation.figures.mean_vs_d"),
    (fig("cov_vs_d", radius_factor=0.0), "studies.estimation.figures.cov_vs_d.radius_factor"),
    (fig("cov_vs_d", condition_number=0.5), "studies.estimation.figures.cov_vs_d.condition_number"),
    (fig("ldp_vs_n", ns=[100, 100]), "studies.estimation.figures.ldp_vs_n.ns"),
    (fig("ldp_vs_n", epsilons=[0.0]), "studies.estimation.figures.ldp_vs_n.epsilons[0]"),
    (fig("ldp_vs_n", methods=["laplace"]), "studies.estimation.figures.ldp_vs_n.methods[0]"),
    (fig("var_vs_d", n=10), "studies.estimation.figures"),
])
def test_bad_config_names_the_key(override, key):
    with pytest.raises(ConfigError) as err:
        load_config(DEFAULT_CONFIG_PATH, overrides=override)
    assert f"invalid config: {key}" in str(err.value)


def test_classic_gaussian_allowed_for_eps_ge_1_only_without_it():
    cfg = load_config(DEFAULT_CONFIG_PATH, overrides=fig("mean_vs_d", epsilon=2.0,
                                                           methods=["laplace", "gaussian_analytic", "non_private"]))
    assert estimation.series(cfg["studies"]["estimation"], "mean_vs_d") == ["laplace", "gaussian_analytic",
                                                                             "non_private"]


def test_registered_with_figures_series_and_captions():
    cfg = load_config(DEFAULT_CONFIG_PATH)["studies"]["estimation"]
    assert STUDIES["estimation"] is estimation.STUDY_OBJECT
    assert estimation.figure_names(cfg) == ["mean_vs_d", "cov_vs_d", "ldp_vs_n"]
    assert estimation.series(cfg, "ldp_vs_n") == ["local", "central", "non_private"]
    assert any("replace-one" in d for d in estimation.deviations(cfg, "mean_vs_d"))
    assert any("2ε-LDP" in d for d in estimation.deviations(cfg, "ldp_vs_n"))
    assert any("upper-triangle" in d for d in estimation.deviations(cfg, "cov_vs_d"))
    with pytest.raises(ValueError, match="unknown figure"):
        estimation.figure("fig1")
    assert len(estimation.series_code_hash("laplace")) == 16


COLUMNS = ("study", "figure", "series", "method", "dataset", "dataset_variant", "is_substitute", "x_name", "x",
           "curve", "epsilon", "delta", "n", "d", "rep", "metric", "value", "mechanism", "noise_kind", "noise_scale",
           "sensitivity", "sensitivity_norm", "clip", "neighbouring", "expected_privacy_rms", "seed", "runtime_s")


def test_run_series_rows_figures_and_anchors(tiny_config, tmp_path):
    config = tiny_config
    cfg = config["studies"]["estimation"]
    inputs_all = []
    for name in estimation.figure_names(cfg):
        fc, inputs = cfg["figures"][name], []
        for s in estimation.series(cfg, name):
            out = tmp_path / "res" / name / f"{s}.parquet"
            df = run_series(config, "estimation", name, s, out, n_jobs=1)
            assert set(COLUMNS) <= set(df.columns), set(COLUMNS) - set(df.columns)
            grid = fc.get("dims", fc.get("ns"))
            curves = len(fc.get("epsilons", [0])) if s != "non_private" else 1
            assert len(df) == len(grid) * fc["repetitions"] * curves * 2  # two metrics per cell
            assert (df["value"] >= 0).all() and np.isfinite(df["value"]).all()
            assert not df["is_substitute"].any() and (df["dataset_variant"] == estimation.VARIANT).all()
            if s != "non_private":
                assert set(df["metric"]) == {estimation.MAIN_METRIC[name], "privacy_error"}
                assert (df["neighbouring"].str.startswith("local") if s == "local"
                        else df["neighbouring"] == "replace-one").all()
                if s == "laplace":
                    assert (df["sensitivity_norm"] == "l1").all() and (df["delta"] == 0).all()
                if s.startswith("gaussian"):
                    assert (df["sensitivity_norm"] == "l2").all() and (df["delta"] == fc["delta"]).all()
            inputs.append(str(out))
        png = tmp_path / "fig" / f"{name}.png"
        caption = plot_from_files(config, "estimation", name, inputs, png)
        assert png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size > 10_000
        assert png.with_suffix(".txt").read_text() == caption and "Measured slope" in caption
        inputs_all += inputs
    assert {"config_hash", "git_revision", "packages"} <= set(read_metadata(inputs_all[0]))
    checks = run_anchor_checks(config, "estimation", inputs_all, tmp_path / "a.parquet", tmp_path / "a.html")
    assert {"E1", "E2", "E3", "C1", "C2", "L1", "L1b", "L2", "L3"} <= set(checks["claim"])
    assert checks.set_index("claim").loc["L3", "passed"]
    html = (tmp_path / "a.html").read_text()
    assert "log-log slopes" in html and "privacy-term ratio" in html


def test_results_are_deterministic_and_series_share_data(tiny_config):
    a = run_series(tiny_config, "estimation", "mean_vs_d", "laplace")
    b = run_series(copy.deepcopy(tiny_config), "estimation", "mean_vs_d", "laplace", n_jobs=2)
    np.testing.assert_array_equal(a["value"].to_numpy(), b["value"].to_numpy())
    # the Laplace and analytic-Gaussian releases of one cell differ only by their noise: same data set
    g = run_series(tiny_config, "estimation", "mean_vs_d", "gaussian_analytic")
    assert not np.allclose(a["value"], g["value"])
    np.testing.assert_array_equal(a["clip"].to_numpy(), g["clip"].to_numpy())
    other = copy.deepcopy(tiny_config)
    other["seed"] += 1
    assert not np.allclose(run_series(other, "estimation", "mean_vs_d", "laplace")["value"], a["value"])


def test_unknown_series_is_rejected(tiny_config):
    with pytest.raises(ValueError, match="not a series"):
        run_series(tiny_config, "estimation", "ldp_vs_n", "laplace")


def test_slopes_and_ratios_match_the_notes_on_a_fixed_seed(tiny_config):
    """The invariants of the notes' rates (lecture 19, §1–2; docs/studies/estimation.md) on a small but
    informative grid (a few seconds); tolerances as in the anchor table: slopes ±0.1 (mean, LDP) and ±0.15
    (covariance), ratios within 4 standard errors."""
    config = copy.deepcopy(tiny_config)
    figs = config["studies"]["estimation"]["figures"]
    figs["mean_vs_d"].update(n=500, dims=[4, 16, 64, 256], repetitions=20)
    figs["cov_vs_d"].update(n=500, dims=[4, 8, 16, 32], repetitions=10)
    figs["ldp_vs_n"].update(ns=[100, 1000, 10000, 100000], epsilons=[0.5, 2.0], repetitions=30)
    frames = {}
    for name in estimation.figure_names(config["studies"]["estimation"]):
        frames[name] = pd.concat(
            [run_series(config, "estimation", name, s) for s in estimation.series(config["studies"]["estimation"],
                                                                                   name)], ignore_index=True)
    slopes = {n: estimation.slope_table(n, frames[n]).set_index(["series", "curve"]) for n in frames}
    assert abs(slopes["mean_vs_d"].loc[("laplace", ""), "measured"] - 1.5) <= 0.1
    for g in ("gaussian_classic", "gaussian_analytic"):
        assert abs(slopes["mean_vs_d"].loc[(g, ""), "measured"] - 1.0) <= 0.1
        assert abs(slopes["cov_vs_d"].loc[(g, ""), "measured"] - 2.0) <= 0.15
    assert abs(slopes["cov_vs_d"].loc[("laplace", ""), "measured"] - 3.0) <= 0.15
    ldp = slopes["ldp_vs_n"]
    for curve in ("ε = 0.5", "ε = 2"):
        assert abs(ldp.loc[("local", curve), "measured"] + 0.5) <= 0.1
        assert abs(ldp.loc[("central", curve), "measured"] + 1.0) <= 0.1
    checks = estimation.anchor_checks(frames).set_index("claim")
    assert checks["passed"].all(), checks.loc[~checks["passed"], "measured"].to_dict()


def test_snakemake_dry_run_schedules_an_estimation_figure(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path),
                           "-n", "figures/estimation/mean_vs_d.png"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = proc.stdout
    assert "figure=mean_vs_d" in out and "series=gaussian_analytic" in out and "cov_vs_d" not in out


def test_claims_are_data_and_match_the_figures():
    from dpbench.studies.estimation.anchors import CLAIMS

    for c in CLAIMS.values():
        assert c.figure in estimation.FIGURES and c.section.startswith("Lecture 19")
    for name, spec in estimation.FIGURES.items():
        assert set(spec.anchors) <= set(CLAIMS), name


def test_a_caption_or_plot_edit_does_not_change_the_code_hash_a_compute_edit_does():
    from dpbench.codehash import closure

    mods = closure(["dpbench.studies.estimation.compute"])
    assert "dpbench.methods.estimation" in mods and "dpbench.privacy.mechanisms" in mods
    assert not [m for m in mods if m.split(".")[-1] in ("captions", "plots", "anchors", "spec", "summaries")
                or m in ("dpbench.plot", "dpbench.verdicts", "dpbench.studies.base")]
