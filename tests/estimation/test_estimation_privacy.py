"""Privacy of the estimation estimators: sensitivities, calibration closed forms, statistical neighbour tests.

Neighbour tests run the real estimators on worst-case (or near worst-case) replace-one neighbours D, D′ and
compare empirical output probabilities. Two families of output events (post-processing, so the DP bound applies):

* the **sign-aligned orthant** {y : sign(vₖ)(yₖ − f(D′)ₖ) > |vₖ| for every noised entry k with vₖ ≠ 0},
  v = f(D) − f(D′). For i.i.d. Laplace(b) noise its probability is 2^{-m} under D and 2^{-m}·e^{−‖v‖₁/b} under
  D′: the log-ratio is exactly ‖v‖₁/b, so the check is tight (= ε) when ‖v‖₁ = Δ₁;
* **half-spaces along v** for Gaussian noise (the privacy loss depends on the projection only): the empirical
  hockey-stick divergence sup_S P̂(S) − e^ε Q̂(S) must stay ≤ δ (and reach δ for the analytic σ).

Every check has a mis-calibrated twin it must flag. Seeds are fixed: deterministic.
"""

import math

import numpy as np
import pytest

from dpbench.methods import estimation as est

N = 200_000
Z = 4.0


def orthant_log_ratio(out_d, out_dp, f_dp, v):
    """Empirical log P̂_D(S)/P̂_D′(S) of the sign-aligned orthant S and its standard error."""
    k = np.abs(v) > 1e-12
    s = np.sign(v[k])

    def inside(out):
        return np.all(s * (out[:, k] - f_dp[k]) > np.abs(v[k]), axis=1)

    p, q = inside(out_d).sum(), inside(out_dp).sum()
    return math.log(p / q), math.sqrt(1 / p + 1 / q)


def hockey_stick(out_d, out_dp, f_d, f_dp, eps):
    """sup over half-spaces ⟨y, u⟩ ≶ t (u = unit v) of P̂ − e^ε Q̂ − Z·se, both directions of the pair."""
    v = f_d - f_dp
    u = v / np.linalg.norm(v)
    x, y = np.sort(out_d @ u), np.sort(out_dp @ u)
    ts = np.quantile(np.concatenate([x, y]), np.linspace(0.001, 0.999, 300))
    pl, ql = np.searchsorted(x, ts) / len(x), np.searchsorted(y, ts) / len(y)
    worst = -np.inf
    for p, q in ((pl, ql), (1 - pl, 1 - ql), (ql, pl), (1 - ql, 1 - pl)):
        se = np.sqrt(p * (1 - p) / len(x) + math.exp(2 * eps) * q * (1 - q) / len(y))
        worst = max(worst, float(np.max(p - math.exp(eps) * q - Z * se)))
    return worst


def at_optimum(out_d, out_dp, f_d, f_dp, eps, sigma):
    """P̂(S*) − e^ε Q̂(S*) at the optimal half-space S* = {⟨y − f(D′), u⟩ > Δ/2 + εσ²/Δ}, and its standard error."""
    v = f_d - f_dp
    delta2 = np.linalg.norm(v)
    u = v / delta2
    t = f_dp @ u + delta2 / 2 + eps * sigma ** 2 / delta2
    p, q = np.mean(out_d @ u > t), np.mean(out_dp @ u > t)
    return p - math.exp(eps) * q, math.sqrt(p * (1 - p) / len(out_d) + math.exp(2 * eps) * q * (1 - q) / len(out_dp))


# --- neighbouring data sets ------------------------------------------------------------------------------


def mean_pair(n=5, d=3, B=1.0, seed=0):
    """Replace-one pair whose clipped means differ by 2B/n in every coordinate (‖v‖₁ = Δ₁, ‖v‖₂ = Δ₂)."""
    rest = np.random.default_rng(seed).uniform(-0.5, 0.5, (n - 1, d))
    return np.vstack([rest, np.full(d, 5 * B)]), np.vstack([rest, np.full(d, -5 * B)])


