"""song2018 — caption notes (every choice the thesis leaves open, every deviation; collected in
docs/studies/song2018.md) and the caption text, for chapter 7 and chapters 3-4 (chapter 6:
:mod:`~dpbench.studies.song2018.ch6_captions`)."""

from __future__ import annotations

import pandas as pd

from dpbench.studies.base import left_out_note, preprocessing_note
from dpbench.studies.song2018 import ch6_captions
from dpbench.studies.song2018 import ch5_captions as ch5
from dpbench.studies.song2018 import ch34_compute as ch34
from dpbench.studies.song2018.ch7_compute import LABELS, STUDY
from dpbench.studies.song2018.spec import DATASET_LABELS, figure

# ---------------------------------------------------------------------------------------------------------
# captions of chapter 7: every choice the thesis leaves open (collected in docs/studies/song2018.md)
# ---------------------------------------------------------------------------------------------------------

SIMULATED_ACTIVITY = ("SIMULATED DATA: the activity data of Ellis et al. are private. Stand-in: per group "
                      "({persons} persons), 4-state chains with group-specific long-run shares (cyclists most "
                      "active, overweight women most sedentary) and bout lengths, {lo}-{hi} observations per "
                      "person split into independent chains at simulated gaps (dpbench.data.markov). Absolute "
                      "errors are not the thesis's.")
SIMULATED_ELECTRICITY = ("SIMULATED DATA: AMPds is download-only. Stand-in: one reversible 51-state chain (200 W "
                         "bins; base load 200-800 W, appliance tail up to 10 kW) of T = {T:,} one-minute readings "
                         "(dpbench.data.markov). Absolute errors are not the thesis's.")
REAL_DATA_NOTES = [
    "Θ = {(π̂, P̂)}: one empirical transition matrix P̂ per data set (per group for the activity data), started in "
    "its stationary distribution π̂ (Song 2018, §7.6.3).",
    "MQMApprox: Lemma 7.4.6 with g = eigengap of P̂P̂* (empirical chains need not be reversible) and the one-sided "
    "bounds {X_{i+b}}: ρ_b, {X_{i−a}}: 2ρ_a (RECONSTRUCTED: the thesis defers them to the full paper); ℓ = 4a* of "
    "Lemma 7.4.7, only the middle node when a chain has T ≥ 8a*. MQMExact: eq. (7.3), ℓ = card(X_N) of the optimal "
    "MQMApprox quilt (Song 2018, §7.6.3), or MQMApprox's own ℓ if that smaller set needs more noise than "
    "MQMApprox [INFERRED safeguard, not in the thesis: only for short chains, so that MQMExact never adds more "
    "noise than MQMApprox]; quilt sets restricted to card(X_N) ≤ ℓ plus the trivial quilt (ℓ bounds the local "
    "set X_N, §7.4.3.2).",
    "Independent chains (gaps): a node's quilts stay in its own chain; σ_max is the max over chains.",
    "GK16 (RECONSTRUCTED, arXiv:1603.01508; the thesis gives no formula): φ_ij = max D∞ between X_i's "
    "conditionals given the rest when X_j changes; applies iff the spectral norm of Φ < 1, scale L/(ε(1−‖Φ‖₂)). "
    "Its applicability is computed, not assumed.",
]


