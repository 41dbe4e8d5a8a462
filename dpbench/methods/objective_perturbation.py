"""Objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011, Algorithm 2) under the norm-ball constraint of
wu2016 ch. 4 (Wu 2016, §4.4 "Model Accuracy", "Objective Perturbation"; Fig. 4.5;
docs/studies/wu2016.md#objective-perturbation).

**[EXTERNAL] reconstruction** — the thesis only names the method; the formulas below are Chaudhuri et al.'s
(JMLR 2011, Alg. 2 and Thm 9), generalised from |ℓ′| ≤ 1 to a ρ-Lipschitz loss, and run on the ball
‖w‖ ≤ R as the thesis does ("because we impose boundedness condition for linear regression, the technical
conditions of objective perturbation are satisfied", Wu 2016, §4.4).

Mechanism (replace-one neighbours, ‖x‖ ≤ 1, |y| ≤ 1; ρ and c from :mod:`.output_perturbation`):

1. ε′ = ε − log(1 + 2c/(nΛ) + c²/(n²Λ²)), with c the bound on the rank-one per-example Hessian
   (squared loss 2, logistic 1/4).
2. If ε′ > 0: Δ = 0. Else Δ = c/(n(e^{ε/4} − 1)) − Λ and ε′ = ε/2.
3. Draw b with density ∝ exp(−ε′‖b‖/(2ρ)) (‖b‖ ~ Gamma(d, 2ρ/ε′), uniform direction).
4. Return w = argmin_{‖w‖≤R} (1/n)Σℓ(w, z_i) + ((Λ + Δ)/2)‖w‖² + bᵀw/n (solved exactly).

Why ε-DP (sketch of Chaudhuri et al.'s proof): at the unconstrained optimum b is a bijective function of w,
b = −Σ∇ℓ(w, z_i) − n(Λ+Δ)w, so for neighbours b − b′ = ∇ℓ(w, z′) − ∇ℓ(w, z) has norm ≤ 2ρ (the density
ratio is ≤ e^{ε′}) and the Jacobian ratio is ≤ (1 + c/(n(Λ+Δ)))², which the ε − ε′ part (or the extra Δ)
pays for. Chaudhuri et al. state ρ = 1 (|ℓ′| ≤ 1); scaling the noise by ρ is the standard generalisation.
**Caveat** [EXTERNAL]: their proof is for the unconstrained problem; with the ball constraint the optimality
condition gains a normal-cone term μw, and the guarantee rests on the constrained analysis of Kifer, Smith &
Thakurta (COLT 2012) for convex domains. On the ball the gradient bound ρ = 2(1 + R) of the squared loss holds
at every feasible w, which is what the thesis refers to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpbench.methods.base import TRAINING
from dpbench.methods.output_perturbation import (ERMMethod, _pos, check_data, curvature, erm_ball, lipschitz,
                                                 logistic_ball_many)
from dpbench.privacy.mechanisms import sample_l2_laplace

__all__ = ["objective_perturbation_calibration", "ObjPertResult", "objective_perturbation"]


def objective_perturbation_calibration(epsilon: float, n: int, lam: float, c: float) -> tuple[float, float]:
    """(ε′, Δ) of Chaudhuri et al. Alg. 2 steps 1–2 (module docstring)."""
    epsilon, lam, c = _pos("epsilon", epsilon), _pos("lam", lam), _pos("c", c)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    eps_p = epsilon - math.log(1.0 + 2.0 * c / (n * lam) + c * c / (n * n * lam * lam))
    if eps_p > 0:
        return eps_p, 0.0
    return epsilon / 2.0, c / (n * math.expm1(epsilon / 4.0)) - lam


@dataclass(frozen=True)
class ObjPertResult:
    w: np.ndarray
    lam: float
    extra_lam: float      # Δ of step 2 (0 when ε′ > 0)
    epsilon_prime: float
    noise_scale: float    # 2ρ/ε′ (scale of ‖b‖'s Gamma distribution)


def objective_perturbation(loss: str, X, y, lam: float, R: float, epsilon: float,
                           rng: np.random.Generator, noise_factor: float = 1.0,
                           size: int | None = None) -> ObjPertResult:
    """ε-DP objective perturbation on ‖w‖ ≤ R (module docstring; [EXTERNAL] Chaudhuri et al. 2011 Alg. 2).
    ``noise_factor`` is FAULT INJECTION for the privacy audit's broken twins: b is multiplied by it (1 = the
    mechanism; the reported ``noise_scale`` stays the calibrated one). ``size`` K: K independent releases on
    the same data (``w`` (K, d); one draw of K noise vectors, solved together by
    :func:`~dpbench.methods.output_perturbation.logistic_ball_many` for the logistic loss), e.g. the trials of
    a privacy audit; None: one release (``w`` (d,))."""
    X, y = check_data(X, y, loss)
    n, d = X.shape
    R = _pos("R", R)
    eps_p, extra = objective_perturbation_calibration(epsilon, n, lam, curvature(loss))
    rho = lipschitz(loss, R)
    if size is None:
        b = float(noise_factor) * sample_l2_laplace(rng, eps_p / (2.0 * rho), d)
        w = erm_ball(loss, X, y, float(lam) + extra, R, b=b)
    else:
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError(f"size must be None or a positive integer, got {size!r}")
        B = float(noise_factor) * sample_l2_laplace(rng, eps_p / (2.0 * rho), d, (int(size),))
        w = (logistic_ball_many(X, y, float(lam) + extra, R, B) if loss == "logistic"
             else np.stack([erm_ball(loss, X, y, float(lam) + extra, R, b=b) for b in B]))
    return ObjPertResult(w, float(lam), extra, eps_p, 2.0 * rho / eps_p)


@TRAINING.register
class ObjectivePerturbation(ERMMethod):
    """:func:`objective_perturbation` with the logistic loss on the ball ‖w‖ ≤ R."""

    name = "objective_perturbation"
    label = "objective perturbation (CMS11)"
    mechanism = staticmethod(objective_perturbation)

    @staticmethod
    def noise_scale(r, epsilon):
        return r.noise_scale
