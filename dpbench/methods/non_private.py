"""The non-private baseline: L2-regularised softmax regression fitted with L-BFGS (vdm2020 §4.1)."""

from __future__ import annotations

import numpy as np

from dpbench.learn import fit_softmax
from dpbench.methods.base import REGISTRY, Cell, Context, Method, Problem, accuracy_of_logits
from dpbench.store import content_key


def trained_softmax(problem: Problem, l2: float, ctx: Context, gtol: float, maxiter: int) -> np.ndarray:
    """The minimiser of mean cross-entropy + (l2/2)‖θ‖²_F on ``problem``; trained once, cached on disk.

    Shared by the baseline, model sensitivity, prediction sensitivity and (as a warm start) loss
    perturbation: every ε, δ, B and repetition of those methods is evaluated from this one fit.
    """
    key = content_key({"artefact": "softmax", "problem": problem.key, "l2": l2, "gtol": gtol, "maxiter": maxiter})

    def compute():
        theta = fit_softmax(problem.X_train, problem.y_train, problem.n_classes, l2=l2, gtol=gtol, maxiter=maxiter)
        return {"theta": np.asarray(theta)}

    return ctx.store.artefact(key, compute)["theta"]


@REGISTRY.register
class NonPrivate(Method):
    name = "non_private"
    label = "non-private"
    kind = "baseline"
    depends_on = ()
    tuned = "l2"

    def cell_params(self, problem, tuned, epsilon, delta):
        return {"l2": float(tuned), "gtol": self.settings["gtol"], "maxiter": self.settings["maxiter"]}

    def run_group(self, problem: Problem, cells: list[Cell], ctx: Context) -> list[dict]:
        out = []
        for cell in cells:
            p = cell.param
            theta = trained_softmax(problem, p["l2"], ctx, p["gtol"], p["maxiter"])
            out.append({"accuracy": accuracy_of_logits(problem.X_eval @ theta, problem.y_eval),
                        "noise_kind": "none", "noise_scale": 0.0})
        return out
