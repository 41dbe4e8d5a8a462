"""``dpbench plan``: job counts agree with the Snakemake DAG's rules, and the projection is printed."""

from __future__ import annotations

import copy

from dpbench import shards
from dpbench.cli import main
from dpbench.plan import figure_plan, report


def test_plan_counts_shards_and_series(tiny_config):
    cfg = copy.deepcopy(tiny_config)
    cfg["sharding"] = {"enabled": True, "max_cpu_minutes": 1e-6}
    fp = figure_plan(cfg, "vdm2020", "fig1a")
    n_shards = sum(len(shards.plan(cfg, "vdm2020", "fig1a", m).all) for m in ("loss_perturbation",
                   "model_sensitivity", "prediction_sensitivity", "subsample_aggregate", "non_private"))
    assert fp.jobs == n_shards + 5 + 1  # shards, one gather per series, the plot
    cfg["sharding"]["enabled"] = False
    assert figure_plan(cfg, "vdm2020", "fig1a").jobs == 5 + 1
    text = report(cfg, 2)
    assert "projected wall time on 2 cores" in text and "vdm2020/fig4" in text


def test_plan_command_on_the_default_config(capsys):
    assert main(["plan", "--cores", "2"]) == 0
    out = capsys.readouterr().out
    assert "CPU-hours" in out and "largest job" in out
