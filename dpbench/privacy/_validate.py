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


# ------------------------------------------------------------------------------------------------ arrays
# Entry-point checks for the learners and methods: one pass over the data at most (``np.isfinite(X).all()``,
# row norms), never inside an inner loop; float64 arrays are not copied.


def finite_scalar(name: str, value) -> float:
    """``value`` as a finite float (any sign)."""
    if not _is_real(value) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def feature_matrix(name: str, X, *, allow_empty: bool = False):
    """``X`` as a 2-D float64 array (no copy if it already is one) with at least one row (unless
    ``allow_empty``) and only finite entries."""
    import numpy as np

    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n, D), got shape {X.shape}")
    if not allow_empty and (X.shape[0] == 0 or X.shape[1] == 0):
        raise ValueError(f"{name} must have at least one row and one column, got shape {X.shape}")
    step = max(1, (1 << 22) // max(1, X.shape[1]))  # chunks of ~4M entries: no n×D temporary for a large X
    if not all(np.isfinite(X[a : a + step]).all() for a in range(0, X.shape[0], step)):
        raise ValueError(f"{name} must hold only finite values (found NaN or infinity)")
    return X


def label_vector(name: str, y, n: int, n_classes: int | None = None):
    """``y`` as an integer vector of length ``n`` (labels in ``0..n_classes-1`` when ``n_classes`` given)."""
    import numpy as np

    y = np.asarray(y)
    if y.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) to match X, got {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        if y.dtype.kind not in "fb" or not np.isfinite(y).all() or not np.all(np.equal(np.mod(y, 1), 0)):
            raise ValueError(f"{name} must hold integer class labels")
    y = y.astype(np.intp, copy=False)
    if n_classes is not None and n and (y.min() < 0 or y.max() >= n_classes):
        raise ValueError(f"{name}: labels must lie in [0, {n_classes}), got [{y.min()}, {y.max()}]")
    return y


def n_classes(name: str, value) -> int:
    """A number of classes: an integer >= 2."""
    return count(name, value, minimum=2)


def unit_ball_rows(name: str, X, *, tol: float = 1e-9) -> None:
    """Require every row of ``X`` to have Euclidean norm <= 1 (+ ``tol``), as sensitivity bounds assume."""
    import numpy as np

    X = np.asarray(X)
    worst = 0.0
    for a in range(0, X.shape[0], 65536):  # chunked: no full-size temporary for a large memory-mapped X
        block = np.asarray(X[a : a + 65536], dtype=np.float64)
        if block.size:
            worst = max(worst, float(np.einsum("ij,ij->i", block, block).max()))
    if worst > (1.0 + tol) ** 2:
        raise ValueError(f"every row of {name} needs ‖x‖ ≤ 1 (the privacy bound assumes it); "
                         f"max row norm {np.sqrt(worst):.6g}")
