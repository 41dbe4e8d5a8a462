"""song2018 — which part computes a series: the study's ``run_series``, ``series_code_hash`` and
``prepare_dataset`` route to :mod:`~dpbench.studies.song2018.ch7_compute` (chapter 7, Pufferfish privacy) or
:mod:`~dpbench.studies.song2018.ch34_compute` (chapters 3-4, private and local-DP SGD) or
:mod:`~dpbench.studies.song2018.ch6_compute` (chapter 6, continual release of graph statistics).

Nothing is computed here. The code hash of a series is the import closure of its chapter's compute module
(:mod:`dpbench.codehash`): an edit of one chapter's compute code reruns that chapter's series only; an edit of the
captions, plots, tables or anchor checks reruns none.
"""

from __future__ import annotations

import pandas as pd

from dpbench.studies.song2018 import ch7_compute as ch7
from dpbench.studies.song2018 import ch34_compute as ch34
from dpbench.studies.song2018 import ch34_data
from dpbench.studies.song2018 import ch6_compute as ch6
from dpbench.studies.song2018 import ch5_compute as ch5

STUDY = ch7.STUDY


def series_code_hash(series_name: str) -> str:
    """A chapter-3/4 series (``ch3_*``, ``ch4_*``): the closure of ``ch34_compute``; chapter 6 (``ch6_*``): of
    ``ch6_compute``; chapter 5 (``ch5_*``): of ``ch5_compute``; any other: of ``ch7_compute``."""
    if ch34.is_ch34_series(series_name):
        return ch34.code_hash()
    if ch6.is_ch6_series(series_name):
        return ch6.code_hash()
    if ch5.is_ch5_series(series_name):
        return ch5.code_hash()
    return ch7.code_hash()


def run_series(config: dict, figure_name: str, series_name: str, n_jobs: int = 1) -> pd.DataFrame:
    if figure_name in ch34.FIGURES:
        return ch34.run_series(config, figure_name, series_name, n_jobs)
    if figure_name in ch5.FIGURES:
        return ch5.run_series(config, figure_name, series_name, n_jobs)
    if figure_name in ch6.FIGURES:
        return ch6.run_series(config, figure_name, series_name, n_jobs)
    if figure_name not in ch7.SERIES:
        raise ValueError(f"unknown figure {figure_name!r} for study {STUDY}; known: "
                         f"{sorted([*ch7.SERIES, *ch34.FIGURES, *ch5.FIGURES, *ch6.FIGURES])}")
    return ch7.run_series(config, figure_name, series_name, n_jobs)


def prepare_dataset(config: dict) -> dict:
    out = ch7.prepare_dataset(config)
    part = ch34_data.prepare_dataset(config)
    if part:
        had = bool(out["datasets"])
        out["datasets"].update(part)
        out["is_substitute"] = any(v["is_substitute"] for v in out["datasets"].values())
        out["dataset_variant"] = ", ".join(sorted({v["variant"] for v in out["datasets"].values()}
                                                  | ({out["dataset_variant"]} if not had else set())))
    return out