def cov_pair(kind, n=4, c=1.0, seed=0):
    """Replace-one pair for the truncated covariance (d = 2): ``l2`` reaches Δ₂ (x = c·e₁, y = c·e₂);
    ``l1`` maximises the upper-triangle ℓ1 distance over the ball (√5·c²/n; the bound Δ₁ is 3c²/n)."""
    rest = np.random.default_rng(seed).uniform(-0.3, 0.3, (n - 1, 2))
    if kind == "l2":
        x, y = np.array([3 * c, 0.0]), np.array([0.0, 3 * c])  # projected onto the ball: c·e₁, c·e₂
    else:
        a = 0.5 * math.atan2(0.5, 1.0)
        b = a + math.pi / 2
        x, y = 3 * c * np.array([math.cos(a), math.sin(a)]), 3 * c * np.array([math.cos(b), math.sin(b)])
    return np.vstack([rest, x]), np.vstack([rest, y])


def upper(m):
    return m[np.triu_indices(m.shape[-1])]


# --- closed forms ----------------------------------------------------------------------------------------


def test_sensitivity_and_scale_closed_forms():
    assert est.mean_sensitivity(100, 16, 2.0) == pytest.approx((2 * 2 * 16 / 100, 2 * 2 * 4 / 100))
    assert est.covariance_sensitivity(10, 3, 2.0) == pytest.approx((4 * 4 / 10, math.sqrt(2) * 4 / 10))
    lap = est.mean_calibration("laplace", 100, 16, 2.0, 0.5, 1e-5)
    assert (lap.kind, lap.norm, lap.delta) == ("laplace", "l1", 0.0)
    assert lap.scale == pytest.approx(0.64 / 0.5)
    classic = est.mean_calibration("gaussian_classic", 100, 16, 2.0, 0.5, 1e-5)
    assert classic.scale == pytest.approx(0.16 * math.sqrt(2 * math.log(1.25e5)) / 0.5)
    assert est.calibrate("gaussian_classic", 1.0, 1.0, 0.5, 1e-5).scale == pytest.approx(2 * 4.8448, abs=2e-4)
    analytic = est.mean_calibration("gaussian_analytic", 100, 16, 2.0, 0.5, 1e-5)
    assert analytic.scale < classic.scale  # the analytic σ is the smallest valid one
    assert est.ldp_scale(2.0, 0.5) == 8.0  # 2B/ε, not the notes' B/ε (lecture 19, §2: an erratum)
    for d in (4, 64, 1000):
        assert est.laplace_gaussian_rms_ratio(d, 0.5, 1e-5) == pytest.approx(math.sqrt(d / math.log(1.25e5)))
    assert est.noise_rms_vector(lap, 16) == pytest.approx(math.sqrt(32) * lap.scale)
    assert est.noise_rms_symmetric(classic, 5) == pytest.approx(5 * classic.scale)
    assert est.noise_rms_ldp(2.0, 0.5, 100) == pytest.approx(math.sqrt(2 / 100) * 8.0)


def test_noise_rms_closed_forms_match_monte_carlo():
    rng = np.random.default_rng(3)
    for mech in ("laplace", "gaussian_analytic"):
        c = est.covariance_calibration(mech, 50, 6, 2.0, 0.5, 1e-3)
        z = est.release_symmetric(np.zeros((6, 6)), c, rng, size=20_000)
        assert np.allclose(z, np.swapaxes(z, -1, -2))
        rms = math.sqrt(np.mean(np.sum(z ** 2, axis=(-1, -2))))
        assert rms == pytest.approx(est.noise_rms_symmetric(c, 6), rel=0.02)


