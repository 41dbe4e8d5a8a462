"""The one interface between a study and the machinery that runs it: the Snakefile and :mod:`dpbench.workflow`
(what to run), :mod:`dpbench.runner` (how a series is computed), :mod:`dpbench.plot` (how a figure is drawn) and
:mod:`dpbench.report` (how claims are checked). Nothing outside a study looks up a hook by name.

A study declares one of two shapes:

* :class:`CellStudy` — a grid of cells: every series is one private learner (a :class:`dpbench.methods.Method`)
  evaluated at the figure's :class:`~dpbench.studies.base.Point` s, with tuning, caching and sharding done by the
  runner (van der Maaten & Hannun 2020). The study supplies the points, the method, the problem and the tuning grid.
* :class:`UnitStudy` — independent units of work: the study computes a whole series itself
  (``run_series``) and draws its own figures (``plot``); e.g. the Pufferfish tables of Song (2018, ch. 7).

Both share the figure declarations, config validation, deviations (caption notes), anchor checks and the
optional report pages. Optional hooks have defaults here; a subclass that defines a public name the protocol does
not declare is rejected when the class is created (a misspelt hook — ``series_thread`` — is an error, never a
silent fallback to the default).
"""

from __future__ import annotations

import abc
import difflib
import json
from typing import ClassVar

#: what every study declares (besides the names of its shape, below)
COMMON = ("name", "source", "shape", "data_note", "neighbouring", "figures", "validate", "figure_names", "figure", "series",
          "deviations", "anchor_checks", "series_threads", "series_code_hash", "dataset_signature",
          "report_html", "report_lead_html", "extend_schema", "figure_data", "prepare_figure_data",
          "figure_data_signature")
CELL = ("points", "make_method", "problem", "tuning_grid", "fixed_hyperparameter", "prepare_more",
        "preprocessing", "prepare_dataset", "repetitions")
UNIT = ("run_series", "plot", "prepare_dataset")


