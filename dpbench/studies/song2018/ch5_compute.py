"""song2018 chapter 5 — Scalable PATE (Song 2018, PhD dissertation, ch. 5, §5.4; Papernot, Song et al.,
"Scalable private learning with PATE", ICLR 2018): LNMax vs GNMax vs Confident- and Interactive-GNMax with the
data-dependent RDP analysis (setting, inferred values and deviations in
docs/studies/song2018.md#chapter-5-scalable-pate).

Figures and series (a series name starts with ``ch5_``; every unit is cached by content key in
``config["cache_dir"]``):

* table5_1 — ``ch5_mnist`` (M = 250 teachers trained on disjoint partitions of MNIST, δ = 1e-5) and
  ``ch5_glyph`` (SIMULATED Glyph-like votes, M = 5,000, δ = 1e-8): one unit per configured aggregator row
  (queries answered, data-dependent ε, student accuracy) and the non-private baseline.
* fig5_1 — ``ch5_glyph``: student accuracy and ε vs answered queries for LNMax vs Confident-GNMax, answered
  queries per bin of teacher agreement.
* fig5_4 — ``ch5_left`` (M = 1000: LNMax vs GNMax over a noise grid) and ``ch5_right`` (GNMax for several M):
  label accuracy of the aggregated labels vs ε at δ over the first ``queries`` queries.
* fig5_5 — ``ch5_glyph``: plurality-vote histogram, answered queries of LNMax / Confident moderate / aggressive,
  expected per-query GNMax RDP per bin.
* fig5_6 — ``ch5_glyph``: ε vs answered queries, with the threshold step's share.

Mechanisms: :mod:`dpbench.methods.pate`; accounting: :mod:`dpbench.privacy.pate`; votes and students:
:mod:`~dpbench.studies.song2018.ch5_votes`. This module and what it imports are the chapter's compute code
(:mod:`dpbench.codehash`).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from dpbench.methods import pate as A
from dpbench.privacy import pate as P
from dpbench.privacy import pate_smooth as SS
from dpbench.rng import generator, stream_key
from dpbench.store import Store, content_key
from dpbench.studies.song2018 import ch5_votes as V

STUDY = V.STUDY
FIGURES = ("table5_1", "fig5_1", "fig5_4", "fig5_5", "fig5_6")
DATASETS = ("mnist", "glyph")
LABELS = {"lnmax": "LNMax", "gnmax": "GNMax", "confident": "Confident-GNMax",
          "interactive": "Interactive-GNMax, two rounds", "baseline": "non-private baseline"}
GLYPH_VARIANT = "simulated:glyph-like"
CURVE_POINTS = 150
#: table5_1 metrics of the GNSS-sanitised ε (GNMax-based rows, ``ch5.gnss.enabled``)
GNSS_METRICS = ("eps_raw_at_gnss_order", "eps_gnss_expected", "eps_gnss_quantile", "eps_gnss_released",
                "gnss_order", "gnss_ss", "gnss_cost", "gnss_quantile")


def code_hash() -> str:
    """Every chapter-5 unit: this module and what it imports (aggregators, accounting, votes, data loaders)."""
    from dpbench.codehash import code_hash as closure_hash

    return closure_hash(__name__)


def is_ch5_series(name: str) -> bool:
    return name.startswith("ch5_")


def series(cfg: dict, name: str) -> list[str]:
    fc = cfg["figures"][name]
    if name == "table5_1":
        return [f"ch5_{d}" for d in DATASETS if fc.get(d)]
    if name == "fig5_4":
        return [f"ch5_{p}" for p in ("left", "right") if fc.get(p)]
    if name in ("fig5_1", "fig5_5", "fig5_6"):
        return ["ch5_glyph"]
    raise ValueError(f"unknown figure {name!r} of {STUDY} chapter 5")


def _store(config):
    return Store(config["cache_dir"])


# ---------------------------------------------------------------------------------------------------------
# data of one dataset / ensemble
# ---------------------------------------------------------------------------------------------------------


def _data(config: dict, dataset: str, M: int | None = None) -> dict:
    """Pool votes, pool labels and features, held-out features and labels, the variant."""
    c5 = V.ch5_config(config)
    if dataset == "mnist":
        r = V.mnist_votes(config)
        h = int(r["half"])
        return {"votes": r["votes"], "pool_y": r["y"][:h], "pool_X": r["Z"][:h], "test_X": r["Z"][h:],
                "test_y": r["y"][h:], "variant": str(r["variant"]), "is_substitute": bool(r["is_substitute"]),
                "M": int(c5["mnist"]["teachers"]), "classes": 10, "baseline_W": r["baseline_W"]}
    g = c5["glyph"]
    q = V.glyph_queries(config)
    n = int(g["pool"])
    M = int(M or g["teachers"])
    return {"votes": V.glyph_votes(config, M)[:n], "pool_y": q["recorded"][:n], "pool_X": q["X"][:n],
            "test_X": q["X"][n:], "test_y": q["recorded"][n:], "variant": GLYPH_VARIANT, "is_substitute": True,
            "M": M, "classes": int(g["classes"])}


def _student(config: dict, dataset: str, d: dict, X, labels) -> float:
    """Accuracy on the held-out half of a student trained on (X, labels) only [INFERRED learners]."""
    if len(labels) == 0:
        return float("nan")
    if dataset == "mnist":
        W = V.ridge_fit(np.asarray(X, np.float64), labels, 10, float(V.ch5_config(config)["mnist"]["l2"]))[0]
        pred = np.argmax(np.asarray(d["test_X"], np.float64) @ W, axis=1)
    else:
        pred = np.argmax(V.nearest_mean_scores(V.nearest_mean_fit(X, labels, d["classes"]), d["test_X"]), axis=1)
    return float(np.mean(pred == d["test_y"]))


def baseline_accuracy(config: dict, dataset: str) -> float:
    """Non-private baseline: MNIST — the learner on the whole training set; Glyph-like — the student learner on
    every pool query with its recorded label."""
    d = _data(config, dataset)
    if dataset == "mnist":
        return float(np.mean(np.argmax(np.asarray(d["test_X"], np.float64) @ d["baseline_W"], axis=1)
                             == d["test_y"]))
    return _student(config, dataset, d, d["pool_X"], d["pool_y"])


# ---------------------------------------------------------------------------------------------------------
# one aggregation run
# ---------------------------------------------------------------------------------------------------------


def _run_aggregator(spec: dict, votes, rng, proba=None) -> A.Answers:
    a = spec["aggregator"]
    if a == "lnmax":
        return A.lnmax(votes, float(spec["b"]), rng)
    if a == "gnmax":
        return A.gnmax(votes, float(spec["sigma"]), rng)
    if a == "confident":
        return A.confident_gnmax(votes, float(spec["T"]), float(spec["sigma1"]), float(spec["sigma2"]), rng)
    if a == "interactive":
        return A.interactive_gnmax(votes, proba, float(spec["T"]), float(spec["sigma1"]), float(spec["sigma2"]),
                                   float(spec["gamma"]), rng)
    raise ValueError(f"unknown aggregator {a!r}")


def _curve(rdp, rdp_thr, answered, delta) -> dict:
    """ε after each query (composed RDP, Thm 2.2.3/2.2.4) at ≤ CURVE_POINTS query counts, the answered count and
    the threshold step's share of the RDP at the optimal order."""
    cum = np.cumsum(rdp, axis=0)
    cthr = np.cumsum(rdp_thr, axis=0)
    idx = np.unique(np.r_[np.linspace(0, len(rdp) - 1, CURVE_POINTS).round().astype(int), len(rdp) - 1])
    eps, order = P.eps_from_rdp(cum[idx], delta)
    k = np.searchsorted(P.ORDERS, order)
    tot = cum[idx, k]
    share = np.where(tot > 0, cthr[idx, k] / np.where(tot > 0, tot, 1.0), 0.0)
    return {"queries": (idx + 1).tolist(), "answered": np.cumsum(answered)[idx].tolist(), "eps": eps.tolist(),
            "threshold_share": share.tolist()}


