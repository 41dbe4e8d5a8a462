"""Tests of dpbench.learn.psgd: losses and constants, schedules, one update by hand, convergence to L-BFGS,
projection, determinism, permutations, the per-update noise hooks and argument validation."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from dpbench.learn.psgd import (
    HuberHingeLoss,
    LogisticLoss,
    PSGDAggregate,
    StepSchedule,
    accuracy_pm1,
    evaluate_linear,
    get_loss,
    make_schedule,
    project_l2_ball,
    psgd,
    regularized_risk,
    total_updates,
)
from dpbench.methods.private_psgd import gaussian_batch_noise, l2_laplace_batch_noise

LOSSES = [LogisticLoss(), HuberHingeLoss(0.5), HuberHingeLoss(0.1)]


def pm1_data(n, d, seed, noise=0.3):
    """Rows in the unit ball (max norm 1), labels ±1 from a random hyperplane with some flips."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1).max()
    w_star = rng.standard_normal(d)
    y = np.where(X @ w_star + noise * rng.standard_normal(n) >= 0, 1.0, -1.0)
    return X, y


X, Y = pm1_data(203, 6, 0)


# ---------------------------------------------------------------------------------------------------- losses


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
def test_gradients_match_finite_differences(loss):
    rng = np.random.default_rng(1)
    Xs, ys = X[:15], Y[:15]
    w = rng.standard_normal(6) * 2.0
    G = loss.gradients(w, Xs, ys)
    h = 1e-6
    for j in range(6):
        e = np.zeros(6)
        e[j] = h
        fd = (loss.value(w + e, Xs, ys) - loss.value(w - e, Xs, ys)) / (2 * h)
        np.testing.assert_allclose(G[:, j], fd, atol=1e-7)
    np.testing.assert_allclose(loss.mean_gradient(w, Xs, ys), G.mean(axis=0), atol=1e-14)


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
def test_second_derivative_matches_finite_differences(loss):
    m = np.linspace(-4, 4, 161) + 0.0123  # avoid the kinks of the Huber hinge at exactly 1 ± h
    h = 1e-6
    fd = (loss.dphi(m + h) - loss.dphi(m - h)) / (2 * h)
    np.testing.assert_allclose(loss.d2phi(m), fd, atol=1e-6)


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
def test_constants_bound_gradient_and_hessian_on_unit_ball(loss):
    rng = np.random.default_rng(2)
    d = 7
    Xr = rng.standard_normal((500, d))
    Xr /= np.maximum(1.0, np.linalg.norm(Xr, axis=1))[:, None] * rng.uniform(1.0, 1.5, 500)[:, None]
    Xr[:5] /= np.linalg.norm(Xr[:5], axis=1)[:, None]  # some rows exactly on the sphere
    yr = rng.choice([-1.0, 1.0], 500)
    for scale in (0.1, 1.0, 10.0):
        w = rng.standard_normal(d) * scale
        assert np.all(np.linalg.norm(loss.gradients(w, Xr, yr), axis=1) <= loss.lipschitz + 1e-12)
        hs = loss.hessian_scales(w, Xr, yr) * np.einsum("nd,nd->n", Xr, Xr)  # spectral norm of φ″ x xᵀ
        assert np.all(hs >= 0) and np.all(hs <= loss.smoothness + 1e-12)
        # β-smoothness as a gradient-Lipschitz property between random pairs
        w2 = w + rng.standard_normal(d) * 0.3
        dg = np.linalg.norm(loss.gradients(w, Xr, yr) - loss.gradients(w2, Xr, yr), axis=1)
        assert np.all(dg <= loss.smoothness * np.linalg.norm(w - w2) + 1e-12)
    # the logistic constants are attained (tight): φ′(−∞) → −1, φ″(0) = 1/4
    if isinstance(loss, LogisticLoss):
        assert loss.d2phi(np.array([0.0]))[0] == 0.25
        assert loss.lipschitz == 1.0 and loss.smoothness == 0.25


def test_logistic_values_are_stable():
    loss = LogisticLoss()
    m = np.array([-800.0, 0.0, 800.0])
    np.testing.assert_allclose(loss.phi(m), [800.0, math.log(2), 0.0])
    np.testing.assert_allclose(loss.dphi(m), [-1.0, -0.5, 0.0])


