"""wu2016 ch. 4 mechanisms: sensitivity formulas, the exact constrained minimiser's empirical sensitivity,
Alg 7's exponential-mechanism selection, the functional mechanism's coefficient sensitivities, objective
perturbation's calibration, and statistical neighbour tests of every randomised mechanism at its claimed ε."""

import math

import numpy as np
import pytest
from scipy.stats import chisquare

from dpbench.methods import functional_mechanism as fm
from dpbench.methods import objective_perturbation as objp
from dpbench.methods import output_perturbation as op


def unit_rows(rng, n, d, shift=0.3):
    X = rng.standard_normal((n, d)) + shift
    return X / np.linalg.norm(X, axis=1, keepdims=True)


# ---------------------------------------------------------------------------------------------------------
# sensitivity formulas
# ---------------------------------------------------------------------------------------------------------


def test_delta_formulas():
    assert op.lipschitz("squared", 1.0) == 4.0 and op.lipschitz("squared", 0.25) == 2.5
    assert op.lipschitz("logistic", None) == 1.0 and op.curvature("squared") == 2.0 and op.curvature("logistic") == 0.25
    assert op.sensitivity_alg6(4.0, 0.1, 1.0, 1000) == pytest.approx(4 * (4 + 0.1) / (0.1 * 1000))
    assert op.sensitivity_alg5(1.0, 0.5, 200) == pytest.approx(4 / 100)
    assert op.sensitivity_tight(4.0, 0.1, 1000) == pytest.approx(0.08)
    assert op.op_sensitivity("squared", 0.2, 2.0, 500) == pytest.approx(4 * (6 + 0.4) / (0.2 * 500))
    assert op.op_sensitivity("logistic", 0.2, None, 500, "tight") == pytest.approx(2 / 100)
    assert op.data_independent_parameters(14, 2476, 0.1) == (1.0, pytest.approx(math.sqrt(14 / 247.6)))
    g = op.oracle_lambda_grid(14, 2476, 10)
    assert g[0] == pytest.approx(math.sqrt(14 / 247600)) and g[-1] == pytest.approx(math.sqrt(14 / 247.6))
    assert np.allclose(np.diff(g), np.diff(g)[0])
    t = op.tuning_lambda_grid(14, 99, 8, 2.0, 100.0)
    assert len(t) == 8 and np.allclose(t[1:] / t[:-1], 2.0) and t[0] == pytest.approx(math.sqrt(14 / 9900))
    with pytest.raises(ValueError, match="radius R"):
        op.lipschitz("squared", None)
    with pytest.raises(ValueError, match="lam"):
        op.sensitivity_alg6(1.0, 0.0, 1.0, 10)
    with pytest.raises(ValueError, match="n must be"):
        op.sensitivity_tight(1.0, 1.0, 0)


def test_squared_loss_gradient_reaches_rho_on_the_ball():
    """‖∇ℓ‖ ≤ 2(1+R) over ‖w‖ ≤ R, ‖x‖ ≤ 1, |y| ≤ 1, attained at w = −R·y·x."""
    rng = np.random.default_rng(0)
    R = 0.7
    X = unit_rows(rng, 5000, 4, 0.0)
    y = rng.choice([-1.0, 1.0], 5000)
    W = rng.standard_normal((5000, 4))
    W *= R * rng.random((5000, 1)) ** 0.25 / np.linalg.norm(W, axis=1, keepdims=True)
    g = np.abs(2 * (y - np.sum(W * X, 1)))          # ‖∇ℓ‖ = 2|y − ⟨w,x⟩|·‖x‖
    assert g.max() <= op.lipschitz("squared", R) + 1e-12
    worst = 2 * abs(1.0 - (-R))
    assert worst == pytest.approx(op.lipschitz("squared", R))