class Study(abc.ABC):
    """What the workflow, runner, plotter and report call (see the module docstring for the two shapes)."""

    name: ClassVar[str]                 # the key under ``studies:`` in the config
    source: ClassVar[str] = ""          # key of :data:`dpbench.sources.SOURCES` (default: ``name``)
    shape: ClassVar[str]                # "cells" | "units"
    data_note: ClassVar[str | None] = None   # the caption's line on the data (None: the generic MNIST note)
    neighbouring: ClassVar[str] = "replace_one"  # the neighbouring relation of the study's ε (result rows)
    figures: ClassVar[dict]             # every figure the study can draw: {name: FigureSpec}
    _declared: ClassVar[tuple[str, ...]] = COMMON

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        unknown = [k for k in vars(cls) if not k.startswith("_") and k not in cls._declared]
        if unknown:
            raise TypeError(f"study class {cls.__name__} defines {unknown}, which the study protocol does not "
                            f"declare (dpbench.studies.protocol); declared: {sorted(cls._declared)}")

    # -- figures and configuration --------------------------------------------------------------------------

    @abc.abstractmethod
    def validate(self, cfg: dict, prefix: str) -> None:
        """Raise :class:`dpbench.config.ConfigError` naming the key (``prefix``.key) of a bad study config."""

    @abc.abstractmethod
    def figure_names(self, cfg: dict) -> list[str]:
        """The figures the config enables, in the order the study lists them."""

    @abc.abstractmethod
    def figure(self, name: str):
        """The :class:`~dpbench.studies.base.FigureSpec` of ``name`` (ValueError listing the figures if unknown)."""

    @abc.abstractmethod
    def series(self, cfg: dict, figure: str) -> list[str]:
        """The series (one result file each) of a figure under this config."""

    @abc.abstractmethod
    def deviations(self, cfg: dict, figure: str) -> list[str]:
        """Caption notes: each choice the source leaves open and each deviation from it."""

    @abc.abstractmethod
    def anchor_checks(self, frames: dict):
        """The source's claims checked on the results (``{figure: rows}``): rows of :mod:`dpbench.verdicts`."""

    # -- optional hooks, with their defaults -------------------------------------------------------------------

    def series_threads(self, cfg: dict, figure: str, series: str) -> int | None:
        """Threads a series job can use (None: the config's ``n_jobs``)."""
        return None

    def series_code_hash(self, series: str) -> str:
        """Hash of the code that computes a series (a change reruns it); default: the registered method's
        module (:mod:`dpbench.methods`)."""
        from dpbench.methods import REGISTRY

        return REGISTRY.get(series).code_hash()

    def dataset_signature(self, config: dict) -> str:
        """Everything the study's data depends on (a change re-prepares it); default: the data settings and the
        study's dataset, sizes and bias."""
        cfg = config["studies"][self.name]
        keys = ("dataset", "n_train", "n_test", "bias")
        sig = {"data": config["data"], **{k: cfg.get(k) for k in keys}}
        if config.get("datasets"):  # user datasets: their content (a changed file re-prepares, and reruns)
            from dpbench.data.user import user_dataset

            sig["user_datasets"] = {n: user_dataset(n).variant if user_dataset(n) else None for n in config["datasets"]}
        return json.dumps(sig, sort_keys=True)

    def figure_data(self, config: dict, figure: str) -> list[str]:
        """Names of the data a figure needs beyond the study's dataset (e.g. vdm2020 Fig. 4's MNIST-1M), each
        prepared by its own job (:meth:`prepare_figure_data`) that only the jobs of the figures naming it wait
        for: a run of other figures never prepares it. Default: none."""
        return []

    def prepare_figure_data(self, config: dict, name: str, n_jobs: int = 1) -> dict:
        """Prepare (generate, download, cache) the figure data ``name`` with ``n_jobs`` workers; its manifest."""
        raise ValueError(f"study {self.name!r} declares no figure data {name!r}")

    def figure_data_signature(self, config: dict, name: str) -> str:
        """What figure data ``name`` depends on (a change re-prepares it, and reruns what reads it). Default: the
        study's data (:meth:`dataset_signature`) and the settings of the figures that need it."""
        cfg = config["studies"][self.name]
        figs = {f: (cfg.get("figures") or {}).get(f) for f in self.figure_names(cfg)
                if name in self.figure_data(config, f)}
        return json.dumps({"dataset": self.dataset_signature(config), "name": name, "figures": figs},
                          sort_keys=True, default=str)

    def extend_schema(self, schema: dict, config: dict) -> None:
        """Complete the config's JSON schema (in place) with what the registries hold — e.g. the names of the
        registered methods and datasets a figure can take, the config blocks of added methods — so that an added
        method or dataset is validated like a built-in one (:func:`dpbench.studies.extensions.config_schema`).
        ``config``: the config about to be validated (its ``datasets`` are not registered yet)."""

    def report_html(self, config: dict, frames: dict) -> str:
        """Study-specific HTML below the anchor-check table (e.g. regenerated tables)."""
        return ""

    def report_lead_html(self, config: dict, frames: dict) -> str:
        """Study-specific HTML above the anchor-check table (e.g. a privacy-bug summary)."""
        return ""


