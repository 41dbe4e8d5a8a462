"""Result files: a deleted or damaged result Parquet is rebuilt by the documented command (`snakemake` with
the default rule), from the cell cache, even though the figure drawn from it is up to date."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from dpbench.config import DEFAULT_CONFIG_PATH
from dpbench.studies import load_config
from tests.conftest import TINY
from tests.workflow.test_snakemake import cell_files, snakemake

pytestmark = pytest.mark.slow  # two workflow runs


def _config(root: Path, data_dir: Path) -> Path:
    """Every figure of every study disabled but one small one (estimation ldp_vs_n, three series)."""
    full = load_config(DEFAULT_CONFIG_PATH)
    studies = {s: {"figures": {f: None for f in cfg["figures"]}} for s, cfg in full["studies"].items()}
    studies["estimation"]["figures"]["ldp_vs_n"] = TINY["studies"]["estimation"]["figures"]["ldp_vs_n"]
    cfg = {"results_dir": "results", "figures_dir": "figures", "cache_dir": "results/cache",
           "data": {"cache_dir": str(data_dir)}, "studies": studies}
    path = root / "one.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_deleted_and_damaged_results_are_rebuilt(tmp_path, data_dir):
    config = _config(tmp_path, data_dir)
    snakemake(tmp_path, config, "--cores", "2")
    parquets = sorted((tmp_path / "results" / "estimation" / "ldp_vs_n").glob("*.parquet"))
    assert len(parquets) >= 2 and (tmp_path / "figures" / "estimation" / "ldp_vs_n.png").exists()
    deleted, damaged = parquets[0], parquets[-1]
    want = {p: pd.read_parquet(p) for p in (deleted, damaged)}
    cells = cell_files(tmp_path)
    deleted.unlink()
    damaged.write_bytes(damaged.read_bytes()[:200])
    again = snakemake(tmp_path, config, "--cores", "2")
    log = again.stdout + again.stderr
    assert "Nothing to be done" not in log
    assert f"result file {damaged.relative_to(tmp_path)} is damaged" in log
    for p, df in want.items():  # identical values (the wall-clock runtime column aside)
        pd.testing.assert_frame_equal(pd.read_parquet(p).drop(columns=["runtime_s"]), df.drop(columns=["runtime_s"]))
    assert cell_files(tmp_path) == cells  # rebuilt from the cell cache: no cell recomputed