def test_bad_inputs_raise_clear_errors():
    rng = np.random.default_rng(0)
    X = unit_rows(rng, 20, 3)
    with pytest.raises(ValueError, match="‖x‖ ≤ 1"):
        op.output_perturbation("squared", 2 * X, np.zeros(20), 0.1, 1.0, 1.0, rng)
    with pytest.raises(ValueError, match=r"\|y\| ≤ 1"):
        op.output_perturbation("squared", X, np.full(20, 2.0), 0.1, 1.0, 1.0, rng)
    with pytest.raises(ValueError, match="labels"):
        op.output_perturbation("logistic", X, np.zeros(20), 0.1, 1.0, 1.0, rng)
    with pytest.raises(ValueError, match="epsilon"):
        op.output_perturbation("squared", X, np.zeros(20), 0.1, 1.0, 0.0, rng)
    with pytest.raises(ValueError, match="Lipschitz"):
        op.output_perturbation_strongly_convex(X, np.zeros(20), 0.1, 1.0, rng, loss="squared")
    with pytest.raises(ValueError, match="loss"):
        op.erm_ball("hinge", X, np.zeros(20), 0.1, 1.0)
    with pytest.raises(ValueError, match="domain"):
        fm.fm_linear_sensitivity(3, "ball")
    with pytest.raises(ValueError, match="labels in"):
        fm.functional_mechanism_logistic(X, np.full(20, -1.0), 1.0, rng)


# ---------------------------------------------------------------------------------------------------------
# the exact constrained minimiser and its sensitivity
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_constrained_minimiser_satisfies_kkt(loss):
    rng = np.random.default_rng(1)
    n, d = 300, 6
    X = unit_rows(rng, n, d)
    y = np.sign(X @ rng.standard_normal(d)) if loss == "logistic" else np.clip(X @ rng.standard_normal(d), -1, 1)
    for lam, R in ((1e-3, 0.3), (0.5, 5.0), (0.05, 1.0)):
        w = op.erm_ball(loss, X, y, lam, R)
        s = X @ w
        grad = (-(2 / n) * X.T @ (y - s) if loss == "squared" else -(X.T @ (y / (1 + np.exp(y * s)))) / n) + lam * w
        nw = np.linalg.norm(w)
        assert nw <= R * (1 + 1e-12)
        if nw < R * (1 - 1e-9):                       # interior: gradient zero
            assert np.linalg.norm(grad) < 1e-8
        else:                                         # boundary: −∇F = μ w with μ ≥ 0
            mu = -(grad @ w) / nw ** 2
            assert mu >= -1e-10 and np.linalg.norm(grad + mu * w) < 1e-8


@pytest.mark.parametrize("loss,lam,R", [("squared", 0.05, 1.0), ("squared", 0.5, 0.25), ("logistic", 0.02, 1.0),
                                        ("logistic", 0.3, 2.0)])
def test_empirical_sensitivity_below_alg6_bound(loss, lam, R):
    """max over neighbouring datasets (replace-one, adversarial replacements) of ‖w(S) − w(S′)‖ stays below the
    tight 2ρ/(λn) and hence below Alg 6's 4(ρ+λR)/(λn); and it is a sizeable fraction of the tight bound (the
    check is not vacuous)."""
    rng = np.random.default_rng(2)
    n, d = 60, 3
    X = unit_rows(rng, n, d)
    y = np.sign(X @ rng.standard_normal(d)) if loss == "logistic" else np.clip(0.8 * X @ rng.standard_normal(d), -1, 1)
    w = op.erm_ball(loss, X, y, lam, R)
    worst = 0.0
    for i in range(0, n, 6):
        cands = [(-X[i], -y[i]), (X[i], -y[i])] + [(v / np.linalg.norm(v), s) for v, s in
                                                    zip(rng.standard_normal((4, d)), rng.choice([-1.0, 1.0], 4))]
        for xr, yr in cands:
            X2, y2 = X.copy(), y.copy()
            X2[i], y2[i] = xr, yr
            worst = max(worst, np.linalg.norm(w - op.erm_ball(loss, X2, y2, lam, R)))
    rho = op.lipschitz(loss, R)
    tight, alg6 = op.sensitivity_tight(rho, lam, n), op.sensitivity_alg6(rho, lam, R, n)
    assert worst <= tight * (1 + 1e-6) <= alg6
    assert worst > 0.02 * tight


