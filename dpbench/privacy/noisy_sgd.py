"""Per-update noise of noisy mini-batch SGD on linear models: the SCS13 calibration and the noise added to the
mini-batch gradient of many models at once.

SCS13 (Song, Chaudhuri & Sarwate 2013; Song 2018, §3.3, update (3.6)) adds, at every mini-batch update, a noise
vector Z_t to the gradient SUM Σ_{i∈B_t} ∇ℓ, i.e. Z_t / b to the averaged gradient:

* δ = 0: Z_t with density ∝ exp(−(ε/2)‖z‖) (‖Z_t‖ ~ Gamma(d, 2/ε), uniform direction). Replacing one example
  changes the sum of gradients of norm ≤ L = 1 by ≤ 2, so each update is ε-DP; the batches of one pass are
  disjoint, so the pass is ε-DP (parallel composition, Song 2018, Thm 3.3.1).
* δ > 0: Z_t ~ N(0, σ² I), σ = 2√(2 ln(1.25/δ))/ε (classic Gaussian mechanism at sensitivity 2; ε < 1).
* k passes: basic composition, ε/k (δ/k) per pass (docs/studies/wu2016.md#open-choices item 6).

BST14 (Bassily, Smith & Thakurta 2014; Wu 2016, §3.3, Alg. 3/4) adds Gaussian noise at every update of
with-replacement sampling, calibrated by advanced composition and amplification (:func:`bst14_calibration`).
Both go through :func:`gradient_sum_noise`, the only place that draws per-update noise of the margin-SGD engines
(wu2016 ch. 3 one-model and many-model engines, song2018 ch. 3 runs).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from . import _validate as V
from .mechanisms import classic_gaussian_sigma, l2_laplace_rows, sample_gaussian

__all__ = ["SUM_SENSITIVITY", "scs13_calibration", "bst14_epsilon1", "bst14_calibration", "bst14_tight_epsilon",
           "bst14_tight_calibration", "bst14_calibrator", "gradient_sum_noise", "gradient_sum_noise_hook"]

SUM_SENSITIVITY = 2.0
"""Replace-one L2 sensitivity of a mini-batch gradient sum of an L = 1 loss (two gradients of norm ≤ 1)."""

_KINDS = ("l2_laplace", "gaussian")


def scs13_calibration(epsilons, delta: float = 0.0, passes: int = 1, lipschitz: float = 1.0) -> dict:
    """The SCS13 noise of every budget ε_e of ``epsilons`` (module docstring) over ``passes`` passes.

    Returns the calibration record: ``noise_kind`` ("l2_laplace" for δ = 0, else "gaussian"), ``noise_scale``
    (E,) (the Gamma scale 2/ε_pass of ‖Z_t‖, or σ), ``epsilon_per_pass`` (E,), ``delta_per_pass``,
    ``passes``, ``budget_split``. Requires ``lipschitz == 1`` (the sensitivity 2 of the sum assumes it)."""
    eps = np.asarray(epsilons, dtype=np.float64).ravel()
    if eps.size < 1 or not np.all(np.isfinite(eps) & (eps > 0)):
        raise ValueError(f"epsilons must be finite and > 0, got {epsilons!r}")
    if lipschitz != 1.0:
        raise ValueError(f"SCS13 noise is calibrated for L = 1 losses, got L = {lipschitz!r}")
    passes = V.count("passes", passes)
    delta = V.delta_halfopen("delta", delta)
    eps_pass = eps / passes
    delta_pass = delta / passes
    if delta == 0:
        kind, scale = "l2_laplace", SUM_SENSITIVITY / eps_pass
    else:
        kind = "gaussian"
        scale = np.array([classic_gaussian_sigma(e, delta_pass, SUM_SENSITIVITY) for e in eps_pass])
    return {"noise_kind": kind, "noise_scale": scale, "epsilon_per_pass": eps_pass, "delta_per_pass": delta_pass,
            "passes": passes,
            "budget_split": "basic composition over passes: epsilon/k (delta/k) per pass "
                            "(docs/studies/wu2016.md#open-choices item 6)"}


def _bst14_equation(eps1, steps, delta1):
    """T ε₁ (e^{ε₁} − 1) + √(2 T ln(1/δ₁)) ε₁ (wu2016 Alg. 3 line 5, "e_1^ε" read as e^{ε₁})."""
    return steps * eps1 * math.expm1(eps1) + math.sqrt(2.0 * steps * math.log(1.0 / delta1)) * eps1


def bst14_epsilon1(epsilon, steps, delta1) -> float:
    """The ε₁ > 0 solving ε = T ε₁(e^{ε₁} − 1) + √(2T ln(1/δ₁)) ε₁ (advanced composition of T steps; Wu 2016,
    Alg. 3/4 line 5), by ``scipy.optimize.brentq`` on the bracket [0, ε/√(2T ln(1/δ₁))] (the
    right-hand side is increasing, 0 at 0, and ≥ ε at the upper end)."""
    from scipy.optimize import brentq

    epsilon = V.positive("epsilon", epsilon)
    steps = V.count("steps", steps)
    delta1 = V.delta_open("delta1", delta1)
    hi = epsilon / math.sqrt(2.0 * steps * math.log(1.0 / delta1))
    if _bst14_equation(hi, steps, delta1) == epsilon:
        return hi
    return float(brentq(lambda e: _bst14_equation(e, steps, delta1) - epsilon, 0.0, hi,
                        xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500))


def bst14_calibration(epsilon, delta, n, steps, batch_size=1) -> dict:
    """Per-step Gaussian calibration of BST14 with T = ``steps`` updates on batches of b examples drawn
    uniformly WITH replacement from n (Wu 2016, Alg. 3/4 lines 2–7; mini-batch extension:
    docs/studies/wu2016.md#bst14):

        δ₁ = δ/T,  ε₁ from :func:`bst14_epsilon1`,  ε₂ = min(1, n ε₁/(2b))  (amplification, rate q = b/n),
        σ² = 2 ln(1.25/δ₁)/ε₂².

    For b = 1 and T = kn this is exactly the thesis (δ₁ = δ/(km), ε₂ = min(1, mε₁/2)).
    """
    epsilon = V.positive("epsilon", epsilon)
    delta = V.delta_open("delta", delta, reason="BST14 is (epsilon, delta)-DP")
    n = V.count("n", n)
    steps = V.count("steps", steps)
    batch_size = V.count("batch_size", batch_size)
    delta1 = delta / steps
    eps1 = bst14_epsilon1(epsilon, steps, delta1)
    eps2 = min(1.0, n * eps1 / (2.0 * batch_size))
    sigma = math.sqrt(2.0 * math.log(1.25 / delta1)) / eps2
    return {"delta1": delta1, "epsilon1": eps1, "epsilon2": eps2, "sigma": sigma}


#: PLD discretisation of the calibration: min(1e-3, ε / (c √T)) with c = this. dp_accounting's pessimistic
#: connect-the-dots estimate is an upper bound at any interval; its slack grows with the interval and T, its run
#: time as the interval shrinks at small noise (large ε): ~20 s per calibration at ε = 1, T = 12,000.
BST14_TIGHT_DISCRETISATION = 20.0


def _bst14_interval(epsilon: float, steps: int) -> float:
    return min(1e-3, epsilon / (BST14_TIGHT_DISCRETISATION * math.sqrt(steps)))


def _hit_distribution(n: int, batch_size: int, tail: float = 1e-18) -> tuple[list, list]:
    """How often one record is drawn among ``batch_size`` uniform draws with replacement from ``n``: K ~
    Binomial(b, 1/n) on 0..k_max, the mass of K > k_max (< ``tail``) moved onto k_max (more hits: less private,
    so the truncation stays an upper bound)."""
    from scipy import stats

    pk = stats.binom.pmf(np.arange(batch_size + 1), batch_size, 1.0 / n)
    kmax = 1
    while kmax < batch_size and pk[kmax + 1:].sum() > tail:
        kmax += 1
    probs = pk[:kmax + 1].copy()
    probs[-1] += pk[kmax + 1:].sum()
    return list(range(kmax + 1)), (probs / probs.sum()).tolist()


def bst14_tight_epsilon(noise_multiplier, n, steps, batch_size, delta, *, discretisation: float = 1e-4) -> float:
    """ε at ``delta`` of T = ``steps`` BST14 updates under REPLACE-ONE neighbours, each update releasing the
    gradient SUM of ``batch_size`` draws with replacement from ``n`` records plus N(0, (ν·2L)² I), ν =
    ``noise_multiplier`` (2L = :data:`SUM_SENSITIVITY`, the replace-one sensitivity of one draw).

    Proof sketch (docs/studies/wu2016.md#bst14-tight). Let D⊥ be the run on D where every draw that hits the
    changed record i is redrawn uniformly from the others (i.e. b draws with replacement from D without i).
    Condition one update on the draws of the others O_1..O_b (i.i.d.) and on the set H of positions that hit i:
    on D the release is N(S_O + Σ_{j∈H}(g_i − a_{O_j})), on D⊥ it is N(S_O) whatever H is (S_O = Σ_j a_{O_j}).
    So for fixed O the pair is (Σ_H p(H) N(S_O + v_H), N(S_O)) with ‖v_H‖ ≤ 2L|H|, |H| ~ Binomial(b, 1/n);
    joint convexity of the hockey-stick divergence over the common O, then Choquette-Choo et al. 2023
    (arXiv:2310.15526, Cor. 4.7: a vector mixture of Gaussians is dominated by the scalar one with the vectors'
    norms; norms rounded up to 2L|H|) bound both orderings by the scalar mixture-of-Gaussians pair of
    dp_accounting (``from_mixture_gaussian_mechanism``: sensitivities k·2L with Binomial weights, noise ν·2L).
    The updates compose adaptively (the pair does not depend on the iterate), so T updates are the T-fold
    self-composition of that PLD. D⊥ to D′ is the same with i′ for i; chaining D → D⊥ → D′ gives the
    replace-one guarantee (ε, δ) = (2ε_h, δ_h(1 + e^{ε_h})): this function returns 2ε_h for an ε_h whose PLD
    value at δ_h = δ/(1 + e^{ε_h}) is at most ε_h (a short monotone fixed-point iteration)."""
    from dp_accounting.pld import privacy_loss_distribution as pld_mod

    nu = V.positive("noise_multiplier", noise_multiplier)
    n = V.count("n", n)
    steps = V.count("steps", steps)
    batch_size = V.count("batch_size", batch_size)
    delta = V.delta_open("delta", delta)
    ks, probs = _hit_distribution(n, batch_size)
    pld = pld_mod.from_mixture_gaussian_mechanism(nu, [float(k) for k in ks], probs,
                                                  value_discretization_interval=discretisation)
    composed = pld.self_compose(steps)
    # f(ε_h) = PLD ε at δ/(1 + e^{ε_h}) is non-decreasing in ε_h (smaller δ_h, larger ε) and nearly flat; iterate
    # ε_h ← f(ε_h)(1 + 1e-9) from 0 until f(ε_h) ≤ ε_h: then (ε_h, δ/(1 + e^{ε_h})) holds exactly for each half
    eps_h = 0.0
    for _ in range(100):
        if eps_h > 700:
            return math.inf
        new = float(composed.get_epsilon_for_delta(delta / (1.0 + math.exp(eps_h))))
        if new <= eps_h:
            return 2.0 * eps_h
        eps_h = new * (1.0 + 1e-9)
    raise RuntimeError(f"bst14_tight_epsilon: the fixed point of delta_h = delta/(1 + e^eps_h) did not converge "
                       f"(last eps_h {eps_h!r})")


def bst14_calibrator(calibration, iota: float):
    """The BST14 calibration function of ``calibration``: ``"source"`` :func:`bst14_calibration` (the thesis'),
    ``"tight"`` :func:`bst14_tight_calibration`, which assumes ι = 4 (noise on the gradient sum at the replace-one
    sensitivity 2 of one draw) and refuses any other ``iota``. A callable ``(ε, δ, n, steps, batch_size) →
    dict`` (keys ``sigma``, ``epsilon1``, ``epsilon2``, optionally ``epsilon_achieved``) is returned as it is:
    a researcher's own analysis, or the privacy audit's noise twins (its privacy is the caller's claim)."""
    if callable(calibration):
        return calibration
    if calibration not in ("source", "tight"):
        raise ValueError(f"calibration must be 'source' or 'tight', got {calibration!r}")
    if calibration == "tight" and iota != 4.0:
        raise ValueError(f"the tight BST14 calibration assumes iota = 4 (noise on the gradient sum at the replace-one "
                         f"sensitivity 2), got iota = {iota!r}")
    return bst14_tight_calibration if calibration == "tight" else bst14_calibration


@functools.lru_cache(maxsize=256)
def _bst14_tight_sigma(epsilon: float, delta: float, n: int, steps: int, batch_size: int) -> tuple[float, float]:
    """(σ, the ε it spends) of :func:`bst14_tight_calibration`: bisection in log σ, keeping the valid end."""
    interval = _bst14_interval(epsilon, steps)

    def spends(nu):
        return bst14_tight_epsilon(nu, n, steps, batch_size, delta, discretisation=interval)

    hi = bst14_calibration(epsilon, delta, n, steps, batch_size)["sigma"]   # a start (valid by its own proof)
    eps_hi = spends(hi)
    while eps_hi > epsilon:
        hi *= 4.0
        if hi > 1e8:
            raise ValueError(f"BST14 tight calibration: no noise multiplier up to 1e8 proves epsilon = {epsilon:g} "
                             f"over {steps} steps")
        eps_hi = spends(hi)
    lo = hi / 4.0
    while (eps_lo := spends(lo)) <= epsilon:   # the bracket [lo, hi]: lo spends more than ε, hi at most ε
        hi, eps_hi, lo = lo, eps_lo, lo / 4.0
    while hi / lo > 1.002:   # ε(σ) decreases in σ
        mid = math.sqrt(lo * hi)
        eps_mid = spends(mid)
        if eps_mid <= epsilon:
            hi, eps_hi = mid, eps_mid
        else:
            lo = mid
    return hi, eps_hi


def bst14_tight_calibration(epsilon, delta, n, steps, batch_size=1) -> dict:
    """The smallest per-update Gaussian noise (within 0.2 %) for which :func:`bst14_tight_epsilon` proves
    (ε, δ)-DP under replace-one neighbours: BST14's updates, sampling and step sizes unchanged, the thesis'
    advanced composition + amplification (:func:`bst14_calibration`) replaced by the PLD of the
    mixture-of-Gaussians updates. Returns ``sigma`` in :func:`bst14_calibration`'s units (with ι = 4 the noise
    on the gradient sum is N(0, 4σ² I), σ = ν), ``epsilon_achieved`` (ε of that σ, ≤ ``epsilon``),
    ``calibration`` = "tight". Needs ι = 4 in the update (the replace-one sensitivity 2L = 2 of one draw).
    Cached per (ε, δ, n, T, b): a calibration takes seconds (dp_accounting PLD, ~10 evaluations)."""
    epsilon = V.positive("epsilon", epsilon)
    delta = V.delta_open("delta", delta, reason="BST14 is (epsilon, delta)-DP")
    n = V.count("n", n)
    steps = V.count("steps", steps)
    batch_size = V.count("batch_size", batch_size)
    sigma, spent = _bst14_tight_sigma(float(epsilon), float(delta), n, steps, batch_size)
    return {"sigma": sigma, "calibration": "tight", "steps": steps, "epsilon_achieved": spent,
            "epsilon1": float("nan"), "epsilon2": float("nan"), "delta1": float("nan")}


def gradient_sum_noise(rng: np.random.Generator, kind: str, scale, dim: int, divisor,
                       *, divide_scale: bool = False) -> np.ndarray:
    """Noise of one update for M models: row m is Z_m / ``divisor``, Z_m the noise on model m's gradient SUM —
    L2-Laplace with Gamma scale ``scale[m]`` of ‖Z_m‖ (``kind="l2_laplace"``) or N(0, scale[m]² I)
    (``"gaussian"``). Returns (M, dim).

    Draws: one :func:`~dpbench.privacy.mechanisms.l2_laplace_rows` or
    :func:`~dpbench.privacy.mechanisms.sample_gaussian` call for all M rows. ``divide_scale`` only changes the
    floating-point order of the L2-Laplace division (the radius scale is divided by ``divisor`` before the
    product instead of the vectors after it): the song2018 engine was written that way and keeps its results
    bit for bit; mathematically both are Z_m / divisor.
    """
    scale = np.asarray(scale, dtype=np.float64).ravel()
    M = scale.size
    if kind == "l2_laplace":
        if divide_scale:
            return l2_laplace_rows(rng, dim, scale / divisor, M)
        return l2_laplace_rows(rng, dim, scale, M) / divisor
    if kind == "gaussian":
        return sample_gaussian(rng, scale[:, None] / divisor, (M, dim))
    raise ValueError(f"noise kind must be one of {_KINDS}, got {kind!r}")


def gradient_sum_noise_hook(kind: str, scale, batch_size: int | None = None):
    """The per-update noise hook ``(rng, M, d, m) -> (M, d)`` of the margin-SGD engines: :func:`gradient_sum_noise`
    with one ``scale`` per model and divisor the actual batch size m of the update (``batch_size`` None) or
    min(batch_size, m) — a smaller last batch is divided by its own size, so its noise is never too small."""
    if kind not in _KINDS:
        raise ValueError(f"noise kind must be one of {_KINDS}, got {kind!r}")
    scale = np.asarray(scale, dtype=np.float64).ravel()
    ok = scale > 0 if kind == "l2_laplace" else scale >= 0
    if scale.size < 1 or not np.all(np.isfinite(scale) & ok):
        raise ValueError(f"noise scales must be finite and {'> 0' if kind == 'l2_laplace' else '>= 0'}, got {scale!r}")
    if batch_size is not None:
        batch_size = V.count("batch_size", batch_size)

    def noise(rng, M, d, m):
        if M != scale.size:
            raise ValueError(f"noise built for {scale.size} models, called for {M}")
        return gradient_sum_noise(rng, kind, scale, d, m if batch_size is None else min(batch_size, m))

    noise.kind = kind
    noise.scale = scale
    noise.batch_size = batch_size
    return noise
