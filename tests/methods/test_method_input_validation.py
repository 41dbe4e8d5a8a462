"""Method classes and problems reject bad inputs with a ValueError naming the argument."""

from __future__ import annotations

import numpy as np
import pytest

from dpbench.methods import REGISTRY, Problem
from dpbench.methods.base import check_unit_ball

rng = np.random.default_rng(0)


def problem(X=None, y=None, n_classes=3, key="k"):
    X = rng.normal(size=(10, 4)) / 10 if X is None else X
    y = rng.integers(0, n_classes, len(X)) if y is None else y
    return Problem(key=key, variant="test", X_train=X, y_train=y, X_eval=X[:3], y_eval=y[:3], n_classes=n_classes)


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_classes=1), "n_classes must be an integer >= 2"),
    (dict(y=np.zeros(9, int)), r"y_train must have shape \(10,\)"),
    (dict(X=np.empty((0, 4)), y=np.empty(0, int)), "X_train must be 2-D and non-empty"),
])
def test_problem_structure(kwargs, match):
    with pytest.raises(ValueError, match=match):
        problem(**kwargs)


def test_unit_ball_and_finite_rows():
    X = rng.normal(size=(10, 4)) / 10
    check_unit_ball(problem(X=X, key="ok"))
    with pytest.raises(ValueError, match="every row of X_train needs ‖x‖ ≤ 1"):
        check_unit_ball(problem(X=X * 100, key="big"))
    bad = X.copy()
    bad[5, 1] = np.nan
    with pytest.raises(ValueError, match="X_train must hold only finite"):
        check_unit_ball(problem(X=bad, key="nan"))


@pytest.mark.parametrize("epsilon, delta, match", [
    (0.0, 0.0, "epsilon must be > 0"),
    (-1.0, 0.0, "epsilon must be > 0"),
    (float("nan"), 0.0, "epsilon must be > 0"),
    (float("inf"), 0.0, "epsilon must be finite"),
    (1.0, 1.0, r"delta must be in \[0, 1\)"),
    (1.0, -1e-5, r"delta must be in \[0, 1\)"),
])
def test_method_cells_reject_bad_budgets(epsilon, delta, match):
    m = REGISTRY.get("loss_perturbation")()
    with pytest.raises(ValueError, match=match):
        m.make_cell(problem(), 1e-3, epsilon, delta, 10, 0)
