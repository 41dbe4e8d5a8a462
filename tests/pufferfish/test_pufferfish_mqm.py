"""Markov Quilt Mechanism internals: vectorised search vs references, bound validity, ℓ, GroupDP, GK16."""

import itertools
import math

import numpy as np
import pytest

from dpbench.data.markov import binary_transition
from dpbench.methods import pufferfish as pf


def random_chain(rng, k, reversible=False):
    if reversible:  # a random walk on a weighted complete graph is reversible
        W = rng.uniform(0.1, 1.0, (k, k))
        W = W + W.T
        return W / W.sum(axis=1, keepdims=True)
    P = rng.uniform(0.05, 1.0, (k, k))
    return P / P.sum(axis=1, keepdims=True)


def definition_influence(P, q, T, i, a, b):
    """e(X_Q | X_i) straight from Def. 7.4.1 by enumerating x_Q (positive chains, every x_Q has mass)."""
    k = P.shape[0]
    mp = np.linalg.matrix_power
    mu = lambda t: q @ mp(P, t - 1)  # noqa: E731
    best = -np.inf
    for x, y in itertools.permutations(range(k), 2):
        for xq in itertools.product(range(k), repeat=(a is not None) + (b is not None)):
            num = den = 1.0
            j = 0
            if a is not None:
                z = xq[j]
                j += 1
                num *= mu(i - a)[z] * mp(P, a)[z, x] / mu(i)[x]
                den *= mu(i - a)[z] * mp(P, a)[z, y] / mu(i)[y]
            if b is not None:
                w = xq[j]
                num *= mp(P, b)[x, w]
                den *= mp(P, b)[y, w]
            best = max(best, math.log(num / den))
    return best


def test_eq_7_3_equals_the_definition_on_positive_chains():
    rng = np.random.default_rng(1)
    for k in (2, 3):
        P = random_chain(rng, k)
        q = rng.dirichlet(np.ones(k))
        for i, a, b in [(5, 2, 3), (4, 3, None), (2, None, 4), (7, 1, 1)]:
            assert pf.max_influence_chain(P, 10, i, a, b, q=q) == pytest.approx(
                definition_influence(P, q, 10, i, a, b), abs=1e-10)


def test_vertex_argument_sup_over_initial_distributions():
    rng = np.random.default_rng(2)
    P = random_chain(rng, 3)
    e_sup = pf.max_influence_chain(P, 12, 6, 3, 2, q=None)
    draws = [pf.max_influence_chain(P, 12, 6, 3, 2, q=rng.dirichlet(np.ones(3) * 0.2)) for _ in range(200)]
    near = [pf.max_influence_chain(P, 12, 6, 3, 2, q=np.eye(3)[z] * (1 - 3e-9) + 1e-9) for z in range(3)]
    assert max(draws) <= e_sup + 1e-12
    assert max(near) == pytest.approx(e_sup, abs=1e-6)
    # and the whole mechanism: the class with every q needs at least the noise of any single q
    s_all = pf.mqm_exact([(None, P)], 12, 1.0).sigma_max
    assert all(pf.mqm_exact([(rng.dirichlet(np.ones(3)), P)], 12, 1.0).sigma_max <= s_all + 1e-9 for _ in range(5))


def test_stationary_fast_path_matches_the_general_search():
    rng = np.random.default_rng(3)
    for k in (2, 3, 4):
        P = random_chain(rng, k)
        pi = pf.stationary_distribution(P)
        for T, ell, eps in [(30, 30, 1.0), (40, 12, 0.5), (25, 7, 5.0)]:
            general = pf.mqm_exact([(pi, P)], T, eps, ell=ell)
            fast = pf.mqm_exact_stationary(P, [T], eps, ell, pi=pi)
            assert fast.sigma_max == pytest.approx(general.sigma_max, rel=1e-10)
    # several independent chains: the max over their lengths
    P = random_chain(rng, 3)
    pi = pf.stationary_distribution(P)
    both = pf.mqm_exact_stationary(P, [9, 30, 14], 1.0, 20)
    each = max(pf.mqm_exact([(pi, P)], T, 1.0, ell=20).sigma_max for T in (9, 30, 14))
    assert both.sigma_max == pytest.approx(each, rel=1e-10)


