"""membership — the privacy audit rows and the slides' claims checked on the results (three-valued verdicts,
:mod:`dpbench.verdicts`), and the study's report tables."""

from __future__ import annotations

import functools
import html
import math

import numpy as np
import pandas as pd

from dpbench import verdicts as V
from dpbench.studies.base import html_table as _base_table
from dpbench.studies.membership.spec import STUDY
from dpbench.studies.membership.summaries import audit_table, generalisation_table, pooled

_table = functools.partial(_base_table, font_size=12)  # this page's tables: a smaller font


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
        parts.append(_table(generalisation_table(frames["table_generalisation"], alpha,
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
        parts.append(_table(show.reindex(columns=["dataset", "method", "epsilon", "attack", "ci_method",
                                                       "accuracy_lo", "bound_accuracy", "eps_lower", "epsilon_game",
                                                       "deff_accuracy", "eps_deff_tpr", "eps_deff_fpr",
                                                       "bug"]).round(4),
                                 "Flagged combinations" if len(bugs) else "Closest to the bound (none exceeds it)"))
        can = a[a["attack"] == "canary"]
        if len(can):
            parts.append(_table(
                can[["dataset", "method", "epsilon", "epsilon_game", "delta_game", "trials", "canary_tp", "canary_n_pos",
                     "canary_fp", "canary_n_neg", "eps_point", "eps_lower", "bug"]].round(4),
                "Canary audit (worst-case replace-one pair: canary x with ‖x‖ = 1 in the least-spanned direction, "
                "flipped label; statistic = canary score margin; ε̂ lower limit at the family-wise level)"))
        a = a[a["attack"] != "canary"]
        summ = (a.loc[a.groupby(["dataset", "method", "epsilon"])["accuracy"].idxmax()]
                [["dataset", "method", "epsilon", "attack", "accuracy", "accuracy_lo", "accuracy_hi", "bound_accuracy",
                  "eps_point", "eps_lower", "deff_accuracy", "deff_tpr", "deff_fpr"]].round(4))
        parts.append(_table(summ, "Strongest attack per (dataset, method, ε), pooled over repetitions (interval "
                                       "bounds at the family-wise level; deff = estimated design effect of the pooled "
                                       "correct decisions / TPR / FPR, between-model over binomial variance, ≥ 1)"))
        if len(a) and a["deff_accuracy"].notna().any():
            parts.append(f"<p>Design effects over the {len(a)} audited (dataset, method, ε, attack): correct decisions "
                         f"median {a['deff_accuracy'].median():.2f}, max {a['deff_accuracy'].max():.2f}; TPR / FPR "
                         f"median {pd.concat([a['deff_tpr'], a['deff_fpr']]).median():.2f}, max "
                         f"{pd.concat([a['deff_tpr'], a['deff_fpr']]).max():.2f} (1 = no detectable over-dispersion; "
                         f"estimated from {int(a['reps'].max())} repetitions).</p>")
    return "".join(parts)


#: The claims checked here: the slides' "Privacy and Generalization" table (Mondal 2024) and the ε-DP bound of the
#: membership game; ``{...}`` fields are filled by the check, one row per dataset (and method) where marked.
SLIDE = "Mondal 2024, slide 'Privacy and Generalization'"
CLAIMS = V.claim_table(
    V.Claim("AUDIT", "fig_attack_{dataset}", "Mondal 2024, slide 'How to Quantify the Leakage?'; ε-DP bound of the "
            "game (Kairouz et al. 2015)",
            "{dataset}, {method}: no attack exceeds the ε-DP bound beyond its interval at any ε ∈ {{{eps}}} (audit "
            "defined above the table)"),
    V.Claim("Q1", "fig_attack_{dataset}", SLIDE,
            "slide 'Privacy and Generalization' (without defense): the non-private model leaks — the strongest "
            "attack's accuracy is above 50% beyond its interval wherever the generalisation gap is significant "
            "(gap-attack accuracy ½ + gap/2 above 50% beyond its interval)"),
    V.Claim("Q2", "fig_attack_*", SLIDE,
            "slide 'Privacy and Generalization' (with defense ≈ 'Random guess'): at ε = {e0:g} every attack on "
            "every private model is within its interval of 50% or below the bound"),
    V.Claim("Q3", "fig_attack_*", "Yeom et al. 2018 (consistency of the evaluation)",
            "gap-attack accuracy = ½ + (train acc − test acc)/2 on balanced sets (Yeom et al. 2018; consistency of "
            "the evaluation)"),
    V.Claim("Q4", "table_generalisation", SLIDE,
            "slide 'Privacy and Generalization' ('Smaller gap' with the defense): every private model's train−test "
            "gap is at most the non-private model's{slack}"),
)


def anchor_checks(frames: dict, config: dict | None = None) -> pd.DataFrame:
    """The audit (one row per dataset × method: no attack exceeds its ε-DP bound beyond its interval) and the
    qualitative claims of the slides' "Privacy and Generalization" table (Mondal 2024): Q1 the non-private model
    leaks (attack accuracy above 50% beyond the interval) where it generalises worse than it fits; Q2 at the
    smallest ε every private model's attack accuracy is within its interval of 50% or below the bound; Q3
    gap-attack accuracy = ½ + (train − test)/2 (balanced sets, exact identity); Q4 private models have a smaller
    train–test gap than the non-private one."""
    rows: list[dict] = []

    add = V.claim_adder(rows, STUDY, CLAIMS)  # three-valued verdicts (dpbench.verdicts)

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
            add("AUDIT", meas, float((g["eps_lower"] - g["epsilon_game"]).max()), bugs.empty, instance=f"{d}/{m}",
                dataset=d, method=m, eps=", ".join(f"{e:g}" for e in eps))
    alpha = 1 - float(cfg["ci_level"])
    att = [f for n, f in frames.items() if n.startswith("fig_attack_")]
    if att:
        p = pooled(pd.concat(att, ignore_index=True), alpha, cfg.get("ci_method", "design_effect"))
        npv = p[p["method"] == "non_private"]
        for d, g in npv.groupby("dataset", sort=False):
            b = g.loc[g["accuracy_lo"].idxmax()]
            ga = g[g["attack"] == "gap"].iloc[0]
            gap = float(b["train_accuracy"] - b["test_accuracy"])
            add("Q1", f"train−test gap {gap:+.3f} (gap attack lower limit {ga['accuracy_lo']:.3f}); {b['attack']}: "
                f"{b['accuracy']:.3f} [{b['accuracy_lo']:.3f}, {b['accuracy_hi']:.3f}]", float(b["accuracy"]),
                b["accuracy_lo"] > 0.5 or ga["accuracy_lo"] <= 0.5, instance=d, dataset=d)
        priv = p[np.isfinite(p["epsilon"])]
        if len(priv):
            e0 = priv["epsilon"].min()
            low = priv[priv["epsilon"] == e0]
            ok = (low["accuracy_lo"] <= 0.5) | (low["accuracy_lo"] <= low["bound_accuracy"])
            add("Q2", f"{int(ok.sum())} of {len(low)}; largest accuracy {low['accuracy'].max():.3f}", float(low["accuracy"].max()),
                bool(ok.all()), e0=e0)
        gp = p[p["attack"] == "gap"]
        dev = (gp["accuracy"] - (0.5 + (gp["train_accuracy"] - gp["test_accuracy"]) / 2)).abs()
        add("Q3", f"max deviation {dev.max():.2e}", float(dev.max()),
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
                add("Q4", "no private model", np.nan, V.undecided(V.EMPTY + " (no private model)"), instance=d,
                    slack="")
                continue
            add("Q4", f"non-private {g0:+.3f}; private max {others.max():+.3f}", float(others.max() - g0),
                bool((others <= g0 + slack).all()), instance=d, slack=f" (+{slack:.3f} = 2 standard errors)")
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



