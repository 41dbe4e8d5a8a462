"""vdm2020 — "The Trade-Offs of Private Prediction" (van der Maaten & Hannun): figure specs and anchors.

Source: van der Maaten & Hannun (2020), arXiv:2007.05089 (documented in docs/studies/vdm2020.md). Fig. 1a/1b:
test accuracy vs ε at B = 100 (δ = 0 / 1e-5); Fig. 2a/2b: accuracy vs inference budget B at ε = 1 (δ = 0 / 1e-5);
MNIST, linear softmax models, mean ± std over repetitions on one train/test split.

The package: ``spec`` (figures, config hooks, points, series, methods), ``data`` (prepared problems),
``captions``, ``checks`` + ``anchors_1_4`` + ``anchors_5_10`` (the claims) and ``anchors`` (checks and the
regenerated table of effects). Cells are computed by :mod:`dpbench.runner` with the methods of
:mod:`dpbench.methods`; their cache keys carry each method's import closure (:mod:`dpbench.codehash`).
"""

from dpbench.studies.protocol import CellStudy, from_module
from dpbench.studies.vdm2020.anchors import anchor_checks, effects_table, report_html, trend
from dpbench.studies.vdm2020.captions import deviations
from dpbench.studies.vdm2020.checks import PRIVATE, crossover_budget
from dpbench.studies.vdm2020.data import (NEIGHBOURING, _problem, _public_rows, _select_rows, figure_data,
                                          figure_data_signature, prepare_dataset, prepare_figure_data, prepare_more,
                                          preprocessing, problem, row_scale)
from dpbench.studies.vdm2020.spec import (FIGURES, MLP_METHODS, STUDY, extend_schema, figure, figure_names,
                                          fixed_hyperparameter, make_method, points, repetitions, series, tuning_grid,
                                          validate)

#: the study hooks (read by from_module) and the names tests and tools use
__all__ = ["FIGURES", "MLP_METHODS", "NEIGHBOURING", "PRIVATE", "STUDY", "STUDY_OBJECT", "_problem", "_public_rows",
           "_select_rows", "anchor_checks", "crossover_budget", "deviations", "effects_table", "extend_schema",
           "figure", "figure_data", "figure_data_signature", "figure_names", "fixed_hyperparameter", "make_method",
           "points", "prepare_dataset", "repetitions", "prepare_figure_data", "prepare_more",
           "preprocessing", "problem", "report_html", "row_scale", "series", "trend", "tuning_grid", "validate"]

STUDY_OBJECT = from_module(CellStudy, globals(), name=STUDY, figures=FIGURES, source="vdm2020",
                           neighbouring=NEIGHBOURING)
