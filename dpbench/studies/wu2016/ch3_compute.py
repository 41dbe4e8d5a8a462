"""wu2016 chapter 3 — the computation (Wu 2016, §3.2–3.3, Figs. 3.2–3.4; docs/studies/wu2016.md): bolt-on
private PSGD against SCS13 and BST14 for logistic regression on MNIST (50-d Gaussian random projection,
one-vs-all), Protein and Covertype, every row on the unit sphere.

Unit of work and of caching: one (dataset, method, convexity, repetition, batch size b, passes k) training run
that serves EVERY ε of the grid (and, for the bolt-on method, both δ of the tests sharing its convexity: the
noiseless PSGD output is trained once and only the output noise differs). The many models of one unit (ε values
× one-vs-all classes) are trained side by side by :mod:`dpbench.methods.private_psgd_many` (engine:
:mod:`dpbench.learn.psgd_many`). The runtime experiment (Fig. 3.4) times the one-model functions of
:mod:`dpbench.methods.private_psgd` on the aggregate engine.

The chapter's code hash (:func:`code_hash`) is the import closure of this module (:mod:`dpbench.codehash`): it
imports no caption, plot or anchor code, and nothing of chapter 4.
"""

from __future__ import annotations

import importlib
import logging
import math
import time

import numpy as np
import pandas as pd

from dpbench.learn import psgd_many as engine_many
from dpbench.methods import private_psgd as pp
from dpbench.methods import private_psgd_many as many
from dpbench.parallel import run_units
from dpbench.results import calibration_of
from dpbench.rng import generator, stream_key
from dpbench.store import Store, content_key
from dpbench.studies.wu2016.ch3_data import (DATASETS, STUDY, dataset_payload, label_matrix, load_prepared,
                                             preprocessing_label, study_cfg, test_accuracy)

engine = importlib.import_module("dpbench.learn.psgd")   # the module (dpbench.learn exports a function psgd)
log = logging.getLogger(__name__)

#: ``bst14_tight``: BST14 with the tight calibration (:func:`dpbench.privacy.noisy_sgd.bst14_tight_calibration`,
#: docs/studies/wu2016.md#bst14-tight); same sampling, steps and radius, drawn dashed beside BST14
METHODS = ("noiseless", "bolt_on", "scs13", "bst14", "bst14_tight")
LABELS = {"noiseless": "Noiseless", "bolt_on": "Ours (bolt-on)", "scs13": "SCS13", "bst14": "BST14",
          "bst14_tight": "BST14 (tight calibration)"}
BST14 = ("bst14", "bst14_tight")
TESTS = {1: ("convex", False), 2: ("convex", True), 3: ("strongly_convex", False), 4: ("strongly_convex", True)}
TEST_LABELS = {1: "Test 1: convex, ε-DP", 2: "Test 2: convex, (ε,δ)-DP", 3: "Test 3: strongly convex, ε-DP",
               4: "Test 4: strongly convex, (ε,δ)-DP"}
RUNTIME_METHODS = ("noiseless", "bolt_on", "scs13", "bst14")   # Fig. 3.4: the thesis' four


FIGURE_NAMES = ("fig3_2", "fig3_3", "fig3_4")


def code_hash() -> str:
    """Hash of the sources every chapter-3 series depends on: this module's import closure (engine, private
    algorithms, their noise samplers and calibrations, data loading, this module)."""
    from dpbench.codehash import code_hash as closure_hash

    return closure_hash(__name__)


# ---------------------------------------------------------------------------------------------------------
# the per-model budget (MNIST: ε/10 and δ/10 for each of the 10 binary models; Wu 2016, §3.3 "Experimental
# Method and Datasets" splits ε; the δ split is docs/studies/wu2016.md#open-choices item 8)
# ---------------------------------------------------------------------------------------------------------


def budget(a: dict, epsilons, private_delta: bool):
    """(per-model ε array, per-model δ, the study δ = 1/m): δ = 1/m with m the training-set size (Wu 2016, §3.3
    "Parameters"); the one-vs-all models of MNIST split ε and δ evenly (basic composition over the 10 models)."""
    m = int(a["X_train"].shape[0])
    K = a["n_classes"] if a["n_classes"] > 2 else 1
    delta = 1.0 / m if private_delta else 0.0
    return np.asarray(epsilons, dtype=np.float64) / K, delta / K, delta


