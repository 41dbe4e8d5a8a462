"""Two runs sharing one cache at once (what two ``dpbench run`` processes do): no corruption, identical
results, and no cell computed twice (the runner's per-group lock makes the second wait and reuse)."""

from __future__ import annotations

import copy
import json
import multiprocessing as mp
from pathlib import Path

import numpy as np


def _run(barrier, out, i, config, counter):
    from dpbench.methods.loss_perturbation import LossPerturbation
    from dpbench.runner import run_series

    real = LossPerturbation.run_group

    def counting(self, problem, cells, ctx):
        with open(counter, "a") as fh:
            fh.write("x" * len(cells))
        return real(self, problem, cells, ctx)

    LossPerturbation.run_group = counting
    barrier.wait()
    try:
        df = run_series(config, "vdm2020", "fig1a", "loss_perturbation", str(Path(config["results_dir"]) / f"r{i}.parquet"))
        out.put(sorted(zip(df["cell_key"], df["metric"], df["value"])))
    except Exception as exc:  # noqa: BLE001
        out.put(f"{type(exc).__name__}: {exc}")


def test_two_runs_share_one_cache(tiny_config, tmp_path):
    config = copy.deepcopy(tiny_config)
    config["cache_dir"] = str(tmp_path / "cache")
    config["results_dir"] = str(tmp_path / "results")
    counter = tmp_path / "computed"
    counter.write_text("")
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_run, args=(barrier, out, i, config, counter)) for i in range(2)]
    for p in procs:
        p.start()
    got = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert all(isinstance(g, list) for g in got), got
    assert got[0] == got[1]
    cells = list((tmp_path / "cache" / "cells").rglob("*.json"))
    for c in cells:
        assert isinstance(json.loads(c.read_text()), dict)
    assert len(counter.read_text()) == len(cells)  # every cell computed exactly once across both processes
    assert not [p for p in (tmp_path / "cache").rglob("*.tmp")]
    assert np.isfinite([v for *_, v in got[0]]).all()
