"""membership — one cell per (dataset, method, ε, repetition): every attack on one cached target model, with its
metrics; and the canary audit per (dataset, method, ε). Code hash: this module's import closure (attacks, metrics,
canary audit and, through :mod:`.training`, the training code)."""

from __future__ import annotations

import math
import time

import numpy as np

from dpbench.attacks import membership as mia
from dpbench.attacks import metrics as M
from dpbench.rng import generator, stream_key
from dpbench.store import Store, content_key
from dpbench.studies.membership.training import (ROC_GRID, STUDY, _eps_key, _training_settings, dataset_payload,
                                                 game_budget, load_prepared, member_split, model, release_many,
                                                 shadow_halves, training_code_hash)


def attack_code_hash() -> str:
    """This module and what it imports, transitively (:mod:`dpbench.codehash`): the attacks, the metrics, the
    canary audit and the training code; the code hash of attack cells and canary records alike."""
    from dpbench.codehash import code_hash

    return code_hash(__name__)


# ---------------------------------------------------------------------------------------------------------
# one cell: every attack on one target model, with metrics
# ---------------------------------------------------------------------------------------------------------


def cell_payload(config: dict, dataset: str, method: str, epsilon: float, rep: int) -> dict:
    cfg = config["studies"][STUDY]
    return {"kind": "membership-cell", "data": dataset_payload(config, dataset), "method": method,
            "settings": _training_settings(cfg, method), "epsilon": _eps_key(epsilon), "rep": int(rep),
            "shadow_models": int(cfg["shadow_models"]), "attacks": cfg["attacks"], "ci_level": cfg["ci_level"],
            "noise_factor": float(cfg["fault_injection"]["noise_factor"]), "train_code": training_code_hash(),
            "attack_code": attack_code_hash()}


def compute_cell(config: dict, dataset: str, method: str, epsilon: float, rep: int) -> dict:
    cfg = config["studies"][STUDY]
    t0 = time.perf_counter()
    a = load_prepared(config, dataset)
    n, X, y, C = a["n"], a["X"], a["y"], a["n_classes"]
    k = int(cfg["shadow_models"])
    alpha = 1.0 - float(cfg["ci_level"])
    members = member_split(config, dataset, n, rep)
    Xc, yc = X[: 2 * n], y[: 2 * n]
    Xs, ys = X[2 * n:], y[2 * n:]
    halves = shadow_halves(config, dataset, n, k)
    Wt = model(config, dataset, method, epsilon, "target", rep, a)
    shadows = [model(config, dataset, method, epsilon, "shadow", j, a) for j in range(k)]
    t_train = time.perf_counter() - t0
    zt = Xc @ Wt
    loss = mia.cross_entropy(zt, yc)
    correct = np.argmax(zt, axis=1) == yc
    attacks = mia.evaluate_attacks(zt, yc, float(loss[members].mean()), np.stack([Xs @ W for W in shadows]), ys,
                                   halves, np.stack([Xc @ W for W in shadows]), n_classes=C,
                                   lira_variance=cfg["attacks"]["lira_variance"], shadow_C=cfg["attacks"]["shadow_C"])
    eps_game, delta_game = game_budget(cfg, method, epsilon)
    is_member = members.astype(int)  # MEMBER = 1
    out = {"train_accuracy": float(correct[members].mean()), "test_accuracy": float(correct[~members].mean()),
           "train_loss": float(loss[members].mean()), "test_loss": float(loss[~members].mean()),
           "n_members": int(n), "n_nonmembers": int(n), "epsilon_game": eps_game, "delta_game": delta_game,
           "variant": a["variant"], "is_substitute": a["is_substitute"], "n_classes": C, "dim": int(X.shape[1]),
           "attacks": {}}
    for name, (scores, decisions) in attacks.items():
        dec = np.asarray(decisions).astype(bool)
        tp, fp = int((dec & members).sum()), int((dec & ~members).sum())
        rs = M.rate_summary(tp, n, fp, n, alpha)
        fpr, tpr, _ = M.roc_curve(scores, is_member)
        auc, auc_lo, auc_hi = M.auc_delong(scores, is_member, alpha)
        audit = M.epsilon_audit(scores, is_member, delta_game if math.isfinite(eps_game) else 0.0,
                                generator(config["seed"], stream_key({**cell_payload(config, dataset, method,
                                                                                     epsilon, rep),
                                                                      "purpose": f"audit-split/{name}"})),
                                alpha)
        out["attacks"][name] = {
            "tp": tp, "fp": fp, **{k2: float(v) for k2, v in rs.items()},
            "auc": auc, "auc_lo": auc_lo, "auc_hi": auc_hi,
            "tpr_at_fpr_1e-3": M.tpr_at_fpr(fpr, tpr, 1e-3), "tpr_at_fpr_1e-2": M.tpr_at_fpr(fpr, tpr, 1e-2),
            "roc": M.roc_on_grid(fpr, tpr, ROC_GRID).tolist(),
            "eps_tp": audit["tp"], "eps_fp": audit["fp"], "eps_n_pos": audit["n_pos"], "eps_n_neg": audit["n_neg"],
            "eps_point": audit["eps_point"], "eps_lower": audit["eps_lower"]}
    out["runtime_train_s"] = t_train
    out["runtime_s"] = time.perf_counter() - t0
    return out


