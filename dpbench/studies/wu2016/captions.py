"""wu2016 — caption notes (every choice the thesis leaves open, every deviation:
docs/studies/wu2016.md#open-choices) and the caption text of both chapters' figures."""

from __future__ import annotations

import pandas as pd

from dpbench.data import warfarin as wf
from dpbench.studies.base import preprocessing_note
from dpbench.studies.wu2016 import ch4_compute as ch4
from dpbench.studies.wu2016.ch3_data import DATASET_LABELS, STUDY
from dpbench.studies.wu2016.spec import figure

# ---------------------------------------------------------------------------------------------------------
# chapter 3 (Figs. 3.2–3.4)
# ---------------------------------------------------------------------------------------------------------


def deviations(cfg: dict, name: str) -> list[str]:
    """Every choice the thesis leaves open and every deviation, as caption notes (``cfg``: the study's block)."""
    if name in ch4.FIGURE_NAMES:
        return _ch4_deviations(cfg, name)
    ch = cfg["choices"]
    lam = cfg["l2"]
    eta = "1/√m" if ch["convex_eta"] is None else f"{ch['convex_eta']:g}"
    common = [
        "Logistic loss on unit-sphere rows: L = 1 (|φ′| ≤ 1), β = 1/4 (φ″ ≤ 1/4), γ = λ in the strongly convex "
        "tests; replace-one neighbours; δ = 1/m with m the training-set size; MNIST trains 10 one-vs-all models "
        "with ε/10 and δ/10 each (docs/studies/wu2016.md#open-choices item 8) and predicts the argmax score. "
        "L = 1 also for the unconstrained regularised tests (docs/studies/wu2016.md#lipschitz-constant): at the "
        "one update where neighbours differ, the regulariser's gradient is the same for both, so only the loss "
        "gradients (‖∇ℓ‖ ≤ 1) enter the sensitivity.",
        f"Constant step of the convex tests (noiseless and ours) η = {eta} [INFERRED: the thesis never gives it "
        "(Wu 2016, Table 3.3: 'Constant'); 1/√m vanishes as m grows, as the remarks after its Cor. 3.8 ask; "
        "η ≤ 2/β = 8; docs/studies/wu2016.md#open-choices item 1].",
        ("Strongly convex bolt-on sensitivity 2L/(γ·b·⌊m/b⌋) (rigorous; the thesis' 2L/(γmb) (Wu 2016, §3.3 "
         "'Implemented Algorithms') is violated by a factor up to b for b > 1 when t counts mini-batch updates, "
         "docs/studies/wu2016.md#mini-batch-sensitivity — measured in the tests)."
         if ch["sc_sensitivity"] == "rigorous" else
         "Strongly convex bolt-on sensitivity 2L/(γmb) as printed (Wu 2016, §3.3 'Implemented Algorithms'); NOT a "
         "valid bound for b > 1 (docs/studies/wu2016.md#mini-batch-sensitivity): the (ε, δ) of these curves are "
         "nominal."),
        "Bolt-on: exactly b examples per update (the m mod b left-over examples of each pass are skipped), noise "
        f"L2-Laplace (ε-DP) or {'classic' if ch['gaussian_noise'] == 'gaussian' else 'analytic'} Gaussian ((ε,δ)-DP) "
        "once on the output; the noiseless PSGD run is shared by every ε and both δ of a convexity.",
        "SCS13: step 1/√t, noise on every mini-batch with density ∝ exp(−(ε_pass/2)‖z‖) (ε-DP) or Gaussian with "
        "σ = 2√(2 ln(1.25/δ_pass))/ε_pass, ε_pass = ε/k and δ_pass = δ/k per pass [INFERRED: the thesis does not "
        "say how the budget is split over passes; basic composition; docs/studies/wu2016.md#open-choices item 6]; "
        f"radius 1/λ = {1 / lam:g} in the strongly convex tests, unconstrained otherwise (Wu 2016, Fig. 3.2 "
        "caption).",
        f"BST14: examples drawn with replacement, T = ⌈km/b⌉ Gaussian steps, δ₁ = δ/T, ε₁ from its composition "
        f"equation, ε₂ = min(1, mε₁/(2b)), noise variance ι σ² with ι = {ch['bst14_iota']:g} "
        + ("(replace-one sensitivity 2 of the gradient sum; the thesis' ι = 1 under-noises by a factor 2)"
           if float(ch["bst14_iota"]) == 4.0 else "(as printed; under-noised for replace-one neighbours)")
        + f"; G = √(dισ² + b²L²); Test 2 radius R = "
        f"{(ch['bst14_convex_radius'] or 1 / lam):g} [INFERRED: not given in the thesis; SCS13's radius; "
        "docs/studies/wu2016.md#open-choices item 7], Test 4 radius 1/λ.",
        "BST14 (tight calibration), dashed: the same algorithm with σ from the PLD of its mixture-of-Gaussians updates "
        "(replace-one through the run without the record: ε = 2ε_h at δ_h(1 + e^{ε_h}); dp_accounting, pessimistic "
        "estimate; docs/studies/wu2016.md#bst14-tight): about a tenth of the thesis' σ, the same (ε, δ).",
        "Noiseless: Table 3.3 step sizes (constant η convex, 1/(γt) strongly convex), unconstrained.",
    ]
    out = list(common)
    if name == "fig3_2":
        fc = cfg["figures"]["fig3_2"]
        out.insert(0, "ε grids per dataset (Wu 2016, §3.3 'Parameters'; docs/studies/wu2016.md#open-choices "
                      "item 4): " + "; ".join(f"{DATASET_LABELS[d]} {fc['epsilons'][d]}" for d in fc["datasets"]))
    elif name == "fig3_3":
        out.insert(0, "ε is the MNIST grid; (a)/(c) are the 0.71 → 0.45 anchors at ε = 4 (A5, A7).")
        out = out[:4]
    elif name == "fig3_4":
        fc = cfg["figures"]["fig3_4"]
        out = [
            "Bismarck/PostgreSQL is not available (docs/studies/wu2016.md#fig3_4): the four methods run on the same "
            "numpy aggregate (initialize / transition per mini-batch / terminate); only ratios to noiseless are "
            "comparable with the thesis. Ours adds noise once in terminate; SCS13 and BST14 sample noise in every "
            "transition (BST14 also samples its batch with replacement).",
            f"Strongly convex (ε,δ)-DP (Test 4), ε = {fc['epsilon']:g}; MNIST times one of its ten one-vs-all "
            "models (digit 0 vs rest).",
            f"{fc['warmup']} untimed warm-up round(s), then {fc['runs']} timed rounds (the thesis: 4 warm-cache "
            "runs); methods rotate within a round; bars: 90% t-intervals of the per-round ratio.",
            f"Epoch grid {fc['epochs']} at b = {fc['epochs_batch_size']}; batch-size grid {fc['batch_sizes']} at one "
            "epoch [INFERRED: the thesis names only 1, 20 epochs and b = 1, 10, 500].",
        ]
    return out


