"""Single-core cost of one representative cell of every kind in the vdm2020 default grid.

Each cell is computed in this process (loss perturbation: after an untimed cell that trains the shared
non-private warm start, so the time is the marginal cost of one more cell) with BLAS limited to one thread (what a joblib worker does), in a
fresh cache so nothing is reused, at the default settings of config.yaml. Prints one JSON line per cell kind;
benchmarks/project_vdm2020.py combines them with the cell counts of the default grid.

    python benchmarks/vdm2020_unit_costs.py --data data --cache results/unit-costs [--only lp_54k ...]
"""

from __future__ import annotations

import argparse
import json
import shutil
import time

from threadpoolctl import threadpool_limits

from dpbench.config import DEFAULT_CONFIG_PATH
from dpbench.studies import load_config
from dpbench.methods import Context
from dpbench.store import Store
from dpbench.studies import vdm2020

# kind -> (method, problem overrides, method overrides, tuned value, epsilon, delta, repetitions in one group)
KINDS = {
    "lp_54k": ("loss_perturbation", {}, {}, 1e-4, 1.0, 0.0, 1),
    "lp_54k_gauss": ("loss_perturbation", {}, {}, 1e-4, 1.0, 1e-5, 1),
    "np_fit_54k": ("non_private", {}, {}, 1e-4, 1.0, 0.0, 1),
    "subsagg_T256_54k": ("subsample_aggregate", {}, {}, None, 1.0, 0.0, 1),
    "subsagg_T2048_54k": ("subsample_aggregate", {}, {"n_models": 2048}, None, 1.0, 0.0, 1),
    "subsagg_T8_54k": ("subsample_aggregate", {}, {"n_models": 8}, None, 1.0, 0.0, 1),
    # the rest of Fig. 6b's T axis
    **{f"subsagg_T{t}_54k": ("subsample_aggregate", {}, {"n_models": t}, None, 1.0, 0.0, 1)
       for t in (16, 32, 64, 128, 512, 1024)},
    "dpsgd_block10_54k": ("dpsgd", {}, {}, 2e-3, 1.0, 1e-5, 10),
    # Fig. 6a's x axis: the cost of a loss perturbation cell against the L2 weight (conditioning: more L-BFGS steps)
    **{f"lp_54k_l2_{lam:g}": ("loss_perturbation", {}, {}, lam, 1.0, 0.0, 1) for lam in (1e-5, 1e-3, 1e-2, 1e-1, 5e-1)},
    "lp_N1e4": ("loss_perturbation", {"n_train": 10_000}, {}, 1e-4, 1.0, 0.0, 1),
    "lp_N1e5": ("loss_perturbation", {"n_train": 100_000}, {}, 1e-4, 1.0, 0.0, 1),
    "subsagg_N1e5": ("subsample_aggregate", {"n_train": 100_000}, {}, None, 1.0, 0.0, 1),
    "lp_D50": ("loss_perturbation", {"pca_dim": 50}, {}, 1e-4, 1.0, 0.0, 1),
    "lp_C5": ("loss_perturbation", {"n_classes": 5}, {}, 1e-4, 1.0, 0.0, 1),
    "mlp_dpsgd_run": ("dpsgd_mlp", {}, {}, 2e-3, 1.0, 1e-5, 1),
    "mlp_subsagg_rep": ("subsample_aggregate_mlp", {}, {}, None, 1.0, 1e-5, 1),
    "mlp_non_private": ("non_private_mlp", {}, {}, None, 1.0, 1e-5, 1),
}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data")
    ap.add_argument("--cache", required=True)
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args(argv)
    config = load_config(DEFAULT_CONFIG_PATH, overrides={"cache_dir": a.cache, "data": {
        "cache_dir": a.data, "mnist_source": "substitute"}})
    cfg = config["studies"]["vdm2020"]
    for kind, (name, pover, mover, tuned, eps, delta, reps) in KINDS.items():
        if a.only and kind not in a.only:
            continue
        problem = vdm2020.problem(config, cfg, "test", **pover)  # prepared once (not timed)
        method = vdm2020.make_method(cfg, name, **mover)
        cells = [method.make_cell(problem, tuned, eps, delta, 100, r) for r in range(reps)]
        fresh = f"{a.cache}/run-{kind}"
        shutil.rmtree(fresh, ignore_errors=True)
        ctx = Context(store=Store(fresh), seed=config["seed"])
        with threadpool_limits(1):
            if name == "loss_perturbation":  # its warm start (the non-private fit) is shared by many cells:
                method.run_group(problem, [method.make_cell(problem, tuned, eps, delta, 100, 999)], ctx)  # untimed
            t0, c0 = time.perf_counter(), time.process_time()
            recs = method.run_group(problem, cells, ctx)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        print(json.dumps({"kind": kind, "n_train": problem.n_train, "dim": problem.dim, "cells": reps,
                          "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                          "accuracy": round(recs[0]["accuracy"], 4)}), flush=True)


if __name__ == "__main__":
    main()