def _agreement_bins(votes, M, mask, bins: int) -> list[int]:
    frac = votes.max(axis=1) / float(M)
    b = np.minimum((frac * bins).astype(int), bins - 1)
    return np.bincount(b[mask], minlength=bins).tolist()


def gnss_config(config: dict) -> dict | None:
    """``studies.song2018.ch5.gnss`` when enabled, else None."""
    g = V.ch5_config(config).get("gnss")
    return dict(g) if g and g.get("enabled") else None


def _gnss(gcfg: dict, spec: dict, out: dict, delta: float, order: float, rng) -> dict:
    """The smooth-sensitivity sanitisation (GNSS, :mod:`dpbench.privacy.pate_smooth`) of the run's total
    data-dependent RDP at ``gcfg['order']`` (None: the order of the raw ε): the local-sensitivity bounds of the
    threshold step (every query) and of GNMax (the answered queries), summed over the queries of every round."""
    r, v = out["r"], out["v"]
    lam = float(order if gcfg.get("order") is None else gcfg["order"])
    k = int(np.argmin(np.abs(P.ORDERS - lam)))
    d = SS.distance_grid(int(round(v[0].sum())), 0.3 / lam)
    total = np.zeros(d.size)
    for seg in out["segments"]:
        sl = seg["slice"]
        if seg.get("T") is not None:
            total += SS.ls_threshold(seg["screen"], seg["T"], seg["sigma1"], lam, d, weights=np.ones(len(seg["screen"])))
        total += SS.ls_gnmax(v[sl], seg["sigma2"], lam, d, weights=r.answered[sl].astype(np.float64))
    g = SS.sanitise(float(r.rdp[:, k].sum()), total, d, float(r.rdp_independent[:, k].sum()), lam, delta, rng,
                    float(gcfg["quantile"]))
    return {"eps_gnss_expected": g.eps_expected, "eps_gnss_quantile": g.eps_quantile,
            "eps_gnss_released": g.eps_released, "eps_raw_at_gnss_order": g.eps_raw_at_order,
            "gnss_order": g.order, "gnss_beta": g.beta, "gnss_ss": g.ss, "gnss_sigma": g.sigma_ss,
            "gnss_cost": g.cost, "gnss_quantile": g.quantile, "gnss_max_distance": int(d[-1])}