def cell(config: dict, dataset: str, method: str, epsilon: float, rep: int) -> dict:
    """The cached cell record (computed once per content key, process-safe)."""
    key = content_key(cell_payload(config, dataset, method, epsilon, rep))
    return Store(config["cache_dir"]).record(key, lambda: compute_cell(config, dataset, method, epsilon, rep))


# ---------------------------------------------------------------------------------------------------------
# canary audit: worst-case replace-one pair per (dataset, method, ε) (dpbench.attacks.canary)
# ---------------------------------------------------------------------------------------------------------


def canary_payload(config: dict, dataset: str, method: str, epsilon: float) -> dict:
    cfg = config["studies"][STUDY]
    return {"kind": "membership-canary", "data": dataset_payload(config, dataset), "method": method,
            "settings": _training_settings(cfg, method), "epsilon": _eps_key(epsilon),
            "trials": int(cfg["canary_audit"]["trials"]), "ci_level": cfg["ci_level"],
            "noise_factor": float(cfg["fault_injection"]["noise_factor"]), "code": attack_code_hash()}  # this module's closure includes attacks.canary


def compute_canary(config: dict, dataset: str, method: str, epsilon: float) -> dict:
    """The canary audit of one (dataset, method, ε): the base training set is the member set of repetition 0
    (n records), its last row replaced by the canary (flipped label between D and D′); ``trials`` releases per
    side via :func:`release_many`; claimed budget = the method's replace-one (ε, δ) (:func:`game_budget`)."""
    from dpbench.attacks.canary import canary_audit

    cfg = config["studies"][STUDY]
    a = load_prepared(config, dataset)
    n = a["n"]
    rows = np.nonzero(member_split(config, dataset, n, 0))[0]
    nf = float(cfg["fault_injection"]["noise_factor"])
    payload = canary_payload(config, dataset, method, epsilon)
    rng = generator(config["seed"], stream_key({**payload, "purpose": "canary"}))
    shared = int(generator(config["seed"], stream_key({**payload, "purpose": "canary-shared"})).integers(2**62))
    eps_game, delta_game = game_budget(cfg, method, epsilon)

    def release(X, y, trials, r, shared_seed):
        return release_many(cfg, method, X, y, a["n_classes"], epsilon, trials, r, shared_seed, nf)

    out = canary_audit(release, a["X"][rows], a["y"][rows], a["n_classes"], eps_game, delta_game,
                       int(cfg["canary_audit"]["trials"]), rng, 1.0 - float(cfg["ci_level"]), shared)
    out.update({"epsilon_game": eps_game, "delta_game": delta_game, "variant": a["variant"],
                "is_substitute": a["is_substitute"], "n_members": int(n), "n_classes": a["n_classes"],
                "dim": int(a["X"].shape[1])})
    return out


def canary(config: dict, dataset: str, method: str, epsilon: float) -> dict:
    """The cached canary-audit record of one (dataset, method, ε)."""
    from threadpoolctl import threadpool_limits

    key = content_key(canary_payload(config, dataset, method, epsilon))

    def compute():
        with threadpool_limits(1):
            return compute_canary(config, dataset, method, epsilon)

    return Store(config["cache_dir"]).record(key, compute)


def cells(config: dict, plan: list[tuple[str, str, float, int]], n_jobs: int = 1) -> list[dict]:
    """Records of ``plan`` [(dataset, method, ε, rep)], computed in parallel where missing. Shadow models of
    one (dataset, method, ε) are trained by the first cell that needs them (the artefact lock makes the others
    wait and read them)."""
    from dpbench.parallel import run_units

    return run_units(cell, [(config, *p) for p in plan], n_jobs, "membership cells")