def choices(config: dict) -> dict:
    c = study_cfg(config)["choices"]
    lam = float(study_cfg(config)["l2"])
    return {"l2": lam, "eta": c["convex_eta"], "sc_sensitivity": c["sc_sensitivity"], "iota": float(c["bst14_iota"]),
            "bst14_radius": float(c["bst14_convex_radius"] or 1.0 / lam),
            "scs13_radius": float(c["scs13_sc_radius"] or 1.0 / lam), "noise": c["gaussian_noise"]}


def train_unit(config: dict, dataset: str, method: str, convexity: str, tests: tuple, epsilons, batch_size: int,
               passes: int, rep: int) -> dict:
    """One cached training unit: accuracy for every (test, ε). ``tests`` share ``convexity``; a noisy
    method other than the bolt-on gets exactly one test. Returns {"acc": {test: [per ε]}, "noise_scale":
    {test: [per ε]}, "sensitivity": float|None, "seconds": float, "variant": str, "is_substitute": bool}."""
    payload = {"kind": "wu2016-ch3-unit", "code": code_hash(), "data": dataset_payload(config, dataset),
               "method": method, "convexity": convexity, "tests": list(tests), "epsilons": [float(e) for e in epsilons],
               "b": int(batch_size), "k": int(passes), "rep": int(rep), "seed": config["seed"],
               "choices": choices(config)}
    key = content_key(payload)

    def compute():
        a = load_prepared(config, dataset)
        ch = choices(config)
        Yk = label_matrix(a)
        l2 = ch["l2"] if convexity == "strongly_convex" else 0.0
        rng = generator(config["seed"], f"wu2016/ch3/{stream_key(payload)}")
        X = a["X_train"]
        t0 = time.perf_counter()
        acc, scales, sens = {}, {}, None
        if method == "noiseless":      # Table 3.3: constant η (convex), 1/(γt) (strongly convex); unconstrained
            sched = engine.StepSchedule.inv_gamma_t(l2) if l2 else engine.StepSchedule.constant(
                ch["eta"] or 1.0 / math.sqrt(X.shape[0]))
            W = engine_many.psgd_many(X, Yk, "logistic", passes, batch_size, sched, rng, l2=l2)
            v = float(test_accuracy(W, a))
            for t in tests:
                acc[t], scales[t] = [v] * len(epsilons), [0.0] * len(epsilons)
        elif method == "bolt_on":      # one noiseless run, output noise per (test δ, ε)
            for i, t in enumerate(tests):
                eps_m, delta_m, _ = budget(a, epsilons, TESTS[t][1])
                if i == 0:
                    W, info = many.bolt_on_many(X, Yk, "logistic", passes, batch_size, eps_m, delta_m, rng, l2=l2,
                                                eta=None if l2 else ch["eta"], sc_sensitivity=ch["sc_sensitivity"],
                                                noise="auto" if delta_m == 0 else ch["noise"])
                    W0, sens = info["W0"], info["sensitivity"]
                    sc = info["noise_scale"]
                else:
                    W, sc, _ = many.perturb_outputs(rng, W0, sens, eps_m, delta_m,
                                                    "auto" if delta_m == 0 else ch["noise"])
                acc[t], scales[t] = test_accuracy(W, a).tolist(), np.asarray(sc).tolist()
            acc["noiseless_run"] = float(test_accuracy(W0, a))
        elif method == "scs13":        # 1/√t; radius 1/λ in the regularised case, else unconstrained
            (t,) = tests
            eps_m, delta_m, _ = budget(a, epsilons, TESTS[t][1])
            W, info = many.scs13_many(X, Yk, "logistic", passes, batch_size, eps_m, rng, delta=delta_m, l2=l2,
                                      radius=ch["scs13_radius"] if l2 else None)
            acc[t], scales[t] = test_accuracy(W, a).tolist(), np.asarray(info["noise_scale"]).tolist()
        elif method in BST14:
            (t,) = tests
            eps_m, delta_m, _ = budget(a, epsilons, True)
            W, info = many.bst14_many(X, Yk, "logistic", eps_m, delta_m, rng, batch_size=batch_size, passes=passes,
                                      l2=l2, radius=None if l2 else ch["bst14_radius"], iota=ch["iota"],
                                      calibration=calibration_of(method))
            acc[t], scales[t] = test_accuracy(W, a).tolist(), np.asarray(info["sigma"]).tolist()
        else:
            raise ValueError(f"unknown method {method!r}; known: {METHODS}")
        return {"acc": {str(k): v for k, v in acc.items()}, "noise_scale": {str(k): v for k, v in scales.items()},
                "sensitivity": sens, "seconds": time.perf_counter() - t0, "variant": a["variant"],
                "is_substitute": a["is_substitute"], "n_train": int(X.shape[0])}

    return Store(config["cache_dir"]).record(key, compute)


