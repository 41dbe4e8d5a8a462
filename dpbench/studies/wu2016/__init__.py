"""wu2016 — Xi Wu, "A Study of Stability in Data Privacy" (PhD thesis, UW–Madison 2016), chapters 3 and 4.

Chapter 3 (Wu 2016, §3.2–3.3: Algorithms 1–4, Tables 3.2–3.3, Figs. 3.2–3.4): bolt-on private PSGD (output
perturbation) against SCS13 and BST14 for logistic regression — fig3_2 (test accuracy vs ε, 3 datasets × 4 tests),
fig3_3 (passes and batch size, MNIST), fig3_4 (runtime ratios to noiseless); algorithms:
:mod:`dpbench.methods.private_psgd`, :mod:`dpbench.methods.private_psgd_many` (on the engine
:mod:`dpbench.learn.psgd_many`); data: the registry's ``mnist``, ``protein`` and ``covertype``. Chapter 4 (Wu
2016, §4.2 and §4.4: Algorithms 5–7, Figs. 4.1–4.8): output perturbation, objective
perturbation and the functional mechanism for logistic (diabetes) and linear (Warfarin) regression, and the
model-inversion attack on VKORC1 — fig4_1 ... fig4_8 (fig4_4 is out of scope). Methods, grids, open choices and
anchors A1–A8, B1–B7: docs/studies/wu2016.md.

The package: per chapter a compute module (``ch3_compute`` with ``ch3_data``, ``ch4_compute`` with ``ch4_data``:
data, seeding, runners — each chapter's code hash is the import closure of its compute module, nothing else) and
``compute`` (routes a figure to its chapter); ``spec`` (figures and configuration hooks), ``summaries``,
``captions``, ``plots`` and the claims as data with their checks (``ch3_anchors``, ``ch4_anchors``, joined in
``anchors``: :data:`~dpbench.studies.wu2016.anchors.CLAIMS`).
"""

from dpbench.studies.protocol import UnitStudy, from_module
from dpbench.studies.wu2016.anchors import CLAIMS, anchor_checks, report_html
from dpbench.studies.wu2016.captions import caption_text, deviations
from dpbench.studies.wu2016.ch3_anchors import first_within
from dpbench.studies.wu2016.ch3_compute import LABELS
from dpbench.studies.wu2016.compute import prepare_dataset, run_series, series_code_hash
from dpbench.studies.wu2016.plots import plot
from dpbench.studies.wu2016.spec import (DATA_NOTE, FIGURES, STUDY, dataset_signature, figure, figure_names,
                                         series, series_threads, validate)
from dpbench.studies.wu2016.summaries import ratio_summary

#: the study hooks (read by from_module) and the names tests and tools use
__all__ = ["CLAIMS", "DATA_NOTE", "FIGURES", "LABELS", "STUDY", "STUDY_OBJECT", "anchor_checks", "caption_text",
           "dataset_signature", "deviations", "figure", "figure_names", "first_within", "plot", "prepare_dataset",
           "ratio_summary", "report_html", "run_series", "series", "series_code_hash", "series_threads", "validate"]

STUDY_OBJECT = from_module(UnitStudy, globals(), name=STUDY, figures=FIGURES, source=STUDY, data_note=DATA_NOTE)