# ---------------------------------------------------------------------------------------------------------
# Alg 7: exponential-mechanism selection
# ---------------------------------------------------------------------------------------------------------


def _fixed_models(models):
    it = iter(models)
    return lambda Xc, yc, R, lam, e, g: next(it)


@pytest.mark.parametrize("form", ["thesis", "rigorous"])
def test_alg7_samples_in_proportion_to_exp_minus_loss(form):
    """The chosen index follows p_i ∝ exp(−L_{S′}(w_i)·ε/(2Δu)) (Δu = R² as printed, or (1+R)²/|S′|):
    closed-form probabilities and a chi-square test of 6000 selections."""
    rng = np.random.default_rng(3)
    d, radii, lams = 3, [0.5, 1.0], [0.1, 0.2, 0.4]
    Xv = unit_rows(rng, 40, d)
    yv = np.clip(Xv @ np.array([0.5, -0.3, 0.2]), -1, 1)
    models = [np.array([0.5, -0.3, 0.2]) * s for s in (1.0, 0.6, 0.2, -0.2, 1.4, 0.0)]
    chunks = [(Xv[:2], yv[:2])] * 6
    eps = 6.0 if form == "thesis" else 0.5
    res = op.private_tuning("squared", chunks, (Xv, yv), radii, lams, eps, rng, _fixed_models(models), form)
    L = op.clipped_mean_loss("squared", np.array(models), Xv, yv, 1.0)
    du = 1.0 if form == "thesis" else 4.0 / 40
    p = np.exp(-L * eps / (2 * du))
    p /= p.sum()
    np.testing.assert_allclose(res.probabilities, p, rtol=1e-12)
    assert res.utility_sensitivity == pytest.approx(du)
    assert p.max() / p.min() > 1.3                       # the selection is far from uniform: the test has power
    counts = np.bincount([op.private_tuning("squared", chunks, (Xv, yv), radii, lams, eps, rng,
                                            _fixed_models(models), form).index for _ in range(6000)], minlength=6)
    assert chisquare(counts, 6000 * p).pvalue > 1e-3
    wrong = np.exp(-L * eps / du)
    wrong /= wrong.sum()
    assert chisquare(counts, 6000 * wrong).pvalue < 1e-6  # a factor-2 mis-calibration is detected


def test_alg7_selection_is_eps_dp_for_a_changed_validation_record():
    """Worst case over replacing one validation record: max_i p_i(S′)/p_i(S″) ≤ e^ε (rigorous Δu)."""
    rng = np.random.default_rng(4)
    d, eps = 3, 0.5
    Xv = unit_rows(rng, 30, d)
    yv = np.clip(0.7 * Xv @ np.array([0.5, -0.3, 0.2]), -1, 1)
    models = [rng.standard_normal(d) * s for s in (0.2, 0.5, 1.0, 3.0)]
    chunks = [(Xv[:2], yv[:2])] * 4
    run = lambda Xs, ys: op.private_tuning("squared", chunks, (Xs, ys), [1.0, 2.0], [0.1, 0.2], eps, rng,  # noqa: E731
                                           _fixed_models(models), "rigorous").probabilities
    p = run(Xv, yv)
    worst = 0.0
    for x2, y2 in [(-Xv[0], -yv[0]), (Xv[0], -1.0), (models[3] / np.linalg.norm(models[3]), -1.0)]:
        X2, Y2 = Xv.copy(), yv.copy()
        X2[0], Y2[0] = x2, y2
        q = run(X2, Y2)
        worst = max(worst, np.max(np.abs(np.log(p) - np.log(q))))
    assert 0 < worst <= eps + 1e-12


