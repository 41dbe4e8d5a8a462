"""``dpbench check-plugin FILE``: a method plugin run through every hook the harness calls, on a tiny problem, with
each violation of the contract reported in one line (docs/extending.md, "The contract of a method").

What is checked, in the order the harness uses the hooks:

1. **import and registration**: the module imports and registers at least one method (``@REGISTRY.register`` for
   a grid method, ``@TRAINING.register`` for a method that only trains single models); the registry's own checks
   (name, label, kind, settings) run at registration.
2. **settings**: ``from_config`` builds the method from the study config (the given config files, else
   config.yaml): a required setting missing from it is named.
3. **depends_on** holds only ``epsilon``, ``delta``, ``budget``, ``rep``.
4. **group_key on planning cells**: ``dpbench plan`` and the sharding call ``group_key`` on cells whose ``params``
   are empty (``()``, before any problem exists) and whose ``problem`` is a placeholder; it must not read
   ``cell.param[...]`` (``cell.param.get`` is fine) and must return something ``repr`` can print.
5. **cell_params** returns a dict of JSON values (it is hashed into the cell key).
6. **run_group** on the tiny problem (3 classes, 60 rows in the unit ball), the cells of a small grid grouped by
   ``group_key`` as the runner groups them: one JSON-serialisable record per cell, each with a finite
   ``accuracy`` in [0, 1].
7. **reproducibility**: the same cells computed again in a fresh cache with the same seed give identical records
   (every random draw from ``ctx.rng(cell.stream_key)``).
8. **train** (when the method implements it): on the tiny problem it returns a finite (d, C) score matrix and a
   record with ``noise_scale``, identical for two generators of the same seed, and it refuses a row outside the
   unit ball unless the class sets ``unit_ball = False``.
"""

from __future__ import annotations

import json
import math
import tempfile
from dataclasses import dataclass

import numpy as np

CHECK_SEED = 20261126


@dataclass
class Finding:
    method: str
    check: str
    ok: bool
    message: str = ""

    def line(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'} {self.method}: {self.check}" + (f": {self.message}" if self.message else "")


def toy_problem(n_train: int = 60, n_eval: int = 30, dim: int = 6, n_classes: int = 3):
    """Three Gaussian classes with every row scaled into the unit ball (what the runner guarantees a method)."""
    from dpbench.methods import Problem

    rng = np.random.default_rng(CHECK_SEED)
    centres = rng.normal(size=(n_classes, dim)) * 2

    def part(n):
        y = rng.integers(0, n_classes, size=n)
        X = centres[y] + rng.normal(size=(n, dim))
        X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0) * 1.0001
        return X, y.astype(np.int64)

    (Xt, yt), (Xe, ye) = part(n_train), part(n_eval)
    return Problem(key="check-plugin-toy", variant="toy:check-plugin", X_train=Xt, y_train=yt, X_eval=Xe,
                   y_eval=ye, n_classes=n_classes)


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _json_ok(value) -> bool:
    try:
        json.dumps(value, allow_nan=True)
        return True
    except (TypeError, ValueError):
        return False


def _run_cells(method, problem, cells, seed: int) -> list[dict]:
    """The cells' records as the runner computes them: grouped by ``group_key``, one ``run_group`` per group,
    in a fresh cache."""
    from dpbench.methods import Context
    from dpbench.store import Store

    groups: dict = {}
    for c in cells:
        groups.setdefault(repr(method.group_key(c)), []).append(c)
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="dpbench-check-plugin-") as tmp:
        ctx = Context(store=Store(tmp), seed=seed)
        for group in groups.values():
            records = method.run_group(problem, list(group), ctx)
            if not isinstance(records, list) or len(records) != len(group):
                n = len(records) if isinstance(records, list) else type(records).__name__
                raise _ContractError(f"returned {n} records for {len(group)} cells (one dict per cell, in order)")
            for c, r in zip(group, records):
                out[c.key] = r
    return [out[c.key] for c in cells]


class _ContractError(Exception):
    pass