def units(method: str, tests) -> list[tuple[str, tuple]]:
    """(convexity, tests) training units of ``method`` for the requested tests (BST14: (ε,δ) tests only)."""
    out = []
    for conv in ("convex", "strongly_convex"):
        ts = tuple(t for t in tests if TESTS[t][0] == conv and (method not in BST14 or TESTS[t][1]))
        if not ts:
            continue
        if method in ("scs13",) + BST14:
            out += [(conv, (t,)) for t in ts]
        else:
            out.append((conv, ts))
    return out


def _rows(config, figure, series, dataset, method, rec, tests, epsilons, b, k, rep, curve="", metric="test_accuracy"):
    rows = []
    private = method not in ("noiseless", "non_private")
    for t in tests:
        delta = 1.0 / int(rec["n_train"]) if private and (TESTS[t][1] or method in BST14) else 0.0  # budget()
        for j, e in enumerate(epsilons):
            rows.append({"study": STUDY, "figure": figure, "series": series, "method": method,
                         "method_label": LABELS[method], "dataset": dataset, "dataset_variant": rec["variant"],
                         "is_substitute": bool(rec["is_substitute"]),
                         **dict(zip(("preprocessing", "preprocessing_data_dependent"), preprocessing_label(dataset))),
                         "test": int(t), "x_name": "epsilon",
                         "x": float(e), "epsilon": float(e), "delta": delta, "budget": float("nan"),
                         "batch_size": int(b), "passes": int(k), "rep": int(rep),
                         "curve": curve, "metric": metric, "value": float(rec["acc"][str(t)][j]),
                         "noise_scale": float(rec["noise_scale"][str(t)][j]),
                         "sensitivity": float("nan") if rec["sensitivity"] is None else float(rec["sensitivity"]),
                         "n_train": int(rec["n_train"]), "runtime_s": float(rec["seconds"]),
                         "seed": int(config["seed"]),
                         "calibration": calibration_of(method)})
    return rows


def _run_jobs(jobs, n_jobs, label=""):
    return run_units(train_unit, jobs, n_jobs, label)


def run_fig3_2(config: dict, series: str, n_jobs: int = 1) -> pd.DataFrame:
    """Test accuracy vs ε for the four tests (b = 50, 10 passes): series ``<dataset>_<method>``."""
    fc = study_cfg(config)["figures"]["fig3_2"]
    dataset, method = series.split("_", 1)
    eps = [float(e) for e in fc["epsilons"][dataset]]
    b, k, reps = int(fc["batch_size"]), int(fc["passes"]), int(study_cfg(config)["repetitions"])
    plan = [(conv, ts, r) for conv, ts in units(method, fc["tests"]) for r in range(reps)]
    log.info("wu2016 fig3_2 %s: %d training units (each serves %d ε values)", series, len(plan), len(eps))
    recs = _run_jobs([(config, dataset, method, conv, ts, eps, b, k, r) for conv, ts, r in plan], n_jobs,
                     f"wu2016/fig3_2/{series}")
    rows = []
    for (conv, ts, r), rec in zip(plan, recs):
        rows += _rows(config, "fig3_2", series, dataset, method, rec, ts, eps, b, k, r)
    return pd.DataFrame(rows)


