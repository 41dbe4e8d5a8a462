"""Running one (study, figure, series) job: tune, expand cells, compute what is missing, write Parquet.

The same functions serve the Snakefile (one job per series) and direct library use. Work is organised as

1. **tuning** — for a method with a cross-validated hyper-parameter, validation cells for every grid value
   × CV repetition at each (ε, δ) of the figure; the value with the best mean validation accuracy is kept;
2. **cells** — one per (point, repetition), deduplicated by content key (a training method's cell serves
   every B; the baseline's one cell serves everything);
3. **groups** — cells sharing a trained artefact, or solved together (loss perturbation: the repetitions and
   tuning values of one (ε, δ) in one lockstep L-BFGS), are computed together; groups run in parallel with joblib
   (BLAS limited to one thread per worker so workers × threads ≤ cores). Finished cells are cached, so an
   interrupted run resumes without recomputing them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

from dpbench.methods import Cell, Context
from dpbench.methods.base import check_unit_ball
from dpbench.results import check_result_rows, provenance, write_parquet
from dpbench.store import Store, content_key
from dpbench.studies import study as get_study
from dpbench.studies.extensions import activate

log = logging.getLogger("dpbench")
#: fields every cell record written by :func:`_compute_group` has; a cell lacking one is recomputed.
CELL_FIELDS = ("variant", "runtime_s", "accuracy")   # what every cell record holds (Method.run_group)


class _CurrentStderr(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of the record (not the stream at set-up), so a
    redirected or captured stderr later in the process still receives the progress lines."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


def _setup_logging() -> None:
    if not log.handlers:
        h = _CurrentStderr()
        h.setFormatter(logging.Formatter("%(asctime)s dpbench %(message)s", "%H:%M:%S"))
        log.addHandler(h)
        log.setLevel(logging.INFO)
        log.propagate = False


def _compute_group(config: dict, study_name: str, split: str, method_name: str, setting: tuple,
                   cells: list[Cell], limit_blas: bool) -> list[tuple[str, dict]]:
    """Compute the missing cells of one group (runs in a joblib worker or inline).

    ``setting`` = (problem overrides, method overrides) of the figure point the cells belong to."""
    from threadpoolctl import threadpool_limits

    activate(config)  # a joblib worker: the config's plugins and user datasets (docs/extending.md)
    st = get_study(study_name)
    cfg = config["studies"][study_name]
    store = Store(config["cache_dir"])
    gkey = content_key(["group", [c.key for c in cells]])
    with threadpool_limits(1) if limit_blas else contextlib.nullcontext():
        with store.lock(gkey):
            todo = [c for c in cells if not store.has_cell(c.key, CELL_FIELDS)]
            if todo:
                problem = st.problem(config, cfg, split, **dict(setting[0]))
                check_unit_ball(problem)  # finite rows, ‖x‖ ≤ 1: what every method's privacy bound assumes
                method = st.make_method(cfg, method_name, **dict(setting[1]))
                t0 = time.perf_counter()
                records = method.run_group(problem, todo, Context(store=store, seed=config["seed"]))
                per_cell = (time.perf_counter() - t0) / len(todo)
                for cell, rec in zip(todo, records):
                    store.put_cell(cell.key, {**rec, "runtime_s": per_cell, "variant": problem.variant})
    return [(c.key, store.get_cell(c.key, CELL_FIELDS)) for c in cells]


def compute_cells(config: dict, study_name: str, split: str, method_name: str, cells: list,
                  n_jobs: int = 1, label: str = "") -> dict[str, dict]:
    """Results of ``cells`` (cached or computed), keyed by cell key. Progress is logged to stderr.

    ``cells`` holds ``Cell`` objects (default setting) or ``(setting, Cell)`` pairs, where a setting is
    a figure point's (problem overrides, method overrides): cells of every setting are scheduled in one
    pool, so e.g. all training-set sizes of vdm2020 Fig. 4 run in parallel."""
    _setup_logging()
    st = get_study(study_name)
    cfg = config["studies"][study_name]
    jobs = [c if isinstance(c, tuple) else (((), ()), c) for c in cells]
    unique = {c.key: (setting, c) for setting, c in jobs}
    store = Store(config["cache_dir"])
    results = {k: store.get_cell(k, CELL_FIELDS) for k in unique}
    missing = [sc for k, sc in unique.items() if results[k] is None]
    if not missing:
        log.info("%s: %d cells, all cached", label, len(unique))
        return results
    groups: dict = defaultdict(list)
    methods: dict = {}
    for setting, c in missing:
        if setting not in methods:
            methods[setting] = st.make_method(cfg, method_name, **dict(setting[1]))
        groups[(setting, repr(methods[setting].group_key(c)))].append(c)
    group_list = [(key[0], g) for key, g in groups.items()]
    n_jobs = max(1, min(int(n_jobs), len(group_list), os.cpu_count() or 1))   # no idle workers
    log.info("%s: %d cells (%d cached), %d groups to compute with %d worker(s)", label, len(unique),
             len(unique) - len(missing), len(group_list), n_jobs)
    t0 = time.perf_counter()
    done = 0
    if n_jobs <= 1 or len(group_list) == 1:
        it = (_compute_group(config, study_name, split, method_name, s, g, False) for s, g in group_list)
    else:
        from joblib import Parallel, delayed

        it = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
            delayed(_compute_group)(config, study_name, split, method_name, s, g, True) for s, g in group_list)
    for out in it:
        for k, rec in out:
            results[k] = rec
        done += 1
        if done == len(group_list) or done % max(1, len(group_list) // 10) == 0:
            el = time.perf_counter() - t0
            log.info("%s: %d/%d groups, %.0fs elapsed, ~%.0fs left", label, done, len(group_list), el,
                     el / done * (len(group_list) - done))
    return results


def tune(config: dict, study_name: str, figure_name: str, method_name: str, n_jobs: int = 1,
         settings: set | None = None, known: dict | None = None) -> dict:
    """Cross-validate the method's tuned hyper-parameter separately for each (setting, ε, δ) of the figure.

    Returns {(setting, ε, δ): (chosen value, its mean validation accuracy)}. A point whose method
    overrides fix the tuned parameter (e.g. λ on the x axis of vdm2020 Fig. 6a) and a config with
    ``cross_validation.enabled: false`` use the fixed value (validation accuracy nan). ``settings`` limits
    the points to those settings; ``known`` ({cell key: record}, e.g. from tuning shards) serves validation
    cells before the cache."""
    st = get_study(study_name)
    cfg = config["studies"][study_name]
    cvc = cfg["cross_validation"]
    plan: dict = {}
    fixed: dict = {}
    for p in st.points(cfg, figure_name):
        if settings is not None and p.setting not in settings:
            continue
        method = st.make_method(cfg, method_name, **dict(p.method))
        if method.tuned is None or method.supports(p.epsilon, p.delta, cvc["budget"]) is not None:
            continue
        key = (p.setting, p.epsilon, p.delta)
        if method.tuned in dict(p.method):
            fixed[key] = (dict(p.method)[method.tuned], np.nan)
        elif not cvc.get("enabled", True):
            fixed[key] = (st.fixed_hyperparameter(cfg, method), np.nan)
        elif key not in plan:
            problem = st.problem(config, cfg, "validation", **dict(p.problem))
            plan[key] = {v: [(p.setting, method.make_cell(problem, v, p.epsilon, p.delta, cvc["budget"], r))
                             for r in range(cvc["repetitions"])] for v in st.tuning_grid(cfg, method)}
    chosen = dict(fixed)
    if plan:
        todo = [sc for by_value in plan.values() for cs in by_value.values() for sc in cs]
        if known is not None and all(c.key in known for _, c in todo):
            res = known
        else:
            res = compute_cells(config, study_name, "validation", method_name, todo, n_jobs,
                                label=f"{study_name}/{figure_name}/{method_name} tuning")
        for key, by_value in plan.items():
            scores = [(np.mean([res[c.key]["accuracy"] for _, c in cs]), v) for v, cs in by_value.items()]
            best = max(scores, key=lambda s: s[0])  # first of the best: grids are ascending
            chosen[key] = (best[1], best[0])
    return chosen


def preprocessing_columns(st, cfg: dict, point) -> dict:
    """``preprocessing`` (what was done between the raw data and the mechanism) and
    ``preprocessing_data_dependent`` (True when a step used statistics of the private training data, so the ε
    does not cover it) — from the study's ``preprocessing(cfg, point)`` when it declares one."""
    described = st.preprocessing(cfg, point)
    if described is None:
        return {"preprocessing": "", "preprocessing_data_dependent": False}
    text, dependent = described
    return {"preprocessing": text, "preprocessing_data_dependent": bool(dependent)}