def _grid_cells(method, problem):
    """The cells of a small grid: ε ∈ {0.5, 2}, δ ∈ {0, 1e-5}, B ∈ {1, 10}, repetitions 0 and 1 (points the method
    does not support are left out, as the runner leaves them out)."""
    tuned = 1e-3 if method.tuned else None
    cells = {}
    for e in (0.5, 2.0):
        for d in (0.0, 1e-5):
            for b in (1, 10):
                if method.supports(e, d, b):
                    continue
                for r in (0, 1):
                    c = method.make_cell(problem, tuned, e, d, b, r)
                    cells.setdefault(c.key, c)
    return list(cells.values())


def check_grid_method(cls, cfg: dict, prefix: str = "studies.vdm2020") -> list[Finding]:
    """Every check of a grid method (module docstring, 2-8)."""
    from dpbench.methods import Cell, Method

    name = cls.name
    found: list[Finding] = []

    def add(check, ok, message=""):
        found.append(Finding(name, check, ok, message))
        return ok

    try:
        method = cls.from_config(cfg, prefix)
    except Exception as exc:  # noqa: BLE001 - a plugin may raise anything: report it
        add("settings", False, _error(exc))
        return found
    add("settings", True)
    bad = [d for d in cls.depends_on if d not in ("epsilon", "delta", "budget", "rep")]
    if not add("depends_on", not bad, f"unknown entries {bad}; allowed: epsilon, delta, budget, rep" if bad else ""):
        return found
    try:
        keys = []
        for e, d, b in ((1.0, 0.0, 1), (1.0, 1e-5, 10)):
            for r in (0, 1):
                cell = Cell(method=name, problem="p", params=(), epsilon=e, delta=d, budget=b,
                            rep=r if "rep" in cls.depends_on else None)
                keys.append(repr(method.group_key(cell)))
        add("group_key on planning cells", True)
    except Exception as exc:  # noqa: BLE001
        add("group_key on planning cells", False,
            f"{_error(exc)} — the planner calls group_key on cells with params == () and a placeholder problem; "
            f"use only cell.epsilon, cell.delta, cell.budget, cell.rep (or cell.param.get(...))")
    problem = toy_problem()
    try:
        params = method.cell_params(problem, 1e-3 if method.tuned else None, 1.0, 0.0)
        ok = isinstance(params, dict) and all(isinstance(k, str) for k in params) and _json_ok(params)
        if not add("cell_params", ok, "" if ok else f"must return a dict of str keys and JSON values, got {params!r}"):
            return found
        cells = _grid_cells(method, problem)
    except Exception as exc:  # noqa: BLE001
        add("cell_params", False, _error(exc))
        return found
    try:
        first = _run_cells(method, problem, cells, CHECK_SEED)
    except _ContractError as exc:
        add("run_group", False, str(exc))
        return found
    except Exception as exc:  # noqa: BLE001
        add("run_group", False, f"raised {_error(exc)} on the tiny problem ({len(cells)} cells)")
        return found
    problems = []
    for c, r in zip(cells, first):
        where = f"cell ε={c.epsilon} δ={c.delta} B={c.budget} rep={c.rep}"
        if not isinstance(r, dict):
            problems.append(f"{where}: a record must be a dict, got {type(r).__name__}")
        elif not isinstance(r.get("accuracy"), (int, float)) or not (0.0 <= float(r["accuracy"]) <= 1.0) \
                or not math.isfinite(float(r["accuracy"])):
            problems.append(f"{where}: 'accuracy' must be a finite number in [0, 1], got {r.get('accuracy')!r}")
        elif not _json_ok(r):
            problems.append(f"{where}: the record must be JSON-serialisable (it is cached as JSON)")
    if not add("run_group", not problems, "; ".join(problems[:2]) + (f" (+{len(problems) - 2} more)"
                                                                     if len(problems) > 2 else "")):
        return found
    try:
        again = _run_cells(method, problem, cells, CHECK_SEED)
        diff = [(c, a, b) for c, a, b in zip(cells, first, again)
                if json.dumps(a, sort_keys=True, default=str) != json.dumps(b, sort_keys=True, default=str)]
        add("reproducibility", not diff,
            "" if not diff else f"two runs with the same seed differ ({len(diff)} of {len(cells)} cells, e.g. "
                                f"accuracy {diff[0][1].get('accuracy')} vs {diff[0][2].get('accuracy')}): draw "
                                f"every random number from ctx.rng(cell.stream_key)")
    except Exception as exc:  # noqa: BLE001
        add("reproducibility", False, _error(exc))
    if cls.train is not Method.train:
        found += check_train(method)
    return found