def test_sensitivity_bounds_hold_over_random_pairs_and_extremal_pairs_attain_them():
    rng = np.random.default_rng(4)
    d, n, c = 5, 1, 1.0
    l1, l2 = est.covariance_sensitivity(n, d, c)
    pts = est.project_rows(rng.standard_normal((4000, d)) * rng.uniform(0.2, 3, (4000, 1)), c)
    flat = np.stack([np.ones(d), np.r_[np.ones(3), -np.ones(2)]]) * c / math.sqrt(d)
    pts = np.vstack([pts, flat, c * np.eye(d)])
    mats = np.einsum("ni,nj->nij", pts, pts)
    iu = np.triu_indices(d)
    tri = mats[:, iu[0], iu[1]]
    i, j = rng.integers(0, len(pts), (2, 20_000))
    diff = tri[i] - tri[j]
    assert np.abs(diff).sum(1).max() <= l1 + 1e-12 and np.linalg.norm(diff, axis=1).max() <= l2 + 1e-12
    e12 = upper(np.outer(c * np.eye(d)[0], c * np.eye(d)[0]) - np.outer(c * np.eye(d)[1], c * np.eye(d)[1]))
    assert np.linalg.norm(e12) == pytest.approx(l2)  # Δ₂ is attained
    assert np.abs(diff).sum(1).max() >= l1 / 2  # Δ₁ is tight within a factor 2
    # clipped mean: the all-(+B) vs all-(−B) rows attain both sensitivities
    a, b = mean_pair(n=7, d=4, B=1.5)
    v = est.clipped_mean(a, 1.5) - est.clipped_mean(b, 1.5)
    assert (np.abs(v).sum(), np.linalg.norm(v)) == pytest.approx(est.mean_sensitivity(7, 4, 1.5))


@pytest.mark.parametrize("call, match", [
    (lambda: est.calibrate("gaussian_classic", 1.0, 1.0, 1.0, 1e-5), "epsilon must be < 1"),
    (lambda: est.calibrate("gaussian_analytic", 1.0, 1.0, 1.0, 0.0), "delta must be in"),
    (lambda: est.calibrate("laplace", 1.0, 1.0, 0.0), "epsilon must be > 0"),
    (lambda: est.calibrate("exponential", 1.0, 1.0, 1.0), "mechanism must be one of"),
    (lambda: est.clipped_mean(np.array([[1.0, np.nan]]), 1.0), "finite"),
    (lambda: est.clipped_mean(np.ones((3, 2)), -1.0), "clip must be > 0"),
    (lambda: est.clipped_mean(np.ones(3), 1.0), "shape"),
    (lambda: est.truncated_covariance(np.ones((3, 2)), 0.0), "radius must be > 0"),
    (lambda: est.ldp_release(np.array([np.inf]), 1.0, 1.0, np.random.default_rng()), "finite"),
    (lambda: est.mean_sensitivity(0, 3, 1.0), "n must be an integer"),
])
def test_bad_input_raises_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- neighbour tests -------------------------------------------------------------------------------------


def _mean_laplace(calib_scale_norm, seed):
    eps, B = 1.0, 1.0
    a, b = mean_pair(B=B)
    fa, fb = est.clipped_mean(a, B), est.clipped_mean(b, B)
    rng = np.random.default_rng(seed)
    if calib_scale_norm == "l1":
        out_a = est.private_mean(a, B, eps, 0.0, "laplace", rng, size=N)
        out_b = est.private_mean(b, B, eps, 0.0, "laplace", rng, size=N)
    else:  # a careless implementation: Laplace scaled to the ℓ2 sensitivity
        l1, l2 = est.mean_sensitivity(*a.shape, B)
        wrong = est.Calibration("laplace", "laplace", "l2", l2, l2 / eps, eps, 0.0)
        out_a, out_b = est.release(fa, wrong, rng, size=N), est.release(fb, wrong, rng, size=N)
    return orthant_log_ratio(out_a, out_b, fb, fa - fb), eps


def test_mean_laplace_is_eps_dp_and_tight():
    (lr, se), eps = _mean_laplace("l1", seed=1)
    assert lr <= eps + Z * se
    assert abs(lr - eps) <= Z * se  # the all-(±B) pair attains Δ₁: the orthant reaches e^ε


def test_mean_laplace_check_flags_l2_calibration():
    (lr, se), eps = _mean_laplace("l2", seed=2)
    assert lr > eps + Z * se  # √d·ε in truth


