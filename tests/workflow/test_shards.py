"""Sharded series equal unsharded ones: row for row, value for value, whatever the shard size, the number of
workers, and whether the shards share one cache or each has its own (nodes without a shared cache)."""

from __future__ import annotations

import copy

import pytest

from dpbench import shards
from dpbench.runner import run_series


def _cfg(config, cache, max_min):
    cfg = copy.deepcopy(config)
    cfg["cache_dir"] = str(cache)
    cfg["sharding"] = {"enabled": True, "max_cpu_minutes": max_min}
    return cfg


def _run_sharded(config, tmp_path, figure, series, n_jobs, own_cache):
    sp = shards.plan(config, "vdm2020", figure, series)
    tuning_paths = []
    for s in sp.tuning:
        cfg = _cfg(config, tmp_path / (s.name if own_cache else "shared"), config["sharding"]["max_cpu_minutes"])
        df = shards.run_shard(cfg, "vdm2020", figure, series, s.name, n_jobs=n_jobs)
        path = tmp_path / f"{s.name}.parquet"
        df.to_parquet(path)
        tuning_paths.append(str(path))
    finals = []
    for s in sp.final:
        cfg = _cfg(config, tmp_path / (s.name if own_cache else "shared"), config["sharding"]["max_cpu_minutes"])
        df = shards.run_shard(cfg, "vdm2020", figure, series, s.name, n_jobs=n_jobs, tuning_paths=tuning_paths)
        path = tmp_path / f"{s.name}.parquet"
        df.to_parquet(path)
        finals.append(str(path))
    return sp, shards.gather(finals)


@pytest.mark.parametrize("figure, series, n_jobs, own_cache", [
    ("fig1a", "loss_perturbation", 1, True),
    ("fig4", "loss_perturbation", 2, False),
    ("fig1b", "dpsgd", 2, True),
    ("fig2b", "prediction_sensitivity", 2, True),
])
def test_sharded_equals_unsharded(tiny_config, tmp_path, figure, series, n_jobs, own_cache):
    base = copy.deepcopy(tiny_config)
    base["cache_dir"] = str(tmp_path / "unsharded")
    expected = run_series(base, "vdm2020", figure, series, n_jobs=1)
    cfg = _cfg(tiny_config, tmp_path / "unused", 1e-6)  # every unit its own shard
    sp, got = _run_sharded(cfg, tmp_path / "sharded", figure, series, n_jobs, own_cache)
    assert len(sp.all) > 1
    shards.assert_same_results(expected, got)


def test_shards_respect_groups_and_limits(tiny_config):
    cfg = copy.deepcopy(tiny_config)
    cfg["studies"]["vdm2020"]["repetitions"] = 25
    cfg["sharding"] = {"enabled": True, "max_cpu_minutes": 1e-6}
    sp = shards.plan(cfg, "vdm2020", "fig1b", "dpsgd")
    blocks = [(r0, r1) for s in sp.final for *_, r0, r1 in s.units]
    assert blocks == [(0, 10), (10, 20), (20, 25)] * 2  # DP-SGD's blocks of 10 runs are never split (2 epsilons)
    sp = shards.plan(cfg, "vdm2020", "fig1a", "loss_perturbation")
    # per (epsilon, block of 10 repetitions: one lockstep group, never split); per (epsilon, lambda)
    assert len(sp.final) == 2 * 3 and len(sp.tuning) == 2 * 2
    cfg["sharding"]["max_cpu_minutes"] = 1e6
    sp = shards.plan(cfg, "vdm2020", "fig1a", "loss_perturbation")
    assert len(sp.final) == 1 and len(sp.tuning) == 1


def test_sharding_off_with_group_series(tiny_config):
    cfg = copy.deepcopy(tiny_config)
    cfg["sharding"] = {"enabled": True, "max_cpu_minutes": 20}
    assert shards.shard_files(cfg, "vdm2020", "fig1a", "loss_perturbation")
    assert not shards.shard_files(cfg, "estimation", "mean_vs_d", "laplace")  # own run_series: not sharded
    cfg["group_series"] = True
    assert not shards.shard_files(cfg, "vdm2020", "fig1a", "loss_perturbation")


def test_a_small_series_is_still_cut_for_the_cores():
    """On the default grid, Fig. 2a's subsample-and-aggregate (~7 CPU-min, under max_cpu_minutes) is cut into
    min_shards shards of at least min_cpu_minutes, so 2 cores do not end on one long shard; with min_shards 1
    it is one shard. Tuning shards start before the final shards they gate (priority = their chain)."""
    from dpbench import workflow as W
    from dpbench.config import DEFAULT_CONFIG_PATH
    from dpbench.studies import load_config

    cfg = load_config(DEFAULT_CONFIG_PATH)
    sp = shards.plan(cfg, "vdm2020", "fig2a", "subsample_aggregate")
    total = sum(s.cpu_s for s in sp.all)
    assert total < 60 * cfg["sharding"]["max_cpu_minutes"] and len(sp.final) >= 4
    assert min(s.cpu_s for s in sp.final) >= 60 * cfg["sharding"]["min_cpu_minutes"] * 0.5
    one = copy.deepcopy(cfg)
    one["sharding"]["min_shards"] = 1
    assert len(shards.plan(one, "vdm2020", "fig2a", "subsample_aggregate").final) == 1
    lp = shards.plan(cfg, "vdm2020", "fig1a", "loss_perturbation")
    t, f = lp.tuning[0].name, lp.final[0].name
    assert W.shard_priority(cfg, "vdm2020", "fig1a", "loss_perturbation", t) > \
        W.shard_priority(cfg, "vdm2020", "fig1a", "loss_perturbation", f) > 0
    assert W.series_priority(cfg, "vdm2020", "fig1a", "loss_perturbation") == 0   # a gather
