"""Run independent units of work (training units, cells) serially or in joblib processes, with progress logs.

Every unit runs with BLAS limited to one thread, whether the units run serially or in parallel, so a unit's
floating-point result does not depend on the number of workers (and workers × BLAS threads ≤ cores).
"""

from __future__ import annotations

import logging
import time
from typing import Callable, Sequence

log = logging.getLogger(__name__)


def _call_limited(fn: Callable, args: tuple):
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        return fn(*args)


def run_units(fn: Callable, jobs: Sequence[tuple], n_jobs: int = 1, label: str = "") -> list:
    """``[fn(*args) for args in jobs]`` in order, in ``n_jobs`` joblib processes when ``n_jobs > 1``. Logs
    ``label: k/N units (elapsed, ETA)`` at INFO about every 10% of the units or 30 s, whichever comes first."""
    jobs = list(jobs)
    total = len(jobs)
    if n_jobs > 1 and total > 1:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=min(n_jobs, total), return_as="generator")(
            delayed(_call_limited)(fn, tuple(a)) for a in jobs)
    else:
        results = (_call_limited(fn, tuple(a)) for a in jobs)
    out, t0, last = [], time.perf_counter(), 0.0
    step = max(1, total // 10)
    for k, r in enumerate(results, 1):
        out.append(r)
        now = time.perf_counter() - t0
        if label and total > 1 and (k % step == 0 or now - last >= 30 or k == total):
            last = now
            eta = now / k * (total - k)
            log.info("%s: %d/%d units done (%.0fs elapsed, ~%.0fs left)", label, k, total, now, eta)
    return out


def release_workers(kill: bool = False) -> None:
    """Shut down joblib's reusable worker processes, if any, and wait for them: their CPU time then counts in
    this process's ``RUSAGE_CHILDREN`` (a job measures its whole cost, :func:`dpbench.results.process_cost`).
    ``kill``: terminate workers in the middle of a task (a job that is stopped leaves no worker behind).
    The next parallel call starts new workers."""
    try:
        from joblib.externals.loky import reusable_executor
    except ImportError:  # pragma: no cover - joblib without loky
        return
    executor = getattr(reusable_executor, "_executor", None)
    if executor is not None:
        executor.shutdown(wait=True, kill_workers=kill)
