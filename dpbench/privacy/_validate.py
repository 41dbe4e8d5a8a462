"""Argument validation shared by the privacy layer (private helpers).

Every helper raises ``ValueError`` with a message that names the argument and shows the bad value,
e.g. ``"epsilon must be > 0, got -1"``.
"""

from __future__ import annotations

import math
import numbers


def _is_real(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def positive(name: str, value, *, allow_inf: bool = False) -> float:
    """``value`` as a float, requiring ``value > 0`` (finite unless ``allow_inf``)."""
    if not _is_real(value) or math.isnan(value) or value <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    if math.isinf(value) and not allow_inf:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return float(value)


def nonnegative(name: str, value, *, allow_inf: bool = False) -> float:
    """``value`` as a float, requiring ``value >= 0`` (finite unless ``allow_inf``)."""
    if not _is_real(value) or math.isnan(value) or value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    if math.isinf(value) and not allow_inf:
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    return float(value)


def delta_open(name: str, value, *, reason: str = "") -> float:
    """``value`` in the open interval (0, 1)."""
    if not _is_real(value) or math.isnan(value) or not 0 < value < 1:
        extra = f" ({reason})" if reason else ""
        raise ValueError(f"{name} must be in (0, 1){extra}, got {value!r}")
    return float(value)


def delta_halfopen(name: str, value) -> float:
    """``value`` in the half-open interval [0, 1)."""
    if not _is_real(value) or math.isnan(value) or not 0 <= value < 1:
        raise ValueError(f"{name} must be in [0, 1), got {value!r}")
    return float(value)


def count(name: str, value, *, minimum: int = 1) -> int:
    """``value`` as an int, requiring an integer ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if _is_real(value) and float(value).is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)
