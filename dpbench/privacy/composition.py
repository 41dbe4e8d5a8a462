"""Composition theorems and the per-query budget rules of vdm2020's private-prediction methods.

References are to van der Maaten & Hannun (2020), "The Trade-Offs of Private Prediction" ("vdm2020"). ``k`` / ``B``
is the number of composed mechanisms (queries). All guarantees are for adaptive composition of mechanisms
that are each (ε*, δ*)-DP with respect to the same neighbouring relation.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from . import _validate as V
from .mechanisms import _analytic_gaussian_alpha_array, analytic_gaussian_alpha
from .search import largest_passing, smallest_passing

__all__ = [
    "basic_composition",
    "advanced_composition",
    "advanced_composition_step_epsilon",
    "GaussianQueryMultiplier",
    "per_query_gaussian_multiplier",
    "per_query_pure_epsilon",
    "pure_composition_epsilon",
    "optimal_pure_composition_delta",
    "optimal_pure_composition_epsilon",
    "optimal_pure_step_epsilon",
    "vote_exponential_mechanism_beta",
    "vote_exponential_mechanism_epsilon",
]


def basic_composition(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """Basic (sequential) composition: k mechanisms, each (ε, δ)-DP, are (kε, kδ)-DP jointly."""
    epsilon = V.nonnegative("epsilon", epsilon)
    delta = V.delta_halfopen("delta", delta)
    k = V.count("k", k)
    return k * epsilon, k * delta


def advanced_composition(
    epsilon_step: float, delta_step: float, k: int, delta_prime: float
) -> tuple[float, float]:
    """Advanced composition (Dwork–Rothblum–Vadhan; vdm2020 Eq. 48–49).

    k-fold adaptive composition of (ε*, δ*)-DP mechanisms is (ε, δ)-DP for every δ′ ∈ (0, 1) with
    ε = √(2k ln(1/δ′))·ε* + k·ε*(e^{ε*} − 1)/2 and δ = δ′ + k·δ*.
    """
    epsilon_step = V.nonnegative("epsilon_step", epsilon_step)
    delta_step = V.delta_halfopen("delta_step", delta_step)
    k = V.count("k", k)
    delta_prime = V.delta_open("delta_prime", delta_prime)
    eps = math.sqrt(2.0 * k * math.log(1.0 / delta_prime)) * epsilon_step + k * epsilon_step * math.expm1(
        epsilon_step
    ) / 2.0
    return eps, delta_prime + k * delta_step


def _step_epsilon(epsilon, k, delta_prime):
    """Eq. 51 (vectorised): √(2/k)(√(L+ε) − √L), L = ln(1/δ′), written as √(2/k)·ε/(√(L+ε) + √L)."""
    log_term = np.log(1.0 / np.asarray(delta_prime, float))
    return math.sqrt(2.0 / k) * epsilon / (np.sqrt(log_term + epsilon) + np.sqrt(log_term))


def advanced_composition_step_epsilon(epsilon: float, k: int, delta_prime: float) -> float:
    """Per-step ε* for a total ε under advanced composition (vdm2020 Eq. 51; Eq. 61 with δ′ = δ).

    ε* = √(2/k)·(√(ln(1/δ′) + ε) − √(ln(1/δ′))) solves √(2k ln(1/δ′))ε* + k(ε*)²/2 = ε (Eq. 50), i.e. Eq. 48
    with e^{ε*} − 1 replaced by ε*. Read through Eq. 48 this would exceed ε by ≈ k(ε*)³/4, but for *pure*
    ε*-DP steps the rule is exact by zero-concentrated DP (Bun & Steinke 2016, Prop. 3.3 and 1.3): each step is
    (ε*²/2)-zCDP, k steps are (kε*²/2)-zCDP, which is (kε*²/2 + √(2k ln(1/δ′))·ε*, δ′)-DP = (ε, δ′)-DP.
    """
    epsilon = V.positive("epsilon", epsilon)
    k = V.count("k", k)
    delta_prime = V.delta_open("delta_prime", delta_prime)
    return float(_step_epsilon(epsilon, k, delta_prime))


@dataclasses.dataclass(frozen=True)
class GaussianQueryMultiplier:
    """Per-query Gaussian noise multiplier σ/Δ₂ for B queries under a total (ε, δ) budget (vdm2020 Alg. 7).

    ``multiplier`` = min(``multiplier_standard``, ``multiplier_advanced``); ``composition`` says which one
    ("standard" on ties); ``delta_prime`` is the δ′ used (nan when standard composition is used);
    ``delta_prime_advanced`` is the best δ′ of the advanced search even when it was not used.
    """

    multiplier: float
    composition: str
    delta_prime: float
    multiplier_standard: float
    multiplier_advanced: float
    delta_prime_advanced: float


@functools.lru_cache(maxsize=1024)
def _per_query_gaussian_multiplier(epsilon: float, delta: float, n_queries: int, n_grid: int):
    b = n_queries
    eps_std = epsilon / b
    standard = analytic_gaussian_alpha(eps_std, delta / b) / math.sqrt(2.0 * eps_std)

    # the code's torch.linspace(0, δ, 1000)[1:-1]: n_grid interior points of [0, δ]
    grid = np.linspace(0.0, delta, n_grid + 2)[1:-1]
    eps_step = _step_epsilon(epsilon, b, grid)
    alpha = _analytic_gaussian_alpha_array(eps_step, (delta - grid) / b)
    mult = alpha / np.sqrt(2.0 * eps_step)
    i = int(np.argmin(mult))
    advanced, dp_adv = float(mult[i]), float(grid[i])
    if advanced < standard:
        return GaussianQueryMultiplier(advanced, "advanced", dp_adv, standard, advanced, dp_adv)
    return GaussianQueryMultiplier(standard, "standard", math.nan, standard, advanced, dp_adv)


def per_query_gaussian_multiplier(
    epsilon: float, delta: float, n_queries: int, n_grid: int = 998
) -> GaussianQueryMultiplier:
    """Per-query σ/Δ₂ for B = ``n_queries`` Gaussian queries with total (ε, δ)-DP (vdm2020 Alg. 7, Thm 6).

    * standard: analytic Gaussian (Alg. 2) at (ε/B, δ/B), basic composition;
    * advanced: min over δ′ ∈ ``numpy.linspace(0, δ, n_grid + 2)[1:-1]`` (998 points, as the reference
      code; erratum 6) of the analytic Gaussian at (ε*(δ′) from Eq. 51, (δ − δ′)/B), advanced composition;
    * the smaller multiplier is used ("standard" on ties). Multiply by Δ₂ = 2K/(Nλ) to get σ.

    Requires ε > 0, δ ∈ (0, 1) (the Gaussian mechanism needs δ > 0), B ≥ 1. Cached per scalar arguments; the
    998-point search is vectorised (a few ms per B).
    """
    epsilon = V.positive("epsilon", epsilon)
    delta = V.delta_open("delta", delta, reason="Gaussian noise needs delta > 0")
    n_queries = V.count("n_queries", n_queries)
    n_grid = V.count("n_grid", n_grid)
    return _per_query_gaussian_multiplier(epsilon, delta, n_queries, n_grid)


def per_query_pure_epsilon(epsilon: float, delta: float, n_queries: int) -> tuple[float, str]:
    """Per-query ε (the exponential-mechanism β) of subsample-and-aggregate (van der Maaten & Hannun 2020, §3.2 and App. C.2, Alg. 8, Eq. 61).

    δ = 0: β = ε/B ("standard", Thm 7). δ > 0: β = max(ε/B, √(2/B)(√(ln(1/δ)+ε) − √(ln(1/δ)))), the second
    being advanced composition with δ′ = δ (Thm 8); returns ("advanced") only if it is strictly larger.
    Returns ``(beta, composition)``. Note that vdm2020 applies this β to vote counts (sensitivity 1) and its
    proof ignores the normaliser: the standard exponential-mechanism guarantee is 2× larger (erratum 9).
    """
    epsilon = V.positive("epsilon", epsilon)
    delta = V.delta_halfopen("delta", delta)
    n_queries = V.count("n_queries", n_queries)
    standard = epsilon / n_queries
    if delta == 0:
        return standard, "standard"
    advanced = float(_step_epsilon(epsilon, n_queries, delta))
    if advanced > standard:
        return advanced, "advanced"
    return standard, "standard"


def pure_composition_epsilon(epsilon_step, k: int, delta: float) -> float:
    """Total ε of k adaptively composed pure ε*-DP mechanisms at failure probability δ: kε* for δ = 0, else
    min(kε*, k(ε*)²/2 + √(2k ln(1/δ))·ε*) (the zCDP bound of :func:`advanced_composition_step_epsilon`)."""
    epsilon_step = V.nonnegative("epsilon_step", epsilon_step)
    k = V.count("k", k)
    delta = V.delta_halfopen("delta", delta)
    basic = k * epsilon_step
    if delta == 0:
        return basic
    return min(basic, k * epsilon_step ** 2 / 2 + math.sqrt(2 * k * math.log(1 / delta)) * epsilon_step)


def optimal_pure_composition_delta(epsilon_step: float, k: int, epsilon: float) -> float:
    """The exact δ(ε) of k adaptively composed ε*-DP mechanisms — the optimal composition theorem (Kairouz, Oh &
    Viswanath 2015, Thm 3.3): every ε*-DP mechanism is a post-processing of randomised response with
    p = e^{ε*}/(1 + e^{ε*}), so k of them are dominated by k randomised responses, whose privacy loss is
    ε*(2J − k) with J ~ Binomial(k, p) on one dataset. Hence
    δ(ε) = Σ_j P(J = j)·[1 − e^{ε − ε*(2j − k)}]₊ (the hockey-stick divergence), exactly."""
    from scipy.special import expit
    from scipy.stats import binom

    epsilon_step = V.nonnegative("epsilon_step", epsilon_step)
    k = V.count("k", k)
    epsilon = V.nonnegative("epsilon", epsilon)
    j = np.arange(k + 1)
    loss = epsilon_step * (2 * j - k)
    on = loss > epsilon
    if not on.any():
        return 0.0
    logp = binom.logpmf(j[on], k, float(expit(epsilon_step)))
    return float(max(0.0, np.sum(np.exp(logp) - np.exp(logp + epsilon - loss[on]))))


@functools.lru_cache(maxsize=1024)
def optimal_pure_composition_epsilon(epsilon_step: float, k: int, delta: float) -> float:
    """The least ε with :func:`optimal_pure_composition_delta` ≤ δ (bisection to 1e-12 relative, rounded up):
    the exact total ε of k composed ε*-DP mechanisms at δ; kε* at δ = 0."""
    epsilon_step = V.nonnegative("epsilon_step", epsilon_step)
    k = V.count("k", k)
    delta = V.delta_halfopen("delta", delta)
    hi = k * epsilon_step
    if delta == 0 or hi == 0:
        return hi
    return smallest_passing(lambda e: optimal_pure_composition_delta(epsilon_step, k, e) <= delta, 0.0, hi)


@functools.lru_cache(maxsize=1024)
def optimal_pure_step_epsilon(epsilon: float, k: int, delta: float) -> float:
    """The largest per-mechanism ε* whose k-fold composition is (ε, δ)-DP by the optimal composition theorem
    (:func:`optimal_pure_composition_epsilon` ≤ ε; bisection, rounded down): ε/k at δ = 0, larger for δ > 0 —
    never below ε/k nor below the advanced-composition step (both are valid, so the optimum is at least each)."""
    epsilon = V.positive("epsilon", epsilon)
    k = V.count("k", k)
    delta = V.delta_halfopen("delta", delta)
    if delta == 0:
        return epsilon / k
    return largest_passing(lambda s: optimal_pure_composition_epsilon(s, k, delta) <= epsilon, epsilon / k, epsilon)


VOTE_BETA_RULES = ("standard", "paper")


def vote_exponential_mechanism_beta(epsilon: float, delta: float, n_queries: int, rule: str = "standard"
                                    ) -> tuple[float, str]:
    """Inverse temperature β of subsample-and-aggregate's exponential mechanism on vote counts, for B =
    ``n_queries`` queries with total (ε, δ) (van der Maaten & Hannun 2020, App. C.2, Alg. 8). Returns ``(beta, composition)``.

    Replacing (or adding/removing) one training record changes one teacher's vote from class a to class b:
    two counts move by 1 in opposite directions, so sampling ∝ exp(β·count) is **2β**-DP per query (McSherry
    & Talwar 2007; the ratio e^{2β} is approached when class a dominates the normaliser).

    * ``"standard"`` (the default, correct): per-query ε* from :func:`per_query_pure_epsilon` (ε/B, or the
      Eq. 61 rule for δ > 0), then β = ε*/2.
    * ``"paper"``: β = ε* as in vdm2020 Thm 7 / Eq. 61, whose proof omits the normaliser. The B queries are
      then (2ε, δ)-DP for δ = 0 (about 2ε for δ > 0 by the same composition bounds): see :func:`vote_exponential_mechanism_epsilon`.
    """
    if rule not in VOTE_BETA_RULES:
        raise ValueError(f"beta_rule must be one of {VOTE_BETA_RULES}, got {rule!r}")
    step, comp = per_query_pure_epsilon(epsilon, delta, n_queries)
    return (step / 2.0 if rule == "standard" else step), comp


def vote_exponential_mechanism_epsilon(beta: float, delta: float, n_queries: int) -> float:
    """The true total ε of B = ``n_queries`` exponential-mechanism queries with inverse temperature β on
    vote counts (each 2β-DP, see :func:`vote_exponential_mechanism_beta`) at failure probability δ."""
    beta = V.positive("beta", beta)
    return pure_composition_epsilon(2.0 * beta, n_queries, delta)
