"""Synthetic unit-ball data shared by the learner tests."""

import numpy as np


def unit_ball_data(n, d, c, seed, sep=2.0):
    """Separable-ish Gaussian classes, bias folded in, rows scaled into the unit ball (max norm exactly 1)."""
    rng = np.random.default_rng(seed)
    means = rng.standard_normal((c, d - 1)) * sep
    y = rng.integers(0, c, n)
    X = means[y] + rng.standard_normal((n, d - 1))
    X /= np.linalg.norm(X, axis=1).max()
    X = np.hstack([X, np.ones((n, 1))]) / np.sqrt(2.0)
    return X, y