def test_smaller_ell_never_needs_less_noise():
    P = binary_transition(0.8, 0.7)
    s = [pf.mqm_exact([(None, P)], 60, 1.0, ell=ell).sigma_max for ell in (5, 10, 20, 60)]
    assert all(s[j] >= s[j + 1] - 1e-12 for j in range(3))


def test_general_mqm_scale_alg_7():
    cards = np.array([[10, 3, 5], [10, 2, 4]], float)
    infl = np.array([[0.0, 0.5, np.inf], [0.0, 0.9, 0.2]])
    sig, node, q = pf.mqm_scale(cards, infl, 1.0)
    # node 0: min(10, 3/0.5 = 6, inf) = 6; node 1: min(10, 2/0.1 = 20, 4/0.8 = 5) = 5
    assert (sig, node, q) == (pytest.approx(6.0), 0, 1)
    assert pf.mqm_scale(cards, infl, 1.0, valid=[False, True])[0] == pytest.approx(5.0)


@pytest.mark.parametrize("reversible", [False, True])
def test_approximate_bounds_dominate_the_exact_influence(reversible):
    """Lemma 7.4.6 (general) and the reconstructed reversible / one-sided bounds are upper bounds of (7.3) for
    any initial distribution — the property MQMApprox's privacy rests on."""
    rng = np.random.default_rng(4 + reversible)
    bound = "reversible" if reversible else "general"
    for _ in range(6):
        k = int(rng.integers(2, 5))
        P = random_chain(rng, k, reversible)
        pi_min, g = pf.class_parameters([P], bound)
        T = 60
        for q in (None, rng.dirichlet(np.ones(k))):
            for i, a, b in [(30, 5, 7), (30, 12, 3), (40, 20, None), (10, None, 15), (50, 30, 9)]:
                bnd = float(pf.approx_influence(a, b, pi_min, g, bound))
                if np.isfinite(bnd):
                    assert pf.max_influence_chain(P, T, i, a, b, q=q) <= bnd + 1e-12
        # and therefore the mechanism: MQMApprox never adds less noise than MQMExact over the same quilts
        ex = pf.mqm_exact([(None, P)], T, 1.0).sigma_max
        ap = pf.mqm_approx(pi_min, g, [T], 1.0, ell=T, bound=bound).sigma_max
        assert ap >= ex - 1e-9


def test_binary_class_parameters_closed_form():
    from dpbench.studies.song2018.ch7_scales import binary_class_parameters, binary_grid

    for alpha in (0.1, 0.25, 0.4):
        grid = binary_grid(alpha, 0.05)
        Ps = [binary_transition(a, b) for a in grid for b in grid]
        for bound in ("general", "reversible"):
            pm, g = pf.class_parameters(Ps, bound)
            assert (pm, g) == pytest.approx(binary_class_parameters(alpha, bound), abs=1e-9)


def test_lemma_7_4_7_shortcut_equals_the_full_search_on_long_chains():
    for pi_min, g, eps in [(0.2, 0.75, 1.0), (0.1, 0.3, 0.5), (0.3, 0.5, 5.0)]:
        a_star, ell = pf.lemma_7_4_7(eps, pi_min, g)
        T = 8 * a_star + 5
        lemma = pf.mqm_approx(pi_min, g, [T], eps)
        full = pf.mqm_approx(pi_min, g, [T], eps, ell=ell, use_lemma_7_4_7=False)
        assert lemma.extra["lemma_7_4_7"] and lemma.sigma_max == pytest.approx(full.sigma_max, rel=1e-12)


def test_pruned_maxplus_is_exact():
    rng = np.random.default_rng(5)
    G = rng.normal(size=(300, 500))
    F = rng.normal(size=(280, 500))
    G[rng.random(G.shape) < 0.01] = np.inf
    F[:, 7] = np.inf
    F[3] = -np.inf
    np.testing.assert_array_equal(pf._maxplus_pruned(G, F), pf._maxplus(G, F))


