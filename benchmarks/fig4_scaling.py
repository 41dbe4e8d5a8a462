"""Measured CPU cost of the Fig. 4 units at growing N (the projection's N scaling), one BLAS thread.

For each N: the non-private L2 fit (the artefact behind model / prediction sensitivity and loss perturbation's
warm start), one lockstep group of loss-perturbation cells (``--reps`` repetitions at (ε, δ) = (1, 0), one
effective L2 — the unit a shard runs; its warm start and curvature, cached artefacts shared by all groups of the
L2, are timed apart as ``shared_cpu_s``), for each λ of ``--lam``, and one repetition of subsample-and-aggregate
(T = 256). Writes one JSON line per unit (``cpu_s`` from ``time.process_time``):

    python benchmarks/fig4_scaling.py --cache /tmp/fig4cache --data data --n 60000 100000 1000000 > units.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from dpbench.config import DEFAULT_CONFIG_PATH
from dpbench.learn.softmax import blas_thread_limit
from dpbench.methods import Context
from dpbench.methods.non_private import curvature_at_zero, softmax_curvature_at_fit, trained_softmax
from dpbench.store import Store
from dpbench.studies import load_config, vdm2020


def timed(fn):
    c, w = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c, time.perf_counter() - w


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", required=True)
    ap.add_argument("--data", default="data")
    ap.add_argument("--n", type=int, nargs="+", default=[60_000, 100_000, 1_000_000])
    ap.add_argument("--lam", type=float, nargs="+", default=[1e-4], help="λ values (the CV grid: the cost depends on λ)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--units", nargs="*", default=["np_fit", "lp_group", "subsagg_rep"])
    a = ap.parse_args(argv)
    config = load_config(DEFAULT_CONFIG_PATH, overrides={"cache_dir": a.cache, "data": {"cache_dir": a.data}})
    cfg = config["studies"]["vdm2020"]
    ctx = Context(store=Store(a.cache), seed=config["seed"])
    for n in a.n:
        problem, cpu, wall = timed(lambda: vdm2020.problem(config, cfg, "test", n_train=n))
        print(json.dumps({"n": n, "unit": "problem", "cpu_s": cpu, "wall_s": wall}), flush=True)
        with blas_thread_limit(1):
            if "np_fit" in a.units:  # once per problem: the whitening of every non-private fit
                _, cpu, wall = timed(lambda: curvature_at_zero(problem, ctx))
                print(json.dumps({"n": n, "unit": "curvature_at_zero", "cpu_s": cpu, "wall_s": wall}), flush=True)
            for lam in a.lam:
                if "np_fit" in a.units:
                    _, cpu, wall = timed(lambda: trained_softmax(problem, lam, ctx, 0.01, 2000))
                    print(json.dumps({"n": n, "unit": "np_fit", "lam": lam, "cpu_s": cpu, "wall_s": wall}), flush=True)
                if "lp_group" in a.units:
                    m = vdm2020.make_method(cfg, "loss_perturbation")
                    cells = [m.make_cell(problem, lam, 1.0, 0.0, 100, r) for r in range(a.reps)]
                    l2 = cells[0].param["l2_effective"]
                    # the warm start and its curvature are cached artefacts shared by every group of this L2
                    _, cpu_w, _ = timed(lambda: (trained_softmax(problem, l2, ctx, 0.01, 2000),
                                                 softmax_curvature_at_fit(problem, l2, ctx, 0.01, 2000)))
                    recs, cpu, wall = timed(lambda: m.run_group(problem, cells, ctx))
                    print(json.dumps({"n": n, "unit": "lp_group", "lam": lam, "l2": l2, "cells": len(cells),
                                      "cpu_s": cpu, "wall_s": wall, "shared_cpu_s": cpu_w,
                                      "accuracy": [round(r["accuracy"], 4) for r in recs]}), flush=True)
            if "subsagg_rep" in a.units:
                m = vdm2020.make_method(cfg, "subsample_aggregate")
                cells = [m.make_cell(problem, None, 1.0, 0.0, 100, 0)]
                recs, cpu, wall = timed(lambda: m.run_group(problem, cells, ctx))
                print(json.dumps({"n": n, "unit": "subsagg_rep", "T": cells[0].param["n_models"], "cpu_s": cpu,
                                  "wall_s": wall, "accuracy": round(recs[0]["accuracy"], 4)}), flush=True)
    print("done", file=sys.stderr)


if __name__ == "__main__":
    main()
