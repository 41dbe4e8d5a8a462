"""wu2016 — the computation hooks, routed to the chapter that computes a figure: chapter 3
(:mod:`~dpbench.studies.wu2016.ch3_compute`, series ``<dataset>_<method>``, panels and datasets) and chapter 4
(:mod:`~dpbench.studies.wu2016.ch4_compute`, series ``ch4_<method>``).

Each chapter has its own code hash, the import closure of its compute module (:mod:`dpbench.codehash`): an edit of
chapter 4 (or of a mechanism only chapter 4 uses) never reruns a chapter-3 series, and a caption, plot or anchor
edit reruns nothing. This module only routes (it writes nothing into the rows), so it is in neither hash.
"""

from __future__ import annotations

import pandas as pd

from dpbench.studies.wu2016 import ch3_compute as ch3
from dpbench.studies.wu2016 import ch3_data
from dpbench.studies.wu2016 import ch4_compute as ch4
from dpbench.studies.wu2016 import ch4_data

STUDY = ch3.STUDY
FIGURE_NAMES = ch3.FIGURE_NAMES + ch4.FIGURE_NAMES


def chapter(figure_name: str):
    """The compute module of ``figure_name``: ch3_compute or ch4_compute (ValueError for another name)."""
    if figure_name in ch4.FIGURE_NAMES:
        return ch4
    if figure_name in ch3.FIGURE_NAMES:
        return ch3
    raise ValueError(f"unknown figure {figure_name!r} for study {STUDY}; known: {sorted(FIGURE_NAMES)}")


def series_code_hash(series_name: str) -> str:
    return ch4.code_hash() if series_name.startswith(ch4.PREFIX) else ch3.code_hash()


def run_series(config: dict, figure_name: str, series_name: str, n_jobs: int = 1) -> pd.DataFrame:
    """Long rows of one series, computed by its chapter (which rejects a series its figure does not have)."""
    return chapter(figure_name).run_series(config, figure_name, series_name, n_jobs)


def prepare_dataset(config: dict) -> dict:
    """Both chapters' datasets (chapter 3: MNIST / Protein / Covertype; chapter 4: diabetes / Warfarin)."""
    out = ch3_data.prepare_dataset(config)
    more = ch4_data.prepare_dataset(config)
    out["datasets"].update(more["datasets"])
    out["is_substitute"] = any(v["is_substitute"] for v in out["datasets"].values())
    out["dataset_variant"] = ", ".join(v["variant"] for v in out["datasets"].values())
    return out
