"""wu2016 chapter 4 — the computation: output perturbation (Alg 5/6, its oracle / data-independent / privately tuned variants),
objective perturbation and the functional mechanism for logistic (diabetes) and linear (Warfarin) regression,
and the model-inversion attack on VKORC1 (Wu 2016, §4.2 and §4.4, Algorithms 5–7, Figs. 4.1–4.8; methods, data,
open choices and anchors B1–B7: docs/studies/wu2016.md). Figures fig4_1, fig4_2, fig4_3, fig4_5, fig4_6, fig4_7,
fig4_8; fig4_4 (the simulated clinical trial) is out of scope.

Unit of work and of caching: one (dataset, method, repetition, ε grid) run — the repetition fixes the
train/test split (shared by every method, so comparisons are paired), every ε of the grid is trained once and
both its test MSE and its model-inversion accuracy are evaluated from the same released model. Fig. 4.8 units
are (method, repetition, ε grid, fraction grid). Units are content-keyed (not by figure), so figures with the
same grid share them; :class:`dpbench.store.Store` makes an interrupted run resume.

Algorithms: :mod:`dpbench.methods.output_perturbation`, :mod:`dpbench.methods.objective_perturbation`,
:mod:`dpbench.methods.functional_mechanism`; attack: :mod:`dpbench.attacks.model_inversion`; data:
:mod:`dpbench.data.warfarin`, the registry's ``diabetes`` (loaded and scaled by
:mod:`dpbench.studies.wu2016.ch4_data`).

The chapter's code hash (:func:`code_hash`) is the import closure of this module (:mod:`dpbench.codehash`): it
imports no caption, plot or anchor code, and nothing of chapter 3.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np
import pandas as pd

from dpbench.attacks import model_inversion as mi
from dpbench.data import warfarin as wf
from dpbench.methods import functional_mechanism as fm
from dpbench.methods import objective_perturbation as objp
from dpbench.methods import output_perturbation as op
from dpbench.parallel import run_units
from dpbench.results import TIGHT_SUFFIX, calibration_of, tight_source
from dpbench.rng import generator, stream_key
from dpbench.store import Store, content_key
from dpbench.studies.wu2016.ch4_data import (STUDY, ch4_cfg, dataset_payload, load_diabetes, load_warfarin,
                                             preprocessing_label, split_indices, study_cfg)

log = logging.getLogger(__name__)

PREFIX = "ch4_"
#: ``<op method>_tight``: the same algorithm with the tight calibration Δ = G/(λn) of
#: :func:`dpbench.methods.output_perturbation.sensitivity_exact`; ``fm_tight``: the functional mechanism with the
#: exact L1 sensitivity of its coefficients (:func:`dpbench.methods.functional_mechanism.fm_logistic_sensitivity`,
#: ``calibration="tight"``) (rows: ``calibration = "tight"``)
TIGHT = TIGHT_SUFFIX
METHODS = ("non_private", "op_oracle", "op_data_independent", "op_tuned_r1", "op_tuned_r2", "objp_tuned_r1",
           "objp_tuned_r2", "fm", "op_data_independent_tight", "op_tuned_r1_tight", "op_tuned_r2_tight", "fm_tight")
DIABETES_METHODS = ("non_private", "op_oracle", "op_data_independent", "fm", "op_data_independent_tight", "fm_tight")
LABELS = {"non_private": "Non-Private", "op_oracle": "Oracle Output Pert. (not private)",
          "op_data_independent": "Data-Independent Output Pert.", "op_tuned_r1": "Tuned Output Pert. (R₁)",
          "op_tuned_r2": "Tuned Output Pert. (R₂)", "objp_tuned_r1": "Tuned Objective Pert. (R₁)",
          "objp_tuned_r2": "Tuned Objective Pert. (R₂)", "fm": "Functional Mechanism",
          "op_data_independent_tight": "Data-Independent Output Pert. (tight calibration)",
          "op_tuned_r1_tight": "Tuned Output Pert. (R₁, tight calibration)",
          "op_tuned_r2_tight": "Tuned Output Pert. (R₂, tight calibration)",
          "fm_tight": "Functional Mechanism (tight calibration)"}


def calibration(method: str) -> str:
    """``"tight"`` for the ``*_tight`` methods (Δ = G/(λn); the functional mechanism's exact Δ*), else ``"source"``
    (the thesis' Δ or the config's ``ch4.op_sensitivity``)."""
    return calibration_of(method)


def _base(method: str, ch: dict) -> tuple[str, dict]:
    """(the algorithm behind ``method``, the choices it runs with): a ``*_tight`` method is its base method with
    ``op_sensitivity = "tight"`` (output perturbation) or the functional mechanism's ``calibration = "tight"``."""
    base = tight_source(method)
    if base is not None:
        if base == "fm":
            return base, {**ch, "fm": {**ch["fm"], "calibration": "tight"}}
        return base, {**ch, "op_sensitivity": "tight"}
    return method, ch
FIGURE_NAMES = ("fig4_1", "fig4_2", "fig4_3", "fig4_5", "fig4_6", "fig4_7", "fig4_8")


def code_hash() -> str:
    """Hash of the sources every chapter-4 series depends on: this module's import closure (mechanisms, attack,
    data loading and scaling, this module)."""
    from dpbench.codehash import code_hash as closure_hash

    return closure_hash(__name__)


def is_ch4(name: str) -> bool:
    """True for a chapter-4 figure or series name."""
    return name in FIGURE_NAMES or name.startswith(PREFIX)


def series(cfg: dict, name: str) -> list[str]:
    fc = cfg["figures"][name]
    return [PREFIX + m for m in fc["methods"]]


def _method(series_name: str) -> str:
    if not series_name.startswith(PREFIX) or series_name[len(PREFIX):] not in METHODS:
        raise ValueError(f"{series_name!r} is not a chapter-4 series; known: {[PREFIX + m for m in METHODS]}")
    return series_name[len(PREFIX):]


# ---------------------------------------------------------------------------------------------------------
# methods: one call trains the models of every ε (E, d)
# ---------------------------------------------------------------------------------------------------------


def _choices(config: dict) -> dict:
    c4 = ch4_cfg(config)
    return {k: c4[k] for k in ("oracle", "data_independent_radius", "tuning", "op_sensitivity", "fm",
                               "non_private_l2")}


def _tuned(loss, X, y, eps, rng, ch, which, rset, chunks=None, validation=None):
    """Alg 7 for every ε (fresh noise and selection per ε, the same chunks)."""
    t = ch["tuning"]
    radii = [float(r) for r in t["radius_sets"][rset]]
    m = len(radii) * int(t["lambda_count"])
    if chunks is None:
        idx = op.make_chunks(X.shape[0], m, rng)
        chunks = [(X[i], y[i]) for i in idx[:-1]]
        validation = (X[idx[-1]], y[idx[-1]])
    n_chunk = min(c[0].shape[0] for c in chunks)
    if n_chunk < 1:
        raise ValueError("a training chunk of Alg 7 is empty: too few training records for the grid")
    lams = op.tuning_lambda_grid(X.shape[1], n_chunk, int(t["lambda_count"]), float(t["lambda_ratio"]),
                                 float(t["lambda_eps_start"]))
    form = ch["op_sensitivity"]

    def train(Xc, yc, R, lam, e, g):
        if which == "op":
            return op.output_perturbation(loss, Xc, yc, lam, R, e, g, sensitivity=form).w
        return objp.objective_perturbation(loss, Xc, yc, lam, R, e, g).w

    W, R, L = [], [], []
    for e in eps:
        res = op.private_tuning(loss, chunks, validation, radii, lams, e, rng, train, t["utility_sensitivity"])
        W.append(res.w)
        R.append(res.R)
        L.append(res.lam)
    return np.array(W), {"R": R, "lam": L}


def train_models(method: str, loss: str, X, y, eps, rng, ch) -> tuple[np.ndarray, dict]:
    """(E, d) released models of ``method`` for every ε in ``eps`` on (X, y), and the parameters used."""
    method, ch = _base(method, ch)
    n, d = X.shape
    E = len(eps)
    if method == "non_private":
        if loss == "squared":
            w = np.linalg.lstsq(X, y, rcond=None)[0]
        else:
            w = op.erm_ball(loss, X, y, float(ch["non_private_l2"]), None)
        return np.tile(w, (E, 1)), {"R": [float("nan")] * E, "lam": [0.0 if loss == "squared" else ch["non_private_l2"]] * E}
    if method == "op_data_independent":
        W, R, L = [], [], []
        wbar = {}
        for e in eps:
            r, lam = op.data_independent_parameters(d, n, e, ch["data_independent_radius"])
            res = op.output_perturbation(loss, X, y, lam, r, e, rng, sensitivity=ch["op_sensitivity"],
                                         w_bar=wbar.get((r, lam)))
            wbar[(r, lam)] = res.w_bar
            W.append(res.w)
            R.append(r)
            L.append(lam)
        return np.array(W), {"R": R, "lam": L}
    if method == "op_oracle":
        o = ch["oracle"]
        lams = op.oracle_lambda_grid(d, n, int(o["lambda_points"]), float(o["eps_start"]), float(o["eps_end"]))
        res = op.oracle_output_perturbation(loss, X, y, o["radii"], lams, eps, rng, ch["op_sensitivity"])
        return res["w"], {"R": res["R"].tolist(), "lam": res["lam"].tolist()}
    if method.startswith("op_tuned_") or method.startswith("objp_tuned_"):
        which, rset = method.split("_tuned_")
        return _tuned(loss, X, y, eps, rng, ch, which, rset)
    if method == "fm":
        f = ch["fm"]
        cal = f.get("calibration", "source")
        W = []
        for e in eps:
            if loss == "squared":
                W.append(fm.functional_mechanism_linear(X, y, e, rng, f["domain"], f["ridge"], f["trim"], cal).w)
            else:
                W.append(fm.functional_mechanism_logistic(X, (y + 1) / 2, e, rng, f["domain"], f["ridge"], f["trim"],
                                                          cal).w)
        return np.array(W), {"R": [float("nan")] * E, "lam": [float("nan")] * E}
    raise ValueError(f"unknown method {method!r}; known: {METHODS}")


def _mi(W, w: wf.Warfarin, idx, Xtr, ytr) -> tuple[np.ndarray, float]:
    """Model-inversion accuracy of every model on the records ``idx`` and the prior-only baseline."""
    prior = mi.empirical_marginal(w.vkorc1[idx], 3)
    sigma = np.maximum(mi.residual_scale(W, Xtr, ytr), 1e-12)
    acc = mi.model_inversion_accuracy(W, w.Z[idx], w.y[idx], w.vkorc1[idx], wf.VKORC1_BLOCK, wf.VKORC1_CANDIDATES,
                                      prior, sigma, wf.unit_rows)
    return np.atleast_1d(acc), mi.prior_baseline_accuracy(w.vkorc1[idx], prior)


def unit(config: dict, dataset: str, method: str, rep: int, eps) -> dict:
    """One cached unit: ``method`` on repetition ``rep``'s split for every ε: diabetes → test accuracy;
    Warfarin → test MSE (scaled target and target units) and MI accuracy over the training split."""
    eps = [float(e) for e in eps]
    payload = {"kind": "wu2016-ch4-unit", "code": code_hash(), "data": dataset_payload(config, dataset),
               "method": method, "rep": int(rep), "eps": eps, "seed": config["seed"], "choices": _choices(config),
               "test_fraction": ch4_cfg(config)["test_fraction"]}
    key = content_key(payload)

    def compute():
        t0 = time.perf_counter()
        rng = generator(config["seed"], f"wu2016/ch4/{stream_key(payload)}")
        ch = _choices(config)
        if dataset == "diabetes":
            d = load_diabetes(config)
            tr, te = split_indices(config, dataset, d["X"].shape[0], rep)
            W, info = train_models(method, "logistic", d["X"][tr], d["y"][tr], eps, rng, ch)
            pred = np.where(W @ d["X"][te].T >= 0, 1.0, -1.0)
            return {"accuracy": np.mean(pred == d["y"][te], axis=1).tolist(), **info, "n_train": int(len(tr)),
                    "variant": d["variant"], "is_substitute": bool(d["is_substitute"]),
                    "seconds": time.perf_counter() - t0}
        w = load_warfarin(config)
        tr, te = split_indices(config, dataset, w.n, rep)
        W, info = train_models(method, "squared", w.X[tr], w.y[tr], eps, rng, ch)
        mse = np.mean((w.y[te][None, :] - W @ w.X[te].T) ** 2, axis=1)
        acc, prior = _mi(W, w, tr, w.X[tr], w.y[tr])
        return {"mse_scaled": mse.tolist(), "mse": (mse * w.target_scale ** 2).tolist(), "mi": acc.tolist(),
                "prior": prior, **info, "n_train": int(len(tr)), "variant": w.variant, "is_substitute": False,
                "seconds": time.perf_counter() - t0}

    return Store(config["cache_dir"]).record(key, compute)


def fig48_unit(config: dict, method: str, rep: int, eps, fractions) -> dict:
    """Fig. 4.8 unit (the procedure of Wu 2016, Fig. 4.8 caption): permute, hold out the test split, cut the
    training portion into the m + 1 chunks of Alg 7 (last = validation), subsample each training chunk at rate r
    (its first ⌈r·size⌉ records in random order, so the samples are nested in r), tune; test MSE and MI over the
    training portion."""
    eps = [float(e) for e in eps]
    fractions = [float(r) for r in fractions]
    payload = {"kind": "wu2016-ch4-fig48", "code": code_hash(), "data": dataset_payload(config, "warfarin"),
               "method": method, "rep": int(rep), "eps": eps, "fractions": fractions, "seed": config["seed"],
               "choices": _choices(config), "test_fraction": ch4_cfg(config)["test_fraction"]}
    key = content_key(payload)

    def compute():
        t0 = time.perf_counter()
        rng = generator(config["seed"], f"wu2016/ch4/{stream_key(payload)}")
        base, ch = _base(method, _choices(config))
        w = load_warfarin(config)
        tr, te = split_indices(config, "warfarin/fig4_8", w.n, rep)
        which, rset = base.split("_tuned_")
        m = len(ch["tuning"]["radius_sets"][rset]) * int(ch["tuning"]["lambda_count"])
        parts = op.make_chunks(len(tr), m, rng)
        val = tr[parts[-1]]
        out = {"mse": [], "mse_scaled": [], "mi": [], "chunk_size": []}
        for r in fractions:
            chunks = [tr[p[:max(1, math.ceil(r * len(p)))]] for p in parts[:-1]]
            W, _ = _tuned("squared", w.X, w.y, eps, rng, ch, which, rset,
                          chunks=[(w.X[c], w.y[c]) for c in chunks], validation=(w.X[val], w.y[val]))
            mse = np.mean((w.y[te][None, :] - W @ w.X[te].T) ** 2, axis=1)
            acc, prior = _mi(W, w, tr, w.X[tr], w.y[tr])
            out["mse_scaled"].append(mse.tolist())
            out["mse"].append((mse * w.target_scale ** 2).tolist())
            out["mi"].append(acc.tolist())
            out["chunk_size"].append(int(np.mean([len(c) for c in chunks])))
        return {**out, "prior": prior, "n_train": int(len(tr)), "variant": w.variant, "is_substitute": False,
                "seconds": time.perf_counter() - t0}

    return Store(config["cache_dir"]).record(key, compute)


def _pre_cols(config: dict, dataset: str, is_substitute: bool) -> dict:
    txt, dep = preprocessing_label(config, dataset, bool(is_substitute))
    return {"preprocessing": txt, "preprocessing_data_dependent": dep}


def _parallel(fn, jobs, n_jobs, label=""):
    return run_units(fn, jobs, n_jobs, label)


def run_series(config: dict, figure: str, series_name: str, n_jobs: int = 1) -> pd.DataFrame:
    """Long rows of one chapter-4 series (module docstring)."""
    if figure not in FIGURE_NAMES:
        raise ValueError(f"unknown chapter-4 figure {figure!r}; known: {sorted(FIGURE_NAMES)}")
    method = _method(series_name)
    cfg = study_cfg(config)
    fc = cfg["figures"][figure]
    if series_name not in series(cfg, figure):
        raise ValueError(f"{series_name!r} is not a series of {STUDY}/{figure}; known: {series(cfg, figure)}")
    eps = [float(e) for e in fc["epsilons"]]
    seed = int(config["seed"])
    rows = []
    base = {"study": STUDY, "figure": figure, "series": series_name, "method": method, "method_label": LABELS[method],
            "seed": seed, "delta": 0.0, "budget": float("nan"),  # every chapter-4 method is pure ε-DP (δ = 0)
            "calibration": calibration(method)}
    if figure == "fig4_8":
        reps = int(fc["repetitions"])
        recs = _parallel(fig48_unit, [(config, method, r, eps, fc["fractions"]) for r in range(reps)], n_jobs,
                         f"wu2016/fig4_8/{series_name}")
        for r, rec in enumerate(recs):
            for i, frac in enumerate(fc["fractions"]):
                for j, e in enumerate(eps):
                    common = {**base, "dataset": "warfarin", "dataset_variant": rec["variant"], "is_substitute": False,
                              **_pre_cols(config, "warfarin", False),
                              "x_name": "fraction", "x": float(frac), "epsilon": e, "rep": r,
                              "chunk_size": rec["chunk_size"][i], "n_train": rec["n_train"],
                              "prior_baseline": rec["prior"], "runtime_s": rec["seconds"]}
                    rows.append({**common, "metric": "mse", "value": rec["mse"][i][j]})
                    rows.append({**common, "metric": "mse_scaled", "value": rec["mse_scaled"][i][j]})
                    rows.append({**common, "metric": "mi_accuracy", "value": rec["mi"][i][j]})
        return pd.DataFrame(rows)
    dataset = "diabetes" if figure == "fig4_1" else "warfarin"
    reps = int(ch4_cfg(config)["repetitions"])
    recs = _parallel(unit, [(config, dataset, method, r, eps) for r in range(reps)], n_jobs,
                     f"wu2016/{figure}/{series_name}")
    for r, rec in enumerate(recs):
        for j, e in enumerate(eps):
            common = {**base, "dataset": dataset, "dataset_variant": rec["variant"],
                      "is_substitute": bool(rec["is_substitute"]), **_pre_cols(config, dataset, rec["is_substitute"]),
                      "x_name": "epsilon", "x": e, "epsilon": e, "rep": r,
                      "radius": float(rec["R"][j]), "lambda": float(rec["lam"][j]), "n_train": rec["n_train"],
                      "runtime_s": rec["seconds"]}
            if dataset == "diabetes":
                rows.append({**common, "metric": "accuracy", "value": rec["accuracy"][j], "prior_baseline": np.nan})
            else:
                common["prior_baseline"] = rec["prior"]
                rows.append({**common, "metric": "mse", "value": rec["mse"][j]})
                rows.append({**common, "metric": "mse_scaled", "value": rec["mse_scaled"][j]})
                rows.append({**common, "metric": "mi_accuracy", "value": rec["mi"][j]})
    return pd.DataFrame(rows)