def caption_text(config: dict, name: str, df: pd.DataFrame) -> str:
    """The caption of figure ``name`` drawn from rows ``df``: the figure's caption, repetitions, data, preprocessing
    and the notes of :func:`deviations`."""
    if name in ch4.FIGURE_NAMES:
        return _ch4_caption_text(config, name, df)
    spec = figure(name)
    lines = [spec.caption]
    reps = int(df["rep"].max()) + 1 if len(df) else 0
    if name != "fig3_4":
        lines.append(f"Curves: mean over {reps} repetitions (the thesis does not state them; "
                     "docs/studies/wu2016.md#open-choices item 10); "
                     "bands: ± one standard deviation.")
    for d, g in df.groupby("dataset"):
        v = g["dataset_variant"].iloc[0]
        n = int(g["n_train"].iloc[0])
        lines.append(f"Data {DATASET_LABELS[d]}: {v} (m = {n} training examples)"
                     + (" — SUBSTITUTE DATA, not the thesis's dataset." if bool(g["is_substitute"].iloc[0]) else "."))
    lines += preprocessing_note(df, DATASET_LABELS)
    lines += [f"Note: {d}" for d in deviations(config["studies"][STUDY], name)]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------
# chapter 4 (Figs. 4.1–4.8)
# ---------------------------------------------------------------------------------------------------------


