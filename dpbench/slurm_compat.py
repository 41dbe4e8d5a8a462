"""Compatibility with snakemake-executor-plugin-slurm: a job cancelled with ``scancel`` must fail, not hang.

``sacct --format=State`` reports a cancelled job as ``CANCELLED by <uid>`` (SLURM appends who cancelled it). The
plugin (checked on 2.8.0, the newest release at the time of writing) compares the state string with its list of
failure states exactly, so ``"CANCELLED by 0"`` is neither a failure nor a success: Snakemake polls it forever,
the profile's ``retries`` never fires, and the run has to be killed. The old cookiecutter SLURM profile had the
same bug and fixed it by reading the first word of the state (Snakemake-Profiles/slurm pull request 22).

:func:`install` wraps the plugin's status query so that every state is reduced to its first word before the
plugin looks at it (``CANCELLED by 0`` → ``CANCELLED``, ``COMPLETED`` unchanged). The Snakefile calls it in the
main Snakemake process; it does nothing when the plugin is not loaded (any other executor) and is idempotent.
Remove it once the plugin matches the state's first word itself.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

PLUGIN_MODULE = "snakemake_executor_plugin_slurm"
_MARK = "_dpbench_state_normalised"


def normalise_state(state: str) -> str:
    """A SLURM job state reduced to its keyword: ``"CANCELLED by 1000"`` → ``"CANCELLED"``; ``""`` unchanged."""
    words = str(state).split()
    return words[0].rstrip("+") if words else str(state)


def normalise_states(status_of_jobs: dict[str, str] | None) -> dict[str, str] | None:
    """Every state of a ``{job id: state}`` map (the plugin's query result) reduced by :func:`normalise_state`."""
    if status_of_jobs is None:
        return None
    return {job: normalise_state(state) for job, state in status_of_jobs.items()}


def install(module: Any | None = None) -> bool:
    """Wrap ``module.query_job_status`` (default: the loaded SLURM plugin) to normalise the states it returns.

    Returns True when the wrapper is in place (newly or already), False when there is nothing to patch (the
    plugin is not loaded, or a version without ``query_job_status``).
    """
    if module is None:
        module = sys.modules.get(PLUGIN_MODULE)
        if module is None:
            return False
    query = getattr(module, "query_job_status", None)
    if query is None:
        return False
    if getattr(query, _MARK, False):
        return True

    @functools.wraps(query)
    async def query_job_status(*args, **kwargs):
        status_of_jobs, duration = await query(*args, **kwargs)
        return normalise_states(status_of_jobs), duration

    setattr(query_job_status, _MARK, True)
    module.query_job_status = query_job_status
    return True
