"""Loss perturbation (objective perturbation; private training) — vdm2020 §2.2, Alg. 4/5, Thm 3/4.

θ_priv = argmin  mean CE + (l2/2)‖θ‖²_F + ⟨B, θ⟩/N, solved by L-BFGS (warm start: the non-private fit).

* ρ = 2LC/ε with L = 1/2 (Hessian bound of softmax CE for ‖x‖ ≤ 1) and C the number of classes; the
  algorithm form ρ/(2N)‖θ‖² is used (erratum 3), combined with the CV'd λ either as ``code_max``:
  l2 = max(ρ/N, λ) (the reference code, default) or ``paper_sum``: l2 = ρ/N + λ. Both are private: any extra
  convex regulariser on top of ρ/N keeps Theorem 3's Jacobian bound.
* δ = 0: p(B) ∝ exp(−β‖B‖_F), β = ε/(2K). δ > 0: Gaussian, σ = (K/ε)√(8 ln(2/δ) + 4ε) (Thm 4).
* Assumes the exact minimiser; L-BFGS runs to ``gtol`` (recorded).
"""

from __future__ import annotations

import numpy as np

from dpbench.learn import HESSIAN_BOUND_L, LIPSCHITZ_K, fit_softmax
from dpbench.methods.base import REGISTRY, Cell, Context, Method, Problem, accuracy_of_logits
from dpbench.methods.non_private import trained_softmax
from dpbench.privacy import sample_l2_laplace


def loss_perturbation_l2(rule: str, rho: float, n: int, lam: float) -> float:
    if rule == "code_max":
        return max(rho / n, lam)
    if rule == "paper_sum":
        return rho / n + lam
    raise ValueError(f"loss_perturbation.regularizer must be 'code_max' or 'paper_sum', got {rule!r}")


def loss_perturbation_noise(epsilon: float, delta: float, n_classes: int) -> tuple[str, float, float]:
    """(noise kind, scale, ρ): β = ε/(2K) for δ = 0 (Thm 3), σ = (K/ε)√(8 ln(2/δ) + 4ε) for δ > 0 (Thm 4);
    ρ = 2LC/ε in both cases."""
    rho = 2 * HESSIAN_BOUND_L * n_classes / epsilon
    if delta == 0:
        return "l2_laplace", epsilon / (2 * LIPSCHITZ_K), rho
    return "gaussian_kifer", LIPSCHITZ_K / epsilon * np.sqrt(8 * np.log(2 / delta) + 4 * epsilon), rho


@REGISTRY.register
class LossPerturbation(Method):
    name = "loss_perturbation"
    label = "loss perturbation"
    kind = "training"
    depends_on = ("epsilon", "delta", "rep")
    tuned = "l2"

    def cell_params(self, problem, tuned, epsilon, delta):
        rho = loss_perturbation_noise(epsilon, delta, problem.n_classes)[2]
        l2 = loss_perturbation_l2(self.settings["regularizer"], rho, problem.n_train, float(tuned))
        # the effective l2 is the key: CV values that collapse to the same objective share cells
        return {"l2_effective": l2, "gtol": self.settings["gtol"], "maxiter": self.settings["maxiter"]}

    def run_group(self, problem: Problem, cells: list[Cell], ctx: Context) -> list[dict]:
        out = []
        for cell in cells:
            p = cell.param
            theta0 = trained_softmax(problem, p["l2_effective"], ctx, p["gtol"], p["maxiter"])
            rng = ctx.rng(cell.key)
            kind, scale, _ = loss_perturbation_noise(cell.epsilon, cell.delta, problem.n_classes)
            if kind == "l2_laplace":
                noise = sample_l2_laplace(rng, scale, theta0.size).reshape(theta0.shape)
            else:
                noise = rng.standard_normal(theta0.shape) * scale
            theta = fit_softmax(problem.X_train, problem.y_train, problem.n_classes, l2=p["l2_effective"],
                                linear=noise / problem.n_train, theta0=theta0, gtol=p["gtol"], maxiter=p["maxiter"])
            out.append({"accuracy": accuracy_of_logits(problem.X_eval @ theta, problem.y_eval),
                        "noise_kind": kind, "noise_scale": scale, "composition": "none"})
        return out
