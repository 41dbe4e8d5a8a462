"""membership — pooled summaries (counts summed over repetitions), the audit table and the generalisation table,
shared by captions, plots and anchor checks."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpbench.attacks.metrics import (CI_METHODS, cluster_mean_interval, epsilon_lower_bound,
                                     pooled_epsilon_lower_bound, pooled_rate_summary)
from dpbench.privacy import attack_bounds as B
from dpbench.studies.membership import training as mc
from dpbench.studies.membership.rows import CANARY_CI_METHOD
from dpbench.studies.membership.spec import ATTACK_LABELS

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




def generalisation_table(df: pd.DataFrame, alpha: float, ci_method: str = "design_effect") -> pd.DataFrame:
    p = pooled(df, alpha, ci_method)
    rows = []
    for (d, m, e), g in p.groupby(["dataset", "method", "epsilon"], sort=False):
        b = g.loc[g["accuracy"].idxmax()]
        gap = g[g["attack"] == "gap"].iloc[0]
        rows.append({"dataset": mc.DATASET_LABELS[d], "model": mc.label_of(m), "ε": "∞" if not np.isfinite(e) else f"{e:g}",
                     "train acc.": f"{b['train_accuracy']:.1%}", "test acc.": f"{b['test_accuracy']:.1%}",
                     "gap": f"{b['train_accuracy'] - b['test_accuracy']:+.1%}",
                     "attack acc. (strongest)": f"{b['accuracy']:.1%} [{b['accuracy_lo']:.1%}, {b['accuracy_hi']:.1%}] "
                                                f"{ATTACK_LABELS[b['attack']]}",
                     "gap-attack acc.": f"{gap['accuracy']:.1%}",
                     "bound": "1" if not np.isfinite(e) else f"{b['bound_accuracy']:.1%}",
                     "_order": (mc.DATASETS.index(d), mc.METHODS.index(m))})
    t = pd.DataFrame(rows)
    return t.sort_values("_order").drop(columns="_order").reset_index(drop=True) if len(t) else t


