"""``dpbench plan``: job counts agree with the Snakemake DAG's rules, and the projection is printed."""

from __future__ import annotations

import copy

import pytest

from dpbench import shards
from dpbench.cli import main
from dpbench.plan import figure_plan, report


def test_plan_counts_shards_and_series(tiny_config):
    cfg = copy.deepcopy(tiny_config)
    cfg["sharding"] = {"enabled": True, "max_cpu_minutes": 1e-6}
    fp = figure_plan(cfg, "vdm2020", "fig1a")
    names = ("loss_perturbation", "model_sensitivity", "prediction_sensitivity", "subsample_aggregate", "non_private",
             "loss_perturbation_tight")   # config.yaml draws the tight calibration in fig1a (tight: true)
    n_shards = sum(len(shards.plan(cfg, "vdm2020", "fig1a", m).all) for m in names)
    assert fp.jobs == n_shards + 6 + 1  # shards, one gather per series, the plot
    cfg["sharding"]["enabled"] = False
    assert figure_plan(cfg, "vdm2020", "fig1a").jobs == 6 + 1
    text = report(cfg, 2)
    assert "projected wall time on 2 cores" in text and "vdm2020/fig4" in text


def test_plan_command_on_the_default_config(capsys):
    assert main(["plan", "--cores", "2"]) == 0
    out = capsys.readouterr().out
    assert "CPU-hours" in out and "largest job" in out


def test_plan_counts_the_shared_non_private_fits_once(tiny_config):
    """Model sensitivity, prediction sensitivity and the non-private baseline tune λ on the same cached
    non-private fits (one artefact per problem, split and λ): the figure and study totals pay each fit once."""
    cfg = copy.deepcopy(tiny_config)
    cfg["sharding"] = {"enabled": True, "max_cpu_minutes": 20}
    names = ("loss_perturbation", "model_sensitivity", "prediction_sensitivity", "subsample_aggregate", "non_private",
             "loss_perturbation_tight")
    per = {m: shards.plan(cfg, "vdm2020", "fig1a", m) for m in names}
    fits = {m: {k: c for s in per[m].all for k, c in s.shared.items() if k[0] == shards.SHARED_FIT} for m in names}
    assert fits["model_sensitivity"] and fits["model_sensitivity"] == fits["prediction_sensitivity"] == fits["non_private"]
    assert not fits["loss_perturbation"] and not fits["subsample_aggregate"] and not fits["loss_perturbation_tight"]
    # every CPU-second of a shard is one of its identities (cells, models, fits), each paid once per shard
    for m in names:
        for s in per[m].all:
            assert abs(s.cpu_s - sum(s.shared.values())) < 1e-9 * max(1.0, s.cpu_s)
    once = sum(fits["non_private"].values())
    fp = figure_plan(cfg, "vdm2020", "fig1a")
    total = sum(s.cpu_s for m in names for s in per[m].all)
    assert abs(fp.shared_saved_s - 2 * once) < 1e-6 * once
    assert abs(fp.cpu_s - (total - 2 * once)) < 1e-6 * total
    # fig1b tunes on the same problem: its fits are not paid again in the study total
    fp_b = figure_plan(cfg, "vdm2020", "fig1b")
    assert {k for k in fp.shared if k[0] == shards.SHARED_FIT} <= set(fp_b.shared)
    text = report(cfg, 2)
    assert "counted once" in text


def test_plan_counts_what_several_figures_share_once(tiny_config):
    """The cache is content-keyed, so a figure that needs the cells and models of an earlier one reads them: Fig. 2a
    (ε = 1, budgets) after Fig. 1a (ε grid, B = 100) only pays its other budgets' vote cells (the ensembles of
    subsample-and-aggregate are one set, loss perturbation's cells do not depend on B), Fig. 2b's DP-SGD is Fig. 1b's
    at ε = 1 — and the DAG's shard costs follow the same order."""
    from dpbench.plan import dag

    cfg = copy.deepcopy(tiny_config)
    cfg["sharding"] = {"enabled": True, "max_cpu_minutes": 20}
    a, b = figure_plan(cfg, "vdm2020", "fig1a"), figure_plan(cfg, "vdm2020", "fig2a")
    repeat = sum(c for k, c in b.shared.items() if k in a.shared)
    assert repeat > 0.8 * b.cpu_s
    for s_ in ("loss_perturbation", "subsample_aggregate"):
        sb = {k for s in shards.plan(cfg, "vdm2020", "fig2a", s_).all for k in s.shared}
        sa = {k for s in shards.plan(cfg, "vdm2020", "fig1a", s_).all for k in s.shared}
        assert {k for k in sb if k[0] == shards.GROUP} <= sa or s_ == "loss_perturbation"
    dp = {k for s in shards.plan(cfg, "vdm2020", "fig2b", "dpsgd").all for k in s.shared}
    assert dp and dp <= {k for s in shards.plan(cfg, "vdm2020", "fig1b", "dpsgd").all for k in s.shared}
    assert "+CPU-h" in report(cfg, 2)
    jobs = {j.name: j.cpu_s for j in dag(cfg)}
    fig2b_dpsgd = [c for n, c in jobs.items() if n.startswith("vdm2020/fig2b/dpsgd/")]
    assert fig2b_dpsgd and max(fig2b_dpsgd) <= 1.0     # read from the cache: the floor of a job's cost


