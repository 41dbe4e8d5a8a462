"""membership — membership-inference attacks against every private training method, against the ε-DP bound.

Source: M. Mondal, "Privacy and Security in Machine Learning", lecture slides, CS 60081, Autumn 2024 (cited as
Mondal 2024; it includes R. Shokri's deck "Data Privacy in Machine Learning" and slides from A. Bellet's private
ML course): the membership-inference game (slide "How to Quantify the Leakage?") and the "Privacy and
Generalization" table. The attack procedures (Shokri et al. 2017, Yeom et al. 2018, Carlini et al. 2022) and the
ε-DP bounds (hypothesis-testing view, Kairouz et al. 2015) are standard literature the slides only cite or omit;
see docs/studies/membership.md. The slides contain no attack-vs-ε experiment: every figure here is a benchmark
built on their claims.

Figures: ``fig_attack_<dataset>`` (attack accuracy, advantage, AUC, TPR at FPR = 1e-3 vs ε per method, best
attack, bound drawn; one series per method), ``fig_roc`` (ROC curves on log-log axes at a few ε), ``fig_eps_lower_bound``
(empirical ε lower bound vs theoretical ε) and ``table_generalisation`` (train / test / attack accuracy, non-private
vs private, as the slides' table); the last three have one series per dataset. Computation and caching:
:mod:`dpbench.studies.membership_compute`; attacks: :mod:`dpbench.attacks.membership`; metrics:
:mod:`dpbench.attacks.metrics`; bounds: :mod:`dpbench.privacy.attack_bounds`.

Audit (anchor checks ``AUDIT/<dataset>/<method>``): for every (dataset, method, ε, attack), the counts pooled over
repetitions give a lower confidence limit of the attack accuracy and of the ε lower bound; the check fails —
"privacy bug" — when either exceeds its ε-DP bound (accuracy ≤ (e^ε + δ)/(1 + e^ε), TPR ≤ e^ε·FPR + δ under the
replace-one relation), at a family-wise level (Bonferroni over every audited comparison by default).

Intervals (``ci_method``): every repetition trains one target model and its n member + n non-member trials all
share it, so pooled trials are clustered by model (over-dispersed: models differ in how much they leak and where an
attack's calibrated threshold falls). ``design_effect`` (default) uses the effective-sample-size Clopper–Pearson
interval of Korn & Graubard (1998) with the design effect estimated from the between-repetition variance, floored
at 1, and a small-K correction (:func:`dpbench.attacks.metrics.clustered_clopper_pearson`); ``clopper_pearson`` the
binomial interval of the pooled counts, which treats the trials as independent and is too narrow when models
differ. The canary audit's trials are independent (each is a separate release with its own noise), so it keeps
the exact Clopper–Pearson interval.

Canary audit (``canary_audit`` config block, :mod:`dpbench.attacks.canary`): the average-member attacks are far
from the worst case and only catch gross faults; for every audited (dataset, method, ε) the audit also trains
the method ``trials`` times on a replace-one pair D, D′ differing in one worst-case canary record (unit-norm
feature vector in the direction the data spans least, flipped label) and derives a Clopper–Pearson lower limit
of the empirical ε from the canary's score margin (threshold chosen on a held-out half); a limit above the
claimed replace-one ε is a privacy bug too (rows ``attack = "canary"``, same AUDIT anchor rows).
"""

from __future__ import annotations

import html
import json
import math

import numpy as np
import pandas as pd

from dpbench import verdicts as V
from dpbench.attacks.membership import ATTACKS
from dpbench.attacks.metrics import (CI_METHODS, clopper_pearson, cluster_mean_interval, epsilon_lower_bound,
                                     pooled_epsilon_lower_bound, pooled_rate_summary)
from dpbench.config import ConfigError
from dpbench.privacy import attack_bounds as B
from dpbench.studies import membership_compute as mc
from dpbench.studies.base import FigureSpec, preprocessing_note

STUDY = "membership"
LABELS = mc.LABELS
ATTACK_LABELS = {"gap": "gap (0-1)", "loss_threshold": "loss threshold (Yeom τ)",
                 "loss_calibrated": "loss threshold (shadow-calibrated τ)", "shadow": "shadow models (Shokri)",
                 "lira_offline": "offline LiRA"}
DATA_NOTE = ("Data: MNIST (10 classes), UCI Covertype (class 2 vs rest) and Pima diabetes, rows normalised to the "
             "unit sphere (MNIST optionally randomly projected) plus a bias feature. When a file cannot be obtained "
             "the registry's labelled substitute is used; its variant is printed on every panel, stored in every row "
             "and listed in the anchor table.")
ATTACK_CAPTION = (
    "Membership inference vs ε on {ds}: for every private training method (one colour each), the strongest of the "
    "five black-box attacks (gap, loss threshold, shadow-calibrated loss threshold, Shokri shadow models, offline "
    "LiRA) at each ε: balanced attack accuracy, advantage TPR − FPR, AUC and TPR at FPR = 1e-3, with confidence "
    "intervals; dashed black: the non-private model (ε = ∞); thick grey: the ε-DP bound (accuracy ≤ (e^ε + δ)/"
    "(1 + e^ε), advantage ≤ (e^ε − 1 + 2δ)/(e^ε + 1), AUC ≤ ∫ min(1, e^ε·f + δ, 1 − e^−ε(1 − δ − f)) df, "
    "TPR ≤ e^ε·1e-3 + δ; replace-one neighbours).")
FIGURES: dict[str, FigureSpec] = {
    f"fig_attack_{d}": FigureSpec(STUDY, f"fig_attack_{d}", f"Membership inference vs ε, {mc.DATASET_LABELS[d]}",
                                  "epsilon", "ε", "attack metric", tuple(mc.methods_for(d)),
                                  ATTACK_CAPTION.format(ds=mc.DATASET_LABELS[d]), anchors=("AUDIT", "Q1", "Q2"))
    for d in mc.DATASETS}
FIGURES.update({
    "fig_roc": FigureSpec(STUDY, "fig_roc", "Attack ROC curves (log-log) at a few ε", "fpr", "false-positive rate",
                          "true-positive rate", mc.DATASETS,
                          "ROC curves of one attack (configured; offline LiRA by default) on log-log axes, one panel "
                          "per (dataset, ε), one curve per method, averaged over repetitions on a fixed FPR grid; "
                          "dotted: chance (TPR = FPR); thick grey: the ε-DP trade-off bound TPR ≤ min(e^ε·FPR + δ, "
                          "1 − e^−ε(1 − δ − FPR)).", anchors=("AUDIT",)),
    "fig_eps_lower_bound": FigureSpec(STUDY, "fig_eps_lower_bound", "Empirical ε lower bound vs theoretical ε",
                                      "epsilon", "theoretical ε (replace-one)", "empirical ε lower bound",
                                      mc.DATASETS,
                                      "Empirical ε lower bound ln((TPR − δ)/FPR) (or the complementary test) of the "
                                      "strongest attack per method, TPR at its lower and FPR at its upper confidence "
                                      "limit (trials clustered by target model, see the note on intervals), on "
                                      "held-out trials (the threshold is chosen on a disjoint random "
                                      "half); dashed: ε̂ = ε — a point above it beyond its interval is a privacy bug.",
                                      anchors=("AUDIT",)),
    "table_generalisation": FigureSpec(STUDY, "table_generalisation", "Privacy and generalisation", "epsilon", "",
                                       "", mc.DATASETS,
                                       "Privacy vs generalisation in the spirit of the slides' table (Mondal 2024, "
                                       "slide 'Privacy and Generalization'): "
                                       "train accuracy, test accuracy and attack accuracy (strongest attack and the "
                                       "gap attack) of the non-private model and of every private model at the "
                                       "configured ε.", xscale="linear", anchors=("Q3", "Q4")),
})
STYLE = {"non_private": dict(color="black", linestyle="--", marker=None),
         "output_perturbation": dict(color="tab:orange", marker="s"),
         "loss_perturbation": dict(color="tab:blue", marker="o"), "dpsgd": dict(color="tab:purple", marker="v"),
         "bolt_on": dict(color="tab:red", marker="D"), "scs13": dict(color="tab:green", marker="^"),
         "bst14": dict(color="tab:olive", marker="<"), "output_perturbation_erm": dict(color="tab:brown", marker=">"),
         "objective_perturbation": dict(color="tab:cyan", marker="P"),
         "functional_mechanism": dict(color="tab:pink", marker="X")}
