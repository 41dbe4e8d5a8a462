"""Projected vs measured CPU per series of a finished (or partly finished) run: the ``job_cpu_s`` of every shard
file the run wrote (user + system CPU of the job and its workers), summed per series, beside the plan's
projection for that series (``dpbench/costs.py`` through :func:`dpbench.shards.plan`, the current code).

    python benchmarks/shard_costs.py RESULTS_DIR [--configfile paths.yaml ...] [--study vdm2020] [--figure fig4]

Per series, not per shard: a run made at another revision may have cut its shards differently (the shard size
follows the cost model), so only the series totals are comparable, and only for a finished series (its
gathered ``RESULTS_DIR/study/figure/series.parquet`` exists); a partial one shows its CPU so far. Cells shared
with an earlier figure (read from the cache) make a later figure cheaper than its projection.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pyarrow.parquet as pq

from dpbench import shards
from dpbench.results import read_metadata
from dpbench.studies import load_config
from dpbench.workflow import figures, series_names


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("--configfile", action="append", default=[])
    ap.add_argument("--study", default="vdm2020")
    ap.add_argument("--figure")
    a = ap.parse_args(argv)
    config = load_config(*(["config.yaml"] + a.configfile))
    print(f"{'series':44s} {'rows/cells':>13s} {'plan CPU-s':>11s} {'measured':>10s} {'ratio':>7s}")
    tp = tm = 0.0
    for st, fig in figures(config):
        if st != a.study or (a.figure and fig != a.figure) or not shards.shardable(config, st):
            continue
        for m in series_names(config, st, fig):
            sp = shards.plan(config, st, fig, m)
            plan, cells = sum(s.cpu_s for s in sp.all), sum(s.cells for s in sp.all)
            files = sorted((Path(a.results) / st / fig / "shards" / m).glob("*.parquet"))
            if not files:
                continue
            cpu = sum(float(read_metadata(f).get("job_cpu_s") or 0.0) for f in files)
            rows = sum(pq.read_metadata(f).num_rows for f in files)
            whole = (Path(a.results) / st / fig / f"{m}.parquet").exists()
            if whole:
                tp, tm = tp + plan, tm + cpu
            print(f"{st + '/' + fig + '/' + m:44s} {rows:6d}/{cells:<6d} {plan:11.0f} {cpu:10.0f} "
                  + (f"{cpu / plan:7.2f}" if whole else f"{'partial':>7s}"))
    if tp:
        print(f"{'complete series, total':44s} {'':13s} {tp:11.0f} {tm:10.0f} {tm / tp:7.2f}")


if __name__ == "__main__":
    main()
