"""Figure specifications as data, shared by the Snakefile (what to run) and the plotter (what to draw)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Point:
    """One x position of a figure: the privacy and inference budgets of its cells."""

    x: float
    epsilon: float
    delta: float
    budget: int


@dataclass(frozen=True)
class FigureSpec:
    study: str
    name: str
    title: str
    x_name: str                      # "epsilon" | "budget" | ...
    x_label: str
    y_label: str
    methods: tuple[str, ...]
    caption: str                     # the source's caption, paraphrased, with its fixed parameters
    xscale: str = "log"
    anchors: tuple[str, ...] = ()    # claim ids checked from this figure's results
