"""estimation — pure vs approximate DP in high dimensions, local vs central DP (Lecture 19 notes).

Source: "Lecture 19: Additional topics in private machine learning", lecture notes, December 5, 2019 (cited as
Lecture 19), §1 and §2; setup, errata and inferred values in docs/studies/estimation.md. The notes give rates only (no
experiment), so every figure here is a benchmark built on their claims:

* ``mean_vs_d`` — ℓ2 error of the clipped mean vs d: Laplace (pure ε-DP, ℓ1) vs Gaussian ((ε, δ), ℓ2; classic
  and analytic calibration), fixed n, ε, δ.
* ``cov_vs_d`` — Frobenius error of the truncated empirical covariance vs d, same mechanisms.
* ``ldp_vs_n`` — 1-D mean: absolute error vs n for local (per-user clip + Lap(2B/ε)) and central (clipped mean +
  Lap(2B/(nε))) ε-DP, several ε.

Each figure also has the ``non_private`` series (the sampling-error floor). Estimators and sensitivities:
:mod:`dpbench.methods.estimation`. Data: Gaussian samples generated per (grid point, repetition) from
``SeedSequence(seed, key)`` (:mod:`dpbench.rng`); the noise of one series at one grid point is one draw for
every repetition. Series are cheap (seconds), so there is no cell cache: Snakemake's per-series Parquet is the
unit of caching.

**Privacy term.** Every private row records, besides the error against the truth, ``privacy_error`` =
‖release − the same estimator without noise‖ (= the norm of the added noise, since the private estimate is the
non-private clipped/truncated estimate plus noise). Slopes are fitted (least squares in log-log) on the
root-mean-square of that term over repetitions, whose expectation is a power law in d (or n) in closed form;
the total error's mean ± std and the floor are what the figures draw.

The package: ``compute`` (data, seeding, runners — the code hash covers it and what it imports, nothing else),
``spec`` (figures and configuration hooks), ``summaries`` (slopes and ratios), ``captions``, ``plots`` and
``anchors`` (the notes' claims, as data in :data:`~dpbench.studies.estimation.anchors.CLAIMS`, checked on the
results).
"""

from dpbench.studies.estimation.anchors import anchor_checks, report_html
from dpbench.studies.estimation.captions import caption_text, deviations
from dpbench.studies.estimation.compute import (LABELS, MAIN_METRIC, STUDY, VARIANT, run_series,
                                                series_code_hash)
from dpbench.studies.estimation.plots import plot
from dpbench.studies.estimation.spec import (DATA_NOTE, FIGURES, dataset_signature, figure, figure_names,
                                             prepare_dataset, series, series_threads, validate)
from dpbench.studies.estimation.summaries import slope_table
from dpbench.studies.protocol import UnitStudy, from_module

#: the study hooks (read by from_module) and the names tests and tools use
__all__ = ["DATA_NOTE", "FIGURES", "LABELS", "MAIN_METRIC", "STUDY", "STUDY_OBJECT", "VARIANT", "anchor_checks",
           "caption_text", "dataset_signature", "deviations", "figure", "figure_names", "plot", "prepare_dataset",
           "report_html", "run_series", "series", "series_code_hash", "series_threads", "slope_table", "validate"]

STUDY_OBJECT = from_module(UnitStudy, globals(), name=STUDY, figures=FIGURES, source=STUDY, data_note=DATA_NOTE)
