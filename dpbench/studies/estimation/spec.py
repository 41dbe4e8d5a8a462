"""estimation — the figures (titles, axes, captions) and the configuration hooks.

Light to import (no compute is run here): the workflow reads it to build the DAG.
"""

from __future__ import annotations

import json

from dpbench.config import ConfigError
from dpbench.studies.base import FigureSpec, lookup_figure
from dpbench.studies.estimation.compute import DATASET, SERIES, STUDY, VARIANT, X_NAME

DATA_NOTE = ("Data: synthetic Gaussian samples with known mean and covariance, generated for every (grid point, "
             "repetition) from SeedSequence(seed, key); nothing is downloaded and no substitute is involved.")


FIGURES: dict[str, FigureSpec] = {
    "mean_vs_d": FigureSpec(
        STUDY, "mean_vs_d", "Mean estimation: ℓ2 error vs dimension (pure vs approximate DP)", X_NAME["mean_vs_d"],
        "dimension d",
        "ℓ2 error ‖μ̃ − μ‖₂", SERIES["mean_vs_d"],
        "Lecture 19, §1: coordinate-wise clipped mean of n samples of N(μ, I_d), μ ~ U[−R, R]^d, "
        "released with Laplace noise calibrated to the ℓ1 sensitivity (pure ε-DP) or Gaussian noise calibrated "
        "to the ℓ2 sensitivity ((ε, δ)-DP, classic and analytic calibration), as a function of d at fixed n, ε, "
        "δ. Curves: mean ± std of ‖μ̃ − μ‖₂ over repetitions; dotted: root-mean-square privacy term; dashed "
        "black: non-private empirical mean (sampling floor). Legend: least-squares log-log slope of the privacy "
        "term (theory 1.5 for pure, 1.0 for approximate DP).", anchors=("E1", "E2", "E3", "E4")),
    "cov_vs_d": FigureSpec(
        STUDY, "cov_vs_d", "Covariance estimation: Frobenius error vs dimension (pure vs approximate DP)", X_NAME["cov_vs_d"],
        "dimension d", "Frobenius error ‖Σ̃ − Σ‖ꜰ", SERIES["cov_vs_d"],
        "Lecture 19, §1: truncated empirical covariance (known mean 0, rows projected to the ℓ2 ball "
        "of radius c = κ√d) of n samples of N(0, Σ), Σ = Q diag(λ) Qᵀ with λ evenly spaced in [1/cond, 1] and "
        "Q Haar-random, released with Laplace (ℓ1) or Gaussian (ℓ2) noise on the upper triangle, mirrored. "
        "Curves: mean ± std of ‖Σ̃ − Σ‖_F; dotted: RMS privacy term; dashed black: non-private empirical "
        "covariance. Legend: log-log slope of the privacy term (theory 3 for pure, 2 for approximate DP).",
        anchors=("C1", "C2")),
    "ldp_vs_n": FigureSpec(
        STUDY, "ldp_vs_n", "1-D mean: error vs n, local vs central ε-DP", X_NAME["ldp_vs_n"], "number of samples n",
        "absolute error |μ̃ − μ|", SERIES["ldp_vs_n"],
        "Lecture 19, §2: mean of n samples of N(μ, 1), μ ~ U[−R, R], under ε-local DP (every user "
        "releases clip(x, −B, B) + Lap(2B/ε), the curator averages) and central ε-DP (clipped mean + "
        "Lap(2B/(nε))), one colour per ε. Curves: mean ± std of |μ̃ − μ|; dotted: RMS privacy term; dashed "
        "black: non-private empirical mean. Legend: log-log slope of the privacy term in n (theory −0.5 local, "
        "−1 central).", anchors=("L1", "L2", "L3", "L4")),
}

# ---------------------------------------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------------------------------------


def validate(cfg: dict, prefix: str = "studies.estimation") -> None:
    """Cross-field rules the JSON schema cannot express; raise ConfigError naming the key."""
    def bad(key, msg):
        raise ConfigError(f"invalid config: {prefix}.{key}: {msg}")

    for name, fc in (cfg.get("figures") or {}).items():
        if fc is None:
            continue
        for key in ("dims", "ns", "epsilons"):
            values = fc.get(key)
            if values is not None and len(set(values)) != len(values):
                bad(f"figures.{name}.{key}", f"duplicate values in {values}")
        grid = fc.get("dims", fc.get("ns"))
        if grid is not None and len(set(grid)) < 2:
            bad(f"figures.{name}.{'dims' if 'dims' in fc else 'ns'}", "needs at least two values to fit a slope")
        methods = fc.get("methods")
        for i, m in enumerate(methods or []):
            if m not in figure(name).methods:
                bad(f"figures.{name}.methods[{i}]", f"{m!r} is not a series of {name}; its series are "
                                                    f"{list(figure(name).methods)}")
        wanted = figure(name).methods if methods is None else methods
        if "gaussian_classic" in wanted and fc.get("epsilon", 0) >= 1:
            bad(f"figures.{name}.epsilon", f"{fc['epsilon']} >= 1: the classic Gaussian calibration is only proven "
                "for epsilon < 1; use epsilon < 1 or leave gaussian_classic out of methods (gaussian_analytic "
                "holds for any epsilon)")


def figure_names(cfg: dict) -> list[str]:
    """Figures enabled in the config (a figure set to null is disabled)."""
    return [f for f in FIGURES if (cfg.get("figures") or {}).get(f) is not None]


def figure(name: str) -> FigureSpec:
    return lookup_figure(FIGURES, STUDY, name)


def series(cfg: dict, name: str) -> list[str]:
    """The figure's series, optionally restricted by ``figures.<name>.methods``."""
    wanted = cfg["figures"][name].get("methods")
    return [m for m in figure(name).methods if wanted is None or m in wanted]


def series_threads(cfg: dict, figure_name: str, series_name: str) -> int:
    """Every series is one vectorised numpy computation of a few seconds: one thread, jobs side by side."""
    return 1


def dataset_signature(config: dict) -> str:
    cfg = config["studies"][STUDY]
    return json.dumps({"seed": config["seed"], "variant": VARIANT, "figures": figure_names(cfg)}, sort_keys=True)


def prepare_dataset(config: dict) -> dict:
    """Synthetic data: nothing to download; the manifest records the generator and its seeding."""
    return {"study": STUDY, "dataset": DATASET, "dataset_variant": VARIANT, "is_substitute": False,
            "seed": config["seed"], "figures": figure_names(config["studies"][STUDY]),
            "note": "generated on the fly per (figure, grid point, repetition) from SeedSequence(seed, key)"}
