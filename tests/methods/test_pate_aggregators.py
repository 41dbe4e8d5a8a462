"""PATE aggregators (dpbench.methods.pate; Song 2018, §5.2-5.3, Algorithms 3-4): the released label on
neighbouring vote vectors (one teacher changes its vote) — empirical output frequencies obey the stated
guarantee — plus the mechanics (⊥, accounting on answered queries only, reinforcement)."""

import math

import numpy as np
import pytest

from dpbench.methods import pate as A
from dpbench.privacy import pate as P

N = 100_000
ORD = np.array([2.0, 4.0, 8.0, 16.0, 32.0])


def _freq(labels, m):
    return np.bincount(labels + 1, minlength=m + 1) / len(labels)      # index 0 = ⊥


def _check(p, q, eps, delta):
    tol = 5 * np.sqrt(np.maximum(p, q) / N) + 1e-4
    assert np.all(p <= math.exp(eps) * q + delta + tol), (p, q, eps)
    assert np.all(q <= math.exp(eps) * p + delta + tol), (p, q, eps)


D = np.array([7, 4, 1])
NEIGHBOURS = [np.array(w) for w in ([6, 5, 1], [6, 4, 2], [8, 3, 1], [7, 3, 2], [8, 4, 0], [7, 5, 0])]


@pytest.mark.parametrize("kind", ["lnmax", "gnmax", "confident", "interactive"])
def test_neighbour_label_distributions(kind):
    rng_seed = {"lnmax": 1, "gnmax": 2, "confident": 3, "interactive": 4}[kind]
    proba = np.array([0.2, 0.5, 0.3])

    def run(v, seed):
        V = np.tile(v, (N, 1))
        rng = np.random.default_rng(seed)
        if kind == "lnmax":
            return A.lnmax(V[:2], 1.0, rng, ORD), A.lnmax(V, 1.0, rng, ORD).labels
        if kind == "gnmax":
            return A.gnmax(V[:2], 2.0, rng, ORD), A.gnmax(V, 2.0, rng, ORD).labels
        if kind == "confident":
            return (A.confident_gnmax(V[:2], 6.0, 2.0, 2.0, rng, ORD),
                    A.confident_gnmax(V, 6.0, 2.0, 2.0, rng, ORD).labels)
        P_ = np.tile(proba, (N, 1))
        return (A.interactive_gnmax(V[:2], P_[:2], 2.0, 2.0, 2.0, 0.45, rng, ORD),
                A.interactive_gnmax(V, P_, 2.0, 2.0, 2.0, 0.45, rng, ORD).labels)

    rec, lab = run(D, rng_seed)
    p = _freq(lab, 3)
    delta = 1e-3
    for i, w in enumerate(NEIGHBOURS):
        _, lab2 = run(w, 100 + i)
        q = _freq(lab2, 3)
        if kind == "lnmax":
            eps = 2.0 / 1.0                              # Lap(b) noisy max: 2/b-DP (pure)
            _check(p, q, eps, 0.0)
        else:                                            # the worst-case (data-independent) RDP of one query
            ind = P.rdp_gaussian_independent(2.0, ORD)
            if kind != "gnmax":
                ind = ind + P.rdp_threshold_independent(2.0, ORD)
            eps = float(P.eps_from_rdp(ind, delta, ORD)[0])
            _check(p, q, eps, delta)
    assert np.all(rec.rdp <= rec.rdp_independent + 1e-12)


def test_confident_accounting_and_bottom():
    rng = np.random.default_rng(0)
    votes = np.array([[250, 0, 0], [90, 80, 80], [200, 30, 20]] * 50)
    r = A.confident_gnmax(votes, 150.0, 20.0, 10.0, rng, ORD)
    assert np.all(r.labels[~r.answered] == -1) and np.all(r.labels[r.answered] >= 0)
    assert r.answered[::3].all() and not r.answered[1::3].any()
    gn = P.rdp_gaussian(P.logq_gnmax(votes, 10.0), 10.0, ORD)
    np.testing.assert_allclose(r.rdp, r.rdp_threshold + r.answered[:, None] * gn)
    assert np.all(r.rdp <= r.rdp_independent + 1e-12)


def test_interactive_reinforces_confident_student():
    rng = np.random.default_rng(0)
    votes = np.array([[100, 0], [0, 100]] * 10)
    proba = np.array([[0.99, 0.01], [0.99, 0.01]] * 10)
    r = A.interactive_gnmax(votes, proba, 50.0, 5.0, 5.0, 0.9, rng, ORD)
    # student agrees on even queries (difference max ≈ 1 < T: reinforced), disagrees on odd ones (teachers answer)
    assert r.reinforced[::2].all() and not r.answered[::2].any() and np.all(r.labels[::2] == 0)
    assert r.answered[1::2].all() and np.all(r.labels[1::2] == 1)
    np.testing.assert_allclose(r.rdp[::2], r.rdp_threshold[::2])


def test_gnmax_label_is_argmax_with_small_noise():
    votes = np.random.default_rng(3).multinomial(100, [0.5, 0.3, 0.2], size=50)
    r = A.gnmax(votes, 1e-6, np.random.default_rng(0), ORD)
    top = np.argmax(votes, axis=1)
    unique = (np.sort(votes, axis=1)[:, -1] > np.sort(votes, axis=1)[:, -2])
    assert np.array_equal(r.labels[unique], top[unique])
