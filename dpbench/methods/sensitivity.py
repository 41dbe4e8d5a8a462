"""Sensitivity methods on a trained L2-regularised softmax model (vdm2020 §2.1, §2.4).

Both rest on Lemma 1: the minimisers on neighbouring datasets (replace one example) satisfy
‖θ₁ − θ₂‖_F ≤ 2K/(Nλ), with K = √2 the Lipschitz constant of softmax cross-entropy for ‖x‖₂ ≤ 1.

* **Model sensitivity** (output perturbation, private training): θ + noise, once per release.
  δ = 0: p(B) ∝ exp(−β‖B‖_F), β = Nλε/(2K) (Alg. 1). δ > 0: Gaussian with the analytic-Gaussian
  σ = αΔ₂/√(2ε), Δ₂ = 2K/(Nλ) (Alg. 3).
* **Prediction sensitivity** (private prediction over B queries): logits θᵀx̂ + b per query; needs ‖x̂‖ ≤ 1.
  δ = 0: β = Nλε/(2KB) in C dimensions (Alg. 6, standard composition). δ > 0: σ = Δ₂ × the smaller of
  the standard- and advanced-composition per-query multipliers (Alg. 7, appendix form of σ, erratum 2).
"""

from __future__ import annotations

from dpbench.learn import LIPSCHITZ_K
from dpbench.methods.base import REGISTRY, Cell, Context, Method, Problem, accuracy_of_logits
from dpbench.methods.non_private import trained_softmax
from dpbench.privacy import analytic_gaussian_sigma, per_query_gaussian_multiplier, sample_l2_laplace


def model_sensitivity_noise(n: int, lam: float, epsilon: float, delta: float) -> tuple[str, float]:
    """(noise kind, scale) of model sensitivity: β = Nλε/(2K) for δ = 0 (Alg. 1), else the analytic-Gaussian
    σ = αΔ₂/√(2ε) with Δ₂ = 2K/(Nλ) (Alg. 3)."""
    if delta == 0:
        return "l2_laplace", n * lam * epsilon / (2 * LIPSCHITZ_K)
    return "gaussian_analytic", analytic_gaussian_sigma(epsilon, delta, sensitivity=2 * LIPSCHITZ_K / (n * lam))


def prediction_sensitivity_noise(n: int, lam: float, epsilon: float, delta: float, budget: int
                                 ) -> tuple[str, float, str]:
    """(noise kind, per-query scale, composition) of prediction sensitivity over ``budget`` queries:
    β = Nλε/(2KB) for δ = 0 (Alg. 6); else σ = Δ₂·min(standard, advanced multiplier) (Alg. 7)."""
    if delta == 0:
        return "l2_laplace", n * lam * epsilon / (2 * LIPSCHITZ_K * budget), "standard"
    rule = per_query_gaussian_multiplier(epsilon, delta, budget)
    return "gaussian_analytic", rule.multiplier * 2 * LIPSCHITZ_K / (n * lam), rule.composition


class _TrainedModelMethod(Method):
    tuned = "l2"

    def cell_params(self, problem, tuned, epsilon, delta):
        return {"l2": float(tuned), "gtol": self.settings["gtol"], "maxiter": self.settings["maxiter"]}

    def group_key(self, cell: Cell):
        return (cell.problem, cell.params)  # every cell of one fitted model is computed in one call

    def run_group(self, problem: Problem, cells: list[Cell], ctx: Context) -> list[dict]:
        p = cells[0].param
        theta = trained_softmax(problem, p["l2"], ctx, p["gtol"], p["maxiter"])
        logits = problem.X_eval @ theta
        return [self._evaluate(problem, theta, logits, cell, ctx.rng(cell.key)) for cell in cells]


@REGISTRY.register
class ModelSensitivity(_TrainedModelMethod):
    name = "model_sensitivity"
    label = "model sensitivity"
    kind = "training"
    depends_on = ("epsilon", "delta", "rep")

    def _evaluate(self, problem, theta, logits, cell, rng):
        kind, scale = model_sensitivity_noise(problem.n_train, cell.param["l2"], cell.epsilon, cell.delta)
        if kind == "l2_laplace":
            noise = sample_l2_laplace(rng, scale, theta.size).reshape(theta.shape)
        else:
            noise = rng.standard_normal(theta.shape) * scale
        acc = accuracy_of_logits(problem.X_eval @ (theta + noise), problem.y_eval)
        return {"accuracy": acc, "noise_kind": kind, "noise_scale": scale, "composition": "none"}


@REGISTRY.register
class PredictionSensitivity(_TrainedModelMethod):
    name = "prediction_sensitivity"
    label = "prediction sensitivity"
    kind = "prediction"
    depends_on = ("epsilon", "delta", "budget", "rep")

    def _evaluate(self, problem, theta, logits, cell, rng):
        kind, scale, comp = prediction_sensitivity_noise(problem.n_train, cell.param["l2"], cell.epsilon,
                                                         cell.delta, cell.budget)
        if kind == "l2_laplace":  # one independent draw per query (test point)
            noise = sample_l2_laplace(rng, scale, logits.shape[1], size=(logits.shape[0],))
        else:
            noise = rng.standard_normal(logits.shape) * scale
        acc = accuracy_of_logits(logits + noise, problem.y_eval)
        return {"accuracy": acc, "noise_kind": kind, "noise_scale": scale, "composition": comp}
