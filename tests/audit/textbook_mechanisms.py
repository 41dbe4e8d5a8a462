"""Textbook mechanisms written the way a researcher would, outside dpbench, each with its correct version and a
classic implementation bug: the user-mechanism audit (dpbench.audit.user) must pass the correct ones and catch
the bugs. Records: an (n, d) array; every release draws from the ``rng`` it is given.

| name | mechanism | bug |
|---|---|---|
| laplace_sum | Laplace sum of records in [0, 1], scale 1/ε | scale 1/(2ε): sensitivity halved |
| clipped_mean | mean of records clipped to [0, 1], Laplace scale 1/(nε) | clip applied after averaging |
| gaussian_sum | Gaussian sum, σ = √(2 ln(1.25/δ))/ε | σ = 1/ε: δ ignored |
| fixed_seed | Laplace count | noise from a fixed seed: the same noise in every release |
| randomized_response | one bit kept with probability e^ε/(1+e^ε) | e^{2ε}/(1+e^{2ε}) |
| noisy_max | index of the largest category count + Laplace(2/ε) | Laplace(1/(2ε)) |
| exponential | exponential mechanism on counts, weights exp(ε u/2) | exp(ε u): sensitivity not doubled |
| data_scaled | Laplace sum with scale 1/ε | scale (max − min of the data)/ε: a data-dependent scale |
"""

from __future__ import annotations

import math

import numpy as np

K = 4   # categories of the categorical mechanisms (records are integers 0..K-1)


def laplace_sum(D, rng, epsilon=1.0):
    return float(D.sum() + rng.laplace(0.0, 1.0 / epsilon))


def laplace_sum_bug(D, rng, epsilon=1.0):
    return float(D.sum() + rng.laplace(0.0, 1.0 / (2 * epsilon)))


def clipped_mean(D, rng, epsilon=1.0):
    n = D.shape[0]
    return float(np.clip(D, 0.0, 1.0).mean() + rng.laplace(0.0, 1.0 / (n * epsilon)))


def clipped_mean_bug(D, rng, epsilon=1.0):
    n = D.shape[0]
    return float(np.clip(D.mean(), 0.0, 1.0) + rng.laplace(0.0, 1.0 / (n * epsilon)))


def gaussian_sum(D, rng, epsilon=1.0, delta=1e-5):
    return float(D.sum() + rng.normal(0.0, math.sqrt(2 * math.log(1.25 / delta)) / epsilon))


def gaussian_sum_bug(D, rng, epsilon=1.0, delta=1e-5):
    return float(D.sum() + rng.normal(0.0, 1.0 / epsilon))


def fixed_seed(D, rng, epsilon=1.0):
    return float(D.sum() + rng.laplace(0.0, 1.0 / epsilon))


def fixed_seed_bug(D, rng, epsilon=1.0):
    return float(D.sum() + np.random.default_rng(12345).laplace(0.0, 1.0 / epsilon))


def randomized_response(D, rng, epsilon=1.0):
    """The last record's bit (records in {0, 1}), kept with probability e^ε/(1+e^ε)."""
    bit = int(D[-1, 0])
    keep = math.exp(epsilon) / (1 + math.exp(epsilon))
    return bit if rng.random() < keep else 1 - bit


def randomized_response_bug(D, rng, epsilon=1.0):
    bit = int(D[-1, 0])
    keep = math.exp(2 * epsilon) / (1 + math.exp(2 * epsilon))
    return bit if rng.random() < keep else 1 - bit


def _counts(D):
    return np.bincount(D[:, 0].astype(int), minlength=K).astype(float)


def noisy_max(D, rng, epsilon=1.0):
    return int(np.argmax(_counts(D) + rng.laplace(0.0, 2.0 / epsilon, K)))


def noisy_max_bug(D, rng, epsilon=1.0):
    return int(np.argmax(_counts(D) + rng.laplace(0.0, 1.0 / (2 * epsilon), K)))


def exponential(D, rng, epsilon=1.0):
    w = np.exp(epsilon * (_counts(D) - _counts(D).max()) / 2)   # utility = count, sensitivity 1
    return int(rng.choice(K, p=w / w.sum()))


def exponential_bug(D, rng, epsilon=1.0):
    w = np.exp(epsilon * (_counts(D) - _counts(D).max()))
    return int(rng.choice(K, p=w / w.sum()))


def data_scaled(D, rng, epsilon=1.0):
    return float(D.sum() + rng.laplace(0.0, 1.0 / epsilon))


def data_scaled_bug(D, rng, epsilon=1.0):
    spread = max(float(D.max() - D.min()), 1e-3)
    return float(D.sum() + rng.laplace(0.0, spread / epsilon))


# name -> (correct, buggy, domain keyword arguments, δ)
MECHANISMS = {
    "laplace_sum": (laplace_sum, laplace_sum_bug, {}, 0.0),
    "clipped_mean": (clipped_mean, clipped_mean_bug, {"clips": True}, 0.0),
    "gaussian_sum": (gaussian_sum, gaussian_sum_bug, {}, 1e-5),
    "fixed_seed": (fixed_seed, fixed_seed_bug, {}, 0.0),
    "randomized_response": (randomized_response, randomized_response_bug, {"integer": True}, 0.0),
    "noisy_max": (noisy_max, noisy_max_bug, {"integer": True, "lo": 0, "hi": K - 1}, 0.0),
    "exponential": (exponential, exponential_bug, {"integer": True, "lo": 0, "hi": K - 1}, 0.0),
    "data_scaled": (data_scaled, data_scaled_bug, {}, 0.0),
}