# ---------------------------------------------------------------------------------------------------------
# functional mechanism: coefficient sensitivities and the repair of indefinite quadratics
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 3, 14])
def test_fm_coefficient_sensitivities_match_closed_forms(d):
    rng = np.random.default_rng(5)
    ones = np.ones(d)
    # linear regression, box domain: the extreme record x = 1, y = −1 attains Σ|λ_φt| = 2d + d²
    assert np.abs(fm.fm_linear_record_coefficients(ones, -1.0)).sum() == pytest.approx(2 * d + d * d)
    assert fm.fm_linear_sensitivity(d, "box") == pytest.approx(2 * (2 * d + d * d))
    assert np.abs(fm.fm_linear_record_coefficients(ones, -1.0, constant=True)).sum() == pytest.approx((1 + d) ** 2)
    assert fm.fm_linear_sensitivity(d, "box", paper=True) == pytest.approx(2 * (d + 1) ** 2)
    # sphere domain: x = 1/√d attains ‖x‖₁ = √d
    s = ones / math.sqrt(d)
    assert np.abs(fm.fm_linear_record_coefficients(s, 1.0)).sum() == pytest.approx(2 * math.sqrt(d) + d)
    assert fm.fm_linear_sensitivity(d, "sphere") == pytest.approx(2 * (2 * math.sqrt(d) + d))
    # logistic regression: Zhang et al.'s d²/4 + d, attained at x = 1, y = 0
    assert np.abs(fm.fm_logistic_record_coefficients(ones, 0.0)).sum() == pytest.approx(d / 2 + d * d / 8)
    assert fm.fm_logistic_sensitivity(d, "box") == pytest.approx(d * d / 4 + d)
    assert fm.fm_logistic_sensitivity(d, "sphere") == pytest.approx(d / 4 + math.sqrt(d))
    # random records never exceed the bounds; pairwise L1 differences stay ≤ Δ
    Xb = rng.uniform(-1, 1, (200, d))
    yb = rng.uniform(-1, 1, 200)
    lin = np.array([fm.fm_linear_record_coefficients(x, t) for x, t in zip(Xb, yb)])
    assert np.abs(lin).sum(1).max() <= fm.fm_linear_sensitivity(d, "box") / 2 + 1e-9
    diffs = np.abs(lin[:, None, :] - lin[None, :, :]).sum(-1)
    assert diffs.max() <= fm.fm_linear_sensitivity(d, "box") + 1e-9
    Xs = unit_rows(rng, 200, d, 0.0)
    lins = np.array([fm.fm_linear_record_coefficients(x, t) for x, t in zip(Xs, yb)])
    assert np.abs(lins).sum(1).max() <= fm.fm_linear_sensitivity(d, "sphere") / 2 + 1e-9
    log = np.array([fm.fm_logistic_record_coefficients(x, t) for x, t in zip(Xb, rng.integers(0, 2, 200))])
    assert np.abs(log).sum(1).max() <= fm.fm_logistic_sensitivity(d, "box") / 2 + 1e-9


def test_fm_repairs_an_indefinite_noisy_quadratic():
    M = np.array([[1.0, 0.0], [0.0, -2.0]])
    c = np.array([-2.0, 1.0])
    w, kept = fm.solve_noisy_quadratic(M, c, ridge=0.0, trim=1e-8)
    assert kept == 1 and np.allclose(w, [1.0, 0.0])          # the negative direction is trimmed
    w2, kept2 = fm.solve_noisy_quadratic(M, c, ridge=3.0, trim=1e-8)
    assert kept2 == 2 and np.allclose(w2, [-0.5 * -2 / 4, -0.5 * 1 / 1])
    rng = np.random.default_rng(6)
    X = unit_rows(rng, 50, 4)
    for e in (0.01, 1.0):
        r = fm.functional_mechanism_linear(X, np.clip(X[:, 0], -1, 1), e, rng, ridge=0.0)
        assert np.isfinite(r.w).all() and 1 <= r.kept_dims <= 4


# ---------------------------------------------------------------------------------------------------------
# objective perturbation calibration
# ---------------------------------------------------------------------------------------------------------


