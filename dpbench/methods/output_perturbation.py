"""Output perturbation for regularised ERM (wu2016 ch. 4, Alg 5 and Alg 6), its parameter-setting variants
(oracle, data-independent, privately tuned) and the private tuning of Alg 7.

Source: Wu (2016), PhD thesis, §4.2 (Thm 4.5–4.7, Alg 5, Alg 6) and §4.4 "Experimental Methodology" (the
parameter-setting variants, Alg 7); the choices the thesis leaves open are listed in docs/studies/wu2016.md.

Setting and conventions (used throughout this module and by :mod:`.objective_perturbation`):

* Data ``S = {(x_i, y_i)}_{i=1..n}`` with ``‖x_i‖₂ ≤ 1`` and ``|y_i| ≤ 1``; **replace-one** neighbours (S and S′
  differ in one record, Def 2.4). Every public function checks these bounds and raises ``ValueError``.
* Losses (:data:`LOSSES`):

  - ``"squared"``: ℓ(w, (x, y)) = (y − ⟨w, x⟩)², the linear-regression loss (never written out in the thesis,
    [INFERRED]). ∇ℓ = −2(y − ⟨w, x⟩)x, so on the ball ‖w‖ ≤ R
    ‖∇ℓ‖ ≤ 2(|y| + ‖w‖‖x‖)‖x‖ ≤ **ρ = 2(1 + R)**; its Hessian 2xxᵀ has rank one and eigenvalue ≤ **c = 2**.
    (The ½-scaled loss has ρ = 1 + R, and minimising ½·MSE + (λ/4)‖w‖² is the same problem as MSE + (λ/2)‖w‖²
    with the same Δ of Alg 6, so the choice only re-labels λ.) The squared loss is not globally Lipschitz, so
    it needs the ball constraint (Alg 6); Alg 5 rejects it.
  - ``"logistic"``: ℓ = log(1 + exp(−y⟨w, x⟩)), y ∈ {±1}: ‖∇ℓ‖ ≤ ‖x‖ ≤ **ρ = 1** everywhere, Hessian
    σ(1−σ)xxᵀ with eigenvalue ≤ **c = 1/4**.

* Objective of Alg 6 (thesis §4.2): ``w̄ = argmin_{‖w‖≤R} L_S(w) + (λ/2)‖w‖²`` with L_S the **average** loss.

Sensitivity of the constrained regularised minimiser (the bound every test measures against). Let
F_S(w) = L_S(w) + (λ/2)‖w‖², λ-strongly convex, w = argmin_C F_S, w′ = argmin_C F_S′ over the convex ball C.
Strong convexity and first-order optimality over C give F_S(w′) − F_S(w) ≥ (λ/2)‖w′ − w‖² and
F_S′(w) − F_S′(w′) ≥ (λ/2)‖w − w′‖². Adding them, the common records cancel and
λ‖w − w′‖² ≤ (1/n)[ℓ(w′, z) − ℓ(w, z) + ℓ(w, z′) − ℓ(w′, z′)] ≤ (2ρ/n)‖w − w′‖, i.e. **‖w − w′‖ ≤ 2ρ/(λn)**
(:func:`sensitivity_tight`). The thesis instead applies its Thm 4.5 (Δ = 4ρ̄/(λn) for a λ-strongly convex,
ρ̄-Lipschitz loss) to ℓ̄ = ℓ + (λ/2)‖w‖², which is (ρ + λR)-Lipschitz on the ball, and obtains
**Δ = 4(ρ + λR)/(λn)** (Alg 6 line 2, Thm 4.7; :func:`sensitivity_alg6`) — valid, and at least 2× larger than
the tight bound. Alg 5 (unconstrained, λ-strongly convex objective with a ρ-Lipschitz data loss) uses
Δ = 4ρ/(λn) (:func:`sensitivity_alg5`). The default everywhere is the thesis' Δ (``sensitivity="thesis"``);
``"lipschitz"`` gives 2ρ/(λn) for both.

**The tight calibration** (``sensitivity="tight"``, the ``op_*_tight`` methods of the study). The step
"≤ (2ρ/n)‖w − w′‖" above bounds two gradient norms separately. By the mean-value theorem along the segment
from w to w′ (inside the ball, which is convex),
ℓ(w′, z) − ℓ(w, z) − [ℓ(w′, z′) − ℓ(w, z′)] = ∫₀¹ ⟨∇ℓ(w_t, z) − ∇ℓ(w_t, z′), w′ − w⟩ dt ≤ G‖w′ − w‖ with
**G = max_{‖v‖≤R, z, z′ in the domain} ‖∇ℓ(v, z) − ∇ℓ(v, z′)‖**, the largest gradient difference of two records
at one feasible point; hence **‖w − w′‖ ≤ G/(λn)** (:func:`sensitivity_exact`). G ≤ 2ρ, and much smaller on the
ball: for the logistic loss the margin ⟨v, yx⟩ is at most R, so one record's gradient −σ(−⟨v, yx⟩)yx cannot be
long when it points against v (G = 1.099 at R = 1 against 2ρ = 2, against the thesis' 4(ρ + λR)); for the squared
loss ∇ℓ = 2(⟨v, x⟩ − y)x (G = 5.196 at R = 1 against 2ρ = 8). :func:`gradient_difference_bound` computes G
with a certificate: the gradient set at ‖v‖ = s is a body of revolution about v whose extreme points are
reached on the unit circle of a plane through v (for a fixed component of x along v the gradient is affine in
the other components and, for the squared loss, in y), so G is the largest distance between two points of the
curves θ ↦ ∇ℓ(s·e₁, (cos θ, sin θ), y) over s ∈ [0, R]; it is evaluated on a grid and raised by the grid's
Lipschitz margin, so the value returned is ≥ the true maximum (within 1–2 % of it). Without a ball (Alg 5) the
margin is unbounded and G = 2ρ is attained in the limit, so "tight" is 2ρ/(λn) there.

Noise (Thm 2.17, Eq. 2.2): κ with density ∝ exp(−ε‖κ‖/Δ), i.e. ‖κ‖ ~ Gamma(d, Δ/ε) in a uniform direction
(:func:`dpbench.privacy.mechanisms.sample_l2_laplace` with β = ε/Δ); ε-DP because |‖κ‖ − ‖κ + w − w′‖| ≤ Δ.

The sensitivity bounds assume the **exact** minimiser, so the solvers here are exact up to round-off: the
squared loss is a trust-region subproblem solved by an eigen-decomposition and a bisection on the KKT multiplier
(:func:`ridge_ball`); the logistic loss uses damped Newton for every multiplier and a bisection on it
(:func:`erm_ball`). Both return a point satisfying the KKT conditions to ~1e-10.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dpbench.methods.base import TRAINING, Method, Setting, linear_scores
from dpbench.privacy.mechanisms import exponential_mechanism, sample_l2_laplace

LOSSES = ("squared", "logistic")
#: thesis: Alg 5/6's Δ | lipschitz: 2ρ/(λn) | tight: G/(λn), the largest gradient difference on the ball
SENSITIVITY_FORMS = ("thesis", "lipschitz", "tight")

__all__ = [
    "LOSSES", "SENSITIVITY_FORMS", "lipschitz", "curvature", "sensitivity_alg5", "sensitivity_alg6",
    "sensitivity_tight", "gradient_difference_bound", "sensitivity_exact",
    "op_sensitivity", "check_data", "ridge_ball", "erm_ball", "distinct_rows", "logistic_ball_many", "solve_erm", "mean_loss", "OPResult",
    "output_perturbation", "output_perturbation_strongly_convex", "data_independent_parameters",
    "oracle_lambda_grid", "oracle_output_perturbation", "tuning_lambda_grid", "utility_sensitivity",
    "clipped_mean_loss", "TuningResult", "make_chunks", "private_tuning",
]


# ---------------------------------------------------------------------------------------------------------
# constants and sensitivities
# ---------------------------------------------------------------------------------------------------------


def _loss(loss: str) -> str:
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    return loss


def _pos(name: str, v) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number, got {v!r}") from None
    if not (f > 0 and math.isfinite(f)):
        raise ValueError(f"{name} must be a positive finite number, got {v!r}")
    return f


def lipschitz(loss: str, R: float | None) -> float:
    """ρ: Lipschitz constant of the per-example loss in w over ‖w‖ ≤ R for ‖x‖ ≤ 1, |y| ≤ 1 (module
    docstring): squared 2(1 + R); logistic 1 (for any R, also unconstrained: pass ``R=None``)."""
    if _loss(loss) == "logistic":
        return 1.0
    if R is None:
        raise ValueError("the squared loss is only Lipschitz on a bounded set: give the radius R")
    return 2.0 * (1.0 + _pos("R", R))


def curvature(loss: str) -> float:
    """c: bound on the eigenvalue of the rank-one per-example Hessian (squared 2, logistic 1/4)."""
    return 2.0 if _loss(loss) == "squared" else 0.25


def sensitivity_alg5(rho: float, lam: float, n: int) -> float:
    """Δ = 4ρ/(λn) of Alg 5 (thesis §4.2, Thm 4.5): λ-strongly convex objective, ρ-Lipschitz loss."""
    return 4.0 * _pos("rho", rho) / (_pos("lam", lam) * _count(n))


def sensitivity_alg6(rho: float, lam: float, R: float, n: int) -> float:
    """Δ = 4(ρ + λR)/(λn) of Alg 6 (thesis §4.2, Thm 4.7): the regularised loss ℓ + (λ/2)‖w‖² is
    (ρ + λR)-Lipschitz on the ball of radius R and λ-strongly convex; Thm 4.5 then gives 4(ρ+λR)/(λn)."""
    rho, lam, R = _pos("rho", rho), _pos("lam", lam), _pos("R", R)
    return 4.0 * (rho + lam * R) / (lam * _count(n))


def sensitivity_tight(rho: float, lam: float, n: int) -> float:
    """Δ = 2ρ/(λn): the replace-one sensitivity of argmin over a convex set of L_S + (λ/2)‖w‖² (derivation in
    the module docstring); ≤ half of Alg 6's bound."""
    return 2.0 * _pos("rho", rho) / (_pos("lam", lam) * _count(n))