PANEL_METRICS = (("accuracy", "attack accuracy"), ("advantage", "advantage TPR − FPR"), ("auc", "AUC"),
                 ("tpr_at_fpr_1e-3", "TPR at FPR = 1e-3"))


# ---------------------------------------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------------------------------------


def validate(cfg: dict, prefix: str = "studies.membership") -> None:
    """Cross-field rules the JSON schema cannot express; raise ConfigError naming the key."""
    def bad(key, msg):
        raise ConfigError(f"invalid config: {prefix}.{key}: {msg}")

    eps = cfg.get("epsilons") or []
    if len(set(eps)) != len(eps):
        bad("epsilons", f"duplicate values in {eps}")
    if any(not (isinstance(e, (int, float)) and 0 < e < math.inf) for e in eps):
        bad("epsilons", "every ε must be finite and > 0 (the non-private reference is the ε = ∞ series)")
    for i, m in enumerate(cfg.get("methods") or []):
        if m not in mc.METHODS:
            bad(f"methods[{i}]", f"unknown method {m!r}; known: {list(mc.METHODS)}")
    if cfg.get("methods") is not None and "non_private" not in cfg["methods"]:
        bad("methods", "must include 'non_private' (the reference model of every figure)")
    if int(cfg.get("shadow_models", 2)) < 2:
        bad("shadow_models", "needs at least 2 (the LiRA decision threshold is calibrated leave-one-out)")
    if not 0 < float(cfg.get("delta", 1e-5)) < 1:
        bad("delta", "must be in (0, 1)")
    if not 0.5 < float(cfg.get("ci_level", 0.95)) < 1:
        bad("ci_level", "must be in (0.5, 1)")
    if cfg.get("ci_method", "design_effect") not in CI_METHODS:
        bad("ci_method", f"unknown interval {cfg.get('ci_method')!r}; known: {list(CI_METHODS)}")
    for d, dc in (cfg.get("datasets") or {}).items():
        if d not in mc.DATASETS:
            bad(f"datasets.{d}", f"unknown dataset; known: {list(mc.DATASETS)}")
        if dc.get("n_members", 0) < 20:
            bad(f"datasets.{d}.n_members", "needs at least 20 members (and as many non-members)")
    nf = float((cfg.get("fault_injection") or {}).get("noise_factor", 1.0))
    if not nf > 0:
        bad("fault_injection.noise_factor", "must be > 0 (1 = the correct mechanisms)")
    tc = cfg.get("training") or {}
    ca = cfg.get("canary_audit") or {}
    for i, cm in enumerate(ca.get("methods") or []):
        if cm not in mc.METHODS or cm == "non_private":
            bad(f"canary_audit.methods[{i}]", f"unknown or non-private method {cm!r}; known: {list(mc.METHODS[1:])}")
    if int(ca.get("trials", 100)) < 10:
        bad("canary_audit.trials", "needs at least 10 trials per side (half choose the threshold, half evaluate)")
    if (tc.get("psgd") or {}).get("l2", 1.0) <= 0:
        bad("training.psgd.l2", "the strongly convex bolt-on PSGD needs λ > 0")
    figs = cfg.get("figures") or {}
    for name, fc in figs.items():
        if fc is None:
            continue
        figure(name)
        if name.startswith("fig_attack_") and name[len("fig_attack_"):] not in (cfg.get("datasets") or {}):
            bad(f"figures.{name}", f"dataset {name[len('fig_attack_'):]!r} has no entry in {prefix}.datasets")
        if name == "fig_roc":
            for e in fc.get("epsilons", []):
                if e not in eps:
                    bad("figures.fig_roc.epsilons", f"{e} is not in {prefix}.epsilons")
            if fc.get("attack", "lira_offline") not in ATTACKS:
                bad("figures.fig_roc.attack", f"unknown attack; known: {list(ATTACKS)}")
        if name == "table_generalisation" and fc.get("epsilon") not in eps:
            bad("figures.table_generalisation.epsilon", f"{fc.get('epsilon')} is not in {prefix}.epsilons")


def figure_names(cfg: dict) -> list[str]:
    return [f for f in FIGURES if (cfg.get("figures") or {}).get(f) is not None]


def figure(name: str) -> FigureSpec:
    try:
        return FIGURES[name]
    except KeyError:
        raise ValueError(f"unknown figure {name!r} for study {STUDY}; known: {sorted(FIGURES)}") from None


def datasets_in_use(cfg: dict) -> list[str]:
    names = figure_names(cfg)
    if any(not n.startswith("fig_attack_") for n in names):
        return [d for d in mc.DATASETS if d in cfg["datasets"]]
    return [d for d in mc.DATASETS if f"fig_attack_{d}" in names]


def methods(cfg: dict, dataset: str) -> list[str]:
    wanted = cfg.get("methods")
    return [m for m in mc.methods_for(dataset) if wanted is None or m in wanted]


def series(cfg: dict, name: str) -> list[str]:
    figure(name)
    if name.startswith("fig_attack_"):
        return methods(cfg, name[len("fig_attack_"):])
    return [d for d in mc.DATASETS if d in cfg["datasets"]]


def series_threads(cfg: dict, figure_name: str, series_name: str) -> int:
    """Cells of a series run side by side in joblib workers."""
    return 1 << 10


def series_code_hash(series_name: str) -> str:
    return mc.training_code_hash() + mc.attack_code_hash() + mc.canary_code_hash()


def dataset_signature(config: dict) -> str:
    cfg = config["studies"][STUDY]
    return json.dumps({d: mc.dataset_payload(config, d) for d in datasets_in_use(cfg)}, sort_keys=True)


def prepare_dataset(config: dict) -> dict:
    cfg = config["studies"][STUDY]
    out = {"study": STUDY, "datasets": {}}
    for d in datasets_in_use(cfg):
        a = mc.load_prepared(config, d)
        out["datasets"][d] = {"variant": a["variant"], "is_substitute": a["is_substitute"], "pool": int(a["X"].shape[0]),
                              "n_members": a["n"], "dim": int(a["X"].shape[1]), "n_classes": a["n_classes"]}
    out["is_substitute"] = any(v["is_substitute"] for v in out["datasets"].values())
    out["dataset_variant"] = ", ".join(v["variant"] for v in out["datasets"].values())
    return out


# ---------------------------------------------------------------------------------------------------------
# running a series: plan the cells, read them, emit long rows
# ---------------------------------------------------------------------------------------------------------


def _epsilons(cfg: dict, figure_name: str, method: str) -> list[float]:
    if method == "non_private":
        return [math.inf]
    if figure_name == "fig_roc":
        return [float(e) for e in cfg["figures"]["fig_roc"]["epsilons"]]
    if figure_name == "table_generalisation":
        return [float(cfg["figures"]["table_generalisation"]["epsilon"])]
    return [float(e) for e in cfg["epsilons"]]


def plan(cfg: dict, figure_name: str, series_name: str) -> list[tuple[str, str, float, int]]:
    if figure_name.startswith("fig_attack_"):
        pairs = [(figure_name[len("fig_attack_"):], series_name)]
    else:
        pairs = [(series_name, m) for m in methods(cfg, series_name)
                 if not (figure_name == "fig_eps_lower_bound" and m == "non_private")]
    return [(d, m, e, r) for d, m in pairs for e in _epsilons(cfg, figure_name, m) for r in range(cfg["repetitions"])]