def test_audit_series_are_projected_from_their_trials():
    """The audit study's series cost its cells' trials times the method's measured CPU per trial: more trials or
    seeds cost proportionally more, and the whole default audit is projected at about what it measured."""
    from dpbench import costs
    from dpbench.config import DEFAULT_CONFIG_PATH
    from dpbench.studies import load_config

    cfg = load_config(DEFAULT_CONFIG_PATH)
    fp = figure_plan(cfg, "audit", "fig_audit")
    assert fp.measured and 600 < fp.cpu_s < 3000           # measured: ~1,300 CPU-s (benchmarks/audit_cost.py)
    one = costs.audit_series_cpu_s(cfg, "dpsgd_mlp")
    more = copy.deepcopy(cfg)
    more["studies"]["audit"]["seeds"] = 2
    more["studies"]["audit"]["methods"]["dpsgd_mlp"]["trials"] = 8000
    assert costs.audit_series_cpu_s(more, "dpsgd_mlp") > 1.9 * one
    assert set(costs.AUDIT_CPU_S_PER_TRIAL) == set(__import__("dpbench.audit", fromlist=["REGISTRY"]).REGISTRY)


def test_schedule_simulation_on_a_known_dag():
    """Four independent 100-s jobs after a 10-s one: on 2 cores two rounds (utilisation near 1), on 4 cores one
    round, on 8 cores still one (the critical path); a job that asks for more threads than cores gets all cores."""
    from dpbench.costs import JOB_OVERHEAD_S as O
    from dpbench.plan import Job, schedule

    jobs = [Job("data", 10.0)] + [Job(f"s{i}", 100.0, 1, ("data",)) for i in range(4)] + [
        Job("fig", 1.0, 1, tuple(f"s{i}" for i in range(4)))]
    two, four, eight = (schedule(jobs, n) for n in (2, 4, 8))
    assert abs(two.wall_s - (10 + 2 * 100 + 1 + 4 * O)) < 1e-9
    assert abs(four.wall_s - (10 + 100 + 1 + 3 * O)) < 1e-9 and eight.wall_s == four.wall_s
    assert two.critical_path == ["data", "s0", "fig"]
    assert abs(four.critical_s - four.wall_s) < 1e-9
    assert two.utilisation > 0.85 and eight.utilisation < 0.5
    wide = schedule([Job("a", 80.0, 8), Job("b", 10.0, 1)], 2)  # threads capped at the cores
    assert abs(wide.wall_s - (40 + O + 10 + O)) < 1e-9   # the longer job first, on both cores


def test_shards_ask_for_one_thread_and_fill_the_cores(tiny_config):
    """A shard (and a sharded series' gather) asks for one thread unless n_jobs says otherwise, so --cores N runs
    N shards side by side; the plan prints the utilisation and the critical path for several core counts."""
    from dpbench import workflow as W
    from dpbench.plan import dag, schedule

    cfg = copy.deepcopy(tiny_config)
    cfg["sharding"] = {"enabled": True, "max_cpu_minutes": 1e-6}
    sp = shards.plan(cfg, "vdm2020", "fig1a", "loss_perturbation")
    assert all(W.shard_threads(cfg, "vdm2020", "fig1a", "loss_perturbation", s.name) == 1 for s in sp.all)
    assert W.series_threads(cfg, "vdm2020", "fig1a", "loss_perturbation") == 1
    cfg["n_jobs"] = 4
    assert max(W.shard_threads(cfg, "vdm2020", "fig1a", "loss_perturbation", s.name) for s in sp.all) > 1
    cfg["n_jobs"] = None
    jobs = dag(cfg)
    names = {j.name for j in jobs}
    assert "vdm2020/dataset" in names and "claims" in names and f"vdm2020/fig1a/loss_perturbation/{sp.all[0].name}" in names
    assert schedule(jobs, 16).wall_s <= schedule(jobs, 2).wall_s
    text = report(cfg, 2)
    assert "utilisation" in text and "on 16 cores" in text and "critical path" in text


def test_plan_counts_jobs_as_snakemake_does(tmp_path, data_dir):
    """The plan's job total is Snakemake's "total" for the same config (dry run)."""
    import re
    import subprocess
    import sys

    import yaml

    from dpbench.config import DEFAULT_CONFIG_PATH
    from dpbench.plan import dag
    from dpbench.studies import load_config
    from tests.workflow.test_snakemake import ROOT, write_config

    config = write_config(tmp_path, data_dir)
    cfg = yaml.safe_load(config.read_text())
    cfg["sharding"] = {"enabled": True, "max_cpu_minutes": 0.05}
    config.write_text(yaml.safe_dump(cfg))
    out = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path),
                          "--configfile", str(config), "-n"], capture_output=True, text=True, timeout=600).stdout
    total = int(re.search(r"^total\s+(\d+)", out, re.M).group(1))
    assert len(dag(load_config(DEFAULT_CONFIG_PATH, config))) == total


