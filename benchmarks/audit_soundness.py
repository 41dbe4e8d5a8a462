"""Repeated audits of one method (the study's code path, dpbench.audit.core.run_cell): the firing rate of the
correct implementation and the catch rate of its twins over seeds, with ε̂ and the CPU time per cell.

    python benchmarks/audit_soundness.py METHOD --epsilons 1 4 --seeds 20 [--variants correct noise_x0.5]
        [--trials N] [--out FILE.jsonl]

One line of JSON per cell (appended to --out, or printed); a summary per (ε, variant) at the end. Runs
serially in one thread (the CPU seconds are per cell)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from threadpoolctl import threadpool_limits


def main(argv=None) -> int:
    from dpbench.audit import run_cell, variants
    from dpbench.config import DEFAULT_CONFIG_PATH
    from dpbench.studies import load_config

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("method")
    p.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 4.0])
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--variants", nargs="+", default=None)
    p.add_argument("--trials", type=int, default=None)
    p.add_argument("--config", default=str(DEFAULT_CONFIG_PATH))
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    config = load_config(a.config)
    rows = []
    for e in a.epsilons:
        for v in a.variants or variants(a.method):
            for s in range(a.first_seed, a.first_seed + a.seeds):
                t0 = time.process_time()
                with threadpool_limits(1):
                    r = run_cell(config, a.method, e, v, s, trials=a.trials)
                r["cpu_s"] = time.process_time() - t0
                rows.append(r)
                line = json.dumps({k: r[k] for k in ("method", "claimed_epsilon", "variant", "seed_index", "trials",
                                                     "eps_hat", "eps_lower", "eps_lower_gdp", "eps_pair", "eps_pair_variant",
                                                     "fires", "cpu_s", "pair", "pilot") if k in r})
                if a.out:
                    with open(a.out, "a") as fh:
                        fh.write(line + "\n")
                print(line, flush=True)
    import pandas as pd

    df = pd.DataFrame(rows)
    print(df.groupby(["claimed_epsilon", "variant"], sort=False).agg(
        eps_median=("eps_hat", "median"), eps_min=("eps_hat", "min"), eps_max=("eps_hat", "max"),
        cp_median=("eps_lower", "median"), gdp_median=("eps_lower_gdp", "median"),
        fired=("fires", "sum"), seeds=("fires", "size"), cpu_s=("cpu_s", "mean")).to_string(), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
