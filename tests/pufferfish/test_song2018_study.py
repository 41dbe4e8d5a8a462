"""song2018 chapter-7 study: config errors name the key, the harness runs every series, draws every figure and
table, checks the anchors, and results do not depend on the number of workers; one Snakemake run."""

import copy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from dpbench.config import DEFAULT_CONFIG_PATH, ConfigError
from dpbench.studies import load_config
from dpbench.figures import plot_from_files
from dpbench.report import run_anchor_checks
from dpbench.results import read_metadata, read_results
from dpbench.runner import run_series
from dpbench.studies import STUDIES, song2018
from tests.conftest import TINY

ROOT = Path(__file__).resolve().parents[2]


def s18(**fig):
    return {"studies": {"song2018": {"figures": fig}}}


@pytest.mark.parametrize("override, key", [
    (s18(fig7_4={"alphas": [0.2, 0.5]}), "studies.song2018.figures.fig7_4.alphas[1]"),
    (s18(fig7_4={"alphas": [0.2, 0.2]}), "studies.song2018.figures.fig7_4.alphas"),
    (s18(fig7_4={"epsilons": [0.0]}), "studies.song2018.figures.fig7_4.epsilons[0]"),
    (s18(fig7_4={"approx_bound": "tight"}), "studies.song2018.figures.fig7_4.approx_bound"),
    (s18(fig7_4={"methods": ["dp"]}), "studies.song2018.figures.fig7_4.methods[0]"),
    (s18(table7_1={"trials": 0}), "studies.song2018.figures.table7_1.trials"),
    (s18(table7_2={"theta_range": [0.9, 0.1]}), "studies.song2018.figures.table7_2.theta_range"),
    (s18(table7_2={"theta_grid_step": 0.95}), "studies.song2018.figures.table7_2.theta_grid_step"),
    (s18(table7_9={"trials": 1}), "studies.song2018.figures"),
    ({"studies": {"song2018": {"activity": {"observations": [1000, 900]}}}}, "studies.song2018.activity.observations"),
    ({"studies": {"song2018": {"activity": {"persons": [40, 16]}}}}, "studies.song2018.activity.persons"),
    ({"studies": {"song2018": {"electricity": {"length": 10}}}}, "studies.song2018.electricity.length"),
    ({"studies": {"song2018": {"chapter": 7}}}, "studies.song2018"),
])
def test_bad_config_names_the_key(override, key):
    with pytest.raises(ConfigError) as err:
        load_config(DEFAULT_CONFIG_PATH, overrides=override)
    assert f"invalid config: {key}" in str(err.value)


def test_registered_with_figures_series_and_captions():
    cfg = load_config(DEFAULT_CONFIG_PATH)["studies"]["song2018"]
    assert STUDIES["song2018"] is song2018.STUDY_OBJECT
    assert song2018.figure_names(cfg) == ["fig7_4", "table7_1", "table7_2", "table7_3", "fig7_5",
                                          "fig3_1", "fig3_2", "fig3_3", "fig4_1",   # chapters 3-4 (song2018.ch34_compute)
                                          "table5_1", "fig5_1", "fig5_4", "fig5_5", "fig5_6",   # chapter 5 (ch5_compute)
                                          "fig6_1", "fig6_2", "table6_1", "table6_4"]  # chapter 6 (ch6_compute)
    assert song2018.series(cfg, "fig7_4") == ["group_dp", "gk16", "mqm_approx", "mqm_exact"]
    sub = copy.deepcopy(cfg)
    sub["figures"]["table7_1"]["methods"] = ["mqm_exact", "dp"]
    assert song2018.series(sub, "table7_1") == ["dp", "mqm_exact"]
    assert any("left out by the configuration" in d for d in song2018.deviations(sub, "table7_1"))
    assert any("RECONSTRUCTED" in d for d in song2018.deviations(cfg, "fig7_4"))
    assert any("SIMULATED" in d for d in song2018.deviations(cfg, "table7_3"))
    with pytest.raises(ValueError, match="unknown figure"):
        song2018.figure("fig9_9")
    assert len(song2018.series_code_hash("mqm_exact")) == 16