def test_group_dp_and_gk16():
    assert pf.group_dp_scale(1 / 100, 100, 0.2) == pytest.approx(5.0)       # synthetic: Lap(1/ε)
    assert pf.group_dp_scale(2 / 1e6, 1e6, 1.0) * 51 == pytest.approx(102)  # Table 7.3: ≈ 102/ε
    # symmetric chain p = 0.6: P(x_i | u, w) ∝ P(u, x_i)P(x_i, w); the largest divergence is
    # log(((p² + (1−p)²)/2)/(1−p)²) when a neighbour flips
    phi = pf.gk16_influences(binary_transition(0.6, 0.6))
    assert phi["left"] == pytest.approx(math.log(0.52 / 2 / 0.16)) and phi["right"] == pytest.approx(phi["left"])
    for n in (2, 5, 50, 300):
        assert pf.gk16_norm(phi, [n]) == pytest.approx(np.linalg.norm(pf.gk16_matrix(phi, n), 2), rel=1e-10)
    assert pf.gk16_norm(phi, [20, 300]) == pytest.approx(pf.gk16_norm(phi, [300]))
    assert pf.gk16_scale(0.01, 0.5, 1.0) == pytest.approx(0.02)
    assert math.isinf(pf.gk16_scale(0.01, 1.0, 1.0)) and math.isinf(pf.gk16_scale(0.01, np.inf, 1.0))
    # a zero transition makes a neighbour's influence unbounded
    assert math.isinf(pf.gk16_norm(pf.gk16_influences(np.array([[1.0, 0.0], [0.5, 0.5]])), [10]))


def test_gk16_applicability_on_the_binary_class_does_not_depend_on_eps():
    from dpbench.studies.song2018.ch7_scales import binary_class_scale

    lo = binary_class_scale("gk16", 0.3, 100, [0.2, 1.0, 5.0], 0.1, "reversible")
    hi = binary_class_scale("gk16", 0.45, 100, [0.2, 1.0, 5.0], 0.1, "reversible")
    assert not any(r["applicable"] for r in lo.values()) and all(r["applicable"] for r in hi.values())
    assert hi["1.0"]["sigma"] == pytest.approx(5 * hi["5.0"]["sigma"])


def test_invalid_arguments():
    with pytest.raises(ValueError, match="epsilon"):
        pf.mqm_exact([(None, binary_transition(0.5, 0.5))], 10, 0.0)
    with pytest.raises(ValueError, match="transition matrix"):
        pf.mqm_exact([(None, np.array([[0.5, 0.6], [0.5, 0.5]]))], 10, 1.0)
    with pytest.raises(ValueError, match="pi_min"):
        pf.mqm_approx(0.0, 0.5, [10], 1.0)
    with pytest.raises(ValueError, match="bound"):
        pf.approx_influence(1, 1, 0.2, 0.5, "magic")


def loop_search(P, q, T, eps):
    """Alg. 8 by explicit loops over nodes and quilts with the reference (7.3) influence."""
    best = -np.inf
    for i in range(1, T + 1):
        mu = (np.eye(P.shape[0]) if q is None else q[None, :]) @ np.linalg.matrix_power(P, i - 1)
        if q is not None and (mu > 0).sum() < 2:
            continue
        cands = [T / eps]
        for a in [None, *range(1, i)]:
            for b in [None, *range(1, T - i + 1)]:
                if a is None and b is None:
                    continue
                e = pf.max_influence_chain(P, T, i, a, b, q=q)
                card = (a or 0) + (b or 0) - 1 if a and b else (i + b - 1 if b else T - i + a)
                if e < eps:
                    cands.append(card / (eps - e))
        best = max(best, min(cands))
    return best


def test_vectorised_search_equals_quilt_loops_on_sparse_chains():
    """Zero transitions (infinite terms) and states of zero marginal probability (no secret pair)."""
    P = np.array([[0.6, 0.4, 0.0], [0.0, 0.5, 0.5], [0.3, 0.0, 0.7]])
    for q in (np.array([1.0, 0.0, 0.0]), np.array([0.2, 0.8, 0.0]), None):
        for eps in (0.5, 2.0):
            got = pf.mqm_exact([(q, P)], 9, eps).sigma_max
            assert got == pytest.approx(loop_search(P, q, 9, eps), rel=1e-12)
