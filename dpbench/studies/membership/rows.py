"""membership — a series' rows: plan the cells of a figure, read them (computed and cached by :mod:`.cells`),
emit long rows. Code hash: this module's import closure (cells, attacks, training; also the figure declarations
of :mod:`.spec`, whose edits only reassemble rows from the cached cells)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpbench.privacy import attack_bounds as B
from dpbench.studies.membership import cells as cells_mod
from dpbench.studies.membership import training as mc
from dpbench.studies.membership.spec import STUDY, figure, methods, series


def series_code_hash(series_name: str) -> str:
    from dpbench.codehash import code_hash

    return code_hash(__name__)


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
            "method": m, "method_label": mc.label_of(m), "calibration": mc.calibration_of(m), "dataset": d, "dataset_variant": rec["variant"],
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
    recs = cells_mod.cells(config, p, n_jobs)
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
        rec = cells_mod.canary(config, d, m, e)
        base = {"study": STUDY, "figure": figure_name, "series": m if figure_name.startswith("fig_attack_") else d,
                "method": m, "method_label": mc.label_of(m), "calibration": mc.calibration_of(m), "dataset": d, "dataset_variant": rec["variant"],
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


