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

Settings are declared on the class (``settings_spec``: one :class:`Setting` each — name, the config block it
is read from, default) and :meth:`Method.from_config` builds the method from a study's config block, so a study
needs no per-method code, the config schema of a method's block is derived from the declaration
(:meth:`Registry.schema_blocks`), and ``style`` (or a deterministic default) draws its series.
A method defined outside the package registers itself the same way (``@REGISTRY.register``) from a plugin
module named in the config (``plugins:``, docs/extending.md).

A private training method also answers :meth:`Method.train`: ONE model trained on given rows at a replace-one
budget (ε, δ), returned as a (d, C) score matrix — what a study that trains single models outside a grid of cells
calls (the membership study trains its target and shadow models through it). Two registries hold the methods:
:data:`REGISTRY` the vdm2020 grid methods (their names are the schema enum of vdm2020's ``methods``, they draw its
series), :data:`TRAINING` the private training methods that only implement :meth:`Method.train` (wu2016's
bolt-on, SCS13 and BST14 PSGD, the wu2016 ch. 4 ERM mechanisms: binary linear models that do not run on vdm2020's
multiclass problems), so they stay out of vdm2020's schema and figures; :func:`training_method` looks a name up
in both.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

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
    code: str = ""           # hash of the code that prepared the features (part of every cell key, not of streams)

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


#: cell parameters that choose how a cell is solved, not what is computed (e.g. loss perturbation's
#: ``lbfgs.float32`` and ``lbfgs.precondition``): part of the cache key, not of the random streams (:attr:`Cell.stream_key`)
SOLVER_PARAMS = ("float32", "precondition")


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
    code: str = ""                     # the method's code hash (+ the problem preparation's): editing reruns the cells

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
        change the computation gives the same draws (:func:`dpbench.rng.stream_key`), and without the
        :data:`SOLVER_PARAMS` (how a cell is solved, not what: switching the solver's precision keeps the
        noise, so the two results differ by the solver tolerance only)."""
        from dpbench.rng import stream_key

        payload = self._payload()
        payload["params"] = self.stream_params
        return stream_key(payload)

    @property
    def stream_params(self) -> list:
        """The cell's parameters that choose its random draws: all but the :data:`SOLVER_PARAMS`."""
        return [list(p) for p in self.params if p[0] not in SOLVER_PARAMS]

    @property
    def param(self) -> dict:
        return dict(self.params)


_REQUIRED = object()


@dataclass(frozen=True)
class Setting:
    """One setting of a method, read from the study config by :meth:`Method.from_config`.

    ``block``: dotted path of the config block inside the study's config (``""`` = the study's top level,
    ``"lbfgs"``, ``"mlp.dpsgd"``); ``key``: the key in that block (default: ``name``). Without a ``default``
    the setting is required. ``cast`` converts the value read (None: kept as written, so cell keys — which
    contain the values — do not depend on how the config was read). A figure point may override a setting of
    the same name (e.g. the number of models T on the x axis of vdm2020 Fig. 6b). ``schema``: the JSON schema
    of the value (config validation); default from ``type``."""

    name: str
    block: str
    key: str = ""
    default: Any = _REQUIRED
    type: str = "number"                  # JSON-schema type: number | integer | string | boolean
    schema: dict | None = None
    cast: Callable | None = None

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(p for p in self.block.split(".") if p) + (self.key or self.name,)

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED

    def json_schema(self) -> dict:
        return dict(self.schema) if self.schema is not None else {"type": self.type}


def _lookup(cfg: dict, path: tuple[str, ...]):
    node = cfg
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return _REQUIRED
        node = node[part]
    return node


#: default colours and markers of methods that declare no ``style`` (none of them used by the built-in methods)
DEFAULT_COLORS = ("tab:brown", "tab:pink", "tab:olive", "tab:cyan", "tab:gray", "gold", "teal", "navy")
DEFAULT_MARKERS = ("P", "X", "*", "h", "p", "<", ">", "d")