def test_objective_perturbation_calibration():
    eps_p, extra = objp.objective_perturbation_calibration(1.0, 1000, 0.1, 2.0)
    assert extra == 0.0 and eps_p == pytest.approx(1.0 - math.log(1 + 4 / 100 + 4 / 1e4))
    eps_p, extra = objp.objective_perturbation_calibration(0.1, 100, 0.01, 2.0)   # ε′ ≤ 0 branch
    assert eps_p == 0.05 and extra == pytest.approx(2.0 / (100 * math.expm1(0.025)) - 0.01)
    rng = np.random.default_rng(7)
    X = unit_rows(rng, 100, 3)
    r = objp.objective_perturbation("squared", X, np.clip(X[:, 0], -1, 1), 0.01, 1.0, 0.1, rng)
    assert np.linalg.norm(r.w) <= 1.0 + 1e-12 and r.extra_lam > 0
    assert r.noise_scale == pytest.approx(2 * op.lipschitz("squared", 1.0) / r.epsilon_prime)


# ---------------------------------------------------------------------------------------------------------
# statistical neighbour tests at the claimed ε (1-d problems; histogram of the released scalar)
# ---------------------------------------------------------------------------------------------------------


def max_log_ratio_excess(a, b, bins=30, log_bound=0.0, z=4.0):
    edges = np.quantile(np.concatenate([a, b]), np.linspace(0, 1, bins + 1))
    edges[0], edges[-1] = -np.inf, np.inf
    ca, cb = np.histogram(a, edges)[0] + 0.5, np.histogram(b, edges)[0] + 0.5
    lr = np.log(ca / len(a)) - np.log(cb / len(b))
    se = np.sqrt(1 / ca - 1 / len(a) + 1 / cb - 1 / len(b))
    return float(np.max(np.abs(lr) - log_bound - z * se)), float(np.max(np.abs(lr)))


def _neighbours_1d(n=8):
    """x = 1 everywhere; the replaced record's label flips from −1 to +1 (Σ x y moves by 2, the most it can)."""
    X = np.ones((n, 1))
    y = np.linspace(-0.6, 0.6, n)
    y[0] = -1.0
    y2 = y.copy()
    y2[0] = 1.0
    return (X, y), (X.copy(), y2)


def _op_draws(data, eps, lam, R, N, rng, factor=1.0):
    X, y = data
    wb = op.erm_ball("squared", X, y, lam, R)
    delta = op.sensitivity_tight(op.lipschitz("squared", R), lam, len(y))   # the tight bound: a sharper test
    from dpbench.privacy.mechanisms import sample_l2_laplace
    return wb[0] + sample_l2_laplace(rng, factor * eps / delta, 1, N)[:, 0]


@pytest.mark.parametrize("factor,ok", [(1.0, True), (5.0, False)])
def test_output_perturbation_neighbour_ratio(factor, ok):
    rng = np.random.default_rng(8)
    S, S2 = _neighbours_1d()
    eps = 1.0
    a, b = _op_draws(S, eps, 10.0, 1.0, 100_000, rng, factor), _op_draws(S2, eps, 10.0, 1.0, 100_000, rng, factor)
    excess, max_lr = max_log_ratio_excess(a, b, log_bound=eps)
    assert (excess <= 0) == ok
    if ok:
        assert max_lr > 0.25                      # |Δw̄| = 0.42·Δ here: the check is not vacuous
        # the released output of the library function uses Alg 6's (larger) Δ: also within ε
        X, y = S
        w = np.array([op.output_perturbation("squared", X, y, 1.0, 1.0, eps, rng).w[0] for _ in range(2000)])
        assert np.isfinite(w).all()


def _objp_draws(data, eps, lam, R, N, seed):
    rng = np.random.default_rng(seed)
    X, y = data
    return np.array([objp.objective_perturbation("squared", X, y, lam, R, eps, rng).w[0] for _ in range(N)])


def test_objective_perturbation_neighbour_ratio():
    S, S2 = _neighbours_1d()
    eps = 1.0
    a, b = _objp_draws(S, eps, 0.5, 1.0, 8_000, 9), _objp_draws(S2, eps, 0.5, 1.0, 8_000, 10)
    excess, max_lr = max_log_ratio_excess(a, b, bins=20, log_bound=eps)
    assert excess <= 0 and max_lr > 0.1