def run_series(config: dict, study_name: str, figure_name: str, method_name: str, out: str | Path | None = None,
               n_jobs: int | None = None, select=None, tuning_results: dict | None = None) -> pd.DataFrame:
    """Compute one series of one figure and (optionally) write its Parquet file.

    ``select(point, rep)`` keeps a part of the series (a shard, see ``dpbench.shards``): its rows then carry
    their position in the whole series in an ``_order`` column; ``tuning_results`` are validation cells
    computed elsewhere (the series' tuning shards)."""
    _setup_logging()
    st = get_study(study_name)
    cfg = config["studies"][study_name]
    spec = st.figure(figure_name)
    n_jobs = int(n_jobs or config.get("n_jobs") or 1)
    if st.shape == "units":  # the study computes its own series (e.g. song2018's Pufferfish tables)
        df = check_result_rows(st.run_series(config, figure_name, method_name, n_jobs=n_jobs),
                               f"{study_name}/{figure_name}/{method_name}")
        if out is not None:
            write_parquet(df, out, provenance(config, study=study_name, figure=figure_name, series=method_name,
                                              n_jobs=n_jobs, cpu_count=os.cpu_count()))
        return df
    if method_name not in spec.methods and method_name not in st.series(cfg, figure_name):
        raise ValueError(f"method {method_name!r} is not a series of {study_name}/{figure_name}; "
                         f"known: {list(spec.methods)}")
    points = st.points(cfg, figure_name)
    reps_of = [st.repetitions(cfg, figure_name, p) for p in points]
    stride = max(reps_of, default=0)   # a row's position in the whole series: point i, repetition r
    wanted = None if select is None else {p.setting for p, n in zip(points, reps_of) for r in range(n) if select(p, r)}
    chosen = tune(config, study_name, figure_name, method_name, n_jobs, settings=wanted, known=tuning_results)
    plan = []
    methods, problems = {}, {}
    for i, p in enumerate(points):
        if wanted is not None and p.setting not in wanted:
            continue
        if p.setting not in methods:
            methods[p.setting] = st.make_method(cfg, method_name, **dict(p.method))
            problems[p.setting] = st.problem(config, cfg, "test", **dict(p.problem))
        method, problem = methods[p.setting], problems[p.setting]
        if method.supports(p.epsilon, p.delta, p.budget) is not None:
            continue
        tuned, val_acc = chosen.get((p.setting, p.epsilon, p.delta), (None, np.nan))
        for r in range(reps_of[i]):
            if select is not None and not select(p, r):
                continue
            plan.append((p, r, tuned, val_acc, method, problem,
                         method.make_cell(problem, tuned, p.epsilon, p.delta, p.budget, r), i * stride + r))
    t0 = time.perf_counter()
    res = compute_cells(config, study_name, "test", method_name, [(p.setting, c) for p, *_, c, _ in plan], n_jobs,
                        label=f"{study_name}/{figure_name}/{method_name}")
    rows = []
    for p, r, tuned, val_acc, method, problem, cell, _ in plan:
        rec = res[cell.key]
        rows.append({
            "study": study_name, "figure": figure_name, "series": method_name, "method": method_name,
            "method_kind": method.kind, "dataset": dict(p.problem).get("dataset", cfg["dataset"]),
            "dataset_variant": rec["variant"],
            "is_substitute": rec["variant"].startswith("substitute"), "x_name": spec.x_name, "x": p.x, "curve": p.curve,
            "epsilon": p.epsilon, "delta": p.delta, "budget": p.budget, "rep": r,
            "n_train": problem.n_train, "n_eval": int(problem.X_eval.shape[0]), "dim": problem.dim,
            "n_classes": problem.n_classes, "tuned_param": method.tuned or "", "tuned_value": tuned,
            "validation_accuracy": val_acc, **{f"param_{k}": v for k, v in cell.params},
            "metric": "test_accuracy", "value": rec["accuracy"], "noise_kind": rec.get("noise_kind", ""),
            "noise_scale": rec.get("noise_scale", np.nan), "composition": rec.get("composition", "none"),
            "accountant": rec.get("accountant", "exact"),
            "calibration": method.calibration_kind,   # "tight": the method's tight analysis (Method.calibration_kind)
            "epsilon_achieved": rec.get("epsilon_achieved", p.epsilon if method.kind != "baseline" else np.inf),
            "sampling": rec.get("sampling", ""), "runtime_s": rec.get("runtime_s", np.nan),
            "neighbouring": dict(cell.params).get("neighbouring", st.neighbouring),
            "solver_error_bound": rec.get("solver_error_bound", np.nan),
            "solver_error_fraction": rec.get("solver_error_fraction", np.nan),
            **preprocessing_columns(st, cfg, p),
            "seed": config["seed"], "cell_key": cell.key,
        })
    df = check_result_rows(pd.DataFrame(rows), f"{study_name}/{figure_name}/{method_name}")
    if select is not None:
        df["_order"] = [o for *_, o in plan]
    log.info("%s/%s/%s: done in %.1fs (%d rows)", study_name, figure_name, method_name,
             time.perf_counter() - t0, len(df))
    if out is not None:
        write_parquet(df, out, provenance(config, study=study_name, figure=figure_name, series=method_name,
                                          n_jobs=n_jobs, cpu_count=os.cpu_count()))
    return df
