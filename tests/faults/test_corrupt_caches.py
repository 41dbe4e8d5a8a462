"""Fault injection on the caches a run reads back: truncated or garbage cells, artefacts, prepared problems
and data-cache files are detected (a warning names the file), recomputed, and the results are unchanged."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from dpbench.runner import run_series
from dpbench.studies import vdm2020


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        path.write_bytes(np.random.default_rng(7).bytes(max(len(data), 64)))
    elif how == "empty_object":
        path.write_bytes(b"{}")
    else:
        raise AssertionError(how)


def _values(df):
    return df.sort_values(["cell_key", "metric"])[["cell_key", "metric", "value"]].reset_index(drop=True)


@pytest.fixture
def config(tiny_config, tmp_path):
    cfg = copy.deepcopy(tiny_config)
    cfg["cache_dir"] = str(tmp_path / "cache")
    vdm2020._problem.cache_clear()
    yield cfg
    vdm2020._problem.cache_clear()


@pytest.mark.parametrize("how", ["truncate", "garbage", "empty_object"])
def test_corrupt_cell_is_recomputed(config, dpbench_log, how):
    first = run_series(config, "vdm2020", "fig1a", "non_private")
    cells = sorted((Path(config["cache_dir"]) / "cells").rglob("*.json"))
    victim = cells[0]
    _damage(victim, how)
    with dpbench_log.at_level("WARNING"):
        again = run_series(config, "vdm2020", "fig1a", "non_private")
    assert str(victim) in dpbench_log.text
    assert _values(again).equals(_values(first))


@pytest.mark.parametrize("how", ["truncate", "garbage"])
def test_corrupt_artefact_is_recomputed(config, dpbench_log, how):
    first = run_series(config, "vdm2020", "fig2a", "subsample_aggregate")
    arts = sorted((Path(config["cache_dir"]) / "artefacts").rglob("*.npz"))
    assert arts
    for a in arts:
        _damage(a, how)
    for c in (Path(config["cache_dir"]) / "cells").rglob("*.json"):
        c.unlink()  # the cells must be recomputed from the (damaged) artefacts
    with dpbench_log.at_level("WARNING"):
        again = run_series(config, "vdm2020", "fig2a", "subsample_aggregate")
    assert str(arts[0]) in dpbench_log.text
    assert _values(again).equals(_values(first))


@pytest.mark.parametrize("name", ["X_train.npy", "y_train.npy", "X_eval.npy", "meta.json", "manifest.json"])
def test_corrupt_prepared_problem_is_rebuilt(config, dpbench_log, name):
    cfg = config["studies"]["vdm2020"]
    p = vdm2020.problem(config, cfg, "test", n_train=300)
    want = {k: np.array(getattr(p, k)) for k in ("X_train", "y_train", "X_eval", "y_eval")}
    folders = [f for f in (Path(config["cache_dir"]) / "problems").iterdir() if not f.name.startswith(".")]
    assert len(folders) == 1
    _damage(folders[0] / name, "truncate")
    vdm2020._problem.cache_clear()
    with dpbench_log.at_level("WARNING"):
        q = vdm2020.problem(config, cfg, "test", n_train=300)
    assert str(folders[0]) in dpbench_log.text
    for k, v in want.items():
        np.testing.assert_array_equal(np.asarray(getattr(q, k)), v)
    assert q.key == p.key


def _prepare_in_child(config, barrier, out, counter):
    from dpbench import data as dpdata

    real = dpdata.unit_ball_rows_into

    def counting(*a, **k):
        with open(counter, "a") as fh:
            fh.write("x")
        return real(*a, **k)

    dpdata.unit_ball_rows_into = counting
    barrier.wait()
    try:
        p = vdm2020.problem(config, config["studies"]["vdm2020"], "test", n_train=500)
        out.put(("ok", float(np.asarray(p.X_train).sum()), p.key))
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        out.put((f"{type(exc).__name__}: {exc}", None, None))


def test_stress_concurrent_preparation_of_one_problem(config, tmp_path):
    """Four processes prepare the same problem at once: one builds it (the others wait and reuse it), all
    get the same arrays, and no temporary folder is left."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    n = 4
    counter = tmp_path / "builds.txt"
    counter.write_text("")
    barrier, out = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_prepare_in_child, args=(config, barrier, out, counter)) for _ in range(n)]
    for p in procs:
        p.start()
    got = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert {g[0] for g in got} == {"ok"}, got
    assert len({g[1:] for g in got}) == 1
    assert len(counter.read_text()) == 2  # one build: the X_eval and X_train passes of a single preparation
    leftovers = [f.name for f in (Path(config["cache_dir"]) / "problems").iterdir() if f.name.endswith((".tmp", ".old"))]
    assert leftovers == []
