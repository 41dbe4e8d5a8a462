"""Monotone bisection for calibrations: the largest (or smallest) parameter that still satisfies a privacy
condition, rounded to the safe side — the end of the final bracket on which the condition was checked."""

from __future__ import annotations

from collections.abc import Callable


def largest_passing(ok: Callable[[float], bool], lo: float, hi: float, rel_tol: float = 1e-12,
                    max_iter: int = 200) -> float:
    """The largest x in [lo, hi] with ``ok(x)``, for ``ok`` true up to a threshold and false beyond it, given
    ``ok(lo)``: ``hi`` if ``ok(hi)``, else the lower end of a bracket of relative width ≤ ``rel_tol`` (so
    ``ok`` holds at the value returned)."""
    if ok(hi):
        return hi
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        if ok(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo <= rel_tol * hi:
            break
    return lo


def smallest_passing(ok: Callable[[float], bool], lo: float, hi: float, rel_tol: float = 1e-12,
                     max_iter: int = 200) -> float:
    """The smallest x in [lo, hi] with ``ok(x)``, for ``ok`` false below a threshold and true above it, given
    ``ok(hi)``: ``lo`` if ``ok(lo)``, else the upper end of a bracket of relative width ≤ ``rel_tol``."""
    if ok(lo):
        return lo
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
        if hi - lo <= rel_tol * hi:
            break
    return hi
