"""Any scikit-learn-style estimator with ``fit`` / ``predict`` and a privacy-budget parameter as a dpbench method
(docs/extending.md, "An estimator from another library"): diffprivlib's ``LogisticRegression(epsilon=…)``,
``GaussianNB``, or a researcher's own class.

    from dpbench.methods.estimator import register_estimator
    register_estimator("dpl_logreg", lambda epsilon, random_state: LogisticRegression(
        epsilon=epsilon, data_norm=1.0, fit_intercept=False, random_state=random_state),
        label="diffprivlib logistic regression")

Per cell the method builds a fresh estimator with the cell's ε (and δ, if the estimator takes one), seeds it from
the cell's random stream (``random_state``: an integer drawn from ``ctx.rng(cell.stream_key)``, so results are
identical across reruns and worker counts — provided the estimator draws every random number from its
``random_state``; ``dpbench check-plugin`` tests that), fits it on the training rows (‖x‖ ≤ 1, labels 0..C−1) and
records the accuracy of ``predict`` on the evaluation rows.

Privacy: the rows carry the estimator's **own** claim (``privacy_claim``: which library, which neighbouring
relation it states); dpbench does not re-derive it. Set ``data_norm``-like parameters to 1: dpbench's rows lie in
the unit ball, which the runner checks before any method trains.

``train`` (the membership study's and the audit's single-model hook) works for linear estimators: the fitted
``coef_`` becomes the (d, C) score matrix; ``intercept_`` must be zero (``fit_intercept=False``: dpbench's
features carry the bias as a constant feature).
"""

from __future__ import annotations

import inspect
import math
import sys
from typing import Callable

import numpy as np

from dpbench.methods.base import REGISTRY, Method, linear_scores

#: largest integer passed as ``random_state`` (NumPy's legacy RandomState takes seeds below 2**32)
SEED_BOUND = 2**32 - 1


def _accepts(make: Callable, name: str) -> bool:
    try:
        params = inspect.signature(make).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def register_estimator(name: str, make: Callable, *, label: str, epsilon: str = "epsilon",
                       delta: str | None = None, random_state: str | None = "random_state",
                       privacy_claim: str = "", style: dict | None = None, registry=REGISTRY) -> type[Method]:
    """Register a grid method ``name`` that trains ``make(**{epsilon: ε, delta: δ, random_state: seed})`` per cell
    (module docstring). ``make`` is the estimator class or a function returning an unfitted estimator;
    ``delta``: the name of its δ parameter (None: pure ε, the method's cells then do not depend on δ);
    ``random_state``: the name of its seed parameter (None if it has none: results are then not reproducible and
    ``dpbench check-plugin`` says so); ``privacy_claim``: what the estimator's documentation promises (recorded
    in every row). Returns the registered class (defined in the caller's module, so its code hash covers the
    caller's file)."""
    if not callable(make):
        raise TypeError(f"estimator method {name!r}: make must be a class or a function returning an estimator")
    if not _accepts(make, epsilon):
        raise ValueError(f"estimator method {name!r}: make takes no parameter {epsilon!r} (the privacy budget)")
    if delta is not None and not _accepts(make, delta):
        raise ValueError(f"estimator method {name!r}: make takes no parameter {delta!r}")
    seeded = random_state is not None and _accepts(make, random_state)
    claim = privacy_claim or f"as claimed by {getattr(make, '__qualname__', type(make).__name__)}"

    def build(eps: float, dlt: float, seed: int | None):
        kwargs = {epsilon: float(eps)}
        if delta is not None:
            kwargs[delta] = float(dlt)
        if seeded:
            kwargs[random_state] = seed
        return make(**kwargs)

    def run_group(self, problem, cells, ctx):
        out = []
        for cell in cells:
            seed = int(ctx.rng(cell.stream_key).integers(SEED_BOUND))
            est = build(cell.epsilon, cell.delta if cell.delta is not None else 0.0, seed)
            est.fit(problem.X_train, problem.y_train)
            predicted = np.asarray(est.predict(problem.X_eval))
            out.append({"accuracy": float(np.mean(predicted == problem.y_eval)), "privacy_claim": claim,
                        "seeded": seeded})
        return out

    def train(self, X, y, n_classes, epsilon_, delta_, rng):
        est = build(epsilon_, delta_, int(rng.integers(SEED_BOUND)))
        est.fit(X, y)
        coef = getattr(est, "coef_", None)
        if coef is None:
            raise ValueError(f"{name}: train needs a linear estimator (coef_ after fit); "
                             f"{type(est).__name__} has none")
        intercept = np.atleast_1d(getattr(est, "intercept_", 0.0))
        if np.any(intercept != 0):
            raise ValueError(f"{name}: the fitted intercept is not zero; build the estimator with "
                             f"fit_intercept=False (dpbench's features carry the bias as a constant feature)")
        coef = np.asarray(coef, dtype=np.float64)
        scores = linear_scores(coef.ravel(), n_classes) if coef.shape[0] == 1 else coef.T
        return scores, {"noise_scale": math.nan, "privacy_claim": claim}

    caller = sys._getframe(1).f_globals.get("__name__", __name__)
    cls = type(f"Estimator_{name}", (Method,), {
        "__module__": caller, "__doc__": f"{label}: a scikit-learn-style estimator ({claim}).",
        "name": name, "label": label, "kind": "training",
        "depends_on": ("epsilon", "delta", "rep") if delta is not None else ("epsilon", "rep"),
        "style": style, "unit_ball": True, "run_group": run_group, "train": train,
    })
    return registry.register(cls)
