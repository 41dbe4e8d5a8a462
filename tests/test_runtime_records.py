"""Every cached cell record carries runtime_s; the cost projection runs on any study's cache, old records too."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from dpbench.store import Store

ROOT = Path(__file__).resolve().parent.parent


def test_store_record_adds_runtime(tmp_path):
    st = Store(tmp_path)
    rec = st.record("ab" * 8, lambda: {"acc": [0.5]})
    assert rec["runtime_s"] >= 0 and json.loads(st.cell_path("ab" * 8).read_text())["runtime_s"] == rec["runtime_s"]
    own = st.record("cd" * 8, lambda: {"acc": [0.5], "runtime_s": 123.0})  # a compute's own measurement is kept
    assert own["runtime_s"] == 123.0


def test_project_full_grid_on_mixed_and_old_records(tmp_path):
    res, cache = tmp_path / "results", tmp_path / "cache"
    (res / "vdm2020" / "fig1a").mkdir(parents=True)
    (res / "wu2016" / "fig3_2").mkdir(parents=True)
    pd.DataFrame({"cell_key": ["k1", "k2"], "method": ["loss_perturbation"] * 2, "rep": [0, 1]}).to_parquet(
        res / "vdm2020" / "fig1a" / "all-series.parquet")
    pd.DataFrame({"method": ["bolt_on"], "rep": [0], "value": [0.5]}).to_parquet(  # rows with no cell key
        res / "wu2016" / "fig3_2" / "all-series.parquet")
    st = Store(cache)
    st.put_cell("k1", {"runtime_s": 2.0})
    st.put_cell("k2", {"runtime_s": 3.0})
    st.put_cell("old1", {"acc": [0.1]})  # cached before records carried runtime_s
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "project_full_grid.py"), str(res), str(cache),
                          "--target-reps", "4"], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert "1 cached record(s) carry no runtime_s" in out.stdout
    assert "loss_perturbation" in out.stdout and "projected total for 4 repetitions: 10 CPU-s" in out.stdout


def _burn(seconds):
    import time

    t = time.process_time()
    while time.process_time() - t < seconds:
        pass
    return seconds


def test_a_jobs_cost_counts_its_joblib_workers():
    """process_cost (stored in every result file's metadata) includes the CPU of joblib's worker processes: they
    are shut down and reaped first, so a multi-threaded job's measured cost is its whole cost."""
    from dpbench.parallel import run_units
    from dpbench.results import process_cost

    before = process_cost()["job_cpu_s"]
    run_units(_burn, [(0.4,), (0.4,), (0.4,)], n_jobs=2)
    after = process_cost()
    assert after["job_cpu_s"] - before >= 1.2 * 0.95 and after["job_peak_rss_mb"] > 0
