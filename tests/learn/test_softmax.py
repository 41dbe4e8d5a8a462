"""Tests of dpbench.learn.softmax: objective, constants K and L, L-BFGS fits, batched prediction."""

import numpy as np
from synthetic import unit_ball_data
import pytest

from dpbench.learn import (
    HESSIAN_BOUND_L,
    LIPSCHITZ_K,
    FitInfo,
    accuracy,
    accuracy_many,
    fit_softmax,
    fit_softmax_many,
    per_example_gradient_norms,
    predict,
    predict_logits,
    predict_logits_many,
    predict_many,
    softmax_objective,
    softmax_probabilities,
)




def explicit_per_example_grads(theta, X, y):
    P = softmax_probabilities(X @ theta)
    P[np.arange(len(y)), y] -= 1.0
    return X[:, :, None] * P[:, None, :]  # (n, D, C)


def test_constants():
    assert LIPSCHITZ_K == pytest.approx(np.sqrt(2.0))
    assert HESSIAN_BOUND_L == 0.5


def test_objective_value_matches_direct_formula():
    X, y = unit_ball_data(40, 6, 4, 0)
    rng = np.random.default_rng(1)
    theta = rng.standard_normal((6, 4))
    lin = rng.standard_normal((6, 4))
    l2 = 0.3
    value, _ = softmax_objective(theta.ravel(), X, y, l2, linear=lin)
    Z = X @ theta
    ce = np.log(np.exp(Z).sum(1)) - Z[np.arange(40), y]
    direct = ce.mean() + 0.5 * l2 * np.sum(theta**2) + np.sum(lin * theta)
    assert value == pytest.approx(direct, rel=1e-12)


@pytest.mark.parametrize("l2,use_linear", [(0.0, False), (0.05, False), (0.05, True)])
def test_gradient_finite_differences(l2, use_linear):
    X, y = unit_ball_data(30, 5, 3, 2)
    rng = np.random.default_rng(3)
    theta = rng.standard_normal(15)
    lin = rng.standard_normal((5, 3)) if use_linear else None
    _, g = softmax_objective(theta, X, y, l2, linear=lin)
    h = 1e-6
    fd = np.empty_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = h
        fd[i] = (softmax_objective(theta + e, X, y, l2, lin)[0] - softmax_objective(theta - e, X, y, l2, lin)[0]) / (
            2 * h
        )
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_objective_stable_for_huge_logits():
    X, y = unit_ball_data(20, 4, 3, 4)
    theta = np.random.default_rng(0).standard_normal((4, 3)) * 1e4
    v, g = softmax_objective(theta.ravel(), X, y, 0.0)
    assert np.isfinite(v) and np.all(np.isfinite(g))
    Z = X @ theta
    m = Z.max(1)
    direct = np.mean(m + np.log(np.exp(Z - m[:, None]).sum(1)) - Z[np.arange(20), y])
    assert v == pytest.approx(direct, rel=1e-10)


def test_per_example_gradient_norms_match_explicit():
    X, y = unit_ball_data(50, 7, 5, 5)
    theta = np.random.default_rng(6).standard_normal((7, 5)) * 3
    G = explicit_per_example_grads(theta, X, y)
    explicit = np.sqrt((G**2).sum(axis=(1, 2)))
    np.testing.assert_allclose(per_example_gradient_norms(theta, X, y), explicit, rtol=1e-12)
    # and the mean of the explicit per-example gradients is the objective gradient
    _, g = softmax_objective(theta.ravel(), X, y, 0.0)
    np.testing.assert_allclose(G.mean(0).ravel(), g, rtol=1e-10, atol=1e-14)


def test_lipschitz_bound_on_random_data():
    rng = np.random.default_rng(7)
    n, d, c = 2000, 10, 10
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X *= rng.uniform(0.0, 1.0, (n, 1)) ** 0.1  # many points near the sphere
    y = rng.integers(0, c, n)
    worst = 0.0
    for scale in (0.1, 1.0, 10.0, 1e3):
        theta = rng.standard_normal((d, c)) * scale
        norms = per_example_gradient_norms(theta, X, y)
        worst = max(worst, norms.max())
        assert np.all(norms <= LIPSCHITZ_K + 1e-12)
    assert worst > 1.3  # the bound is nearly attained with confident wrong predictions


def test_hessian_eigenvalue_bound():
    rng = np.random.default_rng(8)
    worst = 0.0
    for c in (2, 3, 10):
        for scale in (0.1, 1.0, 3.0, 30.0):
            a = rng.standard_normal(c) * scale
            p = softmax_probabilities(a)
            H = np.diag(p) - np.outer(p, p)
            lam = np.linalg.eigvalsh(H).max()
            worst = max(worst, lam)
            assert lam <= HESSIAN_BOUND_L + 1e-12
            # Hessian in θ for one example is (x xᵀ) ⊗ H with ‖x‖ ≤ 1
            x = rng.standard_normal(4)
            x /= np.linalg.norm(x)
            assert np.linalg.eigvalsh(np.kron(np.outer(x, x), H)).max() <= HESSIAN_BOUND_L + 1e-12
    p = np.array([0.5, 0.5])  # binary at p = 1/2 attains 1/2
    assert np.linalg.eigvalsh(np.diag(p) - np.outer(p, p)).max() == pytest.approx(0.5)
    assert worst > 0.3


