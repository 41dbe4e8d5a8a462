"""A job stopped by SIGTERM or Ctrl-C (SIGINT to its whole process group) exits at once with 128 + signal, prints one
line (no traceback, none from its workers) and leaves no joblib worker running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    import dpbench.workflow as W
    from dpbench import jobs
    from dpbench.parallel import run_units

    PIDS = Path(sys.argv[1])

    def slow(i):
        (PIDS / f"{os.getpid()}.{i}").write_text("")
        time.sleep(120)
        return i

    def fake_dataset(config, study, out, log):
        run_units(slow, [(i,) for i in range(4)], n_jobs=2, label="slow")

    W.job_dataset = fake_dataset
    jobs.main([sys.argv[2], "dataset", "toy", str(PIDS / "out.json"), str(PIDS / "log.txt")])
""")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return "zombie" not in fh.read()
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT-group"])
def test_stopped_job_exits_promptly_without_orphans(tmp_path: Path, how: str):
    (tmp_path / "config.json").write_text(json.dumps({"results_dir": str(tmp_path)}))
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path), str(tmp_path / "config.json")],
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("*.[0-9]"))) < 2:   # both workers are inside a task
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "the workers never started"
        time.sleep(0.2)
    workers = {int(p.name.split(".")[0]) for p in tmp_path.glob("*.[0-9]")}
    assert proc.pid not in workers and len(workers) == 2
    t0 = time.monotonic()
    if how == "SIGTERM":
        proc.send_signal(signal.SIGTERM)
        expected = 128 + signal.SIGTERM
    else:   # Ctrl-C in a terminal: SIGINT to the job and its workers
        os.killpg(proc.pid, signal.SIGINT)
        expected = 128 + signal.SIGINT
    _, err = proc.communicate(timeout=60)
    assert time.monotonic() - t0 < 30, "the job did not stop promptly"
    assert proc.returncode == expected, err
    name = "SIGTERM" if how == "SIGTERM" else "SIGINT"
    assert err.count(f"stopped by {name}") == 1, err
    assert "Traceback" not in err, err
    for _ in range(50):
        if not any(_alive(p) for p in workers):
            break
        time.sleep(0.1)
    assert not any(_alive(p) for p in workers), f"orphaned workers: {[p for p in workers if _alive(p)]}"
