"""The body of every Snakemake job, as a command: ``python -m dpbench.jobs CONFIG_JSON KIND ARG ...``.

The rules are ``shell:`` rules that run this module (:func:`dpbench.workflow.job_shell` writes the command), not
``run:`` blocks: Snakemake executes a ``run:`` block in a new Snakemake process that parses the Snakefile and
builds the DAG again (about 3–5 CPU-seconds per job before any work), whereas this command imports only what the
job needs. ``CONFIG_JSON`` is the configuration the main Snakemake process validated and wrote once
(:func:`dpbench.workflow.job_config`), so a job reads exactly the config the run was checked with.

Each KIND takes fixed positional arguments (as in :data:`KINDS`), then, for the kinds that read files, the input
paths. Every job writes its outputs atomically and copies the ``dpbench`` log into its log file.

Stopping: on SIGINT (Ctrl-C, or Snakemake cancelling its jobs) or SIGTERM a job stops at once, kills its joblib
workers (none is left running), prints one line instead of a traceback and exits with 128 + the signal number.
Every cell, trained model and data chunk it finished is in the cache, so the rerun resumes from there.
"""

from __future__ import annotations

import json
import signal
import sys

#: kind -> (the :mod:`dpbench.workflow` function, its arguments after ``config``). ``threads`` is an integer; a
#: starred name takes the remaining arguments (the job's input paths) as a list.
KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "dataset": ("job_dataset", ("study", "out", "log")),
    "figure_data": ("job_figure_data", ("study", "name", "out", "threads", "log")),
    "series": ("job_series", ("study", "figure", "series", "out", "threads", "log")),
    "series_group": ("job_series_group", ("study", "figure", "out", "threads", "log")),
    "shard": ("job_shard", ("study", "figure", "series", "shard", "out", "threads", "log", "*inputs")),
    "figure": ("job_figure", ("study", "figure", "out", "log", "*inputs")),
    "anchors": ("job_anchors", ("study", "out_parquet", "out_html", "log", "*inputs")),
    "gallery": ("job_gallery", ("study", "anchors", "out_html", "log", "*pngs")),
    "tight_gain": ("job_tight_gain", ("study", "out_png", "out_csv", "log", "*inputs")),
    "privacy_table": ("job_privacy_table", ("out_html", "log")),
    "claims": ("job_claims", ("out_parquet", "out_html", "out_fragment", "out_metadata", "log", "*anchors")),
}


#: the keyword of a job function's output that its progress line reports (every ``job_*`` of dpbench.workflow
#: has one: tests/workflow/test_snakemake.py)
PROGRESS_OUTPUTS = ("out", "out_parquet", "out_html", "out_png")


def parse(argv: list[str]) -> tuple[str, str, dict]:
    """``(config_path, function name, keyword arguments)`` from the command line; ValueError on a wrong count."""
    if len(argv) < 2 or argv[1] not in KINDS:
        raise ValueError(f"usage: python -m dpbench.jobs CONFIG_JSON KIND ARG ...; KIND one of {sorted(KINDS)}, "
                         f"got {argv[1:2]}")
    config_path, kind, args = argv[0], argv[1], argv[2:]
    function, names = KINDS[kind]
    fixed = [n for n in names if not n.startswith("*")]
    rest = [n[1:] for n in names if n.startswith("*")]
    if len(args) < len(fixed) or (not rest and len(args) != len(fixed)):
        raise ValueError(f"dpbench.jobs {kind}: expected arguments {list(names)}, got {args}")
    kwargs: dict = dict(zip(fixed, args))
    if "threads" in kwargs:
        kwargs["threads"] = int(kwargs["threads"])
    if rest:
        kwargs[rest[0]] = args[len(fixed):]
    return config_path, function, kwargs


class JobStopped(BaseException):
    """Raised in the job's main thread by SIGINT / SIGTERM (a BaseException: no ``except Exception`` swallows it)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum, _frame):
    raise JobStopped(signum)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    config_path, function, kwargs = parse(argv)
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, _raise_stopped)
    try:
        with open(config_path) as fh:
            config = json.load(fh)
        from dpbench import workflow
        from dpbench.studies.extensions import activate

        activate(config)  # the config's plugin methods and user datasets, registered in this process too
        getattr(workflow, function)(config, **kwargs)
    except JobStopped as stop:
        for s in (signal.SIGINT, signal.SIGTERM):   # a second signal while cleaning up does not interrupt it
            signal.signal(s, signal.SIG_IGN)
        from dpbench.parallel import release_workers

        release_workers(kill=True)
        name = signal.Signals(stop.signum).name
        print(f"dpbench: job {' '.join(argv[1:5])} stopped by {name}; what it finished is cached and a rerun "
              f"resumes from there", file=sys.stderr, flush=True)
        sys.exit(128 + stop.signum)
    out = next((kwargs[k] for k in PROGRESS_OUTPUTS if k in kwargs), None)
    if out is not None:   # the run's progress against its projection (dpbench.plan.projection_before_run)
        from dpbench.progress import progress_line

        try:
            line = progress_line(config["results_dir"], out)
        except OSError:
            line = None
        if line:
            print(line, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