def test_fit_softmax_matches_sklearn():
    from sklearn.linear_model import LogisticRegression

    X, y = unit_ball_data(300, 8, 4, 9, sep=1.0)
    n = len(y)
    for l2 in (1e-3, 1e-1):
        theta, info = fit_softmax(X, y, 4, l2, gtol=1e-9, ftol=1e-15, return_info=True)
        assert isinstance(info, FitInfo) and info.n_iter > 0 and info.converged
        clf = LogisticRegression(C=1.0 / (l2 * n), fit_intercept=False, tol=1e-12, max_iter=10000)
        clf.fit(X, y)
        theta_sk = clf.coef_.T
        j_mine = softmax_objective(theta.ravel(), X, y, l2)[0]
        j_sk = softmax_objective(theta_sk.ravel(), X, y, l2)[0]
        assert j_mine == pytest.approx(j_sk, abs=1e-4)
        assert j_mine <= j_sk + 1e-8
        np.testing.assert_allclose(theta, theta_sk, atol=1e-3)
        assert info.fun == pytest.approx(j_mine)


def test_fit_softmax_linear_term_and_warm_start():
    X, y = unit_ball_data(200, 6, 3, 10)
    lin = np.random.default_rng(11).standard_normal((6, 3)) * 0.01
    l2 = 0.01
    theta = fit_softmax(X, y, 3, l2, linear=lin, gtol=1e-10, ftol=1e-15)
    _, g = softmax_objective(theta.ravel(), X, y, l2, lin)
    assert np.abs(g).max() < 1e-8  # stationarity of the perturbed objective
    theta_w, info = fit_softmax(X, y, 3, l2, linear=lin, theta0=theta, gtol=1e-8, return_info=True)
    assert info.n_iter <= 2
    np.testing.assert_allclose(theta_w, theta, atol=1e-7)


def test_fit_softmax_many_matches_separate_fits():
    T, n, d, c = 5, 40, 6, 3
    data = [unit_ball_data(n, d, c, 100 + t, sep=1.0) for t in range(T)]
    Xs = np.stack([a for a, _ in data])
    ys = np.stack([b for _, b in data])
    l2 = 1e-2
    joint, info = fit_softmax_many(Xs, ys, c, l2=l2, method="joint", gtol=1e-9, ftol=1e-15, return_info=True)
    assert joint.shape == (T, d, c) and isinstance(info, FitInfo) and info.converged
    sep, infos = fit_softmax_many(Xs, ys, c, l2=l2, gtol=1e-9, ftol=1e-15, return_info=True)
    assert len(infos) == T and all(i.converged for i in infos)
    Xq, _ = unit_ball_data(200, d, c, 999)
    for t in range(T):
        single = fit_softmax(Xs[t], ys[t], c, l2, gtol=1e-9, ftol=1e-15)
        np.testing.assert_array_equal(sep[t], single)
        np.testing.assert_allclose(joint[t], single, atol=1e-5)
        np.testing.assert_array_equal(predict(joint[t], Xq), predict(single, Xq))
    # warm start at the solution: nothing left to do
    _, info = fit_softmax_many(Xs, ys, c, l2=l2, theta0=joint, method="joint", gtol=1e-6, return_info=True)
    assert info.n_iter <= 1
    with pytest.raises(ValueError):
        fit_softmax_many(Xs, ys, c, method="newton")


@pytest.mark.parametrize("method", ["separate", "joint"])
def test_fit_softmax_many_unregularised_runs_with_bounded_iterations(method):
    T, n, d, c = 8, 10, 20, 3  # n < d: every block separable, no finite minimiser
    rng = np.random.default_rng(12)
    Xs = rng.standard_normal((T, n, d))
    Xs /= np.linalg.norm(Xs, axis=2, keepdims=True)
    ys = rng.integers(0, c, (T, n))
    thetas, info = fit_softmax_many(Xs, ys, c, maxiter=50, method=method, return_info=True)
    iters = [info.n_iter] if method == "joint" else [i.n_iter for i in info]
    assert max(iters) <= 50 and np.all(np.isfinite(thetas))
    for t in range(T):  # each model fits its own block
        assert accuracy(thetas[t], Xs[t], ys[t]) == 1.0


def test_batched_prediction_matches_loop():
    rng = np.random.default_rng(13)
    R, d, c = 7, 9, 4
    thetas = rng.standard_normal((R, d, c))
    X, y = unit_ball_data(120, d, c, 14)
    L = predict_logits_many(thetas, X)
    assert L.shape == (R, 120, c)
    for r in range(R):
        np.testing.assert_allclose(L[r], X @ thetas[r], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(predict_logits(thetas[r], X), X @ thetas[r], rtol=1e-12, atol=1e-14)
    P = predict_many(thetas, X)
    np.testing.assert_array_equal(P, np.stack([predict(thetas[r], X) for r in range(R)]))
    np.testing.assert_allclose(accuracy_many(thetas, X, y), [accuracy(thetas[r], X, y) for r in range(R)])


def test_label_validation():
    X, y = unit_ball_data(10, 3, 2, 0)
    with pytest.raises(ValueError):
        softmax_objective(np.zeros(6), X, y + 5, 0.0)
    with pytest.raises(ValueError):
        fit_softmax(X, y[:5], 2, 0.1)