def _ch4_deviations(cfg: dict, name: str) -> list[str]:
    c4 = cfg["ch4"]
    t, o, f, w = c4["tuning"], c4["oracle"], c4["fm"], c4["warfarin"]
    sens = {"thesis": "Δ = 4(ρ+λR)/(λn) as in Alg 6 (Thm 4.7); the exact constrained minimiser's replace-one "
                      "sensitivity is at most G/(λn), so this is conservative by 2.4× (squared loss, R = 0.25) to 3.6× "
                      "(logistic, R = 1) or more",
            "lipschitz": "Δ = 2ρ/(λn) (two Lipschitz gradients; the thesis' Alg 6 uses the ≥ 2× larger "
                         "4(ρ+λR)/(λn))",
            "tight": "Δ = G/(λn), the tight calibration (below)"}[c4["op_sensitivity"]]
    common = [
        f"Protocol [INFERRED: the thesis gives none; docs/studies/wu2016.md#open-choices item 11]: "
        f"{c4['repetitions']} repetitions, each a fresh random "
        f"{1 - c4['test_fraction']:.0%}/{c4['test_fraction']:.0%} train/test split shared by all methods; accuracy and "
        "MSE on the test split, model inversion over the training split (Wu 2016, ch. 4, footnote 2); curves mean "
        "± one std.",
        f"Output perturbation: exact constrained ERM (trust-region eigen-solver for the squared loss, Newton + KKT "
        f"bisection for the logistic loss), noise ‖κ‖ ~ Gamma(d, Δ/ε) in a uniform direction; {sens}.",
        "Losses (the thesis never writes out the linear-regression loss; docs/studies/wu2016.md#open-choices "
        "item 15): linear regression uses ℓ = (y − ⟨w,x⟩)² with ρ = 2(1+R) on ‖w‖ ≤ R (‖x‖ ≤ 1, |y| ≤ 1) — the "
        "½-scaled loss is the same problem with λ halved; logistic ρ = 1.",
    ]
    if any(str(m).endswith(ch4.TIGHT) for m in (cfg["figures"].get(name) or {}).get("methods") or []):
        common.append(
            "Tight calibration (dashed, same colour; rows calibration = tight): the same release with Δ = G/(λn), G "
            "the largest difference of two records' loss gradients at one point of the ball ‖w‖ ≤ R, computed with a "
            "certified grid bound (logistic G = 1.105 at R = 1; squared loss 4.13 / 4.42 / 5.23 / 7.10 at R = 0.25 / "
            "0.5 / 1 / 2), instead of Alg 6's 4(ρ+λR)/(λn): by λ-strong convexity and the mean-value theorem on the "
            "ball, the minimisers of neighbouring datasets differ by at most G/(λn). ε-DP for replace-one neighbours, "
            "as the default.")
    if name == "fig4_1":
        pre = ("NON-PRIVATE PREPROCESSING, AS IN THE SOURCE — the ε does not cover it (ch4.preprocessing: source): "
               "LIBSVM [−1, 1] column scaling by the minimum and maximum of all 768 rows (the `diabetes_scale` "
               "recipe; one raw row moves every other row)" if c4.get("preprocessing", "data_independent") == "source"
               else "[−1, 1] column scaling by FIXED domain bounds of the 8 features (round physiological ranges "
               "[INFERRED: the source documents no bounds; docs/studies/wu2016.md#diabetes], values clipped; "
               "data-independent, covered by the ε; the thesis's LIBSVM scaling by the data's minimum and maximum is "
               "ch4.preprocessing: source); the synthetic stand-in has no documented domain and goes straight to the "
               "row scaling")
        return common + [
            f"Data: Pima diabetes, {pre}, then unit-sphere rows, no intercept (the thesis' 8 features); labels ±1. "
            "Without network access the registry's labelled substitute is used and named on the panel.",
            f"Non-private: logistic regression with λ = {c4['non_private_l2']:g} (for a unique minimiser), "
            "unconstrained. Data-Independent: R = 1, λ = √(d/(nε)), Alg 6 with ρ = 1.",
            f"Functional mechanism [EXTERNAL: the thesis only names it; Zhang et al. 2012 §5]: second-order Taylor "
            f"expansion, Δ = {'d²/4 + d' if f['domain'] == 'box' else '√d + d/4'} ({f['domain']} domain), noisy "
            f"quadratic repaired by {f['ridge']:g}·√2Δ/ε on the diagonal and spectral trimming (eigenvalues ≤ "
            f"{f['trim']:g}).",
        ]
    out = common + [
        f"Warfarin (docs/studies/wu2016.md#warfarin): IWPC from {wf.PACKAGE_PIN}, 3,095 × 14; numeric columns scaled "
        f"by {w['feature_scaling']}, rows on the unit sphere; target {w['target']} mapped by {w['target_scaling']} to "
        + ("[−1, 1] — NON-PRIVATE PREPROCESSING, AS IN THE SOURCE, the ε does not cover it (ch4.preprocessing: "
           "source): the column maxima/minima and the target's mean/range are those of all 3,095 rows. "
           if c4.get("preprocessing", "data_independent") == "source" else
           "[−1, 1] with FIXED domain bounds, not the data's (age decade ≤ 9, height 100–220 cm, weight 20–250 kg, "
           "dose 0–350 mg/week, centre √35 or 35 mg/week = the usual 5 mg/day starting dose [INFERRED: round "
           "bounds; the thesis does not say how it scaled]; values clipped): data-independent, covered by the ε "
           "(the thesis scales by statistics of the table: ch4.preprocessing: source). ")
        + "MSE is reported in the "
        f"target's units ({'√(mg/week)' if w['target'] == 'sqrt_dose' else 'mg/week'}, the apparent scale of the "
        "thesis' 1.82 / 22.57; rows also carry the scaled-target MSE).",
        f"Oracle (NOT private, an idealised upper bound): R ∈ {o['radii']}, λ on an arithmetic grid of "
        f"{o['lambda_points']} points from √(d/(nε′)) to √(d/(nε*)), ε′ = {o['eps_start']:g}, ε* = {o['eps_end']:g} "
        "(the length is not stated; docs/studies/wu2016.md#open-choices item 13); picks the pair with the smallest "
        "expected training MSE of the noisy release (closed form), then draws one release.",
        f"Data-Independent: R = {c4['data_independent_radius']:g}, λ = √(d/(nε)) (Wu 2016, §4.4 'Experimental "
        "Methodology').",
        f"Private tuning (Alg 7): R₁ = {t['radius_sets']['r1']}, R₂ = {t['radius_sets']['r2']}, Λ geometric with "
        f"ratio {t['lambda_ratio']:g}, {t['lambda_count']} values from √(d/(ε′ n_chunk)), ε′ = "
        f"{t['lambda_eps_start']:g} [INFERRED: start and length not stated; docs/studies/wu2016.md#open-choices "
        "item 13]; |R|·|Λ| + 1 random disjoint chunks, the last for "
        "validation; selection ∝ exp(−L·ε/(2Δu)) on the validation MSE with per-example losses capped at "
        "(1+R)² (the noisy models leave the ball where the loss is unbounded); "
        + ("Δu = (1+R)²/|S′| (rigorous; the printed R² of Wu 2016, Alg. 7 line 5 has no 1/|S′| and no derivation; "
           "docs/studies/wu2016.md#open-choices item 14)."
           if t["utility_sensitivity"] == "rigorous" else
           "Δu = R² as printed (Wu 2016, Alg. 7 line 5; docs/studies/wu2016.md#open-choices item 14; valid for the "
           "capped average loss only when |S′| ≥ ((1+R)/R)²)."),
    ]
    if name in ("fig4_2", "fig4_6"):
        out.append(f"Functional mechanism [EXTERNAL: the thesis only names it; Zhang et al. 2012 §4.2, their code]: "
                   f"Laplace(Δ/ε) on every "
                   f"coefficient of Σ(y − xᵀw)², Δ = {'2d² + 4d' if f['domain'] == 'box' else '2(d + 2√d)'} "
                   f"({f['domain']} domain; the paper's 2(d+1)² also counts the constant y²), repaired by "
                   f"{f['ridge']:g}·√2Δ/ε on the diagonal and spectral trimming; unconstrained.")
    if name in ("fig4_5", "fig4_7"):
        out.append("Objective perturbation [EXTERNAL: the thesis only names it; Chaudhuri et al. 2011 Alg. 2]: "
                   "ε′ = ε − log(1 + 2c/(nΛ) + "
                   "c²/(n²Λ²)) with c = 2 (squared loss), extra ridge when ε′ ≤ 0, b ∝ exp(−ε′‖b‖/(2ρ)), exact "
                   "minimiser on the ball ‖w‖ ≤ R (the constrained guarantee rests on Kifer et al. 2012); tuned by "
                   "Alg 7 like output perturbation.")
    if name in ("fig4_6", "fig4_7", "fig4_8"):
        out.append("Model inversion [EXTERNAL: the thesis describes it in words only; Fredrikson et al. 2014; "
                   "docs/studies/wu2016.md#open-choices item 16]: the attacker knows the "
                   "other features, the true dose and the training VKORC1 marginal; MAP over A/A, A/G, G/G with a "
                   "N(0, σ²) residual model, σ = the released model's training RMSE; the row is re-scaled to the unit "
                   "sphere for every candidate. Dotted line: the prior-only baseline.")
    if name == "fig4_8":
        fc = cfg["figures"]["fig4_8"]
        out.append("Fig. 4.8 protocol (Wu 2016, Fig. 4.8 caption; evaluation sets: "
                   f"docs/studies/wu2016.md#open-choices item 17): {fc['repetitions']} repetitions; permute, hold out "
                   f"{c4['test_fraction']:.0%} for the test MSE, split the rest into {fc['chunks']} chunks (last = "
                   "validation), keep the first ⌈r·|chunk|⌉ records of every training chunk; MI over the whole training "
                   "portion. The x-axis is r (the thesis plots the chunk size; the mean chunk size is in the rows).")
    out.append("Out of scope: Fig. 4.4 (risk of mortality, hemorrhage and stroke from Fredrikson et al.'s simulated "
               "clinical trial).")
    return out


def _ch4_caption_text(config: dict, name: str, df: pd.DataFrame) -> str:
    cfg = config["studies"][STUDY]
    lines = [figure(name).caption]
    reps = int(df["rep"].max()) + 1 if len(df) else 0
    lines.append(f"Curves: mean over {reps} repetitions; bands: ± one standard deviation.")
    for d, g in df.groupby("dataset"):
        v = g["dataset_variant"].iloc[0]
        lines.append(f"Data {d}: {v} (n_train = {int(g['n_train'].iloc[0])})"
                     + (" — SUBSTITUTE DATA, not the thesis's dataset." if bool(g["is_substitute"].iloc[0]) else "."))
    lines += preprocessing_note(df)
    if name in ("fig4_6", "fig4_7", "fig4_8") and "prior_baseline" in df:
        lines.append(f"Prior-only MI baseline: {df['prior_baseline'].mean():.3f}.")
    lines += [f"Note: {d}" for d in _ch4_deviations(cfg, name)]
    return "\n".join(lines)
