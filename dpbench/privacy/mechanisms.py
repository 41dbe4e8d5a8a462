"""Noise samplers and noise calibration for the basic DP mechanisms.

Paper references are to van der Maaten & Hannun (2020), "The Trade-Offs of Private Prediction"
(van der Maaten & Hannun (2020), "vdm2020" below).

Conventions
-----------
* ``sensitivity`` is the global L2 sensitivity Δ₂ = sup ‖f(D) − f(D′)‖₂ over neighbouring datasets, for
  whatever neighbouring relation the caller's sensitivity bound was proved under (vdm2020 Lemma 1 uses
  replace-one, the Theorem 3 proof in App. B.2 add/remove-one; "vdm2020 erratum N" refers to the numbered
  list in docs/studies/vdm2020.md#errata, here erratum 17). The mechanisms here are agnostic: their
  guarantee holds for exactly the pairs (D, D′) over which Δ was bounded.
* Every sampler takes an explicit ``numpy.random.Generator`` and draws all rows in one call. The samplers here
  are the only noise samplers of the package: the learners (``dpbench.learn``) and methods call them, so a
  change of a sampler's draws or calibration lands in every caller at once. Each documents its draw order
  (which generator calls, with which sizes): callers rely on it for bit-identical results.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from . import _validate as V

__all__ = [
    "sample_l2_laplace",
    "l2_laplace_rows",
    "l2_laplace_sum",
    "sample_gaussian",
    "sample_laplace",
    "classic_gaussian_sigma",
    "analytic_gaussian_alpha",
    "analytic_gaussian_sigma",
    "gaussian_mechanism_delta",
    "NOISE_KINDS",
    "output_noise",
    "exponential_mechanism",
]


def _size_tuple(size) -> tuple[int, ...]:
    if size is None:
        return ()
    if isinstance(size, (int, np.integer)):
        size = (int(size),)
    size = tuple(int(s) for s in size)
    if any(s < 0 for s in size):
        raise ValueError(f"size must contain non-negative integers, got {size!r}")
    return size


# ---------------------------------------------------------------------------------------------------------
# Samplers
# ---------------------------------------------------------------------------------------------------------


def sample_l2_laplace(rng: np.random.Generator, beta: float, dim: int, size=()) -> np.ndarray:
    """Draw noise b ∈ ℝ^dim with density p(b) ∝ exp(−beta·‖b‖₂) (vdm2020 Eq. 12, the code's ``sqrt_gaussian``).

    Sampled as a uniform direction on the unit sphere (normalised standard normal) times a radius
    r ~ Gamma(shape=dim, scale=1/beta), so E‖b‖₂ = dim/beta and E‖b‖₂² = dim(dim+1)/beta².

    Privacy: adding this noise to f with L2 sensitivity Δ₂ is (beta·Δ₂)-DP (pure), because
    |‖b‖ − ‖b + f(D) − f(D′)‖| ≤ Δ₂ (triangle inequality); use ``beta = epsilon / Δ₂``.

    Returns an array of shape ``(*size, dim)``; all rows come from one vectorised draw
    (:func:`l2_laplace_rows` with the Gamma scale 1/beta).
    """
    beta = V.positive("beta", beta)
    dim = V.count("dim", dim)
    return l2_laplace_rows(rng, dim, 1.0 / beta, _size_tuple(size))


def l2_laplace_rows(rng: np.random.Generator, dim: int, scale, size=()) -> np.ndarray:
    """Batched L2-Laplace noise: row k has density ∝ exp(−‖b‖₂/scale_k), i.e. uniform direction times a radius
    ‖b‖ ~ Gamma(dim, scale_k) (``scale`` = 1/β of :func:`sample_l2_laplace`; a scalar or an array broadcastable
    to ``size``, one scale per row, e.g. one ε per model of a many-model engine).

    Draw order: the directions of all rows (one ``standard_normal`` call of shape ``(*size, dim)``), then the
    radii of all rows (one ``gamma(dim, 1)`` call of shape ``size``, times ``scale``). Returns ``(*size, dim)``.
    Callers that divide the noise afterwards (e.g. by a batch size) do so on the returned array.
    """
    shape = _size_tuple(size)
    if not np.all(np.asarray(scale) > 0):
        raise ValueError(f"scale must be > 0, got {scale!r}")
    direction = rng.standard_normal(shape + (int(dim),))
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    radius = rng.gamma(float(dim), 1.0, size=shape) * scale
    return direction * np.asarray(radius)[..., None]


def l2_laplace_sum(rng: np.random.Generator, dim: int, scale, *, dtype=np.float32) -> np.ndarray:
    """Sums of independent L2-Laplace vectors: ``scale`` (k, b) Gamma scales (one per vector), returns (k, dim)
    with row i = Σ_j Z_ij, Z_ij of density ∝ exp(−‖z‖/scale_ij) (as :func:`l2_laplace_rows`).

    For many vectors at once (song2018 ch. 4: the batch average of b local-DP reports): the directions are
    drawn in ``dtype`` (float32 by default: half the random bits and memory; the direction is exactly uniform
    whatever the precision of the Gaussian) and never normalised in place — each radius is divided by its
    direction's float64 norm and the weighted sum is accumulated in float64. Draw order: all directions (one
    ``standard_normal`` call of shape (k, b, dim) in ``dtype``), then all radii (one ``gamma(dim, 1)`` call of
    shape (k, b)).
    """
    scale = np.asarray(scale, dtype=np.float64)
    if scale.ndim != 2 or not np.all(scale > 0):
        raise ValueError(f"scale must be a (k, b) array of positive Gamma scales, got shape {scale.shape}")
    u = rng.standard_normal(scale.shape + (int(dim),), dtype=dtype)
    norms = np.sqrt(np.einsum("kbd,kbd->kb", u, u, dtype=np.float64))
    r = rng.gamma(float(dim), 1.0, scale.shape) * scale / norms
    return np.einsum("kb,kbd->kd", r, u, dtype=np.float64)


def sample_gaussian(rng: np.random.Generator, sigma, size, dtype=np.float64) -> np.ndarray:
    """Centred Gaussian noise N(0, σ²) of shape ``size``: one ``standard_normal(size, dtype)`` call times
    ``sigma`` (a scalar or an array broadcastable to ``size``, e.g. one σ per row); ``dtype`` float64 (default)
    or float32 (numpy's single-precision ziggurat: a different stream). Calibrations of σ:
    :func:`classic_gaussian_sigma`, :func:`analytic_gaussian_sigma`, ``accounting.calibrate_dpsgd_noise``."""
    if not np.all(np.asarray(sigma) >= 0):
        raise ValueError(f"sigma must be >= 0, got {sigma!r}")
    z = rng.standard_normal(size, dtype=dtype)
    if np.dtype(dtype) == np.float64:
        return z * sigma
    return z * np.asarray(sigma, dtype=np.float32)


def sample_laplace(rng: np.random.Generator, scale: float, size=None) -> np.ndarray:
    """I.i.d. centred Laplace(scale) noise, density ∝ exp(−|x|/scale).

    Privacy: per-coordinate noise on f with L1 sensitivity Δ₁ is (Δ₁/scale)-DP; use ``scale = Δ₁/epsilon``.
    (vdm2020 does not use it; its code has it as ``laplacian``.)
    """
    scale = V.positive("scale", scale)
    return rng.laplace(0.0, scale, size=size)


# ---------------------------------------------------------------------------------------------------------
# Gaussian calibration
# ---------------------------------------------------------------------------------------------------------


def classic_gaussian_sigma(
    epsilon: float, delta: float, sensitivity: float = 1.0, *, allow_large_epsilon: bool = False
) -> float:
    """Classic Gaussian mechanism std σ = Δ₂·√(2 ln(1.25/δ))/ε (Dwork & Roth Thm A.1; vdm2020 §3.1, after
    Eq. 4).

    The proof only covers ε < 1 (vdm2020 erratum 16), so ε ≥ 1 raises unless ``allow_large_epsilon=True``
    (in which case the returned σ carries no proven (ε, δ) guarantee). Requires δ ∈ (0, 1).
    """
    epsilon = V.positive("epsilon", epsilon)
    delta = V.delta_open("delta", delta, reason="the Gaussian mechanism needs delta > 0")
    sensitivity = V.positive("sensitivity", sensitivity)
    if epsilon >= 1 and not allow_large_epsilon:
        raise ValueError(
            f"epsilon must be < 1 for the classic Gaussian mechanism (its proof needs epsilon < 1), got "
            f"{epsilon!r}; pass allow_large_epsilon=True to override or use analytic_gaussian_sigma"
        )
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def _log_phi_diff(x, y, eps):
    """log(Φ(x) − e^eps·Φ(y)) computed in log space; −inf where the difference is ≤ 0 numerically."""
    from scipy.special import log_ndtr

    lx = log_ndtr(x)
    ly = log_ndtr(y)
    d = eps + ly - lx  # log of e^eps Φ(y) / Φ(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = lx + np.log(-np.expm1(np.minimum(d, 0.0)))
    return np.where(d < 0, out, -np.inf)


def _analytic_gaussian_alpha_array(epsilon, delta) -> np.ndarray:
    """Vectorised Algorithm 2 of vdm2020 (Balle & Wang 2018, Alg. 1) for arrays of (ε > 0, δ ∈ (0, 1)).

    Both branches are solved by a vectorised bisection on a monotone log-space function, run to ~1 ulp
    relative precision in v*/u* (capped at an absolute 1e-30, where α is exact to ~1e-15 anyway).
    """
    eps, delta = np.broadcast_arrays(np.asarray(epsilon, float), np.asarray(delta, float))
    eps = eps.ravel()
    log_delta = np.log(delta.ravel())
    sq = np.sqrt

    # δ0 = Φ(0) − e^ε Φ(−√(2ε))
    log_delta0 = _log_phi_diff(0.0, -sq(2.0 * eps), eps)
    upper = log_delta >= log_delta0

    def s(w):
        # increasing in w, s(0) <= 0; its root is v* (upper branch) or u* (lower branch)
        b_plus = _log_phi_diff(sq(eps * w), -sq(eps * (w + 2.0)), eps)  # log B⁺_ε(v)
        b_minus = _log_phi_diff(-sq(eps * w), -sq(eps * (w + 2.0)), eps)  # log B⁻_ε(u)
        return np.where(upper, b_plus - log_delta, log_delta - b_minus)

    lo = np.zeros_like(eps)
    hi = np.ones_like(eps)
    for _ in range(1000):  # bracket by doubling (hi <= 2^1000)
        need = s(hi) <= 0
        if not need.any():
            break
        lo = np.where(need, hi, lo)
        hi = np.where(need, 2.0 * hi, hi)
    else:  # pragma: no cover - only for delta numerically indistinguishable from 0 or 1
        raise ValueError("could not bracket the analytic-Gaussian root; delta too close to 0 or 1")

    for _ in range(2100):
        active = (hi - lo) > np.maximum(2.5e-16 * hi, 1e-30)
        if not active.any():
            break
        mid = 0.5 * (lo + hi)
        below = s(mid) <= 0
        lo = np.where(active & below, mid, lo)
        hi = np.where(active & ~below, mid, hi)

    # upper: v* = sup{v : B⁺(v) ≤ δ} -> lo (B⁺(lo) ≤ δ);  lower: u* = inf{u : B⁻(u) ≤ δ} -> hi (B⁻(hi) ≤ δ)
    w = np.where(upper, lo, hi)
    a, b = sq(1.0 + w / 2.0), sq(w / 2.0)
    alpha = np.where(upper, 1.0 / (a + b), a + b)  # √(1+v/2) − √(v/2) written stably
    return alpha.reshape(delta.shape)


@functools.lru_cache(maxsize=4096)
def _analytic_gaussian_alpha_cached(epsilon: float, delta: float) -> float:
    return float(_analytic_gaussian_alpha_array(epsilon, delta))


def analytic_gaussian_alpha(epsilon: float, delta: float) -> float:
    """α of the analytic Gaussian mechanism: vdm2020 Algorithm 2 (Balle & Wang 2018), both branches.

    δ0 = Φ(0) − e^ε Φ(−√(2ε)). If δ ≥ δ0: v* = sup{v ≥ 0 : Φ(√(εv)) − e^ε Φ(−√(ε(v+2))) ≤ δ},
    α = √(1+v*/2) − √(v*/2). Else: u* = inf{u ≥ 0 : Φ(−√(εu)) − e^ε Φ(−√(ε(u+2))) ≤ δ},
    α = √(1+u*/2) + √(u*/2) (the branch Alg. 2 in the paper's App. B.1 omits; vdm2020 erratum 5). The noise
    std is σ = α·Δ₂/√(2ε).

    The roots are found in log space to ~machine precision, so the exact criterion (Eq. 17) holds with
    equality to ~1e-13 relative. Requires ε > 0 and δ ∈ (0, 1).
    """
    epsilon = V.positive("epsilon", epsilon)
    delta = V.delta_open("delta", delta, reason="the Gaussian mechanism needs delta > 0")
    return _analytic_gaussian_alpha_cached(epsilon, delta)


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest Gaussian std σ = α·Δ₂/√(2ε) making f + N(0, σ²I) (ε, δ)-DP (vdm2020 Alg. 2/3, Eq. 17).

    Exact (tight) for any ε > 0 — no ε < 1 restriction; δ ∈ (0, 1); Δ₂ = ``sensitivity``.
    """
    sensitivity = V.positive("sensitivity", sensitivity)
    alpha = analytic_gaussian_alpha(epsilon, delta)
    return alpha * sensitivity / math.sqrt(2.0 * float(epsilon))


def gaussian_mechanism_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """Exact δ(ε) of the Gaussian mechanism with std σ and L2 sensitivity Δ₂ (vdm2020 Eq. 17, Balle–Wang Thm 8).

    δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ), evaluated in log space (``log_ndtr``) so it stays
    accurate for tiny δ and for ε where e^ε overflows. The mechanism is (ε, δ)-DP iff δ ≥ this value.
    Requires σ > 0, ε ≥ 0 (ε = 0 gives the total-variation distance), Δ₂ > 0.
    """
    sigma = V.positive("sigma", sigma)
    epsilon = V.nonnegative("epsilon", epsilon)
    sensitivity = V.positive("sensitivity", sensitivity)
    r = sensitivity / (2.0 * sigma)
    t = epsilon * sigma / sensitivity
    return float(np.exp(_log_phi_diff(r - t, -r - t, epsilon)))


# ---------------------------------------------------------------------------------------------------------
# Output perturbation of a vector
# ---------------------------------------------------------------------------------------------------------

NOISE_KINDS = ("auto", "l2_laplace", "gaussian", "analytic_gaussian")


def output_noise(rng, dim, sensitivity, epsilon, delta=0.0, noise="auto", size=()):
    """Noise for output perturbation of a vector with L2 sensitivity Δ = ``sensitivity`` (wu2016 bolt-on PSGD,
    §3.2; the membership study and the audit release the same noise).

    * ``"l2_laplace"`` (``"auto"`` with δ = 0): density ∝ exp(−ε‖z‖/Δ) (wu2016 (2.2), Thm 2.17), i.e.
      ‖z‖ ~ Gamma(d, Δ/ε) with uniform direction, E‖z‖ = dΔ/ε; ε-DP. Scale reported: Δ/ε.
    * ``"gaussian"`` (``"auto"`` with δ > 0): N(0, σ² I) with σ = Δ√(2 ln(1.25/δ))/ε (wu2016 (2.3),
      Thm 2.19; proof needs ε < 1, larger ε raises). Scale reported: σ.
    * ``"analytic_gaussian"``: the tight σ of Balle & Wang (any ε > 0, δ ∈ (0, 1)).

    Returns ``(z, kind, scale)``, z of shape ``(*size, dim)``.
    """
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    dim = V.count("dim", dim)
    sensitivity = V.positive("sensitivity", sensitivity)
    epsilon = V.positive("epsilon", epsilon)
    delta = V.delta_halfopen("delta", delta)
    if noise not in NOISE_KINDS:
        raise ValueError(f"noise must be one of {NOISE_KINDS}, got {noise!r}")
    kind = noise
    if kind == "auto":
        kind = "l2_laplace" if delta == 0 else "gaussian"
    if kind == "l2_laplace":
        scale = sensitivity / epsilon
        z = sample_l2_laplace(rng, epsilon / sensitivity, dim, size)
        return z, kind, scale
    if delta == 0:
        raise ValueError(f"noise={noise!r} needs delta > 0 (use 'l2_laplace' for pure epsilon-DP)")
    if kind == "gaussian":
        scale = classic_gaussian_sigma(epsilon, delta, sensitivity)
    else:
        scale = analytic_gaussian_sigma(epsilon, delta, sensitivity)
    shape = (int(size),) if isinstance(size, (int, np.integer)) else tuple(int(s) for s in size)
    z = sample_gaussian(rng, scale, shape + (dim,))
    return z, kind, scale


# ---------------------------------------------------------------------------------------------------------
# Exponential mechanism
# ---------------------------------------------------------------------------------------------------------


def exponential_mechanism(rng: np.random.Generator, utilities, beta: float, size=None) -> np.ndarray:
    """Sample indices with Pr[k] ∝ exp(beta·u_k) along the last axis of ``utilities`` (McSherry–Talwar).

    Vectorised over all leading axes (one independent draw per row) by inverse-CDF sampling of a
    max-shifted (stable) softmax. ``size`` adds leading axes of independent repetitions: the result has
    shape ``(*size, *utilities.shape[:-1])`` (``size=None`` -> ``utilities.shape[:-1]``).
    ``beta = 0`` is uniform (over entries with finite utility); ``beta = inf`` is argmax with uniform
    tie-breaking (non-private). Utilities of −inf have probability 0.

    Privacy: if every utility changes by at most Δu between neighbouring datasets, the standard analysis
    gives (2·beta·Δu)-DP per draw, or (beta·Δu)-DP if utilities move monotonically (all in the same
    direction). vdm2020's subsample-and-aggregate (Alg. 8, vote counts, Δu = 1) uses beta = ε/B and claims
    ε over B queries; its proof (Thm 7, App. C.2) drops the normaliser, so the standard guarantee is 2ε
    (vdm2020 erratum 9).
    """
    if not (isinstance(beta, (int, float, np.integer, np.floating)) and not isinstance(beta, bool)) or not (
        beta >= 0
    ):
        raise ValueError(f"beta must be >= 0, got {beta!r}")
    u = np.asarray(utilities, dtype=float)
    if u.ndim < 1 or u.shape[-1] < 1:
        raise ValueError(f"utilities must have at least one entry along the last axis, got shape {u.shape}")
    if np.isnan(u).any() or np.isposinf(u).any():
        raise ValueError("utilities must not contain NaN or +inf")
    finite = u > -np.inf
    if not finite.any(axis=-1).all():
        raise ValueError("every row of utilities needs at least one finite entry")

    if math.isinf(beta):
        mx = np.max(u, axis=-1, keepdims=True)
        p = (u == mx).astype(float)
    else:
        logits = np.where(finite, beta * np.where(finite, u, 0.0), -np.inf)
        logits = logits - np.max(logits, axis=-1, keepdims=True)
        p = np.exp(logits)
    cdf = np.cumsum(p, axis=-1)
    total = cdf[..., -1]
    n = u.shape[-1]
    last_positive = n - 1 - np.argmax(p[..., ::-1] > 0, axis=-1)

    out_shape = _size_tuple(size) + u.shape[:-1]
    x = rng.random(out_shape) * total
    idx = np.count_nonzero(cdf <= x[..., None], axis=-1)
    return np.minimum(idx, last_positive).astype(np.intp)
