"""Loss perturbation (objective perturbation; private training) — van der Maaten & Hannun 2020, §3.1 Eq. 3 and App. B.2 (Alg. 4/5, Thm 3/4).

θ_priv = argmin  mean CE + (l2/2)‖θ‖²_F + ⟨B, θ⟩/N, solved by L-BFGS (warm start: the non-private fit).

* ρ = 2LC/ε with L = 1/2 (Hessian bound of softmax CE for ‖x‖ ≤ 1) and C the number of classes; the
  algorithm form ρ/(2N)‖θ‖² is used (erratum 3), combined with the CV'd λ either as ``code_max``:
  l2 = max(ρ/N, λ) (the reference code, default) or ``paper_sum``: l2 = ρ/N + λ. Both are private: any extra
  convex regulariser on top of ρ/N keeps Theorem 3's Jacobian bound.
* **Neighbouring relation.** The privacy loss splits into a Jacobian term and a noise-density term. The
  Jacobian term is ≤ C·ln(1 + L/ρ) ≤ ε/2 for either relation: with H = Σ_{other records} ∇²ℓ + Nl2·I ⪰ ρI and
  the changed record's Hessian E (rank ≤ C, eigenvalues ≤ L), det(H + E)/det(H + E′) ≤ det(I + H⁻¹E) ≤
  (1 + L/ρ)^C. The noise term depends on ‖b_D − b_D′‖, the difference of the records' loss gradients: ≤ K
  when one record is added or removed (the relation of Thm 3's proof, vdm2020 Appendix B.2) but ≤ **2K**
  when one record is replaced (the relation of the paper's own privacy definition, Eq. 1). Hence:

  - ``neighbouring: replace_one`` (default): the noise is calibrated to 2K — δ = 0: p(B) ∝ exp(−β‖B‖_F),
    β = ε/(4K); δ > 0: σ = (2K/ε)√(8 ln(2/δ) + 4ε) (Thm 4 with K → 2K; its bound is homogeneous in K) — raised,
    where it is not enough, to the least σ of the proved bound :func:`loss_perturbation_gaussian_loss_bound`
    (Thm 4's one-dimensional Gaussian tail treats the θ-dependent gradient difference as fixed; the proved bound
    covers it for C ≤ 10 with room to spare, 0.84ε at most, but not for C ≳ 15 classes, e.g. a user dataset).
  - ``neighbouring: add_remove`` (the paper's calibration, β = ε/(2K), σ = (K/ε)√(8 ln(2/δ) + 4ε)): ε-DP
    for add/remove but only **1.5ε**-DP for replace-one at δ = 0 (ε/2 + 2·ε/2); the rows' ``epsilon_achieved``
    holds the replace-one value (:func:`loss_perturbation_epsilon`).
* **Inexact minimiser.** Thm 3 is for the exact minimiser. L-BFGS stops at ‖∇J‖₂ ≤ η·K/N
  (:func:`dpbench.learn.sensitivity_grad_norm_tol`), so the release is within (η/2)·2K/(N·l2) of the exact
  perturbed minimiser — η/2 (0.5% by default) of the record-level sensitivity of that minimiser. The bound is
  recorded in every row (``solver_error_bound``); it is a stated approximation, not folded into ε.
* **Lockstep solves.** The cells of one (ε, δ) and block of ``LOCKSTEP_REPS`` repetitions (every tuning value
  of that block included) form one group; the cells of one effective L2 in it are solved together by
  :func:`dpbench.learn.fit_softmax_lockstep` — one GEMM per evaluation for all of them, each with its own noise,
  warm start and the same stopping rule ‖∇J‖₂ ≤ τ = η·K/N, certified by a float64 gradient. The noise of each
  cell is drawn from the cell's own stream exactly as by :func:`loss_perturbation_fit`.
* **float32 (default; ``lbfgs.float32: false`` for float64 only).** The iterations run in single precision
  until the gradient is within 30τ and finish in float64. Privacy: only a float64 gradient ‖∇J(θ̂)‖₂ ≤ τ stops
  a model, so ‖θ̂ − θ*‖ ≤ τ/λ — the certificate, and so the privacy statement above, is that of the float64
  solver; the released θ differs from a float64-only solve by at most 2τ/λ (both within τ/λ of θ*).
  Reproducibility rule: single-precision GEMMs are not batch-invariant (a row's bits depend on its position
  and on the batch size), so every cell has a fixed slot — its repetition mod ``LOCKSTEP_REPS`` — in a
  float32 stack of ``LOCKSTEP_REPS`` models whose shape never changes, and the solve runs on one BLAS thread.
  A cell's θ is then a function of the cell alone (noise, L2, warm start, slot), bit for bit: the same whichever
  cells of its group are computed with it (a resumed run with part of the group cached, a shard, a cell shared
  by two figures) and whatever the number of workers (tested). float64 has the same property (packed
  batches; dgemm rows are position-independent on one thread).
* **Preconditioning (default; ``lbfgs.precondition: false`` to turn off).** The solves of one L2 iterate in
  coordinates whitened by (A ⊗ B + l2·I), the Kronecker-factored curvature at the non-private fit
  (:func:`dpbench.methods.non_private.softmax_curvature_at_fit`): 2.5-5x fewer iterations on MNIST; the stopping
  rule tests the θ-gradient, so the certificate is unchanged; each model is transformed on its own
  (batch-invariant).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dpbench.learn import (HESSIAN_BOUND_L, LIPSCHITZ_K, fit_softmax, fit_softmax_lockstep,
                           sensitivity_grad_norm_tol)
from dpbench.methods.base import REGISTRY, Cell, Context, Method, Problem, Setting, accuracy_of_logits
from dpbench.methods.non_private import LBFGS_SETTINGS, fit_minimiser, softmax_curvature_at_fit, trained_softmax
from dpbench.methods.sensitivity import solver_record
from dpbench.privacy import sample_gaussian, sample_l2_laplace
from dpbench.privacy.search import largest_passing

NEIGHBOURING = ("replace_one", "add_remove")
#: repetitions whose cells are computed in one group (one lockstep solve per batch)
LOCKSTEP_REPS = 10


def loss_perturbation_l2(rule: str, rho: float, n: int, lam: float) -> float:
    if rule == "code_max":
        return max(rho / n, lam)
    if rule == "paper_sum":
        return rho / n + lam
    raise ValueError(f"loss_perturbation.regularizer must be 'code_max' or 'paper_sum', got {rule!r}")


def _gradient_difference(neighbouring: str) -> float:
    if neighbouring not in NEIGHBOURING:
        raise ValueError(f"neighbouring must be one of {NEIGHBOURING}, got {neighbouring!r}")
    return 2 * LIPSCHITZ_K if neighbouring == "replace_one" else LIPSCHITZ_K


def _kifer_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    return sensitivity / epsilon * math.sqrt(8 * math.log(2 / delta) + 4 * epsilon)


CALIBRATIONS = ("source", "tight")


@functools.lru_cache(maxsize=256)
def _chi_radius(n_classes: int, delta: float) -> float:
    """t with P[‖Π B‖_F > σt] ≤ δ for the part Π B of the Gaussian noise B (entries N(0, σ²)) that can meet the
    gradient difference of a replaced record (:func:`loss_perturbation_gaussian_loss_bound`): the smaller of the
    χ_{C−1} quantile at δ/2 (each record's own projection (B x)·(1^⊥), a union bound over the two records) and the
    χ_{2(C−1)} quantile at δ (the projection onto the span of both). Both are fixed by (C, δ) before any data."""
    from scipy.stats import chi

    C = int(n_classes)
    return float(min(chi.isf(delta / 2, C - 1), chi.isf(delta, 2 * (C - 1))))


def loss_perturbation_gaussian_loss_bound(sigma: float, rho: float, n_classes: int, delta: float) -> float:
    """A proved ε at ``delta`` for loss perturbation with Gaussian noise B (entries N(0, σ²)) and a regulariser
    of curvature ⪰ ρ, for datasets that differ in one **replaced** record (‖x‖ ≤ 1): the privacy loss exceeds it
    only on an event of probability ≤ δ.

    The loss at an output θ is a noise term plus a Jacobian term (Chaudhuri et al. 2011, Thm 9; vdm2020 App. B.2).
    The noise term is (⟨B, Δ⟩ + ‖Δ‖²/2)/σ² with Δ = x′g′ᵀ − xgᵀ the difference of the two records' loss gradients
    at θ (g = p − e_y ⊥ 𝟙, ‖Δ‖ ≤ a + a′, a = ‖g‖‖x‖ ≤ K = √2). Δ depends on θ, hence on B — a one-dimensional
    Gaussian tail for ⟨B, Δ⟩, as in Kifer, Smith & Thakurta (2012, Thm 2), treats it as fixed. Here: ⟨B, xgᵀ⟩ =
    gᵀ P Bᵀx ≤ ‖g‖‖P Bᵀx‖ with P the projection on 𝟙^⊥, and ‖P Bᵀx‖/(σ‖x‖) ~ χ_{C−1} whatever θ is, so
    ⟨B, Δ⟩ ≤ (a + a′)σt outside an event of probability ≤ δ (:func:`_chi_radius`). The Jacobian term is ≤ tr(H⁻¹E)
    ≤ min(1 − 1/C, 2 − a²)/ρ, E the curvature of the record with gradient norm a (as at δ = 0,
    :func:`loss_perturbation_privacy_loss_bound`). So the loss is at most

        max_{a ∈ [0, K]}  (a + K)t/σ + (a + K)²/(2σ²) + min(1 − 1/C, 2 − a²)/ρ,

    computed exactly here (increasing while the cap binds, then a quadratic in a)."""
    if not (0 < delta < 1):
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    return loss_perturbation_gaussian_loss_bound_at(sigma, rho, n_classes, _chi_radius(int(n_classes), float(delta)))


def loss_perturbation_gaussian_loss_bound_at(sigma: float, rho: float, n_classes: int, t: float) -> float:
    """:func:`loss_perturbation_gaussian_loss_bound` where the noise's projection is ≤ σt (the bound on the event;
    exposed for the brute-force tests, which check it on each draw with that draw's own t)."""
    K, C = LIPSCHITZ_K, int(n_classes)
    if not (sigma > 0 and rho > 0 and C >= 2 and t >= 0):
        raise ValueError(f"need sigma, rho > 0, n_classes >= 2 and t >= 0, got {sigma!r}, {rho!r}, {n_classes!r}, "
                         f"{t!r}")
    c0 = 1.0 - 1.0 / C

    def f(a):
        return (a + K) * t / sigma + (a + K) ** 2 / (2 * sigma * sigma) + min(c0, 2.0 - a * a) / rho

    a1 = math.sqrt(2.0 - c0)                      # below: the cap binds and f increases; above: the 2 − a² piece
    cands = [a1, K]
    curv = 1.0 / (2 * sigma * sigma) - 1.0 / rho  # the quadratic coefficient of the 2 − a² piece
    if curv < 0:
        a_star = (t / sigma + K / (sigma * sigma)) / (-2 * curv)
        if a1 < a_star < K:
            cands.append(a_star)
    return float(max(f(a) for a in cands))


@functools.lru_cache(maxsize=256)
def loss_perturbation_gaussian_sigma(epsilon: float, delta: float, n_classes: int) -> float:
    """The least σ whose :func:`loss_perturbation_gaussian_loss_bound` at ρ = 2LC/ε is ≤ ε (bisection in 1/σ; the
    returned σ passes): the tight calibration of loss perturbation for δ > 0, and the floor of the source's."""
    eps, C = float(epsilon), int(n_classes)
    rho = 2 * HESSIAN_BOUND_L * C / eps
    hi = _kifer_sigma(2 * LIPSCHITZ_K, eps, delta)
    while loss_perturbation_gaussian_loss_bound(hi, rho, C, delta) > eps:
        hi *= 2.0
    return 1.0 / largest_passing(lambda v: loss_perturbation_gaussian_loss_bound(1.0 / v, rho, C, delta) <= eps,
                                 1.0 / hi, 1e3 / hi, rel_tol=1e-13)


def loss_perturbation_noise(epsilon: float, delta: float, n_classes: int, neighbouring: str = "replace_one",
                            calibration: str = "source") -> tuple[str, float, float]:
    """(noise kind, scale, ρ) for (ε, δ) under ``neighbouring`` (module docstring): β = ε/(2Δ_b) for δ = 0
    (Thm 3), σ = (Δ_b/ε)√(8 ln(2/δ) + 4ε) for δ > 0 (Thm 4), with Δ_b = 2K (replace one) or K (add/remove);
    ρ = 2LC/ε in both cases. ``calibration: tight`` (δ = 0, replace one only): the same ρ and the largest β
    whose proved replace-one bound :func:`loss_perturbation_privacy_loss_bound` is ≤ ε
    (:func:`loss_perturbation_tight_beta`)."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}")
    if not 0 <= delta < 1:
        raise ValueError(f"delta must lie in [0, 1), got {delta!r}")
    if calibration not in CALIBRATIONS:
        raise ValueError(f"loss perturbation calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    grad_diff = _gradient_difference(neighbouring)
    rho = 2 * HESSIAN_BOUND_L * n_classes / epsilon
    if calibration == "tight":
        if neighbouring != "replace_one":
            raise ValueError("loss_perturbation_tight: the tight calibration is for neighbouring: replace_one only "
                             f"(got {neighbouring!r}); use loss_perturbation")
        if delta == 0:
            return "l2_laplace", loss_perturbation_tight_beta(epsilon, n_classes), rho
        return "gaussian", loss_perturbation_gaussian_sigma(epsilon, delta, n_classes), rho
    if delta == 0:
        return "l2_laplace", epsilon / (2 * grad_diff), rho
    sigma = _kifer_sigma(grad_diff, epsilon, delta)
    if neighbouring == "replace_one" and loss_perturbation_gaussian_loss_bound(sigma, rho, n_classes, delta) > epsilon:
        # Kifer's σ is not proved for this many classes (C ≳ 15): the least σ that is
        return "gaussian", loss_perturbation_gaussian_sigma(epsilon, delta, n_classes), rho
    return "gaussian_kifer", sigma, rho


def loss_perturbation_privacy_loss_bound(beta: float, rho: float, n_classes: int) -> float:
    """An upper bound, over **every** pair of datasets that differ in one replaced record (‖x‖ ≤ 1) and every
    output θ, on the privacy loss of loss perturbation with L2-Laplace noise p(B) ∝ exp(−β‖B‖_F) and a
    regulariser whose curvature is ⪰ ρ (any effective l2 with N·l2 ≥ ρ: both of vdm2020's rules).

    The loss is a noise term plus a Jacobian term (Chaudhuri et al. 2011, Thm 9; vdm2020 App. B.2). Let x
    (label y, softmax output p at θ, ‖x‖ ≤ 1) be the record whose curvature enters the Jacobian. Its gradient
    (p − e_y) ⊗ x has norm a ≤ ‖p − e_y‖ ≤ K = √2, its curvature E = (diag p − ppᵀ) ⊗ xxᵀ has trace ≤ 1 − ‖p‖².
    Noise term: β‖∇ℓ(x) − ∇ℓ(x′)‖ ≤ β(a + K). Jacobian term: log det(I + H⁻¹E) ≤ tr(H⁻¹E) ≤ (1 − ‖p‖²)/ρ,
    H ⪰ ρI. With s = 1 − p_y and u = ‖p − e_y‖²: 1 − ‖p‖² = 2s − u ≤ 2 − a² (s ≤ 1, a² ≤ u) and
    1 − ‖p‖² ≤ 1 − 1/C. So the loss is at most

        max_{a ∈ [0, K]}  β(a + K) + min(1 − 1/C, 2 − a²)/ρ,

    computed exactly here: increasing (linear) while the cap 1 − 1/C binds, then concave with its stationary
    point at a = βρ/2 (clipped to [√(1 + 1/C), K]); at a = K the Jacobian term vanishes and the noise term is
    2Kβ."""
    K, C = LIPSCHITZ_K, int(n_classes)
    if not (beta > 0 and rho > 0 and C >= 2):
        raise ValueError(f"beta and rho must be > 0 and n_classes >= 2, got {beta!r}, {rho!r}, {n_classes!r}")
    c0 = 1.0 - 1.0 / C

    def g(a):
        return beta * (a + K) + min(c0, 2.0 - a * a) / rho

    a1 = math.sqrt(2.0 - c0)                      # below: the curvature cap c0 binds (g increases); above: 2 − a²
    a_star = min(max(beta * rho / 2.0, a1), K)    # the stationary point of the concave piece, clipped
    at_k = 2.0 * K * beta                         # g(K) exactly: the noise term alone (2 − K² = 0)
    return float(max(g(a1), g(a_star) if a_star < K else at_k, at_k))


def loss_perturbation_epsilon_bound(epsilon: float, n_classes: int, noise_factor: float = 1.0) -> float:
    """:func:`loss_perturbation_privacy_loss_bound` of loss perturbation calibrated for ε with δ = 0
    (``replace_one``: β = ε/(4K), ρ = 2LC/ε) and its noise scale multiplied by ``noise_factor`` (1: the
    method itself; 0.5: the audit's ×0.5 twin): a replace-one ε over every pair. At C = 10 it gives 0.525ε for
    the method (the sources' Jacobian budget ε/2 is loose) and exactly ε for the ×0.5 twin (C ≥ 8): that twin is
    still ε-DP on every pair and no audit can catch it; ×0.1 gives 5ε."""
    f = float(noise_factor)
    if not (epsilon > 0 and f > 0):
        raise ValueError(f"epsilon and noise_factor must be > 0, got {epsilon!r}, {noise_factor!r}")
    eps = float(epsilon)
    return loss_perturbation_privacy_loss_bound(eps / (4 * LIPSCHITZ_K * f), 2 * HESSIAN_BOUND_L * n_classes / eps,
                                                n_classes)


@functools.lru_cache(maxsize=256)
def loss_perturbation_tight_beta(epsilon: float, n_classes: int) -> float:
    """The tight calibration of loss perturbation (δ = 0, replace one): ρ = 2LC/ε as the source's, and the
    largest β (least noise) with :func:`loss_perturbation_privacy_loss_bound` (β, ρ) ≤ ε, by bisection between
    the source's β = ε/(4K) (bound ≤ ε for every C) and ε/(2K) (the noise term alone reaches ε at a = K); the
    lower end of the final bracket is returned, so the bound holds. At C ≥ 8 it is ε/(2K) exactly — half the
    source's noise (the Jacobian term vanishes where the noise term is largest); fewer classes leave less:
    noise × 0.622 at C = 2, 0.584 at C = 3, 0.528 at C = 5 (the ratios do not depend on ε)."""
    eps, C = float(epsilon), int(n_classes)
    rho = 2 * HESSIAN_BOUND_L * C / eps
    lo, hi = eps / (4 * LIPSCHITZ_K), eps / (2 * LIPSCHITZ_K)
    if loss_perturbation_privacy_loss_bound(lo, rho, C) > eps:   # cannot happen: the source's proof covers it
        raise ArithmeticError(f"loss perturbation: the source calibration's bound exceeds eps = {eps} at C = {C}")
    return largest_passing(lambda b: loss_perturbation_privacy_loss_bound(b, rho, C) <= eps, lo, hi, rel_tol=1e-15)


def loss_perturbation_epsilon(epsilon: float, delta: float, neighbouring: str, calibration: str = "source",
                              n_classes: int | None = None) -> float:
    """The replace-one ε of loss perturbation calibrated with :func:`loss_perturbation_noise` for (ε, δ) under
    ``neighbouring``: ε itself for ``replace_one``; for ``add_remove`` the Jacobian half ε/2 plus the noise
    term at gradient difference 2K — 1.5ε for δ = 0, and for δ > 0 ε/2 + ε_n/2 with ε_n solving
    (2K/ε_n)√(8 ln(2/δ) + 4ε_n) = σ (Thm 4's bound, same δ). ``calibration: tight``: the proved bound at the
    tight β (≤ ε; needs ``n_classes``)."""
    from scipy.optimize import brentq

    _gradient_difference(neighbouring)
    if calibration == "tight":
        kind, scale, rho = loss_perturbation_noise(epsilon, delta, n_classes, neighbouring, "tight")
        if delta == 0:
            return loss_perturbation_privacy_loss_bound(scale, rho, n_classes)
        return loss_perturbation_gaussian_loss_bound(scale, rho, n_classes, delta)
    if neighbouring == "replace_one":
        return float(epsilon)
    if delta == 0:
        return 1.5 * float(epsilon)
    sigma = _kifer_sigma(LIPSCHITZ_K, epsilon, delta)
    eps_n = brentq(lambda e: _kifer_sigma(2 * LIPSCHITZ_K, e, delta) - sigma, 1e-9, 1e9, xtol=1e-12, rtol=1e-12)
    kifer = float(epsilon) / 2 + eps_n / 2
    if n_classes is None:
        return kifer
    # the proved replace-one bound at the paper's σ and ρ, where it is larger than Kifer's one-dimensional value
    return max(kifer, loss_perturbation_gaussian_loss_bound(sigma, 2 * HESSIAN_BOUND_L * n_classes / epsilon,
                                                            n_classes, delta))


def loss_perturbation_fit(X, y, n_classes: int, l2_effective: float, epsilon: float, delta: float, rng, theta0,
                          *, neighbouring: str = "replace_one", error_fraction: float, maxiter: int,
                          calibration: str = "source") -> tuple:
    """θ_priv = argmin mean CE + (l2_effective/2)‖θ‖² + ⟨B, θ⟩/N (module docstring), B drawn from ``rng`` with
    the calibration of :func:`loss_perturbation_noise`, L-BFGS warm-started at ``theta0`` (the non-private fit
    at the same l2) and stopped by :func:`dpbench.learn.sensitivity_grad_norm_tol`. Returns
    ``(θ_priv, noise kind, scale)``."""
    n = X.shape[0]
    theta0 = np.asarray(theta0)
    noise, kind, scale = loss_perturbation_draw(rng, epsilon, delta, n_classes, neighbouring, theta0.shape,
                                                calibration)
    theta = fit_softmax(X, y, n_classes, l2=l2_effective, linear=noise / n, theta0=theta0, maxiter=maxiter,
                        grad_norm_tol=sensitivity_grad_norm_tol(n, error_fraction))
    return theta, kind, scale


def loss_perturbation_draw(rng, epsilon: float, delta: float, n_classes: int, neighbouring: str, shape,
                           calibration: str = "source"):
    """The noise B (``shape``) of one release, drawn from ``rng`` (one call, calibration of
    :func:`loss_perturbation_noise`); returns ``(B, noise kind, scale)``."""
    kind, scale, _ = loss_perturbation_noise(epsilon, delta, n_classes, neighbouring, calibration)
    if kind == "l2_laplace":
        return sample_l2_laplace(rng, scale, math.prod(shape)).reshape(shape), kind, scale
    return sample_gaussian(rng, scale, shape), kind, scale


def lockstep_batches(l2s, slots) -> list[list[int]]:
    """The lockstep solves of models with L2 ``l2s`` (R,) and slots ``slots`` (R,): the models of one L2 value
    together (in the order given), a second solve for a slot taken twice — so with distinct slots per L2 value
    (cells of one group) every model's batch is the set of models sharing its L2, and its slot is its own."""
    batches: list[list[int]] = []
    index: dict = {}
    for r, (l2, slot) in enumerate(zip(l2s, slots)):
        for b in index.setdefault(float(l2), []):
            if slot not in {slots[i] for i in batches[b]}:
                batches[b].append(r)
                break
        else:
            index[float(l2)].append(len(batches))
            batches.append([r])
    return batches


def loss_perturbation_fit_many(X, y, n_classes: int, noises, l2s, theta0s, *, error_fraction: float, maxiter: int,
                               float32: bool = True, slots=None, preconditioners=None) -> np.ndarray:
    """The minimisers of mean CE + (l2_r/2)‖θ‖² + ⟨B_r, θ⟩/N for the noises ``noises`` (R, D, C) (drawn by
    :func:`loss_perturbation_draw`), L2 ``l2s`` (R,) and warm starts ``theta0s`` (R, D, C), each stopped at
    ‖∇J‖₂ ≤ :func:`dpbench.learn.sensitivity_grad_norm_tol` (a float64 certificate, also with ``float32``).
    The models of one L2 value are solved in lockstep (:func:`lockstep_batches`), model r in slot ``slots[r]``
    (default r mod LOCKSTEP_REPS) of a fixed stack of LOCKSTEP_REPS models, with one BLAS thread: a model's θ
    is a function of its own noise, L2, warm start and slot (module docstring). ``preconditioners``: None or
    {L2 value: curvature at the warm start} — the solves of that L2 iterate in whitened coordinates
    (:class:`dpbench.learn.lbfgs_many.Preconditioned`), the certificate unchanged. Returns θ (R, D, C)."""
    n = X.shape[0]
    noises = np.asarray(noises, dtype=np.float64)
    l2s, theta0s = np.asarray(l2s, dtype=np.float64), np.asarray(theta0s, dtype=np.float64)
    R = len(noises)
    slots = np.arange(R) % LOCKSTEP_REPS if slots is None else np.asarray(slots, dtype=np.int64)
    out = np.empty_like(noises)
    tol = sensitivity_grad_norm_tol(n, error_fraction)
    for b in lockstep_batches(l2s.tolist(), slots.tolist()):
        out[b] = fit_softmax_lockstep(X, y, n_classes, l2s[b], noises[b] / n, theta0s[b], grad_norm_tol=tol,
                                      maxiter=maxiter, float32=float32, slots=slots[b], n_slots=LOCKSTEP_REPS,
                                      blas_threads=1,
                                      precondition=(preconditioners or {}).get(float(l2s[b[0]])))
    return out


@REGISTRY.register
class LossPerturbation(Method):
    name = "loss_perturbation"
    label = "loss perturbation"
    kind = "training"
    depends_on = ("epsilon", "delta", "rep")
    tuned = "l2"
    settings_spec = LBFGS_SETTINGS + (
        Setting("regularizer", "loss_perturbation", schema={"enum": ["code_max", "paper_sum"]}),
        Setting("neighbouring", "loss_perturbation", default="replace_one",
                schema={"enum": ["replace_one", "add_remove"]}),
        Setting("float32", "lbfgs", default=True, type="boolean"),
    )
    style = dict(color="tab:blue", marker="o")

    def cell_params(self, problem, tuned, epsilon, delta):
        rho = loss_perturbation_noise(epsilon, delta, problem.n_classes)[2]
        l2 = loss_perturbation_l2(self.settings["regularizer"], rho, problem.n_train, float(tuned))
        # the effective l2 is the key: CV values that collapse to the same objective share cells
        return {"l2_effective": l2, "error_fraction": self.settings["error_fraction"],
                "maxiter": self.settings["maxiter"], "neighbouring": self.settings.get("neighbouring", "replace_one"),
                "float32": bool(self.settings.get("float32", True)),
                "precondition": bool(self.settings.get("precondition", True))}

    def train(self, X, y, n_classes, epsilon, delta, rng):
        """Loss perturbation at the settings' CV value ``l2`` (effective l2 from ``regularizer``), warm-started at
        the solver-aware non-private fit at the effective l2 (:func:`~dpbench.methods.non_private.fit_minimiser`)."""
        s = self.settings
        ef, nb = s["error_fraction"], s.get("neighbouring", "replace_one")
        l2 = loss_perturbation_l2(s["regularizer"], loss_perturbation_noise(epsilon, delta, n_classes, nb)[2],
                                  X.shape[0], s["l2"])
        theta0 = fit_minimiser(X, y, n_classes, l2, s["maxiter"], ef)
        theta, kind, scale = loss_perturbation_fit(X, y, n_classes, l2, epsilon, delta, rng, theta0, neighbouring=nb,
                                                   error_fraction=ef, maxiter=s["maxiter"],
                                                   calibration=self.calibration_kind)
        return theta, {"noise_kind": kind, "noise_scale": scale, "l2_effective": l2}

    def group_key(self, cell: Cell):
        """The cells of one (ε, δ) and block of LOCKSTEP_REPS repetitions, every effective L2 (tuning value)
        included: solved together in lockstep."""
        shared = tuple(kv for kv in cell.params if kv[0] != "l2_effective")
        return (cell.problem, shared, cell.epsilon, cell.delta, (cell.rep or 0) // LOCKSTEP_REPS)

    def run_group(self, problem: Problem, cells: list[Cell], ctx: Context) -> list[dict]:
        p = cells[0].param
        warm = {}
        for cell in cells:  # the non-private fit at each effective L2 (cached artefacts)
            l2 = cell.param["l2_effective"]
            if l2 not in warm:
                warm[l2] = trained_softmax(problem, l2, ctx, p["error_fraction"], p["maxiter"],
                                           p.get("precondition", True))
        shape = next(iter(warm.values())).shape
        pre = ({l2: softmax_curvature_at_fit(problem, l2, ctx, p["error_fraction"], p["maxiter"]) for l2 in warm}
               if p.get("precondition", True) else None)  # the warm starts' curvature (cached)
        cal = p.get("calibration", "source")
        draws = [loss_perturbation_draw(ctx.rng(cell.stream_key), cell.epsilon, cell.delta, problem.n_classes,
                                        p["neighbouring"], shape, cal) for cell in cells]
        thetas = loss_perturbation_fit_many(
            problem.X_train, problem.y_train, problem.n_classes, np.stack([b for b, _, _ in draws]),
            [c.param["l2_effective"] for c in cells], np.stack([warm[c.param["l2_effective"]] for c in cells]),
            error_fraction=p["error_fraction"], maxiter=p["maxiter"], float32=bool(self.settings.get("float32", True)),
            slots=[(c.rep or 0) % LOCKSTEP_REPS for c in cells], preconditioners=pre)
        out = []
        for cell, theta, (_, kind, scale) in zip(cells, thetas, draws):
            out.append({"accuracy": accuracy_of_logits(problem.X_eval @ theta, problem.y_eval),
                        "noise_kind": kind, "noise_scale": scale, "composition": "none",
                        "epsilon_achieved": loss_perturbation_epsilon(cell.epsilon, cell.delta, p["neighbouring"], cal,
                                                                      problem.n_classes),
                        **({"calibration": cal} if cal != "source" else {}),
                        **solver_record(problem.n_train, cell.param["l2_effective"], p["error_fraction"])})
        return out


@REGISTRY.register
class LossPerturbationTight(LossPerturbation):
    """Loss perturbation with the tight calibration (δ = 0, replace one): the source's ρ = 2LC/ε and the least
    L2-Laplace noise whose proved replace-one privacy loss (:func:`loss_perturbation_privacy_loss_bound`: the
    noise term β(a + K) and the Jacobian term tr(H⁻¹E) ≤ (1 − ‖p‖²)/ρ, maximised jointly over the replaced
    record's gradient norm a) is ≤ ε — β from :func:`loss_perturbation_tight_beta`; for C ≥ 8 classes β = ε/(2K),
    half the source's noise. For δ > 0: the least Gaussian σ whose proved replace-one bound
    (:func:`loss_perturbation_gaussian_loss_bound`: the noise term with the χ_{C−1} tail of the noise's projection
    on the records' gradient directions, jointly with the Jacobian term) is ≤ ε at δ
    (:func:`loss_perturbation_gaussian_sigma`): σ × 0.64 of the source's at C = 10, × 0.57 at C = 2. Same settings
    (block ``loss_perturbation``; ``neighbouring`` must be ``replace_one``), same solver. Rows carry ``calibration:
    tight`` and the bound as ``epsilon_achieved`` (≤ ε). A vdm2020 figure draws it beside ``loss_perturbation``
    (same colour, dashed) with its ``tight`` key."""

    name = "loss_perturbation_tight"
    label = "loss perturbation (tight calibration)"
    style = dict(color="tab:blue", marker="o", linestyle="--")
    calibration_kind = "tight"

    def supports(self, epsilon, delta, budget):
        if self.settings.get("neighbouring", "replace_one") != "replace_one":
            return "the tight calibration is for neighbouring: replace_one only"
        return None