class Method:
    """Base class; subclasses set the class attributes and implement the hooks."""

    name: ClassVar[str]
    label: ClassVar[str]
    kind: ClassVar[str]                      # "training" | "prediction" | "baseline"
    depends_on: ClassVar[tuple[str, ...]] = ("epsilon", "delta", "budget", "rep")
    tuned: ClassVar[str | None] = None       # the cross-validated hyper-parameter ("l2", "clip") or None
    version: ClassVar[int] = 1               # bump when a change alters results: dependent cells rerun
    settings_spec: ClassVar[tuple[Setting, ...]] = ()   # what :meth:`from_config` reads from the study config
    style: ClassVar[dict | None] = None      # matplotlib style of its series (None: :meth:`Registry.style`)
    # "source": the sources' calibration made correct | "tight": the method's tight analysis (cells carry it)
    calibration_kind: ClassVar[str] = "source"
    binary_only: ClassVar[bool] = False      # :meth:`train` needs two classes (binary linear models)
    #: the method's calibration assumes ‖x‖ ≤ 1 for every training row (False: it clips per example, or it is not
    #: private): :meth:`train` and :meth:`releases` refuse rows outside the unit ball instead of releasing a model
    #: whose noise no longer covers the sensitivity
    unit_ball: ClassVar[bool] = True

    def __init__(self, **settings: Any):
        self.settings = settings

    def __init_subclass__(cls, **kwargs):
        """Every :meth:`train` / :meth:`releases` a subclass defines validates its input first
        (:meth:`check_training_input`): a public entry point never releases a model whose guarantee its input voids."""
        super().__init_subclass__(**kwargs)
        for name in ("train", "releases"):
            f = cls.__dict__.get(name)
            if f is not None and not getattr(f, "_checked_input", False):
                setattr(cls, name, _checked_input(f))

    def check_training_input(self, X, y, n_classes, epsilon, delta):
        """The input of :meth:`train` against the assumptions of the method's calibration, each violation a
        ValueError naming it: X a non-empty 2-D array of finite values with ‖x‖ ≤ 1 per row (when
        :attr:`unit_ball`), integer labels in 0..n_classes−1 (n_classes ≥ 2; exactly 2 for a binary-only method),
        ε > 0 (∞ only for a non-private baseline), 0 ≤ δ < 1. Returns (X float64, y, n_classes)."""
        X = _v.feature_matrix("X", X)
        C = _v.n_classes("n_classes", n_classes)
        if self.binary_only and C != 2:
            raise ValueError(f"method {self.name!r} trains binary models: n_classes must be 2, got {C}")
        y = _v.label_vector("y", y, X.shape[0], C)
        _v.positive("epsilon", epsilon, allow_inf=self.kind == "baseline")
        _v.delta_halfopen("delta", delta)
        if self.unit_ball:
            _v.unit_ball_rows("X", X)
        return X, y, C

    @classmethod
    def from_config(cls, cfg: dict, prefix: str = "", **overrides: Any) -> "Method":
        """The method with every declared setting read from the study config ``cfg`` (``prefix``: its dotted
        path, for error messages); ``overrides`` (a figure point's) replace settings of the same name, others
        are ignored (e.g. a fixed λ, which the runner uses as the tuned value). A required setting missing from
        the config raises :class:`dpbench.config.ConfigError` naming its key."""
        from dpbench.config import ConfigError

        values = {}
        for s in cls.settings_spec:
            if s.name in overrides:
                v = overrides[s.name]
            else:
                v = _lookup(cfg, s.path)
                if v is _REQUIRED:
                    if s.required:
                        where = ".".join((prefix, *s.path) if prefix else s.path)
                        raise ConfigError(f"invalid config: {where}: required by method {cls.name!r}")
                    v = s.default
            values[s.name] = s.cast(v) if s.cast is not None else v
        return cls(**values)

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
        """The cell of one point: the method's :meth:`cell_params`, and ``calibration`` when the method is not the
        source's calibration (:attr:`calibration_kind`; its cells, rows and cache keys are then distinct)."""
        dep = self.depends_on
        if "epsilon" in dep:
            _v.positive("epsilon", epsilon)  # finite and > 0
        if "delta" in dep:
            _v.delta_halfopen("delta", delta)
        if "budget" in dep and budget is not None:
            _v.count("budget", budget)
        params = self.cell_params(problem, tuned, epsilon, delta)
        if self.calibration_kind != "source":
            params = {**params, "calibration": self.calibration_kind}
        return Cell(
            method=self.name,
            problem=problem.key,
            params=tuple(sorted(params.items())),
            epsilon=float(epsilon) if "epsilon" in dep else None,
            delta=float(delta) if "delta" in dep else None,
            budget=int(budget) if "budget" in dep else None,
            rep=int(rep) if "rep" in dep else None,
            version=self.version,
            code=self.code_hash() + (f"+{problem.code}" if problem.code else ""),
        )

    def group_key(self, cell: Cell) -> Any:
        return cell.key

    def run_group(self, problem: Problem, cells: list[Cell], ctx: Context) -> list[dict]:
        raise NotImplementedError

    def train(self, X: np.ndarray, y: np.ndarray, n_classes: int, epsilon: float, delta: float,
              rng: np.random.Generator) -> tuple[np.ndarray, dict]:
        """ONE model trained with the method's settings on rows ``X`` (‖x‖ ≤ 1) and integer labels ``y`` in
        0..n_classes−1 at the replace-one budget (ε, δ), every random draw from ``rng``: ``(scores, record)``
        with ``scores`` the (d, C) score matrix of the released model (logits x @ scores) and ``record`` at least
        ``noise_scale``. Binary linear models (labels mapped to ±1, class 1 = +1) are released as the scores
        [0, w] (:func:`linear_scores`). Methods that cannot train single models leave this unimplemented."""
        raise NotImplementedError(f"method {self.name!r} does not train single models")

    def releases(self, X: np.ndarray, y: np.ndarray, n_classes: int, epsilon: float, delta: float,
                 rng: np.random.Generator, trials: int, shared_rng: np.random.Generator) -> np.ndarray:
        """``trials`` independent releases (trials, d, C) of :meth:`train` on the same rows (a canary audit's
        samples). Default: ``trials`` calls of :meth:`train` drawing from ``rng``; a method whose noiseless part
        does not depend on the draws overrides it to compute that part once (``shared_rng``: the randomness of
        that part that is data-independent, the same on both sides of an audit)."""
        return np.stack([self.train(X, y, n_classes, epsilon, delta, rng)[0] for _ in range(int(trials))])


