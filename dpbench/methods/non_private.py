"""The non-private baseline: L2-regularised softmax regression fitted with L-BFGS (vdm2020 §4.1)."""

from __future__ import annotations

import numpy as np

from dpbench.learn import SOLVER_ERROR_FRACTION, fit_softmax, sensitivity_grad_norm_tol
from dpbench.methods.base import REGISTRY, Cell, Context, Method, Problem, Setting, accuracy_of_logits
from dpbench.store import content_key


def fit_minimiser(X, y, n_classes: int, l2: float, maxiter: int,
                  error_fraction: float = SOLVER_ERROR_FRACTION) -> np.ndarray:
    """The L-BFGS fit of mean cross-entropy + (l2/2)‖θ‖²_F stopped at ‖∇J‖₂ ≤ η·K/N
    (:func:`dpbench.learn.sensitivity_grad_norm_tol`, η = ``error_fraction``): within (η/2)·2K/(Nλ) of the
    exact minimiser, the fit every sensitivity calibration of :mod:`dpbench.methods.sensitivity` and
    :mod:`dpbench.methods.loss_perturbation` covers."""
    return fit_softmax(X, y, n_classes, l2=l2, maxiter=maxiter,
                       grad_norm_tol=sensitivity_grad_norm_tol(X.shape[0], error_fraction))


def trained_softmax(problem: Problem, l2: float, ctx: Context, error_fraction: float, maxiter: int) -> np.ndarray:
    """The minimiser of mean cross-entropy + (l2/2)‖θ‖²_F on ``problem``, to within (η/2)·2K/(Nλ) of the exact
    one (stopping rule :func:`dpbench.learn.sensitivity_grad_norm_tol`, η = ``error_fraction``); trained
    once, cached on disk.

    Shared by the baseline, model sensitivity, prediction sensitivity and (as a warm start) loss
    perturbation: every ε, δ, B and repetition of those methods is evaluated from this one fit.
    """
    key = content_key({"artefact": "softmax-v2", "problem": problem.key, "l2": l2,
                       "error_fraction": error_fraction, "maxiter": maxiter})

    def compute():
        theta = fit_minimiser(problem.X_train, problem.y_train, problem.n_classes, l2, maxiter, error_fraction)
        return {"theta": np.asarray(theta)}

    return ctx.store.artefact(key, compute)["theta"]


#: the L-BFGS stopping rule and iteration cap of every method built on :func:`trained_softmax` (config ``lbfgs``)
LBFGS_SETTINGS = (
    Setting("error_fraction", "lbfgs", default=0.01, schema={"type": "number", "exclusiveMinimum": 0, "maximum": 1}),
    Setting("maxiter", "lbfgs", default=2000, schema={"type": "integer", "minimum": 1}),
)


@REGISTRY.register
class NonPrivate(Method):
    name = "non_private"
    label = "non-private"
    kind = "baseline"
    depends_on = ()
    tuned = "l2"
    settings_spec = LBFGS_SETTINGS
    style = dict(color="black", linestyle="--", marker=None)

    def cell_params(self, problem, tuned, epsilon, delta):
        return {"l2": float(tuned), "error_fraction": self.settings["error_fraction"],
                "maxiter": self.settings["maxiter"]}

    def train(self, X, y, n_classes, epsilon, delta, rng):
        """The non-private reference of a study that trains single models: L-BFGS on mean cross-entropy +
        (l2/2)‖θ‖² stopped by scipy's criteria (``gtol``, default 1e-5, and ``maxiter``) — nothing is released
        privately, so the solver-aware stopping rule of the grid's fits is not needed. No random draw."""
        s = self.settings
        return fit_softmax(X, y, n_classes, l2=s["l2"], gtol=s.get("gtol", 1e-5), maxiter=s["maxiter"]), {}

    def run_group(self, problem: Problem, cells: list[Cell], ctx: Context) -> list[dict]:
        out = []
        for cell in cells:
            p = cell.param
            theta = trained_softmax(problem, p["l2"], ctx, p["error_fraction"], p["maxiter"])
            out.append({"accuracy": accuracy_of_logits(problem.X_eval @ theta, problem.y_eval),
                        "noise_kind": "none", "noise_scale": 0.0})
        return out