@pytest.mark.parametrize("mechanism, eps, delta", [("gaussian_classic", 0.5, 0.05), ("gaussian_analytic", 0.5, 0.05),
                                                   ("gaussian_analytic", 2.0, 0.01)])
def test_mean_gaussian_hockey_stick_within_delta(mechanism, eps, delta):
    B = 1.0
    a, b = mean_pair(d=4, B=B, seed=5)
    rng = np.random.default_rng(6)
    out_a = est.private_mean(a, B, eps, delta, mechanism, rng, size=N)
    out_b = est.private_mean(b, B, eps, delta, mechanism, rng, size=N)
    fa, fb = est.clipped_mean(a, B), est.clipped_mean(b, B)
    assert hockey_stick(out_a, out_b, fa, fb, eps) <= delta
    if mechanism == "gaussian_analytic":  # tight: the optimal half-space reaches δ up to sampling error
        sigma = est.mean_calibration(mechanism, *a.shape, B, eps, delta).scale
        value, se = at_optimum(out_a, out_b, fa, fb, eps, sigma)
        assert abs(value - delta) <= Z * se


def test_mean_gaussian_check_flags_miscalibration():
    eps, delta, B = 0.5, 0.05, 1.0
    a, b = mean_pair(d=4, B=B, seed=5)
    fa, fb = est.clipped_mean(a, B), est.clipped_mean(b, B)
    good = est.mean_calibration("gaussian_analytic", *a.shape, B, eps, delta)
    wrong = est.Calibration(good.mechanism, good.kind, good.norm, good.sensitivity, good.scale / 1.5, eps, delta)
    rng = np.random.default_rng(7)
    assert hockey_stick(est.release(fa, wrong, rng, size=N), est.release(fb, wrong, rng, size=N), fa, fb, eps) > delta


def _cov_laplace(correct, seed):
    eps, c = 1.0, 1.0
    a, b = cov_pair("l1", c=c)
    fa, fb = upper(est.truncated_covariance(a, c)), upper(est.truncated_covariance(b, c))
    rng = np.random.default_rng(seed)
    if correct:
        out_a = est.private_covariance(a, c, eps, 0.0, "laplace", rng, size=N)
        out_b = est.private_covariance(b, c, eps, 0.0, "laplace", rng, size=N)
    else:  # Laplace scaled to the ℓ2 (Frobenius) sensitivity
        l1, l2 = est.covariance_sensitivity(*a.shape, c)
        wrong = est.Calibration("laplace", "laplace", "l2", l2, l2 / eps, eps, 0.0)
        out_a = est.release_symmetric(est.truncated_covariance(a, c), wrong, rng, size=N)
        out_b = est.release_symmetric(est.truncated_covariance(b, c), wrong, rng, size=N)
    iu = np.triu_indices(2)
    return orthant_log_ratio(out_a[:, iu[0], iu[1]], out_b[:, iu[0], iu[1]], fb, fa - fb), fa - fb, eps


def test_covariance_laplace_is_eps_dp():
    (lr, se), v, eps = _cov_laplace(True, seed=8)
    l1 = est.covariance_sensitivity(4, 2, 1.0)[0]
    assert np.abs(v).sum() == pytest.approx(math.sqrt(5) / 4)  # the ℓ1-extremal pair for d = 2
    assert lr <= eps + Z * se
    assert abs(lr - eps * np.abs(v).sum() / l1) <= Z * se  # the orthant ratio is exactly ‖v‖₁/b


def test_covariance_laplace_check_flags_frobenius_calibration():
    (lr, se), _, eps = _cov_laplace(False, seed=9)
    assert lr > eps + Z * se