def _rows(config, figure_name, d, m, e, r, rec, kinds) -> list[dict]:
    cfg = config["studies"][STUDY]
    base = {"study": STUDY, "figure": figure_name, "series": m if figure_name.startswith("fig_attack_") else d,
            "method": m, "method_label": LABELS[m], "dataset": d, "dataset_variant": rec["variant"],
            "is_substitute": rec["is_substitute"],
            **dict(zip(("preprocessing", "preprocessing_data_dependent"), mc.preprocessing_label(config, d))),
            "x_name": figure(figure_name).x_name, "epsilon": e, "budget": np.nan,
            "delta": mc.method_delta(cfg, m) if math.isfinite(e) else 0.0, "epsilon_game": rec["epsilon_game"],
            "delta_game": rec["delta_game"], "neighbouring": B.NEIGHBOURING, "rep": r, "n_members": rec["n_members"],
            "n_nonmembers": rec["n_nonmembers"], "dim": rec["dim"], "n_classes": rec["n_classes"],
            "shadow_models": cfg["shadow_models"], "noise_factor": float(cfg["fault_injection"]["noise_factor"]),
            "train_accuracy": rec["train_accuracy"], "test_accuracy": rec["test_accuracy"],
            "runtime_s": rec["runtime_s"], "seed": config["seed"], "ci_level": float(cfg["ci_level"]),
            "audit_alpha": float(cfg["audit"]["alpha"]), "audit_correction": cfg["audit"]["correction"],
            # interval of the summaries pooled over repetitions (figures, audit); lo/hi of a row are the
            # Clopper–Pearson / DeLong intervals of its one model
            "ci_method": cfg.get("ci_method", "design_effect")}
    out = [{**base, "attack": "", "x": e, "metric": k, "value": rec[k], "lo": np.nan, "hi": np.nan}
           for k in ("train_accuracy", "test_accuracy", "train_loss", "test_loss")]
    for a, s in rec["attacks"].items():
        counts = {"tp": s["tp"], "fp": s["fp"], "eps_tp": s["eps_tp"], "eps_fp": s["eps_fp"],
                  "eps_n_pos": s["eps_n_pos"], "eps_n_neg": s["eps_n_neg"]}
        if "scalar" in kinds:
            for k in ("accuracy", "advantage", "tpr", "fpr", "auc"):
                out.append({**base, **counts, "attack": a, "x": e, "metric": k, "value": s[k],
                            "lo": s[f"{k}_lo"], "hi": s[f"{k}_hi"]})
            for k in ("tpr_at_fpr_1e-3", "tpr_at_fpr_1e-2", "eps_point", "eps_lower"):
                out.append({**base, **counts, "attack": a, "x": e, "metric": k, "value": s[k], "lo": np.nan,
                            "hi": np.nan})
        if "roc" in kinds:
            for g, t in zip(mc.ROC_GRID, s["roc"]):
                out.append({**base, **counts, "attack": a, "x": float(g), "metric": "roc_tpr", "value": t,
                            "lo": np.nan, "hi": np.nan})
    return out


def run_series(config: dict, figure_name: str, series_name: str, n_jobs: int = 1) -> pd.DataFrame:
    """Long-format rows of one series (every attack and metric per (dataset, method, ε, repetition))."""
    cfg = config["studies"][STUDY]
    figure(figure_name)
    known = series(cfg, figure_name)
    if series_name not in known:
        raise ValueError(f"{series_name!r} is not a series of {STUDY}/{figure_name}; known: {known}")
    if (cfg.get("figures") or {}).get(figure_name) is None:
        raise ValueError(f"figure {figure_name!r} is disabled in the configuration (studies.{STUDY}.figures)")
    p = plan(cfg, figure_name, series_name)
    recs = mc.cells(config, p, n_jobs)
    kinds = {"roc"} if figure_name == "fig_roc" else {"scalar"}
    rows = [row for (d, m, e, r), rec in zip(p, recs) for row in _rows(config, figure_name, d, m, e, r, rec, kinds)]
    if figure_name.startswith("fig_attack_") or figure_name == "fig_eps_lower_bound":
        rows += _canary_rows(config, figure_name, p)
    return pd.DataFrame(rows)


def canary_methods(cfg: dict) -> list[str]:
    """Methods the canary audit runs on (none when disabled)."""
    ca = cfg.get("canary_audit") or {}
    if not ca.get("enabled", False):
        return []
    wanted = ca.get("methods")
    return [m for m in mc.METHODS if m != "non_private" and (wanted is None or m in wanted)]


CANARY_CI_METHOD = "clopper_pearson"
"""The canary audit's trials are independent releases (each its own noise draw, or its own training run, given
the one neighbouring pair and the shared data-independent sampling order), so the exact binomial interval holds;
no clustering adjustment applies (see :mod:`dpbench.attacks.canary`)."""


def _canary_rows(config: dict, figure_name: str, p) -> list[dict]:
    """Rows ``attack = "canary"`` (metrics canary_eps_lower / canary_eps_point, counts of the evaluation half)
    of every (dataset, method, finite ε) of the plan whose method the canary audit covers."""
    cfg = config["studies"][STUDY]
    wanted = canary_methods(cfg)
    out = []
    for d, m, e in dict.fromkeys((d, m, e) for d, m, e, _ in p):
        if m not in wanted or not math.isfinite(e):
            continue
        rec = mc.canary(config, d, m, e)
        base = {"study": STUDY, "figure": figure_name, "series": m if figure_name.startswith("fig_attack_") else d,
                "method": m, "method_label": LABELS[m], "dataset": d, "dataset_variant": rec["variant"],
                "is_substitute": rec["is_substitute"],
                **dict(zip(("preprocessing", "preprocessing_data_dependent"), mc.preprocessing_label(config, d))),
                "x_name": figure(figure_name).x_name, "epsilon": e, "budget": np.nan,
                "delta": mc.method_delta(cfg, m), "epsilon_game": rec["epsilon_game"],
                "delta_game": rec["delta_game"], "neighbouring": rec["neighbouring"], "rep": 0,
                "n_members": rec["n_members"], "n_nonmembers": rec["n_members"], "dim": rec["dim"],
                "n_classes": rec["n_classes"], "shadow_models": cfg["shadow_models"],
                "noise_factor": float(cfg["fault_injection"]["noise_factor"]), "runtime_s": rec["runtime_s"],
                "seed": config["seed"], "ci_level": float(cfg["ci_level"]), "audit_alpha": float(cfg["audit"]["alpha"]),
                "audit_correction": cfg["audit"]["correction"], "attack": "canary", "x": e,
                "ci_method": CANARY_CI_METHOD,
                "canary_trials": rec["trials"], "canary_tp": rec["tp"], "canary_fp": rec["fp"],
                "canary_n_pos": rec["n_pos"], "canary_n_neg": rec["n_neg"], "lo": np.nan, "hi": np.nan}
        out.append({**base, "metric": "canary_eps_point", "value": rec["eps_point"]})
        out.append({**base, "metric": "canary_eps_lower", "value": rec["eps_lower"]})
    return out


# ---------------------------------------------------------------------------------------------------------
# pooled summaries (counts summed over repetitions) and the audit
# ---------------------------------------------------------------------------------------------------------


