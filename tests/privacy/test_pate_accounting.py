"""PATE accounting (dpbench.privacy.pate; Song 2018, ch. 5; Papernot et al. 2018): the data-dependent GNMax
bound against the data-independent one and against brute-force Rényi divergences of the exact output
distributions (m <= 3 classes), the threshold step, LNMax's pure-ε fallback, the motivating numbers of §5.4.1 and
the (ε, δ) conversion against dp-accounting."""

import math

import numpy as np
import pytest
from scipy import stats

from dpbench.privacy import pate as P
from dpbench.privacy.accounting import classic_rdp_to_dp

ORD = np.array([1.5, 2.0, 3.0, 5.0, 8.0, 12.0, 20.0, 32.0, 50.0])


def _ref_rdp_gaussian(logq, sigma, orders):
    """Per query, per order, a scalar transcription of Theorem 6 of Papernot et al. 2018 (reference for the
    vectorised code)."""
    out = []
    for lam in orders:
        ind = lam / sigma ** 2
        if math.isinf(logq):
            out.append(0.0)
            continue
        mu2 = sigma * math.sqrt(-logq)
        mu1 = mu2 + 1
        e1, e2 = mu1 / sigma ** 2, mu2 / sigma ** 2
        if not (mu2 > 1 and lam < mu1 and -logq > e2
                and logq <= (mu2 - 1) * e2 - mu2 * (math.log(1 + 1 / (mu1 - 1)) + math.log(1 + 1 / (mu2 - 1)))):
            out.append(ind)
            continue
        q = math.exp(logq)
        A = (1 - q) / (1 - (q * math.exp(e2)) ** ((mu2 - 1) / mu2))
        B = math.exp(e1) / q ** (1 / (mu1 - 1))
        out.append(min(ind, math.log((1 - q) * A ** (lam - 1) + q * B ** (lam - 1)) / (lam - 1)))
    return np.array(out)


def test_vectorised_matches_scalar_reference_and_never_exceeds_independent():
    rng = np.random.default_rng(1)
    votes = rng.multinomial(250, rng.dirichlet(np.full(10, 0.3), size=60)[0], size=60)
    votes = np.vstack([votes, [[250] + [0] * 9], [[30, 28] + [24] * 8]])
    for sigma in (5.0, 20.0, 40.0, 100.0):
        lq = P.logq_gnmax(votes, sigma)
        dep = P.rdp_gaussian(lq, sigma, ORD)
        ind = P.rdp_gaussian_independent(sigma, ORD)
        assert np.all(dep <= ind + 1e-12) and np.all(dep >= 0)
        for i in range(0, len(votes), 7):
            # rtol/atol: the reference exponentiates naively
            np.testing.assert_allclose(dep[i], _ref_rdp_gaussian(lq[i], sigma, ORD), rtol=1e-7, atol=1e-14)
    # q̃ too large for the bound: equal to the data-independent bound at every order
    lq = P.logq_gnmax([[5, 4, 3]], 40.0)
    assert lq[0] == pytest.approx(math.log(1 - 1 / 3))
    np.testing.assert_array_equal(P.rdp_gaussian(lq, 40.0, ORD)[0], P.rdp_gaussian_independent(40.0, ORD))
    assert np.all(P.rdp_gaussian([-np.inf], 10.0, ORD) == 0)


def test_logq_gnmax_is_prop_5_3_2():
    v = np.array([[40, 25, 10]])
    s = 7.0
    want = sum(0.5 * math.erfc((40 - n) / (2 * s)) for n in (25, 10))
    assert math.exp(P.logq_gnmax(v, s)[0]) == pytest.approx(want, rel=1e-12)


def _gnmax_output(votes, sigma, z=np.linspace(-14, 14, 40001)):
    """Exact output distribution of argmax_i n_i + N(0, σ²) by quadrature:
    P(j) = ∫ φ(z) Π_{k≠j} Φ((n_j − n_k)/σ + z) dz."""
    v = np.asarray(votes, float)
    phi = stats.norm.pdf(z)
    out = []
    for j in range(len(v)):
        f = phi.copy()
        for k in range(len(v)):
            if k != j:
                f = f * stats.norm.cdf((v[j] - v[k]) / sigma + z)
        out.append(np.trapezoid(f, z))
    p = np.array(out)
    return p / p.sum()


def _renyi(p, q, lam):
    return math.log(np.sum(p ** lam * q ** (1 - lam))) / (lam - 1)


@pytest.mark.parametrize("votes,sigma", [([14, 0], 2.0), ([12, 1, 0], 1.5), ([20, 3, 2], 3.0), ([6, 5, 1], 2.0)])
def test_bound_holds_against_brute_force_renyi_divergence(votes, sigma):
    """D_λ(M(D) ‖ M(D')) for every neighbour D' (one teacher moves its vote) stays below the data-dependent
    bound computed at D (Theorem 5.3.1) and below λ/σ²."""
    orders = np.array([1.5, 2.0, 3.0, 4.0, 6.0, 8.0])
    bound = P.rdp_gaussian(P.logq_gnmax([votes], sigma), sigma, orders)[0]
    assert np.all(bound <= orders / sigma ** 2 + 1e-15)
    p = _gnmax_output(votes, sigma)
    m = len(votes)
    worst = np.zeros(len(orders))
    for a in range(m):
        for b in range(m):
            if a == b or votes[a] == 0:
                continue
            w = list(votes)
            w[a] -= 1
            w[b] += 1
            q = _gnmax_output(w, sigma)
            worst = np.maximum(worst, [_renyi(p, q, lam) for lam in orders])
    assert np.all(worst <= bound * (1 + 1e-6) + 1e-12), (worst, bound)
    if votes == [14, 0]:       # the data-dependent branch is active and much tighter than λ/σ² here
        assert bound[2] < 0.2 * orders[2] / sigma ** 2