def test_every_series_figure_table_and_anchor(tiny_config, tmp_path):
    config = tiny_config
    study = config["studies"]["song2018"]
    inputs_all = []
    for fig in song2018.figure_names(study):
        inputs = []
        for s in song2018.series(study, fig):
            out = tmp_path / "res" / fig / f"{s}.parquet"
            df = run_series(config, "song2018", fig, s, out, n_jobs=1)
            for col in ("study", "figure", "series", "method", "dataset", "dataset_variant", "is_substitute",
                        "x_name", "x", "rep", "metric", "value", "epsilon", "noise_scale", "applicable"):
                assert col in df.columns, (fig, s, col)
            inputs.append(str(out))
        inputs_all += inputs
        png = tmp_path / "fig" / f"{fig}.png"
        caption = plot_from_files(config, "song2018", fig, inputs, png)
        assert png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size > 10_000
        assert png.with_suffix(".txt").read_text() == caption
        if fig != "fig7_4":
            assert "SIMULATED" in caption
            flags = read_results(*inputs).groupby("dataset")["is_substitute"].all()
            assert flags.drop("synthetic", errors="ignore").all()  # table7_2's synthetic column is not simulated
        if fig.startswith("table"):
            assert "| Algorithm |" in caption and "Thesis (for comparison)" in caption
    assert {"config_hash", "git_revision", "packages"} <= set(read_metadata(inputs_all[0]))
    checks = run_anchor_checks(config, "song2018", inputs_all, tmp_path / "anchors.parquet",
                               tmp_path / "anchors.html").set_index("claim")
    assert checks.loc[["R1", "R2", "R3", "R4", "A7.4a", "A7.4b", "A7.1c", "A7.3b"], "passed"].all()
    html = (tmp_path / "anchors.html").read_text()
    assert "table7_1: this run (SIMULATED data)" in html and "table7_3: thesis" in html and "13.0219" in html
    assert not list(tmp_path.rglob(".*.tmp"))


def test_same_results_with_one_and_two_workers(tiny_config, tmp_path):
    a = copy.deepcopy(tiny_config)
    a["cache_dir"] = str(tmp_path / "c1")
    b = copy.deepcopy(tiny_config)
    b["cache_dir"] = str(tmp_path / "c2")
    for fig, s in (("fig7_4", "mqm_exact"), ("table7_1", "mqm_approx")):
        x = run_series(a, "song2018", fig, s, n_jobs=1)
        y = run_series(b, "song2018", fig, s, n_jobs=2)
        np.testing.assert_array_equal(x["value"].to_numpy(), y["value"].to_numpy())
        # rerun from the scale cache: identical again
        np.testing.assert_array_equal(run_series(a, "song2018", fig, s)["value"].to_numpy(), x["value"].to_numpy())


def test_unknown_series_is_rejected(tiny_config):
    with pytest.raises(ValueError, match="not a series"):
        run_series(tiny_config, "song2018", "table7_3", "dp")


def test_snakemake_builds_song2018_targets_only(tmp_path, data_dir):
    cfg = {"results_dir": "results", "figures_dir": "figures", "cache_dir": "results/cache",
           "data": {"cache_dir": str(data_dir), "mnist_source": "substitute"},
           "studies": {"song2018": copy.deepcopy(TINY["studies"]["song2018"])}}
    cfg["studies"]["song2018"]["figures"]["table7_3"]["methods"] = ["group_dp", "mqm_exact"]  # 4 jobs in all
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(cfg))
    base = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path),
            "--configfile", str(path)]
    targets = ["figures/song2018/table7_3.png"]
    run = subprocess.run([*base, "--cores", "2", *targets], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    for t in targets:
        assert (tmp_path / t).read_bytes()[:4] == b"\x89PNG" and (tmp_path / t).with_suffix(".txt").exists()
    assert (tmp_path / "results" / "song2018" / "dataset.json").exists()
    assert sorted(p.name for p in (tmp_path / "results" / "song2018" / "table7_3").glob("*.parquet")) == [
        "group_dp.parquet", "mqm_exact.parquet"]
    assert not (tmp_path / "results" / "vdm2020").exists()
    again = subprocess.run([*base, "--cores", "2", "-n", *targets], capture_output=True, text=True, timeout=300)
    assert "Nothing to be done" in again.stdout + again.stderr