FIG3_3_PANELS = {"panel_a": (1, "passes"), "panel_b": (3, "passes"), "panel_c": (1, "batch")}


def run_fig3_3(config: dict, series: str, n_jobs: int = 1) -> pd.DataFrame:
    """MNIST, bolt-on only (plus its noiseless run as a reference): (a) Test 1, b = 1, k ∈ passes;
    (b) Test 3, b = 50, k ∈ passes; (c) Test 1, k = 20, b ∈ batch sizes."""
    fc = study_cfg(config)["figures"]["fig3_3"]
    test, varies = FIG3_3_PANELS[series]
    eps = [float(e) for e in fc["epsilons"]]
    reps = int(study_cfg(config)["repetitions"])
    if varies == "passes":
        b = int(fc["panel_a_batch_size"] if series == "panel_a" else fc["panel_b_batch_size"])
        settings = [(b, int(k), f"k = {k}") for k in fc["passes"]]
    else:
        settings = [(int(b), int(fc["panel_c_passes"]), f"b = {b}") for b in fc["batch_sizes"]]
    conv = TESTS[test][0]
    plan = [(b, k, c, r) for b, k, c in settings for r in range(reps)]
    recs = _run_jobs([(config, "mnist", "bolt_on", conv, (test,), eps, b, k, r) for b, k, c, r in plan], n_jobs,
                     f"wu2016/fig3_3/{series}")
    rows = []
    for (b, k, c, r), rec in zip(plan, recs):
        rows += _rows(config, "fig3_3", series, "mnist", "bolt_on", rec, (test,), eps, b, k, r, curve=c)
        ref = dict(rec, acc={str(test): [rec["acc"]["noiseless_run"]] * len(eps)},
                   noise_scale={str(test): [0.0] * len(eps)}, sensitivity=None)
        rows += _rows(config, "fig3_3", series, "mnist", "noiseless", ref, (test,), eps, b, k, r, curve=c)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------------
# Fig. 3.4: runtime on the one-model aggregate engine, strongly convex (ε, δ)-DP, as ratios to noiseless
# ---------------------------------------------------------------------------------------------------------


def _timed_call(method: str, X, y, passes, b, eps, delta, l2, rng, ch):
    if method == "noiseless":
        return engine.psgd(X, y, "logistic", passes, b, engine.StepSchedule.inv_gamma_t(l2), rng, l2=l2)
    if method == "bolt_on":
        return pp.bolt_on_psgd(X, y, "logistic", passes, b, eps, delta, rng, l2=l2, noise=ch["noise"],
                               sc_sensitivity=ch["sc_sensitivity"])
    if method == "scs13":
        return pp.scs13_psgd(X, y, "logistic", passes, b, eps, rng, l2=l2, radius=ch["scs13_radius"], delta=delta)
    if method == "bst14":
        return pp.bst14_psgd(X, y, "logistic", eps, delta, rng, batch_size=b, passes=passes, l2=l2, iota=ch["iota"])
    raise ValueError(f"unknown method {method!r}")


def time_point(config: dict, dataset: str, sweep: str, passes: int, b: int) -> dict:
    """Wall-clock seconds of every method at (passes, b): ``warmup`` untimed rounds, then ``runs`` timed
    rounds; within a round the methods run in a rotated order so slow drifts hit all of them alike. Cached."""
    fc = study_cfg(config)["figures"]["fig3_4"]
    payload = {"kind": "wu2016-ch3-time", "code": code_hash(), "data": dataset_payload(config, dataset),
               "k": int(passes), "b": int(b), "eps": float(fc["epsilon"]), "runs": int(fc["runs"]),
               "warmup": int(fc["warmup"]), "choices": choices(config), "seed": config["seed"]}
    key = content_key(payload)

    def compute():
        a = load_prepared(config, dataset)
        ch = choices(config)
        X = np.ascontiguousarray(a["X_train"])
        y = label_matrix(a)[:, 0]     # MNIST: the digit-0-vs-rest model (one of the ten)
        eps_m, delta_m, _ = budget(a, [fc["epsilon"]], True)
        times = {m: [] for m in RUNTIME_METHODS}
        for r in range(int(fc["warmup"]) + int(fc["runs"])):
            order = RUNTIME_METHODS[r % 4:] + RUNTIME_METHODS[:r % 4]
            for m in order:
                rng = generator(config["seed"], f"wu2016/ch3/time/{stream_key(payload)}/{m}/{r}")
                t0 = time.perf_counter()
                _timed_call(m, X, y, passes, b, float(eps_m[0]), delta_m, ch["l2"], rng, ch)
                dt = time.perf_counter() - t0
                if r >= int(fc["warmup"]):
                    times[m].append(dt)
        return {"times": times, "variant": a["variant"], "is_substitute": a["is_substitute"],
                "n_train": int(X.shape[0])}

    return Store(config["cache_dir"]).record(key, compute)


