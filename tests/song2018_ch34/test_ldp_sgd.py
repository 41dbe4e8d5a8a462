"""song2018 chapters 3-4 library (dpbench.methods.ldp_sgd): Thm 4.2.1, the ε-LDP oracle, Algorithms 1-2, the engine.

Statistical checks use fixed seeds (deterministic) and every guarantee check is paired with a mis-calibrated
variant that it must flag (power check), so no test is vacuous.
"""

import math

import numpy as np
import pytest
from scipy import stats

from dpbench.methods import ldp_sgd as L
from dpbench.learn.psgd import StepSchedule, psgd

N = 200_000
Z = 4.0


# ---------------------------------------------------------------------------------------------------------
# Thm 4.2.1: second moment


def _adversarial_point(d, lam):
    """‖w‖ = 1/λ and a record whose gradient is aligned with λw with norm ≈ 1: ‖λw + ∇ℓ‖ ≈ 2 (the bound is tight)."""
    w = np.zeros(d)
    w[0] = 1.0 / lam
    x = -np.eye(d)[0]          # y wᵀx = −1/λ → σ(1/λ) ≈ 1, ∇ℓ = −σ y x = e₁
    return w, x[None, :], np.array([1.0])


def _second_moment(eps_report, d=5, lam=0.1, seed=0):
    rng = np.random.default_rng(seed)
    w, x, y = _adversarial_point(d, lam)
    G = L.gdp_reports(w, np.repeat(x, N, axis=0), np.repeat(y, N), eps_report, lam, rng)
    sq = np.einsum("ij,ij->i", G, G)
    return sq.mean(), sq.std(ddof=1) / math.sqrt(N)


def test_thm_4_2_1_second_moment_bound_holds_and_is_tight():
    d, eps = 5, 2.0
    bound = L.gamma_sq_upper(d, eps)
    assert bound == pytest.approx(4 + 4 * (d * d + d) / eps ** 2)
    mean, se = _second_moment(eps, d)
    assert mean <= bound + Z * se
    assert mean >= bound - Z * se - 0.01          # tight at the adversarial point: the check has power


def test_thm_4_2_1_check_flags_too_much_noise():
    d, eps = 5, 2.0
    mean, se = _second_moment(eps / 1.2, d, seed=1)   # noise calibrated for a smaller ε
    assert mean > L.gamma_sq_upper(d, eps) + Z * se


def test_second_moment_bound_at_random_points():
    rng = np.random.default_rng(3)
    d, eps, lam = 8, 1.0, 0.05
    for _ in range(5):
        w = rng.standard_normal(d)
        w *= rng.uniform(0, 1 / lam) / np.linalg.norm(w)
        x = rng.standard_normal(d)
        x *= rng.uniform(0, 1) / np.linalg.norm(x)
        G = L.gdp_reports(w, np.repeat(x[None], 50_000, 0), np.full(50_000, rng.choice([-1.0, 1.0])), eps, lam, rng)
        sq = np.einsum("ij,ij->i", G, G)
        assert sq.mean() <= L.gamma_sq_upper(d, eps) + Z * sq.std() / math.sqrt(sq.size)


def test_reports_require_unit_ball_rows():
    with pytest.raises(ValueError, match="norm|\\|\\|x\\|\\|"):
        L.gdp_reports(np.zeros(2), np.array([[1.0, 1.0]]), np.array([1.0]), 1.0, 0.1, np.random.default_rng(0))


# ---------------------------------------------------------------------------------------------------------
# ε-LDP: neighbour test on single reports


def _max_log_ratio_excess(a, b, log_bound):
    edges = np.quantile(np.concatenate([a, b]), np.linspace(0, 1, 41))
    edges[0], edges[-1] = -np.inf, np.inf
    ca = np.histogram(a, edges)[0] + 0.5
    cb = np.histogram(b, edges)[0] + 0.5
    lr = np.log(ca / a.size) - np.log(cb / b.size)
    se = np.sqrt(1 / ca - 1 / a.size + 1 / cb - 1 / b.size)
    return float(np.max(np.abs(lr) - log_bound - Z * se)), float(np.max(np.abs(lr)))


def _noise_neighbour(eps_noise, eps_claim, seed):
    """u + Z vs u' + Z with ‖u − u'‖ = 2, the largest change of one report (‖∇ℓ‖ ≤ 1), projected on u' − u."""
    rng = np.random.default_rng(seed)
    d = 4
    u = np.zeros(d)
    v = rng.standard_normal(d)
    v *= 2.0 / np.linalg.norm(v)
    unit = v / 2.0
    a = (u + L.ldp_noise(rng, eps_noise, d, N)) @ unit
    b = (v + L.ldp_noise(rng, eps_noise, d, N)) @ unit
    return _max_log_ratio_excess(a, b, eps_claim)


