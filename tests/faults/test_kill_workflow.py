"""SIGKILL of a running workflow at several points (data generation, first cells, later cells), then
``snakemake --unlock`` and a rerun: no finished cell is recomputed, every file left behind is readable or a
swept temporary, and the final results equal those of an uninterrupted run. Slow (several workflow runs)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from dpbench.results import parquet_is_intact
from tests.conftest import TINY
from tests.workflow.test_snakemake import SNAKEMAKE, cell_files, snakemake

pytestmark = pytest.mark.slow

FIGS = {"fig1a": {"epsilons": [0.5, 1.0, 2.0, 5.0], "methods": ["loss_perturbation", "non_private"]},
        "fig2a": {"methods": ["subsample_aggregate", "non_private"]}}
TARGETS = ["results/vdm2020/fig1a/loss_perturbation.parquet", "results/vdm2020/fig1a/non_private.parquet",
           "results/vdm2020/fig2a/subsample_aggregate.parquet", "results/vdm2020/fig2a/non_private.parquet"]


def _config(root: Path) -> Path:
    vdm = dict(TINY["studies"]["vdm2020"], repetitions=4)
    vdm["figures"] = {k: ({**v, **FIGS[k]} if k in FIGS else None) for k, v in vdm["figures"].items()}
    cfg = {"results_dir": "results", "figures_dir": "figures", "cache_dir": "results/cache",
           "data": {"cache_dir": str(root / "data"), "mnist_source": "substitute"},
           "studies": {"vdm2020": vdm}}
    path = root / "tiny.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _frames(root: Path) -> dict[str, pd.DataFrame]:
    out = {}
    for t in TARGETS:
        df = pd.read_parquet(root / t).drop(columns=["runtime_s"], errors="ignore")
        out[t] = df.sort_values(["cell_key", "metric"]).reset_index(drop=True)
    return out


def _kill_when(root: Path, config: Path, ready) -> dict[str, int]:
    proc = subprocess.Popen([*SNAKEMAKE, "-d", str(root), "--configfile", str(config), "--cores", "2",
                             "--rerun-incomplete", *TARGETS],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 600
    while time.time() < deadline and not ready() and proc.poll() is None:
        time.sleep(0.02)
    finished = proc.poll() is not None
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not finished, "the run ended before the kill point"
    snakemake(root, config, "--unlock")
    return cell_files(root)


def test_sigkill_at_several_points_then_resume(tmp_path):
    ref = tmp_path / "reference"
    ref.mkdir()
    snakemake(ref, _config(ref), "--cores", "2", *TARGETS)
    want = _frames(ref)

    run = tmp_path / "killed"
    run.mkdir()
    config = _config(run)
    data = run / "data"
    points = [lambda: any(data.rglob("*.tmp")) or any(data.rglob("manifest.json")),  # during data generation
              lambda: len(cell_files(run)) >= 2,
              lambda: len(cell_files(run)) >= 12,
              lambda: len(cell_files(run)) >= 30]
    finished: dict[str, int] = {}
    for ready in points:
        finished.update(_kill_when(run, config, ready))
    snakemake(run, config, "--cores", "2", "--rerun-incomplete", *TARGETS)

    after = cell_files(run)
    assert finished and all(after[p] == m for p, m in finished.items()), "a finished cell was recomputed"
    for p in (run / "results" / "cache" / "cells").rglob("*.json"):
        json.loads(p.read_text())
    assert all(parquet_is_intact(p) for p in (run / "results").rglob("*.parquet"))
    # killed writers' temporaries of the data caches, prepared problems and artefacts are swept by the next
    # writer (a killed cell write may leave one small temporary beside the cells: never read, harmless)
    leftovers = [p for p in run.rglob("*") if p.name.endswith((".tmp", ".old", ".part")) and "cells" not in p.parts]
    assert leftovers == []
    got = _frames(run)
    for t in TARGETS:
        pd.testing.assert_frame_equal(got[t], want[t])