def deviations(cfg: dict, name: str) -> list[str]:
    if name in ch34.FIGURES:
        return _ch34_deviations(cfg, name)
    if name in ch6_captions.FIGURES:
        return ch6_captions.deviations(cfg, name)
    if name in ch5.FIGURES:
        return ch5.deviations(cfg, name)
    fc = cfg["figures"][name]
    out: list[str] = []
    if name == "fig7_4":
        out += [
            f"α grid {fc['alphas']} [INFERRED]: the thesis varies α from 0.1 to 0.4 without giving the grid "
            "(§7.6.2); points above 0.4 (if any) show where GK16 applies under our reading.",
            f"{fc['trials']} trials per (α, ε): p₀, p₁ ~ U[α, 1−α], q₀ ~ U[0, 1] (uniform on the simplex), a chain "
            f"of length {fc['chain_length']}, then Laplace noise; the error |released − F| depends on the noise only. "
            "Curves: mean; bands: ±1 standard error of the mean (the std of |Lap(b)| equals its mean b).",
            "MQMExact: eq. (7.3) with the X_{i−a} term maximised over all states (as needed to reproduce 13.0219, "
            "§7.4.3.1); every initial "
            "distribution through the vertex argument (the prior term is linear-fractional in q, exact); (p₀, p₁) "
            f"through the max over a grid of step ≤ {fc['theta_grid_step']} with endpoints [INFERRED: the thesis's "
            "'optimization procedure' is in the full paper]; all quilts of Lemma 7.4.4 (ℓ = T).",
            ("MQMApprox: tighter bound for reversible chains, ρ_d = log((π_min + e^{−g d})/(π_min − e^{−g d})) with "
             "g = 2α = 1 − max|λ₂| and π_min = α in closed form (RECONSTRUCTED: the thesis, §7.6.2, uses 'the "
             "approximation in the full paper'); " if fc["approx_bound"] == "reversible" else
             "MQMApprox: Lemma 7.4.6 with g = 1 − (1 − 2α)² (eigengap of P P*), π_min = α; ")
            + "one-sided bounds {X_{i+b}}: ρ_b, {X_{i−a}}: 2ρ_a (RECONSTRUCTED); all quilts (ℓ = T).",
            "GK16 (RECONSTRUCTED, arXiv:1603.01508): influence φ_ij = max D∞(P(X_i | x_−i) ‖ P(X_i | x'_−i)) over "
            "x, x' differing at j (neighbours only in a chain; sup over initial distributions for φ₁₂), max of "
            "‖Φ‖₂ over the (p₀, p₁) grid, scale L/(ε(1 − ‖Φ‖₂)). Under this reading ‖Φ‖₂ ≥ 1 up to α ≈ 0.40, "
            "further right than the thesis's dashed line: the reading is probably not GK16's exact one.",
            "GroupDP: Lap(1/ε) on F = ΣX_i/T (L = 1/T, group = the chain, M = T); not plotted, as in the thesis; "
            "its measured mean error is printed in each panel.",
        ]
    elif name in ("table7_1", "fig7_5"):
        a = cfg["activity"]
        out.append(SIMULATED_ACTIVITY.format(persons="/".join(map(str, a["persons"])), lo=a["observations"][0],
                                             hi=a["observations"][1]))
        out += REAL_DATA_NOTES
        out += [
            "GroupDP: Lap(2M/(Nε)) per bin, M = longest chain, N = observations released (the thesis, §7.6.3.1, writes "
            "Lap(M/Tε); the factor 2 is the histogram's L1-Lipschitz constant, consistent with Table 7.3).",
            f"{fc['trials']} trials; ε = {fc['epsilon']}.",
        ]
        if name == "table7_1":
            out += [
                "DP (aggregate task, one record per person): Lap(2·n_max/(Nε)) per bin with n_max the most "
                "observations of one person [INFERRED: the thesis does not give the scale]; N/A for the individual "
                "task.",
                "Individual task: every person's histogram released with that person's chains (L = 2/T_p); the "
                "error is the mean over persons of the L1 error.",
            ]
        else:
            out.append("Bars: exact histogram and the mean ± std of the released histograms over the trials.")
    elif name == "table7_2":
        out += [
            "Seconds on this machine (sequential, one process), the thesis used a 3.00 GHz i5-3330 (§7.6.1): "
            "compare orders of magnitude and the ordering only.",
            f"Synthetic: mean over every θ = (p₀, p₁) of the grid {fc['theta_range'][0]}:{fc['theta_grid_step']}:"
            f"{fc['theta_range'][1]} (thesis: 0.1:0.01:0.9) of one scale computation for Θ = {{P_θ}} × every "
            f"initial distribution, chains of length {fc['chain_length']}, all quilts (ℓ = T).",
            f"Activity (aggregate task) and electricity: the whole computation for Θ = {{(π̂, P̂)}}, {fc['repeats']} "
            "run(s) each; MQMExact includes the MQMApprox run that sets its ℓ; data loading and the estimation "
            "of P̂ are not timed. GK16: the time to compute ‖Φ‖₂ (N/A when ≥ 1).",
        ]
        out += REAL_DATA_NOTES[:2]
    elif name == "table7_3":
        out.append(SIMULATED_ELECTRICITY.format(T=int(cfg["electricity"]["length"])))
        out += REAL_DATA_NOTES[:2] + REAL_DATA_NOTES[3:]
        out += ["GroupDP: Lap(2/ε) per bin (L = 2/T, one chain: M = T), which reproduces the thesis's ≈ 102/ε "
                "(Table 7.3; the thesis text, §7.6.1, says Lap(1/ε)).", f"{fc['trials']} trials."]
    out += left_out_note(figure(name).methods, fc.get("methods"), LABELS)
    return out


