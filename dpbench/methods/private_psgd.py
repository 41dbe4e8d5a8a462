"""The three private PSGD algorithms of wu2016 chapter 3 (Wu 2016, §3.2–3.3; docs/studies/wu2016.md), built on
the engine :mod:`dpbench.learn.psgd`.

* **Bolt-on output perturbation** ("ours", Wu et al. 2017; Wu 2016, §3.2, Algorithms 1 and 2): run NOISELESS
  permutation PSGD with the step sizes the sensitivity theorem needs, then add one noise vector to the output.
* **SCS13** (Song, Chaudhuri & Sarwate 2013; docs/studies/wu2016.md#scs13): noise on every mini-batch gradient.
* **BST14** (Bassily, Smith & Thakurta 2014, "constant epochs" extension; Wu 2016, §3.3, Algorithms 3 and 4):
  Gaussian noise every step, examples sampled WITH replacement, ε₁ from advanced composition + amplification.

Their noise samplers and calibrations live in :mod:`dpbench.privacy`: the output noise of bolt-on
(:func:`~dpbench.privacy.mechanisms.output_noise`), the SCS13 and BST14 calibrations and the per-update noise
(:mod:`dpbench.privacy.noisy_sgd`); this module re-exports ``output_noise``, ``bst14_epsilon1`` and
``bst14_calibration`` under their former names, and wraps the per-update noise as the one-model hooks
:func:`l2_laplace_batch_noise` and :func:`gaussian_batch_noise` of the engine's ``batch_noise``.

Common assumptions (NOT enforced on the data; the privacy guarantees rely on them)
---------------------------------------------------------------------------------
* Rows ``‖x_i‖₂ ≤ 1``; labels ``y_i ∈ {−1, +1}``; margin loss ℓ(w; x, y) = φ(y⟨w, x⟩) with |φ′| ≤ L and
  0 ≤ φ″ ≤ β (``loss.lipschitz``, ``loss.smoothness``), so ‖∇ℓ‖ ≤ L and ℓ is β-smooth (engine docstring).
* Objective (1/n) Σ ℓ + (λ/2)‖w‖² (λ = ``l2``), optionally projected onto ‖w‖ ≤ R (``radius``).
* Neighbouring datasets: same size n, differ by REPLACING one example (Wu 2016, Def. 2.4 and §2.3).

Lipschitz constant used in the sensitivities (docs/studies/wu2016.md#lipschitz-constant)
-----------------------------------------------------------------------------------------
The growth recursion (Wu 2016, Lemma 2.14) only needs a bound on ‖G_t(w′) − G′_t(w′)‖ at the SAME point w′ at
the one update where the two batches differ. The regulariser gradient λw′ is the same in both batches, so that
difference is η_t/b ‖∇ℓ(w′; z_i) − ∇ℓ(w′; z′_i)‖ ≤ 2η_t L/b with L = ``loss.lipschitz`` (= 1 for logistic),
whether or not the iterates are projected. Expansiveness uses β + λ and γ = λ, and projection is
non-expansive. Hence L = ``loss.lipschitz`` is rigorous for the regularised, unconstrained problem too (the
thesis does not say which L it used there; L = 1 is the rigorous value for this sensitivity, and the
L = 1 + λR of the regularised loss on the ball ‖w‖ ≤ R is a valid but looser bound). A different L can be
passed via ``lipschitz=``.
"""

from __future__ import annotations

import math

import numpy as np

from dpbench.learn.psgd import (
    PSGDAggregate,
    StepSchedule,
    _as_labels,
    _as_X,
    get_loss,
    psgd,
    total_updates,
)
from dpbench.privacy import _validate as V
from dpbench.privacy.mechanisms import NOISE_KINDS as _NOISE_KINDS
from dpbench.privacy.mechanisms import output_noise
from dpbench.privacy.noisy_sgd import (bst14_calibration, bst14_calibrator, bst14_epsilon1,
                                       gradient_sum_noise_hook, scs13_calibration)

__all__ = [
    "bolt_on_sensitivity_convex",
    "bolt_on_sensitivity_strongly_convex",
    "output_noise",
    "bolt_on_psgd",
    "scs13_psgd",
    "bst14_epsilon1",
    "bst14_calibration",
    "bst14_psgd",
    "l2_laplace_batch_noise",
    "gaussian_batch_noise",
]