def check_train(method) -> list[Finding]:
    """The single-model hook the membership study and the audit call (module docstring, 8)."""
    name = method.name
    problem = toy_problem()
    X, y, C = problem.X_train, problem.y_train, problem.n_classes
    if getattr(method, "binary_only", False):
        y, C = (y > 0).astype(np.int64), 2
    try:
        out = method.train(X, y, C, 1.0, 1e-5, np.random.default_rng(CHECK_SEED))
        scores, record = out
        scores = np.asarray(scores)
    except Exception as exc:  # noqa: BLE001
        return [Finding(name, "train", False, f"raised {_error(exc)} (it must return (scores, record))")]
    problems = []
    if scores.shape != (X.shape[1], C):
        problems.append(f"scores must have shape (d, C) = {(X.shape[1], C)}, got {scores.shape}")
    elif not np.all(np.isfinite(scores)):
        problems.append("scores hold non-finite values")
    if not isinstance(record, dict) or "noise_scale" not in record:
        problems.append("the record must be a dict with at least 'noise_scale'")
    found = [Finding(name, "train", not problems, "; ".join(problems))]
    if problems:
        return found
    again = np.asarray(method.train(X, y, C, 1.0, 1e-5, np.random.default_rng(CHECK_SEED))[0])
    found.append(Finding(name, "train reproducibility", bool(np.array_equal(scores, again)),
                         "" if np.array_equal(scores, again) else
                         "two generators of the same seed gave different models: draw every random number from rng"))
    if getattr(method, "unit_ball", True):
        outside = X.copy()
        outside[0] *= 3.0 / np.linalg.norm(outside[0])
        try:
            method.train(outside, y, C, 1.0, 1e-5, np.random.default_rng(CHECK_SEED))
            found.append(Finding(name, "train input check", False,
                                 "a row of norm 3 was accepted: call the base class's checks (do not override "
                                 "check_training_input) or set unit_ball = False if the calibration needs no bound"))
        except ValueError:
            found.append(Finding(name, "train input check", True))
        except Exception as exc:  # noqa: BLE001
            found.append(Finding(name, "train input check", False, f"raised {_error(exc)}, not a ValueError"))
    return found


def check_plugin(entry: str, load_config=None) -> list[Finding]:
    """Import the plugin ``entry`` (a ``.py`` file or a module name) and check every method it registers;
    ``load_config``: a callable returning the configuration whose ``studies.vdm2020`` block gives the methods'
    settings (default: config.yaml), called after the plugin is imported (a config may list the plugin too)."""
    from dpbench.config import DEFAULT_CONFIG_PATH, ConfigError
    from dpbench.methods import REGISTRY, TRAINING
    from dpbench.studies.extensions import load_plugins

    before = {id(c) for c in (*REGISTRY.methods.values(), *TRAINING.methods.values())}
    try:
        load_plugins({"plugins": [entry]})
    except ConfigError as exc:
        return [Finding("-", "import", False, str(exc).removeprefix("invalid config: plugins[0]: "))]
    grid = [c for c in REGISTRY.methods.values() if id(c) not in before]
    train_only = [c for c in TRAINING.methods.values() if id(c) not in before]
    if not grid and not train_only:
        return [Finding("-", "registration", False,
                        "the module registered no method: decorate the class with @REGISTRY.register (a grid "
                        "method) or @TRAINING.register (a method that only trains single models)")]
    if load_config is None:
        from dpbench.studies import load_config as read

        config = read(DEFAULT_CONFIG_PATH)
    else:
        config = load_config()
    cfg = (config.get("studies") or {}).get("vdm2020") or {}
    found = [Finding("-", "import", True, f"{len(grid) + len(train_only)} method(s): "
                                          f"{', '.join(c.name for c in (*grid, *train_only))}")]
    for cls in grid:
        found += check_grid_method(cls, cfg)
    for cls in train_only:
        try:
            method = cls.from_config(cfg, "studies.vdm2020")
        except Exception as exc:  # noqa: BLE001
            found.append(Finding(cls.name, "settings", False, _error(exc)))
            continue
        found.append(Finding(cls.name, "settings", True))
        found += check_train(method)
    return found