def test_huber_hinge_piecewise():
    loss = HuberHingeLoss(0.5)
    np.testing.assert_allclose(loss.phi(np.array([2.0, 1.5, 1.0, 0.5, -1.0])), [0, 0, 0.125, 0.5, 2.0])
    assert loss.smoothness == 1.0 and get_loss("huber_hinge").h == 0.5
    with pytest.raises(ValueError):
        get_loss("squared")


# ---------------------------------------------------------------------------------------------------- schedules


def test_schedules():
    assert StepSchedule.constant(0.3)(7) == 0.3
    assert StepSchedule.inv_sqrt(2.0)(4) == 1.0
    assert StepSchedule.inv_gamma_t(0.5)(4) == 0.5
    sc = StepSchedule.strongly_convex(gamma=0.1, beta=0.35)
    assert sc(1) == 1 / 0.35 and sc(100) == pytest.approx(0.1)
    s = make_schedule("strongly_convex", l2=0.1, loss=LogisticLoss())
    assert s.beta == pytest.approx(0.35) and s.gamma == 0.1
    assert make_schedule(0.2)(5) == 0.2
    with pytest.raises(ValueError, match="unknown step-size schedule"):
        make_schedule("cosine")
    with pytest.raises(ValueError, match="unknown step-size schedule"):
        StepSchedule("cosine")
    with pytest.raises(ValueError, match="needs a step size"):
        make_schedule("constant")
    with pytest.raises(ValueError, match="l2 > 0"):
        make_schedule("inv_gamma_t", l2=0.0)
    with pytest.raises(ValueError):
        StepSchedule.constant(-1.0)


def test_total_updates():
    assert total_updates(10, 3, 2, "keep") == 8
    assert total_updates(10, 3, 2, "drop") == 6
    assert total_updates(9, 3, 1) == 3


# ---------------------------------------------------------------------------------------------------- updates


def test_one_transition_by_hand():
    Xb = np.array([[0.6, 0.0, 0.8], [0.0, -0.5, 0.5]])
    yb = np.array([1, -1])
    w0 = np.array([0.2, -0.4, 1.0])
    lam, eta = 0.1, 0.5
    agg = PSGDAggregate("logistic", StepSchedule.constant(eta), l2=lam)
    s0 = agg.initialize(3, w0)
    s1 = agg.transition(s0, Xb, yb)
    sig = lambda z: 1.0 / (1.0 + math.exp(-z))  # noqa: E731
    g = np.zeros(3)
    for x, yy in zip(Xb, yb):
        g += -yy * x * sig(-yy * float(x @ w0))
    g /= 2
    expected = w0 - eta * (lam * w0 + g)
    np.testing.assert_allclose(s1.w, expected, rtol=1e-14)
    assert s1.t == 1 and s0.t == 0
    np.testing.assert_array_equal(s0.w, w0)  # functional: input state untouched
    np.testing.assert_allclose(agg.terminate(s1), expected)
    # with projection onto a small ball and a fixed noise hook
    agg2 = PSGDAggregate("logistic", eta, l2=lam, radius=0.5, rng=np.random.default_rng(0),
                         batch_noise=lambda rng, dim, m: np.full(dim, 0.1))
    s2 = agg2.transition(agg2.initialize(3, w0 * 0.1), Xb, yb)
    v = w0 * 0.1 - eta * (lam * w0 * 0.1 + LogisticLoss().mean_gradient(w0 * 0.1, Xb, yb.astype(float)) + 0.1)
    np.testing.assert_allclose(s2.w, v * min(1.0, 0.5 / np.linalg.norm(v)), rtol=1e-14)
    assert s2.last_noise_norm == pytest.approx(0.1 * math.sqrt(3))