def _gradient_curve(loss: str, s: float, phi: np.ndarray) -> np.ndarray:
    """The per-record gradients at v = s·e₁ for x = (cos φ, sin φ) as points of the plane (module docstring):
    logistic, φ ∈ [0, 2π) (x stands for yx); squared, φ ∈ [0, 4π): y = −1 on the first turn, +1 on the second."""
    c, sn = np.cos(phi), np.sin(phi)
    if loss == "logistic":
        sig = 0.5 * (1.0 - np.tanh(0.5 * s * c))          # σ(−s cos φ)
        return np.stack([-sig * c, -sig * sn], axis=1)
    y = np.where(phi < 2.0 * math.pi, -1.0, 1.0)
    return np.stack([2.0 * (s * c - y) * c, 2.0 * (s * c - y) * sn], axis=1)


def _row_max(P: np.ndarray, block: int = 1024) -> np.ndarray:
    """Per row of P: its largest distance to any row of P (blocks of ``block`` rows: bounded memory)."""
    sq = np.einsum("ij,ij->i", P, P)
    out = np.empty(len(P))
    for i in range(0, len(P), block):
        d2 = sq[i:i + block, None] + sq[None, :] - 2.0 * (P[i:i + block] @ P.T)
        out[i:i + block] = d2.max(axis=1)
    return np.sqrt(np.maximum(out, 0.0))


