"""song2018 chapters 3 and 4: DP mini-batch SGD (update 3.6) and local-DP SGD with heterogeneous privacy.

Source: S. Song, "Privacy-Preserving Algorithms for Machine Learning", PhD dissertation, UC San Diego, 2018
(cited as Song 2018), chapter 3 (§3.2–3.4) and chapter 4 (§4.2–4.5); setting, grids and deviations in
docs/studies/song2018.md.

Setting and privacy (both chapters)
-----------------------------------

* Rows ``‖x‖₂ ≤ 1``, labels ``y ∈ {−1, +1}``, logistic loss ℓ(w; x, y) = log(1 + e^{−y wᵀx}), so
  ``‖∇ℓ(w; x, y)‖ = σ(−y wᵀx)‖x‖ ≤ 1`` for every w (L = 1, :class:`~dpbench.learn.psgd.LogisticLoss`).
* Neighbouring relation: **replace one record** (Hamming distance 1, Song 2018, Def. 2.1.1); for local DP the
  "neighbouring inputs" of one report are any two records (x, y), (x', y') of one individual (Song 2018,
  Def. 2.3.1, Eq. 2.1).
* Noise density ρ(z) ∝ exp(−(ε/2)‖z‖₂) in ℝ^d (Song 2018, §3.3, Eq. 3.5; §4.2.1.1, Eq. 4.5), sampled as a
  uniform direction times a radius ‖Z‖ ~ Gamma(shape d, scale 2/ε)
  (:func:`~dpbench.privacy.mechanisms.sample_l2_laplace` with β = ε/2). Calibration: for any u, u' with ‖u − u'‖ ≤ Δ = 2 the density ratio of u + Z and u' + Z at any
  point v is exp((ε/2)(‖v − u'‖ − ‖v − u‖)) ≤ exp((ε/2)‖u − u'‖) ≤ e^ε (triangle inequality).

  - Chapter 3, update (3.6): the data enter one update only through the batch SUM Σ_{i∈B_t} ∇ℓ(w_t; x_i, y_i);
    replacing one record changes it by ≤ 2 (two gradients of norm ≤ 1), so adding Z_t to the sum (i.e. Z_t/b
    to the average) makes the update ε-DP; the batches of a single pass are disjoint, so the pass is ε-DP by
    parallel composition (Song 2018, Thm 3.3.1). Sensitivity of the update itself: 2η_t/b (the proof sketch
    after Thm 3.3.1).
  - Chapter 4, oracle (4.5): ONE individual's report G^DP(w) = λw + ∇ℓ(w; x, y) + Z; λw does not depend on the
    record and ‖∇ℓ(w; x, y) − ∇ℓ(w; x', y')‖ ≤ 2, so each report is ε-LDP (Song 2018, Thm 4.2.1). Each record is
    reported once (one pass); the server's batch average of 50 reports is post-processing.

* Second moment (Thm 4.2.1): for ‖w‖ ≤ 1/λ, ‖λw + ∇ℓ‖ ≤ 2 and E Z = 0, E‖Z‖² = Var + mean² of
  Gamma(d, 2/ε) = 4d/ε² + 4d²/ε², so E‖G^DP(w)‖² ≤ 4 + 4(d² + d)/ε² = Γ² (:func:`gamma_sq_upper`). The
  lower bound used for c₂(L) (Song 2018, §4.5, paragraph 'Why does our algorithm perform suboptimally?') is the
  noise part of a batch average of b reports, 4(d² + d)/(ε² b) (:func:`gamma_sq_lower`).

Chapter 4 learning-rate theory (Song 2018, §4.4, Algorithms 1–2, Thm 4.4.1)
---------------------------------------------------------------------------

* Algorithm 1: η_t = c₁/t while querying G₁ (|D₁| samples), then η_t = c₂/t with t continuing to count
  (:func:`two_phase_steps`). With mini-batches t counts batch UPDATES (the phase boundary is |D₁|/b).
* (4.9): B(c₁, c₂) = [4Γ₁² β₁^{2λc₂−1} c₁²/(2λc₁−1) + 4Γ₂² (1 − β₁^{2λc₂−1}) c₂²/(2λc₂−1)] / T
  (:func:`bound_B`); c₁* = 1/λ gives c₁²/(2λc₁−1) = 1/λ², hence H_CN, H_NC (§4.4.1, :func:`H`).
* Algorithm 2 (:func:`algorithm2`): c_CN = argmin H_CN, c_NC = argmin H_NC over c > 0 (the point c = 1/(2λ) is a
  removable singularity: (1 − β^x)/x → −log β), order CN iff H_CN(c_CN) ≤ H_NC(c_NC), c₁ = 1/λ.
* Baselines: SameClean / SameNoisy use one c minimising B(c, c) over c > 1/(2λ) with the two noise levels
  plugged in (§4.5, footnote 1, :func:`same_c`); CleanOnly uses c = 1/λ (the minimiser of c²/(2λc−1)).

:func:`sgd_runs` trains many independent runs side by side on the many-model engine
:func:`~dpbench.learn.psgd_many.many_model_sgd` (the one wu2016 ch. 3 uses, with the own-batch gradient plug):
run r visits its own index sequence (its own permutation / data order), every model has its own step sizes,
and every noisy model draws its own noise, so vectorising does not couple the runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpbench.learn.psgd import LogisticLoss
from dpbench.learn.psgd_many import many_model_sgd, run_batch_gradient
from dpbench.privacy import _validate as V
from dpbench.privacy.mechanisms import l2_laplace_sum, sample_l2_laplace
from dpbench.privacy.noisy_sgd import gradient_sum_noise

__all__ = [
    "gamma_sq_upper",
    "gamma_sq_lower",
    "ldp_noise",
    "gdp_reports",
    "bound_B",
    "H",
    "argmin_H",
    "same_c",
    "Alg2Choice",
    "algorithm2",
    "two_phase_steps",
    "objective_many",
    "sgd_runs",
]


# ----------------------------------------------------------------------------------------------------------
# noise levels (Thm 4.2.1) and the LDP oracle (4.5)


def gamma_sq_upper(d: int, epsilon: float) -> float:
    """Γ² = 4 + 4(d² + d)/ε² (Song 2018, Thm 4.2.1): E‖G^DP(w)‖² bound for ‖w‖ ≤ 1/λ, ‖∇ℓ‖ ≤ 1."""
    d = V.count("d", d)
    epsilon = V.positive("epsilon", epsilon)
    return 4.0 + 4.0 * (d * d + d) / epsilon ** 2


def gamma_sq_lower(d: int, epsilon: float, batch_size: int) -> float:
    """4(d² + d)/(ε² b) (Song 2018, §4.5): E‖(1/b) Σ Z_i‖² of b independent ε-LDP noises, the 'easy lower bound' of Γ²."""
    d = V.count("d", d)
    epsilon = V.positive("epsilon", epsilon)
    b = V.count("batch_size", batch_size)
    return 4.0 * (d * d + d) / (epsilon ** 2 * b)


def ldp_noise(rng: np.random.Generator, epsilon: float, d: int, size=()) -> np.ndarray:
    """Z with density ∝ exp(−(ε/2)‖z‖) (eq. 3.5/4.5): ‖Z‖ ~ Gamma(d, 2/ε), uniform direction; shape (*size, d)."""
    return sample_l2_laplace(rng, V.positive("epsilon", epsilon) / 2.0, d, size)


def gdp_reports(w, X, y, epsilon: float, l2: float, rng: np.random.Generator) -> np.ndarray:
    """The ε-LDP oracle (4.5) applied to every row: report_i = λw + ∇ℓ(w; x_i, y_i) + Z_i, shape (m, d).

    Each report depends on one record only; ‖x_i‖ ≤ 1 is REQUIRED for the ε-LDP guarantee (checked)."""
    from scipy.special import expit

    w = np.asarray(w, dtype=np.float64)
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if np.any(np.einsum("ij,ij->i", X, X) > 1.0 + 1e-9):
        raise ValueError("gdp_reports needs rows with ||x|| <= 1 (the epsilon-LDP calibration assumes it)")
    coef = -expit(-y * (X @ w)) * y
    grads = coef[:, None] * X
    return l2 * w[None, :] + grads + ldp_noise(rng, epsilon, X.shape[1], X.shape[0])


# ----------------------------------------------------------------------------------------------------------
# learning-rate theory (4.9), H_CN / H_NC, Algorithm 2


def _one_minus_pow_over(beta: float, x):
    """(1 − β^x)/x, continuous at x = 0 (limit −log β)."""
    x = np.asarray(x, dtype=np.float64)
    lb = math.log(beta)
    small = np.abs(x) < 1e-10
    xs = np.where(small, 1.0, x)
    return np.where(small, -lb, -np.expm1(xs * lb) / xs)


def _check_beta(beta1):
    beta1 = float(beta1)
    if not 0.0 < beta1 < 1.0:
        raise ValueError(f"beta must lie in (0, 1), got {beta1!r}")
    return beta1


def bound_B(c1, c2, gamma1_sq, gamma2_sq, beta1, lam, T: float = 1.0):
    """(4.9): B(c₁, c₂) = 4Γ₁² β₁^{2λc₂−1} c₁²/(T(2λc₁−1)) + 4Γ₂² (1 − β₁^{2λc₂−1}) c₂²/(T(2λc₂−1)).

    Valid (Thm 4.4.1) for 2λc₁ > 1; the second term is continued continuously through c₂ = 1/(2λ)."""
    beta1 = _check_beta(beta1)
    lam = V.positive("lam", lam)
    c1, c2 = np.asarray(c1, dtype=np.float64), np.asarray(c2, dtype=np.float64)
    if np.any(2 * lam * c1 <= 1):
        raise ValueError("bound_B needs 2*lam*c1 > 1 (Thm 4.4.1)")
    x2 = 2 * lam * c2 - 1
    first = 4 * gamma1_sq * np.power(beta1, x2) * c1 ** 2 / (2 * lam * c1 - 1)
    second = 4 * gamma2_sq * c2 ** 2 * _one_minus_pow_over(beta1, x2)
    return (first + second) / T


def H(c, gamma1_sq, gamma2_sq, beta1, lam):
    """Leading constant of Thm 4.4.1 with c₁ = 1/λ (Song 2018, §4.4.1): 4Γ₁²β₁^{2λc−1}/λ² + 4Γ₂²(1 − β₁^{2λc−1})c²/(2λc−1).

    H_CN = H(c, Γ_C², Γ_N², β_C, λ); H_NC = H(c, Γ_N², Γ_C², β_N, λ)."""
    beta1 = _check_beta(beta1)
    lam = V.positive("lam", lam)
    c = np.asarray(c, dtype=np.float64)
    x = 2 * lam * c - 1
    return 4 * gamma1_sq * np.power(beta1, x) / lam ** 2 + 4 * gamma2_sq * c ** 2 * _one_minus_pow_over(beta1, x)


def _argmin_log(fun, lo: float, hi: float, points: int = 4001) -> tuple[float, float]:
    """Global minimiser of a 1-d function of c on [lo, hi]: a log grid, then a bounded refinement."""
    from scipy.optimize import minimize_scalar

    grid = np.geomspace(lo, hi, points)
    vals = np.asarray(fun(grid), dtype=np.float64)
    i = int(np.nanargmin(vals))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, points - 1)]
    if b > a:
        res = minimize_scalar(lambda u: float(fun(np.exp(u))), bounds=(math.log(a), math.log(b)), method="bounded",
                              options={"xatol": 1e-10})
        c = float(np.exp(res.x))
        if float(fun(c)) <= vals[i]:
            return c, float(fun(c))
    return float(grid[i]), float(vals[i])


def argmin_H(gamma1_sq, gamma2_sq, beta1, lam) -> tuple[float, float]:
    """(argmin_{c>0} H(c), min H) over c ∈ [1e-6/λ, 1e6/λ] (log grid + bounded refinement)."""
    lam = V.positive("lam", lam)
    return _argmin_log(lambda c: H(c, gamma1_sq, gamma2_sq, beta1, lam), 1e-6 / lam, 1e6 / lam)


def same_c(gamma1_sq, gamma2_sq, beta1, lam) -> float:
    """argmin over c > 1/(2λ) of B(c, c) = 4c²/(2λc−1)·[Γ₁²β₁^{2λc−1} + Γ₂²(1 − β₁^{2λc−1})] (SameClean/SameNoisy,
    Song 2018, §4.5 and its footnote 1: one learning rate for both data sets, separate noise levels plugged in)."""
    beta1 = _check_beta(beta1)
    lam = V.positive("lam", lam)

    def f(c):
        c = np.asarray(c, dtype=np.float64)
        x = 2 * lam * c - 1
        p = np.power(beta1, x)
        return 4 * c ** 2 / x * (gamma1_sq * p + gamma2_sq * (1 - p))

    c, _ = _argmin_log(f, (1 + 1e-9) / (2 * lam), 1e6 / lam)
    return c


@dataclass(frozen=True)
class Alg2Choice:
    """Outcome of Algorithm 2: data ``order`` ("CN": clean first, "NC": noisy first), c₁ = 1/λ, c₂, and the
    quantities it compared."""

    order: str
    c1: float
    c2: float
    c_CN: float
    c_NC: float
    H_CN: float
    H_NC: float


def algorithm2(gamma_c_sq, gamma_n_sq, beta_c, lam) -> Alg2Choice:
    """Algorithm 2 (Song 2018, §4.4.1): choose the order and c₂ by minimising H_CN and H_NC (ties → CN, as written)."""
    beta_c = _check_beta(beta_c)
    c_cn, h_cn = argmin_H(gamma_c_sq, gamma_n_sq, beta_c, lam)
    c_nc, h_nc = argmin_H(gamma_n_sq, gamma_c_sq, 1.0 - beta_c, lam)
    if h_cn <= h_nc:
        return Alg2Choice("CN", 1.0 / lam, c_cn, c_cn, c_nc, h_cn, h_nc)
    return Alg2Choice("NC", 1.0 / lam, c_nc, c_cn, c_nc, h_cn, h_nc)


def two_phase_steps(c1: float, c2: float, T1: int, T: int) -> np.ndarray:
    """Algorithm 1's step sizes η_t = c₁/t for t ≤ T1, c₂/t for T1 < t ≤ T (t = 1..T keeps counting), shape (T,)."""
    t = np.arange(1, int(T) + 1, dtype=np.float64)
    return np.where(t <= int(T1), float(c1), float(c2)) / t


