"""The Snakemake DAG end to end on tiny substitute data: targeted scheduling, nothing to redo after a
complete run, the report, and bad configs (SIGKILL and resume: tests/faults/test_kill_workflow.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import TINY

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile")]


def write_config(tmp_path: Path, data_dir: Path, **study_overrides) -> Path:
    cfg = {"results_dir": "results", "figures_dir": "figures", "cache_dir": "results/cache",
           "sharding": {"enabled": False},  # one job per series here; shards: test_sharded_dag
           "data": {"cache_dir": str(data_dir), "mnist_source": "substitute", "covertype_source": "substitute",
                    "protein_source": "substitute", "kddcup99_source": "substitute",
                    "diabetes_source": "substitute"},
           "studies": {"vdm2020": {**TINY["studies"]["vdm2020"], **study_overrides},
                       **{k: v for k, v in TINY["studies"].items() if k != "vdm2020"}}}  # the others tiny too
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def snakemake(tmp_path, config, *args, check=True, timeout=1500):  # generous: CI machines can be loaded
    proc = subprocess.run([*SNAKEMAKE, "-d", str(tmp_path), "--configfile", str(config), *args],
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(proc.stdout[-3000:] + proc.stderr[-3000:])
    return proc


def cell_files(tmp_path: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in (tmp_path / "results" / "cache" / "cells").rglob("*.json")}


def test_one_figure_schedules_only_what_it_needs(tmp_path, data_dir):
    config = write_config(tmp_path, data_dir)
    out = snakemake(tmp_path, config, "-n", "figures/vdm2020/fig2a.png").stdout
    figures = {line.split("figure=")[1].split(",")[0].strip() for line in out.splitlines() if "figure=" in line}
    assert figures == {"fig2a"}
    series_jobs = [line for line in out.splitlines() if line.strip().startswith("wildcards:") and "series=" in line]
    # the δ = 0 series of fig2a and loss perturbation's tight calibration; DP-SGD does not support δ = 0
    assert len(series_jobs) == 6
    assert "rule anchors" not in out and "fig1a" not in out


def test_a_run_prints_its_projection_then_progress(tmp_path, data_dir):
    """Before the jobs start, the projection of exactly the jobs about to run (CPU, wall time on the run's cores,
    the largest job); then one progress line per finished job against it; a rerun with nothing to do prints none."""
    config = write_config(tmp_path, data_dir)
    proc = snakemake(tmp_path, config, "--cores", "2", "figures/estimation/ldp_vs_n.png")
    err = proc.stdout + proc.stderr
    head = next(line for line in err.splitlines() if line.startswith("dpbench plan for this run:"))
    n = int(head.split(":")[1].split("jobs")[0])          # the dataset job, the figure's series, the plot
    assert n >= 3 and "on 2 core(s)" in head and "largest job" in head
    # Snakemake's log handler writes a message and its newline in two calls, so a job's line can land right after
    # a message ("Finished job 3.dpbench progress: ..."): count the lines wherever they start.
    done = [int(k) for k, of in re.findall(r"dpbench progress: (\d+) of (\d+) jobs done", err) if int(of) == n]
    assert len(done) == n and max(done) == n
    again = snakemake(tmp_path, config, "--cores", "2", "figures/estimation/ldp_vs_n.png")
    assert "dpbench plan for this run" not in again.stdout + again.stderr


def test_an_output_left_incomplete_is_rerun_by_the_plain_rerun(tmp_path, data_dir):
    """What a SIGINT to Snakemake alone leaves (an output marked incomplete in .snakemake/incomplete) is recomputed
    by a plain rerun (the default profile's rerun-incomplete) instead of an IncompleteFilesException."""
    from base64 import urlsafe_b64encode

    config = write_config(tmp_path, data_dir)
    snakemake(tmp_path, config, "--cores", "2", "figures/estimation/ldp_vs_n.png")
    target = "figures/estimation/ldp_vs_n.png"
    marker = tmp_path / ".snakemake" / "incomplete" / urlsafe_b64encode(target.encode()).decode()
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text('{"external_jobid": null}')
    out = snakemake(tmp_path, config, "--cores", "2", "-n", target)
    assert "IncompleteFilesException" not in out.stdout + out.stderr
    assert "rule figure" in out.stdout + out.stderr      # the incomplete plot is redone


def test_mnist1m_is_prepared_only_for_fig4(tmp_path, data_dir):
    """Data preparation follows the requested targets: Fig. 1a's DAG has the job of the study's own dataset
    (data/default.json) and no MNIST-1M job; Fig. 4's waits for one MNIST-1M job that generates it on all its
    cores and not for the study's own dataset (Fig. 4 always uses the generator)."""
    config = write_config(tmp_path, data_dir)
    out = snakemake(tmp_path, config, "-n", "figures/vdm2020/fig1a.png").stdout
    assert out.count("rule figure_data") == 1 and "results/vdm2020/data/default.json" in out
    assert "data/mnist1m.json" not in out and "rule dataset" in out
    out = snakemake(tmp_path, config, "-n", "--cores", "4", "figures/vdm2020/fig4.png").stdout
    assert out.count("rule figure_data") == 1 and "results/vdm2020/data/mnist1m.json" in out
    assert "data/default.json" not in out
    from dpbench.config import DEFAULT_CONFIG_PATH
    from dpbench.studies import STUDIES, load_config

    cfg = load_config(DEFAULT_CONFIG_PATH, config)
    assert STUDIES["vdm2020"].figure_data(cfg, "fig4") == ["mnist1m"]
    assert all(STUDIES["vdm2020"].figure_data(cfg, f) == ["default"] for f in ("fig1a", "fig2a", "fig5a", "fig7a"))
    assert all(STUDIES[s].figure_data(cfg, f) == [] for s, f in (("wu2016", "fig3_2"), ("membership", "fig_roc")))


def test_a_figure_on_a_user_dataset_prepares_no_mnist(tmp_path, data_dir):
    """A figure that names its own dataset (docs/extending.md's blobs) waits for neither MNIST nor MNIST-1M: its
    DAG has the dataset job (which reads the user dataset) and no figure-data job."""
    import numpy as np

    config = write_config(tmp_path, data_dir)
    cfg = yaml.safe_load(config.read_text())
    (tmp_path / "toy").mkdir()
    g = np.random.default_rng(0)
    for part, n in (("train", 60), ("test", 30)):
        rows = ["a,b,label"] + [f"{x:.3f},{y:.3f},{int(x > 0)}" for x, y in g.standard_normal((n, 2))]
        (tmp_path / "toy" / f"{part}.csv").write_text("\n".join(rows) + "\n")
    cfg["datasets"] = {"toy": {"path": str(tmp_path / "toy"), "format": "csv", "label": "label",
                               "task": "classification"}}
    cfg["studies"]["vdm2020"]["figures"]["fig1a"]["dataset"] = "toy"
    config.write_text(yaml.safe_dump(cfg))
    out = snakemake(tmp_path, config, "-n", "figures/vdm2020/fig1a.png").stdout
    assert "rule dataset" in out and "rule figure_data" not in out and "data/default.json" not in out


def test_sharded_dag(tmp_path, data_dir):
    """With sharding (the default), a series is gathered from tuning and final shard jobs."""
    config = write_config(tmp_path, data_dir, repetitions=3)
    cfg = yaml.safe_load(config.read_text())
    cfg["sharding"] = {"enabled": True, "max_cpu_minutes": 1e-6}
    config.write_text(yaml.safe_dump(cfg))
    out = snakemake(tmp_path, config, "-n", "results/vdm2020/fig1a/loss_perturbation.parquet").stdout
    shard_jobs = [line for line in out.splitlines() if "shards/loss_perturbation/" in line and "output:" in line]
    # tuning: (epsilon, lambda); final: (epsilon, block of repetitions) — loss perturbation solves a block of
    # LOCKSTEP_REPS (10) repetitions in lockstep, so the 3 repetitions are one final shard per epsilon
    assert len(shard_jobs) == 2 * 2 + 2 * 1
    assert "rule series:" in out or "localrule series:" in out


def test_group_series_runs_one_job_per_figure(tmp_path, data_dir):
    """group_series: true (the smoke profile) schedules one series_group job per figure and no series jobs; the
    grouped file holds every series, so the figure is drawn from it."""
    config = write_config(tmp_path, data_dir)
    cfg = yaml.safe_load(config.read_text())
    cfg["group_series"] = True
    config.write_text(yaml.safe_dump(cfg))
    out = snakemake(tmp_path, config, "-n", "figures/vdm2020/fig2a.png").stdout
    assert "rule series_group" in out and "rule series:" not in out
    assert "results/vdm2020/fig2a/all-series.parquet" in out
    snakemake(tmp_path, config, "--cores", "2", "figures/estimation/ldp_vs_n.png")
    from dpbench.results import read_results

    df = read_results(tmp_path / "results" / "estimation" / "ldp_vs_n" / "all-series.parquet")
    assert set(df["series"]) == {"local", "central", "non_private"} and (tmp_path / "figures" / "estimation" / "ldp_vs_n.png").exists()


# a sample of the kinds of x axis (inference budget, data size, a method setting, the MLP substitute)
RUN_FIGURES = {"fig2a": {}, "fig4": {"methods": ["subsample_aggregate", "non_private"]}, "fig6a": {},
               "fig7b": {"methods": ["subsample_aggregate_mlp", "non_private_mlp"]}}


@pytest.mark.slow  # a whole tiny workflow (every study) plus the report: the longest test of the suite
def test_complete_run_then_nothing_to_do_and_report(tmp_path, data_dir):
    figs = {f: ({**v, **RUN_FIGURES[f]} if f in RUN_FIGURES else None)
            for f, v in TINY["studies"]["vdm2020"]["figures"].items()}
    config = write_config(tmp_path, data_dir, figures=figs)
    snakemake(tmp_path, config, "--cores", "2")
    assert not (tmp_path / "figures" / "vdm2020" / "fig3.png").exists()  # disabled figures are not run
    for fig in RUN_FIGURES:
        png = tmp_path / "figures" / "vdm2020" / f"{fig}.png"
        assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"
        assert "SUBSTITUTE DATA" in (tmp_path / "figures" / "vdm2020" / f"{fig}.txt").read_text()
    assert (tmp_path / "results" / "vdm2020" / "anchors.parquet").exists()
    anchors = (tmp_path / "figures" / "vdm2020" / "anchors.html").read_text()
    assert "claim3b" in anchors and "claim9a" in anchors and "Table 4.3 of the paper" in anchors
    assert "SUBSTITUTE EXPERIMENT" in (tmp_path / "figures" / "vdm2020" / "fig7b.txt").read_text()
    second = snakemake(tmp_path, config, "--cores", "2", "-n")
    assert "Nothing to be done" in second.stdout + second.stderr
    # a deleted anchor table and a damaged claims table are rebuilt by the plain rerun (they were removed, then
    # "Nothing to be done": not targets of the default rule)
    (tmp_path / "results" / "vdm2020" / "anchors.parquet").unlink()
    (tmp_path / "results" / "claims.parquet").write_bytes(b"PAR1 not a parquet file")
    snakemake(tmp_path, config, "--cores", "2")
    assert pd.read_parquet(tmp_path / "results" / "vdm2020" / "anchors.parquet").shape[0] > 0
    assert pd.read_parquet(tmp_path / "results" / "claims.parquet").shape[0] > 0
    snakemake(tmp_path, config, "--report", "report.html")
    html = (tmp_path / "report.html").read_text(errors="replace")
    assert "fig2a.png" in html and "anchors.html" in html
    # the landing page: the workflow description embeds every checked claim (rule claims), shown because the
    # default profile gives report metadata; the figure links open the figure inside the report
    claims = pd.read_parquet(tmp_path / "results" / "claims.parquet")
    assert set(TINY["studies"]) <= set(claims["study"])
    assert "Claims of the sources, checked on this run" in html and "reproduced " in html
    assert "app.showResultInfo" in html and "claims checked" in html


@pytest.mark.parametrize("override, key", [
    ({"figures": {"fig1a": {"epsilons": [0.0], "delta": 0.0, "budget": 100}}},
     "studies.vdm2020.figures.fig1a.epsilons[0]"),
    ({"figures": {"fig2a": {"budgets": [0], "epsilon": 1.0, "delta": 0.0}}}, "studies.vdm2020.figures.fig2a.budgets[0]"),
    ({"figures": {"fig1a": {"epsilons": [float("nan")], "delta": 0.0, "budget": 100}}},
     "studies.vdm2020.figures.fig1a.epsilons[0]"),
    ({"repetitions": 10_000_000_000}, "studies.vdm2020.repetitions"),
    ({"figures": {"fig1b": {"epsilons": [1.0], "delta": 1.5, "budget": 100}}}, "studies.vdm2020.figures.fig1b.delta"),
    ({"figures": {"fig1b": {"epsilons": [1.0], "delta": 1e-5, "budget": 100, "methods": ["sgd"]}}},
     "studies.vdm2020.figures.fig1b.methods[0]"),
])
def test_bad_config_fails_before_any_compute(tmp_path, data_dir, override, key):
    config = write_config(tmp_path, data_dir, **override)
    proc = snakemake(tmp_path, config, "--cores", "1", check=False)
    assert proc.returncode != 0
    assert f"invalid config: {key}" in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists()


def test_duplicated_yaml_key_fails_at_start_up(tmp_path, data_dir):
    config = write_config(tmp_path, data_dir)
    config.write_text(config.read_text() + "seed: 1\nseed: 2\n")
    proc = snakemake(tmp_path, config, "-n", check=False)
    assert proc.returncode != 0
    assert f"invalid config: {config}, line" in proc.stdout + proc.stderr
    assert "duplicate key 'seed'" in proc.stdout + proc.stderr


def test_unknown_figure_target_is_an_error(tmp_path, data_dir):
    config = write_config(tmp_path, data_dir)
    proc = snakemake(tmp_path, config, "-n", "figures/vdm2020/fig99.png", check=False)
    assert proc.returncode != 0
    assert "fig99" in proc.stdout + proc.stderr


def test_every_job_names_the_output_its_progress_line_reports():
    """Each job function of the workflow has an output keyword that dpbench.jobs reports in its progress line
    (a job without one finishes silently and the run's last line falls short of "n of n")."""
    from dpbench.jobs import KINDS, PROGRESS_OUTPUTS

    assert len(KINDS) >= 9
    silent = [kind for kind, (_, params) in KINDS.items() if not set(params) & set(PROGRESS_OUTPUTS)]
    assert not silent, silent