@functools.lru_cache(maxsize=64)
def _gradient_difference_bound(loss: str, R: float, n_theta: int, n_s: int) -> float:
    # Lipschitz constants of one gradient point in θ and in s (module docstring): logistic
    # ‖∂g/∂θ‖ ≤ σ + sσ′ ≤ 1 + R/4, ‖∂g/∂s‖ ≤ 1/4; squared ‖∂g/∂θ‖ ≤ 2s + 2(s + 1), ‖∂g/∂s‖ ≤ 2. A distance moves by
    # at most the sum of its two points' moves: every (s, θ₁, θ₂) is within h_θ/2 of cell centres (+ l_θ·h_θ) and
    # h_s/2 of a grid s (+ l_s·h_s). Angle cells are [k·h, (k+1)·h), evaluated at their centres; a cell halves into
    # two children that tile it, so a pruned cell's region is never needed again: a cell is pruned only when no
    # point of it can be farther than a distance already attained from any live cell, and the farthest pair's
    # cells are never pruned (their centres' distance + l_θ·h ≥ the maximum ≥ anything attained).
    l_theta, l_s = (1.0 + R / 4.0, 0.25) if loss == "logistic" else (4.0 * R + 2.0, 2.0)
    s_grid = np.linspace(0.0, R, n_s)
    m0 = max(16, n_theta // 16)
    turns = 1 if loss == "logistic" else 2           # the squared loss: one turn per label y = ±1
    alive = {i: np.arange(turns * m0) for i in range(n_s)}          # per grid s: the angle cells that may hold a farthest pair
    upper = np.full(n_s, np.inf)                             # per grid s: an upper bound over all angles
    attained = 0.0                                           # a distance some pair reaches: a lower bound on G
    m = m0
    while True:
        h = 2.0 * math.pi / m
        for i in [i for i in reversed(range(n_s)) if upper[i] > attained]:   # large s first: a high bar early
            P = _gradient_curve(loss, float(s_grid[i]), h * (alive[i] + 0.5))   # cell centres
            rows = _row_max(P)                               # per cell centre: its farthest live centre
            attained = max(attained, float(rows.max()))
            upper[i] = float(rows.max()) + l_theta * h
            alive[i] = alive[i][rows + l_theta * h > attained]   # a cell whose bound is below a reached pair: out
        if m >= n_theta:
            break
        m, alive = 2 * m, {i: np.concatenate([2 * a, 2 * a + 1]) for i, a in alive.items()}
    return float(upper.max()) * (1.0 + 1e-12) + l_s * R / (n_s - 1) + 1e-12


def gradient_difference_bound(loss: str, R: float | None, n_theta: int = 2048, n_s: int = 129) -> float:
    """G: a certified upper bound (1–2 % above the true value at the default grid) on
    max_{‖v‖≤R, z, z′} ‖∇ℓ(v, z) − ∇ℓ(v, z′)‖ for records ‖x‖ ≤ 1, |y| ≤ 1 (logistic: y = ±1); R = None → 2ρ
    (module docstring, "The tight calibration"). Memoised per (loss, R, grid)."""
    if R is None:
        return 2.0 * lipschitz(loss, None)
    if n_theta < 16 or n_s < 2:
        raise ValueError(f"n_theta must be >= 16 and n_s >= 2, got {n_theta}, {n_s}")
    return min(2.0 * lipschitz(loss, R), _gradient_difference_bound(_loss(loss), _pos("R", R), int(n_theta), int(n_s)))


def sensitivity_exact(loss: str, lam: float, R: float | None, n: int) -> float:
    """Δ = G/(λn), G = :func:`gradient_difference_bound`: the tight replace-one sensitivity of Alg 5/6's
    minimiser (module docstring)."""
    return gradient_difference_bound(loss, R) / (_pos("lam", lam) * _count(n))


def op_sensitivity(loss: str, lam: float, R: float | None, n: int, form: str = "thesis") -> float:
    """The output-perturbation Δ for ``loss``: ``form="thesis"`` → Alg 6 (R given) or Alg 5 (R None, logistic
    only); ``"lipschitz"`` → 2ρ/(λn); ``"tight"`` → G/(λn) (:func:`sensitivity_exact`)."""
    if form not in SENSITIVITY_FORMS:
        raise ValueError(f"form must be one of {SENSITIVITY_FORMS}, got {form!r}")
    if form == "tight":
        if _loss(loss) == "squared" and R is None:
            lipschitz(loss, R)      # the squared loss needs the ball: the same error as the other forms
        return sensitivity_exact(loss, lam, R, n)
    rho = lipschitz(loss, R)
    if form == "lipschitz":
        return sensitivity_tight(rho, lam, n)
    return sensitivity_alg5(rho, lam, n) if R is None else sensitivity_alg6(rho, lam, R, n)


def _count(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return int(n)


def check_data(X, y, loss: str, tol: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """Validate (X, y): 2-D finite X with ‖x_i‖ ≤ 1; y finite, |y| ≤ 1 (squared) or y ∈ {−1, +1} (logistic)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0] or X.shape[0] < 1:
        raise ValueError(f"need X of shape (n, d) and y of shape (n,) with n ≥ 1, got {X.shape} and {y.shape}")
    if not (np.isfinite(X).all() and np.isfinite(y).all()):
        raise ValueError("X and y must be finite")
    norms = np.linalg.norm(X, axis=1)
    if norms.max() > 1 + tol:
        raise ValueError(f"every row needs ‖x‖ ≤ 1 (the sensitivity bounds assume it); max row norm {norms.max():.6g}")
    if _loss(loss) == "logistic":
        if not np.isin(y, (-1.0, 1.0)).all():
            raise ValueError("logistic loss needs labels in {-1, +1}")
    elif np.abs(y).max() > 1 + tol:
        raise ValueError(f"the squared loss needs |y| ≤ 1; max |y| = {np.abs(y).max():.6g}")
    return X, y


# ---------------------------------------------------------------------------------------------------------
# exact constrained ERM
# ---------------------------------------------------------------------------------------------------------


def mean_loss(loss: str, W: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Average loss of every model in W (..., d) on (X, y)."""
    s = np.einsum("...d,nd->...n", np.asarray(W, dtype=np.float64), X)
    if _loss(loss) == "squared":
        return np.mean((y - s) ** 2, axis=-1)
    return np.mean(np.logaddexp(0.0, -y * s), axis=-1)


def ridge_ball(X: np.ndarray, y: np.ndarray, lams, R: float | None, b: np.ndarray | None = None,
               eig: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """argmin_{‖w‖≤R} (1/n)‖y − Xw‖² + (λ/2)‖w‖² + bᵀw/n for every λ in ``lams`` (shape (k, d)).

    Stationarity: (H + (λ+μ)I)w = g with H = 2XᵀX/n, g = 2Xᵀy/n − b/n and the KKT multiplier μ ≥ 0 of the
    ball (μ = 0 if the unconstrained solution is inside). With H = Q diag(D) Qᵀ, ‖w(μ)‖ = ‖Qᵀg/(D+λ+μ)‖ is
    decreasing in μ; μ is found by bisection to machine precision (the trust-region subproblem). ``R=None``:
    unconstrained (then λ + min D must be > 0). ``eig``: a precomputed (D, Q) of H.
    """
    n, d = X.shape
    lams = np.atleast_1d(np.asarray(lams, dtype=np.float64))
    if (lams < 0).any():
        raise ValueError(f"λ must be ≥ 0, got {lams}")
    D, Q = eig if eig is not None else np.linalg.eigh(2.0 * (X.T @ X) / n)
    D = np.maximum(D, 0.0)
    g = 2.0 * (X.T @ y) / n
    if b is not None:
        g = g - np.asarray(b, dtype=np.float64) / n
    gt = Q.T @ g
    lam = lams[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        v0 = gt / (D + lam)
    if R is None:
        if not np.isfinite(v0).all():
            raise ValueError("unconstrained problem with a singular Hessian: give λ > 0 or a radius R")
        return v0 @ Q.T
    R = _pos("R", R)
    norm0 = np.where(np.isfinite(v0).all(axis=1), np.linalg.norm(np.nan_to_num(v0, nan=np.inf, posinf=np.inf), axis=1),
                     np.inf)
    inside = norm0 <= R
    # Newton on ψ(μ) = 1/‖v(μ)‖ − 1/R from μ = 0 (Moré–Sorensen): ψ is concave and increasing, so the iterates
    # increase monotonically to the root and converge quadratically; a bisection finishes any that do not.
    mu = np.where(lams + D.min() > 0, 0.0, 1e-12 * (np.linalg.norm(gt) / R + 1.0))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(100):
            den = D + lam + mu[:, None]
            nv = np.linalg.norm(gt / den, axis=1)
            psi = 1.0 / nv - 1.0 / R
            dpsi = np.sum(gt ** 2 / den ** 3, axis=1) / nv ** 3
            step = np.where(inside | ~np.isfinite(psi) | ~(dpsi > 0), 0.0, -psi / dpsi)
            mu = np.maximum(mu + step, 0.0)
            if np.all(np.abs(step) <= 1e-15 * np.maximum(mu, 1e-300)):
                break
    lo, hi = mu.copy(), mu.copy()
    bad = ~inside & (np.linalg.norm(gt / (D + lam + mu[:, None]), axis=1) > R * (1 + 1e-12))
    if bad.any():                                     # safeguard (not reached in the easy case)
        lo = np.where(bad, mu, lo)
        hi = np.where(bad, np.linalg.norm(gt) / R + 1.0, hi)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            big = np.linalg.norm(gt / (D + lam + mid[:, None]), axis=1) > R
            lo = np.where(bad & big, mid, lo)
            hi = np.where(bad & ~big, mid, hi)
    v = gt / (D + lam + hi[:, None])
    nv = np.linalg.norm(v, axis=1, keepdims=True)
    v = np.where(nv > R, v * (R / nv), v)           # round-off guard: never leave the ball
    v = np.where(inside[:, None], np.nan_to_num(v0), v)
    return v @ Q.T


def _logistic_newton(X, y, lam_total, b_over_n, w0, tol=1e-12, maxiter=100):
    """argmin mean log(1+exp(−y⟨w,x⟩)) + (lam_total/2)‖w‖² + ⟨b/n, w⟩ by damped Newton (strongly convex)."""
    w = w0.copy()
    n = X.shape[0]

    def f(w):
        return np.mean(np.logaddexp(0.0, -y * (X @ w))) + 0.5 * lam_total * w @ w + b_over_n @ w

    fw = f(w)
    for _ in range(maxiter):
        m = y * (X @ w)
        s = 0.5 * (1.0 - np.tanh(0.5 * m))          # σ(−m), stable
        grad = -(X.T @ (y * s)) / n + lam_total * w + b_over_n
        if np.linalg.norm(grad) <= tol:
            break
        hw = s * (1.0 - s)
        H = (X.T * hw) @ X / n + lam_total * np.eye(X.shape[1])
        step = np.linalg.solve(H, grad)
        dec = float(grad @ step)                      # Newton decrement², ≥ 0
        if dec <= 1e-18:                              # quadratic convergence zone: full step, done
            w = w - step
            break
        if dec <= 1e-8:                               # near the optimum: full Newton steps are safe
            w = w - step
            fw = f(w)
            continue
        t = 1.0
        while True:
            wn = w - t * step
            fn = f(wn)
            if fn <= fw - 1e-4 * t * dec:
                break
            t *= 0.5
            if t < 1e-10:                             # no further decrease representable
                return w
        w, fw = wn, fn
    return w


def erm_ball(loss: str, X: np.ndarray, y: np.ndarray, lam: float, R: float | None,
             b: np.ndarray | None = None) -> np.ndarray:
    """Exact argmin_{‖w‖≤R} L_S(w) + (λ/2)‖w‖² + bᵀw/n for one λ (``R=None``: unconstrained, needs λ > 0 or,
    for the squared loss, a non-singular XᵀX). KKT: ∇F(w) + μw = 0 with μ ≥ 0, μ(‖w‖ − R) = 0. The logistic
    loss solves the μ-regularised problem by Newton and finds μ by bisection (‖w(μ)‖ decreases in μ)."""
    X, y = check_data(X, y, loss)
    lam = float(lam)
    if lam < 0:
        raise ValueError(f"lam must be ≥ 0, got {lam}")
    if _loss(loss) == "squared":
        return ridge_ball(X, y, [lam], R, b)[0]
    n, d = X.shape
    bn = np.zeros(d) if b is None else np.asarray(b, dtype=np.float64) / n
    if R is None:
        if lam <= 0:
            raise ValueError("unconstrained logistic ERM needs λ > 0 (the minimiser may not exist otherwise)")
        return _logistic_newton(X, y, lam, bn, np.zeros(d))
    R = _pos("R", R)
    if lam > 0:
        w = _logistic_newton(X, y, lam, bn, np.zeros(d))
        if np.linalg.norm(w) <= R:
            return w
    # ‖∇ mean ℓ‖ ≤ 1, so ‖w(μ)‖ ≤ (1 + ‖b‖/n)/(λ+μ) ≤ R once μ ≥ (1 + ‖b/n‖)/R
    lo, hi = 0.0, (1.0 + np.linalg.norm(bn)) / R
    w = np.zeros(d)
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if lam + mid <= 0:
            lo = mid
            continue
        w = _logistic_newton(X, y, lam + mid, bn, w)
        if np.linalg.norm(w) > R:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * max(hi, 1e-12):
            break
    w = _logistic_newton(X, y, lam + hi, bn, w)
    nw = np.linalg.norm(w)
    return w * (R / nw) if nw > R else w


def distinct_rows(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (x, y) records of a dataset and how often each occurs: ``(X_u (u, d), y_u (u,), counts (u,))``.
    A sum of per-record terms equals the count-weighted sum over them — as cheap as u rows instead of n (a few on
    a privacy audit's constructed pairs)."""
    Z, counts = np.unique(np.c_[X, y], axis=0, return_counts=True)
    return Z[:, :-1], Z[:, -1], counts


def logistic_ball_many(X: np.ndarray, y: np.ndarray, lam: float, R: float, B: np.ndarray,
                       tol: float = 1e-12, maxiter: int = 100) -> np.ndarray:
    """:func:`erm_ball` with the logistic loss for K noise vectors at once: row k of the result is
    argmin_{‖w‖≤R} L_S(w) + (λ/2)‖w‖² + B_kᵀw/n (``B`` (K, d); λ > 0). All K problems run one batched damped
    Newton iteration (the same steps, Armijo backtracking and stopping rule ‖∇‖ ≤ ``tol`` as the single solve,
    per problem); a problem whose unconstrained minimiser leaves the ball, or that has not converged after
    ``maxiter`` iterations, is handed to :func:`erm_ball` (exact KKT solve) — so every row solves its problem
    to the single solve's tolerance, only faster (e.g. many trials of a privacy audit). X, y as in
    :func:`erm_ball` (validated)."""
    X, y = check_data(X, y, "logistic")
    lam, R = _pos("lam", lam), _pos("R", R)
    n, d = X.shape
    B = np.asarray(B, dtype=np.float64)
    if B.ndim != 2 or B.shape[1] != d or not np.isfinite(B).all():
        raise ValueError(f"B must be a finite (K, d = {d}) array of noise vectors, got shape {B.shape}")
    Bn = B / n
    K = B.shape[0]
    W = np.zeros((K, d))
    # the mean loss over the distinct (x, y) rows weighted by their counts: the same objective, and the cost
    # per iteration scales with the number of distinct rows (a few on an audit's pair, n on real data)
    Xu, yu, counts = distinct_rows(X, y)
    Xy, wu = Xu * yu[:, None], (counts / n)[:, None]

    def value(W_, rows):
        return ((np.logaddexp(0.0, -(Xy @ W_.T)) * wu).sum(axis=0) + 0.5 * lam * np.einsum("kd,kd->k", W_, W_)
                + np.einsum("kd,kd->k", Bn[rows], W_))

    active = np.arange(K)
    fw = value(W, active)
    done = np.zeros(K, dtype=bool)
    for _ in range(maxiter):
        if active.size == 0:
            break
        Wa = W[active]
        S = 0.5 * (1.0 - np.tanh(0.5 * (Xy @ Wa.T)))                    # σ(−m) (n, k), stable
        grad = -((S * wu).T @ Xy) + lam * Wa + Bn[active]
        conv = np.linalg.norm(grad, axis=1) <= tol
        done[active[conv]] = True
        H = np.einsum("nk,ni,nj->kij", S * (1.0 - S) * wu, Xu, Xu) + lam * np.eye(d)
        step = np.linalg.solve(H, grad[..., None])[..., 0]
        dec = np.einsum("kd,kd->k", grad, step)                          # Newton decrement², ≥ 0
        full = ~conv & (dec <= 1e-8)                                      # quadratic zone: full steps are safe
        W[active[full]] = Wa[full] - step[full]
        done[active[~conv & (dec <= 1e-18)]] = True
        ls = np.flatnonzero(~conv & (dec > 1e-8))
        if full.any():
            fw[active[full]] = value(W[active[full]], active[full])
        t = np.ones(ls.size)
        pend = np.arange(ls.size)                                         # Armijo backtracking, per problem
        while pend.size:
            rows = active[ls[pend]]
            wn = Wa[ls[pend]] - t[pend, None] * step[ls[pend]]
            fn = value(wn, rows)
            ok = fn <= fw[rows] - 1e-4 * t[pend] * dec[ls[pend]]
            W[rows[ok]], fw[rows[ok]] = wn[ok], fn[ok]
            t[pend[~ok]] *= 0.5
            stuck = ~ok & (t[pend] < 1e-10)                               # no further decrease representable
            done[rows[stuck]] = True
            pend = pend[~ok & ~stuck]
        active = np.flatnonzero(~done)
    out = np.linalg.norm(W, axis=1) > R
    for k in np.flatnonzero(out | ~done):                                 # the ball binds / not converged
        W[k] = erm_ball("logistic", X, y, lam, R, b=B[k])
    return W


def solve_erm(loss: str, X, y, lam: float, R: float | None, b=None) -> np.ndarray:
    """Alias of :func:`erm_ball` (the non-noisy step 1 of Alg 5/6)."""
    return erm_ball(loss, X, y, lam, R, b)


# ---------------------------------------------------------------------------------------------------------
# Alg 5 / Alg 6
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OPResult:
    """A released model ``w`` = ``w_bar`` + noise, with the parameters and the noise calibration used."""

    w: np.ndarray
    w_bar: np.ndarray
    lam: float
    R: float | None
    sensitivity: float
    epsilon: float


def output_perturbation(loss: str, X, y, lam: float, R: float, epsilon: float, rng: np.random.Generator,
                        sensitivity: str = "thesis", w_bar: np.ndarray | None = None) -> OPResult:
    """Alg 6 (OutputPerturbationConvex, thesis §4.2): w̄ = argmin_{‖w‖≤R} L_S + (λ/2)‖w‖², then
    w̄ + κ with p(κ) ∝ exp(−ε‖κ‖/Δ), Δ = 4(ρ+λR)/(λn) (``sensitivity="thesis"``), 2ρ/(λn) (``"lipschitz"``)
    or G/(λn) (``"tight"``, module docstring).
    ε-DP for replace-one neighbours. ``w_bar`` (optional) reuses an already computed exact minimiser."""
    X, y = check_data(X, y, loss)
    lam, R, epsilon = _pos("lam", lam), _pos("R", R), _pos("epsilon", epsilon)
    delta2 = op_sensitivity(loss, lam, R, X.shape[0], sensitivity)
    wb = erm_ball(loss, X, y, lam, R) if w_bar is None else np.asarray(w_bar, dtype=np.float64)
    kappa = sample_l2_laplace(rng, epsilon / delta2, X.shape[1])
    return OPResult(wb + kappa, wb, lam, R, delta2, epsilon)


def output_perturbation_strongly_convex(X, y, lam: float, epsilon: float, rng: np.random.Generator,
                                        loss: str = "logistic", sensitivity: str = "thesis") -> OPResult:
    """Alg 5 (OutputPerturbationStronglyConvex, thesis §4.2) for the λ-strongly convex objective
    L_S + (λ/2)‖w‖² of a globally ρ-Lipschitz loss (logistic: ρ = 1), unconstrained: Δ = 4ρ/(λn)."""
    if _loss(loss) == "squared":
        raise ValueError("Alg 5 needs a globally Lipschitz loss; the squared loss needs the ball of Alg 6")
    X, y = check_data(X, y, loss)
    lam, epsilon = _pos("lam", lam), _pos("epsilon", epsilon)
    delta2 = op_sensitivity(loss, lam, None, X.shape[0], sensitivity)
    wb = erm_ball(loss, X, y, lam, None)
    return OPResult(wb + sample_l2_laplace(rng, epsilon / delta2, X.shape[1]), wb, lam, None, delta2, epsilon)


# ---------------------------------------------------------------------------------------------------------
# parameter-setting variants (thesis §4.4, "Experimental Methodology")
# ---------------------------------------------------------------------------------------------------------


def data_independent_parameters(d: int, n: int, epsilon: float, radius: float = 1.0) -> tuple[float, float]:
    """Data-Independent Output Perturbation (thesis §4.4): R = 1 ("we scale the data to the unit sphere")
    and λ = √(d/(nε)) (from the proof of Thm 4.12). Returns (R, λ)."""
    return float(radius), math.sqrt(_count(d) / (_count(n) * _pos("epsilon", epsilon)))


def oracle_lambda_grid(d: int, n: int, points: int, eps_start: float = 100.0, eps_end: float = 0.1) -> np.ndarray:
    """Oracle λ grid (thesis §4.4): an arithmetic progression from √(d/(nε′)) (ε′ = 100) to √(d/(nε*)) (ε* = 0.1);
    the number of points is not given [INFERRED]."""
    if points < 2:
        raise ValueError(f"points must be ≥ 2, got {points}")
    return np.linspace(math.sqrt(d / (n * _pos("eps_start", eps_start))),
                       math.sqrt(d / (n * _pos("eps_end", eps_end))), int(points))


def oracle_output_perturbation(loss: str, X, y, radii: Sequence[float], lambdas: Sequence[float], epsilons,
                               rng: np.random.Generator, sensitivity: str = "thesis", mc_draws: int = 32) -> dict:
    """Oracle Output Perturbation (thesis §4.4): **not private** — an idealised upper bound. For every ε, the
    (R, λ) of ``radii`` × ``lambdas`` with the smallest *expected* training loss of the noisy output is picked
    using the training data, then one Alg 6 release with those parameters is drawn.

    Expected training loss: squared loss in closed form, E L_S(w̄ + κ) = L_S(w̄) + E[κᵀ(XᵀX/n)κ]
    = L_S(w̄) + tr(XᵀX/n)·(d+1)(Δ/ε)² (κ isotropic with E‖κ‖² = d(d+1)(Δ/ε)²); logistic: Monte Carlo with
    ``mc_draws`` draws (from ``rng``, independent of the released draw).

    Returns {"w": (E, d) released models, "R": (E,), "lam": (E,), "sensitivity": (E,), "expected_loss": (E,)}."""
    X, y = check_data(X, y, loss)
    n, d = X.shape
    eps = np.atleast_1d(np.asarray(epsilons, dtype=np.float64))
    radii = [float(r) for r in radii]
    lams = np.asarray(lambdas, dtype=np.float64)
    if _loss(loss) == "squared":
        eig = np.linalg.eigh(2.0 * (X.T @ X) / n)
        wbars = {r: ridge_ball(X, y, lams, r, eig=eig) for r in radii}
    else:
        wbars = {r: np.array([erm_ball(loss, X, y, lam, r) for lam in lams]) for r in radii}
    trace = float(np.sum(X * X) / n)
    out = {k: [] for k in ("w", "R", "lam", "sensitivity", "expected_loss")}
    for e in eps:
        best = (np.inf, None)
        for r in radii:
            base = mean_loss(loss, wbars[r], X, y)
            for j, lam in enumerate(lams):
                delta2 = op_sensitivity(loss, lam, r, n, sensitivity)
                if loss == "squared":
                    val = base[j] + trace * (d + 1) * (delta2 / e) ** 2
                else:
                    kap = sample_l2_laplace(rng, e / delta2, d, size=mc_draws)
                    val = float(np.mean(mean_loss(loss, wbars[r][j] + kap, X, y)))
                if val < best[0]:
                    best = (val, (r, j, delta2))
        r, j, delta2 = best[1]
        out["w"].append(wbars[r][j] + sample_l2_laplace(rng, e / delta2, d))
        out["R"].append(r)
        out["lam"].append(float(lams[j]))
        out["sensitivity"].append(delta2)
        out["expected_loss"].append(best[0])
    return {k: np.asarray(v) for k, v in out.items()}


# ---------------------------------------------------------------------------------------------------------
# Alg 7: private parameter tuning over disjoint chunks
# ---------------------------------------------------------------------------------------------------------


def tuning_lambda_grid(d: int, n_chunk: int, count: int = 8, ratio: float = 2.0, eps_start: float = 100.0) -> np.ndarray:
    """Λ of Alg 7 (thesis §4.4): a geometric progression of ratio 2 (stated in the thesis); its start and length
    are not given [INFERRED]: ``count`` = 8 values (24 = 3 × 8 training chunks in Fig. 4.8) from
    √(d/(ε′ n_chunk)), ε′ = 100, the oracle grid's start on the size of one training chunk."""
    if count < 1:
        raise ValueError(f"count must be ≥ 1, got {count}")
    start = math.sqrt(_count(d) / (_pos("eps_start", eps_start) * _count(n_chunk)))
    return start * _pos("ratio", ratio) ** np.arange(int(count))


def loss_bound(loss: str, R: float) -> float:
    """max of the per-example loss over ‖w‖ ≤ R, ‖x‖ ≤ 1, |y| ≤ 1: squared (1+R)², logistic log(1+e^R)."""
    R = _pos("R", R)
    return (1.0 + R) ** 2 if _loss(loss) == "squared" else float(np.logaddexp(0.0, R))


def clipped_mean_loss(loss: str, W: np.ndarray, X: np.ndarray, y: np.ndarray, R: float) -> np.ndarray:
    """Average of min(ℓ(w, z), loss_bound(R)) over (X, y) for every model in W (..., d). The released models
    w̄ + κ leave the ball, where the loss is unbounded; capping every per-example loss at its maximum over the
    ball leaves it unchanged on the ball and bounds the utility's sensitivity for every w."""
    s = np.einsum("...d,nd->...n", np.asarray(W, dtype=np.float64), X)
    per = (y - s) ** 2 if _loss(loss) == "squared" else np.logaddexp(0.0, -y * s)
    return np.mean(np.minimum(per, loss_bound(loss, R)), axis=-1)


def utility_sensitivity(loss: str, R: float, n_val: int, form: str = "rigorous") -> float:
    """Δ(u) of the validation utility u_{S′}(w) = −L_{S′}(w) (Alg 7 line 5). ``"thesis"``: R² as printed
    (Alg 7 line 5, stated without derivation). ``"rigorous"``: with per-example losses capped at
    B = loss_bound(R) (:func:`clipped_mean_loss`), replacing one of the n_val validation records moves the
    average by at most B/n_val. (The printed R² bounds this only when n_val ≥ B/R², e.g. 25 for the squared
    loss and R = 1/4, and only for the capped loss.)"""
    if form == "thesis":
        return _pos("R", R) ** 2
    if form != "rigorous":
        raise ValueError(f"form must be 'rigorous' or 'thesis', got {form!r}")
    return loss_bound(loss, R) / _count(n_val)


@dataclass(frozen=True)
class TuningResult:
    """The output of Alg 7: the chosen model and everything needed to audit the choice."""

    w: np.ndarray                # the released (selected) model
    index: int                   # which (R, λ) pair / chunk won
    R: float
    lam: float
    candidates: np.ndarray       # (m, d) the m private models
    validation_loss: np.ndarray  # (m,) capped average validation losses
    probabilities: np.ndarray    # (m,) selection probabilities of the exponential mechanism
    utility_sensitivity: float


def make_chunks(n: int, m: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Alg 7 line 3: a uniformly random (data-independent) partition of range(n) into m+1 chunks of sizes
    differing by at most one; the last is the validation chunk S′."""
    if m < 1 or n < m + 1:
        raise ValueError(f"need n ≥ m + 1 records for m + 1 chunks, got n = {n}, m = {m}")
    return np.array_split(rng.permutation(n), m + 1)


def private_tuning(loss: str, chunks: Sequence[tuple[np.ndarray, np.ndarray]], validation: tuple[np.ndarray, np.ndarray],
                   radii: Sequence[float], lambdas: Sequence[float], epsilon: float, rng: np.random.Generator,
                   train: Callable[..., np.ndarray], utility: str = "rigorous") -> TuningResult:
    """Alg 7 (ParameterTuning, thesis §4.4) on given disjoint chunks: pair i = (R_i, λ_i) of 𝓡 × Λ (R outer)
    is trained on chunk i by ``train(X_i, y_i, R_i, λ_i, ε, rng) -> w`` (an ε-DP algorithm, e.g. Alg 6 or
    objective perturbation), scored by the capped average loss L on S′, and one is drawn by the exponential
    mechanism p(w_i) ∝ exp(−L_{S′}(w_i)·ε/(2Δu)) with Δu = :func:`utility_sensitivity` at R = max 𝓡.

    Privacy (replace-one over S = S_1 ∪ … ∪ S_m ∪ S′, disjoint): a changed record lies in exactly one chunk.
    In S_i it changes only w_i (ε-DP), the selection given S′ is post-processing; in S′ it changes only the
    utilities, and the exponential mechanism with β = ε/(2Δu) is ε-DP. So the output is ε-DP.
    """
    pairs = [(float(r), float(lam)) for r in radii for lam in lambdas]
    if len(chunks) != len(pairs):
        raise ValueError(f"Alg 7 needs one training chunk per (R, λ) pair: {len(pairs)} pairs, {len(chunks)} chunks")
    epsilon = _pos("epsilon", epsilon)
    Xv, yv = check_data(*validation, loss)
    Rmax = max(r for r, _ in pairs)
    W = np.array([train(Xc, yc, r, lam, epsilon, rng) for (Xc, yc), (r, lam) in zip(chunks, pairs)])
    L = clipped_mean_loss(loss, W, Xv, yv, Rmax)
    du = utility_sensitivity(loss, Rmax, Xv.shape[0], utility)
    beta = epsilon / (2.0 * du)
    logits = -beta * (L - L.min())
    p = np.exp(logits)
    p /= p.sum()
    i = int(exponential_mechanism(rng, -L, beta))
    return TuningResult(W[i], i, pairs[i][0], pairs[i][1], W, L, p, du)


#: the settings of the wu2016 ch. 4 mechanisms as training methods (config block ``erm``): λ and the radius R
ERM_SETTINGS = (Setting("lam", "erm"), Setting("radius", "erm"))


class ERMMethod(Method):
    """A wu2016 ch. 4 mechanism as a training method: binary logistic regression (class 1 = +1) on the ball
    ‖w‖ ≤ R, pure ε; subclasses name the ``mechanism`` and how its result gives the noise scale."""

    kind = "training"
    depends_on = ("epsilon", "rep")
    binary_only = True
    settings_spec = ERM_SETTINGS

    def train(self, X, y, n_classes, epsilon, delta, rng):
        r = self.mechanism("logistic", X, np.where(y == 1, 1.0, -1.0), self.settings["lam"], self.settings["radius"],
                           epsilon, rng)
        return linear_scores(r.w, 2), {"noise_scale": self.noise_scale(r, epsilon)}


@TRAINING.register
class OutputPerturbationERM(ERMMethod):
    """Alg 6 (:func:`output_perturbation`) with the logistic loss on the ball ‖w‖ ≤ R."""

    name = "output_perturbation_erm"
    label = "output perturbation, ERM on ball (wu2016 ch. 4)"
    mechanism = staticmethod(output_perturbation)

    @staticmethod
    def noise_scale(r, epsilon):
        return r.sensitivity / epsilon


@TRAINING.register
class OutputPerturbationERMTight(OutputPerturbationERM):
    """Alg 6 with the tight calibration Δ = G/(λn) (:func:`sensitivity_exact`; module docstring, "The tight
    calibration"): the same minimiser, 3.6× less noise at R = 1 than the thesis' Δ; rows ``calibration: tight``."""

    name = "output_perturbation_erm_tight"
    label = "output perturbation, ERM on ball (wu2016 ch. 4, tight calibration)"
    calibration_kind = "tight"
    mechanism = staticmethod(functools.partial(output_perturbation, sensitivity="tight"))