def caption_text(config: dict, name: str, df: pd.DataFrame) -> str:
    if name in ch34.FIGURES:                   # the same caption as the figure file (preprocessing per dataset)
        return _ch34_caption_text(config, name, df)
    if name in ch6_captions.FIGURES:
        return ch6_captions.caption_text(config, name, df)
    if name in ch5.FIGURES:
        return ch5.caption_text(config, name, df)
    spec = figure(name)
    variants = sorted(df["dataset_variant"].unique())
    lines = [spec.caption, f"Data: {', '.join(variants)}."]
    sim = sorted(df.loc[df["is_substitute"].astype(bool), "dataset_variant"].unique())
    if sim:
        lines.append(f"SIMULATED DATA ({', '.join(sim)}): stand-ins for data the thesis used but that are private or "
                     "download-only; the numbers are not the thesis's and are compared with it only qualitatively.")
    if "preprocessing_data_dependent" in df and df["preprocessing_data_dependent"].astype(bool).any():
        lines.append("NON-PRIVATE STEP, AS IN THE SOURCE — the ε does not cover it: GK16, MQMApprox and MQMExact "
                     "compute their noise scale from Θ = {(π̂, P̂)} estimated from the same chains they release "
                     "(Song 2018, §7.6.3); no data-independent variant (Θ fixed in advance or estimated on disjoint "
                     "chains) is implemented. The rows flag it (preprocessing_data_dependent).")
    lines += [f"Note: {d}" for d in deviations(config["studies"][STUDY], name)]
    na = df[~df["applicable"].astype(bool)].drop_duplicates(["series", "na_reason"])
    for r in na.itertuples():
        if r.na_reason:
            lines.append(f"N/A: {LABELS[r.series]}: {r.na_reason}.")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------
# captions of chapters 3-4
# ---------------------------------------------------------------------------------------------------------


