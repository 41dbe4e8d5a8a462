"""Private mean and covariance estimation: pure (Laplace, ℓ1) vs approximate (Gaussian, ℓ2) DP, local vs central.

Source: "Lecture 19: Additional topics in private machine learning", lecture notes, December 5, 2019 (cited as
Lecture 19), §1 (estimation with pure DP in high dimensions) and §2 (local DP); errata and our choices in
docs/studies/estimation.md. Plain numpy; every function works on arrays and draws all noise of a batch of
releases in one call.

Neighbouring relation: **replace-one** (D and D′ have the same size n, which is public, and differ in one
row). Every sensitivity below is the supremum of ‖f(D) − f(D′)‖ over such pairs, derived in the docstrings.
(They do not carry over to add/remove-one neighbours, where n changes and is not public: there the clipped *sum*
has Δ₁ = Bd, Δ₂ = B√d — half the replace-one values of n·mean — and a mean also needs a private count.)

Estimators
----------
* :func:`clipped_mean` — every coordinate clipped to [−B, B], then averaged. Δ₁ = 2Bd/n, Δ₂ = 2B√d/n.
* :func:`truncated_covariance` — rows projected to the ℓ2 ball of radius c, then (1/n)·Σ x̃x̃ᵀ (the second
  moment about the known mean, which the caller subtracts first). Only the d(d+1)/2 entries of the upper
  triangle (diagonal included) are noised; the lower triangle is mirrored from them, so the release is
  symmetric and the mirror is post-processing. Upper-triangle Δ₁ ≤ (d+1)c²/n, Δ₂ = √2·c²/n.
* :func:`ldp_release` — one user's report clip(x, −B, B) + Lap(2B/ε), ε-LDP (the notes' Lap(√log n/ε) on a
  value of range 2√log n is only 2ε-LDP, erratum to Lecture 19, §2); :func:`ldp_mean` averages the reports.

Mechanisms (:func:`calibrate`): ``laplace`` adds i.i.d. Lap(Δ₁/ε) to every noised coordinate ((ε, 0)-DP);
``gaussian_classic`` adds N(0, σ²) with σ = Δ₂√(2 ln(1.25/δ))/ε (ε < 1 only) and ``gaussian_analytic`` the
smallest σ of Balle & Wang (2018) ((ε, δ)-DP for any ε > 0); the calibrations are those of
:mod:`dpbench.privacy.mechanisms`.

The notes' coordinate-wise algorithm ("apply the 1-D algorithm to every coordinate and compose", Lecture 19, §1) is
exactly the Laplace mechanism on the vector under basic composition (d coordinate-wise Lap(2B/(n·ε/d)) =
Lap(2Bd/(nε)) each); under advanced composition the Gaussian mechanism calibrated to the vector's ℓ2
sensitivity is the standard (and tighter) equivalent, which is what Lecture 19, §1, describes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpbench.privacy import _validate as V
from dpbench.privacy.mechanisms import analytic_gaussian_sigma, classic_gaussian_sigma

__all__ = [
    "MECHANISMS",
    "NEIGHBOURING",
    "Calibration",
    "calibrate",
    "clipped_mean",
    "mean_sensitivity",
    "mean_calibration",
    "private_mean",
    "project_rows",
    "truncated_covariance",
    "covariance_sensitivity",
    "covariance_calibration",
    "private_covariance",
    "release",
    "release_symmetric",
    "ldp_scale",
    "ldp_release",
    "ldp_mean",
    "central_mean_1d",
    "noise_rms_vector",
    "noise_rms_symmetric",
    "noise_rms_ldp",
    "laplace_gaussian_rms_ratio",
]

NEIGHBOURING = "replace-one"
MECHANISMS = ("laplace", "gaussian_classic", "gaussian_analytic")


@dataclass(frozen=True)
class Calibration:
    """The noise of one release: ``kind`` "laplace" (scale = b) or "gaussian" (scale = σ), per coordinate.

    ``sensitivity`` is the Δ the scale was calibrated to, in the norm ``norm`` ("l1" or "l2");
    ``epsilon``/``delta`` the guarantee under :data:`NEIGHBOURING` (δ = 0 for Laplace)."""

    mechanism: str
    kind: str
    norm: str
    sensitivity: float
    scale: float
    epsilon: float
    delta: float


def _mechanism(mechanism: str) -> str:
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    return mechanism


def calibrate(mechanism: str, l1_sensitivity: float, l2_sensitivity: float, epsilon: float,
              delta: float = 0.0) -> Calibration:
    """Noise scale for ``mechanism`` given both sensitivities of the released vector.

    laplace: b = Δ₁/ε, (ε, 0)-DP (δ is ignored and recorded as 0). gaussian_classic: σ = Δ₂√(2 ln(1.25/δ))/ε,
    needs ε < 1 and δ ∈ (0, 1) (Dwork & Roth Thm A.1). gaussian_analytic: the exact smallest σ for (ε, δ)."""
    _mechanism(mechanism)
    epsilon = V.positive("epsilon", epsilon)
    l1 = V.positive("l1_sensitivity", l1_sensitivity)
    l2 = V.positive("l2_sensitivity", l2_sensitivity)
    if mechanism == "laplace":
        V.delta_halfopen("delta", delta)
        return Calibration(mechanism, "laplace", "l1", l1, l1 / epsilon, epsilon, 0.0)
    delta = V.delta_open("delta", delta, reason=f"{mechanism} needs delta > 0")
    if mechanism == "gaussian_classic":
        sigma = classic_gaussian_sigma(epsilon, delta, l2)  # raises for epsilon >= 1
    else:
        sigma = analytic_gaussian_sigma(epsilon, delta, l2)
    return Calibration(mechanism, "gaussian", "l2", l2, sigma, epsilon, delta)


def _noise(rng: np.random.Generator, calib: Calibration, shape) -> np.ndarray:
    if calib.kind == "laplace":
        return rng.laplace(0.0, calib.scale, size=shape)
    return calib.scale * rng.standard_normal(shape)


def release(stat, calib: Calibration, rng: np.random.Generator, size=None) -> np.ndarray:
    """``stat`` + i.i.d. noise of ``calib`` on every entry; one draw for every row.

    ``size`` adds leading axes of independent releases of the same ``stat`` (e.g. repetitions on one data
    set); with ``size=None`` a batch of statistics (reps, …) gets one independent noise row each."""
    stat = np.asarray(stat, dtype=float)
    shape = (tuple(np.atleast_1d(size)) if size is not None else ()) + stat.shape
    return stat + _noise(rng, calib, shape)


def _data(X, name: str = "X", ndim: int = 2) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim < ndim or X.shape[-2 if ndim == 2 else -1] < 1 or (ndim == 2 and X.shape[-1] < 1):
        raise ValueError(f"{name} must have shape (..., n, d) with n, d >= 1, got {X.shape}" if ndim == 2 else
                         f"{name} must have shape (..., n) with n >= 1, got {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return X


# ---------------------------------------------------------------------------------------------------------
# mean
# ---------------------------------------------------------------------------------------------------------


def clipped_mean(X, clip: float, *, order: str = "rows") -> np.ndarray:
    """(1/n)·Σᵢ clip(xᵢ, −B, B) coordinate-wise, for X of shape (..., n, d) → (..., d).

    ``order="mean_then_clip"`` is a deliberate implementation bug for the audit's twin (clip(mean(X)): a record
    outside [−B, B] moves the mean by more than 2B/n, so the sensitivity and ε no longer hold); never a default."""
    B = V.positive("clip", clip)
    if order == "mean_then_clip":
        return np.clip(_data(X).mean(axis=-2), -B, B)
    if order != "rows":
        raise ValueError(f"order must be 'rows' (or the audit's bug 'mean_then_clip'), got {order!r}")
    return np.clip(_data(X), -B, B).mean(axis=-2)


def mean_sensitivity(n: int, d: int, clip: float) -> tuple[float, float]:
    """(Δ₁, Δ₂) of :func:`clipped_mean` under replace-one: (2Bd/n, 2B√d/n).

    Replacing one row changes the sum by clip(x) − clip(x′) ∈ [−2B, 2B]^d, so the mean moves by at most 2B/n
    per coordinate: ℓ1 ≤ 2Bd/n, ℓ2 ≤ 2B√d/n, both attained by x = (B, …, B), x′ = (−B, …, −B)."""
    n, d = V.count("n", n), V.count("d", d)
    B = V.positive("clip", clip)
    return 2 * B * d / n, 2 * B * math.sqrt(d) / n


def mean_calibration(mechanism: str, n: int, d: int, clip: float, epsilon: float, delta: float = 0.0) -> Calibration:
    """:func:`calibrate` with the sensitivities of :func:`mean_sensitivity`."""
    return calibrate(mechanism, *mean_sensitivity(n, d, clip), epsilon, delta)


def private_mean(X, clip: float, epsilon: float, delta: float, mechanism: str, rng: np.random.Generator,
                 size=None) -> np.ndarray:
    """Clipped mean of X (n, d) plus noise of ``mechanism``: (ε, δ)-DP under replace-one (δ = 0 for Laplace).

    ``size`` = number (or shape) of independent releases of the same data set, drawn at once."""
    X = _data(X)
    if X.ndim != 2:
        raise ValueError(f"X must have shape (n, d), got {X.shape}; use clipped_mean + release for batches")
    n, d = X.shape
    return release(clipped_mean(X, clip), mean_calibration(mechanism, n, d, clip, epsilon, delta), rng, size)


# ---------------------------------------------------------------------------------------------------------
# covariance
# ---------------------------------------------------------------------------------------------------------


def project_rows(X, radius: float) -> np.ndarray:
    """Every row scaled by min(1, c/‖x‖₂): the projection onto the ℓ2 ball of radius c."""
    c = V.positive("radius", radius)
    X = _data(X)
    norms = np.linalg.norm(X, axis=-1, keepdims=True)
    return X * np.minimum(1.0, c / np.maximum(norms, np.finfo(float).tiny))


def truncated_covariance(X, radius: float) -> np.ndarray:
    """(1/n)·Σᵢ x̃ᵢx̃ᵢᵀ with x̃ᵢ the projection of row i onto the ℓ2 ball of radius c; X (..., n, d) → (..., d, d).

    X must already be centred at the known mean (known-mean covariance estimation, Lecture 19, Open Question
    1.1). Each term has ‖x̃x̃ᵀ‖_F = ‖x̃‖₂² ≤ c²."""
    Xt = project_rows(X, radius)
    return np.einsum("...ni,...nj->...ij", Xt, Xt, optimize=True) / Xt.shape[-2]


def covariance_sensitivity(n: int, d: int, radius: float) -> tuple[float, float]:
    """(Δ₁, Δ₂) of the upper triangle (diagonal included, d(d+1)/2 entries) of :func:`truncated_covariance`.

    Replace-one changes the matrix by M/n with M = xxᵀ − yyᵀ, ‖x‖, ‖y‖ ≤ c. Let U(M) = Σ_{j≤k}|M_jk| =
    (Σ_j|M_jj| + Σ_jk|M_jk|)/2. Entrywise Σ_jk|xⱼxₖ| = ‖x‖₁² ≤ d‖x‖₂² ≤ dc², so Σ_jk|M_jk| ≤ 2dc², and
    Σ_j|M_jj| = Σ_j|xⱼ² − yⱼ²| ≤ ‖x‖² + ‖y‖² ≤ 2c²: **Δ₁ ≤ (d+1)c²/n** (an upper bound; x, y supported on
    disjoint halves with flat entries reach (d+2)c²/(2n), so it is tight within a factor 2). In ℓ2,
    Σ_{j≤k}M_jk² = (‖M‖_F² + Σ_j M_jj²)/2 with ‖M‖_F² = ‖x‖⁴ + ‖y‖⁴ − 2(x·y)² ≤ 2c⁴ and
    Σ_j M_jj² ≤ Σ_j(xⱼ⁴ + yⱼ⁴) ≤ 2c⁴: **Δ₂ = √2·c²/n**, attained by x = c·e₁, y = c·e₂.
    With c ∝ √d (the norm of a d-dimensional Gaussian row) Δ₁ = Θ(d²)/n and Δ₂ = Θ(d)/n (Lecture 19, §1)."""
    n, d = V.count("n", n), V.count("d", d)
    c = V.positive("radius", radius)
    return (d + 1) * c * c / n, math.sqrt(2.0) * c * c / n


def covariance_calibration(mechanism: str, n: int, d: int, radius: float, epsilon: float,
                           delta: float = 0.0) -> Calibration:
    """:func:`calibrate` with the sensitivities of :func:`covariance_sensitivity`."""
    return calibrate(mechanism, *covariance_sensitivity(n, d, radius), epsilon, delta)


def release_symmetric(stat, calib: Calibration, rng: np.random.Generator, size=None) -> np.ndarray:
    """Symmetric ``stat`` (..., d, d) + noise on the d(d+1)/2 upper-triangle entries, mirrored below.

    One draw of shape (*size, ..., d(d+1)/2). The noise matrix Z has E‖Z‖_F² = d²·Var (see
    :func:`noise_rms_symmetric`)."""
    stat = np.asarray(stat, dtype=float)
    if stat.ndim < 2 or stat.shape[-1] != stat.shape[-2]:
        raise ValueError(f"stat must be a (batch of) square matrices, got shape {stat.shape}")
    d = stat.shape[-1]
    lead = (tuple(np.atleast_1d(size)) if size is not None else ()) + stat.shape[:-2]
    iu = np.triu_indices(d)
    z = _noise(rng, calib, lead + (len(iu[0]),))
    Z = np.zeros(lead + (d, d))
    Z[..., iu[0], iu[1]] = z
    Z[..., iu[1], iu[0]] = z
    return stat + Z


def private_covariance(X, radius: float, epsilon: float, delta: float, mechanism: str, rng: np.random.Generator,
                       size=None) -> np.ndarray:
    """Truncated second-moment matrix of the centred X (n, d) with noise on its upper triangle, mirrored:
    (ε, δ)-DP under replace-one (δ = 0 for Laplace)."""
    X = _data(X)
    if X.ndim != 2:
        raise ValueError(f"X must have shape (n, d), got {X.shape}")
    n, d = X.shape
    calib = covariance_calibration(mechanism, n, d, radius, epsilon, delta)
    return release_symmetric(truncated_covariance(X, radius), calib, rng, size)


# ---------------------------------------------------------------------------------------------------------
# local vs central DP, one dimension
# ---------------------------------------------------------------------------------------------------------


def ldp_scale(clip: float, epsilon: float) -> float:
    """Laplace scale 2B/ε of one ε-LDP report: clip(x) ∈ [−B, B] has range 2B over any two user values.

    Lecture 19, §2, uses Lap(B/ε) with B = √log n, which is only 2ε-LDP
    (docs/studies/estimation.md#errata-in-the-notes)."""
    return 2.0 * V.positive("clip", clip) / V.positive("epsilon", epsilon)


def ldp_release(x, clip: float, epsilon: float, rng: np.random.Generator, size=None, *, clip_values: bool = True
                ) -> np.ndarray:
    """Each user's report clip(xᵢ, −B, B) + Lap(2B/ε): every report is ε-DP in that user's value alone.

    Clipping, not the notes' zeroing outside [−√log n, √log n], whose bias dominates the rate
    (docs/studies/estimation.md#clipping-instead-of-zeroing). ``clip_values=False`` is a deliberate
    implementation bug for the audit's twin (a value outside [−B, B] is reported as it is); never a default."""
    x = np.asarray(x, dtype=float)
    if not np.isfinite(x).all():
        raise ValueError("x must be finite (no NaN or inf)")
    b = ldp_scale(clip, epsilon)
    shape = (tuple(np.atleast_1d(size)) if size is not None else ()) + x.shape
    return (np.clip(x, -clip, clip) if clip_values else x) + rng.laplace(0.0, b, size=shape)


def ldp_mean(x, clip: float, epsilon: float, rng: np.random.Generator, size=None) -> np.ndarray:
    """The curator's estimate: the average of the ε-LDP reports of x (..., n) → (...)."""
    x = _data(x, "x", ndim=1)
    return ldp_release(x, clip, epsilon, rng, size).mean(axis=-1)


def central_mean_1d(x, clip: float, epsilon: float, rng: np.random.Generator, size=None) -> np.ndarray:
    """Central ε-DP mean: (1/n)Σ clip(xᵢ) + Lap(2B/(nε)) (Δ₁ = 2B/n under replace-one); x (..., n) → (...)."""
    x = _data(x, "x", ndim=1)
    return release(clipped_mean(x[..., None], clip)[..., 0],
                   mean_calibration("laplace", x.shape[-1], 1, clip, epsilon), rng, size)


# ---------------------------------------------------------------------------------------------------------
# closed forms of the privacy term (root-mean-square norm of the added noise)
# ---------------------------------------------------------------------------------------------------------


def _per_entry_variance(calib: Calibration) -> float:
    return 2.0 * calib.scale ** 2 if calib.kind == "laplace" else calib.scale ** 2


def noise_rms_vector(calib: Calibration, d: int) -> float:
    """√E‖Z‖₂² of d i.i.d. entries: √(2d)·b (Laplace), √d·σ (Gaussian)."""
    return math.sqrt(V.count("d", d) * _per_entry_variance(calib))


def noise_rms_symmetric(calib: Calibration, d: int) -> float:
    """√E‖Z‖_F² of the mirrored upper-triangle noise: d diagonal + 2·d(d−1)/2 off-diagonal entries = d² entries,
    so √2·b·d (Laplace), σ·d (Gaussian)."""
    d = V.count("d", d)
    return math.sqrt(d * d * _per_entry_variance(calib))


def noise_rms_ldp(clip: float, epsilon: float, n: int) -> float:
    """√E(mean of n Lap(2B/ε))² = √(2/n)·2B/ε."""
    return math.sqrt(2.0 / V.count("n", n)) * ldp_scale(clip, epsilon)


def laplace_gaussian_rms_ratio(d: int, epsilon: float, delta: float, calibration: str = "gaussian_classic") -> float:
    """RMS(Laplace noise) / RMS(Gaussian noise) of the clipped mean, independent of n and B.

    √(2d)·(2Bd/(nε)) / (√d·σ) with σ = s·(2B√d/n)/ε gives √(2d)/s, s = σε/Δ₂. Classic: s = √(2 ln(1.25/δ)),
    so the ratio is √d/√(ln(1.25/δ)) (checked numerically, docs/studies/estimation.md#laplace-vs-gaussian-ratio);
    analytic: s = α(ε, δ)·√(ε/2)."""
    d = V.count("d", d)
    s = calibrate(calibration, 1.0, 1.0, epsilon, delta).scale * epsilon  # Δ₂ = 1
    return math.sqrt(2.0 * d) / s


# -- clip and truncation rules of the estimation study's grids (used by the study and by the audit) ----------


def mean_clip(fc: dict, n: int, d: int) -> float:
    """Per-coordinate clip B of ``mean_vs_d``: ``grid`` R + √(2 ln(n·d_max)) (one B for the whole d grid),
    ``point`` R + √(2 ln(n·d)) (the bound of our numerical check, docs/studies/estimation.md#clip-bounds), or the
    configured number."""
    rule = fc["clip"]
    if rule == "grid":
        return fc["mean_range"] + math.sqrt(2 * math.log(n * max(fc["dims"])))
    if rule == "point":
        return fc["mean_range"] + math.sqrt(2 * math.log(n * d))
    return float(rule)


def ldp_clip(fc: dict, n: int) -> float:
    """Clip B of ``ldp_vs_n``: ``grid`` R + √(2 ln n_max), ``point`` R + √(2 ln n)
    (docs/studies/estimation.md#clip-bounds), or a number."""
    rule = fc["clip"]
    if rule == "grid":
        return fc["mean_range"] + math.sqrt(2 * math.log(max(fc["ns"])))
    if rule == "point":
        return fc["mean_range"] + math.sqrt(2 * math.log(n))
    return float(rule)


def cov_radius(fc: dict, d: int) -> float:
    """Truncation radius c = κ√d of ``cov_vs_d`` (κ = ``radius_factor``)."""
    return fc["radius_factor"] * math.sqrt(d)
