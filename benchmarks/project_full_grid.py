"""Project the cost of the full default grid from a run on a fraction of the repetitions.

Usage: python benchmarks/project_full_grid.py RESULTS_DIR CACHE_DIR [--target-reps 100] [--workers 2]

Reads the result Parquet files (final cells, with their cell keys) and every cell record in the cache
(final + tuning cells, each with the CPU-side runtime of its group divided over its cells). Tuning cells do
not depend on the number of repetitions (cross_validation.repetitions is fixed); final cells scale with
target/measured repetitions, except DP-SGD whose repetitions run in fixed blocks of 10 (a block costs the
same whether 5 or 10 of its runs are used). A model fitted once for the final cells (model / prediction
sensitivity) is counted as if it recurred per repetition, so those lines are upper bounds. Prints cost per series and cell kind, and the projected wall time.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from dpbench.methods.dpsgd import REP_BLOCK


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("cache")
    ap.add_argument("--target-reps", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    df = pd.concat([pd.read_parquet(p) for p in Path(a.results).rglob("fig*/*.parquet")], ignore_index=True)
    cells, unknown = {}, 0
    for p in Path(a.cache, "cells").rglob("*.json"):
        rt = json.loads(p.read_text()).get("runtime_s")
        if rt is None:  # a record cached before every record carried its runtime: not counted, reported
            unknown += 1
            continue
        cells[p.stem] = float(rt)
    if "cell_key" not in df:  # studies whose rows have no per-cell key (e.g. one unit of work per record)
        df = df.assign(cell_key=pd.NA)
    df = df.dropna(subset=["cell_key"])
    final_keys = set(df["cell_key"])
    reps = int(df["rep"].max()) + 1 if len(df) and "rep" in df else 1
    rows = []
    for method, g in df.drop_duplicates("cell_key").groupby("method"):
        cost = sum(cells.get(k, 0.0) for k in g["cell_key"])
        scale = a.target_reps / reps
        if method == "dpsgd":  # blocks of REP_BLOCK runs: the measured block cost recurs target/REP_BLOCK times
            scale = (a.target_reps / REP_BLOCK) / -(-reps // REP_BLOCK)
        rows.append({"method": method, "final_cells": len(g), "final_cpu_s": cost, "scale": scale,
                     "projected_final_cpu_s": cost * scale})
    out = pd.DataFrame(rows, columns=["method", "final_cells", "final_cpu_s", "scale", "projected_final_cpu_s"])
    tuning = sum(v for k, v in cells.items() if k not in final_keys)
    print(f"measured repetitions: {reps}; tuning and other cached records: {len(set(cells) - final_keys)} costing "
          f"{tuning:.0f} CPU-s")
    if unknown:
        print(f"{unknown} cached record(s) carry no runtime_s (cached by an older version): not counted")
    print(out.to_string(index=False))
    total = tuning + out["projected_final_cpu_s"].sum()
    print(f"projected total for {a.target_reps} repetitions: {total:.0f} CPU-s = {total / a.workers / 3600:.2f} h "
          f"wall on {a.workers} workers (plus ~3 s start-up per Snakemake job)")


if __name__ == "__main__":
    main()
