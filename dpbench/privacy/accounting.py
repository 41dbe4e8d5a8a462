"""DP-SGD privacy accounting with Google's ``dp_accounting`` (van der Maaten & Hannun 2020, §3.1 Eq. 4; docs/studies/vdm2020.md erratum 14 and #derived).

The mechanism accounted for is ``steps`` compositions of the Poisson-subsampled Gaussian mechanism
(sampling rate q, noise multiplier σ = noise std / clipping norm), under the add/remove-one neighbouring
relation (dp_accounting's default, and the relation of TF-Privacy's accountant used by vdm2020). Training
that uses shuffled fixed-size batches instead of Poisson sampling is *not* covered exactly by this analysis
(erratum 14); label such runs accordingly.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import warnings
from typing import Sequence

import numpy as np

from . import _validate as V

# dp-accounting logs one WARNING per excluded RDP order when its series for log A_α does not converge at small
# α ("_compute_log_a_frac failed to converge ... Excluding this order"); the remaining orders still give a valid
# bound (a minimum over fewer orders can only be larger), so only these messages are dropped from the logs.
import logging as _logging  # noqa: E402


class _DropExcludedOrder(_logging.Filter):
    def filter(self, record: _logging.LogRecord) -> bool:
        return "Excluding this order" not in record.getMessage()


_logging.getLogger("absl").addFilter(_DropExcludedOrder())

__all__ = ["TF_ORDERS", "classic_rdp_to_dp", "dpsgd_epsilon", "dpsgd_replace_one_epsilon", "DpsgdCalibration",
           "calibrate_dpsgd_noise"]

#: RDP orders of TF-Privacy's ``compute_dp_sgd_privacy`` (van der Maaten & Hannun 2020, §3.1).
TF_ORDERS: list[float] = [1.25, 1.5, 1.75, 2, 2.25, 2.5, 3, 3.5, 4, 4.5] + list(range(5, 64)) + [128, 256, 512]



@functools.lru_cache(maxsize=1)
def _dpa():
    """dp_accounting and its two accountants, imported on first use (the import costs about a second, which
    every Snakemake job would otherwise pay while parsing the Snakefile)."""
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant

    return dp_accounting, pld_privacy_accountant, rdp_privacy_accountant
_CONVERSIONS = {"rdp": ("classic", "improved"), "pld": ("pld",)}


def _check_common(delta, sample_rate, steps, accountant, conversion):
    if isinstance(delta, (int, float, np.number)) and delta == 0:
        raise ValueError("delta must be in (0, 1): DP-SGD needs delta > 0, got 0")
    delta = V.delta_open("delta", delta, reason="DP-SGD needs delta > 0")
    if not V._is_real(sample_rate) or not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate!r}")
    sample_rate = float(sample_rate)
    steps = V.count("steps", steps)
    if accountant not in _CONVERSIONS:
        raise ValueError(f"accountant must be 'rdp' or 'pld', got {accountant!r}")
    if conversion is None:
        conversion = _CONVERSIONS[accountant][0]
    if conversion not in _CONVERSIONS[accountant]:
        raise ValueError(
            f"conversion must be one of {_CONVERSIONS[accountant]} for accountant={accountant!r}, "
            f"got {conversion!r}"
        )
    return delta, sample_rate, steps, conversion


def _event(noise_multiplier: float, sample_rate: float, steps: int):
    dp_accounting = _dpa()[0]
    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(sample_rate, dp_accounting.GaussianDpEvent(noise_multiplier)),
        steps,
    )


def classic_rdp_to_dp(orders: Sequence[float], rdp: Sequence[float], delta: float) -> tuple[float, float]:
    """Classic RDP→(ε, δ) conversion ε = min_α RDP_α − ln δ/(α − 1) (Mironov 2017 Prop. 3; TF-Privacy).

    Returns ``(epsilon, optimal_order)``. Looser than dp_accounting's ``get_epsilon`` (Canonne et al.
    / Asoodeh et al. improvement); used here because vdm2020's code and our derived values (docs/studies/vdm2020.md#derived) use it.
    """
    orders = np.asarray(orders, float)
    rdp = np.asarray(rdp, float)
    if orders.shape != rdp.shape or orders.ndim != 1 or orders.size == 0:
        raise ValueError("orders and rdp must be 1-D arrays of the same non-zero length")
    if np.any(orders <= 1):
        raise ValueError("orders must all be > 1")
    delta = V.delta_open("delta", delta)
    eps = rdp - math.log(delta) / (orders - 1.0)
    i = int(np.nanargmin(eps))
    return max(float(eps[i]), 0.0), float(orders[i])


#: below this σ the accountants' arithmetic underflows (1/σ² overflows a float): ε is then infinite
_SIGMA_FLOOR = 1e-150


@contextlib.contextmanager
def _pld_overflow_is_infinite():
    """Run a PLD computation; if its privacy losses leave the float range (a σ so small that dp_accounting's
    arithmetic overflows: σ = 0.001, q = 0.05 raised OverflowError, σ < 1e-150 ZeroDivisionError), the result is
    ε = ∞ — the trivial upper bound, so never an understatement of the privacy loss. Yields a list that the
    block appends its ε to."""
    result: list[float] = []
    try:
        with warnings.catch_warnings(), np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            yield result
    except (OverflowError, ZeroDivisionError, FloatingPointError):
        result[:] = [math.inf]
    else:
        if not result or math.isnan(result[0]):
            result[:] = [math.inf]


@functools.lru_cache(maxsize=65536)
def _dpsgd_epsilon(noise_multiplier, sample_rate, steps, delta, accountant, conversion, orders):
    if noise_multiplier < _SIGMA_FLOOR:
        return math.inf
    event = _event(noise_multiplier, sample_rate, steps)
    if accountant == "pld":
        return _pld_epsilon("ADD_OR_REMOVE_ONE", noise_multiplier, sample_rate, steps, delta)
    dpa, _, rdp_privacy_accountant = _dpa()
    acc = rdp_privacy_accountant.RdpAccountant(list(orders), dpa.NeighboringRelation.ADD_OR_REMOVE_ONE)
    acc.compose(event)
    if conversion == "improved":
        return float(acc.get_epsilon(delta))
    return classic_rdp_to_dp(acc.orders, acc.rdp, delta)[0]


def dpsgd_epsilon(
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    delta: float,
    accountant: str = "rdp",
    conversion: str | None = None,
    orders: Sequence[float] = TF_ORDERS,
) -> float:
    """ε(δ) of DP-SGD: ``steps`` Poisson-subsampled Gaussian steps (add/remove-one neighbours).

    * ``accountant="rdp"``: dp_accounting's ``RdpAccountant`` at ``orders`` (default TF_ORDERS);
      ``conversion="classic"`` (default) is ε = min_α RDP_α − ln δ/(α−1) computed from the accountant's RDP
      values (van der Maaten & Hannun 2020, §3.1, and its code), ``"improved"`` is dp_accounting's own ``get_epsilon``.
    * ``accountant="pld"``: dp_accounting's ``PLDAccountant`` (default discretisation 1e-4); conversion
      must be None or ``"pld"``.

    ``conversion=None`` means "classic" for RDP and "pld" for PLD. Requires σ > 0, q ∈ (0, 1], steps ≥ 1,
    δ ∈ (0, 1). TF-Privacy example: σ=1.12, q=256/60000, steps=ceil(60·60000/256), δ=1e-5 → ε ≈ 2.92.
    """
    noise_multiplier = V.positive("noise_multiplier", noise_multiplier)
    delta, sample_rate, steps, conversion = _check_common(delta, sample_rate, steps, accountant, conversion)
    orders = tuple(float(o) for o in orders)
    if not orders or min(orders) <= 1:
        raise ValueError(f"orders must be non-empty and all > 1, got {orders!r}")
    return _dpsgd_epsilon(noise_multiplier, sample_rate, steps, delta, accountant, conversion, orders)


#: below this ε the PLD runs at dp_accounting's default discretisation (1e-4, the values every study
#: reports); above it the interval grows with ε (relative precision 1e-4), because the grid of a tiny σ's privacy
#: losses would otherwise need gigabytes (σ = 0.054, q = 0.054, 439 steps: MemoryError after 32 s)
PLD_FINE_EPSILON = 50.0


def _pld_pass(relation, noise_multiplier, sample_rate, steps, delta, interval):
    dpa, pld_privacy_accountant, _ = _dpa()
    with _pld_overflow_is_infinite() as result:
        acc = pld_privacy_accountant.PLDAccountant(getattr(dpa.NeighboringRelation, relation),
                                                   value_discretization_interval=interval)
        acc.compose(_event(noise_multiplier, sample_rate, steps))
        result.append(float(acc.get_epsilon(delta)))
    return result[0]


@functools.lru_cache(maxsize=4096)
def _pld_epsilon(relation, noise_multiplier, sample_rate, steps, delta):
    """The PLD's ε for ``relation`` (``"ADD_OR_REMOVE_ONE"`` or ``"REPLACE_ONE"``): first a coarse pessimistic
    pass (an upper bound, milliseconds), then the fine one — at dp_accounting's default interval (1e-4) where
    ε ≤ :data:`PLD_FINE_EPSILON`, else at 1e-4 × the coarse ε (every pass pessimistic: an upper bound on the
    exact ε). ε = ∞ where σ is below :data:`_SIGMA_FLOOR` or the losses leave the float range."""
    if noise_multiplier < _SIGMA_FLOOR:
        return math.inf
    coarse = _pld_pass(relation, noise_multiplier, sample_rate, steps, delta,
                       max(0.1, 1e-5 / float(noise_multiplier) ** 2))
    if math.isinf(coarse):
        return math.inf
    interval = 1e-4 if coarse <= PLD_FINE_EPSILON else 1e-4 * coarse
    return _pld_pass(relation, noise_multiplier, sample_rate, steps, delta, interval)


def dpsgd_replace_one_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """ε(δ) of DP-SGD (Poisson-subsampled Gaussian steps) for **replace-one** neighbours, by dp_accounting's
    PLD accountant (``NeighboringRelation.REPLACE_ONE``; the RDP accountant has no replace-one Poisson
    analysis). Between the add/remove ε and twice it (group privacy)."""
    noise_multiplier = V.positive("noise_multiplier", noise_multiplier)
    delta, sample_rate, steps, _ = _check_common(delta, sample_rate, steps, "pld", None)
    return _pld_epsilon("REPLACE_ONE", noise_multiplier, sample_rate, steps, delta)


@dataclasses.dataclass(frozen=True)
class DpsgdCalibration:
    """Result of :func:`calibrate_dpsgd_noise`; ``epsilon`` is the target ε (the achieved ε is ≤ it)."""

    noise_multiplier: float
    epsilon: float
    delta: float
    sample_rate: float
    steps: int
    accountant: str
    conversion: str


@functools.lru_cache(maxsize=4096)
def _calibrate(epsilon, delta, sample_rate, steps, accountant, conversion, rtol):
    def eps_of(sigma):
        return _dpsgd_epsilon(sigma, sample_rate, steps, delta, accountant, conversion, tuple(TF_ORDERS))

    sigma = _smallest_sigma(eps_of, epsilon, rtol, (0.5, 1.0), 1e7, 1e-4)
    return DpsgdCalibration(sigma, epsilon, delta, sample_rate, steps, accountant, conversion)


def _smallest_sigma(eps_of, epsilon, rtol, bracket, largest, smallest) -> float:
    """Bisection for the smallest σ with ``eps_of(σ) ≤ epsilon`` (``eps_of`` decreasing): bracket from
    ``bracket`` by doubling up to ``largest`` / halving down to ``smallest``, then halve the interval until it is
    within relative ``rtol``; returns its upper end (the target is always met)."""
    lo, hi = bracket
    while eps_of(hi) > epsilon:  # bracket: eps_of(lo) > target >= eps_of(hi)
        lo, hi = hi, 2.0 * hi
        if hi > largest:
            raise ValueError(f"epsilon={epsilon!r} is unreachable with noise_multiplier <= {largest:g}")
    while eps_of(lo) <= epsilon:
        hi, lo = lo, lo / 2.0
        if lo < smallest:
            raise ValueError(f"epsilon={epsilon!r} is reached even at tiny noise; check the arguments")
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        if eps_of(mid) <= epsilon:
            hi = mid
        else:
            lo = mid
    return hi


def calibrate_dpsgd_replace_one(epsilon: float, delta: float, sample_rate: float, steps: int, *,
                                rtol: float = 1e-4) -> DpsgdCalibration:
    """Smallest σ whose **replace-one** ε(δ) by dp_accounting's PLD accountant
    (:func:`dpsgd_replace_one_epsilon`) is ≤ ``epsilon`` — the tight calibration (``calibration: tight``): it
    analyses the replace-one pair of Poisson-subsampled Gaussian steps directly, where the default calibrates the
    add/remove budget (ε/2, δ/(1 + e^{ε/2})) with RDP and converts by group privacy (two steps of slack). σ within
    relative ``rtol`` above the threshold (the target is always met; the PLD is pessimistic, an upper bound)."""
    epsilon = V.positive("epsilon", epsilon)
    delta, sample_rate, steps, _ = _check_common(delta, sample_rate, steps, "pld", None)
    return _calibrate_replace_one(epsilon, delta, sample_rate, steps, V.positive("rtol", rtol))


@functools.lru_cache(maxsize=1024)
def _calibrate_replace_one(epsilon, delta, sample_rate, steps, rtol):
    def eps_of(sigma):
        return _pld_epsilon("REPLACE_ONE", sigma, sample_rate, steps, delta)

    sigma = _smallest_sigma(eps_of, epsilon, rtol, (0.25, 0.5), 1e6, 1e-3)
    return DpsgdCalibration(sigma, epsilon, delta, sample_rate, steps, "pld", "replace_one")


def calibrate_dpsgd_noise(
    epsilon: float,
    delta: float,
    sample_rate: float,
    steps: int,
    accountant: str = "rdp",
    conversion: str | None = None,
    *,
    rtol: float = 1e-4,
) -> DpsgdCalibration:
    """Smallest DP-SGD noise multiplier σ with :func:`dpsgd_epsilon` ≤ ``epsilon`` (bisection, cached).

    Returns σ within relative ``rtol`` above the exact threshold, so the target is always met. vdm2020's code
    instead searches the grid ``arange(1e-3, 1e3, 1e-3)`` (the derived values, docs/studies/vdm2020.md#derived), i.e. rounds σ up to 1e-3;
    results agree to ~1e-3. Same accountant/conversion options and argument checks as dpsgd_epsilon.
    """
    epsilon = V.positive("epsilon", epsilon)
    delta, sample_rate, steps, conversion = _check_common(delta, sample_rate, steps, accountant, conversion)
    rtol = V.positive("rtol", rtol)
    return _calibrate(epsilon, delta, sample_rate, steps, accountant, conversion, rtol)
