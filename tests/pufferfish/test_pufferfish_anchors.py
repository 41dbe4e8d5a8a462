"""Chapter-7 anchors of song2018 (Song 2018, §7.4.3 running example and Markov-chain parameters; §7.3.1 flu
example)."""

import numpy as np
import pytest

from dpbench.methods import pufferfish as pf

P1 = np.array([[0.9, 0.1], [0.4, 0.6]])
P2 = np.array([[0.8, 0.2], [0.3, 0.7]])
Q1, Q2 = np.array([1.0, 0.0]), np.array([0.9, 0.1])


def test_running_example_mqm_exact_theta1():
    r = pf.mqm_exact([(Q1, P1)], 100, 1.0)  # ℓ = T
    assert round(r.sigma_max, 4) == 13.0219
    assert r.node == 8 and r.quilt == (3, 13) and r.card == 9
    assert r.influence == pytest.approx(0.30886, abs=1e-5)


def test_running_example_mqm_exact_theta2():
    r = pf.mqm_exact([(Q2, P2)], 100, 1.0)
    assert round(r.sigma_max, 4) == 10.6402
    assert r.node == 6 and r.quilt == (10,) and r.card == 9
    assert r.influence == pytest.approx(0.15415, abs=1e-5)


def test_running_example_class_takes_the_max_and_adds_lap_13_0219():
    r = pf.mqm_exact([(Q1, P1), (Q2, P2)], 100, [1.0])[0]
    assert round(r.sigma_max, 4) == 13.0219 and r.theta == 0


def brute_mqm_exact(q, P, T, eps, reachable_only=False):
    """Independent reference for Alg. 8 with (7.3): explicit loops over nodes and quilts (numpy over b)."""
    k = P.shape[0]
    Pw = [np.linalg.matrix_power(P, d) for d in range(T + 1)]
    mu = [q @ Pw[i - 1] for i in range(1, T + 1)]
    best = (-np.inf, None, None)
    for i in range(1, T + 1):
        m = mu[i - 1]
        pairs = [(x, y) for x in range(k) for y in range(k) if x != y and m[x] > 0 and m[y] > 0]
        if not pairs:
            continue
        cands = [(T / eps, ())]
        b = np.arange(1, T - i + 1)
        fwd = {pr: np.array([np.max(np.log(Pw[d][pr[0]] / Pw[d][pr[1]])) for d in b]) for pr in pairs}
        ef = np.max([fwd[pr] for pr in pairs], axis=0) if len(b) else np.array([])
        for j, d in enumerate(b):
            if ef[j] < eps:
                cands.append(((i + d - 1) / (eps - ef[j]), (i + d,)))
        for a in range(1, i):
            zs = [z for z in range(k) if not reachable_only or mu[i - a - 1][z] > 0]
            back = {pr: max(np.log(Pw[a][z, pr[0]] / Pw[a][z, pr[1]]) for z in zs) for pr in pairs}
            prior = {pr: np.log(m[pr[1]] / m[pr[0]]) for pr in pairs}
            eb = max(prior[pr] + back[pr] for pr in pairs)
            if eb < eps:
                cands.append(((T - i + a) / (eps - eb), (i - a,)))
            if len(b):
                e2 = np.max([prior[pr] + back[pr] + fwd[pr] for pr in pairs], axis=0)
                ok = e2 < eps
                sc = np.where(ok, (a + b - 1) / np.where(ok, eps - e2, 1), np.inf)
                j = int(np.argmin(sc))
                cands.append((sc[j], (i - a, i + int(b[j]))))
        s, quilt = min(cands, key=lambda c: c[0])
        if s > best[0]:
            best = (s, i, quilt)
    return best


def test_independent_reference_and_the_third_term_subtlety():
    """Eq. (7.3) with the X_{i−a} term maximised over all states gives the 13.0219 of §7.4.3.1 (quilt {X3, X13});
    restricting it to states of positive probability would give 12.9341 with quilt {X1, X13}."""
    s, node, quilt = brute_mqm_exact(Q1, P1, 100, 1.0)
    assert round(s, 4) == 13.0219 and node == 8 and quilt == (3, 13)
    s, node, quilt = brute_mqm_exact(Q1, P1, 100, 1.0, reachable_only=True)
    assert round(s, 4) == 12.9341 and quilt == (1, 13)
    s, node, quilt = brute_mqm_exact(Q2, P2, 100, 1.0)
    assert round(s, 4) == 10.6402 and node == 6 and quilt == (10,)


def test_stationary_distributions_pi_min_and_eigengap():
    np.testing.assert_allclose(pf.stationary_distribution(P1), [0.8, 0.2], atol=1e-12)
    np.testing.assert_allclose(pf.stationary_distribution(P2), [0.6, 0.4], atol=1e-12)
    np.testing.assert_allclose(pf.time_reversal(P1), P1, atol=1e-12)   # P* = P (§7.4.3.2)
    np.testing.assert_allclose(pf.time_reversal(P2), P2, atol=1e-12)
    assert round(pf.eigengap(P1), 4) == 0.75 and round(pf.eigengap(P2), 4) == 0.75
    pi_min, g = pf.class_parameters([P1, P2])
    assert round(pi_min, 4) == 0.2 and round(g, 4) == 0.75


def test_lemma_7_4_7_and_mqm_approx_on_the_running_example():
    a_star, ell = pf.lemma_7_4_7(1.0, 0.2, 0.75)
    assert (a_star, ell) == (12, 48) and 100 >= 8 * a_star
    full = pf.mqm_approx(0.2, 0.75, [100], 1.0, ell=100)          # Alg. 9 over every node, ℓ = T
    assert full.sigma_max == pytest.approx(31.70976, abs=1e-4)     # [DERIVED: ours]: node 18, {X3, X31}
    assert full.node == 18 and full.quilt == (3, 31)
    lemma = pf.mqm_approx(0.2, 0.75, [100], 1.0)                  # Lemma 7.4.7: middle node, ℓ = 4a*
    assert lemma.sigma_max == pytest.approx(full.sigma_max, rel=1e-12) and lemma.node == 50
    assert lemma.extra["lemma_7_4_7"]
    exact = pf.mqm_exact([(Q1, P1), (Q2, P2)], 100, 1.0)
    assert exact.sigma_max < full.sigma_max                        # the bound is looser than (7.3)


def test_wasserstein_flu_example_w_equals_2():
    s, p0, p1 = pf.flu_conditionals([0.1, 0.15, 0.5, 0.15, 0.1])
    np.testing.assert_allclose(p0, [0.2, 0.225, 0.5, 0.075, 0.0])
    np.testing.assert_allclose(p1, [0.0, 0.075, 0.5, 0.225, 0.2])
    W = pf.wasserstein_scale([(s, p0, p1)])
    assert W == 2.0 and W <= 4  # Thm 7.3.3: never above the group-DP sensitivity (4 people)


def test_winf_distance_basic_cases():
    s = np.arange(5.0)
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.0])
    assert pf.winf_distance(s, p, p) == 0
    assert pf.winf_distance(s, p, np.roll(p, 1)) == 1           # a shift by one
    assert pf.winf_distance(s, [1, 0, 0, 0, 0], [0, 0, 0, 0, 1]) == 4
    with pytest.raises(ValueError, match="probability"):
        pf.winf_distance(s, [0.5, 0, 0, 0, 0], p)
