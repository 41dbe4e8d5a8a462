"""The ε-Pufferfish guarantee (Def. 2.4.1) of MQMExact/MQMApprox on small chains: for every node, secret pair
(X_i = 0, X_i = 1) and θ, the output densities stay within e^±ε — exactly (by enumerating every chain) and
statistically (sampled releases, threshold events, ratio within e^ε plus sampling error), with a negative control that
shows the statistical test can detect a violation."""

import itertools

import numpy as np

from dpbench.data.markov import binary_transition
from dpbench.methods import pufferfish as pf
from dpbench.rng import generator

# a weakly correlated chain where MQMExact uses a non-trivial quilt and its guarantee is nearly tight
# (the exact worst-case log-ratio is 1.85 for ε = 2), so too little noise shows up
T = 10
EPS = 2.0
P = binary_transition(0.6, 0.5)
Q = np.array([0.5, 0.5])


def chains_and_probs(q, P, T):
    X = np.array(list(itertools.product([0, 1], repeat=T)))
    p = q[X[:, 0]] * np.prod(P[X[:, :-1], X[:, 1:]], axis=1)
    return X, p


def max_log_ratio(q, P, T, scale):
    """max over nodes, secret pairs and outputs w of |log f(w | X_i = 0) − log f(w | X_i = 1)|, f the density of
    F(X) + Lap(scale) with F = mean. Between and beyond the atoms F(X) ∈ {0, 1/T, …, 1} the log densities are
    piecewise linear, so the grid of atoms plus far points is exhaustive."""
    X, p = chains_and_probs(q, P, T)
    F = X.mean(axis=1)
    w = np.concatenate([np.unique(F), [-50 * scale - 1, 50 * scale + 2]])
    kern = np.exp(-np.abs(w[:, None] - F[None, :]) / scale)          # (w, chains)
    worst = 0.0
    for i in range(T):
        dens = []
        for x in (0, 1):
            m = X[:, i] == x
            if p[m].sum() == 0:
                break
            dens.append(kern[:, m] @ (p[m] / p[m].sum()))
        if len(dens) == 2:
            worst = max(worst, float(np.max(np.abs(np.log(dens[0]) - np.log(dens[1])))))
    return worst


def test_exact_output_ratio_within_e_eps_for_mqm_exact_and_approx():
    r = pf.mqm_exact([(Q, P)], T, EPS)
    assert r.quilt != ()                                         # not the trivial (GroupDP-like) quilt
    scale = r.sigma_max / T                                      # L = 1/T for F = ΣX_i/T
    assert EPS - 0.3 < max_log_ratio(Q, P, T, scale) <= EPS + 1e-9
    assert max_log_ratio(Q, P, T, scale / 1.5) > EPS             # too little noise is caught
    pi_min, g = pf.class_parameters([P])
    ra = pf.mqm_approx(pi_min, g, [T], EPS, ell=T)
    assert ra.sigma_max >= r.sigma_max and max_log_ratio(Q, P, T, ra.sigma_max / T) <= EPS + 1e-9


def test_exact_output_ratio_for_every_initial_distribution_of_the_class():
    """Θ = {P} × every q: the vertex-argument scale protects any q, including near-degenerate ones."""
    r = pf.mqm_exact([(None, P)], T, EPS)
    assert max_log_ratio(Q, P, T, pf.mqm_exact([(None, binary_transition(0.8, 0.7))], T, 1.0).sigma_max / T) <= 1.0
    rng = np.random.default_rng(0)
    qs = [rng.dirichlet([0.5, 0.5]) for _ in range(10)] + [np.array([1 - 1e-6, 1e-6]), np.array([1e-6, 1 - 1e-6])]
    assert max(max_log_ratio(q, P, T, r.sigma_max / T) for q in qs) <= EPS + 1e-9


def sample_conditioned(rng, q, P, T, i, x, n):
    """n chains drawn from θ conditioned on X_i = x (forward with P, backward with the reversed kernels)."""
    mu = [q]
    for _ in range(T - 1):
        mu.append(mu[-1] @ P)
    X = np.zeros((n, T), int)
    X[:, i] = x
    for t in range(i + 1, T):
        X[:, t] = rng.random(n) < P[X[:, t - 1], 1]
    for t in range(i - 1, -1, -1):
        back = mu[t][:, None] * P / mu[t + 1][None, :]            # back[z, y] = P(X_t = z | X_{t+1} = y)
        X[:, t] = rng.random(n) < back[1, X[:, t + 1]]
    return X


def empirical_violation(scale, nodes=range(T), n=200_000, key="fit"):
    """Largest z = (|log p̂₀(S)/p̂₁(S)| − ε)/s.e. over the events S = {w ≤ t} and {w > t} (t on a grid) and
    the given nodes, from n sampled releases under X_i = 0 and under X_i = 1 (events with ≥ 50 counts)."""
    grid = np.linspace(-0.3, 1.3, 41)
    worst = -np.inf
    for i in nodes:
        below = []
        for x in (0, 1):
            rng = generator(7, f"test/pufferfish/{key}/node={i}/x={x}")
            w = sample_conditioned(rng, Q, P, T, i, x, n).mean(axis=1) + rng.laplace(0.0, scale, n)
            below.append((w[None, :] <= grid[:, None]).sum(axis=1))
        for c0, c1 in ((below[0], below[1]), (n - below[0], n - below[1])):
            ok = (c0 >= 50) & (c1 >= 50)
            z = (np.abs(np.log(c0[ok] / c1[ok])) - EPS) / np.sqrt(1 / c0[ok] + 1 / c1[ok])
            worst = max(worst, float(z.max(initial=-np.inf)))
    return worst


def test_sampler_matches_the_enumerated_conditional():
    X, p = chains_and_probs(Q, P, T)
    rng = generator(7, "test/pufferfish/sampler")
    S = sample_conditioned(rng, Q, P, T, 2, 1, 100_000)
    m = X[:, 2] == 1
    np.testing.assert_allclose(S.mean(axis=0), (X[m] * (p[m] / p[m].sum())[:, None]).sum(axis=0), atol=0.01)


def test_statistical_pufferfish_guarantee():
    r = pf.mqm_exact([(Q, P)], T, EPS)
    # ~820 events: 4.5 standard errors keeps the family-wise false-alarm rate below 1%
    assert empirical_violation(r.sigma_max / T) < 4.5


def test_statistical_test_has_power():
    """The same test flags a release with two thirds of MQMExact's noise (exact worst log-ratio 2.7 > ε = 2)."""
    r = pf.mqm_exact([(Q, P)], T, EPS)
    assert empirical_violation(r.sigma_max / T / 1.5, nodes=[1, 4], key="control") > 4.5
