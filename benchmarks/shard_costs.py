"""Projected vs measured CPU per job of a finished (or partly finished) run: every shard file the run wrote
(its ``job_cpu_s``, user + system CPU of the job and its workers) beside the plan's projection for that shard
(:func:`dpbench.plan.dag`, the cost model of ``dpbench/costs.py``), summed per series.

    python benchmarks/shard_costs.py RESULTS_DIR [--configfile paths.yaml ...] [--study vdm2020] [--figure fig4]

The projection is the current code's; the shards must have been cut by the same sharding (same config).
"""

from __future__ import annotations

import argparse
import os
from collections import defaultdict

from dpbench.plan import dag
from dpbench.results import read_metadata
from dpbench.studies import load_config


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("--configfile", action="append", default=[])
    ap.add_argument("--study")
    ap.add_argument("--figure")
    a = ap.parse_args(argv)
    config = load_config(*(["config.yaml"] + a.configfile)) if a.configfile else load_config()
    config["results_dir"] = a.results.rstrip("/")
    per = defaultdict(lambda: [0.0, 0.0, 0, 0])   # series -> projected, measured, shards measured, shards
    for j in dag(config):
        if not j.output or "/shards/" not in j.output:
            continue
        st, fig, series = j.name.split("/")[:3]
        if (a.study and st != a.study) or (a.figure and fig != a.figure):
            continue
        row = per[(st, fig, series)]
        row[3] += 1
        if os.path.exists(j.output):
            c = read_metadata(j.output).get("job_cpu_s")
            if c is not None:
                row[0] += j.cpu_s
                row[1] += float(c)
                row[2] += 1
    print(f"{'series':44s} {'shards':>9s} {'plan CPU-s':>11s} {'measured':>10s} {'ratio':>6s}")
    tp = tm = 0.0
    for (st, fig, series), (p, m, k, n) in sorted(per.items()):
        if k:
            tp, tm = tp + p, tm + m
            print(f"{st + '/' + fig + '/' + series:44s} {k:4d}/{n:<4d} {p:11.0f} {m:10.0f} {m / p:6.2f}")
    if tp:
        print(f"{'measured shards, total':44s} {'':9s} {tp:11.0f} {tm:10.0f} {tm / tp:6.2f}")


if __name__ == "__main__":
    main()
