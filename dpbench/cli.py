"""``dpbench`` command line: list figures, validate a config, summarise result files.

    dpbench figures [--configfile config/smoke.yaml]   figures, their Snakemake targets and series
    dpbench check-config [--configfile FILE ...]       validate (exit 2 with the offending key)
    dpbench summary results/vdm2020/fig1a/dpsgd.parquet   mean ± std per series and x, plus provenance
    dpbench run vdm2020 fig1a loss_perturbation [--out FILE] [--jobs N]   one series without Snakemake
    dpbench plan [--configfile FILE ...] [--cores N]  jobs, cells, projected CPU-hours and wall time of a run
    dpbench audit METHOD [--epsilon E] [--trials N]    white-box privacy audit of one method and its broken twins
"""

from __future__ import annotations

import argparse
import json
import sys

from dpbench.config import DEFAULT_CONFIG_PATH, ConfigError, load_config


def _config(args) -> dict:
    return load_config(DEFAULT_CONFIG_PATH, *(args.configfile or []))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dpbench", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("figures", "check-config", "run", "plan"):
        p = sub.add_parser(name)
        p.add_argument("--configfile", action="append", help="config files merged over config.yaml")
    sub.choices["run"].add_argument("study")
    sub.choices["run"].add_argument("figure")
    sub.choices["run"].add_argument("series")
    sub.choices["run"].add_argument("--out")
    sub.choices["run"].add_argument("--jobs", type=int, default=1)
    sub.choices["plan"].add_argument("--cores", type=int, default=None, help="cores to project on (default: all)")
    p = sub.add_parser("summary")
    p.add_argument("files", nargs="+")
    p = sub.add_parser("audit", help="white-box privacy audit of one method (dpbench.audit) and its broken twins")
    p.add_argument("method", help="an audited method, or 'list'")
    p.add_argument("--epsilon", type=float, action="append", help="claimed epsilon (repeatable; default: config)")
    p.add_argument("--trials", type=int, default=None, help="releases per side (default: config)")
    p.add_argument("--no-twins", action="store_true", help="audit the correct implementation only")
    p.add_argument("--seed-index", type=int, default=0)
    p.add_argument("--configfile", action="append", help="config files merged over config.yaml")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "figures":
            from dpbench import workflow as W
            from dpbench.studies import STUDIES

            config = _config(args)
            for s, f in W.figures(config):
                spec = STUDIES[s].figure(f)
                series = STUDIES[s].series(config["studies"][s], f)
                print(f"{s}/{f}\t{config['figures_dir']}/{s}/{f}.png\t{spec.title}\tseries: {', '.join(series)}")
        elif args.cmd == "plan":
            import os

            from dpbench.plan import report

            print(report(_config(args), args.cores or os.cpu_count() or 1))
        elif args.cmd == "check-config":
            _config(args)
            print("config OK")
        elif args.cmd == "run":
            from dpbench.config import check_writable
            from dpbench.runner import run_series

            config = _config(args)
            check_writable(config)
            df = run_series(config, args.study, args.figure, args.series, args.out, n_jobs=args.jobs)
            print(df.groupby("x")["value"].agg(["mean", "std", "count"]).to_string())
        elif args.cmd == "audit":
            from dpbench.audit import REGISTRY, run_cell, variants

            if args.method == "list":
                for name, m in REGISTRY.items():
                    print(f"{name}\t{m.label}\ttwins: {', '.join(m.twins)}")
                return 0
            config = _config(args)
            if args.method not in REGISTRY:
                raise ValueError(f"unknown audit method {args.method!r}; known: {sorted(REGISTRY)}")
            epsilons = args.epsilon or config["studies"]["audit"]["epsilons"]
            vs = ("correct",) if args.no_twins else variants(args.method)
            print("method\tclaimed_eps\tvariant\teps_lower\teps_pair\ttrials\tverdict\truntime_s")
            for e in epsilons:
                for v in vs:
                    r = run_cell(config, args.method, e, v, args.seed_index, args.trials)
                    verdict = (("PRIVACY BUG" if r["fires"] else "ok") if v == "correct"
                               else ("caught" if r["fires"] else "NOT caught"))
                    print(f"{args.method}\t{e:g}\t{v}\t{r['eps_lower']:.3f}\t{r['eps_pair']:.3f}\t{r['trials']}"
                          f"\t{verdict}\t{r['runtime_s']:.1f}", flush=True)
        elif args.cmd == "summary":
            import pandas as pd

            from dpbench.results import read_metadata, read_results, summarise

            pd.set_option("display.width", 200)
            df = read_results(*args.files)
            print(summarise(df).to_string(index=False))
            for f in args.files:
                meta = read_metadata(f)
                if meta:
                    print(f"\n{f}: config {meta.get('config_hash')}, git {meta.get('git_revision')}, "
                          f"created {meta.get('created')} on {meta.get('host')}")
                    print("  packages: " + json.dumps(meta.get("packages", {})))
    except (ConfigError, ValueError, OSError) as exc:  # OSError: e.g. a folder that became unwritable
        print(f"dpbench: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