def run_fig3_4(config: dict, dataset: str, n_jobs: int = 1) -> pd.DataFrame:
    """Runtime vs epochs (b = ``epochs_batch_size``) and vs batch size (1 epoch); rows: seconds and the ratio
    to noiseless of every timed run (the plot averages them with a 90% t-interval)."""
    fc = study_cfg(config)["figures"]["fig3_4"]
    points = [("epochs", int(k), int(fc["epochs_batch_size"])) for k in fc["epochs"]]
    points += [("batch", 1, int(b)) for b in fc["batch_sizes"]]
    rows = []
    for sweep, k, b in points:
        log.info("wu2016 fig3_4 %s: timing %s sweep, passes=%d, b=%d", dataset, sweep, k, b)
        rec = time_point(config, dataset, sweep, k, b)
        base = np.asarray(rec["times"]["noiseless"])
        for m in RUNTIME_METHODS:
            ts = np.asarray(rec["times"][m])
            for r, (t, ratio) in enumerate(zip(ts, ts / base)):
                common = {"study": STUDY, "figure": "fig3_4", "series": dataset, "method": m,
                          "method_label": LABELS[m], "dataset": dataset, "dataset_variant": rec["variant"],
                          "is_substitute": bool(rec["is_substitute"]),
                          **dict(zip(("preprocessing", "preprocessing_data_dependent"), preprocessing_label(dataset))),
                          "test": 4, "sweep": sweep,
                          "x_name": "passes" if sweep == "epochs" else "batch_size",
                          "x": float(k if sweep == "epochs" else b), "epsilon": float(fc["epsilon"]),
                          "delta": 1.0 / int(rec["n_train"]), "budget": float("nan"), "runtime_s": float(t),
                          "batch_size": b, "passes": k, "rep": r, "curve": "", "n_train": int(rec["n_train"]),
                          "seed": int(config["seed"])}
                rows.append({**common, "metric": "runtime_s", "value": float(t)})
                rows.append({**common, "metric": "runtime_ratio", "value": float(ratio)})
    return pd.DataFrame(rows)


def series(cfg: dict, name: str) -> list[str]:
    """The series of chapter-3 figure ``name`` (``cfg``: the study's block): fig3_2 ``<dataset>_<method>`` (BST14
    only with an (ε,δ)-DP test), fig3_3 its panels, fig3_4 its datasets."""
    fc = cfg["figures"][name]
    if name == "fig3_2":
        methods = [m for m in METHODS if not fc.get("methods") or m in fc["methods"]]
        if not any(TESTS[t][1] for t in fc["tests"]):
            methods = [m for m in methods if m not in BST14]
        return [f"{d}_{m}" for d in fc["datasets"] for m in methods]
    if name == "fig3_3":
        return list(FIG3_3_PANELS)
    return [d for d in DATASETS if d in fc["datasets"]]


def run_series(config: dict, figure: str, series_name: str, n_jobs: int = 1) -> pd.DataFrame:
    """Long rows of one chapter-3 series (module docstring)."""
    if figure not in FIGURE_NAMES:
        raise ValueError(f"unknown figure {figure!r} of {STUDY}")
    known = series(study_cfg(config), figure)
    if series_name not in known:
        raise ValueError(f"{series_name!r} is not a series of {STUDY}/{figure}; known: {known}")
    run = {"fig3_2": run_fig3_2, "fig3_3": run_fig3_3, "fig3_4": run_fig3_4}[figure]
    return run(config, series_name, n_jobs)
