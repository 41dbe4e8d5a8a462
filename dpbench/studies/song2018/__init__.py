"""song2018 — Shuang Song, "Privacy-Preserving Algorithms for Machine Learning" (PhD thesis, UCSD 2018).

Source: S. Song, "Privacy-Preserving Algorithms for Machine Learning", PhD dissertation, UC San Diego, 2018,
https://escholarship.org/uc/item/43j071fj; figures, grids, inferred values and deviations in
docs/studies/song2018.md. Chapter 7 (Pufferfish privacy, the Markov Quilt Mechanism, §7.3-7.6): Fig. 7.4
(synthetic binary chains, L1 error vs α for ε ∈ {0.2, 1, 5}), Table 7.1 and Fig. 7.5 (physical activity,
SIMULATED stand-in), Table 7.2 (time to compute the Laplace scale) and Table 7.3 (household electricity,
SIMULATED stand-in); mechanisms: :mod:`dpbench.methods.pufferfish`; data: :mod:`dpbench.data.markov`. Chapters 3-4
(DP mini-batch SGD, local-DP SGD with heterogeneous privacy; Figs 3.1-3.3, 4.1): :mod:`dpbench.methods.ldp_sgd`.
Chapter 5 (Scalable PATE, §5.3-5.4; Papernot, Song et al., ICLR 2018; Table 5.1, Figs 5.1, 5.4-5.6): the ``ch5_*``
modules (compute: ``ch5_compute`` with ``ch5_votes``), aggregators :mod:`dpbench.methods.pate`, accounting
:mod:`dpbench.privacy.pate`.
Chapter 6 (continual release of graph statistics under node DP, §6.6; Figs 6.1-6.2, Tables 6.1 and 6.4):
``ch6_compute`` with :mod:`dpbench.methods.graph_release`, :mod:`dpbench.privacy.graph_sensitivity` and
:mod:`dpbench.data.graphs` (SURROGATE graphs for the HIV and citation data), and its own ``ch6_*`` views.

The package: the compute code of each part — ``ch7_compute`` (with ``ch7_scales``) and ``ch34_compute`` (with
``ch34_data``); a series' code hash is the import closure of its part's compute module and nothing else
(:mod:`dpbench.codehash`), so an edit of one chapter's compute reruns that chapter's series only and an edit of a
caption, plot or anchor check reruns none — ``compute`` (routes a series to its part), ``spec`` (figures and
configuration hooks), ``captions``, ``tables`` (Tables 7.1-7.3 as text), ``plots`` and the anchor checks
(``ch7_anchors``, ``ch34_anchors`` with ``ch34_stats``, joined in ``anchors``): the thesis's claims as data
(:data:`~dpbench.studies.song2018.anchors.CLAIMS`), checked on the results.
"""

from dpbench.studies.protocol import UnitStudy, from_module
from dpbench.studies.song2018.anchors import CLAIMS, anchor_checks, report_html
from dpbench.studies.song2018.captions import caption_text, deviations
from dpbench.studies.song2018.ch7_compute import LABELS, STUDY
from dpbench.studies.song2018.compute import prepare_dataset, run_series, series_code_hash
from dpbench.studies.song2018.plots import plot
from dpbench.studies.song2018.spec import (DATA_NOTE, FIGURES, dataset_signature, figure, figure_names, series,
                                           series_threads, validate)

#: the study hooks (read by from_module) and the names tests and tools use
__all__ = ["CLAIMS", "DATA_NOTE", "FIGURES", "LABELS", "STUDY", "STUDY_OBJECT", "anchor_checks", "caption_text",
           "dataset_signature", "deviations", "figure", "figure_names", "plot", "prepare_dataset", "report_html",
           "run_series", "series", "series_code_hash", "series_threads", "validate"]

STUDY_OBJECT = from_module(UnitStudy, globals(), name=STUDY, figures=FIGURES, source=STUDY, data_note=DATA_NOTE)
