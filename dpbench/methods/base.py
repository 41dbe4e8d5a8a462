"""The method interface shared by every private (and non-private) learner in the harness.

A method is a small class with declared settings and four hooks (after benchopt):

* ``supports(epsilon, delta, budget)`` returns ``None`` or the reason a combination is skipped
  (e.g. DP-SGD needs delta > 0);
* ``cell_params(problem, tuned, epsilon, delta)`` returns the parameters that determine a cell's result,
  in canonical form, so that equivalent cells share a content key;
* ``group_key(cell)`` groups cells that share one trained artefact and are computed in one call;
* ``run_group(problem, cells, ctx)`` computes the metrics of a group of cells.

``depends_on`` lists which of (epsilon, delta, budget, rep) the result depends on: a private-training
method ignores the inference budget, so one cell serves every B (the horizontal lines of vdm2020 Fig. 2);
the non-private baseline ignores all four.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from dpbench.privacy import _validate as _v
from dpbench.rng import generator


@dataclass(frozen=True)
class Problem:
    """Prepared features for one (dataset variant, preprocessing, split).

    Assumptions every method relies on: ``‖x‖₂ ≤ 1`` for every training and evaluation row (the bias,
    if any, is folded in as a constant feature), labels in ``0..n_classes-1``.
    """

    key: str                 # content key of the dataset variant, preprocessing and split
    variant: str             # dataset variant recorded in every row (e.g. "substitute:...")
    X_train: np.ndarray
    y_train: np.ndarray
    X_eval: np.ndarray
    y_eval: np.ndarray
    n_classes: int

    def __post_init__(self):
        """Cheap structural checks (no pass over the data): shapes agree, sets non-empty, ≥ 2 classes.
        Finiteness and ``‖x‖ ≤ 1`` are checked by :func:`check_unit_ball` (one pass, memoised per key; the runner
        calls it before a method trains)."""
        _v.n_classes("n_classes", self.n_classes)
        for part in ("train", "eval"):
            X, y = getattr(self, f"X_{part}"), getattr(self, f"y_{part}")
            if np.ndim(X) != 2 or X.shape[0] == 0 or X.shape[1] == 0:
                raise ValueError(f"X_{part} must be 2-D and non-empty, got shape {np.shape(X)}")
            if np.shape(y) != (X.shape[0],):
                raise ValueError(f"y_{part} must have shape ({X.shape[0]},) to match X_{part}, got {np.shape(y)}")
        if self.X_eval.shape[1] != self.X_train.shape[1]:
            raise ValueError(f"X_eval has {self.X_eval.shape[1]} columns, X_train {self.X_train.shape[1]}")

    @property
    def n_train(self) -> int:
        return int(self.X_train.shape[0])

    @property
    def dim(self) -> int:
        return int(self.X_train.shape[1])


_UNIT_BALL_CHECKED: set[str] = set()


def check_unit_ball(problem: Problem) -> None:
    """Require finite features in every row of ``problem`` and ``‖x‖ ≤ 1`` in every training row (what the
    sensitivity bounds assume); ValueError naming the array otherwise. One pass per problem key and process."""
    if problem.key in _UNIT_BALL_CHECKED:
        return
    _v.feature_matrix("X_eval", problem.X_eval)
    _v.feature_matrix("X_train", problem.X_train)
    _v.unit_ball_rows("X_train", problem.X_train)
    _UNIT_BALL_CHECKED.add(problem.key)


@dataclass
class Context:
    """What a method may use while computing: the artefact store and the root seed."""

    store: Any  # dpbench.store.Store
    seed: int

    def rng(self, key: str) -> np.random.Generator:
        return generator(self.seed, key)


@dataclass(frozen=True)
class Cell:
    """One unit of work: a method at fixed parameters, privacy budget, inference budget and repetition."""

    method: str
    problem: str                       # Problem.key
    params: tuple                      # sorted (name, value) pairs from Method.cell_params
    epsilon: float | None
    delta: float | None
    budget: int | None
    rep: int | None
    version: int = 1
    code: str = ""                     # hash of the method's module source: editing it reruns its cells

    def _payload(self) -> dict:
        return {"method": self.method, "version": self.version, "problem": self.problem,
                "params": [list(p) for p in self.params], "epsilon": self.epsilon, "delta": self.delta,
                "budget": self.budget, "rep": self.rep, "code": self.code}

    @property
    def key(self) -> str:
        """The cache key: the cell and the code of its method (editing the method recomputes its cells)."""
        from dpbench.store import content_key

        return content_key(self._payload())

    @property
    def stream_key(self) -> str:
        """The key of the cell's random streams: the cell without the code hash, so a code edit that does not
        change the computation gives the same draws (:func:`dpbench.rng.stream_key`)."""
        from dpbench.rng import stream_key

        return stream_key(self._payload())

    @property
    def param(self) -> dict:
        return dict(self.params)


class Method:
    """Base class; subclasses set the class attributes and implement the hooks."""

    name: ClassVar[str]
    label: ClassVar[str]
    kind: ClassVar[str]                      # "training" | "prediction" | "baseline"
    depends_on: ClassVar[tuple[str, ...]] = ("epsilon", "delta", "budget", "rep")
    tuned: ClassVar[str | None] = None       # the cross-validated hyper-parameter ("l2", "clip") or None
    version: ClassVar[int] = 1               # bump when a change alters results: dependent cells rerun

    def __init__(self, **settings: Any):
        self.settings = settings

    @classmethod
    def code_hash(cls) -> str:
        """Hash of the code the method can run — its module and, transitively, every dpbench module that imports
        (learners, mechanisms, accountants; :mod:`dpbench.codehash`); part of every cell key, so any edit of them
        recomputes the method's cells (with identical random streams)."""
        import inspect

        from dpbench import codehash

        if cls.__module__.split(".")[0] == codehash.PACKAGE:
            return codehash.code_hash(cls.__module__)
        return codehash.file_code_hash(inspect.getsourcefile(cls))

    def supports(self, epsilon: float, delta: float, budget: int) -> str | None:
        return None

    def cell_params(self, problem: Problem, tuned: float | None, epsilon: float, delta: float) -> dict:
        return {self.tuned: tuned} if self.tuned else {}

    def make_cell(self, problem: Problem, tuned, epsilon, delta, budget, rep) -> Cell:
        dep = self.depends_on
        if "epsilon" in dep:
            _v.positive("epsilon", epsilon)  # finite and > 0
        if "delta" in dep:
            _v.delta_halfopen("delta", delta)
        if "budget" in dep and budget is not None:
            _v.count("budget", budget)
        return Cell(
            method=self.name,
            problem=problem.key,
            params=tuple(sorted(self.cell_params(problem, tuned, epsilon, delta).items())),
            epsilon=float(epsilon) if "epsilon" in dep else None,
            delta=float(delta) if "delta" in dep else None,
            budget=int(budget) if "budget" in dep else None,
            rep=int(rep) if "rep" in dep else None,
            version=self.version,
            code=self.code_hash(),
        )

    def group_key(self, cell: Cell) -> Any:
        return cell.key

    def run_group(self, problem: Problem, cells: list[Cell], ctx: Context) -> list[dict]:
        raise NotImplementedError


def accuracy_of_logits(logits: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.argmax(logits, axis=-1) == y))


@dataclass
class Registry:
    methods: dict[str, type[Method]] = field(default_factory=dict)

    def register(self, cls: type[Method]) -> type[Method]:
        self.methods[cls.name] = cls
        return cls

    def get(self, name: str) -> type[Method]:
        try:
            return self.methods[name]
        except KeyError:
            raise ValueError(f"unknown method {name!r}; known: {sorted(self.methods)}") from None


REGISTRY = Registry()