def test_aggregate_matches_driver_with_fixed_order():
    perm = np.random.default_rng(5).permutation(len(Y))
    w = psgd(X, Y, "logistic", 2, 20, StepSchedule.inv_sqrt(), np.random.default_rng(0), l2=0.01, order=perm)
    agg = PSGDAggregate("logistic", "inv_sqrt", l2=0.01)
    s = agg.initialize(X.shape[1])
    for _ in range(2):
        for i in range(0, len(Y), 20):
            s = agg.transition(s, X[perm[i:i + 20]], Y[perm[i:i + 20]])
    np.testing.assert_array_equal(w, agg.terminate(s))


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberHingeLoss(0.5)], ids=repr)
def test_full_batch_converges_to_lbfgs_minimiser(loss):
    lam = 0.1
    fun = lambda w: (regularized_risk(w, X, Y, loss, lam), loss.mean_gradient(w, X, Y) + lam * w)  # noqa: E731
    ref = minimize(fun, np.zeros(6), jac=True, method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 1e-15})
    eta = 1.0 / (loss.smoothness + lam)
    w = psgd(X, Y, loss, 300, len(Y), eta, np.random.default_rng(0), l2=lam)
    np.testing.assert_allclose(w, ref.x, atol=1e-7)
    # the strongly convex schedule min(1/β, 1/(γt)) also gets close (O(1/t) rate, so looser)
    w_sc = psgd(X, Y, loss, 300, len(Y), "strongly_convex", np.random.default_rng(0), l2=lam)
    assert regularized_risk(w_sc, X, Y, loss, lam) - ref.fun < 1e-3


def test_minibatch_sgd_approaches_optimum():
    lam = 1e-3
    loss = LogisticLoss()
    fun = lambda w: (regularized_risk(w, X, Y, loss, lam), loss.mean_gradient(w, X, Y) + lam * w)  # noqa: E731
    opt = minimize(fun, np.zeros(6), jac=True, method="L-BFGS-B").fun
    start_gap = regularized_risk(np.zeros(6), X, Y, loss, lam) - opt
    for average in (False, True):
        w = psgd(X, Y, loss, 10, 10, StepSchedule.inv_sqrt(5.0), np.random.default_rng(3), l2=lam, average=average)
        assert regularized_risk(w, X, Y, loss, lam) - opt < 0.25 * start_gap
        ev = evaluate_linear(w, X, Y, loss, lam)
        assert ev["accuracy"] > 0.75 and ev["risk"] == regularized_risk(w, X, Y, loss, lam)


def test_projection_keeps_norm_bounded():
    R = 0.3
    w, tr = psgd(X, Y, "logistic", 3, 5, 5.0, np.random.default_rng(0), radius=R, return_trace=True,
                 batch_noise=gaussian_batch_noise(5.0))
    assert np.all(tr["w_norm"] <= R * (1 + 1e-12))
    assert tr["w_norm"].max() == pytest.approx(R)  # the constraint is active
    w_avg = psgd(X, Y, "logistic", 3, 5, 5.0, np.random.default_rng(0), radius=R, average=True)
    assert np.linalg.norm(w) <= R * (1 + 1e-12) and np.linalg.norm(w_avg) <= R * (1 + 1e-12)
    np.testing.assert_allclose(project_l2_ball(np.array([3.0, 4.0]), 1.0), [0.6, 0.8])
    np.testing.assert_array_equal(project_l2_ball(np.array([0.3, 0.4]), 1.0), [0.3, 0.4])


def test_average_is_mean_of_iterates():
    agg = PSGDAggregate("logistic", 1.0, average=True)
    s = agg.initialize(6)
    iterates = []
    for i in range(0, 60, 20):
        s = agg.transition(s, X[i:i + 20], Y[i:i + 20])
        iterates.append(s.w)
    np.testing.assert_allclose(agg.terminate(s), np.mean(iterates, axis=0), rtol=1e-14)
    np.testing.assert_array_equal(agg.terminate(agg.initialize(6)), np.zeros(6))


# ---------------------------------------------------------------------------------------------------- randomness