def test_ldp_noise_neighbour_ratio_within_e_eps():
    excess, max_lr = _noise_neighbour(1.0, 1.0, seed=10)
    assert excess <= 0
    assert max_lr > 0.6          # the tail bins approach the bound: not vacuous


def test_ldp_neighbour_check_flags_miscalibration():
    excess, _ = _noise_neighbour(2.5, 1.0, seed=11)   # noise for 2.5ε, claimed ε
    assert excess > 0


def test_oracle_reports_of_two_records_within_e_eps():
    """The full oracle (4.5) on two different records of one individual, same w: projected reports."""
    rng = np.random.default_rng(12)
    eps, lam = 1.0, 0.1
    w = np.array([-1.0 / lam, 0.0, 0.0])
    x1, y1 = np.array([[1.0, 0.0, 0.0]]), np.array([1.0])      # ∇ℓ ≈ −e₁
    x2, y2 = np.array([[0.0, 1.0, 0.0]]), np.array([-1.0])     # ∇ℓ = +0.5 e₂
    g1 = L.gdp_reports(w, np.repeat(x1, N, 0), np.repeat(y1, N), eps, lam, rng)
    g2 = L.gdp_reports(w, np.repeat(x2, N, 0), np.repeat(y2, N), eps, lam, rng)
    diff = g2.mean(0) - g1.mean(0)
    unit = diff / np.linalg.norm(diff)
    excess, _ = _max_log_ratio_excess(g1 @ unit, g2 @ unit, eps)
    assert excess <= 0
    bad1 = L.gdp_reports(w, np.repeat(x1, N, 0), np.repeat(y1, N), 4 * eps, lam, rng) @ unit
    bad2 = L.gdp_reports(w, np.repeat(x2, N, 0), np.repeat(y2, N), 4 * eps, lam, rng) @ unit
    assert _max_log_ratio_excess(bad1, bad2, eps)[0] > 0      # power: a 4ε oracle is flagged


# ---------------------------------------------------------------------------------------------------------
# Algorithms 1 and 2 (§4.4) against values derived from Thm 4.2.1 and Eq. (4.9) [DERIVED: ours, not in the thesis]


@pytest.mark.parametrize("d,eps_n,order,c_cn,c_nc", [
    (25, 1.0, "CN", 29.5, 17218.0), (25, 2.0, "NC", 118.0, 10326.0), (25, 3.0, "NC", 262.0, 6606.0),
    (54, 1.0, "CN", 26.4, 17750.0), (54, 2.0, "NC", None, None)])
def test_algorithm2_matches_spec_anchors(d, eps_n, order, c_cn, c_nc):
    gc, gn = L.gamma_sq_upper(d, 10.0), L.gamma_sq_upper(d, eps_n)
    ch = L.algorithm2(gc, gn, 0.1, 1e-3)
    assert ch.order == order
    assert ch.c1 == pytest.approx(1000.0)
    if c_cn is not None:
        assert ch.c_CN == pytest.approx(c_cn, rel=0.01)
        assert ch.c_NC == pytest.approx(c_nc, rel=0.01)
    assert ch.c2 == (ch.c_CN if order == "CN" else ch.c_NC)


def test_gamma_anchors_and_equal_noise_gives_one_over_lambda():
    assert L.gamma_sq_upper(25, 10.0) == pytest.approx(30.0)
    assert L.gamma_sq_upper(25, 1.0) == pytest.approx(2604.0)
    assert L.gamma_sq_upper(54, 10.0) == pytest.approx(122.8)
    ch = L.algorithm2(30.0, 30.0, 0.1, 1e-3)             # ε_N = ε_C = 10: both ≈ 1/λ
    assert ch.c_CN == pytest.approx(1000.0, rel=1e-3) and ch.c_NC == pytest.approx(1000.0, rel=1e-3)


def test_H_is_the_leading_term_of_B_and_continuous_at_the_singularity():
    lam, b1, g1, g2 = 1e-3, 0.1, 30.0, 654.0
    cs = np.array([10.0, 300.0, 499.0, 501.0, 2000.0])
    np.testing.assert_allclose(L.H(cs, g1, g2, b1, lam), 7.0 * L.bound_B(1 / lam, cs, g1, g2, b1, lam, T=7.0))
    h = L.H(np.array([500.0 - 1e-6, 500.0, 500.0 + 1e-6]), g1, g2, b1, lam)
    assert np.all(np.isfinite(h)) and np.ptp(h) < 1e-6 * h[1]
    with pytest.raises(ValueError):
        L.bound_B(400.0, 600.0, g1, g2, b1, lam)            # 2λc₁ ≤ 1 is outside Thm 4.4.1