def _check_data(X, y):
    X = _as_X(X)
    if X.shape[0] < 1:
        raise ValueError("X must contain at least one example")
    y = _as_labels(y, X.shape[0])
    return X, y


def _check_rng(rng):
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


# ----------------------------------------------------------------------------------------------------------
# per-update noise hooks of the engine :func:`~dpbench.learn.psgd.psgd` (its ``batch_noise``)


def _one_model(hook, **attributes):
    """A many-model hook ``(rng, M, d, m)`` of :mod:`dpbench.privacy.noisy_sgd` as a one-model hook ``(rng, d, m)``
    (the same draws: M = 1 rows)."""

    def noise(rng: np.random.Generator, dim: int, m: int) -> np.ndarray:
        return hook(rng, 1, dim, m)[0]

    noise.__dict__.update(attributes)
    return noise


def l2_laplace_batch_noise(epsilon: float, batch_size: int | None = None):
    """Hook for song2018 update (3.6) / SCS13: Z_t with density ∝ exp(−(ε/2)‖z‖) on the gradient SUM, then / b.

    The averaged-gradient noise is Z_t / b with ‖Z_t‖ ~ Gamma(d, 2/ε) and uniform direction
    (:func:`~dpbench.privacy.noisy_sgd.gradient_sum_noise`), so E‖Z_t / b‖ = 2d/(ε b). Sensitivity:
    replacing one example changes the sum of ≤ 1-norm gradients by ≤ 2, so each update is ε-DP; with disjoint
    batches (one pass) the whole pass is ε-DP (parallel composition, song2018 Thm 3.3.1). For k passes the
    caller must split the budget (e.g. ε/k per pass, docs/studies/wu2016.md#open-choices item 6).

    The divisor is the actual batch size m of the update if ``batch_size`` is None, else min(batch_size, m):
    a smaller last batch is divided by its own size, so its noise is never too small for ε-DP.

    Returns a callable ``(rng, dim, m) -> ndarray (dim,)``.
    """
    epsilon = V.positive("epsilon", epsilon)
    hook = gradient_sum_noise_hook("l2_laplace", 2.0 / epsilon, batch_size)
    return _one_model(hook, epsilon=epsilon, batch_size=hook.batch_size)


def gaussian_batch_noise(sigma: float, batch_size: int | None = None):
    """Hook adding N(0, σ² I) to the gradient SUM, i.e. N(0, σ² I) / b on the averaged gradient.

    Same divisor convention as :func:`l2_laplace_batch_noise` (actual batch size m, or min(batch_size, m)).
    For the Gaussian SCS13 variant σ = √(2 ln(1.25/δ)) · 2/ε (sensitivity 2 of the sum,
    docs/studies/wu2016.md#scs13); for BST14's "N(0, σ²/b²) on the average" pass its σ directly. To add
    N(0, σ²) to the AVERAGE regardless of the batch size, use ``batch_size=1``.

    Returns a callable ``(rng, dim, m) -> ndarray (dim,)``.
    """
    sigma = V.nonnegative("sigma", sigma)
    hook = gradient_sum_noise_hook("gaussian", sigma, batch_size)
    return _one_model(hook, sigma=sigma, batch_size=hook.batch_size)


# ----------------------------------------------------------------------------------------------------------
# bolt-on output perturbation (wu2016 Alg. 1 and 2)


def bolt_on_sensitivity_convex(k, L, eta, b=1) -> float:
    """L2 sensitivity Δ₂ = 2kLη/b of k-pass PSGD with constant step η (Wu 2016, Alg. 1 line 3, Cor. 3.5;
    ÷b for mini-batch size b, §3.2 "Extensions" and §3.3 "Implemented Algorithms").

    Valid for convex, β-smooth, L-Lipschitz losses with η ≤ 2/β (1-expansive updates, Lemma 2.10), replace-one
    neighbours, consecutive disjoint batches of size EXACTLY b in each pass (any permutation per pass, the same
    permutations on both datasets; Lemma 3.2 non-adaptive randomness). E.g. k=10, L=1, η=0.5, b=50 → 0.2.
    """
    k = V.count("k", k)
    L = V.positive("L", L)
    eta = V.positive("eta", eta)
    b = V.count("b", b)
    return 2.0 * k * L * eta / b


