"""estimation — caption notes (every choice the notes leave open, every deviation) and the caption text."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpbench.methods.estimation import mean_clip
from dpbench.studies.base import left_out_note
from dpbench.studies.estimation.compute import LABELS, PREPROCESSING, STUDY
from dpbench.studies.estimation.spec import figure
from dpbench.studies.estimation.summaries import slope_table

NEIGHBOUR_NOTE = ("Neighbouring data sets: replace-one (same size n, public; one row replaced). Sensitivities are "
                  "derived for that relation in dpbench.methods.estimation.")
SLOPE_NOTE = ("Slopes: least-squares fit of log RMS(privacy term) on log {x} over the whole grid, privacy term = "
              "the distance between the private release and the same clipped/truncated estimator without noise "
              "(exactly the norm of the added noise), RMS over repetitions. Its expectation is a power law in {x} "
              "in closed form, so no privacy-dominated sub-grid has to be chosen; the total error (drawn) is "
              "larger by the sampling error, drawn as the floor.")


def deviations(cfg: dict, name: str) -> list[str]:
    fc = cfg["figures"][name]
    out: list[str] = []
    if name == "mean_vs_d":
        n, dims = fc["n"], fc["dims"]
        rule = {"grid": f"B = R + √(2 ln(n·d_max)) = {mean_clip(fc, n, dims[0]):.3f} for every d of the grid "
                        "(the slope then reflects the mechanism alone; per coordinate, P(clipped) ≤ 1/(n·d_max))",
                "point": "B = R + √(2 ln(n·d)) at each d (adds a slowly growing factor to the "
                         "slopes)"}.get(fc["clip"], f"B = {fc['clip']} (configured)")
        out += [
            f"[INFERRED: the notes have no experiment; grid and sizes chosen by us] n = {n}, ε = {fc['epsilon']}, "
            f"δ = {fc['delta']:g}, μ ~ U[−{fc['mean_range']:g}, {fc['mean_range']:g}]^d, identity covariance, "
            f"d ∈ {dims}, {fc['repetitions']} repetitions. ε < 1 because the classic Gaussian σ is only proven "
            "for ε < 1.",
            f"Clipping: every coordinate to [−B, B], {rule}.",
            NEIGHBOUR_NOTE + " Clipped mean: Δ₁ = 2Bd/n (Laplace scale 2Bd/(nε)), Δ₂ = 2B√d/n (classic σ = "
            "Δ₂√(2 ln(1.25/δ))/ε; analytic σ of Balle & Wang 2018).",
            "The notes' coordinate-wise algorithm with composition (Lecture 19, §1): basic composition of d 1-D "
            "Laplace mechanisms at ε/d is exactly the ℓ1-calibrated Laplace mechanism used here; for approximate DP "
            "the ℓ2-calibrated Gaussian mechanism (Lecture 19, §1) replaces advanced composition (same d-rate, tighter "
            "constants).",
            "Exponents: the RMS ℓ2 privacy term is √(2d)·2Bd/(nε) ∝ d^1.5 (Laplace) and √d·σ ∝ d^1.0 "
            "(Gaussian); the squared error has exponents 3 and 2. Laplace/Gaussian RMS ratio = √(2d)·Δ₂/(σε) = "
            "√d/√(ln(1.25/δ)) exactly for the classic σ, for every n and B (crossover at d* = ln(1.25/δ) = "
            f"{math.log(1.25 / fc['delta']):.1f}).",
            SLOPE_NOTE.format(x="d"),
        ]
    elif name == "cov_vs_d":
        out += [
            f"[INFERRED: the notes give only the scalings, Lecture 19, §1] Setup: n = {fc['n']}, ε = {fc['epsilon']}, "
            f"δ = {fc['delta']:g}, known mean 0, Σ = Q diag(λ) Qᵀ, λ evenly spaced in [1/{fc['condition_number']:g}, "
            f"1] (well-conditioned), Q Haar-random per repetition, d ∈ {fc['dims']}, {fc['repetitions']} "
            "repetitions.",
            f"Truncation: every row projected to the ℓ2 ball of radius c = {fc['radius_factor']:g}·√d (so "
            "‖x̃x̃ᵀ‖_F ≤ c²); estimator (1/n)Σ x̃x̃ᵀ. Only the d(d+1)/2 upper-triangle entries (diagonal included) "
            "are noised; the lower triangle is mirrored (post-processing).",
            NEIGHBOUR_NOTE + " Upper triangle: Δ₁ ≤ (d+1)c²/n (a bound, tight within a factor 2), Δ₂ = √2·c²/n "
            "(attained by x = c·e₁, y = c·e₂).",
            "Exponents: with c² ∝ d, Δ₁ ∝ d² and Δ₂ ∝ d (Lecture 19, §1); the noise matrix has d² entries, so the RMS "
            "Frobenius privacy term is √2·b·d ∝ (d+1)·d² → d³ (Laplace) and σ·d ∝ d² (Gaussian), the notes' "
            "'Frobenius loss Θ(d³) vs Θ(d²)'; the squared Frobenius error has exponents 6 and 4. On a grid "
            "starting at small d the Laplace closed-form slope is slightly below 3 because of the (d+1) factor.",
            SLOPE_NOTE.format(x="d"),
        ]
    elif name == "ldp_vs_n":
        rule = {"grid": "B = R + √(2 ln n_max) for every n of the grid (removes the notes' √log n factor from "
                        "the slopes; P(clipped) ≤ 2/n_max per sample)",
                "point": "B = R + √(2 ln n) at each n (the slopes then carry the notes' √log n factor: "
                         "about −0.45 and −0.95)"}.get(fc["clip"], f"B = {fc['clip']} (configured)")
        out += [
            f"[INFERRED: the notes have no experiment] ε ∈ {fc['epsilons']}, n ∈ {fc['ns']}, "
            f"μ ~ U[−{fc['mean_range']:g}, {fc['mean_range']:g}], "
            f"{fc['repetitions']} repetitions.",
            f"Clipping: {rule}. The notes zero values outside [−√log n, √log n] instead (Lecture 19, §2), whose "
            "bias dominates the rate: clipping is used for both estimators.",
            "Erratum (Lecture 19, §2): each report is clip(x) + Lap(2B/ε) — the notes' scale B/ε on a value "
            "of range 2B gives only 2ε-LDP.",
            "Central: clipped mean + Lap(2B/(nε)) — ε-DP under replace-one (Δ₁ = 2B/n). Local: every report is "
            "ε-DP with respect to any two values of its user.",
            "Exponents: the RMS privacy term is √(2/n)·2B/ε ∝ n^−0.5 (local) and √2·2B/(nε) ∝ n^−1 (central); "
            "their ratio is exactly √n for the RMS (the notes: ≈ √n), and both scale as 1/ε.",
            SLOPE_NOTE.format(x="n"),
        ]
    out += left_out_note(figure(name).methods, fc.get("methods"), LABELS)
    return out


def _slope_lines(name: str, df: pd.DataFrame) -> list[str]:
    t = slope_table(name, df)
    lines = []
    for r in t.itertuples():
        who = LABELS[r.series] + (f", {r.curve}" if r.curve else "")
        cf = f", closed form on this grid {r.closed_form:.3f}" if np.isfinite(r.closed_form) else ""
        what = "total error" if r.series == "non_private" else "privacy term"
        lines.append(f"Measured slope ({what}) {who}: {r.measured:.3f} (theory {r.theory:g}{cf}).")
    return lines


def caption_text(config: dict, name: str, df: pd.DataFrame) -> str:
    reps = int(df["rep"].max()) + 1
    lines = [figure(name).caption, f"Data: {', '.join(sorted(df['dataset_variant'].unique()))} (synthetic Gaussian); "
             f"mean ± std over {reps} repetitions."]
    lines.append(f"Preprocessing: {PREPROCESSING} (data-independent: covered by the ε).")
    lines += [f"Note: {d}" for d in deviations(config["studies"][STUDY], name)]
    lines += _slope_lines(name, df)
    return "\n".join(lines)