def test_the_plan_reads_config_yaml_once(monkeypatch):
    """Costing every series scaled it against config.yaml read anew each time (288 YAML parses, 12 of the plan's
    15 s and half of Snakemake's start-up on the default config): read once per process."""
    import dpbench.config as C
    from dpbench import costs
    from dpbench.studies import load_config

    cfg = load_config(C.DEFAULT_CONFIG_PATH)
    costs._default_studies.cache_clear()
    calls = []
    real = C.load_yaml
    monkeypatch.setattr(C, "load_yaml", lambda p: calls.append(p) or real(p))
    for st, fig in (("song2018", "fig4_1"), ("wu2016", "fig3_2"), ("membership", "fig_roc"), ("song2018", "fig7_4")):
        costs.size_ratio(cfg, st, fig)
    assert len(calls) == 1


def test_plan_shares_the_subsample_aggregate_ensembles_across_series_and_figures(tiny_config):
    """The vote counts are one artefact per problem, T, solver and repetition (``vote_counts``): Fig. 6b's point
    at the study's T is Figs. 1a-3's ensemble, and ``subsample_aggregate_tight`` votes with the same teachers; a
    tight series is costed at its source series' units (``costs.cost_series``), not as an unknown series."""
    from dpbench import costs

    cfg = copy.deepcopy(tiny_config)
    cfg["sharding"] = {"enabled": True, "max_cpu_minutes": 20}
    st = cfg["studies"]["vdm2020"]
    st["figures"]["fig6b"]["n_models"] = [4, st["subsagg_models"]]
    models = lambda fig, s: {k for sh in shards.plan(cfg, "vdm2020", fig, s).all for k in sh.shared  # noqa: E731
                             if k[0] == shards.GROUP}
    a, b = models("fig1a", "subsample_aggregate"), models("fig6b", "subsample_aggregate")
    assert a and a < b                       # every ensemble of fig1a is one of fig6b's, fig6b has T = 4 besides
    st["figures"]["fig1b"]["methods"] = ["subsample_aggregate", "subsample_aggregate_tight"]
    assert models("fig1b", "subsample_aggregate_tight") == models("fig1b", "subsample_aggregate") == a
    fp = figure_plan(cfg, "vdm2020", "fig1b")
    assert fp.shared_saved_s > 0.9 * sum(c for k, c in fp.shared.items() if k in a)
    for tight, source in (("subsample_aggregate_tight", "subsample_aggregate"), ("dpsgd_tight", "dpsgd"),
                          ("prediction_sensitivity_tight", "prediction_sensitivity"),
                          ("loss_perturbation_tight", "loss_perturbation")):
        assert costs.cost_series(tight) == source
        assert costs.vdm2020_cell_cpu_s(st, tight, {}, {}, "test") == costs.vdm2020_cell_cpu_s(st, source, {}, {}, "test")


def test_a_run_without_the_figure_that_pays_shared_work_pays_it_itself(tmp_path):
    """Fig. 2b's DP-SGD is Fig. 1b's at ε = 1: in the whole DAG Fig. 1b's shards pay for it, but a run that asks
    for Fig. 2b alone (Fig. 1b neither in the run nor done before) computes it, and its projection says so; once
    Fig. 1b's shard files exist, their cells are in the cache and Fig. 2b reads them. (The default config: the
    tiny one's cells cost less than a job's floor of 1 CPU-s.)"""
    import argparse
    import os

    from dpbench import cli
    from dpbench.plan import dag, projection_before_run

    cfg = cli._config(argparse.Namespace(configfile=None))
    cfg["results_dir"], cfg["figures_dir"] = str(tmp_path / "results"), str(tmp_path / "figures")
    jobs = dag(cfg)
    by = {j.name: j for j in jobs}
    want, chosen = f"{cfg['figures_dir']}/vdm2020/fig2b.png", set()
    stack = [j.name for j in jobs if j.output == want]
    while stack:
        n = stack.pop()
        if n not in chosen:
            chosen.add(n)
            stack += list(by[n].after)
    outs = {by[n].output for n in chosen}
    assert all(by[n].cpu_s <= 1.0 for n in chosen if "/fig2b/dpsgd/" in n)   # the whole DAG: Fig. 1b pays
    alone = projection_before_run(cfg, outs, 2)[1]["jobs"]
    dpsgd = {o: c for o, c in alone.items() if "/fig2b/shards/dpsgd/" in o}
    own = sum(s.cpu_s for s in shards.plan(cfg, "vdm2020", "fig2b", "dpsgd").all)
    assert dpsgd and sum(dpsgd.values()) == pytest.approx(own) and own > 60 * len(dpsgd)
    for j in jobs:   # Fig. 1b done before: its cells are cached
        if j.output and "/fig1b/shards/dpsgd/" in j.output:
            os.makedirs(os.path.dirname(j.output), exist_ok=True)
            open(j.output, "w").close()
    again = projection_before_run(cfg, outs, 2)[1]["jobs"]
    assert all(again[o] <= 1.0 for o in dpsgd)
