"""membership — membership-inference attacks against every private training method, against the ε-DP bound.

Source: M. Mondal, "Privacy and Security in Machine Learning", lecture slides, CS 60081, Autumn 2024 (cited as
Mondal 2024; it includes R. Shokri's deck "Data Privacy in Machine Learning" and slides from A. Bellet's private
ML course): the membership-inference game (slide "How to Quantify the Leakage?") and the "Privacy and
Generalization" table. The attack procedures (Shokri et al. 2017, Yeom et al. 2018, Carlini et al. 2022) and the
ε-DP bounds (hypothesis-testing view, Kairouz et al. 2015) are standard literature the slides only cite or omit;
see docs/studies/membership.md. The slides contain no attack-vs-ε experiment: every figure here is a benchmark
built on their claims.

Figures: ``fig_attack_<dataset>`` (attack accuracy, advantage, AUC, TPR at FPR = 1e-3 vs ε per method, best
attack, bound drawn; one series per method), ``fig_roc`` (ROC curves on log-log axes at a few ε), ``fig_eps_lower_bound``
(empirical ε lower bound vs theoretical ε) and ``table_generalisation`` (train / test / attack accuracy, non-private
vs private, as the slides' table); the last three have one series per dataset. Computation and caching:
:mod:`.training` (data pools, training, cached models) and :mod:`.cells` (attack cells, canary audit); attacks: :mod:`dpbench.attacks.membership`; metrics:
:mod:`dpbench.attacks.metrics`; bounds: :mod:`dpbench.privacy.attack_bounds`.

Audit (anchor checks ``AUDIT/<dataset>/<method>``): for every (dataset, method, ε, attack), the counts pooled over
repetitions give a lower confidence limit of the attack accuracy and of the ε lower bound; the check fails —
"privacy bug" — when either exceeds its ε-DP bound (accuracy ≤ (e^ε + δ)/(1 + e^ε), TPR ≤ e^ε·FPR + δ under the
replace-one relation), at a family-wise level (Bonferroni over every audited comparison by default).

Intervals (``ci_method``): every repetition trains one target model and its n member + n non-member trials all
share it, so pooled trials are clustered by model (over-dispersed: models differ in how much they leak and where an
attack's calibrated threshold falls). ``design_effect`` (default) uses the effective-sample-size Clopper–Pearson
interval of Korn & Graubard (1998) with the design effect estimated from the between-repetition variance, floored
at 1, and a small-K correction (:func:`dpbench.attacks.metrics.clustered_clopper_pearson`); ``clopper_pearson`` the
binomial interval of the pooled counts, which treats the trials as independent and is too narrow when models
differ. The canary audit's trials are independent (each is a separate release with its own noise), so it keeps
the exact Clopper–Pearson interval.

Canary audit (``canary_audit`` config block, :mod:`dpbench.attacks.canary`): the average-member attacks are far
from the worst case and only catch gross faults; for every audited (dataset, method, ε) the audit also trains
the method ``trials`` times on a replace-one pair D, D′ differing in one worst-case canary record (unit-norm
feature vector in the direction the data spans least, flipped label) and derives a Clopper–Pearson lower limit
of the empirical ε from the canary's score margin (threshold chosen on a held-out half); a limit above the
claimed replace-one ε is a privacy bug too (rows ``attack = "canary"``, same AUDIT anchor rows).

The package: ``training`` and ``cells`` compute and cache (their import closures are the code hashes of models
and cells, :mod:`dpbench.codehash`), ``rows`` assembles a series from cached cells, ``spec`` holds the figures
and config hooks, ``summaries`` the pooled statistics, ``captions``, ``plots`` and ``anchors`` (the claims as
data, :data:`~dpbench.studies.membership.anchors.CLAIMS`).
"""

from dpbench.studies.membership.anchors import _cfg_from, anchor_checks, report_html, report_lead_html
from dpbench.studies.membership.captions import caption_text, deviations
from dpbench.studies.membership.plots import TPR_FLOOR, _rate_errorbars, plot
from dpbench.studies.membership.rows import run_series, series_code_hash
from dpbench.studies.membership.spec import (DATA_NOTE, FIGURES, LABELS, STUDY, dataset_signature, extend_schema,
                                             figure, figure_names, prepare_dataset, series, series_threads, validate)
from dpbench.studies.membership.summaries import audit_table, pooled
from dpbench.studies.protocol import UnitStudy, from_module

#: the study hooks (read by from_module) and the names tests and tools use
__all__ = ["DATA_NOTE", "FIGURES", "LABELS", "STUDY", "STUDY_OBJECT", "TPR_FLOOR", "_cfg_from", "_rate_errorbars",
           "anchor_checks", "audit_table", "caption_text", "dataset_signature", "deviations", "extend_schema", "figure",
           "figure_names", "plot", "pooled", "prepare_dataset", "report_html", "report_lead_html", "run_series",
           "series", "series_code_hash", "series_threads", "validate"]

STUDY_OBJECT = from_module(UnitStudy, globals(), name=STUDY, figures=FIGURES, source=STUDY, data_note=DATA_NOTE)