@pytest.mark.parametrize("mechanism", ["gaussian_classic", "gaussian_analytic"])
def test_covariance_gaussian_hockey_stick_within_delta(mechanism):
    eps, delta, c = 0.5, 0.05, 1.0
    a, b = cov_pair("l2", c=c)
    fa, fb = upper(est.truncated_covariance(a, c)), upper(est.truncated_covariance(b, c))
    assert np.linalg.norm(fa - fb) == pytest.approx(est.covariance_sensitivity(4, 2, c)[1])  # Δ₂ attained
    rng = np.random.default_rng(10)
    iu = np.triu_indices(2)
    out_a = est.private_covariance(a, c, eps, delta, mechanism, rng, size=N)[:, iu[0], iu[1]]
    out_b = est.private_covariance(b, c, eps, delta, mechanism, rng, size=N)[:, iu[0], iu[1]]
    assert hockey_stick(out_a, out_b, fa, fb, eps) <= delta
    if mechanism == "gaussian_classic":  # conservative (not tight): no mis-calibrated twin to flag at σ/1.5
        return
    wrong = est.covariance_calibration(mechanism, 4, 2, c, eps, delta)
    wrong = est.Calibration(wrong.mechanism, wrong.kind, wrong.norm, wrong.sensitivity, wrong.scale / 1.5, eps, delta)
    out_a = est.release_symmetric(est.truncated_covariance(a, c), wrong, rng, size=N)[:, iu[0], iu[1]]
    out_b = est.release_symmetric(est.truncated_covariance(b, c), wrong, rng, size=N)[:, iu[0], iu[1]]
    assert hockey_stick(out_a, out_b, fa, fb, eps) > delta


def test_ldp_report_is_eps_ldp_and_the_notes_scale_is_2eps():
    eps, B = 1.0, 2.0
    rng = np.random.default_rng(11)
    hi, lo = est.ldp_release(np.full(N, 10.0), B, eps, rng), est.ldp_release(np.full(N, -10.0), B, eps, rng)
    # extreme user values: outputs B + Lap(2B/ε) vs −B + Lap(2B/ε); the event {y > B} has ratio exactly e^ε
    (lr, se) = orthant_log_ratio(hi[:, None], lo[:, None], np.array([-B]), np.array([2 * B]))
    assert lr <= eps + Z * se and abs(lr - eps) <= Z * se
    edges = np.r_[-np.inf, np.linspace(-6 * B, 6 * B, 25), np.inf]
    ca, cb = np.histogram(hi, edges)[0] + 0.5, np.histogram(lo, edges)[0] + 0.5
    ok = (ca > 200) & (cb > 200)
    assert np.all(np.abs(np.log(ca[ok] / cb[ok])) <= eps + Z * np.sqrt(1 / ca[ok] + 1 / cb[ok]))
    # the notes' Lap(B/ε) (lecture 19, §2): 2ε-LDP, flagged
    notes_hi, notes_lo = B + rng.laplace(0, B / eps, N), -B + rng.laplace(0, B / eps, N)
    (lr, se) = orthant_log_ratio(notes_hi[:, None], notes_lo[:, None], np.array([-B]), np.array([2 * B]))
    assert lr > eps + Z * se and abs(lr - 2 * eps) <= Z * se


def test_central_1d_mean_is_eps_dp_and_ldp_mean_is_unbiased_for_clipped_data():
    eps, B, n = 1.0, 1.0, 5
    a, b = mean_pair(n=n, d=1, B=B)
    rng = np.random.default_rng(12)
    out_a = est.central_mean_1d(a[:, 0], B, eps, rng, size=N)
    out_b = est.central_mean_1d(b[:, 0], B, eps, rng, size=N)
    fa, fb = est.clipped_mean(a, B), est.clipped_mean(b, B)
    lr, se = orthant_log_ratio(out_a[:, None], out_b[:, None], fb, fa - fb)
    assert lr <= eps + Z * se and abs(lr - eps) <= Z * se
    x = np.random.default_rng(13).uniform(-B, B, 1000)
    m = est.ldp_mean(x, B, eps, rng, size=2000)
    assert abs(m.mean() - x.mean()) <= Z * m.std() / math.sqrt(2000)
    assert m.std() == pytest.approx(est.noise_rms_ldp(B, eps, 1000), rel=0.05)
