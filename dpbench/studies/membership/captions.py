"""membership — caption notes (every choice and deviation) and the caption text."""

from __future__ import annotations

import pandas as pd

from dpbench.attacks.metrics import clopper_pearson
from dpbench.studies.base import preprocessing_note
from dpbench.studies.membership import training as mc
from dpbench.studies.membership.rows import canary_methods
from dpbench.studies.membership.spec import ATTACK_LABELS, DATA_NOTE, STUDY, figure

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
        "gradient difference 2K; the paper's add/remove calibration would be 1.5ε-DP in this game; its tight "
        "calibration, dashed: the same ρ and the least L2-Laplace noise whose proved replace-one privacy loss, the "
        "noise term plus the Jacobian term tr(H⁻¹E) ≤ (1 − ‖p‖²)/ρ, is ≤ ε — half the noise at C ≥ 8 classes, × 0.62 "
        "at C = 2) pure "
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


