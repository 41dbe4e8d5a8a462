"""The anchor checks (claims) of a study on the figures of it that a results folder holds — for a rerun of some
figures (``benchmarks/default_grid.sh`` with ``ONLY_FIRST=1``), whose Snakemake run has no anchors job (that job
needs every figure of the study). Writes ``RESULTS/STUDY/anchors.parquet`` (and ``anchors.html``) with the same
code as the workflow's anchors job (:func:`dpbench.report.run_anchor_checks`); each study's checks skip the
claims whose figures are absent. Then merge the rerun into a reference:

    python benchmarks/figure_claims.py ~/dpbench-grid5/results vdm2020 --configfile ~/dpbench-grid5/paths.yaml
    dpbench reference ~/dpbench-grid5/results docs/reference/default --figures ~/dpbench-grid5/figures --merge \\
        --note "…"

(``--merge`` replaces the claims about the rerun figures and keeps the study's others.) Run it with the code
of the run (the grid's frozen clone first on PYTHONPATH), so the claims are that revision's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="the results folder (results/ of a run)")
    ap.add_argument("study")
    ap.add_argument("--configfile", action="append", default=[], help="config files merged over config.yaml")
    args = ap.parse_args(argv)
    from dpbench.config import DEFAULT_CONFIG_PATH
    from dpbench.reference import result_files
    from dpbench.report import run_anchor_checks, summary_line
    from dpbench.studies import load_config

    config = load_config(DEFAULT_CONFIG_PATH, *args.configfile)
    root = Path(args.results) / args.study
    files = {fig: fs for (study, fig), fs in result_files(Path(args.results)).items() if study == args.study}
    if not files:
        print(f"no result files under {root}/<figure>/", file=sys.stderr)
        return 2
    figures = sorted(files)
    inputs = [p for fig in figures for p in files[fig]]
    checks = run_anchor_checks(config, args.study, [str(p) for p in inputs], root / "anchors.parquet",
                               root / "anchors.html")
    print(f"{args.study}: figures {', '.join(figures)}: {summary_line(checks)} -> {root / 'anchors.parquet'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