def _data_notes(cfg: dict, chapter: str) -> list[str]:
    pre = cfg["preprocessing"]
    tail = ("→ each row projected into the unit ball (x/max(1, ‖x‖)) → Gaussian random projection (N(0, 1/d) "
            f"entries, seed {pre['projection_seed']}, data-independent) → into the unit ball again so that ‖x‖ ≤ 1 "
            "(needed by the privacy analysis).")
    if pre.get("variant", "data_independent") == "source":
        norm = {"minmax": "min-max scaling of each feature to [0, 1]",
                "standardise": "standardising each feature (zero mean, unit variance)"}[pre["feature_normalisation"]]
        out = [f"NON-PRIVATE PREPROCESSING, AS IN THE SOURCE — the ε does not cover it (preprocessing.variant: "
               f"source): {norm} with the minimum/maximum (or mean/std) of the training rows [INFERRED: the thesis "
               "says only 'normalizing each feature'; constant features → 0]; replacing one raw row moves every other "
               f"row, so the per-update sensitivity 2 no longer holds end to end {tail}"]
    else:
        out = ["Preprocessing (data-independent default; thesis order: normalise each feature, unit ball, random "
               "projection): each feature min-max scaled to [0, 1] with FIXED domain bounds, values outside clipped "
               "(MNIST pixels [0, 1]; Covertype: documented units, round bounds for elevation and distances "
               "[INFERRED: no documented maximum]; KDDCup99: rates/flags/window counts by definition, byte counts, "
               "duration and event counts on a log scale with round caps [INFERRED: no documented maximum]); a "
               f"synthetic stand-in (no documented domain) is instead scaled row by row to unit norm {tail} Every "
               "step maps a row on its own, so the ε covers "
               "the whole pipeline from the raw rows. The thesis computes the feature statistics on the data "
               "(non-private): preprocessing.variant: source."]
    if chapter == "ch3":
        d = cfg["ch3"]["datasets"]
        out += [f"MNIST: digit {d['mnist']['digit']} vs all [INFERRED: chapter 3 does not name the digit; chapter 4 "
                f"uses 1], {d['mnist']['n'] or 60000} training images, d = {d['mnist']['dim']}.",
                f"KDDCup99: the 10% file (kddcup.data_10_percent.gz, sha256 from scikit-learn's fetch_kddcup99; the "
                f"thesis, §3.4.1, cites its reference [119], a KDD-Cup-98 paper, for the KDD Cup 1999 "
                f"normal-vs-malicious task), attack (+1) vs normal (−1), a seeded subsample of {d['kddcup99']['n']} "
                f"rows, the 3 categorical columns one-hot encoded, d = "
                f"{d['kddcup99']['dim']}."]
    else:
        d = cfg["ch4"]["datasets"]
        out += [f"MNIST: digit {d['mnist']['digit']} vs rest, {d['mnist']['n'] or 60000} images, d = "
                f"{d['mnist']['dim']}; Covertype: class 2 vs rest, the first {d['covertype']['n'] or 581012} rows "
                "of the seeded permutation of the UCI file (the thesis's '500,000 samples' [INFERRED: a random "
                "subsample]), 54 features, no projection (feature normalisation and unit ball as above)."]
    return out