def test_determinism_and_seed_dependence():
    kw = dict(loss="logistic", passes=2, batch_size=7, schedule="inv_sqrt", l2=1e-2, radius=100.0)
    a = psgd(X, Y, rng=np.random.default_rng(11), batch_noise=l2_laplace_batch_noise(1.0), **kw)
    b = psgd(X, Y, rng=np.random.default_rng(11), batch_noise=l2_laplace_batch_noise(1.0), **kw)
    c = psgd(X, Y, rng=np.random.default_rng(12), batch_noise=l2_laplace_batch_noise(1.0), **kw)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    # without noise only the permutations depend on the seed, and they still matter for b < n
    d1 = psgd(X, Y, rng=np.random.default_rng(1), **kw)
    d2 = psgd(X, Y, rng=np.random.default_rng(2), **kw)
    assert not np.allclose(d1, d2)


@pytest.mark.parametrize("b", [1, 7, 50, 203])
def test_single_pass_uses_every_example_once(b):
    w, tr = psgd(X, Y, "logistic", 1, b, 0.5, np.random.default_rng(4), return_trace=True)
    used = np.concatenate(tr["indices"])
    np.testing.assert_array_equal(np.sort(used), np.arange(len(Y)))
    assert tr["updates"] == total_updates(len(Y), b, 1) == len(tr["indices"])
    sizes = tr["batch_size"]
    assert np.all(sizes[:-1] == b) and sizes[-1] == len(Y) - b * (len(sizes) - 1)


def test_passes_and_orders():
    n = len(Y)
    _, tr = psgd(X, Y, "logistic", 3, 10, 0.5, np.random.default_rng(4), return_trace=True)
    per_pass = [np.concatenate(tr["indices"][k * 21:(k + 1) * 21]) for k in range(3)]
    for p in per_pass:
        np.testing.assert_array_equal(np.sort(p), np.arange(n))
    assert not np.array_equal(per_pass[0], per_pass[1])  # fresh permutation each pass
    _, tr = psgd(X, Y, "logistic", 3, 10, 0.5, np.random.default_rng(4), return_trace=True, order="once")
    per_pass = [np.concatenate(tr["indices"][k * 21:(k + 1) * 21]) for k in range(3)]
    np.testing.assert_array_equal(per_pass[0], per_pass[2])
    _, tr = psgd(X, Y, "logistic", 2, 10, 0.5, np.random.default_rng(4), return_trace=True, last_batch="drop")
    assert tr["updates"] == 40 and np.all(tr["batch_size"] == 10)
    for k in range(2):
        p = np.concatenate(tr["indices"][k * 20:(k + 1) * 20])
        assert len(np.unique(p)) == 200
    _, tr = psgd(X, Y, "logistic", 1, 50, 0.5, np.random.default_rng(4), return_trace=True, order="none")
    np.testing.assert_array_equal(np.concatenate(tr["indices"]), np.arange(n))
    # t counts updates across passes: 1/sqrt(t) continues in the second pass
    _, tr = psgd(X, Y, "logistic", 2, 50, "inv_sqrt", np.random.default_rng(4), return_trace=True)
    np.testing.assert_allclose(tr["eta"], 1 / np.sqrt(np.arange(1, 11)))


# ---------------------------------------------------------------------------------------------------- noise


def test_noise_hook_called_once_per_update_with_batch_sizes():
    calls = []

    def hook(rng, dim, m):
        calls.append((dim, m))
        return np.zeros(dim)

    w_hook = psgd(X, Y, "logistic", 2, 50, 0.5, np.random.default_rng(4), batch_noise=hook)
    w_none = psgd(X, Y, "logistic", 2, 50, 0.5, np.random.default_rng(4))
    assert len(calls) == total_updates(len(Y), 50, 2) == 10
    assert [m for _, m in calls] == [50, 50, 50, 50, 3] * 2 and all(d == 6 for d, _ in calls)
    np.testing.assert_array_equal(w_hook, w_none)  # zero noise and no extra rng use: identical