# ----------------------------------------------------------------------------------------------------------
# the many-run engine


def objective_many(W, X, y, l2: float, chunk: int = 65536) -> np.ndarray:
    """F(w_m) = (1/n) Σ log(1 + e^{−y_i w_mᵀx_i}) + (λ/2)‖w_m‖² for every row of W (M, d) (eq. 3.1 / 4.1)."""
    W = np.atleast_2d(np.asarray(W, dtype=np.float64))
    X = np.asarray(X)
    y = np.asarray(y, dtype=np.float64)
    total = np.zeros(W.shape[0])
    for a in range(0, X.shape[0], chunk):
        m = y[a:a + chunk, None] * (np.asarray(X[a:a + chunk], dtype=np.float64) @ W.T)
        total += np.logaddexp(0.0, -m).sum(axis=0)
    return total / X.shape[0] + 0.5 * l2 * np.einsum("md,md->m", W, W)


def sgd_runs(X, y, seq, batch_size: int, eta, rng: np.random.Generator, *, l2: float, radius: float | None,
             noise: str = "none", epsilon=None, noisy=None, model_run=None, checkpoints=None):
    """Projected mini-batch SGD for many models (logistic loss); returns ``{"W": (M, d), "trace": (M, K)}``.

    Update of model m at step t = 1..T on the batch B = seq[r_m, (t−1)b : tb] of its run r_m = model_run[m]:

        w ← Π_R( w − η[m, t−1] (λw + (1/b) Σ_{i∈B} ∇ℓ(w; x_i, y_i) + noise) ),   Π_R onto {‖w‖ ≤ radius}

    ``noise``:
      * ``"none"``: no noise.
      * ``"batch"`` (chapter 3, update 3.6): noise = Z/b, Z ∝ exp(−(ε_m/2)‖z‖); ``epsilon`` (M,) per model,
        ``np.inf`` = a non-private model. ε-DP per pass needs disjoint batches (each row once in ``seq[r]``).
      * ``"sample"`` (chapter 4, oracle 4.5 averaged over the batch): noise = (1/b) Σ_{i∈B} Z_i with
        Z_i ∝ exp(−(ε_i/2)‖z‖), ``epsilon`` (R, N) the ε of the individual at each position of ``seq``;
        ``noisy`` (M,) bool: False models get no noise (the noiseless twins v_t of Song 2018, Thm 4.3.1).

    ``seq`` (R, N) row indices with N ≥ T·b, T = eta.shape[1]; ``eta`` (M, T); ``model_run`` (M,) (default
    arange(R)); ``checkpoints`` update counts k ∈ [0, T] at which F(w) on (X, y) is recorded (``trace``).
    Draw order: per step, the noise of the noisy models (one array draw). Rows must satisfy ‖x‖ ≤ 1.
    """
    X = np.ascontiguousarray(np.asarray(X, dtype=np.float64))
    y = np.asarray(y, dtype=np.float64)
    seq = np.asarray(seq)
    if seq.ndim != 2:
        raise ValueError(f"seq must be (R, N), got shape {seq.shape}")
    eta = np.atleast_2d(np.asarray(eta, dtype=np.float64))
    M, T = eta.shape
    b = V.count("batch_size", batch_size)
    R, N = seq.shape
    if N < T * b:
        raise ValueError(f"seq has {N} positions per run, T*b = {T * b} needed")
    model_run = np.arange(R) if model_run is None else np.asarray(model_run, dtype=np.int64)
    if model_run.shape != (M,):
        raise ValueError(f"model_run must have shape ({M},), got {model_run.shape}")
    n, d = X.shape
    l2 = V.nonnegative("l2", l2)
    if noise == "batch":
        eps_m = np.broadcast_to(np.asarray(epsilon, dtype=np.float64), (M,))
        noisy_idx = np.flatnonzero(np.isfinite(eps_m))
        scale = 2.0 / eps_m[noisy_idx]                           # Gamma scale of ‖Z‖ (update 3.6)
    elif noise == "sample":
        eps_s = np.asarray(epsilon, dtype=np.float64)
        if eps_s.shape != seq.shape or not np.all(eps_s > 0):
            raise ValueError("sample noise needs epsilon of shape seq.shape with positive entries")
        noisy = np.ones(M, dtype=bool) if noisy is None else np.asarray(noisy, dtype=bool)
        noisy_idx = np.flatnonzero(noisy)
        scale_s = 2.0 / eps_s                                    # Gamma scale of every individual's noise norm
    elif noise != "none":
        raise ValueError(f"noise must be 'none', 'batch' or 'sample', got {noise!r}")
    ckpt = sorted({int(k) for k in (() if checkpoints is None else checkpoints)})
    if ckpt and (ckpt[0] < 0 or ckpt[-1] > T):
        raise ValueError(f"checkpoints must lie in [0, {T}]")
    trace = np.empty((M, len(ckpt)))
    k_next = 0

    def observe(t, W):
        nonlocal k_next
        while k_next < len(ckpt) and ckpt[k_next] == t:
            trace[:, k_next] = objective_many(W, X, y, l2)
            k_next += 1

    def add_noise(rng_, G, t, m):
        if noise == "batch" and noisy_idx.size:
            G[noisy_idx] += gradient_sum_noise(rng_, "l2_laplace", scale, d, b, divide_scale=True)
        elif noise == "sample" and noisy_idx.size:
            G[noisy_idx] += l2_laplace_sum(rng_, d, scale_s[model_run[noisy_idx], t * b:(t + 1) * b]) / b

    W = many_model_sgd(np.zeros((M, d)), (seq[:, t * b:(t + 1) * b] for t in range(T)),
                       run_batch_gradient(X, y, LogisticLoss(), model_run), lambda t: eta[:, t - 1], rng=rng, l2=l2,
                       radius=None if radius is None else np.full(M, float(radius)),
                       noise=None if noise == "none" else add_noise, observe=observe)
    return {"W": W, "trace": trace, "checkpoints": np.asarray(ckpt, dtype=np.int64)}
