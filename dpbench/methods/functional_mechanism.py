"""The functional mechanism (Zhang, Zhang, Xiao, Yang & Winslett, PVLDB 2012) for linear and logistic regression —
the baseline of wu2016 ch. 4 (Wu 2016, §4.1, §4.2 "Norm Stability and Noise for DP" and the end of §4.2
"Generalization Error"; docs/studies/wu2016.md#functional-mechanism).

**[EXTERNAL] reconstruction** from Zhang et al. (Algorithm 1, §4.2 linear regression, §5 logistic regression,
§6 "avoiding unbounded noisy objective functions") and their released MATLAB code; the thesis only names it.

The objective Σ_t f(t, w) is a polynomial in w, Σ_j Σ_{φ∈Φ_j} λ_φ φ(w), with λ_φ = Σ_t λ_{φt}. Every
coefficient gets i.i.d. Laplace(Δ/ε) noise, Δ = 2 max_t Σ_φ |λ_{φt}| (the L1 sensitivity of the coefficient
vector under replace-one: ‖λ(S) − λ(S′)‖₁ = ‖λ_t − λ_{t′}‖₁ ≤ 2 max_t ‖λ_t‖₁). Coefficients are indexed by
**ordered** pairs (j, l) for the quadratic terms, as in Zhang et al.'s code; the noisy matrix is then
symmetrised (post-processing).

Linear regression (f = (y − xᵀw)²): monomials w_j with coefficient −2y x_j and w_j w_l with x_j x_l
(the constant y² does not affect the minimiser and is not perturbed or released). Per record
Σ|λ_φt| = 2|y|‖x‖₁ + ‖x‖₁². Hence

* ``domain="box"`` (Zhang et al.: every x_j and y in [−1, 1]): Δ = 2(2d + d²) = 2d² + 4d, the value of their
  code; the paper's 2(d+1)² also counts the constant y² (:func:`fm_linear_sensitivity` ``paper=True``).
* ``domain="sphere"`` (‖x‖₂ ≤ 1, |y| ≤ 1, so ‖x‖₁ ≤ √d): Δ = 2(2√d + d).

Logistic regression (y ∈ {0, 1}; second-order Taylor expansion at 0 of log(1 + e^{xᵀw}) − y xᵀw, Zhang §5):
log 2 + (½ − y)xᵀw + ⅛(xᵀw)². Monomials w_j with (½ − y)x_j and w_j w_l with x_j x_l/8. Per record
Σ|λ_φt| ≤ ½‖x‖₁ + ⅛‖x‖₁², so Δ = d + d²/4 (box, Zhang et al.) or √d + d/4 (sphere).

**Tight calibration** (``calibration="tight"``; issue "privacy left on the table"). The bound above adds the two
records' coefficient norms; the exact replace-one L1 distance is smaller. Write u = x + x′, v = x − x′, so that
x xᵀ − x′x′ᵀ = ½(u vᵀ + v uᵀ) and ‖x xᵀ − x′x′ᵀ‖₁ ≤ ‖u‖₁‖v‖₁ (entrywise L1, triangle inequality), and
|u_j| + |v_j| = 2 max(|x_j|, |x′_j|).

* Logistic, box: the linear part moves by ½‖v‖₁ (same label) or ½‖u‖₁ (labels differ), so with U, V the two
  L1 norms (U + V ≤ 2d on the box) the distance is ≤ max_U ½(2d − U) + U(2d − U)/8, at U = d − 2:
  **Δ* = (d + 2)²/8** (d ≥ 2; Δ* = 1 at d = 1). It is attained — x = (0, …, 0, 1, 1), x′ = (−1, …, −1), both
  y = 0 (U = d − 2, V = d + 2, ‖x xᵀ − x′x′ᵀ‖₁ = d² − 4 = UV) — so it is the exact sensitivity: 12.5 instead of
  24 at d = 8, noise × 0.521.
* Linear, box (|y| ≤ 1): y x − y′x′ = p v + q u with p = (y + y′)/2, q = (y − y′)/2, |p| + |q| ≤ 1, so the
  linear part moves by ≤ 2 max(U, V) and the distance is ≤ max 2V + UV over V = 2d − U ≥ U, at U = d − 1:
  **Δ* = (d + 1)²**, attained by x = (0, …, 0, 1), x′ = (−1, …, −1), y = y′ = 1 — against 2d² + 4d.
* Sphere (‖x‖₂ ≤ 1): U ≤ √d a, V ≤ √d b with a² + b² = 2‖x‖² + 2‖x′‖² ≤ 4, so Δ* ≤ max over t of
  √d sin t + (d/2) sin t cos t (logistic) or 4√d sin t + 4d sin t cos t (linear), maximised numerically. A valid
  bound (the sphere's L1 norms and the triangle inequality need not be attained together), not shown exact;
  the box's Δ* also bounds the sphere (it lies in the box), and the smaller of the two is used.

The neighbouring relation is the same (replace one record), so the tight calibration is ε-DP with Laplace(Δ*/ε)
on every coefficient; ``tests/wu2016_ch4/test_fm_tight.py`` checks Δ* by brute force (lattice enumeration and
optimisation from random starts over the continuous domain) and the exact privacy loss of the Laplace pair.

Minimisation and the fix for a noisy quadratic form that is not positive definite (Zhang §6, their code):
M̃ ← (M̃ + M̃ᵀ)/2 + r·√2·(Δ/ε)·I ("regularisation", r = ``ridge`` = 5 in their code; √2Δ/ε is the Laplace
standard deviation), then **spectral trimming**: eigen-decompose M̃, drop the eigen-directions with eigenvalue
≤ ``trim``, and minimise wᵀM̃w + c̃ᵀw on the remaining subspace: w = −½ Q₊ diag(1/D₊) Q₊ᵀ c̃. Both steps
are post-processing of the noisy coefficients, so the release stays ε-DP. Unconstrained, as in Zhang et al.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpbench.methods.base import TRAINING, Method, Setting, linear_scores
from dpbench.methods.output_perturbation import _pos

DOMAINS = ("box", "sphere")

__all__ = ["DOMAINS", "fm_perturb", "fm_logistic_objective", "fm_linear_sensitivity", "fm_logistic_sensitivity", "fm_linear_record_coefficients",
           "fm_logistic_record_coefficients", "FMResult", "functional_mechanism_linear",
           "functional_mechanism_logistic", "solve_noisy_quadratic"]


def _domain(domain: str) -> str:
    if domain not in DOMAINS:
        raise ValueError(f"domain must be one of {DOMAINS}, got {domain!r}")
    return domain


def _dim(d) -> int:
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"d must be a positive integer, got {d!r}")
    return int(d)


CALIBRATIONS = ("source", "tight")


def _calibration(calibration: str) -> str:
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    return calibration


def _sphere_max(a: float, b: float) -> float:
    """max over t ∈ [0, π/2] of a·sin t + b·sin t cos t (a, b ≥ 0): the stationary point of the derivative
    a cos t + b cos 2t, i.e. 2b c² + a c − b = 0 in c = cos t."""
    c = (-a + math.sqrt(a * a + 8.0 * b * b)) / (4.0 * b) if b > 0 else 0.0
    c = min(max(c, 0.0), 1.0)
    s = math.sqrt(1.0 - c * c)
    return max(a * s + b * s * c, a)


def fm_linear_sensitivity(d: int, domain: str = "box", paper: bool = False, calibration: str = "source") -> float:
    """Δ of the functional mechanism for linear regression (module docstring): box 2d² + 4d (``paper=True``:
    2(d+1)², Zhang et al.'s printed bound including the constant term), sphere 2(d + 2√d) (paper: 2(1+√d)²).
    ``calibration="tight"``: the exact replace-one L1 sensitivity (d + 1)² on the box, the bound
    max_t 4√d sin t + 4d sin t cos t on the sphere (module docstring)."""
    d = _dim(d)
    if _calibration(calibration) == "tight":
        if paper:
            raise ValueError("paper=True is the source's bound; the tight calibration has no paper variant")
        box = float((d + 1) ** 2)   # the sphere lies in the box: its bound is the smaller of the two
        return box if _domain(domain) == "box" else min(box, _sphere_max(4.0 * math.sqrt(d), 4.0 * d))
    l1 = float(d) if _domain(domain) == "box" else math.sqrt(d)     # max ‖x‖₁
    return 2.0 * ((1.0 + l1) ** 2 if paper else 2.0 * l1 + l1 * l1)


def fm_logistic_sensitivity(d: int, domain: str = "box", calibration: str = "source") -> float:
    """Δ of the functional mechanism for logistic regression: box d²/4 + d (Zhang et al. §5), sphere d/4 + √d.
    ``calibration="tight"``: the exact replace-one L1 sensitivity (d + 2)²/8 on the box (1 at d = 1), the bound
    max_t √d sin t + (d/2) sin t cos t on the sphere (module docstring)."""
    d = _dim(d)
    if _calibration(calibration) == "tight":
        U = max(d - 2.0, 0.0)   # the maximiser over U ∈ [0, 2d]
        box = (2.0 * d - U) / 2.0 + U * (2.0 * d - U) / 8.0
        # the sphere lies in the box: its bound is the smaller of the two
        return box if _domain(domain) == "box" else min(box, _sphere_max(math.sqrt(d), d / 2.0))
    l1 = float(d) if _domain(domain) == "box" else math.sqrt(d)
    return 2.0 * (0.5 * l1 + l1 * l1 / 8.0)


def fm_linear_record_coefficients(x: np.ndarray, y: float, constant: bool = False) -> np.ndarray:
    """The coefficient vector λ_t of one record for linear regression: [−2y x (d), x xᵀ (d², ordered)]
    (plus y² first if ``constant``)."""
    x = np.asarray(x, dtype=np.float64)
    parts = ([np.array([y * y])] if constant else []) + [-2.0 * y * x, np.outer(x, x).ravel()]
    return np.concatenate(parts)


def fm_logistic_record_coefficients(x: np.ndarray, y01: float) -> np.ndarray:
    """The coefficient vector of one record for logistic regression (y ∈ {0, 1}): [(½ − y)x, x xᵀ/8]."""
    x = np.asarray(x, dtype=np.float64)
    return np.concatenate([(0.5 - y01) * x, np.outer(x, x).ravel() / 8.0])


@dataclass(frozen=True)
class FMResult:
    w: np.ndarray
    sensitivity: float
    epsilon: float
    kept_dims: int        # eigen-directions kept by spectral trimming
    ridge: float          # the value added to the diagonal


def solve_noisy_quadratic(M: np.ndarray, c: np.ndarray, ridge: float, trim: float) -> tuple[np.ndarray, int]:
    """argmin wᵀMw + cᵀw after symmetrising M, adding ``ridge``·I and trimming eigenvalues ≤ ``trim``."""
    M = 0.5 * (M + M.T) + ridge * np.eye(M.shape[0])
    D, Q = np.linalg.eigh(M)
    keep = D > trim
    Qk = Q[:, keep]
    w = -0.5 * Qk @ ((Qk.T @ c) / D[keep])
    return w, int(keep.sum())


def _check(X, y, domain, labels01=False):
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],) or X.shape[0] < 1:
        raise ValueError(f"need X of shape (n, d) and y of shape (n,), got {X.shape} and {y.shape}")
    if not (np.isfinite(X).all() and np.isfinite(y).all()):
        raise ValueError("X and y must be finite")
    if _domain(domain) == "box" and np.abs(X).max() > 1 + 1e-9:
        raise ValueError("domain='box' needs every feature in [-1, 1]")
    if domain == "sphere" and np.linalg.norm(X, axis=1).max() > 1 + 1e-9:
        raise ValueError("domain='sphere' needs every row with ‖x‖ ≤ 1")
    if labels01:
        if not np.isin(y, (0.0, 1.0)).all():
            raise ValueError("logistic functional mechanism needs labels in {0, 1}")
    elif np.abs(y).max() > 1 + 1e-9:
        raise ValueError("linear functional mechanism needs |y| ≤ 1")
    return X, y


def fm_perturb(M, c, sensitivity: float, epsilon: float, rng: np.random.Generator, size=(),
               noise_factor: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The private step of the functional mechanism (Zhang et al. 2012, Alg. 1): every coefficient of the
    objective's polynomial — the d×d entries of M and the d entries of c — plus i.i.d. Laplace(Δ/ε). ``size``
    adds leading axes of independent draws (the privacy audit redraws the noise of one data set).
    ``noise_factor`` is FAULT INJECTION for the audit's broken twins (1 = the mechanism)."""
    M = np.asarray(M, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    d = M.shape[0]
    scale = sensitivity / epsilon
    lead = (int(size),) if isinstance(size, (int, np.integer)) else tuple(int(s) for s in size)
    Mn = M + float(noise_factor) * rng.laplace(0.0, scale, size=lead + (d, d))
    cn = c + float(noise_factor) * rng.laplace(0.0, scale, size=lead + (d,))
    return Mn, cn


def fm_logistic_objective(X, y01) -> tuple[np.ndarray, np.ndarray]:
    """(M, c) of the second-order Taylor objective of logistic regression (labels {0, 1}): M = Σ x xᵀ/8,
    c = Σ(½ − y)x (Zhang et al. 2012, §5)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y01, dtype=np.float64)
    return (X.T @ X) / 8.0, X.T @ (0.5 - y)


def _run(M, c, delta, epsilon, rng, ridge, trim):
    scale = delta / epsilon
    Mn, cn = fm_perturb(M, c, delta, epsilon, rng)
    r = _ridge(ridge, scale)
    w, kept = solve_noisy_quadratic(Mn, cn, r, trim)
    return FMResult(w, delta, epsilon, kept, r)


def _ridge(ridge: float, scale: float) -> float:
    if not (ridge >= 0 and math.isfinite(ridge)):
        raise ValueError(f"ridge must be a finite number ≥ 0, got {ridge!r}")
    return ridge * math.sqrt(2.0) * scale


def functional_mechanism_linear(X, y, epsilon: float, rng: np.random.Generator, domain: str = "box",
                                ridge: float = 5.0, trim: float = 1e-8, calibration: str = "source") -> FMResult:
    """ε-DP linear regression by the functional mechanism (module docstring): M = Σ x xᵀ, c = −2Σ y x, each
    entry + Laplace(Δ/ε), Δ = :func:`fm_linear_sensitivity` (``calibration``); minimiser of the repaired noisy
    quadratic."""
    X, y = _check(X, y, domain)
    epsilon = _pos("epsilon", epsilon)
    delta = fm_linear_sensitivity(X.shape[1], domain, calibration=calibration)
    return _run(X.T @ X, -2.0 * (X.T @ y), delta, epsilon, rng, ridge, trim)


def functional_mechanism_logistic(X, y01, epsilon: float, rng: np.random.Generator, domain: str = "box",
                                  ridge: float = 5.0, trim: float = 1e-8, calibration: str = "source") -> FMResult:
    """ε-DP logistic regression by the functional mechanism on the second-order Taylor expansion (labels
    {0, 1}): M = Σ x xᵀ/8, c = Σ(½ − y)x, noise Laplace(Δ/ε) with Δ = :func:`fm_logistic_sensitivity`
    (``calibration``)."""
    X, y = _check(X, y01, domain, labels01=True)
    epsilon = _pos("epsilon", epsilon)
    delta = fm_logistic_sensitivity(X.shape[1], domain, calibration=calibration)
    return _run(*fm_logistic_objective(X, y), delta, epsilon, rng, ridge, trim)


@TRAINING.register
class FunctionalMechanism(Method):
    """:func:`functional_mechanism_logistic` as a training method (labels {0, 1}: class 1), rows on the unit
    sphere by default (setting ``domain``, block ``erm``); pure ε."""

    name = "functional_mechanism"
    label = "functional mechanism"
    kind = "training"
    depends_on = ("epsilon", "rep")
    binary_only = True
    settings_spec = (Setting("domain", "erm", default="sphere", schema={"enum": ["sphere", "box"]}),)

    def train(self, X, y, n_classes, epsilon, delta, rng):
        r = functional_mechanism_logistic(X, (y == 1).astype(float), epsilon, rng, domain=self.settings["domain"],
                                          calibration=self.calibration_kind)
        return linear_scores(r.w, 2), {"noise_scale": r.sensitivity / epsilon}


@TRAINING.register
class FunctionalMechanismTight(FunctionalMechanism):
    """The functional mechanism with the tight calibration (module docstring): Laplace(Δ*/ε) with Δ* the exact
    replace-one L1 sensitivity (d + 2)²/8 of the coefficients on the box (noise × 0.521 at d = 8), or the proved
    sphere bound. Same settings (block ``erm``); rows carry ``calibration: tight``."""

    name = "functional_mechanism_tight"
    label = "functional mechanism (tight calibration)"
    calibration_kind = "tight"

