"""``dpbench`` command line: list figures, validate a config, summarise result files.

    dpbench figures [--configfile config/smoke.yaml]   figures, their Snakemake targets and series
    dpbench check-config [--configfile FILE ...]       validate (exit 2 with the offending key)
    dpbench summary results/vdm2020/fig1a/dpsgd.parquet   mean ± std per series and x, plus provenance
    dpbench summary results/vdm2020/anchors.parquet       the anchor checks' verdicts
    dpbench run vdm2020 fig1a loss_perturbation [--out FILE] [--jobs N]   one series without Snakemake
    dpbench plan [--configfile FILE ...] [--cores N]  jobs, cells, projected CPU-hours and wall time of a run
    dpbench audit METHOD [--epsilon E] [--trials N]    white-box privacy audit of one method and its broken twins
    dpbench audit --mechanism my.py:release --epsilon 1   audit your own mechanism (exit 1 on a privacy bug)
    dpbench compare RUN [REFERENCE]                    a run's figure points and claims against a reference run
    dpbench reference RESULTS OUT [--figures DIR]      write a run's reference summaries (docs/reference/<name>)
    dpbench check-plugin my_method.py [--configfile F]  run a method plugin through every hook the harness calls
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from dpbench.config import DEFAULT_CONFIG_PATH, ConfigError
from dpbench.studies import load_config


def _config(args) -> dict:
    return load_config(DEFAULT_CONFIG_PATH, *(args.configfile or []))


#: subcommand -> one-line description (shown by ``dpbench --help`` and ``dpbench <cmd> --help``)
COMMANDS = {
    "figures": "list every figure of the config: Snakemake target, title and series",
    "check-config": "validate config files (exit 2 naming the offending key)",
    "run": "compute one series of one figure without Snakemake",
    "plan": "jobs, cells, projected CPU-hours and wall time of a run",
    "summary": "summarise result Parquet files (mean ± std per series and x) or print the verdicts of an "
               "anchors.parquet",
    "audit": "white-box privacy audit of one method (dpbench.audit) and its broken twins",
    "compare": "compare a run with a reference: every figure point (difference in standard errors) and every "
               "claim's verdict; exit 1 when one differs",
    "check-plugin": "run a method plugin (a .py file or module) through every hook the harness calls on a tiny "
                    "problem and report each contract violation in one line (exit 1 if any)",
    "reference": "write the reference summaries of a run (per-figure mean ± standard error CSVs, the claims, "
                 "provenance, optionally compact PNGs)",
}


def _directory_option(p) -> None:
    p.add_argument("-d", "--directory", metavar="DIR",
                   help="work in DIR, as `snakemake -d DIR` does: the config's relative paths (results, data, cache, "
                        "plugin files) resolve from DIR; --configfile paths are taken from the current folder")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dpbench", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Run `dpbench <command> --help` for a command's options. The workflow "
                                            "itself runs with `snakemake --cores N` (see README).")
    sub = parser.add_subparsers(dest="cmd", required=True, metavar="<command>", title="commands")
    for name in ("figures", "check-config", "run", "plan"):
        p = sub.add_parser(name, help=COMMANDS[name], description=COMMANDS[name])
        p.add_argument("--configfile", action="append", help="config files merged over config.yaml")
        _directory_option(p)
    sub.choices["run"].add_argument("study", help="a study, e.g. vdm2020 (`dpbench figures` lists them)")
    sub.choices["run"].add_argument("figure", help="one of the study's figures, e.g. fig1a")
    sub.choices["run"].add_argument("series", help="one of the figure's series (a method, e.g. loss_perturbation)")
    sub.choices["run"].add_argument("--out", help="write the series' rows to this Parquet file (default: only print "
                                                  "the summary)")
    sub.choices["run"].add_argument("--jobs", type=int, default=1,
                                    help="worker processes (capped at the series' groups and the cores; default 1)")
    sub.choices["plan"].add_argument("--cores", type=int, default=None, help="cores to project on (default: all)")
    sub.choices["plan"].add_argument("--measured", metavar="RESULTS",
                                     help="a results folder of a finished run: print each figure's measured CPU "
                                          "(its jobs' job_cpu_s) beside the projection")
    p = sub.add_parser("summary", help=COMMANDS["summary"], description=COMMANDS["summary"])
    p.add_argument("files", nargs="+", help="result Parquet files or folders, or an anchors.parquet")
    p = sub.add_parser("audit", help=COMMANDS["audit"], description=COMMANDS["audit"])
    p.add_argument("method", nargs="?", help="an audited method, or 'list' (or give --mechanism)")
    p.add_argument("--mechanism", metavar="FILE.py:FUNCTION",
                   help="audit your own mechanism: release(dataset, rng) -> output, dataset an (n, d) array "
                        "(docs/studies/audit.md, 'Auditing your own mechanism')")
    p.add_argument("--density", metavar="FILE.py:FUNCTION",
                   help="with --mechanism: log_density(dataset, output), for the exact likelihood-ratio statistic")
    p.add_argument("--delta", type=float, default=0.0, help="with --mechanism: the claimed delta (default 0)")
    p.add_argument("--records", type=int, default=8, help="with --mechanism: records per dataset (default 8)")
    p.add_argument("--dim", type=int, default=1, help="with --mechanism: values per record (default 1)")
    p.add_argument("--lo", type=float, default=0.0, help="with --mechanism: smallest value of a record (default 0)")
    p.add_argument("--hi", type=float, default=1.0, help="with --mechanism: largest value of a record (default 1)")
    p.add_argument("--integer", action="store_true", help="with --mechanism: records are integers in [lo, hi]")
    p.add_argument("--clips", action="store_true",
                   help="with --mechanism: it accepts any record and clips it (out-of-domain records are audited)")
    p.add_argument("--pilot", type=int, default=1000, help="with --mechanism: pilot releases per side and pair")
    p.add_argument("--epsilon", type=float, action="append", help="claimed epsilon (repeatable; default: config)")
    p.add_argument("--trials", type=int, default=None, help="releases per side (default: config)")
    p.add_argument("--no-twins", action="store_true", help="audit the correct implementation only")
    p.add_argument("--seed-index", type=int, default=0, help="which repetition's seed to use (default 0)")
    p.add_argument("--configfile", action="append", help="config files merged over config.yaml")
    _directory_option(p)
    p = sub.add_parser("compare", help=COMMANDS["compare"], description=COMMANDS["compare"],
                       epilog="The threshold and its justification: `python -c 'import dpbench.reference as r; "
                              "help(r)'` or docs/reference/README.md.")
    p.add_argument("run", help="a results folder (e.g. results/) or a reference folder")
    p.add_argument("reference", nargs="?", default=None,
                   help="a reference folder (default: docs/reference/default for a run of config.yaml, "
                        "docs/reference/smoke for a run of config/smoke.yaml, chosen by the run's config hash)")
    p.add_argument("--alpha", type=float, default=None, help="family-wise false-alarm rate (default 0.01)")
    p.add_argument("--csv", help="write every compared point with its z to this CSV")
    p = sub.add_parser("reference", help=COMMANDS["reference"], description=COMMANDS["reference"])
    p.add_argument("results", help="the run's results folder")
    p.add_argument("out", help="the reference folder to write (e.g. docs/reference/smoke)")
    p.add_argument("--figures", help="the run's figures folder: also write its PNGs, downscaled")
    p.add_argument("--note", default="", help="a sentence stored in meta.json (how the run was made)")
    p.add_argument("--merge", action="store_true",
                   help="update the reference in OUT with this run's figures and the claims it checked again or "
                        "that are about them, keeping the rest: a rerun of some figures after a change")
    p = sub.add_parser("check-plugin", help=COMMANDS["check-plugin"], description=COMMANDS["check-plugin"],
                       epilog="The contract it checks: docs/extending.md, 'The contract of a method'.")
    p.add_argument("plugin", help="a .py file (relative to the working folder) or an importable module name")
    p.add_argument("--configfile", action="append",
                   help="config files merged over config.yaml: the method's settings are read from their "
                        "studies.vdm2020 block")
    _directory_option(p)
    args = parser.parse_args(argv)
    if getattr(args, "directory", None):   # as snakemake -d: relative paths of the config resolve from there
        import os

        if not os.path.isdir(args.directory):
            print(f"dpbench: error: -d/--directory {args.directory}: not a folder", file=sys.stderr)
            return 2
        args.configfile = [os.path.abspath(f) for f in args.configfile or []] or None   # given from here
        os.chdir(args.directory)
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

            print(report(_config(args), args.cores or os.cpu_count() or 1, measured=args.measured))
        elif args.cmd == "check-config":
            _config(args)
            print("config OK")
        elif args.cmd == "run":
            from dpbench.config import check_writable
            from dpbench.runner import run_series

            config = _config(args)
            check_writable(config)
            from dpbench.results import summarise

            df = run_series(config, args.study, args.figure, args.series, args.out, n_jobs=args.jobs)
            print(summarise(df).to_string(index=False))
        elif args.cmd == "audit" and args.mechanism:
            from dpbench.audit.user import Domain, audit_mechanism, load_function

            release = load_function(args.mechanism)
            density = load_function(args.density) if args.density else None
            domain = Domain(n=args.records, d=args.dim, lo=args.lo, hi=args.hi, integer=args.integer,
                            clips=args.clips)
            fired = False
            for e in args.epsilon or [1.0]:
                r = audit_mechanism(release, e, args.delta, domain=domain, trials=args.trials or 20_000,
                                    pilot=args.pilot, log_density=density, seed=args.seed_index)
                print(r.line(), flush=True)
                fired |= r.fires
            return 1 if fired else 0
        elif args.cmd == "audit":
            from dpbench.audit import REGISTRY, run_cell, variants
            from dpbench.audit.core import twins

            if not args.method:
                raise ValueError("audit: name a method (dpbench audit list) or give --mechanism FILE.py:FUNCTION")
            if args.method == "list":
                for name, m in REGISTRY.items():
                    print(f"{name}\t{m.label}\ttwins: {', '.join(twins(name))}\tpairs: {', '.join(m.pairs)}")
                return 0
            config = _config(args)
            if args.method not in REGISTRY:
                raise ValueError(f"unknown audit method {args.method!r}; known: {sorted(REGISTRY)}")
            epsilons = args.epsilon or config["studies"]["audit"]["epsilons"]
            vs = ("correct",) if args.no_twins else variants(args.method)
            from types import SimpleNamespace

            from dpbench.studies.audit import not_broken_on_pair, twin_pair_epsilon

            # eps_pair_correct: the audited pair's exact ε at the correct calibration (the most any test can show
            # for the correct method); eps_pair_twin: the twin's own exact ε on that pair where known (else nan)
            print("method\tclaimed_eps\tvariant\teps_hat\teps_lower_cp\teps_lower_gdp\teps_pair_correct"
                  "\teps_pair_twin\ttrials\tpair\tverdict\truntime_s")
            for e in epsilons:
                for v in vs:
                    r = run_cell(config, args.method, e, v, args.seed_index, args.trials)
                    verdict = (("PRIVACY BUG" if r["fires"] else "ok") if v == "correct"
                               else ("caught" if r["fires"] else "NOT caught"))
                    if r["generator_independent"]:
                        verdict += " (release ignores its generator: identical outputs under two generators)"
                    row = SimpleNamespace(**r)
                    own = twin_pair_epsilon(row) if v != "correct" else float("nan")
                    if v != "correct" and not r["fires"] and math.isfinite(not_broken_on_pair(row, e)):
                        verdict += f" (undecided: its ε on this pair is at most {own:.3f} ≤ ε, not broken here)"
                    print(f"{args.method}\t{e:g}\t{v}\t{r['eps_hat']:.3f}\t{r['eps_lower']:.3f}\t{r['eps_lower_gdp']:.3f}"
                          f"\t{r['eps_pair']:.3f}\t{own:.3f}\t{r['trials']}\t{r['pair']}"
                          f"\t{verdict}\t{r['runtime_s']:.1f}", flush=True)
        elif args.cmd == "check-plugin":
            from dpbench.plugincheck import check_plugin

            findings = check_plugin(args.plugin, (lambda: _config(args)) if args.configfile else None)
            for f in findings:
                print(f.line(), flush=True)
            bad = sum(not f.ok for f in findings)
            print(f"{len(findings) - bad} checks passed, {bad} failed")
            return 1 if bad else 0
        elif args.cmd == "summary":
            summary(args.files)
        elif args.cmd == "reference":
            from dpbench.reference import write_reference

            n = write_reference(args.results, args.out, args.figures, note=args.note, merge=args.merge)
            print(f"{args.out}: {n['figures']} figures, {n['points']} points, {n['claims']} claims, "
                  f"{n['pngs']} PNGs" + (f"; unfinished (no PNG), left out: {', '.join(n['skipped'])}"
                                         if n["skipped"] else ""))
        elif args.cmd == "compare":
            from dpbench import reference as R

            ref = args.reference or R.default_reference(args.run)
            c = R.compare(args.run, ref, alpha=R.ALPHA if args.alpha is None else args.alpha)
            if args.csv:
                c.points.to_csv(args.csv, index=False)
            print(R.report_text(c, ref, args.run))
            return 1 if c.failed else 0
    except (ConfigError, ValueError, OSError) as exc:  # OSError: e.g. a folder that became unwritable, a missing file
        print(f"dpbench: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _print_anchors(path) -> None:
    """The verdicts of an anchor-check file (``results/<study>/anchors.parquet``)."""
    import pandas as pd

    from dpbench.report import normalise_checks, summary_line, verdict_text

    checks = normalise_checks(pd.read_parquet(path))
    study = ", ".join(sorted(checks["study"].unique())) if len(checks) else "?"
    print(f"{path}: anchor checks of {study} — {summary_line(checks)}")
    for r in checks.itertuples():
        red = " [reduced grid: indicative only]" if bool(getattr(r, "reduced_grid", False)) else ""
        print(f"  {r.claim:<28} {r.figure:<20} {verdict_text(r)}{red}")
        print(f"      paper: {r.statement}")
        print(f"      measured: {r.measured}")


def summary(files: list[str]) -> None:
    """Result files: mean ± std per series and x, plus provenance; an anchors.parquet: its verdicts; any other
    Parquet file: what it is (its kind and columns) rather than an empty table."""
    from pathlib import Path

    import pandas as pd

    from dpbench.results import read_metadata, read_results, summarise

    pd.set_option("display.width", 200)
    results = []
    for f in files:
        p = Path(f)
        if p.is_file():
            try:
                meta = read_metadata(p)
            except Exception:  # noqa: BLE001 - not Parquet: read_results says so below
                meta = {}
            if meta.get("kind") == "anchor_checks" or (p.name == "anchors.parquet"):
                _print_anchors(p)
                continue
        results.append(f)
    if not results:
        return
    df = read_results(*results)
    if "value" not in df or not len(df):
        print(f"{', '.join(results)}: not result rows (no 'value' column or no rows); columns: "
              f"{', '.join(map(str, df.columns))}")
        return
    print(summarise(df).to_string(index=False))
    for f in results:
        if not Path(f).is_file():
            continue
        meta = read_metadata(f)
        if meta:
            print(f"\n{f}: config {meta.get('config_hash')}, git {meta.get('git_revision')}, "
                  f"created {meta.get('created')} on {meta.get('host')}")
            print("  packages: " + json.dumps(meta.get("packages", {})))


if __name__ == "__main__":
    sys.exit(main())