def bolt_on_sensitivity_strongly_convex(L, gamma, m, b=1) -> float:
    """L2 sensitivity Δ₂ = 2L/(γ m b) of PSGD with η_t = min(1/β, 1/(γt)) (Wu 2016, Alg. 2 line 3, Lemma 3.10;
    independent of the number of passes k), ÷b as the thesis does for mini-batches (§3.3 "Implemented
    Algorithms").

    ``m`` is the number of training examples n (Wu 2016, Table 3.1: m = |S|) and ``b`` the mini-batch size.
    Caveat (docs/studies/wu2016.md#mini-batch-sensitivity): Lemma 3.10 gives 2L/(γm) for b = 1. With
    mini-batches and t counting mini-batch updates (the engine's convention) the same proof gives
    2L/(γ·b·⌊m/b⌋) ≈ 2L/(γm), i.e. NO ÷b; the ÷b
    is the thesis' reading, and for b > 1 it is violated by a factor up to b (see :func:`bolt_on_psgd`, which
    exposes both readings through ``sc_sensitivity``).
    """
    L = V.positive("L", L)
    gamma = V.positive("gamma", gamma)
    m = V.count("m", m)
    b = V.count("b", b)
    return 2.0 * L / (gamma * m * b)


def bolt_on_setup(n, loss, passes, batch_size, l2, eta, algorithm, sc_sensitivity, lipschitz) -> dict:
    """Step schedule and L2 sensitivity of bolt-on PSGD (see :func:`bolt_on_psgd` for the arguments): a dict
    with ``algorithm``, ``schedule``, ``sensitivity``, ``eta`` (convex only, else None), ``beta``, ``gamma``."""
    L = lipschitz
    beta = loss.smoothness + l2
    if algorithm is None:
        algorithm = "strongly_convex" if (l2 > 0 and eta is None) else "convex"
    if algorithm == "convex":
        if eta is None:
            eta = 1.0 / math.sqrt(n)
        eta = V.positive("eta", eta)
        if eta > 2.0 / beta:
            raise ValueError(
                f"convex bolt-on (wu2016 Alg. 1) needs eta <= 2/beta = {2.0 / beta!r} "
                f"(beta = smoothness + l2 = {beta!r}) for 1-expansive updates, got eta={eta!r}"
            )
        schedule = StepSchedule.constant(eta)
        sensitivity = bolt_on_sensitivity_convex(passes, L, eta, batch_size)
        gamma = None
    elif algorithm == "strongly_convex":
        if not l2 > 0:
            raise ValueError(
                "strongly convex bolt-on (wu2016 Alg. 2) needs l2 = lambda > 0 (gamma = lambda), got "
                f"l2={l2!r}"
            )
        if eta is not None:
            raise ValueError("strongly convex bolt-on uses eta_t = min(1/beta, 1/(gamma t)); pass eta=None")
        gamma = l2
        schedule = StepSchedule.strongly_convex(gamma, beta)
        if sc_sensitivity == "thesis":
            sensitivity = bolt_on_sensitivity_strongly_convex(L, gamma, n, batch_size)
        elif sc_sensitivity == "rigorous":
            sensitivity = bolt_on_sensitivity_strongly_convex(L, gamma, n // batch_size, 1) / batch_size
        else:
            raise ValueError(f"sc_sensitivity must be 'rigorous' or 'thesis', got {sc_sensitivity!r}")
    else:
        raise ValueError(f"algorithm must be 'convex', 'strongly_convex' or None, got {algorithm!r}")

    return {"algorithm": algorithm, "schedule": schedule, "sensitivity": sensitivity,
            "eta": eta if algorithm == "convex" else None, "beta": beta, "gamma": gamma}


def bolt_on_psgd(
    X,
    y,
    loss,
    passes,
    batch_size,
    epsilon,
    delta,
    rng,
    l2=0.0,
    radius=None,
    eta=None,
    noise="auto",
    *,
    algorithm=None,
    sc_sensitivity="rigorous",
    lipschitz=None,
    order="per_pass",
):
    """Bolt-on private PSGD (Wu 2016, §3.2, Alg. 1 PrivateConvexPSGD / Alg. 2 PrivateStronglyConvexPSGD).

    1. w ← noiseless k-pass permutation PSGD (engine :func:`~dpbench.learn.psgd.psgd`, a fresh permutation per
       pass by default, Wu 2016, §3.2 "Extensions"), mini-batches of size exactly b: ``last_batch="drop"`` so
       that the n mod b left-over examples of a pass (different ones each pass) are skipped — every batch then
       has size b, as the ÷b sensitivities require (a smaller batch would need a larger Δ).
    2. Δ₂ from the theorem of the chosen algorithm, then ``w + κ`` with κ from :func:`output_noise`.

    ``algorithm``: ``"convex"`` (Alg. 1: constant step η ≤ 2/β, β = loss.smoothness + λ, Δ = 2kLη/b;
    ``eta=None`` → η = 1/√n, docs/studies/wu2016.md#open-choices item 1), ``"strongly_convex"`` (Alg. 2:
    λ > 0, γ = λ, η_t = min(1/β, 1/(γt)) with t counting mini-batch updates, ``eta`` must be None), or None
    (auto: strongly convex iff λ > 0 and ``eta`` is None).

    ``sc_sensitivity`` (strongly convex only, docs/studies/wu2016.md#mini-batch-sensitivity): ``"rigorous"``
    (default) Δ = 2L/(γ b ⌊n/b⌋), the bound the Lemma 3.10 proof gives when t counts mini-batch updates
    (= 2L/(γn) when b | n; equal to the thesis value for b = 1); ``"thesis"`` Δ = 2L/(γ n b) (Wu 2016, §3.3),
    for reproducing the thesis only: for b > 1 it is NOT a valid bound — identical 1-d examples with one label
    flipped give ‖w − w′‖ = b·Δ_thesis (see the tests), so the released model is then not ε-DP at the stated ε.

    ``lipschitz``: L in Δ, default ``loss.lipschitz`` (see module docstring on why the regulariser does not
    enter). ``delta``: 0 → ε-DP (L2-Laplace); > 0 → (ε, δ)-DP with Gaussian noise (``noise``).

    Returns ``(w_private, info)``; ``info`` has ``algorithm``, ``sensitivity``, ``noise_kind``,
    ``noise_scale`` (Δ/ε for L2-Laplace, σ for Gaussian), ``eta`` (constant η or None), ``schedule``,
    ``lipschitz``, ``beta``, ``gamma``, ``updates``, ``epsilon``, ``delta``. The non-private w is not returned.
    """
    X, y = _check_data(X, y)
    n, d = X.shape
    rng = _check_rng(rng)
    loss = get_loss(loss)
    passes = V.count("passes", passes)
    batch_size = V.count("batch_size", batch_size)
    if batch_size > n:
        raise ValueError(f"batch_size must be <= n = {n}, got {batch_size}")
    epsilon = V.positive("epsilon", epsilon)
    delta = V.delta_halfopen("delta", delta)
    l2 = V.nonnegative("l2", l2)
    if radius is not None:
        radius = V.positive("radius", radius)
    if noise not in _NOISE_KINDS:
        raise ValueError(f"noise must be one of {_NOISE_KINDS}, got {noise!r}")
    if noise in ("gaussian", "analytic_gaussian") and delta == 0:
        raise ValueError(f"noise={noise!r} needs delta > 0")
    L = loss.lipschitz if lipschitz is None else V.positive("lipschitz", lipschitz)
    setup = bolt_on_setup(n, loss, passes, batch_size, l2, eta, algorithm, sc_sensitivity, L)
    algorithm, schedule, sensitivity = setup["algorithm"], setup["schedule"], setup["sensitivity"]
    eta, beta, gamma = setup["eta"], setup["beta"], setup["gamma"]

    w = psgd(X, y, loss, passes, batch_size, schedule, rng, l2=l2, radius=radius, last_batch="drop", order=order)
    z, kind, scale = output_noise(rng, d, sensitivity, epsilon, delta, noise)
    info = {
        "algorithm": algorithm,
        "sensitivity": sensitivity,
        "noise_kind": kind,
        "noise_scale": scale,
        "eta": eta if algorithm == "convex" else None,
        "schedule": schedule,
        "lipschitz": L,
        "beta": beta,
        "gamma": gamma,
        "sc_sensitivity": sc_sensitivity if algorithm == "strongly_convex" else None,
        "updates": total_updates(n, batch_size, passes, "drop"),
        "epsilon": epsilon,
        "delta": delta,
    }
    return w + z, info


# ----------------------------------------------------------------------------------------------------------
# SCS13


def scs13_psgd(
    X,
    y,
    loss,
    passes,
    batch_size,
    epsilon,
    rng,
    l2=0.0,
    radius=None,
    schedule="inv_sqrt",
    *,
    delta=0.0,
    order="per_pass",
):
    """SCS13 noisy mini-batch PSGD (Song, Chaudhuri & Sarwate 2013; Song 2018, §3.3, update
    (3.6); multi-pass budget: docs/studies/wu2016.md#open-choices item 6).

    Update (engine): w_t = Π_R(w_{t−1} − η_t(λ w_{t−1} + (1/b) Σ_{B_t} ∇ℓ + Z_t/b)), t counting updates,
    step ``schedule`` η_t = 1/√t by default (wu2016 Table 3.3). Budget: with k = ``passes`` passes, each pass
    gets ε/k (and δ/k), basic composition over passes; within a pass the batches are disjoint, so each pass is
    (ε/k)-DP by parallel composition (each update is (ε/k)-DP: the gradient SUM has replace-one sensitivity 2L
    with L = 1 for ‖x‖ ≤ 1).

    * δ = 0: Z_t with density ∝ exp(−(ε_pass/2)‖z‖) (:func:`l2_laplace_batch_noise`), ‖Z_t‖ ~
      Gamma(d, 2/ε_pass).
    * δ > 0: Z_t ~ N(0, σ² I), σ = 2√(2 ln(1.25/δ_pass))/ε_pass (classic Gaussian, needs ε_pass < 1).

    The divisor is the actual batch size (a smaller last batch gets proportionally more noise). Assumes
    ``loss.lipschitz == 1`` (sensitivity 2 of the sum) like the paper; a loss with L ≠ 1 raises.

    Returns ``(w, info)``; ``info``: ``epsilon``, ``delta``, ``passes``, ``epsilon_per_pass``,
    ``delta_per_pass``, ``budget_split`` ("basic composition: epsilon/k per pass"), ``noise_kind``,
    ``noise_scale`` (2/ε_pass: Gamma scale of ‖Z_t‖; or σ), ``updates``, ``noise_norms`` (T,) norms of the
    noise vectors actually added to the averaged gradient (one per update).
    """
    X, y = _check_data(X, y)
    rng = _check_rng(rng)
    loss = get_loss(loss)
    batch_size = V.count("batch_size", batch_size)
    epsilon = V.positive("epsilon", epsilon)
    delta = V.delta_halfopen("delta", delta)
    cal = scs13_calibration(epsilon, delta, passes, loss.lipschitz)
    scale = float(cal["noise_scale"][0])
    if delta == 0:
        hook = l2_laplace_batch_noise(float(cal["epsilon_per_pass"][0]))
    else:
        hook = gaussian_batch_noise(scale)
    w, trace = psgd(X, y, loss, passes, batch_size, schedule, rng, l2=l2, radius=radius, batch_noise=hook,
                    return_trace=True, order=order)
    info = {
        "epsilon": epsilon,
        "delta": delta,
        "passes": cal["passes"],
        "epsilon_per_pass": float(cal["epsilon_per_pass"][0]),
        "delta_per_pass": cal["delta_per_pass"],
        "budget_split": cal["budget_split"],
        "noise_kind": cal["noise_kind"],
        "noise_scale": scale,
        "updates": trace["updates"],
        "noise_norms": trace["noise_norm"],
    }
    return w, info


# ----------------------------------------------------------------------------------------------------------
# BST14 (constant epochs)


def bst14_schedule(algorithm, l2, radius, d, sigma, iota, batch_size, lipschitz):
    """``(radius, schedule, G)`` of BST14 (see :func:`bst14_psgd`): convex η_t = 2R/(G√t) with
    G = √(dσ²ι + b²L²) (needs R); strongly convex η_t = 1/(γt), γ = λ, R defaulting to 1/λ (G None)."""
    G = None
    if algorithm == "convex":
        if radius is None:
            raise ValueError("convex BST14 (wu2016 Alg. 3) needs the radius R of the constraint set")
        radius = V.positive("radius", radius)
        G = math.sqrt(d * sigma * sigma * iota + batch_size**2 * lipschitz**2)
        return radius, StepSchedule.inv_sqrt(2.0 * radius / G), G
    if algorithm == "strongly_convex":
        if not l2 > 0:
            raise ValueError(f"strongly convex BST14 (wu2016 Alg. 4) needs l2 = lambda > 0, got l2={l2!r}")
        radius = 1.0 / l2 if radius is None else V.positive("radius", radius)
        return radius, StepSchedule.inv_gamma_t(l2), G
    raise ValueError(f"algorithm must be 'convex', 'strongly_convex' or None, got {algorithm!r}")


def bst14_psgd(
    X,
    y,
    loss,
    epsilon,
    delta,
    rng,
    batch_size=1,
    radius=None,
    l2=0.0,
    steps=None,
    *,
    passes=1,
    algorithm=None,
    iota=4.0,
    calibration="source",
):
    """BST14 with constant epochs (Wu 2016, §3.3, Alg. 3 ConvexBST14ConstNpass / Alg. 4
    StronglyConvexBST14ConstNpass), with the mini-batch extension of docs/studies/wu2016.md#bst14.

    T = ``steps`` (default ⌈k n / b⌉, k = ``passes``; the thesis' T = km for b = 1). Calibration from
    :func:`bst14_calibration`. Starting at w = 0, each step draws b indices uniformly WITH replacement
    (``rng.integers``), then the engine's :meth:`PSGDAggregate.transition` does

        w ← Π_R(w − η_t(λw + (1/b) Σ_B ∇ℓ + z/b)),   z ~ N(0, σ² ι I_d)   (i.e. N(0, σ²ι/b² I) on the average)

    * ``"convex"`` (Alg. 3): η_t = 2R/(G√t), G = √(d σ² ι + b² L²) (printed G = √(dσ² + b²L²) with ι = 1; b
      read as the mini-batch size, docs/studies/wu2016.md#open-choices item 7). Needs ``radius`` R (not given
      in the thesis for Test 2).
    * ``"strongly_convex"`` (Alg. 4): λ > 0, η_t = 1/(γt), γ = λ ("ν t" read as γt); ``radius`` defaults
      to 1/λ (not stated in the thesis; docs/studies/wu2016.md#bst14).
    * ``algorithm=None``: strongly convex iff λ > 0.

    ``iota`` ι multiplies the noise VARIANCE. Under replace-one neighbours the per-step sensitivity of the
    gradient sum is 2L = 2, so the Gaussian mechanism with σ needs ι = 4: that is the DEFAULT (a known slip of
    the source fixed, not copied). ``iota=1`` reproduces the thesis as printed (ι = 1 for logistic regression,
    Wu 2016, Alg. 3 line 11) and under-noises by a factor 2 in standard deviation.

    ``calibration="tight"``: σ from :func:`~dpbench.privacy.noisy_sgd.bst14_tight_calibration` (the PLD of the
    mixture-of-Gaussians updates, replace-one through the record-free run; docs/studies/wu2016.md#bst14-tight),
    about a tenth of the thesis' σ at the study's sizes; needs ι = 4.

    Randomness order per step: the b indices, then the noise vector. Returns ``(w_T, info)`` with
    ``epsilon1``, ``epsilon2``, ``delta1``, ``sigma``, ``steps``, ``algorithm``, ``radius``, ``G`` (convex),
    ``iota``.
    """
    X, y = _check_data(X, y)
    n, d = X.shape
    rng = _check_rng(rng)
    loss = get_loss(loss)
    epsilon = V.positive("epsilon", epsilon)
    delta = V.delta_open("delta", delta, reason="BST14 is (epsilon, delta)-DP")
    batch_size = V.count("batch_size", batch_size)
    passes = V.count("passes", passes)
    l2 = V.nonnegative("l2", l2)
    iota = V.positive("iota", iota)
    if steps is None:
        steps = -(-passes * n // batch_size)
    steps = V.count("steps", steps)
    if algorithm is None:
        algorithm = "strongly_convex" if l2 > 0 else "convex"
    cal = bst14_calibrator(calibration, iota)(epsilon, delta, n, steps, batch_size)
    sigma = cal["sigma"]
    radius, schedule, G = bst14_schedule(algorithm, l2, radius, d, sigma, iota, batch_size, loss.lipschitz)
    hook = gaussian_batch_noise(sigma * math.sqrt(iota), batch_size)
    agg = PSGDAggregate(loss, schedule, rng=rng, l2=l2, radius=radius, batch_noise=hook)
    state = agg.initialize(d)
    for _ in range(steps):
        idx = rng.integers(0, n, size=batch_size)
        state = agg._step(state, X[idx], y[idx])   # X, y validated above
    w = agg.terminate(state)
    info = dict(cal)
    info.update({"steps": steps, "algorithm": algorithm, "radius": radius, "G": G, "iota": iota,
                 "schedule": schedule, "epsilon": epsilon, "delta": delta, "batch_size": batch_size})
    return w, info
