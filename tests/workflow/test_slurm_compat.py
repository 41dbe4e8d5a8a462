"""The SLURM plugin's status query normalised: a job that sacct reports as ``CANCELLED by <uid>`` is a failure.

The plugin (snakemake-executor-plugin-slurm <= 2.8.0) tests ``status in fail_stati`` with the exact string; the
fake module below reproduces its status query's return shape ({job id: state}, duration) and that decision.
The real plugin is exercised by ``tests/cluster/slurm_e2e.sh`` (a job cancelled with scancel is retried).
"""

import asyncio
import sys
import types

from dpbench import slurm_compat

FAIL_STATI = ("BOOT_FAIL", "CANCELLED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "TIMEOUT", "ERROR")


def _fake_plugin(states):
    mod = types.ModuleType("fake_slurm_plugin")

    async def query_job_status(command, logger):
        return dict(states), 0.01

    mod.query_job_status = query_job_status
    return mod


def _verdicts(mod):
    """What the plugin's check_active_jobs would do with each job: success, error or keep polling."""
    states, _ = asyncio.run(mod.query_job_status("sacct ...", None))
    out = {}
    for job, s in states.items():
        out[job] = "success" if s == "COMPLETED" else "error" if s in FAIL_STATI else "poll"
    return out


def test_cancelled_by_uid_is_a_failure_after_install():
    states = {"11": "CANCELLED by 0", "12": "COMPLETED", "13": "RUNNING", "14": "FAILED", "15": "CANCELLED by 1000"}
    mod = _fake_plugin(states)
    before = _verdicts(mod)
    assert before["11"] == "poll" and before["15"] == "poll"  # the bug: polled forever
    assert slurm_compat.install(mod) is True
    after = _verdicts(mod)
    assert after == {"11": "error", "12": "success", "13": "poll", "14": "error", "15": "error"}


def test_install_is_idempotent_and_keeps_failed_queries():
    mod = _fake_plugin({"1": "PENDING"})
    slurm_compat.install(mod)
    first = mod.query_job_status
    assert slurm_compat.install(mod) is True and mod.query_job_status is first

    async def failing(command, logger):
        return None, None

    bare = types.ModuleType("m")
    bare.query_job_status = failing
    slurm_compat.install(bare)
    assert asyncio.run(bare.query_job_status("x", None)) == (None, None)


def test_no_plugin_no_patch(monkeypatch):
    monkeypatch.delitem(sys.modules, slurm_compat.PLUGIN_MODULE, raising=False)
    assert slurm_compat.install() is False
    assert slurm_compat.install(types.ModuleType("without_query")) is False


def test_normalise_state():
    assert slurm_compat.normalise_state("CANCELLED by 0") == "CANCELLED"
    assert slurm_compat.normalise_state("CANCELLED+") == "CANCELLED"
    assert slurm_compat.normalise_state("COMPLETED") == "COMPLETED"
    assert slurm_compat.normalise_state("") == ""


def test_real_plugin_status_query_normalised():
    """The installed plugin's own status query (its sacct-output parser, fed by ``printf``) after install():
    the state of a cancelled job reaches the plugin as ``CANCELLED``, one of its failure states. Skipped where
    the plugin is not installed (``pip install -e '.[slurm]'``)."""
    import logging

    import pytest

    plugin = pytest.importorskip(slurm_compat.PLUGIN_MODULE)
    orig = getattr(plugin.query_job_status, "__wrapped__", plugin.query_job_status)
    cmd, log = "printf '51|CANCELLED by 0\\n52|COMPLETED\\n'", logging.getLogger("t")
    saved = plugin.query_job_status
    try:
        plugin.query_job_status = orig
        assert asyncio.run(orig(cmd, log))[0] == {"51": "CANCELLED by 0", "52": "COMPLETED"}
        assert slurm_compat.install() is True and plugin.query_job_status is not orig
        assert asyncio.run(plugin.query_job_status(cmd, log))[0] == {"51": "CANCELLED", "52": "COMPLETED"}
    finally:
        plugin.query_job_status = saved


def test_projection_cores_of_a_cluster_run():
    """A cluster run without --cores: the projection uses --jobs × --max-threads instead of failing (it printed
    "no projection for this run (WorkflowError: ... --cores N ...)" under the SLURM profile)."""
    from dpbench.workflow import _run_cores

    class Local:
        cores = 2

    class Cluster:
        resource_settings = types.SimpleNamespace(nodes=100, max_threads=8)

        @property
        def cores(self):
            raise RuntimeError("Workflow requires a total number of cores to be defined")

    class Unknown(Cluster):
        resource_settings = types.SimpleNamespace(nodes=None, max_threads=None)

    assert _run_cores(Local()) == 2
    assert _run_cores(Cluster()) == 800
    assert _run_cores(Unknown()) is None
