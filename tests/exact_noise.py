"""Noise with exactly known moments, for the anchor-check tests on synthetic result frames: each group's mean and
standard deviation are exact, so a test knows on which side of 2 standard errors an effect lies."""

import numpy as np


def exact_noise(n: int, seed: int) -> np.ndarray:
    """n values with mean exactly 0 and sample std (ddof = 1) exactly 1 (n = 1: [0])."""
    if n == 1:
        return np.zeros(1)
    z = np.random.default_rng(seed).standard_normal(n)
    return (z - z.mean()) / z.std(ddof=1)