def test_threshold_step_bound_against_exact_binary_outputs():
    T, s1 = 20.0, 3.0
    orders = np.array([2.0, 3.0, 5.0, 8.0])
    for top in (2, 10, 30, 40):
        bound = P.rdp_threshold(P.log_pr_answered([top], T, s1), s1, orders)[0]
        assert np.all(bound <= P.rdp_threshold_independent(s1, orders) + 1e-15)
        p1 = stats.norm.sf(T - top, scale=s1)
        for other in (top - 1, top + 1):          # the max vote moves by at most one
            q1 = stats.norm.sf(T - other, scale=s1)
            for lam, bd in zip(orders, bound):
                d = _renyi(np.array([p1, 1 - p1]), np.array([q1, 1 - q1]), lam)
                assert d <= bd * (1 + 1e-6) + 1e-12
    assert P.rdp_threshold(P.log_pr_answered([40], T, s1), s1, orders)[0][0] < 0.5 * 2.0 / (2 * s1 ** 2)


def test_motivating_numbers_rates():
    """§5.4.1: at a gap of xσ, q̃ falls as e^{−x} for LNMax and e^{−x²} for GNMax — 'gap 4σ: e^{−4} = 0.018… vs
    e^{−16} ≈ 10^{−7}'. The exact bounds carry prefactors and GNMax's exponent is x²/4 (Φ̄(x/√2)); the slopes
    of log q̃ are the rates."""
    assert math.exp(-4) == pytest.approx(0.0183, abs=1e-4) and math.exp(-16) == pytest.approx(1.1e-7, rel=0.03)
    x = np.array([8.0, 9.0])
    ln = P.logq_lnmax(np.column_stack([x, 0 * x]), 1.0)
    gn = P.logq_gnmax(np.column_stack([x, 0 * x]), 1.0)
    assert ln[1] - ln[0] == pytest.approx(-1.0 + math.log(11 / 10), abs=1e-9)   # (2 + x)/4 · e^{−x}
    assert (gn[1] - gn[0]) / (-(81 - 64) / 4) == pytest.approx(1.0, abs=0.05)   # e^{−x²/4} up to x⁻¹
    q4_ln = math.exp(P.logq_lnmax([[4, 0]], 1.0)[0])
    q4_gn = math.exp(P.logq_gnmax([[4, 0]], 1.0)[0])
    assert q4_ln == pytest.approx(1.5 * math.exp(-4)) and q4_gn == pytest.approx(stats.norm.sf(4 / math.sqrt(2)))
    assert q4_gn < q4_ln / 10


def test_lnmax_pure_eps_fallback_and_data_dependent_gain():
    b = 20.0
    eps0 = 2 / b
    orders = P.ORDERS
    close = P.rdp_laplace(P.logq_lnmax([[30, 29, 28]], b), b, orders)[0]
    np.testing.assert_allclose(close, np.minimum(eps0 ** 2 * orders / 2, eps0))
    assert close[-1] == pytest.approx(eps0)                    # the pure-ε fallback caps every order
    clear = P.rdp_laplace(P.logq_lnmax([[250, 0, 0]], b), b, orders)[0]
    assert np.all(clear <= close + 1e-15) and clear[0] < 0.5 * close[0]


def test_conversion_matches_dp_accounting_for_data_independent_gnmax():
    from dp_accounting import GaussianDpEvent, SelfComposedDpEvent
    from dp_accounting.rdp import rdp_privacy_accountant as R

    sigma, queries, delta = 40.0, 1000, 1e-5
    orders = P.ORDERS
    acc = R.RdpAccountant(list(orders))
    # GNMax: the vote vector moves by √2 in L2 -> a Gaussian mechanism with noise multiplier σ/√2
    acc.compose(SelfComposedDpEvent(GaussianDpEvent(sigma / math.sqrt(2)), queries))
    ours = queries * P.rdp_gaussian_independent(sigma, orders)
    np.testing.assert_allclose(acc._rdp, ours, rtol=1e-10)
    eps_i, order_i = P.eps_from_rdp(ours, delta, orders, conversion="improved")
    want, want_order = R.compute_epsilon(orders, ours, delta)
    assert eps_i == pytest.approx(want, rel=1e-12) and order_i == want_order
    eps_c, _ = P.eps_from_rdp(ours, delta, orders)
    assert eps_c == pytest.approx(classic_rdp_to_dp(orders, ours, delta)[0], rel=1e-12)
    assert eps_c >= eps_i
    curve = P.eps_curve(np.tile(P.rdp_gaussian_independent(sigma, orders), (queries, 1)), delta, orders)
    assert curve[-1] == pytest.approx(eps_c) and np.all(np.diff(curve) >= 0)


def test_vectorised_speed_thousands_of_queries():
    import time

    rng = np.random.default_rng(0)
    votes = rng.multinomial(5000, np.r_[0.6, np.full(149, 0.4 / 149)], size=4000)
    t = time.process_time()
    r = P.rdp_gaussian(P.logq_gnmax(votes, 100.0), 100.0)
    assert r.shape == (4000, P.ORDERS.size)
    assert time.process_time() - t < 2.0
