"""The progress of a Snakemake run against its projection: the main process stores the projected CPU-seconds of the
jobs it is about to start (:func:`dpbench.plan.projection_before_run`, from the Snakefile's ``onstart``), and each
job, when it has written its output, appends it to a log and prints how much of the projection is left. Light on
purpose: every job imports it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

PROGRESS_PLAN = "progress-plan.json"   # in results/.jobs/
PROGRESS_LOG = "progress.log"


def _h(s: float) -> str:
    return f"{s / 3600:.2f}"


def cpu_text(s: float) -> str:
    """CPU-seconds as CPU-hours, or CPU-minutes below 0.1 h."""
    return f"{s / 3600:.2f} CPU-hours" if s >= 360 else f"{s / 60:.1f} CPU-min"


def _wall(s: float) -> str:
    return f"{s / 3600:.1f} h" if s >= 5400 else f"{s / 60:.0f} min" if s >= 60 else f"{s:.0f} s"


def write_progress_plan(results_dir, record: dict) -> None:
    """Store the run's projection for the jobs' progress lines (atomic; a new run replaces it and its log)."""
    from dpbench.store import atomic_write_bytes

    folder = Path(results_dir) / ".jobs"
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(folder / PROGRESS_PLAN, json.dumps({**record, "started": time.time()}).encode())
    try:
        os.unlink(folder / PROGRESS_LOG)
    except FileNotFoundError:
        pass


def progress_line(results_dir, output: str) -> str | None:
    """After the job writing ``output`` finished: record it and return "k of n jobs done, ~X of Y CPU-hours left,
    ~Z on C cores" against the run's projection (None outside a projected run or for a job it does not list)."""
    folder = Path(results_dir) / ".jobs"
    try:
        rec = json.loads((folder / PROGRESS_PLAN).read_text())
    except (OSError, ValueError):
        return None
    jobs = rec.get("jobs") or {}
    key = os.path.normpath(output)
    if key not in jobs:
        return None
    fd = os.open(folder / PROGRESS_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o666)
    try:
        os.write(fd, (key + "\n").encode())
    finally:
        os.close(fd)
    done = set((folder / PROGRESS_LOG).read_text().splitlines()) & set(jobs)
    total = sum(jobs.values())
    left = max(0.0, total - sum(jobs[k] for k in done))   # rounding can leave -0.0 after the last job
    cores = max(1, int(rec.get("cores") or 1))
    return (f"dpbench progress: {len(done)} of {len(jobs)} jobs done, ~{cpu_text(left)} of {cpu_text(total)} left, "
            f"~{_wall(left / cores)} on {cores} core(s) (projected)")