def _segments(spec: dict, v) -> list[dict]:
    """The rounds of a non-interactive run, for :func:`_gnss`: GNMax alone or a threshold step on the max vote."""
    if spec["aggregator"] == "gnmax":
        return [{"slice": slice(0, len(v)), "sigma2": float(spec["sigma"])}]
    return [{"slice": slice(0, len(v)), "screen": v.max(axis=1), "T": float(spec["T"]),
             "sigma1": float(spec["sigma1"]), "sigma2": float(spec["sigma2"])}]


def answer_unit(config: dict, dataset: str, spec: dict, M: int | None = None, bins: int = 10,
                gnss: dict | None = None) -> dict:
    """Aggregate the first ``spec['queries']`` pool queries with ``spec`` (one rep), train the student on the
    answered ones; returns counts, ε (data-dependent and data-independent) at the dataset's δ, label and student
    accuracy, the ε curve and the answered queries per agreement bin; with ``gnss`` (the ``ch5.gnss`` settings)
    and a GNMax-based aggregator, also the GNSS-sanitised ε (:func:`_gnss`; LNMax: not applicable). The random
    streams are keyed without ``gnss``, so the raw values do not depend on it."""
    c5 = V.ch5_config(config)
    delta = float(c5["delta"][dataset])
    payload = {"kind": "song2018-ch5-answers", "code": code_hash(), "dataset": dataset,
               "data": V.mnist_payload(config) if dataset == "mnist" else V.glyph_payload(config),
               "M": None if M is None else int(M), "spec": spec, "delta": delta, "bins": int(bins),
               "seed": config["seed"], "orders": [float(P.ORDERS[0]), float(P.ORDERS[-1]), int(P.ORDERS.size)]}
    gnss = gnss if gnss is not None and spec["aggregator"] != "lnmax" else None
    key = content_key({**payload, "gnss": gnss}) if gnss is not None else content_key(payload)

    def compute():
        t0 = time.process_time()
        d = _data(config, dataset, M)
        rng = generator(config["seed"], f"song2018/ch5/answers/{stream_key(payload)}")
        if spec["aggregator"] == "interactive":
            out = _interactive(config, dataset, d, spec, rng)
        else:
            n = min(int(spec["queries"]), len(d["votes"]))
            v = d["votes"][:n]
            r = _run_aggregator(spec, v, rng)
            ans = r.answered
            lab = r.labels
            acc = _student(config, dataset, d, d["pool_X"][:n][ans], lab[ans])
            out = {"n": n, "r": r, "v": v, "labels": lab, "mask": ans, "student": acc, "reinforced": 0,
                   "segments": [] if spec["aggregator"] == "lnmax" else _segments(spec, v)}
        r, v, n = out["r"], out["v"], out["n"]
        eps, order = P.eps_from_rdp(r.rdp.sum(axis=0), delta)
        eps_i = P.eps_from_rdp(r.rdp_independent.sum(axis=0), delta)[0]
        ans = r.answered
        truth = d["pool_y"][:n]
        k = int(np.searchsorted(P.ORDERS, order))
        thr = float(r.rdp_threshold[:, k].sum() / max(r.rdp[:, k].sum(), 1e-300))
        extra = {}
        if gnss is not None:
            t1 = time.process_time()
            extra = _gnss(gnss, spec, out, delta, float(order),
                          generator(config["seed"], f"song2018/ch5/gnss/{stream_key(payload)}"))
            extra["gnss_runtime_s"] = time.process_time() - t1
        return {**extra, "n_queries": int(n), "answered": int(ans.sum()), "reinforced": int(out["reinforced"]),
                "eps": float(eps), "eps_independent": float(eps_i), "order": float(order), "delta": delta,
                "threshold_share": thr,
                "label_accuracy": float(np.mean(out["labels"][ans] == truth[ans])) if ans.any() else float("nan"),
                "student_accuracy": out["student"], "curve": _curve(r.rdp, r.rdp_threshold, ans, delta),
                "bins_answered": _agreement_bins(v, d["M"], ans, bins),
                "bins_all": _agreement_bins(v, d["M"], np.ones(n, bool), bins),
                "variant": d["variant"], "is_substitute": d["is_substitute"], "M": int(d["M"]),
                "n_eval": int(len(d["test_y"])), "runtime_s": time.process_time() - t0}

    return _store(config).record(key, compute)


