"""Multinomial logistic regression (softmax cross-entropy) without a separate bias.

Conventions (used by every function of :mod:`dpbench.learn`):

* Features ``X`` have shape ``(n, D)`` and are assumed unit-ball normalised, ``‖x_n‖₂ ≤ 1``, with the bias
  already folded in as a constant feature (x̃ = [x, 1]/√2). The model therefore has NO separate bias:
  ``θ`` is a ``(D, C)`` matrix and ``logits = X @ θ`` (van der Maaten & Hannun 2020, §3 assumption 3:
  φ′(x; θ) = θᵀx, no bias).
* Labels ``y`` are integer class indices ``(n,)`` in ``[0, C)`` everywhere (never one-hot).
* Flat parameter vectors are ``θ.ravel()`` of the C-ordered ``(D, C)`` matrix (``(T, D, C)`` for stacks).
* Everything is float64 (L-BFGS needs accurate objective values). The lockstep solver
  (:mod:`dpbench.learn.lbfgs_many`) may iterate in float32 but certifies its stopping rule in float64.

Internally products are computed in the "transposed" layout ``θᵀ Xᵀ`` / ``Gᵀ X``, which on OpenBLAS is ~1.7×
faster than ``X θ`` / ``Xᵀ G`` for the narrow C = 10 output.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from dpbench.privacy import _validate as _v

__all__ = [
    "LIPSCHITZ_K",
    "HESSIAN_BOUND_L",
    "FitInfo",
    "blas_thread_limit",
    "softmax_objective",
    "fit_softmax",
    "fit_softmax_many",
    "SOLVER_ERROR_FRACTION",
    "sensitivity_grad_norm_tol",
    "solver_error_fraction",
    "predict_logits",
    "predict",
    "accuracy",
    "predict_logits_many",
    "predict_many",
    "accuracy_many",
    "per_example_gradient_norms",
    "softmax_probabilities",
]

#: Lipschitz constant K of the softmax cross-entropy in the logits, ‖∇ₐℓ‖₂ = ‖p − y‖₂ ≤ √2 (paper Theorem 9,
#: App. D). With ‖x‖₂ ≤ 1 this also bounds the per-example parameter gradient ‖x (p − y)ᵀ‖_F ≤ √2.
LIPSCHITZ_K: float = math.sqrt(2.0)
#: Bound L on the largest eigenvalue of the Hessian diag(p) − ppᵀ of the loss in the logits (paper Theorem 10,
#: Eq. 67–69, Gershgorin, App. D); with ‖x‖₂ ≤ 1 it bounds the Hessian in θ as well.
HESSIAN_BOUND_L: float = 0.5


@dataclass(frozen=True)
class FitInfo:
    """Diagnostics of an L-BFGS fit (returned with ``return_info=True``)."""

    n_iter: int  #: L-BFGS iterations
    n_fev: int  #: objective/gradient evaluations
    fun: float  #: final objective value (summed over models for ``fit_softmax_many``)
    grad_max: float  #: max |gradient| at the solution (the quantity compared with ``gtol``)
    converged: bool  #: scipy's ``success`` flag
    message: str
    seconds: float  #: wall time of the optimisation
    grad_norm: float = float("nan")  #: ‖∇J‖₂ at the returned θ (set when a ``grad_norm_tol`` was asked for)


#: Shifted logits (a − max a ≤ 0) are clamped at this value before exp. e^-600 ≈ 3e-261 is far below float64
#: resolution of the normaliser (≥ 1), so probabilities change by < 1e-260 absolutely, while subnormal numbers
#: (e^-709 and below), which make OpenBLAS and numpy ~10× slower, never arise. The loss itself uses the
#: unclamped true-class logit, so objective values are exact.
EXP_FLOOR = -600.0

#: Default η of :func:`sensitivity_grad_norm_tol`: the solver's distance to the exact minimiser is at most
#: η/2 of the replace-one sensitivity 2K/(Nλ) of that minimiser.
SOLVER_ERROR_FRACTION: float = 0.01


#: Smallest stopping tolerance asked of L-BFGS: below ~1e-8 a float64 objective of O(1) can no longer
#: register the decrease a line search needs, so the solver would stall (measured: 7.7e-10 reachable on a
#: small problem, ~1e-8 is the rough worst case). Only matters for n ≳ 7·10⁵ at η = 0.01.
GRAD_NORM_FLOOR: float = 2e-8


def solver_error_fraction(n: int, error_fraction: float = SOLVER_ERROR_FRACTION) -> float:
    """The η actually used for n examples: max(η, GRAD_NORM_FLOOR·n/K) — a function of the public n only, so
    calibrating noise to it is data-independent (1.4% at n = 10⁶ for η = 0.01)."""
    eta = float(error_fraction)
    if not (0.0 < eta <= 1.0):
        raise ValueError(f"error_fraction must lie in (0, 1], got {error_fraction!r}")
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return min(1.0, max(eta, GRAD_NORM_FLOOR * int(n) / LIPSCHITZ_K))


def sensitivity_grad_norm_tol(n: int, error_fraction: float = SOLVER_ERROR_FRACTION) -> float:
    """The stopping rule ‖∇J(θ̂)‖₂ ≤ τ = η·K/n for a softmax fit whose minimiser has replace-one sensitivity
    Δ = 2K/(nλ) (vdm2020 Lemma 1; loss perturbation with λ its effective L2), with η from
    :func:`solver_error_fraction`.

    J is λ-strongly convex, so ‖θ̂ − θ*‖ ≤ ‖∇J(θ̂)‖₂/λ ≤ τ/λ = (η/2)·Δ, and two such approximate fits on
    neighbouring datasets differ by at most Δ(1 + η). τ does not depend on λ or on the data (only on n), so a
    noise scale calibrated to Δ(1 + η) covers the solver error exactly. ``error_fraction`` is η ∈ (0, 1]."""
    return solver_error_fraction(n, error_fraction) * LIPSCHITZ_K / int(n)

def blas_thread_limit(n):
    """Context manager limiting BLAS threads to ``n`` (threadpoolctl); ``None`` = no change."""
    if n is None:
        return contextlib.nullcontext()
    return threadpool_limits(limits=int(n), user_api="blas")


# ----------------------------------------------------------------------------------------------------------
# core: cross-entropy in the transposed layout
# ----------------------------------------------------------------------------------------------------------


def _check_labels(y, n: int, n_classes: int) -> np.ndarray:
    return _v.label_vector("y", y, n, n_classes)


def _check_training(X, y, n_classes, l2=0.0):
    """Entry-point validation of a training call: X (n ≥ 1, D) finite, y integer labels of length n in
    0..n_classes-1, n_classes ≥ 2, l2 finite and ≥ 0. Returns (X float64, y, n_classes, l2)."""
    X = _v.feature_matrix("X", X)
    C = _v.n_classes("n_classes", n_classes)
    return X, _check_labels(y, X.shape[0], C), C, _v.nonnegative("l2", l2)


def _as_float_matrix(X) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n, D), got shape {X.shape}")
    return X


def _ce_transposed(ZT: np.ndarray, flat_true: np.ndarray) -> float:
    """In place: turn logits ``ZT`` (…, C, n) into ``(P − Y)ᵀ`` and return the summed cross-entropy.

    ``flat_true`` indexes the true-class entries of ``ZT.reshape(-1)``. Log-sum-exp is stabilised by
    subtracting the per-example max.
    """
    ZT -= ZT.max(axis=-2, keepdims=True)
    flat = ZT.reshape(-1)  # view (ZT is contiguous)
    true_logit_sum = flat[flat_true].sum(dtype=np.float64)
    # no subnormals downstream (they slow BLAS ~10x); see EXP_FLOOR (float32: e^-87 is its smallest normal)
    np.maximum(ZT, EXP_FLOOR if ZT.dtype == np.float64 else -87.0, out=ZT)
    np.exp(ZT, out=ZT)
    s = ZT.sum(axis=-2, keepdims=True)
    loss_sum = float(np.log(s).sum(dtype=np.float64) - true_logit_sum)  # float64 sums also for float32 logits
    ZT /= s
    flat[flat_true] -= 1.0
    return loss_sum


def _true_index(y: np.ndarray, n_classes: int) -> np.ndarray:
    """Flat indices of (y_n, n) in a contiguous (C, n) array (or (T, C, n) for y of shape (T, n))."""
    if y.ndim == 1:
        n = y.shape[0]
        return y * n + np.arange(n)
    T, n = y.shape
    return (np.arange(T)[:, None] * (n_classes * n) + y * n + np.arange(n)[None, :]).reshape(-1)


class _Objective:
    """mean CE + (l2/2)‖θ‖²_F + ⟨linear, θ⟩ with gradient, data prepared once (X kept as given, float64)."""

    def __init__(self, X, y, n_classes, l2, linear):
        self.X, self.y, self.C, self.l2 = _check_training(X, y, n_classes, l2)
        self.n, self.D = self.X.shape
        self.flat_true = _true_index(self.y, self.C)
        if linear is not None:
            linear = np.asarray(linear, dtype=np.float64)
            if linear.size != self.D * self.C or not np.isfinite(linear).all():
                raise ValueError(f"linear must hold {self.D}x{self.C} finite values, got shape {linear.shape}")
            linear = linear.reshape(self.D, self.C)
        self.linear = linear

    def _products(self, theta):
        """(summed cross-entropy, gradient of the mean (D, C)) of the data term at ``theta``."""
        ZT = theta.T @ self.X.T  # (C, n), C-contiguous
        loss_sum = _ce_transposed(ZT, self.flat_true)
        return loss_sum, (ZT @ self.X).T * (1.0 / self.n)

    def __call__(self, theta_flat):
        theta = np.asarray(theta_flat, dtype=np.float64).reshape(self.D, self.C)
        loss_sum, grad = self._products(theta)
        value = loss_sum / self.n
        if self.l2:
            value += 0.5 * self.l2 * float(np.vdot(theta, theta))
            grad += self.l2 * theta
        if self.linear is not None:
            value += float(np.vdot(self.linear, theta))
            grad += self.linear
        return value, np.ascontiguousarray(grad).reshape(-1)


#: M·N·K of one single-precision product below which OpenBLAS (0.3.x, x86-64) multiplies without packing its
#: operands: a (C, D) x (D, rows) product of a softmax evaluation costs about half as much CPU per row when cut
#: into blocks under it (measured 2026-11-27 on 3,906 x 785 parts, C = 10: 2.13 ms vs 4.1 ms an evaluation; at
#: 128 rows, M·N·K just over 10⁶, the cost jumps back). 0.9·10⁶ leaves a margin; another BLAS loses little.
SMALL_GEMM_MNK = 900_000


def row_block(dim: int, n_classes: int) -> int:
    """Rows per block of the float32 softmax products (:data:`SMALL_GEMM_MNK`), at least 16."""
    return max(16, SMALL_GEMM_MNK // max(1, dim * n_classes))


class _Objective32(_Objective):
    """:class:`_Objective` with single-precision products (a float32 copy of X and θ; the loss summed in
    float64, the gradient's GEMM in float32; value and gradient returned as float64): about half the CPU of
    the float64 evaluation on blocks of thousands of rows (memory traffic), for fits whose result needs no
    float64 certificate."""

    def __init__(self, X, y, n_classes, l2, linear):
        super().__init__(X, y, n_classes, l2, linear)
        self.X32 = self.X.astype(np.float32)
        self.block = row_block(self.D, self.C)

    def _products(self, theta):
        # both products in row blocks small enough for OpenBLAS's unpacked small-matrix kernel (row_block): on
        # parts of 3,906 x 785 an evaluation 2.14 ms instead of 4.1, a member fit 0.60x the CPU
        # (benchmarks/subsagg_blocked.py)
        X, b, n = self.X32, self.block, self.n
        thetaT = np.ascontiguousarray(theta.T, dtype=np.float32)  # (C, D)
        ZT = np.empty((self.C, n), dtype=np.float32)
        for a in range(0, n, b):
            np.matmul(thetaT, X[a : a + b].T, out=ZT[:, a : a + b])
        loss_sum = _ce_transposed(ZT, self.flat_true)  # ZT is now (P − Y)ᵀ
        G, part = np.zeros((self.C, self.D), dtype=np.float32), np.empty((self.C, self.D), dtype=np.float32)
        for a in range(0, n, b):
            G += np.matmul(ZT[:, a : a + b], X[a : a + b], out=part)
        return loss_sum, G.T.astype(np.float64) * (1.0 / n)


def softmax_objective(theta_flat, X, y, l2, linear=None):
    """Objective of Eq. 2 / Eq. 3 (Alg. 4 form) and its gradient.

    ``J(θ) = (1/n) Σ_n CE(θᵀx_n, y_n) + (l2/2)‖θ‖²_F + ⟨linear, θ⟩`` with CE(a, y) = logsumexp(a) − a_y.
    For loss perturbation the caller passes ``l2`` = its regularisation (e.g. ρ/N + λ/N) and
    ``linear = B / N`` (Alg. 4).

    Parameters: ``theta_flat`` (D·C,) = θ.ravel(); ``X`` (n, D); ``y`` (n,) integer labels; ``linear`` None or
    (D, C) / (D·C,). The number of classes is ``theta_flat.size // D``.
    Returns ``(value, grad_flat)``.
    """
    X = _as_float_matrix(X)
    D = X.shape[1]
    theta_flat = np.asarray(theta_flat, dtype=np.float64).reshape(-1)
    if theta_flat.size % D:
        raise ValueError("theta_flat.size must be a multiple of D")
    return _Objective(X, y, theta_flat.size // D, l2, linear)(theta_flat)


def _lbfgs(fun, x0, gtol, ftol, maxiter, maxcor):
    from scipy.optimize import minimize

    t0 = time.perf_counter()
    res = minimize(
        fun,
        x0,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": int(maxiter), "gtol": float(gtol), "ftol": float(ftol), "maxcor": int(maxcor)},
    )
    seconds = time.perf_counter() - t0
    info = FitInfo(
        n_iter=int(res.nit),
        n_fev=int(res.nfev),
        fun=float(res.fun),
        grad_max=float(np.max(np.abs(res.jac))) if res.jac.size else 0.0,
        converged=bool(res.success),
        message=str(res.message),
        seconds=seconds,
    )
    return res.x, info


def softmax_curvature(X, theta, *, row_chunk: int = 4096) -> dict[str, np.ndarray]:
    """Kronecker-factored curvature of mean CE at ``theta`` (D, C) (K-FAC, Martens & Grosse 2015):
    ∇²(mean CE) ≈ A ⊗ B with A = Σ_n w_n x_n x_nᵀ / N (w_n = mean_c p_nc(1 − p_nc)) and B = (diag(p̄) −
    Σ_n p_n p_nᵀ / N) / w̄ (C × C; B·1 = 0, the softmax's shift invariance). At θ = 0 it is exact: A ⊗ B =
    XᵀX/N ⊗ (I/C − 11ᵀ/C²). Returns the eigendecompositions ``{"U", "a", "V", "b"}`` (A = U diag(a) Uᵀ,
    B = V diag(b) Vᵀ). X is read in fixed row chunks (no copy of a memory-mapped X; the same bits whatever the
    caller), float64."""
    X = np.asarray(X) if not isinstance(X, np.ndarray) else X
    n, D = X.shape
    theta = np.asarray(theta, dtype=np.float64).reshape(D, -1)
    C = theta.shape[1]
    A, PP, psum, wsum = np.zeros((D, D)), np.zeros((C, C)), np.zeros(C), 0.0
    for s in range(0, n, row_chunk):
        Xc = np.asarray(X[s : s + row_chunk], dtype=np.float64)
        P = Xc @ theta
        P -= P.max(axis=1, keepdims=True)
        np.exp(P, out=P)
        P /= P.sum(axis=1, keepdims=True)
        w = (P * (1.0 - P)).mean(axis=1)
        A += Xc.T @ (w[:, None] * Xc)
        PP += P.T @ P
        psum += P.sum(axis=0)
        wsum += float(w.sum())
    A /= n
    B = (np.diag(psum / n) - PP / n) / max(wsum / n, 1e-300)
    a, U = np.linalg.eigh((A + A.T) / 2)
    b, V = np.linalg.eigh((B + B.T) / 2)
    return {"U": U, "a": np.maximum(a, 0.0), "V": V, "b": np.maximum(b, 0.0)}


class KroneckerWhitening:
    """Whitened coordinates φ of θ (D, C): θ = U (φ ⊙ S) Vᵀ with S_ij = (a_i b_j + l2)^(−1/2), from a
    :func:`softmax_curvature` ``{"U", "a", "V", "b"}``. L-BFGS on φ is L-BFGS on θ with initial inverse
    Hessian (A ⊗ B + l2·I)⁻¹: the L2-regularised softmax is badly conditioned (its curvature spans orders of
    magnitude across feature and class directions, which a scalar initial Hessian learns only slowly), and
    this cuts the iterations several-fold (measured on MNIST: 143 → 28 for a fit from 0 at λ = 10⁻⁴). Only the
    path changes: a certified stopping rule still tests ‖∇_θ J‖₂ (∇_φ J = Uᵀ(∇_θ J)V ⊙ S)."""

    def __init__(self, curvature: dict, l2: float, D: int, C: int):
        U, a, V, b = (np.asarray(curvature[k], dtype=np.float64) for k in ("U", "a", "V", "b"))
        if U.shape != (D, D) or a.shape != (D,) or V.shape != (C, C) or b.shape != (C,):
            raise ValueError(f"the curvature must have U {D} x {D}, a ({D},), V {C} x {C}, b ({C},); got "
                             f"{U.shape}, {a.shape}, {V.shape}, {b.shape}")
        if not (l2 > 0 and all(np.isfinite(m).all() for m in (U, a, V, b)) and (a >= 0).all() and (b >= 0).all()):
            raise ValueError("the preconditioner needs finite factors with eigenvalues >= 0 and l2 > 0")
        self.U, self.V, self.D, self.C = U, V, D, C
        self.S = 1.0 / np.sqrt(a[:, None] * b[None, :] + float(l2))

    def to_theta(self, phi):
        return (self.U @ (np.reshape(phi, (self.D, self.C)) * self.S) @ self.V.T).reshape(-1)

    def to_phi(self, theta):
        return ((self.U.T @ np.reshape(theta, (self.D, self.C)) @ self.V) / self.S).reshape(-1)

    def grad_to_phi(self, grad):
        return ((self.U.T @ np.reshape(grad, (self.D, self.C)) @ self.V) * self.S).reshape(-1)


class _WhitenedObjective:
    """An objective of θ seen in :class:`KroneckerWhitening` coordinates; ``theta_grad`` holds ∇_θ J of the last
    evaluation (what a certified stopping rule tests)."""

    def __init__(self, obj, whitening: KroneckerWhitening):
        self.obj, self.w = obj, whitening
        self.theta_grad = None

    def __call__(self, phi):
        value, self.theta_grad = self.obj(self.w.to_theta(phi))
        return value, self.w.grad_to_phi(self.theta_grad)


class _ReachedGradNorm(Exception):
    def __init__(self, x, norm, value, grad_max):
        self.x, self.norm, self.value, self.grad_max = x, norm, value, grad_max


class _StopAtGradNorm:
    """Objective wrapper that stops L-BFGS at the first evaluated point with ‖∇J‖₂ ≤ ``tol``. Any point will
    do: for a λ-strongly convex J, ‖θ − θ*‖ ≤ ‖∇J(θ)‖₂/λ holds at every θ."""

    def __init__(self, obj, tol):
        self.obj, self.tol = obj, float(tol)
        self.last_x, self.last_norm, self.calls = None, math.inf, 0

    def __call__(self, x):
        self.calls += 1
        value, grad = self.obj(x)
        # the certificate is on the θ-gradient (a whitened objective returns its coordinates' and keeps θ's)
        theta_grad = getattr(self.obj, "theta_grad", grad)
        norm = float(np.linalg.norm(theta_grad))
        if norm <= self.last_norm:
            self.last_x, self.last_norm = np.array(x, copy=True), norm
        if norm <= self.tol:
            raise _ReachedGradNorm(np.array(x, copy=True), norm, float(value), float(np.max(np.abs(theta_grad))))
        return value, grad


def _lbfgs_to_grad_norm(obj, x0, tol, maxiter, maxcor, restarts=3):
    """L-BFGS until ‖∇J‖₂ ≤ ``tol`` (scipy's own tests off: gtol = ftol = 0), restarted from the best point
    (fresh curvature memory) up to ``restarts`` times; ``RuntimeError`` if it is not reached."""
    from scipy.optimize import minimize

    t0 = time.perf_counter()
    wrapped = _StopAtGradNorm(obj, tol)
    x, iterations, message = np.asarray(x0, dtype=np.float64), [0], ""

    def count(_xk):
        iterations[0] += 1

    for _ in range(restarts + 1):
        try:
            res = minimize(wrapped, x, jac=True, method="L-BFGS-B", callback=count,
                           options={"maxiter": int(maxiter), "gtol": 0.0, "ftol": 0.0, "maxcor": int(maxcor)})
            message = str(res.message)
            x = wrapped.last_x if wrapped.last_x is not None else res.x
        except _ReachedGradNorm as done:  # value and θ-gradient of the stopping point, as evaluated there
            info = FitInfo(n_iter=iterations[0], n_fev=wrapped.calls, fun=done.value,
                           grad_max=done.grad_max, converged=True,
                           message=f"‖∇J‖₂ = {done.norm:.3g} ≤ {tol:.3g}", seconds=time.perf_counter() - t0,
                           grad_norm=done.norm)
            return done.x, info
    raise RuntimeError(f"L-BFGS did not reach ‖∇J‖₂ ≤ {tol:.3g} (best {wrapped.last_norm:.3g}) in "
                       f"{restarts + 1} runs of at most {maxiter} iterations ({message}); raise maxiter or the "
                       "solver error fraction")


def fit_softmax(
    X,
    y,
    n_classes,
    l2,
    linear=None,
    theta0=None,
    gtol=1e-5,
    maxiter=2000,
    *,
    ftol=2.220446049250313e-09,
    maxcor=10,
    blas_threads=None,
    return_info=False,
    grad_norm_tol=None,
    float32=False,
    precondition=None,
):
    """argmin_θ of :func:`softmax_objective` by scipy L-BFGS-B (the paper trains with L-BFGS, §4.1).

    ``theta0`` (D, C) warm-starts the solver (e.g. the non-private solution for loss perturbation); default 0.
    Stops at max|∇J| ≤ ``gtol``, relative objective change ≤ ``ftol`` or ``maxiter`` iterations — or, when
    ``grad_norm_tol`` is given, exactly when ‖∇J(θ)‖₂ ≤ ``grad_norm_tol`` (then ``gtol``/``ftol`` are not
    used, and ``RuntimeError`` is raised if it cannot be reached): with l2 > 0 the returned θ is then within
    ``grad_norm_tol / l2`` of the exact minimiser, the guarantee the sensitivity methods need.
    ``blas_threads``: limit BLAS threads during the fit (None = unchanged; 1 is best for small problems or
    when the cores are shared). ``float32``: single-precision evaluations (:class:`_Objective32`) — only without
    ``grad_norm_tol`` (a certified stopping rule needs float64 gradients); the iterates then differ from the
    float64 ones by rounding. ``precondition``: None or a :func:`softmax_curvature` — iterate in its
    :class:`KroneckerWhitening` coordinates (needs l2 > 0; ``grad_norm_tol`` then still tests ‖∇_θ J‖₂, while
    scipy's own ``gtol`` would act on the whitened gradient). Returns θ (D, C), or ``(θ, FitInfo)`` with
    ``return_info=True``.
    """
    if float32 and grad_norm_tol is not None:
        raise ValueError("float32 evaluations cannot certify grad_norm_tol; use float64 for certified fits")
    obj = (_Objective32 if float32 else _Objective)(X, y, n_classes, l2, linear)
    if theta0 is None:
        x0 = np.zeros(obj.D * obj.C)
    else:
        x0 = np.array(theta0, dtype=np.float64).reshape(-1)
        if x0.size != obj.D * obj.C:
            raise ValueError(f"theta0 must have {obj.D}x{obj.C} entries, got {x0.size}")
    whitening = None
    if precondition is not None:
        whitening = KroneckerWhitening(precondition, obj.l2, obj.D, obj.C)
        obj, x0 = _WhitenedObjective(obj, whitening), whitening.to_phi(x0)
    with blas_thread_limit(blas_threads):
        if grad_norm_tol is None:
            x, info = _lbfgs(obj, x0, gtol, ftol, maxiter, maxcor)
        else:
            tol = float(grad_norm_tol)
            if not (tol > 0 and math.isfinite(tol)):
                raise ValueError(f"grad_norm_tol must be a positive finite number, got {grad_norm_tol!r}")
            x, info = _lbfgs_to_grad_norm(obj, x0, tol, maxiter, maxcor)
    if whitening is not None:
        x, obj = whitening.to_theta(x), obj.obj
    theta = x.reshape(obj.D, obj.C)
    return (theta, info) if return_info else theta


class _ManyObjective:
    """Σ_t [mean CE_t + (l2/2)‖θ_t‖²] over T separable problems, batched matmuls."""

    def __init__(self, Xs, ys, n_classes, l2):
        self.Xs = np.asarray(Xs, dtype=np.float64)
        if self.Xs.ndim != 3:
            raise ValueError(f"Xs must be 3-D (T, n, D), got shape {self.Xs.shape}")
        self.T, self.n, self.D = self.Xs.shape
        self.C = int(n_classes)
        ys = np.asarray(ys)
        if ys.shape != (self.T, self.n):
            raise ValueError(f"ys must have shape ({self.T}, {self.n}), got {ys.shape}")
        self.ys = _check_labels(ys.reshape(-1), self.T * self.n, self.C).reshape(self.T, self.n)
        self.flat_true = _true_index(self.ys, self.C)
        self.l2 = float(l2)
        self.XsT = self.Xs.transpose(0, 2, 1)

    def __call__(self, theta_flat):
        theta = np.asarray(theta_flat, dtype=np.float64).reshape(self.T, self.D, self.C)
        ZT = np.matmul(theta.transpose(0, 2, 1), self.XsT)  # (T, C, n)
        loss_sum = _ce_transposed(ZT, self.flat_true)
        gradT = np.matmul(ZT, self.Xs)  # (T, C, D)
        grad = gradT.transpose(0, 2, 1) * (1.0 / self.n)
        value = loss_sum / self.n
        if self.l2:
            value += 0.5 * self.l2 * float(np.vdot(theta, theta))
            grad += self.l2 * theta
        return value, np.ascontiguousarray(grad).reshape(-1)


class _RowSpaceObjective:
    """One member's J(θ) = mean CE + (l2/2)‖θ‖² on its block X_b (n × D, n < D), restricted to θ in the row space
    of X_b in orthonormal coordinates: θ = Q B with Q = X_bᵀ L⁻ᵀ (D × n, QᵀQ = I) and K = X_b X_bᵀ = L Lᵀ
    (Cholesky). Then X_b θ = L B, ∇_B J = Qᵀ ∇_θ J = Lᵀ (P − Y)/n + l2·B and ‖θ‖ = ‖B‖: the problem on B (n·C
    variables) is the problem on θ seen in an orthonormal basis, so L-BFGS takes the same steps (its iterates
    are linear combinations of gradients, all in the row space when started from 0, and it uses only inner
    products and norms, which Q preserves). Keeps the last evaluation's residual (P − Y) for the θ-space
    gradient ∇_θ J = X_bᵀ (P − Y)/n + l2·θ that scipy's max-norm test needs."""

    def __init__(self, X, y, n_classes, l2):
        self.X, self.C, self.l2 = X, int(n_classes), float(l2)
        self.n, self.D = X.shape
        from scipy.linalg.blas import dsyrk
        from scipy.linalg.lapack import dpotrf

        # K = X_b X_bᵀ (lower triangle, half a GEMM) and its Cholesky factor
        L, info = dpotrf(dsyrk(1.0, X.T, trans=1, lower=1), lower=1, clean=1, overwrite_a=1)
        if info != 0:
            raise np.linalg.LinAlgError("the block's rows are linearly dependent")
        self.L = L
        self.flat_true = _true_index(y, self.C)
        self.last, self.watch = None, None

    def __call__(self, b_flat):
        from scipy.linalg.blas import dtrmm

        B = np.asarray(b_flat, dtype=np.float64).reshape(self.n, self.C)
        ZT = dtrmm(1.0, self.L, B, lower=1).T  # (C, n) logits L B, C-contiguous (triangular: half a GEMM)
        loss_sum = _ce_transposed(ZT, self.flat_true)  # ZT -> P − Y
        grad = dtrmm(1.0 / self.n, self.L, ZT.T, lower=1, trans_a=1)  # Lᵀ (P − Y)/n, (n, C)
        value = loss_sum / self.n
        if self.l2:
            value += 0.5 * self.l2 * float(np.vdot(B, B))
            grad += self.l2 * B
        grad = np.ascontiguousarray(grad).reshape(-1)
        self.last = (np.array(b_flat, dtype=np.float64), ZT, grad)
        return value, grad

    def theta(self, b_flat):
        """θ = Q B = X_bᵀ L⁻ᵀ B (D, C)."""
        from scipy.linalg import solve_triangular

        A = solve_triangular(self.L, np.asarray(b_flat).reshape(self.n, self.C), trans="T", lower=True)
        return self.X.T @ A

    def theta_grad_max(self, b_flat, grad_b, gtol, exact=False):
        """max|∇_θ J| at B — or, unless ``exact``, a bound that settles its side of ``gtol`` more cheaply:
        ‖∇_θ J‖₂ = ‖∇_B J‖₂ bounds it above (≤ gtol: stop) and √(D·C)·max|∇_θ J| bounds ‖∇_θ J‖₂; then the
        entries of ∇_θ J = X_bᵀ (P − Y)/n + l2·θ at the WATCH features where it was largest at the last full
        evaluation bound it below (> gtol: go on). Only otherwise is the whole of X_bᵀ (P − Y) formed."""
        norm = float(np.linalg.norm(grad_b))
        root = math.sqrt(self.D * self.C)
        margin = 1e-9  # relative rounding of the two ways of forming the norm
        if not exact and (norm <= gtol * (1 - margin) or norm > gtol * root * (1 + margin)):
            return norm if norm <= gtol else norm / root
        if self.last is None or not np.array_equal(self.last[0], b_flat):
            self(b_flat)
        R = self.last[1]  # (C, n): P − Y
        theta = self.theta(b_flat) if self.l2 else None
        if not exact and self.watch is not None:
            g = (R @ self.Xw) * (1.0 / self.n)
            if self.l2:
                g += self.l2 * theta[self.watch].T
            low = float(np.max(np.abs(g)))
            if low > gtol:
                return low
        g = (R @ self.X) * (1.0 / self.n)  # (C, D)
        if self.l2:
            g += self.l2 * theta.T
        a = np.abs(g).max(axis=0)
        watch = np.sort(np.argsort(a)[-WATCH:])
        if self.watch is None or not np.array_equal(watch, self.watch):
            self.watch, self.Xw = watch, np.ascontiguousarray(self.X[:, watch])
        return float(a.max())


#: features at which the row-space fit first looks for a gradient entry above gtol (:class:`_RowSpaceObjective`)
WATCH = 32


def _fit_row_space(X, y, n_classes, l2, gtol, ftol, maxiter, maxcor):
    """scipy L-BFGS-B on one member in row-space coordinates (:class:`_RowSpaceObjective`), from θ = 0, with
    scipy's own tests in θ-space: ``ftol`` (invariant) inside scipy, max|∇_θ J| ≤ ``gtol`` checked after every
    iteration (scipy's own max-norm test is off: it would be taken in the coordinates B). Returns
    ``(θ (D, C), FitInfo)`` or None when the block's rows are linearly dependent."""
    from scipy.optimize import minimize

    t0 = time.perf_counter()
    try:
        obj = _RowSpaceObjective(X, y, n_classes, l2)
    except np.linalg.LinAlgError:
        return None
    x0 = np.zeros(obj.n * obj.C)
    f0, g0 = obj(x0)
    state = {"gmax": obj.theta_grad_max(x0, g0, gtol), "nit": 0}
    hit = "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL"
    if state["gmax"] <= gtol:
        return np.zeros((obj.D, obj.C)), FitInfo(0, 1, float(f0), state["gmax"], True, hit, 0.0)

    def check(intermediate_result):
        state["nit"] += 1
        last = obj.last
        grad = last[2] if np.array_equal(last[0], intermediate_result.x) else obj(intermediate_result.x)[1]
        state["gmax"] = obj.theta_grad_max(intermediate_result.x, grad, gtol)
        if state["gmax"] <= gtol:
            raise StopIteration

    res = minimize(obj, x0, jac=True, method="L-BFGS-B", callback=check,
                   options={"maxiter": int(maxiter), "gtol": 0.0, "ftol": float(ftol), "maxcor": int(maxcor)})
    stopped = state["gmax"] <= gtol
    if not stopped:  # the info's max|∇_θ J| at the returned point (the test above may have used a bound)
        state["gmax"] = obj.theta_grad_max(res.x, obj(res.x)[1], gtol, exact=True)
    info = FitInfo(n_iter=int(res.nit), n_fev=int(res.nfev), fun=float(res.fun), grad_max=state["gmax"],
                   converged=bool(stopped or res.success), message=hit if stopped else str(res.message),
                   seconds=time.perf_counter() - t0)
    return obj.theta(res.x), info


def fit_softmax_many(
    Xs,
    ys,
    n_classes,
    l2=0.0,
    theta0=None,
    gtol=1e-4,
    maxiter=2000,
    *,
    method="separate",
    ftol=2.220446049250313e-09,
    maxcor=10,
    blas_threads=1,
    return_info=False,
    float32=False,
):
    """Fit T independent softmax models of identical shape (subsample-and-aggregate members, Alg. 8).

    ``Xs`` (T, n, D), ``ys`` (T, n) integer labels; model t minimises J_t = mean CE of block t +
    (l2/2)‖θ_t‖² (plus nothing else). Returns θ (T, D, C), or ``(θ, info)`` with ``return_info=True``
    (a FitInfo for ``"joint"``, a list of T FitInfo for ``"separate"``).

    ``method``:

    * ``"separate"`` (default): T scipy L-BFGS-B runs, each with its own line search and stopping rule —
      exactly the per-model semantics of the reference code. Measured fastest: each problem (~1.5 MB) is
      cache-resident and one evaluation costs ~0.4 ms.
    * ``"row_space"``: the same T scipy L-BFGS-B runs, each (when n ≤ D/2 — beyond, the Gram matrix costs more
      than it saves —, started from 0, rows linearly independent) on its block's row space in orthonormal coordinates (:class:`_RowSpaceObjective`): by the
      representer argument every iterate θ_k lies in that row space, and L-BFGS-B without bounds only uses
      inner products, so the iterates are those of ``"separate"`` (equal up to rounding, tested: same
      iteration counts and stopping reasons), with evaluations on n·C instead of D·C parameters (Cholesky
      factor of X_b X_bᵀ instead of X_b) — ~2× less CPU at n = 234, D = 785 (benchmarks/lockstep_lbfgs.py).
      scipy's max-norm test ``gtol`` is applied to the θ-space gradient after every iteration.
    * ``"joint"``: ONE L-BFGS run on Σ_t J_t over the concatenated parameters with batched matmuls. The sum is
      separable, so the minimiser is the stack of the T minimisers and block t of the gradient is ∇J_t
      (``gtol`` bounds every model). Measured 3.5× SLOWER than ``"separate"`` for T=256, n=234, D=785 (more
      iterations: the slowest model dictates; and every iteration streams all T blocks from memory).

    With ``l2 = 0`` (the paper's setting, §4.1; the reference code uses no weight decay) each block of ~N/T
    points in D dims is typically linearly separable, so no finite minimiser exists: the result is defined by
    the stopping rule (``gtol``, default 1e-4 like the code's ``tolerance_grad``, and ``maxiter``), which acts
    as an implicit regulariser. Then ``"joint"`` is NOT equivalent to separate runs (it keeps optimising
    models that separate runs would have stopped; ~96 % test-prediction agreement measured); with l2 > 0
    both converge to the same models.

    ``blas_threads`` (default 1; None = leave unchanged) limits BLAS threads during the call: these GEMMs
    are tiny, so extra threads never help and are ~10-100× slower when the cores are shared.

    ``float32`` (``"separate"`` / ``"row_space"``): members fitted in θ-space use single-precision evaluations
    (:func:`fit_softmax` ``float32``; the row-space solve stays float64) — ~2× less CPU on parts of ~4,000 rows
    (measured 1.99× on 3,750 rows, ``benchmarks/lockstep_lbfgs.py``).
    """
    Xs = np.asarray(Xs, dtype=np.float64)
    if Xs.ndim != 3 or 0 in Xs.shape:
        raise ValueError(f"Xs must be 3-D (T, n, D) with T, n, D ≥ 1, got shape {Xs.shape}")
    T, n, D = Xs.shape
    _check_training(Xs.reshape(T * n, D), np.asarray(ys).reshape(-1) if np.size(ys) == T * n else ys,
                    n_classes, l2)  # one pass: finite X, labels, n_classes ≥ 2, l2 ≥ 0
    C = int(n_classes)
    if theta0 is not None:
        theta0 = np.asarray(theta0, dtype=np.float64).reshape(T, D, C)
    with blas_thread_limit(blas_threads):
        if method in ("separate", "row_space"):
            ys = np.asarray(ys)
            if ys.shape != (T, n):
                raise ValueError(f"ys must have shape ({T}, {n}), got {ys.shape}")
            theta = np.empty((T, D, C))
            infos = []
            for t in range(T):
                got = None
                if method == "row_space" and theta0 is None and 2 * n <= D:
                    got = _fit_row_space(Xs[t], ys[t], C, l2, gtol, ftol, maxiter, maxcor)
                if got is None:  # "separate"; or dependent rows, a warm start or n > D/2: the member in θ-space
                    got = fit_softmax(Xs[t], ys[t], C, l2, None, None if theta0 is None else theta0[t], gtol, maxiter,
                                      ftol=ftol, maxcor=maxcor, return_info=True, float32=float32)
                theta[t], inf = got
                infos.append(inf)
            return (theta, infos) if return_info else theta
        if method != "joint":
            raise ValueError(f"method must be 'separate', 'row_space' or 'joint', got {method!r}")
        obj = _ManyObjective(Xs, ys, C, l2)
        x0 = np.zeros(T * D * C) if theta0 is None else theta0.reshape(-1).copy()
        x, info = _lbfgs(obj, x0, gtol, ftol, maxiter, maxcor)
    theta = x.reshape(T, D, C)
    return (theta, info) if return_info else theta


# ----------------------------------------------------------------------------------------------------------
# prediction
# ----------------------------------------------------------------------------------------------------------


def softmax_probabilities(logits, axis=-1):
    """Numerically stable softmax along ``axis``."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=axis, keepdims=True)
    np.maximum(z, EXP_FLOOR, out=z)
    np.exp(z, out=z)
    z /= z.sum(axis=axis, keepdims=True)
    return z


def predict_logits(theta, X):
    """Logits ``X @ θ`` of shape (n, C) for θ (D, C)."""
    theta = np.asarray(theta, dtype=np.float64)
    X = _as_float_matrix(X)
    return (theta.T @ X.T).T


def predict(theta, X):
    """Predicted labels argmax_c (X θ)_c, shape (n,)."""
    return np.argmax(predict_logits(theta, X), axis=1)


def accuracy(theta, X, y):
    """Fraction of correctly classified rows (X (n ≥ 1, D) finite, θ (D, C), y of length n)."""
    X = _v.feature_matrix("X", X)
    theta = np.asarray(theta, dtype=np.float64)
    if theta.ndim != 2 or theta.shape[0] != X.shape[1]:
        raise ValueError(f"theta must have shape (D={X.shape[1]}, C), got {theta.shape}")
    y = np.asarray(y)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) to match X, got {y.shape}")
    return float(np.mean(predict(theta, X) == y))


_CHUNK_ELEMS = 1 << 23  # ~64 MB of float64 logits per chunk in the batched predictions


def predict_logits_many(thetas, X):
    """Logits of a stack of models: θ (R, D, C), X (n, D) -> (R, n, C), one wide GEMM."""
    thetas = np.asarray(thetas, dtype=np.float64)
    X = _as_float_matrix(X)
    R, D, C = thetas.shape
    W = thetas.transpose(1, 0, 2).reshape(D, R * C)
    return (X @ W).reshape(X.shape[0], R, C).transpose(1, 0, 2)


def predict_many(thetas, X):
    """Labels of a stack of models: θ (R, D, C) -> (R, n) int (chunked over R to bound memory)."""
    thetas = np.asarray(thetas, dtype=np.float64)
    X = _as_float_matrix(X)
    R, D, C = thetas.shape
    n = X.shape[0]
    step = max(1, _CHUNK_ELEMS // max(1, n * C))
    out = np.empty((R, n), dtype=np.intp)
    for s in range(0, R, step):
        t = thetas[s : s + step]
        # one wide GEMM (n, r·C), argmax over each model's C contiguous logits in that layout, then the small
        # integer result transposed: no strided pass over the logits (the same labels, ~1.2x less CPU)
        logits = X @ t.transpose(1, 0, 2).reshape(D, t.shape[0] * C)
        out[s : s + t.shape[0]] = logits.reshape(n, t.shape[0], C).argmax(axis=2).T
    return out


def accuracy_many(thetas, X, y):
    """Accuracy of each model of a stack θ (R, D, C) -> (R,)."""
    return np.mean(predict_many(thetas, X) == np.asarray(y)[None, :], axis=1)


# ----------------------------------------------------------------------------------------------------------
# per-example gradients
# ----------------------------------------------------------------------------------------------------------


def per_example_gradient_norms(theta, X, y):
    """‖∇_θ CE(θᵀx_n, y_n)‖_F = ‖p_n − e_{y_n}‖₂ · ‖x_n‖₂, shape (n,).

    The per-example gradient is the rank-one matrix x_n (p_n − e_{y_n})ᵀ, whose Frobenius norm factorises,
    so no per-example gradient is materialised. Bounded by √2·‖x_n‖ (= K for ‖x‖ ≤ 1).
    """
    X = _as_float_matrix(X)
    theta = np.asarray(theta, dtype=np.float64)
    y = _check_labels(y, X.shape[0], theta.shape[1])
    P = softmax_probabilities(predict_logits(theta, X), axis=1)
    P[np.arange(X.shape[0]), y] -= 1.0
    return np.sqrt(np.einsum("nc,nc->n", P, P)) * np.sqrt(np.einsum("nd,nd->n", X, X))