def pooled(df: pd.DataFrame, alpha: float, ci_method: str = "design_effect") -> pd.DataFrame:
    """Per (dataset, method, ε, attack): the accuracy, advantage, TPR and FPR of the counts pooled over
    repetitions with their (1 − α) intervals, the pooled ε lower bound, the mean over repetitions of AUC and TPR at
    FPR = 1e-3 with t intervals, and the bounds.

    Each repetition trains one target model and all its member/non-member trials share it, so the trials form
    one cluster per repetition. ``ci_method``: ``design_effect`` (default) — rate intervals from
    :func:`dpbench.attacks.metrics.clustered_clopper_pearson` (Korn–Graubard effective sample size from the
    between-repetition variance, never narrower than the binomial interval; the accuracy / advantage interval is
    that of the proportion of correct decisions, see :func:`dpbench.attacks.metrics.pooled_rate_summary`);
    ``clopper_pearson`` — the binomial intervals of the pooled counts (trials taken as independent; accuracy from
    the TPR and FPR intervals at α/2 each). The estimated design effects (``deff_accuracy`` of the correct
    decisions, ``deff_tpr``, ``deff_fpr``; of the ε-bound evaluation counts ``eps_deff_tpr``, ``eps_deff_fpr``)
    and ``ci_method`` are columns of the result. AUC and TPR at FPR = 1e-3 are per-model statistics: their
    interval is mean ± t_{K−1}·s/√K over the K models (``*_half``; ``*_se`` the standard error)."""
    if ci_method not in CI_METHODS:
        raise ValueError(f"unknown ci_method {ci_method!r}; known: {list(CI_METHODS)}")
    df = df[df["attack"] != "canary"]
    s = df[(df["attack"] != "") & (df["metric"] == "accuracy")]
    keys = ["dataset", "method", "epsilon", "attack"]
    rows = []
    per = df[df["attack"] != ""].pivot_table(index=keys + ["rep"], columns="metric", values="value").reset_index()
    for key, g in s.groupby(keys, sort=False):
        d, m, e, a = key
        g = g.sort_values("rep")

        def counts(*cols):
            return [g[c].to_numpy().astype(np.int64) for c in cols]

        rs = pooled_rate_summary(*counts("tp", "n_members", "fp", "n_nonmembers"), alpha, ci_method)
        eg, dg = float(g["epsilon_game"].iloc[0]), float(g["delta_game"].iloc[0])
        eb = pooled_epsilon_lower_bound(*counts("eps_tp", "eps_n_pos", "eps_fp", "eps_n_neg"), dg, alpha, ci_method)
        pr = per[(per["dataset"] == d) & (per["method"] == m) & (per["epsilon"] == e) & (per["attack"] == a)]
        R = len(pr)
        auc, auc_half, auc_se = cluster_mean_interval(pr["auc"].to_numpy(float), alpha)
        t3, t3_half, t3_se = cluster_mean_interval(pr["tpr_at_fpr_1e-3"].to_numpy(float), alpha)
        rows.append({"dataset": d, "method": m, "epsilon": e, "attack": a, "epsilon_game": eg, "delta_game": dg,
                     "variant": g["dataset_variant"].iloc[0], "reps": R,
                     "trials": int(g["n_members"].sum() + g["n_nonmembers"].sum()),
                     **{k: float(rs[k]) for k in ("accuracy", "accuracy_lo", "accuracy_hi", "advantage",
                                                  "advantage_lo", "advantage_hi", "tpr", "tpr_lo", "tpr_hi", "fpr",
                                                  "fpr_lo", "fpr_hi")},
                     "auc": auc, "auc_se": auc_se, "auc_half": auc_half,
                     "tpr_at_fpr_1e-3": t3, "tpr_at_fpr_1e-3_se": t3_se, "tpr_at_fpr_1e-3_half": t3_half,
                     "eps_point": eb["eps_point"], "eps_lower": eb["eps_lower"],
                     "ci_method": ci_method, "deff_accuracy": float(rs["deff_accuracy"]),
                     "deff_tpr": float(rs["deff_tpr"]), "deff_fpr": float(rs["deff_fpr"]),
                     "eps_deff_tpr": float(eb["deff_tpr"]), "eps_deff_fpr": float(eb["deff_fpr"]),
                     "train_accuracy": float(g["train_accuracy"].mean()),
                     "test_accuracy": float(g["test_accuracy"].mean()),
                     "bound_accuracy": B.accuracy_bound(eg, dg), "bound_advantage": B.advantage_bound(eg, dg),
                     "bound_tpr_1e-3": B.tpr_bound(1e-3, eg, dg)})
    return pd.DataFrame(rows)


def auc_bound(epsilon: float, delta: float = 0.0) -> float:
    """Largest AUC of any test against an (ε, δ)-DP mechanism: the area under the trade-off bound."""
    if not math.isfinite(epsilon):
        return 1.0
    f = np.linspace(0.0, 1.0, 20001)
    t = B.tpr_bound(f, epsilon, delta)
    return float(np.sum(np.diff(f) * (t[1:] + t[:-1]) / 2))


def audit_table(frames: dict, cfg: dict) -> pd.DataFrame:
    """Every audited comparison (dataset, method, ε, attack; accuracy and ε lower bound), with the verdict at
    the family-wise level ``audit.alpha`` (Bonferroni over all comparisons unless ``audit.correction: none``),
    intervals of ``ci_method`` (:func:`pooled`; the canary rows: exact Clopper–Pearson, independent trials)."""
    parts = [f for n, f in frames.items() if n.startswith("fig_attack_") or n == "fig_eps_lower_bound"]
    if not parts:
        return pd.DataFrame()
    df = pd.concat(parts, ignore_index=True)
    df = df[np.isfinite(df["epsilon"])]
    df = df.drop_duplicates(subset=["dataset", "method", "epsilon", "attack", "rep", "metric"])
    if df.empty:
        return pd.DataFrame()
    can = (df[(df["attack"] == "canary") & (df["metric"] == "canary_eps_lower")]
           .drop_duplicates(subset=["dataset", "method", "epsilon"]) if "attack" in df else df.iloc[:0])
    method = cfg.get("ci_method", "design_effect")
    base = pooled(df, 1 - float(cfg["ci_level"]), method)
    m = 2 * len(base) + len(can)
    a = float(cfg["audit"]["alpha"]) / (m if cfg["audit"]["correction"] == "bonferroni" else 1)
    strict = pooled(df, a, method) if len(base) else pd.DataFrame()
    if len(strict):
        strict["acc_violation"] = strict["accuracy_lo"] > strict["bound_accuracy"] + 1e-12
        strict["eps_violation"] = strict["eps_lower"] > strict["epsilon_game"] + 1e-12
    rows = []
    for r in can.itertuples(index=False):
        r = r._asdict()
        eg, dg = float(r["epsilon_game"]), float(r["delta_game"])
        ept, elb = epsilon_lower_bound(int(r["canary_tp"]), int(r["canary_n_pos"]), int(r["canary_fp"]),
                                       int(r["canary_n_neg"]), dg, a)
        rows.append({"dataset": r["dataset"], "method": r["method"], "epsilon": r["epsilon"], "attack": "canary",
                     "epsilon_game": eg, "delta_game": dg, "variant": r["dataset_variant"], "reps": 1,
                     "trials": int(r["canary_trials"]) * 2, "eps_point": ept, "eps_lower": elb,
                     "canary_tp": int(r["canary_tp"]), "canary_fp": int(r["canary_fp"]),
                     "canary_n_pos": int(r["canary_n_pos"]), "canary_n_neg": int(r["canary_n_neg"]),
                     "ci_method": CANARY_CI_METHOD, "acc_violation": False, "eps_violation": elb > eg + 1e-12})
    if rows:
        strict = pd.concat([strict, pd.DataFrame(rows)], ignore_index=True)
    if strict.empty:
        return strict
    strict["level"] = a
    strict["bug"] = strict["acc_violation"].astype(bool) | strict["eps_violation"].astype(bool)
    return strict


# ---------------------------------------------------------------------------------------------------------
# captions
# ---------------------------------------------------------------------------------------------------------