def _interactive(config, dataset, d, spec, rng) -> dict:
    """Two rounds (Song 2018, §5.4.3): round 1 Confident-GNMax on the first ``round1.queries`` pool queries, a
    student trained on its answers; round 2 Interactive-GNMax (Algorithm 4) on the next ``round2.queries`` with
    that student's p(x); the final student learns from both rounds' teacher labels and the reinforced labels."""
    r1s, r2s = spec["round1"], spec["round2"]
    n1, n2 = int(r1s["queries"]), int(r2s["queries"])
    n = min(n1 + n2, len(d["votes"]))
    v = d["votes"][:n]
    r1 = _run_aggregator({"aggregator": "confident", **r1s}, v[:n1], rng)
    X = d["pool_X"][:n]
    if dataset == "mnist":
        raise ValueError("Interactive-GNMax is configured for the Glyph-like rows only (as in Table 5.1)")
    model = V.nearest_mean_fit(X[:n1][r1.answered], r1.labels[r1.answered], d["classes"])
    means, _ = model
    lab1 = r1.labels[r1.answered]
    tau = float(np.mean(np.sum((np.asarray(X[:n1][r1.answered], np.float64) - means[lab1]) ** 2, axis=1)))
    tau /= X.shape[1]                               # per-dimension within-class variance of round 1 [INFERRED]
    proba = V.nearest_mean_proba(model, X[n1:n], tau)
    r2 = _run_aggregator({"aggregator": "interactive", "gamma": spec["gamma"], **r2s}, v[n1:n], rng, proba)
    cat = lambda f: np.concatenate([getattr(r1, f), getattr(r2, f)])   # noqa: E731
    labels = cat("labels")
    answered = cat("answered")
    reinforced = np.r_[np.zeros(n1, bool), r2.reinforced]
    r = A.Answers(labels, answered, cat("rdp"), cat("rdp_threshold"), cat("rdp_independent"), r1.orders,
                  reinforced)
    use = answered | reinforced
    acc = _student(config, dataset, d, X[use], labels[use])
    M = v[0].sum()
    segs = [{**_segments({"aggregator": "confident", **r1s}, v[:n1])[0], "slice": slice(0, n1)},
            {"slice": slice(n1, n), "screen": (v[n1:n] - M * proba).max(axis=1), "T": float(r2s["T"]),
             "sigma1": float(r2s["sigma1"]), "sigma2": float(r2s["sigma2"])}]
    return {"n": n, "r": r, "v": v, "labels": labels, "mask": answered, "student": acc,
            "reinforced": int(reinforced.sum()), "segments": segs}


# ---------------------------------------------------------------------------------------------------------
# rows
# ---------------------------------------------------------------------------------------------------------


def _row(config, figure, series_name, method, rec, metric, value, **extra) -> dict:
    return {"study": STUDY, "figure": figure, "series": series_name, "method": method,
            "dataset_variant": rec["variant"], "epsilon": float(rec.get("eps", np.nan)),
            "delta": float(rec.get("delta", np.nan)), "budget": np.nan, "rep": 0, "metric": metric,
            "value": float(value), "seed": int(config["seed"]), "runtime_s": float(rec.get("runtime_s", 0.0)),
            "is_substitute": bool(rec["is_substitute"]), "teachers": int(rec.get("M", 0)), **extra}


