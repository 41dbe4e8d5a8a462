"""The functional mechanism's largest L1 move of the objective coefficients between two box records, by exhaustive
search over the lattice {−1, 0, 1}^d × {0, 1} (d = 8, the audit's): 0.521 Δ, reached by x = (0, …, 0, 1, 1),
x′ = (−1, …, −1), both y = 0 — so "no pair moves them by more than Δ/2" is false, and the noise × 0.5 twin is
broken on that pair (its privacy loss there is 1.04 ε), although the audit's label pair (ε/3) cannot show it."""

from __future__ import annotations

import itertools

import numpy as np

from dpbench.methods.functional_mechanism import fm_logistic_record_coefficients, fm_logistic_sensitivity

D = 8
VALUES = (-1.0, 0.0, 1.0)
PAIRS = list(itertools.product(VALUES, VALUES))   # the 9 joint values (x_j, x′_j) of one coordinate


def _compositions(n: int, k: int):
    """Every way to write n as an ordered sum of k non-negative integers."""
    for cut in itertools.combinations(range(n + k - 1), k - 1):
        parts, prev = [], -1
        for c in cut + (n + k - 1,):
            parts.append(c - prev - 1)
            prev = c
        yield parts


def _largest_move(d: int) -> tuple[float, tuple]:
    """max over lattice pairs of ‖coef(x, y) − coef(x′, y′)‖₁: the L1 distance depends only on how many coordinates
    take each joint value (x_j, x′_j) and on the labels, so one representative per count vector is exhaustive."""
    best, arg = -1.0, None
    for counts in _compositions(d, len(PAIRS)):
        cols = [pv for pv, c in zip(PAIRS, counts) for _ in range(c)]
        x, xp = np.array([a for a, _ in cols]), np.array([b for _, b in cols])
        for y, yp in itertools.product((0.0, 1.0), repeat=2):
            move = float(np.abs(fm_logistic_record_coefficients(x, y) - fm_logistic_record_coefficients(xp, yp)).sum())
            if move > best + 1e-12:
                best, arg = move, (x, y, xp, yp)
    return best, arg


def test_largest_lattice_move_is_0521_delta_and_the_witness_reaches_it():
    delta = fm_logistic_sensitivity(D, "box")          # d²/4 + d = 24
    best, _ = _largest_move(D)
    assert abs(best / delta - 12.5 / 24) < 1e-12, best / delta      # 0.5208 Δ > Δ/2
    x, xp = np.r_[np.zeros(D - 2), 1.0, 1.0], -np.ones(D)
    witness = np.abs(fm_logistic_record_coefficients(x, 0.0) - fm_logistic_record_coefficients(xp, 0.0)).sum()
    assert witness == best
    # the noise x0.5 twin's privacy loss on the witness pair: ε · move / (Δ / 2) = 1.042 ε > ε (broken)
    assert witness / (delta / 2) > 1.04
    # the audit's label pair (x = 𝟙, y = 0 vs 1) moves them by d = Δ/3: within ε for the x0.5 twin
    label = np.abs(fm_logistic_record_coefficients(np.ones(D), 0.0)
                   - fm_logistic_record_coefficients(np.ones(D), 1.0)).sum()
    assert label == D and label / (delta / 2) < 1