class CellStudy(Study):
    """A grid of (method, point, repetition) cells computed, tuned, cached and sharded by :mod:`dpbench.runner`."""

    shape = "cells"
    _declared = COMMON + CELL

    @abc.abstractmethod
    def points(self, cfg: dict, figure: str) -> list:
        """The :class:`~dpbench.studies.base.Point` s of a figure."""

    @abc.abstractmethod
    def make_method(self, cfg: dict, name: str, **overrides):
        """The :class:`dpbench.methods.Method` of series ``name`` with the study's settings (and a point's)."""

    @abc.abstractmethod
    def problem(self, config: dict, cfg: dict, split: str, **overrides):
        """The :class:`dpbench.methods.Problem` (train and evaluation data) of a split."""

    @abc.abstractmethod
    def tuning_grid(self, cfg: dict, method) -> list[float] | None:
        """Values of the method's tuned hyper-parameter (None: not tuned)."""

    @abc.abstractmethod
    def fixed_hyperparameter(self, cfg: dict, method) -> float:
        """The hyper-parameter value of an untuned method."""

    def repetitions(self, cfg: dict, figure: str, point) -> int:
        """Repetitions of the cells at ``point`` of ``figure`` (default: the study's ``repetitions`` everywhere).
        A study may use fewer at costly points; repetition r of a point is the same cell whatever the count."""
        return int(cfg["repetitions"])

    def prepare_more(self, config: dict) -> dict:
        """Extra manifest entries of the prepared data (e.g. derived caches)."""
        return {}

    def preprocessing(self, cfg: dict, point) -> tuple[str, bool] | None:
        """(what was done between the raw data and the mechanism, whether it used private-data statistics)."""
        return None

    def prepare_dataset(self, config: dict) -> dict:
        """Obtain the data (download or labelled substitute) and return the manifest of the test-split problem."""
        problem = self.problem(config, config["studies"][self.name], "test")
        return {**self.prepare_more(config), "study": self.name, "dataset_variant": problem.variant,
                "is_substitute": problem.variant.startswith("substitute"), "n_train": problem.n_train,
                "n_test": int(problem.X_eval.shape[0]), "dim": problem.dim, "n_classes": problem.n_classes}


class UnitStudy(Study):
    """Independent units: the study computes each series (``run_series``) and draws each figure (``plot``)."""

    shape = "units"
    _declared = COMMON + UNIT

    @abc.abstractmethod
    def run_series(self, config: dict, figure: str, series: str, n_jobs: int = 1):
        """The result rows (a DataFrame) of one series."""

    @abc.abstractmethod
    def plot(self, config: dict, figure: str, df, out) -> str:
        """Draw ``figure`` from its rows into ``out`` (a PNG, caption beside it); return the caption."""

    @abc.abstractmethod
    def prepare_dataset(self, config: dict) -> dict:
        """Obtain or simulate the study's data, cache it, return its manifest."""


def hooks(shape: str) -> tuple[str, ...]:
    """The names a study of ``shape`` ("cells" or "units") may define."""
    return {"cells": COMMON + CELL, "units": COMMON + UNIT}[shape]


#: declared names that are data, not functions
DATA = ("name", "source", "shape", "data_note", "neighbouring", "figures")


def from_module(base: type[Study], namespace: dict, **data) -> Study:
    """The study object of a module (or a package's ``__init__``) written as functions: a subclass of ``base``
    (:class:`CellStudy` or :class:`UnitStudy`) whose hooks are the functions of the same names in ``namespace``
    (the module's ``globals()``; a package imports them from its submodules) and whose data (``name``,
    ``figures``, ...) is ``data``. A required hook that is missing is a TypeError (abstract method); so is a
    function of the module or its submodules in ``namespace`` whose name is one or two letters off a hook's
    (``series_thread`` for ``series_threads``): it would otherwise be silently ignored."""
    names = [n for n in hooks(base.shape) if n not in DATA]
    module = namespace.get("__name__", "?")
    funcs = {n: staticmethod(namespace[n]) for n in names if callable(namespace.get(n))}
    for k, v in namespace.items():
        home = getattr(v, "__module__", None) or ""
        ours = home == module or home.startswith(module + ".")
        if k.startswith("_") or k in funcs or not callable(v) or not ours:
            continue
        close = difflib.get_close_matches(k, names, n=1, cutoff=0.85)
        if close:
            raise TypeError(f"{module}.{k} looks like the study hook {close[0]!r} but is not named so "
                            "(dpbench.studies.protocol); rename it, or give it a name that is not a near miss")
    cls = type(f"{str(data.get('name', module)).title()}Study", (base,), {"__module__": module, **funcs, **data})
    return cls()
