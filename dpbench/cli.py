"""``dpbench`` command line: list figures, validate a config, summarise result files.

    dpbench figures [--configfile config/smoke.yaml]   figures, their Snakemake targets and series
    dpbench check-config [--configfile FILE ...]       validate (exit 2 with the offending key)
    dpbench summary results/vdm2020/fig1a/dpsgd.parquet   mean ± std per series and x, plus provenance
    dpbench run vdm2020 fig1a loss_perturbation [--out FILE] [--jobs N]   one series without Snakemake
    dpbench plan [--configfile FILE ...] [--cores N]  jobs, cells, projected CPU-hours and wall time of a run
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