def _ch34_deviations(cfg: dict, name: str) -> list[str]:
    out: list[str] = []
    if name.startswith("fig3"):
        c3 = cfg["ch3"]
        out += [f"ε = {c3['epsilon']}, λ = {c3['l2']}, logistic loss, w₀ = 0, one pass over disjoint batches, after "
                f"each update projection onto the ball of radius 1/λ (§3.4.2); {c3['permutations']} random permutations "
                "(fresh noise each); private and non-private run r share permutation r; bands ±1 std.",
                "Update (3.6): noise Z_t/b with density of Z_t ∝ exp(−(ε/2)‖z‖) (‖Z‖ ~ Gamma(d, 2/ε), uniform "
                "direction); replace-one neighbours, ‖∇ℓ‖ ≤ ‖x‖ ≤ 1 ⇒ sensitivity of the batch sum 2 ⇒ each "
                "update ε-DP, the pass ε-DP by parallel composition (Thm 3.3.1).",
                "t counts mini-batch updates; n mod b rows are left out of the pass [INFERRED: not stated in the "
                "thesis].",
                f"Objective (3.1) on the training rows, recorded at {c3['checkpoints']} + 1 evenly spaced update "
                "counts; x axis = updates × b (samples processed)."]
        if name != "fig3_3":
            out += _data_notes(cfg, "ch3")
        else:
            s = c3["datasets"]["synthetic"]
            out.append(f"Synthetic: {s['n']} points uniform on the unit sphere of ℝ^{s['dim']}, labels sign(w*ᵀx) for a "
                       f"random unit w* [INFERRED: the hyperplane is not given], points with |w*ᵀx| < {s['margin']} "
                       "redrawn (margin). 'Objective vs number of data points' read as vs samples processed in the "
                       "pass (as Fig. 3.1) [INFERRED: the Fig. 3.3 caption is ambiguous].")
        if name == "fig3_2":
            ls = c3["large_step"]
            out.append("The larger rate '10/√T' (§3.4.4; ambiguous: T may be the horizon or a typo for t) is read as "
                       + (f"η = {ls['c']:g}/√T with T = ⌊n/b⌋ the number of updates of the pass (a constant step; "
                          "the literal reading)" if ls["T"] == "horizon" else
                          f"η_t = {ls['c']:g}/√t (T read as a typo for t)")
                       + "; set studies.song2018.ch3.large_step.T to 'iteration' for the other reading.")
            out.append("Centralized: L-BFGS on (3.1) over all rows (scipy, gtol 1e-12), drawn as a flat line.")
    elif name == "fig4_1":
        c4, fc = cfg["ch4"], cfg["figures"]["fig4_1"]
        out += [f"λ = {c4['l2']}, β_C = {c4['beta_clean']}, ε_C = {c4['epsilon_clean']}, mini-batch {c4['batch_size']}, "
                "logistic loss, w₁ = 0, projection onto ‖w‖ ≤ 1/λ, one pass. Every run draws its own random clean/noisy "
                "split (|D_C| = b·round(β_C n/b), |D_N| = the rest rounded down to a multiple of b), data order and noise.",
                "Oracle G^DP (4.5): each individual reports λw + ∇ℓ(w; x, y) + Z, Z ∝ exp(−(ε/2)‖z‖) with its own ε "
                "(ε-LDP: ‖∇ℓ(w; x, y) − ∇ℓ(w; x', y')‖ ≤ 2, Thm 4.2.1); the server averages the 50 reports of a batch.",
                "η_t = c/t with t counting mini-batch UPDATES across both phases (Alg. 1; the phase boundary is |D₁|/b) "
                "[INFERRED for mini-batches: Alg. 1 is stated for single samples]; Γ² from Thm 4.2.1 per SAMPLE, "
                "4 + 4(d² + d)/ε², combined with batch 50 as in the thesis (§4.5).",
                "Objective (4.1) on all n rows (raw labels, no noise).",
                "Optimal: SGD on the raw data (no noise), c = 1/λ [INFERRED: the thesis says only 'access the raw "
                "data'], random order. CleanOnly: D_C only, c = 1/λ (minimiser of (4.9) with one data set). "
                "SameClean / SameNoisy: one c "
                "minimising B(c, c) of (4.9) over c > 1/(2λ) with the two noise levels plugged in (§4.5, footnote 1). "
                "Algorithm2: order and c₂ minimising H_CN/H_NC, c₁ = 1/λ.",
                "Arbitrary: a uniformly random interleaving of D_C and D_N at the sample level (a batch may mix "
                "clean and noisy reports, each with its own noise)."]
        if fc.get("order"):
            o = fc["order"]
            out.append(f"Column 1: ε_N = {o['epsilon_noisy']}, c ∈ {o['cs']} [INFERRED: the thesis gives no grid; "
                       f"ours straddles 1/λ], {o['runs']} runs per point; v_T+1 = the same data order without noise.")
        if fc.get("epsn"):
            e = fc["epsn"]
            out.append(f"Column 2: ε_N ∈ {e['epsilon_noisys']} [INFERRED step: the thesis says 'from 1 to 10'], "
                       f"{e['runs']} runs per point; Optimal and CleanOnly do not depend on ε_N (flat lines).")
        if fc.get("c2"):
            c = fc["c2"]
            out.append(f"Column 3: ε_N = {c['epsilon_noisy']}, {c['runs']} runs per point; Alg. 1 with c₁ = 1/λ in the "
                       "order Algorithm 2 chooses (Thm 4.2.1 bounds); c₂(U) = Algorithm 2's c₂, c₂(L) = the minimiser "
                       "of the same H with the lower bounds Γ² ≥ 4(d² + d)/(ε² b) (§4.5); c₂ grid: "
                       f"{c['points']} log-spaced points from min/{c['widen']} to max×{c['widen']} of the bracket, "
                       "plus both ends.")
        out += _data_notes(cfg, "ch4")
    return out


def _ch34_caption_text(config: dict, name: str, df: pd.DataFrame) -> str:
    spec = figure(name)
    variants = sorted(df["dataset_variant"].unique())
    lines = [spec.caption, f"Data: {', '.join(variants)}."]
    sub = sorted(df.loc[df["is_substitute"].astype(bool), "dataset_variant"].unique())
    if sub:
        lines.append(f"SUBSTITUTE DATA ({', '.join(sub)}): the real files were not available; labelled stand-ins were "
                     "used, so only the shapes of the curves are comparable with the thesis.")
    lines += preprocessing_note(df, DATASET_LABELS)
    lines += [f"Note: {d}" for d in _ch34_deviations(config["studies"][STUDY], name)]
    return "\n".join(lines)