def deviations(cfg: dict, name: str) -> list[str]:
    tc = cfg["training"]
    sizes = ", ".join(f"{mc.DATASET_LABELS[d]}: n = {c['n_members']} members + {c['n_members']} non-members"
                      + (f", {c['projection_dim']}-d random projection" if c.get("projection_dim") else "")
                      for d, c in cfg["datasets"].items())
    ci = cfg["ci_level"]
    out = [
        "[INFERRED: the slides give no attack-vs-ε experiment, ε grid or sizes] Attacks, bounds and metrics are "
        "standard literature the slides only cite (Shokri et al. 2017; Carlini et al. 2022) or omit (Yeom et al. "
        "2018; Kairouz et al. 2015): docs/studies/membership.md.",
        f"Evaluation sets: {sizes}, per repetition ({cfg['repetitions']} repetitions, each a fresh random member "
        f"split of the same 2n-record target pool); the shadow/reference pool is a disjoint 2n records, k = "
        f"{cfg['shadow_models']} shadow models per (dataset, method, ε), each on a random half. Pooled over "
        f"repetitions a {ci:.0%} interval on a rate has half-width ≥ {_cp_halfwidth(cfg):.3f} at rate 0.5 (the "
        "binomial one; wider when the repetitions' models disagree, see the note on intervals).",
        "Membership game: replace-one (a member and a fresh record from the same distribution are the two "
        "hypotheses of a replace-one neighbouring pair by exchangeability); every method's ε is its replace-one ε: "
        + ("DP-SGD (accountant add/remove) is calibrated at (ε/2, δ/(1 + e^{ε/2})), whose replace-one conversion "
           "is (ε, δ)." if tc["dpsgd"]["replace_one"] == "half_budget" else
           "DP-SGD is calibrated at the plotted (ε, δ) for add/remove; its bound is drawn at the replace-one "
           "(2ε, (1 + e^ε)δ)."),
        _ci_note(cfg),
        "Strongest attack: at each (method, ε) the attack with the largest value of the panel's metric (a post-hoc "
        "choice, optimistic for the attacker); the audit checks every attack separately.",
        "Attacks: gap = member iff correctly classified; loss threshold = member iff loss ≤ the target's mean "
        "training loss (Yeom et al.'s side information, a function of the training set whose dependence on one "
        "record is O(1/n)); calibrated loss threshold = τ maximising balanced accuracy on the shadow models' "
        "members/non-members; shadow = one logistic-regression attack classifier per class on the shadow models' "
        f"log-probability vectors (C = {cfg['attacks']['shadow_C']}); offline LiRA = z-score of φ = log(p_y/(1 − "
        f"p_y)) against the shadow models (all OUT for every candidate), {cfg['attacks']['lira_variance']} variance, "
        "decision threshold calibrated leave-one-out on the shadow models.",
        f"Training (each method's own code, dpbench.learn / dpbench.methods): non-private softmax regression λ = "
        f"{tc['l2_non_private']:g} (L-BFGS, gtol {tc['gtol']:g}); output perturbation (vdm2020 model sensitivity, "
        f"L2-Laplace, λ = {tc['l2']:g}, noise for Δ(1 + η) with the L-BFGS fit stopped at ‖∇J‖₂ ≤ ηK/n, η = 0.01) and "
        f"loss perturbation (vdm2020, {tc['loss_perturbation_regularizer']}, noise calibrated for a REPLACED record — "
        "gradient difference 2K; the paper's add/remove calibration would be 1.5ε-DP in this game) pure "
        f"ε-DP; DP-SGD (batch {tc['dpsgd']['batch_size']}, {tc['dpsgd']['epochs']} epochs, clip "
        f"{tc['dpsgd']['clip']:g}, lr {tc['dpsgd']['learning_rate']:g}, Poisson sampling, RDP {tc['dpsgd']['conversion']}"
        f") and BST14 at δ = {cfg['delta']:g}; bolt-on PSGD (strongly convex, ε-DP), SCS13 (ε-DP) and BST14 with "
        f"λ = {tc['psgd']['l2']:g}, {tc['psgd']['passes']} passes, batch {tc['psgd']['batch_size']}, one-vs-all with "
        f"ε/C (δ/C) per class on MNIST; wu2016 ch. 4 output perturbation, objective perturbation (CMS11) and the "
        f"functional mechanism: binary logistic regression only (not on MNIST), λ = {tc['erm']['lam']:g}, R = "
        f"{tc['erm']['radius']:g}. No method is tuned on private data (fixed hyper-parameters).",
        "Not included: private-prediction methods (prediction sensitivity, subsample-and-aggregate: they release "
        "predictions, not a model) and the MLP DP-SGD substitute; the slides' white-box and federated attacks.",
    ]
    cm = canary_methods(cfg)
    if cm and name in ("fig_eps_lower_bound",) + tuple(f"fig_attack_{d}" for d in mc.DATASETS):
        out.append(f"Canary audit (worst case, replace-one): for {', '.join(cm)} at every ε, "
                   f"{cfg['canary_audit']['trials']} models trained on D and as many on D′, where D, D′ are the "
                   "repetition-0 member set with its last record replaced by a canary x (‖x‖ = 1, the direction the "
                   "other records span least) labelled 1 in D and 0 in D′; statistic: the canary's score margin "
                   "(post-processing of the release); threshold chosen on a random half, Clopper–Pearson ε lower "
                   "limit on the other half, exact because the trials are independent (each is its own release "
                   "with its own noise draw or training run; nothing is shared but the neighbouring pair and a "
                   "data-independent sampling order, given which the guarantee holds): no clustering adjustment; "
                   "a limit above the claimed ε is a privacy bug. Batched: output "
                   "perturbation and bolt-on PSGD solve the noiseless problem once (bolt-on with one fixed, "
                   "data-independent sampling order) and redraw only the noise. Its power depends on how close the "
                   "canary's model difference comes to the sensitivity bound (small nλ: far).")
    nf = float(cfg["fault_injection"]["noise_factor"])
    if nf != 1.0:
        out.insert(0, f"FAULT INJECTED: every mechanism is calibrated for ε/{nf:g} (noise scale × {nf:g} for the "
                      "Laplace-type mechanisms) while rows keep the nominal ε — the audit must flag it.")
    if name == "fig_roc":
        fc = cfg["figures"]["fig_roc"]
        out.append(f"ROC: attack {ATTACK_LABELS[fc.get('attack', 'lira_offline')]}, ε ∈ {fc['epsilons']}, curves on "
                   f"a log grid of FPR from 1e-4 (step function: largest TPR with FPR ≤ grid value).")
    if name == "table_generalisation":
        out.append(f"Private models at ε = {cfg['figures']['table_generalisation']['epsilon']:g}; test accuracy "
                   "is measured on the n non-members.")
    return out


def _ci_note(cfg: dict) -> str:
    """The captions' sentence on confidence intervals (depends on ``ci_method``)."""
    ci, K = float(cfg["ci_level"]), int(cfg["repetitions"])
    tail = ("AUC (DeLong per model) and TPR at FPR = 1e-3 (largest TPR whose empirical FPR ≤ 1e-3; with fewer than "
            "1000 non-members per repetition that is TPR at FPR = 0): mean over the repetitions' models ± "
            f"t_{{K−1}}·standard error (K = {K}), one observation per model, clipped to [0, 1].")
    if cfg.get("ci_method", "design_effect") == "clopper_pearson":
        return (f"Confidence intervals ({ci:.0%}, ci_method = clopper_pearson): Clopper–Pearson on the pooled TPR "
                "and FPR counts (α/2 each), combined into the accuracy and advantage intervals. The n member and n "
                "non-member trials of one repetition share its trained target model, so pooled trials are "
                "clustered by model; these intervals treat them as independent and are too narrow when the "
                "models differ (the design effects are in the report's tables). " + tail)
    return (f"Confidence intervals ({ci:.0%}, ci_method = design_effect): the n member and n non-member trials of "
            f"one repetition share its trained target model, so the trials pooled over the K = {K} repetitions "
            "form K clusters whose rates differ from model to model. Every rate interval is a Clopper–Pearson "
            "interval at the effective sample size N/f (Korn & Graubard 1998): f = 1 + (deff − 1)·(t_{K−1}/z)², "
            "deff = between-model over binomial variance of the pooled rate, floored at 1, so no interval is "
            "narrower than the binomial one. TPR and FPR at α/2 each; accuracy and advantage from the proportion "
            "of correct decisions (balanced sets), a single interval; empirical ε lower bound from TPR at its "
            "lower and FPR at its upper limit. "
            + (f"With K this small the between-model variance is estimated from K − 1 = {K - 1} degree(s) of "
               "freedom: the intervals are wide whenever the models disagree. " if K > 1 else
               "With K = 1 the between-model variation cannot be estimated: the intervals are the binomial ones, "
               "conditional on the one trained model (no bars for AUC and TPR at FPR = 1e-3). ") + tail)