def test_same_c_minimises_B_on_the_diagonal():
    lam, b1, g1, g2 = 1e-3, 0.1, 30.0, 654.0
    c = L.same_c(g1, g2, b1, lam)
    grid = np.geomspace(500.0001, 1e6, 20001)
    vals = L.bound_B(grid, grid, g1, g2, b1, lam)
    assert L.bound_B(c, c, g1, g2, b1, lam) <= vals.min() * (1 + 1e-6)
    assert c > 1 / (2 * lam)


def test_two_phase_steps_count_t_across_phases():
    eta = L.two_phase_steps(10.0, 2.0, 3, 6)
    np.testing.assert_allclose(eta, [10 / 1, 10 / 2, 10 / 3, 2 / 4, 2 / 5, 2 / 6])


# ---------------------------------------------------------------------------------------------------------
# engine


def _toy(n=60, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X @ rng.standard_normal(d) > 0, 1.0, -1.0)
    return X, y


def test_noiseless_engine_equals_the_psgd_engine():
    X, y = _toy()
    perm = np.random.default_rng(1).permutation(60)
    T = 60 // 5
    eta = 1.0 / np.sqrt(np.arange(1, T + 1))
    out = L.sgd_runs(X, y, perm[None, :], 5, eta[None, :], np.random.default_rng(2), l2=0.01, radius=3.0,
                     checkpoints=[0, T])
    ref = psgd(X, y, "logistic", 1, 5, StepSchedule.inv_sqrt(1.0), np.random.default_rng(0), l2=0.01, radius=3.0,
               order=perm)
    np.testing.assert_allclose(out["W"][0], ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out["trace"][0, -1], L.objective_many(ref, X, y, 0.01)[0])
    assert out["trace"][0, 0] == pytest.approx(math.log(2))


def _one_step_noise(mode, eps, b, d=6, reps=20_000, seed=0):
    """One update from w = 0 on zero rows (∇ℓ = 0) with η = 1: −W is exactly the added noise."""
    X = np.zeros((b, d))
    y = np.ones(b)
    seq = np.tile(np.arange(b), (reps, 1))
    kw = dict(epsilon=np.full(reps, eps)) if mode == "batch" else dict(epsilon=np.full((reps, b), eps))
    out = L.sgd_runs(X, y, seq, b, np.ones((reps, 1)), np.random.default_rng(seed), l2=0.0, radius=None,
                     noise=mode, **kw)
    return -out["W"]


def test_batch_noise_is_update_3_6():
    b, d, eps = 5, 6, 1.0
    Zb = _one_step_noise("batch", eps, b, d)
    r = np.linalg.norm(Zb, axis=1) * b                      # ‖Z_t‖ ~ Gamma(d, 2/ε)
    assert stats.kstest(r, stats.gamma(d, scale=2 / eps).cdf).pvalue > 1e-3
    assert stats.kstest(r, stats.gamma(d, scale=1 / eps).cdf).pvalue < 1e-6      # power
    np.testing.assert_allclose(Zb.mean(0), 0, atol=5 * (2 * d / eps / b) / math.sqrt(Zb.shape[0]))


def test_per_sample_noise_average_has_the_lower_bound_second_moment():
    b, d, eps = 10, 6, 2.0
    Zs = _one_step_noise("sample", eps, b, d)
    sq = np.einsum("ij,ij->i", Zs, Zs)
    target = L.gamma_sq_lower(d, eps, b)                    # E‖(1/b) Σ Z_i‖² = 4(d²+d)/(ε² b)
    assert abs(sq.mean() - target) <= Z * sq.std() / math.sqrt(sq.size)
    assert abs(sq.mean() - target * b) > Z * sq.std() / math.sqrt(sq.size)      # one shared Z would differ


def test_twins_are_noiseless_and_runs_are_independent():
    X, y = _toy(100)
    rng = np.random.default_rng(5)
    seq = np.stack([rng.permutation(100) for _ in range(3)])
    eta = np.tile(L.two_phase_steps(5.0, 5.0, 10, 20), (6, 1))
    out = L.sgd_runs(X, y, seq, 5, eta, rng, l2=0.1, radius=10.0, noise="sample", epsilon=np.full(seq.shape, 1.0),
                     noisy=np.r_[np.ones(3, bool), np.zeros(3, bool)], model_run=np.r_[np.arange(3), np.arange(3)])
    ref = L.sgd_runs(X, y, seq, 5, eta[:3], np.random.default_rng(0), l2=0.1, radius=10.0)
    np.testing.assert_allclose(out["W"][3:], ref["W"], rtol=1e-12)
    assert not np.allclose(out["W"][:3], ref["W"])
    assert np.all(np.linalg.norm(out["W"], axis=1) <= 10.0 + 1e-9)
