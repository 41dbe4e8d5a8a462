"""Permutation mini-batch SGD for binary linear models (Wu 2016, §2.2 and §3.2; Song 2018, §3.3, update (3.6)).

Shared engine of the non-private PSGD baseline, wu2016's bolt-on output perturbation (the noise is added to
the returned ``w`` by the caller), SCS13 / song2018 update 3.6 (per-update noise through ``batch_noise``) and
the BST14 variants (Gaussian per-update noise).

Setting and assumptions
-----------------------

* Rows ``X`` of shape ``(n, d)`` with ``‖x_i‖₂ ≤ 1`` (unit-ball normalised, bias folded in as a feature if
  wanted). The loss constants below (L, β) are only valid under this assumption; it is NOT enforced, so a
  non-private baseline may run on other data, but the privacy accounting of callers relies on it.
* Labels ``y ∈ {−1, +1}`` (anything else is a ``ValueError``).
* Linear score ``⟨w, x⟩``; margin-based loss ``ℓ(w; x, y) = φ(y⟨w, x⟩)``, per-example gradient
  ``φ′(y⟨w,x⟩) · y · x`` and Hessian ``φ″(y⟨w,x⟩) · x xᵀ``. Hence, if ``|φ′| ≤ L₀`` and ``0 ≤ φ″ ≤ β₀``,
  then ``‖∇ℓ‖ ≤ L₀‖x‖ ≤ L₀`` (L-Lipschitz in w) and ``‖∇²ℓ‖ ≤ β₀‖x‖² ≤ β₀`` (β-smooth).
* Objective ``F(w) = (1/n) Σ ℓ(w; x_i, y_i) + (λ/2)‖w‖²`` (song2018 (3.1)); strong convexity γ = λ,
  smoothness β + λ; optionally constrained to the ball ``‖w‖ ≤ R`` (Wu 2016, eq. (3.5); Song 2018, §3.4.2:
  R = 1/λ). On that ball the regularised loss is (L + λR)-Lipschitz
  (docs/studies/wu2016.md#lipschitz-constant).

One update (t = 1, 2, …, counted in MINI-BATCH updates across all passes, not in examples — see
docs/studies/wu2016.md#mini-batch-sensitivity: with η_t = 1/(γt) this is the "t counts steps" reading), for a
batch B_t of actual size m:

    g_t   = (1/m) Σ_{i∈B_t} ∇ℓ(w_{t−1}; x_i, y_i)          (vectorised: X_Bᵀ (φ′(margins) ⊙ y_B) / m)
    z_t   = batch_noise(rng, d, m)                          (0 without a hook; e.g. update 3.6: Z_t / b)
    w_t   = Π_R( w_{t−1} − η_t (λ w_{t−1} + g_t + z_t) )    (Π_R = identity when radius is None)

Passes and batches: each of the ``passes`` passes visits the examples in a permutation (``order``: a fresh
``rng.permutation(n)`` per pass by default, Wu 2016, §3.2 "Extensions"; or one permutation drawn once and
reused; or the identity; or a given permutation) split into consecutive disjoint batches of ``batch_size``. If
b does not divide n, ``last_batch="keep"`` (default) makes the last batch of each pass smaller (n mod b
examples, every example used exactly once per pass), ``"drop"`` discards those n mod b examples of the pass (all
batches have size exactly b). Updates per pass: ⌈n/b⌉ (keep) or ⌊n/b⌋ (drop); see :func:`total_updates`.

Randomness: everything comes from the ``numpy.random.Generator`` passed in, in this order: at the start of each
pass the permutation (if drawn), then for each update the ``batch_noise`` draw. Same generator state ⇒
bit-identical output.

The computation is organised like an in-RDBMS (Bismarck-style) aggregate, as in Wu 2016, §3.3 (Fig. 3.1):
:class:`PSGDAggregate` has ``initialize(dim) -> state``, ``transition(state, X_batch, y_batch) -> state`` (one
vectorised update) and ``terminate(state) -> w``; :func:`psgd` is the driver over passes and batches.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..privacy import _validate as V

__all__ = [
    "MarginLoss",
    "LogisticLoss",
    "HuberHingeLoss",
    "get_loss",
    "StepSchedule",
    "make_schedule",
    "PSGDState",
    "PSGDAggregate",
    "psgd",
    "total_updates",
    "regularized_risk",
    "accuracy_pm1",
    "evaluate_linear",
    "project_l2_ball",
]


# ----------------------------------------------------------------------------------------------------------
# validation helpers


def _as_X(X) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-d array (n, d), got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X must be finite")
    return X


def _as_labels(y, n: int) -> np.ndarray:
    """Labels as float64 ±1, shape (n,); ValueError for any other value."""
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y must have shape ({n},), got {y.shape}")
    if y.dtype == bool or not np.issubdtype(y.dtype, np.number):
        raise ValueError(f"labels must be -1 or +1 (numeric), got dtype {y.dtype}")
    yf = y.astype(np.float64)
    bad = (yf != 1.0) & (yf != -1.0)
    if np.any(bad):
        raise ValueError(f"labels must be -1 or +1, got e.g. {y[np.argmax(bad)]!r}")
    return yf


def project_l2_ball(w: np.ndarray, radius: float | None) -> np.ndarray:
    """Euclidean projection Π_R(w) = w · min(1, R/‖w‖) onto {‖v‖ ≤ R}; identity if ``radius`` is None."""
    if radius is None:
        return w
    norm = float(np.linalg.norm(w))
    if norm > radius:
        return w * (radius / norm)
    return w


# ----------------------------------------------------------------------------------------------------------
# losses


class MarginLoss:
    """Base class of margin losses ℓ(w; x, y) = φ(y⟨w, x⟩) for labels y ∈ {−1, +1}.

    Subclasses define ``phi``, ``dphi``, ``d2phi`` (elementwise on margins) and the constants
    ``lipschitz`` = sup|φ′| and ``smoothness`` = sup φ″, which are the Lipschitz constant L and smoothness β of
    ℓ in w whenever ‖x‖ ≤ 1 (module docstring). All methods are vectorised over the rows of ``X``.
    """

    name: str = "margin"
    lipschitz: float
    smoothness: float

    def phi(self, m: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def dphi(self, m: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def d2phi(self, m: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def margins(w, X, y) -> np.ndarray:
        """y_i ⟨w, x_i⟩, shape (n,)."""
        return y * (X @ w)

    def value(self, w, X, y) -> np.ndarray:
        """Per-example losses φ(y_i⟨w, x_i⟩), shape (n,)."""
        return self.phi(self.margins(w, X, y))

    def gradients(self, w, X, y) -> np.ndarray:
        """Per-example gradients φ′(y_i⟨w,x_i⟩) y_i x_i, shape (n, d) (materialised; for tests/diagnostics)."""
        coef = self.dphi(self.margins(w, X, y)) * y
        return coef[:, None] * X

    def mean_gradient(self, w, X, y) -> np.ndarray:
        """(1/n) Σ_i ∇ℓ(w; x_i, y_i) = Xᵀ(φ′ ⊙ y)/n, shape (d,), without materialising per-example gradients."""
        coef = self.dphi(self.margins(w, X, y)) * y
        return (X.T @ coef) / X.shape[0]

    def hessian_scales(self, w, X, y) -> np.ndarray:
        """φ″(y_i⟨w,x_i⟩), shape (n,): the per-example Hessian is this times x_i x_iᵀ (spectral norm ·‖x_i‖²)."""
        return self.d2phi(self.margins(w, X, y))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(L={self.lipschitz}, beta={self.smoothness})"


class LogisticLoss(MarginLoss):
    """Logistic loss φ(m) = log(1 + e^{−m}) (Wu 2016, §4.3; Song 2018, eq. (3.1)).

    Derivatives: φ′(m) = −σ(−m) ∈ (−1, 0), so L = 1; φ″(m) = σ(m) σ(−m) = σ(m)(1 − σ(m)) ≤ 1/4 (maximum at
    m = 0), so β = 1/4. With ‖x‖ ≤ 1: ‖∇ℓ‖ = σ(−m)‖x‖ ≤ 1 and ‖∇²ℓ‖ = φ″‖x‖² ≤ 1/4. φ(m) is evaluated as
    ``logaddexp(0, −m)`` (no overflow).
    """

    name = "logistic"
    lipschitz = 1.0
    smoothness = 0.25

    def phi(self, m):
        return np.logaddexp(0.0, -m)

    def dphi(self, m):
        from scipy.special import expit

        return -expit(-m)

    def d2phi(self, m):
        from scipy.special import expit

        return expit(m) * expit(-m)


class HuberHingeLoss(MarginLoss):
    """Huber-smoothed hinge loss with half-width h > 0 (Chapelle 2007; Chaudhuri et al. 2011):

        φ(m) = 0                     if m > 1 + h
             = (1 + h − m)² / (4h)   if |1 − m| ≤ h
             = 1 − m                 if m < 1 − h

    φ is C¹ (value and slope match at m = 1 ± h). φ′(m) ∈ [−1, 0] ⇒ L = 1; φ″(m) = 1/(2h) on the quadratic
    piece and 0 elsewhere ⇒ β = 1/(2h) (φ″ jumps at 1 ± h; ``d2phi`` returns the one-sided value 1/(2h) on the
    closed interval). h → 0 recovers the hinge max(0, 1 − m).
    """

    name = "huber_hinge"
    lipschitz = 1.0

    def __init__(self, h: float = 0.5):
        self.h = V.positive("h", h)
        self.smoothness = 1.0 / (2.0 * self.h)

    def phi(self, m):
        h = self.h
        u = 1.0 + h - m
        return np.where(m > 1.0 + h, 0.0, np.where(m < 1.0 - h, 1.0 - m, u * u / (4.0 * h)))

    def dphi(self, m):
        h = self.h
        return np.where(m > 1.0 + h, 0.0, np.where(m < 1.0 - h, -1.0, -(1.0 + h - m) / (2.0 * h)))

    def d2phi(self, m):
        return np.where(np.abs(1.0 - m) <= self.h, 1.0 / (2.0 * self.h), 0.0)

    def __repr__(self) -> str:
        return f"HuberHingeLoss(h={self.h}, L={self.lipschitz}, beta={self.smoothness})"


def get_loss(loss) -> MarginLoss:
    """A :class:`MarginLoss` from an instance or a name (``"logistic"``, ``"huber_hinge"`` with h = 0.5)."""
    if isinstance(loss, MarginLoss):
        return loss
    if loss == "logistic":
        return LogisticLoss()
    if loss in ("huber_hinge", "huber"):
        return HuberHingeLoss()
    raise ValueError(f"unknown loss {loss!r}; expected 'logistic', 'huber_hinge' or a MarginLoss instance")


# ----------------------------------------------------------------------------------------------------------
# step sizes

_SCHEDULE_KINDS = ("constant", "inv_sqrt", "inv_gamma_t", "strongly_convex")


@dataclass(frozen=True)
class StepSchedule:
    """Step size η_t as a function of the update counter t = 1, 2, … (mini-batch updates across passes).

    Kinds (build with the class methods):

    * ``constant(eta)``: η_t = η (wu2016 Alg. 1; needs η ≤ 2/β for 1-expansiveness). song2018's "c/√T" with
      T total updates is ``constant(c / sqrt(T))`` (T from :func:`total_updates`).
    * ``inv_sqrt(c=1)``: η_t = c/√t (song2018 1/√t and the ambiguous 10/√t; SCS13 in wu2016 Table 3.3).
    * ``inv_gamma_t(gamma)``: η_t = 1/(γ t) (song2018 1/(λt); wu2016 non-private strongly convex baseline).
    * ``strongly_convex(gamma, beta)``: η_t = min(1/β, 1/(γ t)) (wu2016 Alg. 2 / Lemma 3.10; β is the
      smoothness of the REGULARISED loss, β_loss + λ).
    """

    kind: str
    eta: float | None = None
    c: float = 1.0
    gamma: float | None = None
    beta: float | None = None

    def __post_init__(self):
        if self.kind not in _SCHEDULE_KINDS:
            raise ValueError(f"unknown step-size schedule {self.kind!r}; expected one of {_SCHEDULE_KINDS}")
        if self.kind == "constant":
            V.positive("eta", self.eta)
        elif self.kind == "inv_sqrt":
            V.positive("c", self.c)
        elif self.kind == "inv_gamma_t":
            V.positive("gamma", self.gamma)
        else:
            V.positive("gamma", self.gamma)
            V.positive("beta", self.beta)

    @classmethod
    def constant(cls, eta: float) -> "StepSchedule":
        return cls("constant", eta=eta)

    @classmethod
    def inv_sqrt(cls, c: float = 1.0) -> "StepSchedule":
        return cls("inv_sqrt", c=c)

    @classmethod
    def inv_gamma_t(cls, gamma: float) -> "StepSchedule":
        return cls("inv_gamma_t", gamma=gamma)

    @classmethod
    def strongly_convex(cls, gamma: float, beta: float) -> "StepSchedule":
        return cls("strongly_convex", gamma=gamma, beta=beta)

    def __call__(self, t: int) -> float:
        if t < 1:
            raise ValueError(f"update counter t starts at 1, got {t}")
        if self.kind == "constant":
            return float(self.eta)
        if self.kind == "inv_sqrt":
            return self.c / math.sqrt(t)
        if self.kind == "inv_gamma_t":
            return 1.0 / (self.gamma * t)
        return min(1.0 / self.beta, 1.0 / (self.gamma * t))


def make_schedule(schedule, *, l2: float = 0.0, loss: MarginLoss | None = None) -> Callable[[int], float]:
    """Resolve ``schedule`` to a callable t ↦ η_t.

    Accepts a :class:`StepSchedule`, any callable ``t -> float``, a positive number (constant step), or a name
    whose parameters follow from the problem: ``"inv_sqrt"`` (c = 1), ``"inv_gamma_t"`` (γ = λ = ``l2``),
    ``"strongly_convex"`` (γ = λ, β = loss.smoothness + λ). ``"constant"`` by name is rejected (the step size
    must be given: pass a number or ``StepSchedule.constant(eta)``). Unknown names raise ``ValueError``.
    """
    if isinstance(schedule, StepSchedule):
        return schedule
    if isinstance(schedule, numbers.Real) and not isinstance(schedule, bool):
        return StepSchedule.constant(float(schedule))
    if isinstance(schedule, str):
        if schedule == "inv_sqrt":
            return StepSchedule.inv_sqrt()
        if schedule in ("inv_gamma_t", "strongly_convex"):
            if l2 <= 0:
                raise ValueError(f"schedule {schedule!r} needs l2 > 0 (gamma = l2), got l2={l2!r}")
            if schedule == "inv_gamma_t":
                return StepSchedule.inv_gamma_t(l2)
            if loss is None:
                raise ValueError("schedule 'strongly_convex' by name needs the loss (for beta)")
            return StepSchedule.strongly_convex(l2, loss.smoothness + l2)
        if schedule == "constant":
            raise ValueError("schedule 'constant' needs a step size: pass a number or StepSchedule.constant(eta)")
        raise ValueError(f"unknown step-size schedule {schedule!r}; expected one of {_SCHEDULE_KINDS}")
    if callable(schedule):
        return schedule
    raise ValueError(f"unknown step-size schedule {schedule!r}")


# ----------------------------------------------------------------------------------------------------------
# the aggregate


@dataclass(frozen=True)
class PSGDState:
    """Aggregate state: current iterate ``w``, number of updates ``t`` done so far, running sum of the iterates
    w_1..w_t (for averaging), and the norm of the last noise vector added (0 without noise)."""

    w: np.ndarray
    t: int
    w_sum: np.ndarray
    last_noise_norm: float = 0.0


class PSGDAggregate:
    """One-update-at-a-time PSGD as an aggregate (initialize / transition / terminate).

    ``transition`` applies the update of the module docstring to one batch (vectorised, any batch size ≥ 1)
    and returns a NEW state (the input state is not modified). ``rng`` is needed only with ``batch_noise``.
    ``terminate`` returns the last iterate w_T, or with ``average=True`` the uniform average (1/T) Σ w_t of
    the iterates after each update (wu2016 Lemma 3.15: weights summing to 1 keep the sensitivity ≤ δ_T; the
    average stays in the ball when projecting). With T = 0 updates ``terminate`` returns w_0.
    """

    def __init__(
        self,
        loss,
        schedule,
        *,
        rng: np.random.Generator | None = None,
        l2: float = 0.0,
        radius: float | None = None,
        batch_noise=None,
        average: bool = False,
    ):
        self.loss = get_loss(loss)
        self.l2 = V.nonnegative("l2", l2)
        self.radius = None if radius is None else V.positive("radius", radius)
        self.schedule = make_schedule(schedule, l2=self.l2, loss=self.loss)
        if batch_noise is not None and not callable(batch_noise):
            raise ValueError("batch_noise must be None or a callable (rng, dim, m) -> noise vector")
        if batch_noise is not None and rng is None:
            raise ValueError("batch_noise needs an rng (numpy Generator)")
        self.batch_noise = batch_noise
        self.rng = rng
        self.average = bool(average)

    def initialize(self, dim: int, w0=None) -> PSGDState:
        """Initial state: w_0 = 0 (or ``w0``, projected onto the ball), t = 0."""
        dim = V.count("dim", dim)
        if w0 is None:
            w = np.zeros(dim)
        else:
            w = np.array(w0, dtype=np.float64)
            if w.shape != (dim,):
                raise ValueError(f"w0 must have shape ({dim},), got {w.shape}")
            w = project_l2_ball(w, self.radius)
        return PSGDState(w=w, t=0, w_sum=np.zeros(dim))

    def transition(self, state: PSGDState, X_batch, y_batch) -> PSGDState:
        """One mini-batch update on (X_batch, y_batch); labels must be ±1, rows assumed ‖x‖ ≤ 1."""
        X_batch = _as_X(X_batch)
        y_batch = _as_labels(y_batch, X_batch.shape[0])
        if X_batch.shape[0] < 1:
            raise ValueError("a batch must contain at least one example")
        if X_batch.shape[1] != state.w.shape[0]:
            raise ValueError(f"X_batch has {X_batch.shape[1]} columns, the model has dim {state.w.shape[0]}")
        return self._step(state, X_batch, y_batch)

    def _step(self, state: PSGDState, Xb: np.ndarray, yb: np.ndarray) -> PSGDState:
        t = state.t + 1
        eta = float(self.schedule(t))
        if not (eta > 0 and math.isfinite(eta)):
            raise ValueError(f"step size must be finite and > 0, got eta_{t} = {eta!r}")
        w = state.w
        direction = self.loss.mean_gradient(w, Xb, yb)
        if self.l2:
            direction = direction + self.l2 * w
        noise_norm = 0.0
        if self.batch_noise is not None:
            z = np.asarray(self.batch_noise(self.rng, w.shape[0], Xb.shape[0]), dtype=np.float64)
            if z.shape != w.shape:
                raise ValueError(f"batch_noise returned shape {z.shape}, expected {w.shape}")
            noise_norm = float(np.linalg.norm(z))
            direction = direction + z
        w_new = project_l2_ball(w - eta * direction, self.radius)
        return PSGDState(w=w_new, t=t, w_sum=state.w_sum + w_new, last_noise_norm=noise_norm)

    def terminate(self, state: PSGDState) -> np.ndarray:
        if self.average and state.t > 0:
            return state.w_sum / state.t
        return state.w.copy()


# ----------------------------------------------------------------------------------------------------------
# driver


def total_updates(n: int, batch_size: int, passes: int, last_batch: str = "keep") -> int:
    """Number of updates T of :func:`psgd`: passes·⌈n/b⌉ (``"keep"``) or passes·⌊n/b⌋ (``"drop"``)."""
    n = V.count("n", n)
    batch_size = V.count("batch_size", batch_size)
    passes = V.count("passes", passes)
    if last_batch == "keep":
        return passes * (-(-n // batch_size))
    if last_batch == "drop":
        return passes * (n // batch_size)
    raise ValueError(f"last_batch must be 'keep' or 'drop', got {last_batch!r}")


def _pass_orders(order, n: int, passes: int, rng):
    """Yield the permutation of each pass (drawn lazily so rng consumption interleaves as documented)."""
    if isinstance(order, str):
        if order == "per_pass":
            for _ in range(passes):
                yield rng.permutation(n)
            return
        if order == "once":
            perm = rng.permutation(n)
        elif order == "none":
            perm = np.arange(n)
        else:
            raise ValueError(f"order must be 'per_pass', 'once', 'none' or a permutation array, got {order!r}")
    else:
        perm = np.asarray(order)
        if perm.shape != (n,) or not np.issubdtype(perm.dtype, np.integer) or not np.array_equal(
            np.sort(perm), np.arange(n)
        ):
            raise ValueError(f"order array must be a permutation of range({n})")
    for _ in range(passes):
        yield perm


def psgd(
    X,
    y,
    loss,
    passes,
    batch_size,
    schedule,
    rng,
    l2=0.0,
    radius=None,
    batch_noise=None,
    average=False,
    return_trace=False,
    *,
    last_batch="keep",
    order="per_pass",
    w0=None,
):
    """k-pass mini-batch permutation SGD (module docstring) on a binary linear model; returns ``w`` (d,).

    Arguments: ``X`` (n, d) rows with ‖x‖ ≤ 1; ``y`` (n,) in {−1, +1}; ``loss`` a :class:`MarginLoss` or name;
    ``passes`` k ≥ 1; ``batch_size`` 1 ≤ b ≤ n; ``schedule`` see :func:`make_schedule`; ``rng`` a numpy
    Generator (used for the permutations and the noise); ``l2`` λ ≥ 0; ``radius`` R > 0 or None (no
    projection); ``batch_noise`` None or a hook ``(rng, dim, m) -> z`` called once per update and added to the
    averaged batch gradient (e.g. :func:`dpbench.methods.private_psgd.l2_laplace_batch_noise`,
    :func:`~dpbench.methods.private_psgd.gaussian_batch_noise`); ``average``
    return the average of the iterates instead of the last one; ``last_batch`` ``"keep"``/``"drop"``;
    ``order`` ``"per_pass"`` (fresh permutation each pass), ``"once"`` (one permutation for all passes),
    ``"none"`` (identity) or an explicit permutation array; ``w0`` start (default 0).

    With ``return_trace=True`` returns ``(w, trace)``, ``trace`` a dict with ``"indices"`` (list of T int
    arrays, the example indices of each update, in order), ``"eta"`` (T,), ``"batch_size"`` (T,),
    ``"noise_norm"`` (T,) norms of the added noise vectors, ``"w_norm"`` (T,) ‖w_t‖ after each update,
    ``"updates"`` T.
    """
    X = _as_X(X)
    n, d = X.shape
    if n < 1:
        raise ValueError("X must contain at least one example")
    y = _as_labels(y, n)
    passes = V.count("passes", passes)
    batch_size = V.count("batch_size", batch_size)
    if batch_size > n:
        raise ValueError(f"batch_size must be <= n = {n}, got {batch_size}")
    T = total_updates(n, batch_size, passes, last_batch)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    agg = PSGDAggregate(loss, schedule, rng=rng, l2=l2, radius=radius, batch_noise=batch_noise, average=average)
    state = agg.initialize(d, w0)

    n_full = n - n % batch_size if last_batch == "drop" else n
    if return_trace:
        tr_idx, tr_eta, tr_b = [], np.empty(T), np.empty(T, dtype=np.int64)
        tr_noise, tr_wn = np.empty(T), np.empty(T)
    for perm in _pass_orders(order, n, passes, rng):
        for start in range(0, n_full, batch_size):
            idx = perm[start:min(start + batch_size, n_full)]
            state = agg._step(state, X[idx], y[idx])
            if return_trace:
                k = state.t - 1
                tr_idx.append(idx.copy())
                tr_eta[k] = agg.schedule(state.t)
                tr_b[k] = idx.shape[0]
                tr_noise[k] = state.last_noise_norm
                tr_wn[k] = np.linalg.norm(state.w)
    w = agg.terminate(state)
    if not return_trace:
        return w
    trace = {"indices": tr_idx, "eta": tr_eta, "batch_size": tr_b, "noise_norm": tr_noise, "w_norm": tr_wn,
             "updates": state.t}
    return w, trace


# ----------------------------------------------------------------------------------------------------------
# evaluation


def regularized_risk(w, X, y, loss="logistic", l2: float = 0.0) -> float:
    """F(w) = (1/n) Σ ℓ(w; x_i, y_i) + (λ/2)‖w‖² (song2018 (3.1), the metric of its Figs 3.1–3.3)."""
    X = _as_X(X)
    y = _as_labels(y, X.shape[0])
    w = np.asarray(w, dtype=np.float64)
    l2 = V.nonnegative("l2", l2)
    return float(np.mean(get_loss(loss).value(w, X, y)) + 0.5 * l2 * float(w @ w))


def accuracy_pm1(w, X, y) -> float:
    """0/1 accuracy of sign(⟨w, x⟩) against y ∈ {−1, +1}; a score of exactly 0 predicts +1."""
    X = _as_X(X)
    y = _as_labels(y, X.shape[0])
    pred = np.where(X @ np.asarray(w, dtype=np.float64) >= 0.0, 1.0, -1.0)
    return float(np.mean(pred == y))


def evaluate_linear(w, X, y, loss="logistic", l2: float = 0.0) -> dict:
    """``{"risk": regularized_risk, "accuracy": accuracy_pm1}`` of ``w`` on (X, y)."""
    return {"risk": regularized_risk(w, X, y, loss, l2), "accuracy": accuracy_pm1(w, X, y)}