def test_l2_laplace_noise_scale_matches_update_3_6():
    rng = np.random.default_rng(7)
    d, eps, b = 5, 0.5, 4
    hook = l2_laplace_batch_noise(eps, b)
    norms = np.array([np.linalg.norm(hook(rng, d, b)) for _ in range(4000)])
    # ‖Z‖ ~ Gamma(d, 2/ε), so ‖Z/b‖ has mean 2d/(εb) = 5 and std 2√d/(εb) ≈ 2.24; SE over 4000 ≈ 0.035
    assert norms.mean() == pytest.approx(2 * d / (eps * b), rel=0.03)
    assert norms.std() == pytest.approx(2 * math.sqrt(d) / (eps * b), rel=0.06)
    # a smaller (last) batch is divided by its own size
    small = np.array([np.linalg.norm(hook(rng, d, 2)) for _ in range(2000)])
    assert small.mean() == pytest.approx(2 * d / (eps * 2), rel=0.05)
    # through the driver: trace noise norms have the same scale (b | n, so every batch has size b)
    Xs, Ys = X[:200], Y[:200]
    _, tr = psgd(Xs, Ys, "logistic", 5, b, "inv_sqrt", np.random.default_rng(8), l2=1e-4, radius=1e4,
                 batch_noise=l2_laplace_batch_noise(eps), return_trace=True)
    assert len(tr["noise_norm"]) == 250
    d = Xs.shape[1]  # 6: mean 2d/(εb) = 6, std 2√d/(εb) ≈ 2.45, SE over 250 ≈ 0.15
    assert tr["noise_norm"].mean() == pytest.approx(2 * d / (eps * b), rel=0.1)


def test_gaussian_noise_scale():
    rng = np.random.default_rng(9)
    hook = gaussian_batch_noise(2.0)
    z = np.stack([hook(rng, 8, 4) for _ in range(3000)])
    assert z.std() == pytest.approx(0.5, rel=0.03)  # σ / b
    z1 = np.stack([gaussian_batch_noise(2.0, batch_size=1)(rng, 8, 4) for _ in range(1000)])
    assert z1.std() == pytest.approx(2.0, rel=0.05)


# ---------------------------------------------------------------------------------------------------- validation


def test_validation_errors():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="labels must be -1 or \\+1"):
        psgd(X, np.where(Y > 0, 1, 0), "logistic", 1, 5, 0.1, rng)
    with pytest.raises(ValueError, match="labels"):
        psgd(X, Y > 0, "logistic", 1, 5, 0.1, rng)
    with pytest.raises(ValueError, match="shape"):
        psgd(X, Y[:-1], "logistic", 1, 5, 0.1, rng)
    with pytest.raises(ValueError, match="batch_size"):
        psgd(X, Y, "logistic", 1, 0, 0.1, rng)
    with pytest.raises(ValueError, match="batch_size"):
        psgd(X, Y, "logistic", 1, len(Y) + 1, 0.1, rng)
    with pytest.raises(ValueError, match="passes"):
        psgd(X, Y, "logistic", 0, 5, 0.1, rng)
    with pytest.raises(ValueError, match="unknown step-size schedule"):
        psgd(X, Y, "logistic", 1, 5, "adam", rng)
    with pytest.raises(ValueError, match="last_batch"):
        psgd(X, Y, "logistic", 1, 5, 0.1, rng, last_batch="pad")
    with pytest.raises(ValueError, match="order"):
        psgd(X, Y, "logistic", 1, 5, 0.1, rng, order="random")
    with pytest.raises(ValueError, match="permutation"):
        psgd(X, Y, "logistic", 1, 5, 0.1, rng, order=np.zeros(len(Y), dtype=int))
    with pytest.raises(ValueError, match="radius"):
        psgd(X, Y, "logistic", 1, 5, 0.1, rng, radius=0.0)
    with pytest.raises(ValueError, match="l2"):
        psgd(X, Y, "logistic", 1, 5, 0.1, rng, l2=-1.0)
    with pytest.raises(ValueError, match="rng"):
        psgd(X, Y, "logistic", 1, 5, 0.1, 0)
    with pytest.raises(ValueError, match="epsilon"):
        l2_laplace_batch_noise(0.0)
    with pytest.raises(ValueError, match="step size"):
        psgd(X, Y, "logistic", 1, 5, lambda t: -1.0, rng)


def test_accuracy_pm1():
    Xa = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    assert accuracy_pm1(np.array([1.0, 0.0]), Xa, np.array([1, -1, -1])) == pytest.approx(2 / 3)  # 0 → +1
    assert regularized_risk(np.zeros(2), Xa, np.array([1, -1, 1]), "logistic", 2.0) == pytest.approx(math.log(2))