def _checked_input(f):
    @functools.wraps(f)
    def checked(self, X, y, n_classes, epsilon, delta, *args, **kwargs):
        X, y, n_classes = self.check_training_input(X, y, n_classes, epsilon, delta)
        return f(self, X, y, n_classes, epsilon, delta, *args, **kwargs)

    checked._checked_input = True
    return checked


def linear_scores(W: np.ndarray, n_classes: int) -> np.ndarray:
    """K binary linear models ``W`` (K, d) — one (two classes) or one-vs-all (K = C) — as a (d, C) score matrix:
    [0, w] for two classes (so p(class 1) = σ(⟨w, x⟩)), the models' scores ⟨w_k, x⟩ as columns otherwise (the
    black-box output, their softmax, is post-processing of the released models)."""
    W = np.atleast_2d(np.asarray(W, dtype=np.float64))
    if int(n_classes) == 2:
        return np.c_[np.zeros(W.shape[-1]), W[0]]
    return np.ascontiguousarray(W.T)


def accuracy_of_logits(logits: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.argmax(logits, axis=-1) == y))


_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_KINDS = ("training", "prediction", "baseline")


@dataclass
class Registry:
    methods: dict[str, type[Method]] = field(default_factory=dict)

    def register(self, cls: type[Method]) -> type[Method]:
        """Add ``cls`` (a class decorator). Checks what the workflow relies on: a lower-case name of letters,
        digits and ``_`` (it is a file name and a Snakemake wildcard), a label, a known kind, settings that are
        :class:`Setting` s, and no other class already registered under the name (registering the same class
        again — a plugin imported twice — is allowed)."""
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"method class {cls.__qualname__}: name must match {_NAME.pattern}, got {name!r}")
        if not isinstance(getattr(cls, "label", None), str):
            raise ValueError(f"method {name!r}: declare a label (the legend text)")
        if getattr(cls, "kind", None) not in _KINDS:
            raise ValueError(f"method {name!r}: kind must be one of {_KINDS}, got {getattr(cls, 'kind', None)!r}")
        if not all(isinstance(s, Setting) for s in cls.settings_spec):
            raise ValueError(f"method {name!r}: settings_spec must hold dpbench.methods.Setting objects")
        old = self.methods.get(name)
        if old is not None and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
            raise ValueError(f"method {name!r} is already registered by {old.__module__}.{old.__qualname__}")
        self.methods[name] = cls
        return cls

    def names(self) -> list[str]:
        return list(self.methods)

    def style(self, name: str) -> dict:
        """The matplotlib style of a method's series: its declared ``style``, else a colour and a marker
        chosen from the method's name (the same in every run)."""
        cls = self.get(name)
        if cls.style is not None:
            return dict(cls.style)
        import hashlib

        h = int(hashlib.sha256(name.encode()).hexdigest(), 16)
        return {"color": DEFAULT_COLORS[h % len(DEFAULT_COLORS)],
                "marker": DEFAULT_MARKERS[(h // len(DEFAULT_COLORS)) % len(DEFAULT_MARKERS)]}

    def schema_blocks(self, names=None) -> dict:
        """JSON schema of the config blocks the methods ``names`` (default: all) read, derived from their
        settings: ``{block path: {key: schema}}`` (block path a tuple; ``()`` the study's top level)."""
        out: dict = {}
        for n in (self.names() if names is None else names):
            for s in self.get(n).settings_spec:
                out.setdefault(s.path[:-1], {}).setdefault(s.path[-1], s.json_schema())
        return out

    def get(self, name: str) -> type[Method]:
        try:
            return self.methods[name]
        except KeyError:
            raise ValueError(f"unknown method {name!r}; known: {sorted(self.methods)}") from None


REGISTRY = Registry()
"""The vdm2020 grid methods (``run_group`` on a grid of cells; most also implement :meth:`Method.train`)."""

TRAINING = Registry()
"""Private training methods that only implement :meth:`Method.train` (module docstring)."""


def training_method(name: str) -> type[Method]:
    """The class of a private (or non-private) training method: :data:`TRAINING` first, then :data:`REGISTRY`."""
    return TRAINING.methods.get(name) or REGISTRY.get(name)