def _spec_text(spec: dict) -> str:
    a = spec["aggregator"]
    if a == "lnmax":
        return f"LNMax (b = {spec['b']:g})"
    if a == "gnmax":
        return f"GNMax (σ = {spec['sigma']:g})"
    if a == "confident":
        return f"Confident-GNMax (T={spec['T']:g}, σ1={spec['sigma1']:g}, σ2={spec['sigma2']:g})"
    r1, r2 = spec["round1"], spec["round2"]
    return (f"Interactive-GNMax, 2 rounds (T={r1['T']:g}/{r2['T']:g}, σ1={r1['sigma1']:g}/{r2['sigma1']:g}, "
            f"σ2={r1['sigma2']:g}/{r2['sigma2']:g}, γ={spec['gamma']:g})")


def _curve_rows(config, figure, sname, method, rec, **extra) -> list[dict]:
    c = rec["curve"]
    rows = []
    for q, a, e, s in zip(c["queries"], c["answered"], c["eps"], c["threshold_share"]):
        rows.append(_row(config, figure, sname, method, rec, "eps_curve", e, x=float(a), queries=int(q),
                         threshold_share=float(s), **extra))
    return rows


def run_table5_1(config, figure, sname) -> pd.DataFrame:
    dataset = sname[len("ch5_"):]
    fc = config["studies"][STUDY]["figures"][figure]
    rows = []
    gnss = gnss_config(config)
    for i, spec in enumerate(fc[dataset]):
        rec = answer_unit(config, dataset, spec, gnss=gnss)
        label = _spec_text(spec)
        for metric in ("answered", "eps", "eps_independent", "student_accuracy", "label_accuracy", "reinforced",
                       "n_queries", "threshold_share", "n_eval", *(GNSS_METRICS if "gnss_order" in rec else ())):
            rows.append(_row(config, figure, sname, spec["aggregator"], rec, metric, rec[metric], dataset=dataset,
                             row=i, label=label, x=float(i)))
    t0 = time.process_time()
    base = baseline_accuracy(config, dataset)
    d = _data(config, dataset)
    rec = {"variant": d["variant"], "is_substitute": d["is_substitute"], "M": d["M"], "eps": np.inf,
           "delta": 0.0, "runtime_s": time.process_time() - t0}
    rows.append(_row(config, figure, sname, "baseline", rec, "baseline_accuracy", base, dataset=dataset, row=-1,
                     label=LABELS["baseline"], x=-1.0))
    return pd.DataFrame(rows)


def run_fig5_1(config, figure, sname) -> pd.DataFrame:
    fc = config["studies"][STUDY]["figures"][figure]
    rows = []
    for key in ("lnmax", "confident"):
        spec = fc[key]
        rec = answer_unit(config, "glyph", spec, bins=int(fc["bins"]))
        lab = _spec_text(spec)
        rows.append(_row(config, figure, sname, key, rec, "student_accuracy", rec["student_accuracy"], panel="left",
                         label=lab, x=float(rec["answered"])))
        rows += _curve_rows(config, figure, sname, key, rec, panel="middle", label=lab)
    for key in ("lnmax", "right_confident"):
        spec = fc[key] if key == "lnmax" else {"aggregator": "confident", "queries": fc["confident"]["queries"],
                                               **fc[key]}
        rec = answer_unit(config, "glyph", spec, bins=int(fc["bins"]))
        for b, cnt in enumerate(rec["bins_answered"]):
            rows.append(_row(config, figure, sname, spec["aggregator"], rec, "answered_in_bin", cnt, panel="right",
                             label=_spec_text(spec), x=float(b), bins=int(fc["bins"])))
    return pd.DataFrame(rows)


def run_fig5_4(config, figure, sname) -> pd.DataFrame:
    fc = config["studies"][STUDY]["figures"][figure]
    panel = sname[len("ch5_"):]
    pc = fc[panel]
    rows = []
    if panel == "left":
        grid = [(a, int(pc["teachers"]), s) for a in ("lnmax", "gnmax") for s in pc["sigmas"]]
    else:
        grid = [("gnmax", int(M), s) for M in pc["teachers"] for s in pc["sigmas"]]
    for agg, M, s in grid:
        spec = {"aggregator": agg, "queries": int(fc["queries"]), **({"b": s} if agg == "lnmax" else {"sigma": s})}
        rec = answer_unit(config, "glyph", spec, M=M)
        rows.append(_row(config, figure, sname, agg, rec, "label_accuracy", rec["label_accuracy"], panel=panel,
                         x=float(s), noise_scale=float(s), eps_independent=rec["eps_independent"]))
    return pd.DataFrame(rows)


