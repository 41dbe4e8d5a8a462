"""The runner: reproducible across worker counts, resumable, and never computing a cell twice."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from dpbench.methods.loss_perturbation import LossPerturbation
from dpbench.results import read_metadata, read_results
from dpbench.runner import run_series


def with_cache(config, path):
    cfg = copy.deepcopy(config)
    cfg["cache_dir"] = str(path)
    return cfg


@pytest.mark.parametrize("figure, series", [("fig2a", "subsample_aggregate"), ("fig1b", "dpsgd"),
                                            ("fig1a", "loss_perturbation"), ("fig2b", "prediction_sensitivity")])
def test_same_values_with_one_and_two_workers(tiny_config, tmp_path, figure, series):
    a = run_series(with_cache(tiny_config, tmp_path / "c1"), "vdm2020", figure, series, n_jobs=1)
    b = run_series(with_cache(tiny_config, tmp_path / "c2"), "vdm2020", figure, series, n_jobs=2)
    assert len(a) == len(b) > 0
    np.testing.assert_array_equal(a["value"].to_numpy(), b["value"].to_numpy())
    np.testing.assert_array_equal(a["cell_key"].to_numpy(), b["cell_key"].to_numpy())


class Counter:
    """Wraps LossPerturbation.run_group: counts computed cells, optionally fails after ``fail_after`` groups."""

    def __init__(self, monkeypatch, fail_after=None):
        self.cells = 0
        self.groups = 0
        orig = LossPerturbation.run_group
        counter = self

        def run_group(self_, problem, cells, ctx):
            if fail_after is not None and counter.groups >= fail_after:
                raise KeyboardInterrupt("simulated kill")
            counter.groups += 1
            counter.cells += len(cells)
            return orig(self_, problem, cells, ctx)

        monkeypatch.setattr(LossPerturbation, "run_group", run_group)


def test_interrupted_run_resumes_without_recomputing_finished_cells(tiny_config, tmp_path, monkeypatch):
    everything = Counter(monkeypatch)
    fresh = run_series(with_cache(tiny_config, tmp_path / "fresh"), "vdm2020", "fig1a", "loss_perturbation")
    total = fresh["cell_key"].nunique()
    n_cells = everything.cells  # tuning + final cells (equivalent tuning values share a cell)
    monkeypatch.undo()

    killed = Counter(monkeypatch, fail_after=3)
    with pytest.raises(KeyboardInterrupt):
        run_series(tiny_config, "vdm2020", "fig1a", "loss_perturbation", n_jobs=1)
    finished = killed.cells
    assert 0 < finished

    monkeypatch.undo()
    resumed = Counter(monkeypatch)
    df = run_series(tiny_config, "vdm2020", "fig1a", "loss_perturbation", n_jobs=1)
    assert resumed.cells == n_cells - finished
    assert df["cell_key"].nunique() == total
    np.testing.assert_array_equal(df["value"].to_numpy(), fresh["value"].to_numpy())

    again = Counter(monkeypatch)
    run_series(tiny_config, "vdm2020", "fig1a", "loss_perturbation", n_jobs=1)
    assert again.cells == 0


def test_two_figures_share_cells(tiny_config, monkeypatch):
    c = Counter(monkeypatch)
    run_series(tiny_config, "vdm2020", "fig1a", "loss_perturbation")  # eps in {1, 10}, delta 0
    first = c.cells
    df = run_series(tiny_config, "vdm2020", "fig2a", "loss_perturbation")  # eps 1, delta 0, every B
    assert c.cells == first  # nothing new: the eps=1 cells (and their tuning) are reused
    # a private-training method does not depend on B: one cell per repetition serves every budget
    per_rep = df.groupby("rep")["value"].nunique()
    assert (per_rep == 1).all() and df["budget"].nunique() == 2


def test_parquet_rows_and_provenance(tiny_config, tmp_path):
    out = tmp_path / "r.parquet"
    run_series(tiny_config, "vdm2020", "fig2b", "prediction_sensitivity", out)
    df = read_results(out)
    for col in ("study", "figure", "series", "method", "dataset_variant", "epsilon", "delta", "budget", "rep",
                "metric", "value", "seed", "runtime_s", "noise_scale", "noise_kind", "composition",
                "accountant", "epsilon_achieved", "tuned_value", "cell_key"):
        assert col in df.columns, col
    assert set(df["dataset_variant"]) == {"substitute:deformed-digits-28x28"}
    assert df["is_substitute"].all()
    assert set(df["composition"]) <= {"standard", "advanced"}
    meta = read_metadata(out)
    assert {"config_hash", "git_revision", "packages", "host"} <= set(meta)
    assert meta["packages"]["numpy"] == np.__version__
    assert not list(tmp_path.glob(".*tmp"))  # atomic write leaves no temporary file


def test_unknown_series_is_rejected(tiny_config):
    with pytest.raises(ValueError, match="not a series"):
        run_series(tiny_config, "vdm2020", "fig1a", "magic")


def test_dpsgd_with_pld_accountant_and_shuffling(tiny_config):
    cfg = copy.deepcopy(tiny_config)
    cfg["studies"]["vdm2020"]["dpsgd"].update(accountant="pld", sampling="shuffle")
    df = run_series(cfg, "vdm2020", "fig1b", "dpsgd")
    assert set(df["accountant"]) == {"pld/pld"} and set(df["sampling"]) == {"shuffle"}
    assert (df["epsilon_achieved"] <= df["epsilon"] + 1e-9).all()
    from dpbench.studies import vdm2020

    assert any("SHUFFLED" in d for d in vdm2020.deviations(cfg["studies"]["vdm2020"], "fig1b"))


def test_workers_are_capped_at_the_groups_and_the_cores(tiny_config, dpbench_log, monkeypatch):
    """``n_jobs: 8`` for a series of fewer groups on fewer cores starts no idle workers (8 workers for 4 groups on 2
    cores before)."""
    import logging
    import re

    import dpbench.runner as R

    monkeypatch.setattr(R.os, "cpu_count", lambda: 2)
    dpbench_log.set_level(logging.INFO, logger="dpbench")
    run_series(tiny_config, "vdm2020", "fig1a", "loss_perturbation", n_jobs=8)
    used = [int(m.group(1)) for r in dpbench_log.records
            for m in [re.search(r"groups to compute with (\d+) worker", r.getMessage())] if m]
    assert used and max(used) <= 2
