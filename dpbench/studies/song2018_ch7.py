"""song2018 chapter 7 experiments (Fig. 7.4, 7.5, Tables 7.1–7.3): Laplace scales, trials, result rows.

The figure specs, captions, plots and anchor checks live in :mod:`dpbench.studies.song2018`; this module only
computes (its source, with the mechanisms and the data generators, is what ``series_code_hash`` hashes).

* **Scale** of a mechanism = L·σ with L the query's L1-Lipschitz constant (1/T for the synthetic scalar
  F = ΣX_i/T, 2/N for a relative-frequency histogram over N observations) and σ from
  :mod:`dpbench.methods.pufferfish` (σ = ∞: not applicable, e.g. GK16 with ‖Φ‖₂ ≥ 1). Scales are cached in the
  content-keyed store (``cache_dir``), so a rerun, or Fig. 7.5 after Table 7.1, reuses them.
* **Trials**: every release is F(D) + scale·Lap(1) per coordinate with noise from
  ``generator(seed, key)``, keyed by (experiment, series, group/α, ε, number of trials) — never by worker or
  order, so results are identical for any ``n_jobs``. The error is the L1 distance between the release and F(D).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import math
import time

import numpy as np
import pandas as pd

from dpbench.data import markov
from dpbench.methods import pufferfish as pf
from dpbench.rng import generator
from dpbench.store import Store, content_key

STUDY = "song2018"
LABELS = {"dp": "DP", "group_dp": "GroupDP", "gk16": "GK16", "mqm_approx": "MQMApprox", "mqm_exact": "MQMExact",
          "exact": "exact"}
SYNTHETIC_VARIANT = f"synthetic:binary-markov-{markov.VERSION}"


@functools.lru_cache(maxsize=1)
def code_hash() -> str:
    """Hash of the sources that compute every chapter-7 series (mechanisms, data generators, this module)."""
    import sys

    h = hashlib.sha256()
    for mod in (pf, markov, sys.modules[__name__]):
        h.update(inspect.getsource(mod).encode())
    return h.hexdigest()[:16]


def _cached(config: dict, payload: dict, compute) -> dict:
    """A JSON record computed once per content key (process-safe), e.g. the Laplace scale of a method."""
    key = content_key({"kind": "song2018-ch7", "code": code_hash(), **payload})
    return Store(config["cache_dir"]).record(key, compute)


def _rec(sigma: float, res: pf.MQMResult | None = None, **extra) -> dict:
    out = {"sigma": float(sigma), "applicable": bool(math.isfinite(sigma)), "reason": "", "node": None,
           "quilt": None, "card": None, "influence": None, "ell": None}
    if res is not None:
        out.update(node=res.node, quilt=list(res.quilt), card=res.card, influence=res.influence, ell=res.ell,
                   chain_length=res.chain_length)
    out.update(extra)
    return out


def _gk16_rec(norm: float, eps: float, **extra) -> dict:
    sigma = pf.gk16_scale(1.0, norm, eps)
    rec = _rec(sigma, norm=float(norm), **extra)
    if not rec["applicable"]:
        rec["reason"] = (f"influence-matrix spectral norm {norm:.3g} >= 1" if math.isfinite(norm)
                         else "influence matrix unbounded (a transition of probability 0)")
    return rec


def _row(config, figure, series, **kw) -> dict:
    row = {"study": STUDY, "figure": figure, "series": series, "method": series,
           "method_label": LABELS.get(series, series), "dataset": "", "dataset_variant": "", "is_substitute": False,
           "x_name": "epsilon", "x": np.nan, "rep": 0, "metric": "l1_error", "value": np.nan, "epsilon": np.nan,
           "group": "", "task": "", "state": "", "lipschitz": np.nan, "sigma_max": np.nan, "noise_scale": np.nan,
           "expected_error": np.nan, "applicable": True, "na_reason": "", "quilt": "", "quilt_node": -1, "quilt_card": -1,
           "quilt_influence": np.nan, "ell": -1, "influence_norm": np.nan, "theta_argmax": "", "runtime_s": np.nan,
           "n_trials": 0, "chain_length": -1, "seed": int(config["seed"]),
           "delta": 0.0, "budget": np.nan}  # ε-Pufferfish privacy (pure, δ = 0); no inference budget
    row.update(kw)
    return row


def _rec_cols(rec: dict) -> dict:
    q = rec.get("quilt")
    return {"sigma_max": rec["sigma"] if rec["applicable"] else np.inf, "applicable": rec["applicable"],
            "na_reason": rec.get("reason", ""),
            "quilt": "" if q is None else "{" + ", ".join(f"X{j}" for j in q) + "}",
            "quilt_node": rec.get("node") or -1, "quilt_card": rec.get("card") or -1,
            "quilt_influence": np.nan if rec.get("influence") is None else rec["influence"],
            "ell": rec.get("ell") or -1, "influence_norm": rec.get("norm", np.nan),
            "theta_argmax": rec.get("theta", ""), "runtime_s": rec.get("runtime_s", np.nan)}


# ---------------------------------------------------------------------------------------------------------
# synthetic binary chains: Θ = [α, 1 − α] (Fig. 7.4)
# ---------------------------------------------------------------------------------------------------------


def binary_grid(alpha: float, step: float) -> np.ndarray:
    """Grid over [α, 1 − α] with spacing ≤ ``step``, both endpoints included."""
    n = int(math.ceil((1 - 2 * alpha) / step - 1e-9)) + 1
    return np.linspace(alpha, 1 - alpha, max(n, 2))


def binary_class_parameters(alpha: float, bound: str) -> tuple[float, float]:
    """(π_Θ^min, g_Θ) of Θ = [α, 1−α] in closed form: π_min = α (at p₀ = α, p₁ = 1 − α); the second eigenvalue
    λ = p₀ + p₁ − 1 has |λ| ≤ 1 − 2α, so g = 2α for the reversible bound and 1 − (1 − 2α)² for the eigengap
    of P P* = P² (binary chains are reversible, P* = P)."""
    return alpha, (2 * alpha if bound == "reversible" else 1 - (1 - 2 * alpha) ** 2)


def binary_class_scale(method: str, alpha: float, T: int, eps_list, step: float, bound: str) -> dict:
    """σ (the Laplace scale per unit L) of ``method`` for Θ = [α, 1−α] × (every initial distribution), chains of
    length T, for each ε: {repr(ε): record}. MQMExact and GK16 take the max over a (p₀, p₁) grid of spacing
    ``step`` (endpoints included); MQMApprox uses the closed-form class parameters; GroupDP σ = T/ε."""
    t0 = time.perf_counter()
    out = {}
    if method == "group_dp":
        for e in eps_list:
            out[repr(e)] = _rec(pf.group_dp_scale(1.0, T, e))
    elif method == "mqm_approx":
        pi_min, g = binary_class_parameters(alpha, bound)
        for e, r in zip(eps_list, pf.mqm_approx(pi_min, g, [T], list(eps_list), ell=T, bound=bound)):
            out[repr(e)] = _rec(r.sigma_max, r, pi_min=pi_min, g=g, bound=bound)
    elif method == "mqm_exact":
        grid = binary_grid(alpha, step)
        thetas = [(None, markov.binary_transition(a, b)) for a in grid for b in grid]
        for e, r in zip(eps_list, pf.mqm_exact(thetas, T, list(eps_list), ell=T)):
            P = thetas[r.theta][1]
            out[repr(e)] = _rec(r.sigma_max, r, theta=f"p0={P[0, 0]:.4g}, p1={P[1, 1]:.4g}", grid_points=len(thetas))
    elif method == "gk16":
        grid = binary_grid(alpha, step)
        norms = [(pf.gk16_norm(pf.gk16_influences(markov.binary_transition(a, b)), [T]), a, b)
                 for a in grid for b in grid]
        norm, a, b = max(norms)
        for e in eps_list:
            out[repr(e)] = _gk16_rec(norm, e, theta=f"p0={a:.4g}, p1={b:.4g}")
    else:
        raise ValueError(f"unknown fig7_4 series {method!r}")
    dt = time.perf_counter() - t0
    for r in out.values():
        r["runtime_s"] = dt
    return out


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


def chain_model(d: markov.ChainData) -> tuple[np.ndarray, np.ndarray]:
    """Θ = {(π̂, P̂)}: the empirical transition matrix of the (pooled) chains and its stationary distribution.

    θ̂ lives on the largest strongly connected set of observed transitions (by observations): a state seen too
    rarely to be both entered and left there has probability 0 under θ̂ and so no secret; transitions out of
    the set are removed and rows renormalised. With the full-size data every state is kept.
    """
    from scipy.sparse.csgraph import connected_components

    P = markov.empirical_transition_matrix(d.states, d.lengths, d.k)
    _, comp = connected_components(P > 0, directed=True, connection="strong")
    counts = np.bincount(comp, weights=np.bincount(d.states, minlength=d.k))
    keep = np.flatnonzero(comp == int(np.argmax(counts)))
    if keep.size < d.k:
        P = P[np.ix_(keep, keep)]
        P = P / P.sum(axis=1, keepdims=True)
    markov.require_ergodic(P, d.name)
    return P, pf.stationary_distribution(P)


def chain_scale(method: str, P, pi, lengths, eps: float, tables=None) -> dict:
    """σ of ``method`` for Θ = {(π, P)} and independent chains of the given lengths (per unit L).

    MQMApprox: Lemma 7.4.6 (general bound: empirical chains need not be reversible) with ℓ = 4a* of
    Lemma 7.4.7; MQMExact: ℓ = card(X_N) of the optimal MQMApprox quilt (Song 2018, §7.6.3); GroupDP: the longest
    chain; GK16: influence matrix with q = π."""
    t0 = time.perf_counter()
    lengths = np.asarray(lengths, int)
    if method == "group_dp":
        rec = _rec(pf.group_dp_scale(1.0, int(lengths.max()), eps))
    elif method in ("mqm_approx", "mqm_exact"):
        pi_min, g = float(pi.min()), pf.eigengap(P)
        ra = pf.mqm_approx(pi_min, g, lengths, eps)
        if method == "mqm_approx":
            rec = _rec(ra.sigma_max, ra, pi_min=pi_min, g=g, bound="general")
        else:
            rx = pf.mqm_exact_stationary(P, lengths, eps, ra.card, pi=pi, tables=tables)
            rule = "card of the optimal MQMApprox quilt"
            if rx.sigma_max > ra.sigma_max and ra.ell > ra.card:
                # ℓ from MQMApprox's optimal quilt left out quilts MQMApprox used elsewhere: search its full ℓ
                big = tables if tables is not None and tables[0].shape[0] > ra.ell else None
                rx = pf.mqm_exact_stationary(P, lengths, eps, ra.ell, pi=pi, tables=big)
                rule = "MQMApprox's ℓ (the thesis's rule gave a larger scale than MQMApprox)"
            rec = _rec(rx.sigma_max, rx, pi_min=pi_min, g=g, ell_rule=rule)
    elif method == "gk16":
        rec = _gk16_rec(pf.gk16_norm(pf.gk16_influences(P, pi), lengths), eps)
    else:
        raise ValueError(f"unknown series {method!r}")
    rec["runtime_s"] = time.perf_counter() - t0
    return rec


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
            agg = _rec(int(person_T.max()) / eps, n_max=int(person_T.max()))
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

RUNTIME_COLUMNS = ("synthetic", "cyclist", "older_woman", "overweight_woman", "electricity")


def _synthetic_scale_once(method: str, P, T: int, eps: float) -> float:
    """σ for the singleton transition matrix P with every initial distribution (the per-θ procedure the thesis
    times on the (p₀, p₁) grid)."""
    if method == "mqm_exact":
        return pf.mqm_exact([(None, P)], T, eps, ell=T).sigma_max
    if method == "mqm_approx":
        return pf.mqm_approx(float(pf.stationary_distribution(P).min()), pf.reversible_gap(P), [T], eps, ell=T,
                             bound="reversible").sigma_max
    if method == "gk16":
        return pf.gk16_scale(1.0, pf.gk16_norm(pf.gk16_influences(P), [T]), eps)
    raise ValueError(f"unknown table7_2 series {method!r}")


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
    _synthetic_scale_once(series, markov.binary_transition(grid[0], grid[-1]), T, eps)   # untimed warm-up
    for a in grid:
        for b in grid:
            P = markov.binary_transition(a, b)
            t0 = time.perf_counter()
            sig = _synthetic_scale_once(series, P, T, eps)
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


#: series whose noise scale is computed from Θ = {(π̂, P̂)} on the real-data stand-ins (:func:`chain_model`)
THETA_FROM_DATA = ("gk16", "mqm_approx", "mqm_exact")
THETA_NOTE = ("non-private step, as in the source: Θ = {(π̂, P̂)} estimated from the same chains sets the noise "
              "scale (Song 2018, §7.6.3); no preprocessing of the state sequences")


def label_preprocessing(df: pd.DataFrame) -> pd.DataFrame:
    """Add the ``preprocessing`` / ``preprocessing_data_dependent`` columns: the state sequences are never
    transformed; on the activity/electricity stand-ins GK16, MQMApprox and MQMExact calibrate their noise with Θ
    estimated from the released chains themselves, which the ε does not cover (flagged True)."""
    df = df.copy()
    if not len(df):
        df["preprocessing"], df["preprocessing_data_dependent"] = pd.Series(dtype=str), pd.Series(dtype=bool)
        return df
    synthetic = df["dataset"].astype(str).str.startswith("synthetic")
    dep = (~synthetic & df["series"].isin(THETA_FROM_DATA)).to_numpy()
    df["preprocessing"] = np.where(dep, THETA_NOTE, np.where(
        synthetic, "none (generated chains; Θ fixed by the experiment)", "none (raw state sequences)"))
    df["preprocessing_data_dependent"] = dep
    return df


def run_series(config: dict, figure: str, series: str, n_jobs: int = 1) -> pd.DataFrame:
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
