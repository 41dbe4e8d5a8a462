"""song2018 chapters 3 and 4 (Song 2018, PhD dissertation, §3.4 and §4.5; setting, inferred values and
deviations in docs/studies/song2018.md#chapters-3-and-4-private-sgd): DP mini-batch SGD (Figs 3.1-3.3) and
local-DP SGD with heterogeneous privacy (Fig. 4.1).

Figures, series and units of work (cached by content key in ``config["cache_dir"]``):

* fig3_1 / fig3_2 — series ``ch3_<dataset>`` (MNIST 15-d "1 vs all", KDDCup99 9-d): one unit per (dataset, b,
  step-size schedule) trains the private update (3.6) and non-private SGD on ``permutations`` independent random
  permutations (each private model draws its own noise; private and non-private model r share permutation r)
  and records the objective (3.1) along the single pass. fig3_1 reads the trace, fig3_2 the final value; the
  units with the same (b, schedule) are shared. One more unit per dataset: the centralized solver (L-BFGS).
* fig3_3 — series ``ch3_synthetic``: the same units on the synthetic sphere data, b = 5, 1/√t and 1/(λt).
* fig4_1 — series ``ch4_<dataset>_<panel>`` for MNIST (25-d, 1 vs rest) and Covertype (2 vs rest, 54-d),
  panels ``order`` (col. 1), ``epsn`` (col. 2), ``c2`` (col. 3). A unit is one (method, c or ε_N or c₂) with all
  its runs; every run draws its own clean/noisy split, data order and per-sample noise.

Library: :mod:`dpbench.methods.ldp_sgd` (engine, Γ², Algorithms 1-2); data: :mod:`dpbench.data.kddcup99` and
the registry; the data sets: :mod:`~dpbench.studies.song2018.ch34_data`. Citations "§n.m", "Thm", "Alg." and
"(n.m)" (equations) refer to Song (2018).

This module and what it imports are the chapters' compute code (:mod:`dpbench.codehash`): an edit here, in the
data preparation, the SGD engine or the noise samplers recomputes every chapter-3/4 unit; an edit of the
captions, plots or anchor checks (the sibling modules) does not. ``method_label`` is written here.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd

from dpbench.methods import ldp_sgd as L
from dpbench.parallel import run_units
from dpbench.rng import generator, stream_key
from dpbench.store import Store, content_key
from dpbench.studies.song2018.ch34_data import STUDY, study_config, dataset_payload, load_prepared, preprocessing_label
from dpbench.studies.song2018.ch4_rules import (ORDER_METHODS, _ch4_sequences, c2_brackets, c2_grid, ch4_params,
                                                ch4_rule, ch4_sizes)

CH3_DATASETS = ("mnist", "kddcup99")
CH4_DATASETS = ("mnist", "covertype")
CH4_PANELS = ("order", "epsn", "c2")
LABELS = {"private": "private SGD (3.6)", "non_private": "non-private SGD", "centralized": "centralized (L-BFGS)",
          "clean_first": "CleanFirst", "noisy_first": "NoisyFirst", "arbitrary": "Arbitrary", "optimal": "Optimal",
          "clean_only": "CleanOnly", "same_clean": "SameClean", "same_noisy": "SameNoisy", "alg2": "Algorithm2",
          "alg1": "Alg. 1, c₁ = 1/λ"}
EPSN_METHODS = ("optimal", "clean_only", "same_clean", "same_noisy", "alg2")
C2_METHODS = ("alg1", "clean_only")
SCHEDULES = ("inv_sqrt", "large", "inv_lambda_t")

#: the figures of chapters 3 and 4 (their specs: :mod:`dpbench.studies.song2018.spec`)
FIGURES = ("fig3_1", "fig3_2", "fig3_3", "fig4_1")


def code_hash() -> str:
    """Every chapter-3/4 unit: this module and, transitively, what it imports (data preparation, the SGD engine
    of :mod:`dpbench.methods.ldp_sgd`, the noise samplers, the data loaders)."""
    from dpbench.codehash import code_hash as closure_hash

    return closure_hash(__name__)


def is_ch34_series(name: str) -> bool:
    return name.startswith(("ch3_", "ch4_"))


def series(cfg: dict, name: str) -> list[str]:
    """The configured series of chapter-3/4 figure ``name`` (one per dataset, or per dataset and panel)."""
    fc = cfg["figures"][name]
    if name in ("fig3_1", "fig3_2"):
        return [f"ch3_{d}" for d in CH3_DATASETS if d in fc["datasets"]]
    if name == "fig3_3":
        return ["ch3_synthetic"]
    if name == "fig4_1":
        return [f"ch4_{d}_{p}" for d in CH4_DATASETS if d in fc["datasets"] for p in CH4_PANELS if fc.get(p)]
    raise ValueError(f"unknown figure {name!r} of {STUDY} chapters 3-4")


# ---------------------------------------------------------------------------------------------------------
# chapter 3 units
# ---------------------------------------------------------------------------------------------------------


def schedule_payload(config: dict, schedule: str) -> dict:
    ls = study_config(config)["ch3"]["large_step"]
    return {"kind": schedule, **({"c": float(ls["c"]), "T": ls["T"]} if schedule == "large" else {})}


def schedule_label(config: dict, schedule: str) -> str:
    if schedule == "inv_sqrt":
        return "η_t = 1/√t"
    if schedule == "inv_lambda_t":
        return "η_t = 1/(λt)"
    ls = study_config(config)["ch3"]["large_step"]
    return f"η = {ls['c']:g}/√T (T = updates)" if ls["T"] == "horizon" else f"η_t = {ls['c']:g}/√t"


def ch3_steps(config: dict, schedule: str, T_updates: int) -> np.ndarray:
    """η_t, t = 1..T (t counts mini-batch updates): 1/√t, 1/(λt), or the larger rate '10/√T' of §3.4.4 — ``horizon``:
    c/√T with T the number of updates of the pass (constant), ``iteration``: c/√t."""
    t = np.arange(1, T_updates + 1, dtype=np.float64)
    lam = float(study_config(config)["ch3"]["l2"])
    if schedule == "inv_sqrt":
        return 1.0 / np.sqrt(t)
    if schedule == "inv_lambda_t":
        return 1.0 / (lam * t)
    if schedule == "large":
        ls = study_config(config)["ch3"]["large_step"]
        if ls["T"] == "horizon":
            return np.full(T_updates, float(ls["c"]) / math.sqrt(T_updates))
        return float(ls["c"]) / np.sqrt(t)
    raise ValueError(f"unknown schedule {schedule!r}; known: {SCHEDULES}")


def _store(config):
    return Store(config["cache_dir"])


def ch3_unit(config: dict, dkey: str, b: int, schedule: str) -> dict:
    """One pass of private (3.6) and non-private mini-batch SGD on ``permutations`` random permutations; the
    objective (3.1) at ``checkpoints`` + 1 evenly spaced update counts (0 and T included)."""
    c3 = study_config(config)["ch3"]
    payload = {"kind": "song2018-ch3-unit", "code": code_hash(), "data": dataset_payload(config, dkey), "b": int(b),
               "schedule": schedule_payload(config, schedule), "R": int(c3["permutations"]), "l2": float(c3["l2"]),
               "epsilon": float(c3["epsilon"]), "checkpoints": int(c3["checkpoints"]), "seed": config["seed"]}
    key = content_key(payload)

    def compute():
        a = load_prepared(config, dkey)
        X, y = a["X"], a["y"]
        n = X.shape[0]
        R, lam = payload["R"], payload["l2"]
        Tn = n // b                                   # single pass; n mod b rows left out of the pass
        rng = generator(config["seed"], f"song2018/ch3/{stream_key(payload)}")
        seq = np.stack([rng.permutation(n)[:Tn * b] for _ in range(R)])
        eta = np.tile(ch3_steps(config, schedule, Tn), (2 * R, 1))
        eps = np.r_[np.full(R, payload["epsilon"]), np.full(R, np.inf)]
        ckpt = np.unique(np.round(np.linspace(0, Tn, payload["checkpoints"] + 1)).astype(int))
        t0 = time.perf_counter()
        out = L.sgd_runs(X, y, seq, b, eta, rng, l2=lam, radius=1.0 / lam, noise="batch", epsilon=eps,
                         model_run=np.r_[np.arange(R), np.arange(R)], checkpoints=ckpt)
        tr = out["trace"]
        return {"ckpt": ckpt.tolist(), "trace_private": tr[:R].tolist(), "trace_non_private": tr[R:].tolist(),
                "T": int(Tn), "n": int(n), "seconds": time.perf_counter() - t0, "variant": a["variant"],
                "is_substitute": a["is_substitute"]}

    return _store(config).record(key, compute)


def centralized_unit(config: dict, dkey: str) -> dict:
    """min_w (3.1) on all rows by L-BFGS (the "centralized" curve of Fig. 3.2; deterministic)."""
    c3 = study_config(config)["ch3"]
    payload = {"kind": "song2018-ch3-central", "code": code_hash(), "data": dataset_payload(config, dkey),
               "l2": float(c3["l2"])}

    def compute():
        from scipy.optimize import minimize
        from scipy.special import expit

        a = load_prepared(config, dkey)
        X, y, lam = a["X"], a["y"], payload["l2"]

        def fg(w):
            m = y * (X @ w)
            return (np.logaddexp(0, -m).mean() + 0.5 * lam * w @ w,
                    X.T @ (-expit(-m) * y) / X.shape[0] + lam * w)

        res = minimize(fg, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B",
                       options={"maxiter": 20000, "gtol": 1e-12, "ftol": 1e-15})
        return {"value": float(res.fun), "norm": float(np.linalg.norm(res.x)), "iterations": int(res.nit),
                "variant": a["variant"], "is_substitute": a["is_substitute"], "n": int(X.shape[0])}

    return _store(config).record(content_key(payload), compute)


def _run(jobs, n_jobs: int, label: str = ""):
    """Run ``(function, args)`` jobs (BLAS limited to 1 thread each; joblib processes when n_jobs > 1)."""
    return run_units(_apply, [(f, a) for f, a in jobs], n_jobs, label)


def _apply(f, a):
    return f(*a)


def _base_row(config, figure, series_name, method, dataset, rec, x_name):
    pre, dep = preprocessing_label(config, dataset, bool(rec["is_substitute"]))
    return {"study": STUDY, "figure": figure, "series": series_name, "method": method, "method_label": LABELS[method],
            "dataset": dataset, "dataset_variant": rec["variant"], "is_substitute": bool(rec["is_substitute"]),
            "preprocessing": pre, "preprocessing_data_dependent": dep,
            "x_name": x_name, "seed": int(config["seed"]), "applicable": True, "na_reason": "",
            "delta": 0.0, "budget": float("nan")}  # every report is pure ε-LDP (δ = 0); no inference budget


def run_ch3(config: dict, figure: str, series_name: str, n_jobs: int = 1) -> pd.DataFrame:
    cfg = study_config(config)
    c3, fc = cfg["ch3"], cfg["figures"][figure]
    dataset = series_name[len("ch3_"):]
    dkey = f"ch3_{dataset}"
    if figure == "fig3_1":
        plan = [(int(b), "inv_sqrt") for b in fc["batch_sizes"][dataset]]
    elif figure == "fig3_2":
        plan = [(int(b), s) for s in fc["schedules"] for b in fc["batch_sizes"]]
    else:
        plan = [(int(fc["batch_size"]), s) for s in fc["schedules"]]
    load_prepared(config, dkey)                       # prepare once before the workers start
    recs = _run([(ch3_unit, (config, dkey, b, s)) for b, s in plan], n_jobs, f"song2018/{figure}/{series_name}")
    rows = []
    params = {"epsilon": float(c3["epsilon"]), "l2": float(c3["l2"])}
    for (b, s), rec in zip(plan, recs):
        for method in ("private", "non_private"):
            base = _base_row(config, figure, series_name, method, dataset, rec,
                             "batch_size" if figure == "fig3_2" else "samples")
            base.update(params, batch_size=b, schedule=s, curve=schedule_label(config, s), n_train=rec["n"],
                        updates=rec["T"], runtime_s=float(rec["seconds"]))
            tr = np.asarray(rec[f"trace_{method}"])
            for r in range(tr.shape[0]):
                if figure == "fig3_2":
                    rows.append({**base, "x": float(b), "rep": r, "metric": "objective", "value": float(tr[r, -1])})
                else:
                    for k, v in zip(rec["ckpt"], tr[r]):
                        rows.append({**base, "x": float(k * b), "rep": r, "metric": "objective", "value": float(v),
                                     "iteration": int(k)})
    if figure == "fig3_2":
        rec = centralized_unit(config, dkey)
        for b in fc["batch_sizes"]:
            for s in fc["schedules"]:
                base = _base_row(config, figure, series_name, "centralized", dataset, rec, "batch_size")
                rows.append({**base, **params, "batch_size": int(b), "schedule": s, "curve": schedule_label(config, s),
                             "n_train": rec["n"], "updates": 0, "runtime_s": 0.0, "x": float(b), "rep": 0,
                             "metric": "objective", "value": rec["value"]})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------------
# chapter 4 units
# ---------------------------------------------------------------------------------------------------------


def ch4_unit(config: dict, dkey: str, method: str, runs: int, eps_n: float, c=None, c2=None, order=None,
             twins: bool = False) -> dict:
    """``runs`` independent runs of one chapter-4 method; final objective (4.1) of each run (and of its noiseless
    twin v_T+1 with the same data order when ``twins``)."""
    p = ch4_params(config)
    payload = {"kind": "song2018-ch4-unit", "code": code_hash(), "data": dataset_payload(config, dkey),
               "method": method, "runs": int(runs), "params": p, "seed": config["seed"], "twins": bool(twins),
               "eps_n": None if method in ("optimal", "clean_only") else float(eps_n),
               "c": None if c is None else float(c), "c2": None if c2 is None else float(c2), "order": order}
    key = content_key(payload)

    def compute():
        a = load_prepared(config, dkey)
        X, y = a["X"], a["y"]
        n, d = X.shape
        lam, b = p["l2"], p["b"]
        rule = ch4_rule(config, d, method, eps_n, c, c2, order)
        nc, nn = ch4_sizes(n, b, p["beta"])
        T1 = (nc if rule["order"] in ("CN", "C") else nn) // b
        Tn = (nc if rule["order"] == "C" else nc + nn) // b
        eta = L.two_phase_steps(rule["c1"], rule["c2"], T1, Tn)
        rng = generator(config["seed"], f"song2018/ch4/{stream_key(payload)}")
        per_chunk = max(1, int(4_000_000 // max(n, 1)))
        f_w, f_v = [], []
        t0 = time.perf_counter()
        for start in range(0, runs, per_chunk):
            Rk = min(per_chunk, runs - start)
            seq, eps = _ch4_sequences(rng, n, nc, nn, Rk, rule["order"], p["eps_c"], eps_n)
            M = 2 * Rk if twins else Rk
            noisy = np.r_[np.full(Rk, rule["noise"]), np.zeros(M - Rk, dtype=bool)]
            mr = np.r_[np.arange(Rk), np.arange(M - Rk)]
            out = L.sgd_runs(X, y, seq, b, np.tile(eta, (M, 1)), rng, l2=lam, radius=1.0 / lam,
                             noise="sample", epsilon=eps, noisy=noisy, model_run=mr)
            f = L.objective_many(out["W"], X, y, lam)
            f_w += f[:Rk].tolist()
            f_v += f[Rk:].tolist()
        return {"f_w": f_w, "f_v": f_v if twins else None, "order": rule["order"], "c1": float(rule["c1"]),
                "c2": float(rule["c2"]), "T": int(Tn), "T1": int(T1), "n_clean": int(nc), "n_noisy": int(nn),
                "n": int(n), "dim": int(d), "seconds": time.perf_counter() - t0, "variant": a["variant"],
                "is_substitute": a["is_substitute"]}

    return _store(config).record(key, compute)


def run_ch4(config: dict, figure: str, series_name: str, n_jobs: int = 1) -> pd.DataFrame:
    cfg = study_config(config)
    fc = cfg["figures"]["fig4_1"]
    _, dataset, panel = series_name.split("_", 2)
    dkey = f"ch4_{dataset}"
    a = load_prepared(config, dkey)
    d = int(a["X"].shape[1])
    p = ch4_params(config)
    pc = fc[panel]
    jobs, meta = [], []
    if panel == "order":
        for m in ORDER_METHODS:
            for c in pc["cs"]:
                jobs.append((ch4_unit, (config, dkey, m, int(pc["runs"]), float(pc["epsilon_noisy"]), float(c),
                                        None, None, True)))
                meta.append((m, float(c), float(pc["epsilon_noisy"])))
    elif panel == "epsn":
        for m in EPSN_METHODS:
            for e in pc["epsilon_noisys"]:
                jobs.append((ch4_unit, (config, dkey, m, int(pc["runs"]), float(e))))
                meta.append((m, float(e), float(e)))
    else:
        e = float(pc["epsilon_noisy"][dataset])
        br = c2_brackets(config, d, e)
        grid = c2_grid(config, d, e)
        for c2 in grid:
            jobs.append((ch4_unit, (config, dkey, "alg1", int(pc["runs"]), e, None, c2, br["order"])))
            meta.append(("alg1", c2, e))
        jobs.append((ch4_unit, (config, dkey, "clean_only", int(pc["runs"]), e)))
        meta.append(("clean_only", None, e))
    recs = _run(jobs, n_jobs, f"song2018/fig4_1/{series_name}")
    rows = []
    x_name = {"order": "c", "epsn": "epsilon_noisy", "c2": "c2"}[panel]
    for (m, x, e), rec in zip(meta, recs):
        base = _base_row(config, figure, series_name, m, dataset, rec, x_name)
        base.update(panel=panel, epsilon=e, epsilon_clean=p["eps_c"], epsilon_noisy=e, l2=p["l2"], batch_size=p["b"],
                    beta_clean=p["beta"], order=rec["order"], c1=rec["c1"], c2=rec["c2"], n_train=rec["n"],
                    n_clean=rec["n_clean"], n_noisy=rec["n_noisy"], dim=rec["dim"], updates=rec["T"],
                    runtime_s=float(rec["seconds"]), curve="")
        if panel == "c2":
            base.update(c2_lower=br["c2_lower"], c2_upper=br["c2_upper"], alg2_order=br["order"],
                        order_lower=br["order_lower"])
        xs = grid if x is None else [x]
        for r, fw in enumerate(rec["f_w"]):
            for xv in xs:
                row = {**base, "x": float(xv), "rep": r, "f_w": float(fw)}
                if panel == "order":
                    fv = float(rec["f_v"][r])
                    row.update(metric="abs_f_w_minus_f_v", value=abs(float(fw) - fv), f_v=fv)
                else:
                    row.update(metric="objective", value=float(fw))
                rows.append(row)
    return pd.DataFrame(rows)


def run_series(config: dict, figure: str, series_name: str, n_jobs: int = 1) -> pd.DataFrame:
    if figure not in FIGURES:
        raise ValueError(f"unknown figure {figure!r} of {STUDY} chapters 3-4")
    if series_name not in series(study_config(config), figure):
        raise ValueError(f"series {series_name!r} is not a series of {STUDY}/{figure}; "
                         f"configured: {series(study_config(config), figure)}")
    if figure.startswith("fig3"):
        return run_ch3(config, figure, series_name, n_jobs)
    return run_ch4(config, figure, series_name, n_jobs)