def fig5_5_unit(config: dict) -> dict:
    fc = config["studies"][STUDY]["figures"]["fig5_5"]
    payload = {"kind": "song2018-ch5-fig5_5", "code": code_hash(), "data": V.glyph_payload(config), "fc": fc,
               "seed": config["seed"]}

    def compute():
        t0 = time.process_time()
        d = _data(config, "glyph", int(fc["teachers"]))
        n = min(int(fc["queries"]), len(d["votes"]))
        v = d["votes"][:n]
        bins = int(fc["bins"])
        rng = generator(config["seed"], f"song2018/ch5/fig5_5/{stream_key(payload)}")
        out = {"all": _agreement_bins(v, d["M"], np.ones(n, bool), bins)}
        for name in ("moderate", "aggressive"):
            c = fc[name]
            r = A.confident_gnmax(v, float(c["T"]), float(c["sigma1"]), float(fc["sigma2"]), rng, [2.0])
            out[name] = _agreement_bins(v, d["M"], r.answered, bins)
        cost = P.rdp_gaussian(P.logq_gnmax(v, float(fc["sigma2"])), float(fc["sigma2"]), [float(fc["order"])])[:, 0]
        b = np.minimum((v.max(axis=1) / d["M"] * bins).astype(int), bins - 1)
        s = np.bincount(b, weights=cost, minlength=bins)
        cnt = np.bincount(b, minlength=bins)
        out["expected_rdp"] = np.where(cnt > 0, s / np.maximum(cnt, 1), np.nan).tolist()
        out.update(n=n, M=d["M"], variant=d["variant"], is_substitute=True, runtime_s=time.process_time() - t0)
        return out

    return _store(config).record(content_key(payload), compute)


def run_fig5_5(config, figure, sname) -> pd.DataFrame:
    fc = config["studies"][STUDY]["figures"][figure]
    rec = fig5_5_unit(config)
    rows = []
    for method, key in (("lnmax", "all"), ("confident_moderate", "moderate"), ("confident_aggressive", "aggressive")):
        for b, cnt in enumerate(rec[key]):
            rows.append(_row(config, figure, sname, method, rec, "answered_in_bin", cnt, x=float(b),
                             bins=int(fc["bins"]), queries=int(rec["n"])))
    for b, e in enumerate(rec["expected_rdp"]):
        rows.append(_row(config, figure, sname, "gnmax", rec, "expected_rdp", e if e is not None else np.nan,
                         x=float(b), bins=int(fc["bins"]), order=float(fc["order"]), sigma2=float(fc["sigma2"])))
    return pd.DataFrame(rows)


def run_fig5_6(config, figure, sname) -> pd.DataFrame:
    fc = config["studies"][STUDY]["figures"][figure]
    rows = []
    specs = {"lnmax": {"aggregator": "lnmax", "b": fc["lnmax_b"], "queries": fc["max_answered"]}}
    for name in ("moderate", "aggressive"):
        specs[f"confident_{name}"] = {"aggregator": "confident", "queries": fc["queries"], "sigma2": fc["sigma2"],
                                      **fc[name]}
    for method, spec in specs.items():
        rec = answer_unit(config, "glyph", spec, M=int(fc["teachers"]))
        rows += _curve_rows(config, figure, sname, method, rec, label=_spec_text(spec))
    return pd.DataFrame(rows)


RUNNERS = {"table5_1": run_table5_1, "fig5_1": run_fig5_1, "fig5_4": run_fig5_4, "fig5_5": run_fig5_5,
           "fig5_6": run_fig5_6}


def run_series(config: dict, figure: str, series_name: str, n_jobs: int = 1) -> pd.DataFrame:
    if figure not in FIGURES:
        raise ValueError(f"unknown figure {figure!r} of {STUDY} chapter 5")
    cfg = config["studies"][STUDY]
    if series_name not in series(cfg, figure):
        raise ValueError(f"series {series_name!r} is not a series of {STUDY}/{figure}; configured: "
                         f"{series(cfg, figure)}")
    return RUNNERS[figure](config, figure, series_name)