def _cp_halfwidth(cfg: dict) -> float:
    n = min(c["n_members"] for c in cfg["datasets"].values()) * cfg["repetitions"]
    lo, hi = clopper_pearson(n // 2, n, 1 - float(cfg["ci_level"]))
    return (hi - lo) / 2


def caption_text(config: dict, name: str, df: pd.DataFrame) -> str:
    cfg = config["studies"][STUDY]
    lines = [figure(name).caption, DATA_NOTE,
             f"Data used: {', '.join(sorted(df['dataset_variant'].unique()))}."]
    if df["is_substitute"].any():
        lines.append("SUBSTITUTE DATA: at least one dataset is a registered synthetic/deformed substitute (named "
                     "above); absolute accuracies are not those of the real data.")
    lines += preprocessing_note(df)
    lines += [f"Note: {d}" for d in deviations(cfg, name)]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------
# plots
# ---------------------------------------------------------------------------------------------------------


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


TPR_FLOOR = 1e-4  # where a TPR of 0 is drawn on the log axis of the TPR at FPR = 1e-3 panel


def _figure_legend(fig, axes, ncol: int = 3) -> None:
    """One legend below all panels with every series of any panel (the datasets have different method sets),
    and the layout tightened above it: no legend over a curve."""
    seen: dict = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    fig.legend(list(seen.values()), list(seen), loc="lower center", ncol=ncol, fontsize=7, frameon=False)
    rows = -(-len(seen) // ncol)
    height = fig.get_size_inches()[1]
    fig.tight_layout(rect=(0, min(0.4, (0.12 + 0.17 * rows) / height), 1, 1))


def _rate_errorbars(v, half, floor: float | None = None):
    """(points, yerr) of rates ``v`` ± ``half``, the interval clipped to [0, 1]; with ``floor`` (a log axis) a 0
    and interval ends below the floor are drawn at the floor."""
    v = np.asarray(v, dtype=float)
    lo, hi = np.clip(v - half, 0, 1), np.clip(v + half, 0, 1)
    if floor is not None:
        v, lo = np.maximum(v, floor), np.maximum(lo, floor)
    return v, np.vstack([v - lo, np.maximum(hi - v, 0)])


def _sub_label(ax, df):
    from dpbench.plot import LABEL_GID  # save_figure moves such labels off the data

    if df["is_substitute"].any():
        ax.text(0.02, 0.98, "SUBSTITUTE DATA: " + ", ".join(sorted(df.loc[df["is_substitute"], "dataset_variant"].unique())),
                transform=ax.transAxes, fontsize=6, va="top", color="darkred", gid=LABEL_GID, zorder=10,
                bbox=dict(boxstyle="round", facecolor="mistyrose", edgecolor="darkred"))


def _best(p: pd.DataFrame, metric: str) -> pd.DataFrame:
    return p.loc[p.groupby(["dataset", "method", "epsilon"])[metric].idxmax()]


def plot(config: dict, name: str, df: pd.DataFrame, out) -> str:
    from dpbench.plot import save_figure

    plt = _plt()
    cfg = config["studies"][STUDY]
    figure(name)
    alpha = 1 - float(cfg["ci_level"])
    if name.startswith("fig_attack_"):
        fig = _plot_attack(plt, cfg, name, df, alpha)
    elif name == "fig_roc":
        fig = _plot_roc(plt, cfg, df)
    elif name == "fig_eps_lower_bound":
        fig = _plot_eps(plt, cfg, df, alpha)
    else:
        fig = _plot_table(plt, cfg, df, alpha)
    return save_figure(fig, out, caption_text(config, name, df))


def _plot_attack(plt, cfg, name, df, alpha):
    p = pooled(df, alpha, cfg.get("ci_method", "design_effect"))
    eps = np.array(sorted(e for e in p["epsilon"].unique() if np.isfinite(e)))
    grid = np.logspace(np.log10(eps.min()) - 0.1, np.log10(eps.max()) + 0.1, 60) if eps.size else np.array([0.1, 10])
    fig, axes = plt.subplots(2, 2, figsize=(11, 8), dpi=110)
    for ax, (metric, label) in zip(axes.ravel(), PANEL_METRICS):
        bound = {"accuracy": B.accuracy_bound(grid), "advantage": B.advantage_bound(grid),
                 "auc": [auc_bound(e) for e in grid], "tpr_at_fpr_1e-3": B.tpr_bound(1e-3, grid)}[metric]
        ax.plot(grid, bound, color="0.6", linewidth=3, alpha=0.6, label="ε-DP bound (δ = 0)")
        best = _best(p, metric)
        for m in [m for m in figure(name).methods if m in set(best["method"])]:
            b = best[best["method"] == m].sort_values("epsilon")
            if m == "non_private":
                v = float(b[metric].iloc[0])
                ax.axhline(v, color="black", linestyle="--", linewidth=1.3,
                           label=f"non-private (ε = ∞): {v:.3f} [{ATTACK_LABELS[b['attack'].iloc[0]]}]")
                continue
            v = b[metric].to_numpy(float)
            if metric in ("accuracy", "advantage"):
                err = np.vstack([v - b[f"{metric}_lo"].to_numpy(float), b[f"{metric}_hi"].to_numpy(float) - v])
            else:
                half = b[f"{metric}_half"].fillna(0).to_numpy()   # t interval over the repetitions' models
                v, err = _rate_errorbars(v, half, TPR_FLOOR if metric == "tpr_at_fpr_1e-3" else None)
            ax.errorbar(b["epsilon"], v, yerr=err, capsize=2, markersize=4, label=LABELS[m], **STYLE[m])
        ax.set_xscale("log")
        ax.set_xlabel("ε (replace-one)")
        ax.set_ylabel(label + " (strongest attack)")
        if metric == "tpr_at_fpr_1e-3":  # a rate: log axis, 0 drawn at the floor, nothing below 0 or above 1
            ax.set_yscale("log")
            ax.set_ylim(TPR_FLOOR / 1.5, 1.5)
            ax.set_ylabel(f"{label} (strongest attack)\n0 drawn at 1e{int(round(np.log10(TPR_FLOOR)))}")
        ax.grid(True, which="both", alpha=0.25)
        _sub_label(ax, df)
    # one legend for the four panels, below them: it covers no curve
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7, frameon=False)
    d = name[len("fig_attack_"):]
    fig.suptitle(f"{STUDY} {name}: membership inference vs ε, {mc.DATASET_LABELS[d]} (n = "
                 f"{int(df['n_members'].iloc[0])} members + non-members × {int(df['rep'].max()) + 1} reps, "
                 f"{int(df['shadow_models'].iloc[0])} shadow models)", fontsize=9)
    fig.tight_layout(rect=(0, 0.015 + 0.022 * -(-len(labels) // 3), 1, 1))
    return fig


def _plot_roc(plt, cfg, df):
    fc = cfg["figures"]["fig_roc"]
    attack = fc.get("attack", "lira_offline")
    r = df[(df["metric"] == "roc_tpr") & (df["attack"] == attack)]
    dsets = [d for d in mc.DATASETS if d in set(r["dataset"])]
    epss = [float(e) for e in fc["epsilons"]]
    fig, axes = plt.subplots(len(dsets), len(epss), figsize=(3.6 * len(epss), 3.2 * len(dsets)), dpi=110,
                             squeeze=False)
    g = mc.ROC_GRID
    for i, d in enumerate(dsets):
        for j, e in enumerate(epss):
            ax = axes[i, j]
            ax.plot(g, g, color="gray", linestyle=":", linewidth=1)
            ax.plot(g, B.tpr_bound(g, e, 0.0), color="0.6", linewidth=3, alpha=0.6, label="ε-DP bound at the panel's ε")
            for m in mc.methods_for(d):
                sel = r[(r["dataset"] == d) & (r["method"] == m) & ((r["epsilon"] == e) | (m == "non_private"))]
                if sel.empty:
                    continue
                t = sel.groupby("x")["value"].mean()
                ax.plot(t.index, np.maximum(t.to_numpy(), 1e-4), label=LABELS[m], linewidth=1.2,
                        **{k: v for k, v in STYLE[m].items() if k != "marker"})
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlim(1e-4, 1)
            ax.set_ylim(1e-4, 1.05)
            ax.set_title(f"{mc.DATASET_LABELS[d]}, ε = {e:g}", fontsize=8)
            ax.set_xlabel("FPR")
            ax.set_ylabel("TPR")
            ax.grid(True, which="both", alpha=0.2)
            _sub_label(ax, r[r["dataset"] == d])
    fig.suptitle(f"{STUDY} fig_roc: {ATTACK_LABELS[attack]} ROC (log-log), mean over repetitions", fontsize=9)
    _figure_legend(fig, axes.ravel(), ncol=4)
    return fig


def _plot_eps(plt, cfg, df, alpha):
    p = pooled(df, alpha, cfg.get("ci_method", "design_effect"))
    p = p[np.isfinite(p["epsilon_game"])]
    dsets = [d for d in mc.DATASETS if d in set(p["dataset"])]
    fig, axes = plt.subplots(1, max(1, len(dsets)), figsize=(4.4 * max(1, len(dsets)), 4.2), dpi=110, squeeze=False)
    for ax, d in zip(axes[0], dsets):
        q = p[p["dataset"] == d]
        lim = [q["epsilon_game"].min() / 1.5, q["epsilon_game"].max() * 1.5]
        ax.plot(lim, lim, color="0.5", linestyle="--", label="ε̂ = ε (bound)")
        best = q.loc[q.groupby(["method", "epsilon"])["eps_lower"].idxmax()]
        for m in [m for m in mc.methods_for(d) if m in set(best["method"])]:
            b = best[best["method"] == m].sort_values("epsilon_game")
            ax.plot(b["epsilon_game"], np.maximum(b["eps_lower"], 1e-3), label=LABELS[m], markersize=4,
                    **STYLE[m])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(1e-3 * 0.8, lim[1])
        ax.set_xlabel("theoretical ε (replace-one)")
        ax.set_ylabel(f"empirical ε lower bound ({1 - alpha:.0%})\n0 drawn at 1e-3")
        ax.set_title(mc.DATASET_LABELS[d], fontsize=9)
        ax.grid(True, which="both", alpha=0.25)
        _sub_label(ax, df[df["dataset"] == d])
    fig.suptitle(f"{STUDY} fig_eps_lower_bound: strongest attack per method and ε", fontsize=9)
    _figure_legend(fig, axes.ravel(), ncol=4)
    return fig


def generalisation_table(df: pd.DataFrame, alpha: float, ci_method: str = "design_effect") -> pd.DataFrame:
    p = pooled(df, alpha, ci_method)
    rows = []
    for (d, m, e), g in p.groupby(["dataset", "method", "epsilon"], sort=False):
        b = g.loc[g["accuracy"].idxmax()]
        gap = g[g["attack"] == "gap"].iloc[0]
        rows.append({"dataset": mc.DATASET_LABELS[d], "model": LABELS[m], "ε": "∞" if not np.isfinite(e) else f"{e:g}",
                     "train acc.": f"{b['train_accuracy']:.1%}", "test acc.": f"{b['test_accuracy']:.1%}",
                     "gap": f"{b['train_accuracy'] - b['test_accuracy']:+.1%}",
                     "attack acc. (strongest)": f"{b['accuracy']:.1%} [{b['accuracy_lo']:.1%}, {b['accuracy_hi']:.1%}] "
                                                f"{ATTACK_LABELS[b['attack']]}",
                     "gap-attack acc.": f"{gap['accuracy']:.1%}",
                     "bound": "1" if not np.isfinite(e) else f"{b['bound_accuracy']:.1%}",
                     "_order": (mc.DATASETS.index(d), mc.METHODS.index(m))})
    t = pd.DataFrame(rows)
    return t.sort_values("_order").drop(columns="_order").reset_index(drop=True) if len(t) else t


def _plot_table(plt, cfg, df, alpha):
    t = generalisation_table(df, alpha, cfg.get("ci_method", "design_effect"))
    fig, ax = plt.subplots(figsize=(15, 0.32 * (len(t) + 3)), dpi=110)
    ax.axis("off")
    if len(t):
        tab = ax.table(cellText=t.values, colLabels=list(t.columns), loc="center", cellLoc="left")
        tab.auto_set_font_size(False)
        tab.set_fontsize(7)
        tab.auto_set_column_width(list(range(len(t.columns))))
    _sub_label(ax, df)
    ax.set_title(f"{STUDY} table_generalisation: privacy vs generalisation (private models at ε = "
                 f"{cfg['figures']['table_generalisation']['epsilon']:g})", fontsize=9)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------------------
# report and anchor checks
# ---------------------------------------------------------------------------------------------------------


def _html_table(t: pd.DataFrame, title: str) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in t.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in t.values)
    return (f"<h4>{html.escape(title)}</h4><table border='1' cellpadding='4' style='border-collapse:collapse;"
            f"font-family:sans-serif;font-size:12px'><tr>{head}</tr>{body}</table>")


def report_lead_html(config: dict, frames: dict) -> str:
    """Shown above the anchor table: the privacy-bug summary and, once, what the per-(dataset, method) AUDIT
    rows check."""
    cfg = config["studies"][STUDY]
    a = audit_table(frames, cfg)
    if not len(a):
        return ""
    bugs = a[a["bug"]]
    where = ", ".join(f"{r.dataset}/{r.method} ε={r.epsilon:g} {r.attack}" for r in bugs.head(10).itertuples())
    return (f"<h4>Privacy audit: <span style='color:{'darkred' if len(bugs) else 'green'}'>{len(bugs)} PRIVACY "
            f"BUG(S)</span> in {len(a)} (dataset, method, ε, attack) combinations"
            + (f": {html.escape(where)}" if len(bugs) else "") + "</h4>"
            "<p style='font-size:13px'>Each AUDIT row below covers one (dataset, method) over its whole ε grid: no "
            "attack's accuracy or TPR exceeds the ε-DP bound (acc ≤ (e^ε+δ)/(1+e^ε), TPR ≤ e^ε·FPR + δ, "
            "replace-one) beyond its confidence interval ("
            f"{html.escape(str(cfg.get('ci_method', 'design_effect')))}: trials clustered by target model; canary: "
            "exact Clopper–Pearson, independent trials), including the worst-case canary audit when enabled "
            f"(family-wise level {cfg['audit']['alpha']:g}, {html.escape(str(cfg['audit']['correction']))}); "
            "otherwise PRIVACY BUG.</p>")


def report_html(config: dict, frames: dict) -> str:
    cfg = config["studies"][STUDY]
    alpha = 1 - float(cfg["ci_level"])
    parts = []
    if "table_generalisation" in frames:
        parts.append(_html_table(generalisation_table(frames["table_generalisation"], alpha,
                                                      cfg.get("ci_method", "design_effect")),
                                 "Privacy vs generalisation (in the style of the slide 'Privacy and "
                                 "Generalization', Mondal 2024)"))
    a = audit_table(frames, cfg)
    if len(a):
        worst = a.assign(margin_acc=a["accuracy_lo"] - a["bound_accuracy"], margin_eps=a["eps_lower"] - a["epsilon_game"])
        bugs = worst[worst["bug"]]
        parts.append(f"<h4>Privacy audit: {len(a)} (dataset, method, ε, attack) combinations × 2 checks at family-wise "
                     f"level {cfg['audit']['alpha']:g} ({cfg['audit']['correction']}; intervals: "
                     f"{cfg.get('ci_method', 'design_effect')}, trials clustered by target model); "
                     f"<span style='color:{'darkred' if len(bugs) else 'green'}'>{len(bugs)} PRIVACY BUG(S)"
                     "</span></h4>")
        show = (bugs if len(bugs) else worst.nlargest(min(10, len(worst)), "margin_eps"))
        parts.append(_html_table(show.reindex(columns=["dataset", "method", "epsilon", "attack", "ci_method",
                                                       "accuracy_lo", "bound_accuracy", "eps_lower", "epsilon_game",
                                                       "deff_accuracy", "eps_deff_tpr", "eps_deff_fpr",
                                                       "bug"]).round(4),
                                 "Flagged combinations" if len(bugs) else "Closest to the bound (none exceeds it)"))
        can = a[a["attack"] == "canary"]
        if len(can):
            parts.append(_html_table(
                can[["dataset", "method", "epsilon", "epsilon_game", "delta_game", "trials", "canary_tp", "canary_n_pos",
                     "canary_fp", "canary_n_neg", "eps_point", "eps_lower", "bug"]].round(4),
                "Canary audit (worst-case replace-one pair: canary x with ‖x‖ = 1 in the least-spanned direction, "
                "flipped label; statistic = canary score margin; ε̂ lower limit at the family-wise level)"))
        a = a[a["attack"] != "canary"]
        summ = (a.loc[a.groupby(["dataset", "method", "epsilon"])["accuracy"].idxmax()]
                [["dataset", "method", "epsilon", "attack", "accuracy", "accuracy_lo", "accuracy_hi", "bound_accuracy",
                  "eps_point", "eps_lower", "deff_accuracy", "deff_tpr", "deff_fpr"]].round(4))
        parts.append(_html_table(summ, "Strongest attack per (dataset, method, ε), pooled over repetitions (interval "
                                       "bounds at the family-wise level; deff = estimated design effect of the pooled "
                                       "correct decisions / TPR / FPR, between-model over binomial variance, ≥ 1)"))
        if len(a) and a["deff_accuracy"].notna().any():
            parts.append(f"<p>Design effects over the {len(a)} audited (dataset, method, ε, attack): correct decisions "
                         f"median {a['deff_accuracy'].median():.2f}, max {a['deff_accuracy'].max():.2f}; TPR / FPR "
                         f"median {pd.concat([a['deff_tpr'], a['deff_fpr']]).median():.2f}, max "
                         f"{pd.concat([a['deff_tpr'], a['deff_fpr']]).max():.2f} (1 = no detectable over-dispersion; "
                         f"estimated from {int(a['reps'].max())} repetitions).</p>")
    return "".join(parts)


def anchor_checks(frames: dict, config: dict | None = None) -> pd.DataFrame:
    """The audit (one row per dataset × method: no attack exceeds its ε-DP bound beyond its interval) and the
    qualitative claims of the slides' "Privacy and Generalization" table (Mondal 2024): Q1 the non-private model
    leaks (attack accuracy above 50% beyond the interval) where it generalises worse than it fits; Q2 at the
    smallest ε every private model's attack accuracy is within its interval of 50% or below the bound; Q3
    gap-attack accuracy = ½ + (train − test)/2 (balanced sets, exact identity); Q4 private models have a smaller
    train–test gap than the non-private one."""
    rows: list[dict] = []

    add = V.adder(rows, STUDY)  # three-valued verdicts (dpbench.verdicts)

    any_frame = next(iter(frames.values()), None)
    cfg = _cfg_from(config, any_frame)
    a = audit_table(frames, cfg)
    if len(a):
        for (d, m), g in a.groupby(["dataset", "method"], sort=False):
            bugs = g[g["bug"]]
            worst = g.loc[(g["eps_lower"] - g["epsilon_game"]).idxmax()]
            meas = (f"{len(bugs)} of {len(g)} (ε, attack) exceed: " + "; ".join(
                _audit_desc(r, "vs") for r in bugs.itertuples())) if len(bugs) else (
                f"none of {len(g)} (ε, attack) exceeds; closest: " + _audit_desc(worst, "≤"))
            can = g[g["attack"] == "canary"]
            if len(can):
                meas += (f" | canary audit ({len(can)} ε): max ε̂_lo − ε = "
                         f"{float((can['eps_lower'] - can['epsilon_game']).max()):+.3f}")
            eps = sorted(g["epsilon_game"].unique())
            add(f"AUDIT/{d}/{m}", f"fig_attack_{d}", f"{d}, {m}: no attack exceeds the ε-DP bound beyond its "
                f"interval at any ε ∈ {{{', '.join(f'{e:g}' for e in eps)}}} (audit defined above the table)",
                meas, float((g["eps_lower"] - g["epsilon_game"]).max()), bugs.empty)
    alpha = 1 - float(cfg["ci_level"])
    att = [f for n, f in frames.items() if n.startswith("fig_attack_")]
    if att:
        p = pooled(pd.concat(att, ignore_index=True), alpha, cfg.get("ci_method", "design_effect"))
        npv = p[p["method"] == "non_private"]
        for d, g in npv.groupby("dataset", sort=False):
            b = g.loc[g["accuracy_lo"].idxmax()]
            ga = g[g["attack"] == "gap"].iloc[0]
            gap = float(b["train_accuracy"] - b["test_accuracy"])
            add(f"Q1/{d}", f"fig_attack_{d}", "slide 'Privacy and Generalization' (without defense): the "
                "non-private model leaks — the strongest attack's accuracy is above 50% beyond its interval "
                "wherever the generalisation gap is significant "
                "(gap-attack accuracy ½ + gap/2 above 50% beyond its interval)",
                f"train−test gap {gap:+.3f} (gap attack lower limit {ga['accuracy_lo']:.3f}); {b['attack']}: "
                f"{b['accuracy']:.3f} [{b['accuracy_lo']:.3f}, {b['accuracy_hi']:.3f}]", float(b["accuracy"]),
                b["accuracy_lo"] > 0.5 or ga["accuracy_lo"] <= 0.5)
        priv = p[np.isfinite(p["epsilon"])]
        if len(priv):
            e0 = priv["epsilon"].min()
            low = priv[priv["epsilon"] == e0]
            ok = (low["accuracy_lo"] <= 0.5) | (low["accuracy_lo"] <= low["bound_accuracy"])
            add("Q2", "fig_attack_*", "slide 'Privacy and Generalization' (with defense ≈ 'Random guess'): "
                f"at ε = {e0:g} every attack on every private model is within its interval of 50% or below the "
                "bound",
                f"{int(ok.sum())} of {len(low)}; largest accuracy {low['accuracy'].max():.3f}", float(low["accuracy"].max()),
                bool(ok.all()))
        gp = p[p["attack"] == "gap"]
        dev = (gp["accuracy"] - (0.5 + (gp["train_accuracy"] - gp["test_accuracy"]) / 2)).abs()
        add("Q3", "fig_attack_*", "gap-attack accuracy = ½ + (train acc − test acc)/2 on balanced sets (Yeom et "
            "al. 2018; consistency of the evaluation)", f"max deviation {dev.max():.2e}", float(dev.max()),
            bool(dev.max() < 1e-9))
    if "table_generalisation" in frames:
        t = frames["table_generalisation"]
        s = t[t["metric"] == "train_accuracy"].groupby(["dataset", "method"])[["train_accuracy", "test_accuracy"]].mean()
        s["gap"] = s["train_accuracy"] - s["test_accuracy"]
        for d in s.index.get_level_values(0).unique():
            sd = s.loc[d]
            if "non_private" not in sd.index:
                continue
            g0 = sd.loc["non_private", "gap"]
            others = sd.drop(index="non_private")["gap"]
            trials = t[t["dataset"] == d].groupby("method")["rep"].nunique().max() * int(t["n_members"].iloc[0])
            slack = 2 * math.sqrt(0.5 / trials)  # 2 standard errors of a difference of two accuracies near 1/2
            if others.empty:  # no private model: "every private model" must not pass vacuously
                add(f"Q4/{d}", "table_generalisation", "slide 'Privacy and Generalization' ('Smaller gap' with the "
                    "defense): every private model's train−test gap is at most the non-private model's",
                    "no private model", np.nan,
                    V.undecided(V.EMPTY + " (no private model)"))
                continue
            add(f"Q4/{d}", "table_generalisation", "slide 'Privacy and Generalization' ('Smaller gap' with the "
                f"defense): every private model's train−test gap is at most the non-private model's "
                f"(+{slack:.3f} = 2 standard errors)",
                f"non-private {g0:+.3f}; private max {others.max():+.3f}", float(others.max() - g0),
                bool((others <= g0 + slack).all()))
    return pd.DataFrame(rows, columns=V.COLUMNS)


def _audit_desc(r, rel: str) -> str:
    """One audited comparison as text (canary rows have no accuracy)."""
    if r.attack == "canary":
        return (f"ε={r.epsilon:g} canary: ε̂_lo {r.eps_lower:.3f} {rel} {r.epsilon_game:g} (TP {int(r.canary_tp)}/"
                f"{int(r.canary_n_pos)}, FP {int(r.canary_fp)}/{int(r.canary_n_neg)})")
    return (f"ε={r.epsilon:g} {r.attack}: acc_lo {r.accuracy_lo:.3f} {rel} {r.bound_accuracy:.3f}, ε̂_lo "
            f"{r.eps_lower:.3f} {rel} {r.epsilon_game:g}")


def _row_ci_method(frame) -> str:
    """The pooled-interval method the rows record (the canary rows record their own); rows written before the
    column existed: the default."""
    if "ci_method" not in frame:
        return "design_effect"
    v = frame.loc[frame["attack"] != "canary", "ci_method"].dropna()
    return str(v.iloc[0]) if len(v) else "design_effect"


def _cfg_from(config: dict | None, frame) -> dict:
    """Audit settings: from the config when given, else from the rows (report.run_anchor_checks passes the result
    frames only; every row records ci_level, ci_method, audit_alpha and audit_correction)."""
    if config is not None:
        return config["studies"][STUDY]
    if frame is None or "audit_alpha" not in frame:
        raise ValueError("the membership rows carry no audit settings (ci_level, audit_alpha, audit_correction)")
    return {"ci_level": float(frame["ci_level"].iloc[0]),
            "ci_method": _row_ci_method(frame),
            "audit": {"alpha": float(frame["audit_alpha"].iloc[0]), "correction": str(frame["audit_correction"].iloc[0])}}



# -- the study protocol (dpbench.studies.protocol): this module's functions as independent units of work ------------------

from dpbench.studies.protocol import UnitStudy, from_module  # noqa: E402 - wraps the functions above

STUDY_OBJECT = from_module(UnitStudy, globals(), name=STUDY, figures=FIGURES, source=STUDY, data_note=DATA_NOTE)