def test_functional_mechanism_neighbour_ratio():
    """FM releases (M̃, c̃); for d = 1 the output w = −c̃/(2(M̃ + ridge)) is post-processing, so its histogram
    ratio must respect ε; with the noise scale divided by 3 the check must fire."""
    S, S2 = _neighbours_1d(4)
    eps = 1.0
    out = []
    for data, seed in ((S, 11), (S2, 12)):
        rng = np.random.default_rng(seed)
        X, y = data
        out.append(np.array([fm.functional_mechanism_linear(X, y, eps, rng, ridge=0.5).w[0] for _ in range(20_000)]))
    excess, max_lr = max_log_ratio_excess(out[0], out[1], bins=20, log_bound=eps)
    assert excess <= 0 and max_lr > 0.05
    rng = np.random.default_rng(13)
    bad = []
    for data in (S, S2):                           # mis-calibrated: 3ε worth of noise on the coefficients
        X, y = data
        bad.append(np.array([fm.functional_mechanism_linear(X, y, 3 * eps, rng, ridge=0.5 / 3).w[0]
                             for _ in range(20_000)]))
    assert max_log_ratio_excess(bad[0], bad[1], bins=20, log_bound=eps)[0] > 0


@pytest.mark.parametrize("R", [0.3, 2.0, 1e6])
def test_logistic_ball_many_solves_every_problem_like_the_single_solve(R):
    """The batched Newton (distinct rows with counts) gives erm_ball's minimiser for every noise vector, inside
    the ball and where the constraint binds (handed to the exact KKT solve), with duplicated rows in X."""
    rng = np.random.default_rng(3)
    X = unit_rows(rng, 60, 3)
    X = np.r_[X, np.tile(X[:2], (40, 1)), np.zeros((30, 3))]            # repeated rows and zero rows
    y = np.where(rng.random(X.shape[0]) < 0.5, -1.0, 1.0)
    B = rng.standard_normal((50, 3)) * np.r_[np.full(25, 0.5), np.full(25, 80.0)][:, None]
    W = op.logistic_ball_many(X, y, 0.05, R, B)
    for k in range(B.shape[0]):
        np.testing.assert_allclose(W[k], op.erm_ball("logistic", X, y, 0.05, R, b=B[k]), atol=1e-10)
    assert np.all(np.linalg.norm(W, axis=1) <= R * (1 + 1e-12))
    with pytest.raises(ValueError, match="B must be"):
        op.logistic_ball_many(X, y, 0.05, R, B[:, :2])


def test_objective_perturbation_many_releases_are_the_mechanism():
    """size=K: K releases of the same mechanism (calibration unchanged, each row the exact minimiser for its
    own noise vector), and their distribution matches K single releases (two-sample KS on each coordinate)."""
    from scipy.stats import ks_2samp

    rng = np.random.default_rng(4)
    X = unit_rows(rng, 80, 2)
    y = np.where(rng.random(80) < 0.5, -1.0, 1.0)
    many = objp.objective_perturbation("logistic", X, y, 0.1, 2.0, 1.0, np.random.default_rng(5), size=3000)
    one = objp.objective_perturbation("logistic", X, y, 0.1, 2.0, 1.0, np.random.default_rng(6))
    assert many.w.shape == (3000, 2) and many.noise_scale == one.noise_scale
    assert many.extra_lam == one.extra_lam and many.epsilon_prime == one.epsilon_prime
    r6 = np.random.default_rng(6)
    single = np.array([objp.objective_perturbation("logistic", X, y, 0.1, 2.0, 1.0, r6).w for _ in range(3000)])
    for j in range(2):
        assert ks_2samp(many.w[:, j], single[:, j]).pvalue > 1e-3
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="size must be"):
            objp.objective_perturbation("logistic", X, y, 0.1, 2.0, 1.0, np.random.default_rng(7), size=bad)
