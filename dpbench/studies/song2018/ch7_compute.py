"""song2018 chapter 7 experiments (Fig. 7.4, 7.5, Tables 7.1–7.3): trials and result rows (the Laplace scales:
:mod:`~dpbench.studies.song2018.ch7_scales`).

This module and what it imports are the chapter's compute code (:mod:`dpbench.codehash`): an edit here, in the
scales, the mechanisms or the data generators recomputes every chapter-7 series and cached scale; an edit of the
captions, plots, tables or anchor checks (the sibling modules) does not. The rows are built by
:mod:`~dpbench.studies.song2018.ch7_rows`.

* **Scale** of a mechanism = L·σ with L the query's L1-Lipschitz constant (1/T for the synthetic scalar
  F = ΣX_i/T, 2/N for a relative-frequency histogram over N observations) and σ from
  :mod:`dpbench.methods.pufferfish` (σ = ∞: not applicable, e.g. GK16 with ‖Φ‖₂ ≥ 1). Scales are cached in the
  content-keyed store (``cache_dir``), so a rerun, or Fig. 7.5 after Table 7.1, reuses them.
* **Trials**: every release is F(D) + scale·Lap(1) per coordinate with noise from
  ``generator(seed, key)``, keyed by (experiment, series, group/α, ε, number of trials) — never by worker or
  order, so results are identical for any ``n_jobs``. The error is the L1 distance between the release and F(D).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd

from dpbench.data import markov
from dpbench.methods import pufferfish as pf
from dpbench.rng import generator
from dpbench.store import Store, content_key
from dpbench.studies.song2018 import ch7_rows
from dpbench.studies.song2018.ch7_rows import STUDY, _rec_cols, _row, label_preprocessing
from dpbench.studies.song2018.ch7_scales import (binary_class_scale, chain_model, chain_scale, scale_record,
                                                synthetic_scale_once)

LABELS = ch7_rows.LABELS   # the series' legend texts (the views read them from here)
SYNTHETIC_VARIANT = f"synthetic:binary-markov-{markov.VERSION}"

#: the series of each chapter-7 figure (the figure specs: :mod:`dpbench.studies.song2018.spec`)
SERIES = {"fig7_4": ("group_dp", "gk16", "mqm_approx", "mqm_exact"),
          "table7_1": ("dp", "group_dp", "gk16", "mqm_approx", "mqm_exact"),
          "table7_2": ("gk16", "mqm_approx", "mqm_exact"),
          "table7_3": ("group_dp", "gk16", "mqm_approx", "mqm_exact"),
          "fig7_5": ("exact", "group_dp", "gk16", "mqm_approx", "mqm_exact")}
RUNTIME_COLUMNS = ("synthetic", "cyclist", "older_woman", "overweight_woman", "electricity")


def code_hash() -> str:
    """Every chapter-7 series and cached scale: this module and, transitively, what it imports (the scales, the
    mechanisms of :mod:`dpbench.methods.pufferfish`, the chain generators of :mod:`dpbench.data.markov`)."""
    from dpbench.codehash import code_hash as closure_hash

    return closure_hash(__name__)


def _cached(config: dict, payload: dict, compute) -> dict:
    """A JSON record computed once per content key (process-safe), e.g. the Laplace scale of a method."""
    key = content_key({"kind": "song2018-ch7", "code": code_hash(), **payload})
    return Store(config["cache_dir"]).record(key, compute)


# ---------------------------------------------------------------------------------------------------------
# synthetic binary chains: Θ = [α, 1 − α] (Fig. 7.4)
# ---------------------------------------------------------------------------------------------------------


def _binary_scale_job(config, method, alpha, T, eps_list, step, bound):
    from threadpoolctl import threadpool_limits

    payload = {"what": "binary-class-scale", "method": method, "alpha": alpha, "T": T, "eps": list(eps_list),
               "step": step if method in ("mqm_exact", "gk16") else None,
               "bound": bound if method == "mqm_approx" else None}
    with threadpool_limits(1):
        return _cached(config, payload, lambda: binary_class_scale(method, alpha, T, eps_list, step, bound))


def run_fig7_4(config: dict, series: str, n_jobs: int = 1) -> pd.DataFrame:
    """L1 error of the released frequency of state 1 vs α, per ε (Fig. 7.4); one row per (α, ε, trial)."""
    fc = config["studies"][STUDY]["figures"]["fig7_4"]
    T, trials, step, bound = int(fc["chain_length"]), int(fc["trials"]), float(fc["theta_grid_step"]), fc["approx_bound"]
    alphas = [float(a) for a in fc["alphas"]]
    eps_list = [float(e) for e in fc["epsilons"]]
    jobs = [(config, series, a, T, eps_list, step, bound) for a in alphas]
    if n_jobs > 1 and series in ("mqm_exact", "gk16") and len(alphas) > 1:
        from joblib import Parallel, delayed

        recs = Parallel(n_jobs=n_jobs)(delayed(_binary_scale_job)(*j) for j in jobs)
    else:
        recs = [_binary_scale_job(*j) for j in jobs]
    L = 1.0 / T
    rows = []
    for alpha, rec_a in zip(alphas, recs):
        data = markov.binary_class_trials(config["seed"], alpha, T, trials)
        F = data["X"].mean(axis=1)                     # frequency of state 1 (thesis: F = ΣX_i/T, 1/T-Lipschitz)
        for e in eps_list:
            rec = rec_a[repr(e)]
            rng = generator(config["seed"], f"song2018/fig7_4/noise/{series}/T={T}/alpha={alpha!r}/eps={e!r}/n={trials}")
            z = rng.laplace(0.0, 1.0, trials)
            scale = L * rec["sigma"] if rec["applicable"] else np.inf
            err = np.abs((F + scale * z) - F) if rec["applicable"] else np.full(trials, np.nan)
            base = _row(config, "fig7_4", series, dataset="synthetic_binary_chain", dataset_variant=SYNTHETIC_VARIANT,
                        is_substitute=False, x_name="alpha", x=alpha, epsilon=e, lipschitz=L, noise_scale=scale,
                        expected_error=scale,
                        n_trials=trials, chain_length=T, **_rec_cols(rec))
            rows.extend({**base, "rep": r, "value": float(err[r])} for r in range(trials))
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------------
# real-data stand-ins: Θ = {(π̂, P̂)} estimated from the (simulated) data (Tables 7.1–7.3, Fig. 7.5)
# ---------------------------------------------------------------------------------------------------------


def activity_params(cfg: dict) -> dict:
    a = cfg["activity"]
    return {"persons": [int(p) for p in a["persons"]], "observations": [int(o) for o in a["observations"]]}


def load_activity(config: dict) -> dict:
    p = activity_params(config["studies"][STUDY])
    return markov.load_activity(config["data"]["cache_dir"], config["seed"], p["persons"], p["observations"])


def load_electricity(config: dict) -> markov.ChainData:
    T = int(config["studies"][STUDY]["electricity"]["length"])
    return markov.load_electricity(config["data"]["cache_dir"], config["seed"], T)


def _data_id(config, what: str) -> dict:
    cfg = config["studies"][STUDY]
    if what == "electricity":
        return {"data": "electricity", "seed": config["seed"], "T": int(cfg["electricity"]["length"]),
                "v": markov.VERSION}
    return {"data": "activity", "seed": config["seed"], **activity_params(cfg), "v": markov.VERSION}


def activity_scales(config: dict, method: str, group: str, eps: float) -> dict:
    """Scales of both activity tasks for one group: aggregate (pooled chains, L = 2/N; DP: one record per person,
    L1 change ≤ 2·n_max/N) and individual (per person, L = 2/T_p). Cached."""

    def compute():
        d = load_activity(config)[group]
        P, pi = chain_model(d)
        N = d.T
        person_T = np.bincount(d.owner, weights=d.lengths).astype(int)
        if method == "dp":
            agg = scale_record(int(person_T.max()) / eps, n_max=int(person_T.max()))
            ind = None
        else:
            tables = None
            if method == "mqm_exact":  # one (a, b) table at the largest ℓ serves the group and every person
                g, pmin = pf.eigengap(P), float(pi.min())
                ells = [pf.mqm_approx(pmin, g, d.lengths, eps).card]
                ells += [pf.mqm_approx(pmin, g, d.lengths[d.owner == p], eps).card for p in range(d.n_owners)]
                tables = pf.stationary_influence_tables(P, pi, max(ells))
            agg = chain_scale(method, P, pi, d.lengths, eps, tables)
            ind = [chain_scale(method, P, pi, d.lengths[d.owner == p], eps, tables) for p in range(d.n_owners)]
        return {"aggregate": {**agg, "N": int(N)}, "individual": ind, "person_T": person_T.tolist(),
                "P": P.tolist(), "pi": pi.tolist()}

    return _cached(config, {"what": "activity-scale", **_data_id(config, "activity"), "method": method,
                            "group": group, "eps": eps}, compute)


def _activity_releases(config, series, group, eps, trials):
    """(exact aggregate histogram, released aggregate histograms (trials, k), per-trial individual errors)."""
    d = load_activity(config)[group]
    sc = activity_scales(config, series, group, eps)
    agg = sc["aggregate"]
    h = d.histogram()
    key = f"song2018/activity/{group}/noise/{series}/eps={eps!r}/n={trials}"
    L = 2.0 / d.T
    scale = L * agg["sigma"] if agg["applicable"] else np.inf
    z = generator(config["seed"], key + "/aggregate").laplace(0.0, 1.0, (trials, d.k))
    released = h[None, :] + scale * z if agg["applicable"] else np.full((trials, d.k), np.nan)
    ind_err, ind_scale = None, None
    if sc["individual"] is not None:
        ph = d.owner_histograms()
        pT = np.asarray(sc["person_T"], float)
        sig = np.array([r["sigma"] if r["applicable"] else np.inf for r in sc["individual"]])
        ind_scale = 2.0 / pT * sig
        zi = generator(config["seed"], key + "/individual").laplace(0.0, 1.0, (trials, len(pT), d.k))
        with np.errstate(invalid="ignore"):
            rel_i = ph[None] + ind_scale[None, :, None] * zi
            ind_err = np.abs(rel_i - ph[None]).sum(axis=2).mean(axis=1)   # mean over persons of the L1 error
        if not np.isfinite(sig).all():
            ind_err = np.full(trials, np.nan)
    return d, sc, h, released, scale, ind_err, ind_scale


def run_activity(config: dict, figure: str, series: str) -> pd.DataFrame:
    """Table 7.1 (L1 errors, aggregate and individual tasks) or Fig. 7.5 (released aggregate histograms)."""
    cfg = config["studies"][STUDY]
    fc = cfg["figures"][figure]
    eps, trials = float(fc["epsilon"]), int(fc["trials"])
    rows = []
    for group in markov.ACTIVITY_GROUPS:
        if series == "exact":
            d = load_activity(config)[group]
            h = d.histogram()
            common = dict(dataset=f"activity/{group}", dataset_variant=d.variant, is_substitute=True, epsilon=eps,
                          group=group, task="aggregate", metric="relative_frequency", x_name="state", n_trials=1)
            rows += [_row(config, figure, series, x=float(s), state=d.state_names[s], value=float(h[s]), **common)
                     for s in range(d.k)]
            continue
        d, sc, h, released, scale, ind_err, ind_scale = _activity_releases(config, series, group, eps, trials)
        agg = sc["aggregate"]
        common = dict(dataset=f"activity/{group}", dataset_variant=d.variant, is_substitute=True, epsilon=eps,
                      group=group, n_trials=trials, chain_length=int(d.lengths.max()))
        if figure == "fig7_5":
            for r in range(trials):
                rows += [_row(config, figure, series, x_name="state", x=float(s), state=d.state_names[s], rep=r,
                              task="aggregate", metric="relative_frequency", value=float(released[r, s]),
                              lipschitz=2.0 / d.T, noise_scale=scale, **common, **_rec_cols(agg)) for s in range(d.k)]
            continue
        err = np.abs(released - h[None, :]).sum(axis=1)
        rows += [_row(config, figure, series, x=eps, rep=r, task="aggregate", value=float(err[r]),
                      lipschitz=2.0 / d.T, noise_scale=scale, expected_error=d.k * scale, **common,
                      **_rec_cols(agg)) for r in range(trials)]
        if sc["individual"] is None:
            rows.append(_row(config, figure, series, x=eps, rep=0, task="individual", value=np.nan, applicable=False,
                             na_reason="DP treats a person as one record: it has no per-person histogram release",
                             **common))
        else:
            ind = sc["individual"]
            ok = all(r["applicable"] for r in ind)
            worst = max(ind, key=lambda r: r["sigma"])
            cols = _rec_cols(worst)
            cols.update(applicable=ok, runtime_s=float(sum(r["runtime_s"] for r in ind)),
                        na_reason="" if ok else next(r["reason"] for r in ind if not r["applicable"]))
            rows += [_row(config, figure, series, x=eps, rep=r, task="individual", value=float(ind_err[r]),
                          lipschitz=np.nan, noise_scale=float(np.mean(ind_scale)),
                          expected_error=float(d.k * np.mean(ind_scale)), **common, **cols)
                     for r in range(trials)]
    return pd.DataFrame(rows)


def electricity_scale(config: dict, method: str, eps: float) -> dict:
    def compute():
        d = load_electricity(config)
        P, pi = chain_model(d)
        return {**chain_scale(method, P, pi, d.lengths, eps), "T": d.T}

    return _cached(config, {"what": "electricity-scale", **_data_id(config, "electricity"), "method": method,
                            "eps": eps}, compute)


def run_table7_3(config: dict, series: str) -> pd.DataFrame:
    """L1 error of the released 51-bin relative-frequency histogram of the electricity chain (Table 7.3)."""
    fc = config["studies"][STUDY]["figures"]["table7_3"]
    trials = int(fc["trials"])
    d = load_electricity(config)
    h = d.histogram()
    L = 2.0 / d.T
    rows = []
    for e in [float(x) for x in fc["epsilons"]]:
        rec = electricity_scale(config, series, e)
        scale = L * rec["sigma"] if rec["applicable"] else np.inf
        z = generator(config["seed"], f"song2018/electricity/noise/{series}/eps={e!r}/n={trials}").laplace(
            0.0, 1.0, (trials, d.k))
        released = h[None, :] + scale * z if rec["applicable"] else np.full((trials, d.k), np.nan)
        err = np.abs(released - h[None, :]).sum(axis=1)
        rows += [_row(config, "table7_3", series, dataset="electricity", dataset_variant=d.variant, is_substitute=True,
                      x=e, epsilon=e, rep=r, value=float(err[r]), lipschitz=L, noise_scale=scale,
                      expected_error=d.k * scale, n_trials=trials,
                      chain_length=d.T, **_rec_cols(rec)) for r in range(trials)]
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------------
# Table 7.2: time to compute the Laplace scale
# ---------------------------------------------------------------------------------------------------------


def run_table7_2(config: dict, series: str) -> pd.DataFrame:
    """Seconds to compute the Laplace scale (ε from the config), sequentially in this process.

    Synthetic: the mean over every θ = (p₀, p₁) of the grid {lo, lo + h, …, hi}² (thesis: 0.1:0.01:0.9) of one
    computation for that θ with every initial distribution (chains of ``chain_length``). Real-data columns: the whole scale
    computation for Θ = {(π̂, P̂)} (aggregate task; MQMExact includes the MQMApprox run that sets its ℓ), repeated
    ``repeats`` times after one untimed warm-up run. Data loading and the estimation of P̂ are not timed.
    """
    cfg = config["studies"][STUDY]
    fc = cfg["figures"]["table7_2"]
    eps, reps = float(fc["epsilon"]), int(fc["repeats"])
    lo, hi = (float(v) for v in fc["theta_range"])
    step = float(fc["theta_grid_step"])
    T = int(fc["chain_length"])
    rows = []
    grid = np.linspace(lo, hi, int(round((hi - lo) / step)) + 1)
    times, applicable = [], True
    synthetic_scale_once(series, markov.binary_transition(grid[0], grid[-1]), T, eps)   # untimed warm-up
    for a in grid:
        for b in grid:
            P = markov.binary_transition(a, b)
            t0 = time.perf_counter()
            sig = synthetic_scale_once(series, P, T, eps)
            times.append(time.perf_counter() - t0)
            applicable &= math.isfinite(sig)
    rows.append(_row(config, "table7_2", series, dataset="synthetic", dataset_variant=SYNTHETIC_VARIANT, x=eps,
                     epsilon=eps, metric="runtime_s", value=float(np.mean(times)), runtime_s=float(np.mean(times)),
                     applicable=True, n_trials=len(times), chain_length=T,
                     na_reason="" if applicable else "not applicable for part of the grid"))
    act = load_activity(config)
    models = {g: (act[g], *chain_model(act[g])) for g in markov.ACTIVITY_GROUPS}
    el = load_electricity(config)
    models["electricity"] = (el, *chain_model(el))
    for col in RUNTIME_COLUMNS[1:]:
        d, P, pi = models[col]
        chain_scale(series, P, pi, d.lengths, eps)            # untimed warm-up (lazy imports, caches, pages)
        for r in range(reps):
            t0 = time.perf_counter()
            rec = chain_scale(series, P, pi, d.lengths, eps)
            dt = time.perf_counter() - t0
            rows.append(_row(config, "table7_2", series, dataset=col, dataset_variant=d.variant, is_substitute=True,
                             x=eps, epsilon=eps, rep=r, metric="runtime_s", value=dt, n_trials=reps,
                             chain_length=int(d.lengths.max()), **{**_rec_cols(rec), "runtime_s": dt}))
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------------
# dispatch
# ---------------------------------------------------------------------------------------------------------


def run_series(config: dict, figure: str, series: str, n_jobs: int = 1) -> pd.DataFrame:
    if figure not in SERIES:
        raise ValueError(f"unknown song2018 figure {figure!r}")
    if series not in SERIES[figure]:
        raise ValueError(f"method {series!r} is not a series of {STUDY}/{figure}; known: {list(SERIES[figure])}")
    if figure == "fig7_4":
        return label_preprocessing(run_fig7_4(config, series, n_jobs))
    if figure in ("table7_1", "fig7_5"):
        return label_preprocessing(run_activity(config, figure, series))
    if figure == "table7_3":
        return label_preprocessing(run_table7_3(config, series))
    if figure == "table7_2":
        return label_preprocessing(run_table7_2(config, series))
    raise ValueError(f"unknown song2018 figure {figure!r}")


def prepare_dataset(config: dict) -> dict:
    """Generate (or load from the cache) the simulated chains the configured figures need; a JSON manifest."""
    cfg = config["studies"][STUDY]
    figs = {f for f, fc in cfg.get("figures", {}).items() if fc is not None}  # null = disabled
    out = {"study": STUDY, "datasets": {}, "is_substitute": False, "dataset_variant": SYNTHETIC_VARIANT}
    if figs & {"table7_1", "fig7_5", "table7_2"}:
        for g, d in load_activity(config).items():
            out["datasets"][f"activity/{g}"] = {
                "variant": d.variant, "is_substitute": True, "observations": d.T, "persons": d.n_owners,
                "chains": int(d.lengths.size), "longest_chain": int(d.lengths.max()), "states": list(d.state_names),
                "note": "SIMULATED stand-in for the private physical-activity data of Ellis et al."}
    if figs & {"table7_3", "table7_2"}:
        d = load_electricity(config)
        out["datasets"]["electricity"] = {
            "variant": d.variant, "is_substitute": True, "observations": d.T, "states": d.k,
            "note": "SIMULATED stand-in for the AMPds household power data (51 bins of 200 W)"}
    if out["datasets"]:
        out["is_substitute"] = True
        out["dataset_variant"] = ", ".join(sorted({v["variant"] for v in out["datasets"].values()}))
    return out
