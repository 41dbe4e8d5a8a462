"""Tests of dpbench.learn.lbfgs_many: the lockstep multi-model L-BFGS equals one-at-a-time solves within the
solver tolerance, with the same stopping rules and certificates."""

import numpy as np
import pytest
from synthetic import unit_ball_data

from dpbench.learn import fit_softmax, fit_softmax_many, softmax_objective
from dpbench.learn import lbfgs_many as lm


def _problems(R=5, n=300, D=12, C=4, seed=0):
    X, y = unit_ball_data(n, D, C, seed)
    rng = np.random.default_rng(seed + 1)
    l2 = np.array([1e-3, 1e-2, 3e-4, 1e-3, 5e-3])[:R]
    linear = rng.normal(size=(R, D, C)) * 0.05
    theta0 = rng.normal(size=(R, D, C)) * 0.1
    return X, y, C, l2, linear, theta0


@pytest.mark.parametrize("float32", [False, True])
def test_lockstep_equals_one_at_a_time_within_the_certified_bound(float32):
    X, y, C, l2, linear, theta0 = _problems()
    tol = 1e-7
    thetas, infos = lm.fit_softmax_lockstep(X, y, C, l2, linear, theta0, grad_norm_tol=tol, float32=float32,
                                            return_info=True)
    for r in range(len(l2)):
        ref, rinfo = fit_softmax(X, y, C, l2[r], linear[r], theta0[r], grad_norm_tol=tol, return_info=True)
        # the certificate: a float64 gradient at the returned point, recomputed independently
        _, grad = softmax_objective(thetas[r].ravel(), X, y, l2[r], linear[r])
        assert infos[r].converged and np.linalg.norm(grad) <= tol
        assert infos[r].grad_norm == pytest.approx(np.linalg.norm(grad), rel=1e-6)
        # both within ‖∇J‖/λ of the exact minimiser (strong convexity), so within the sum of each other
        assert np.linalg.norm(thetas[r] - ref) <= (infos[r].grad_norm + rinfo.grad_norm) / l2[r]


def test_float32_phase_is_used_and_certificate_stays_float64(monkeypatch):
    X, y, C, l2, linear, theta0 = _problems(R=3)
    calls = []
    orig = lm.SharedDesign.__call__

    def spy(self, idx, thetas, single=False):
        calls.append(bool(single))
        return orig(self, idx, thetas, single)

    monkeypatch.setattr(lm.SharedDesign, "__call__", spy)
    lm.fit_softmax_lockstep(X, y, C, l2[:3], linear, theta0, grad_norm_tol=1e-8, float32=True)
    assert calls[0] is True and calls[-1] is False  # starts in float32, stops on a float64 evaluation
    calls.clear()
    lm.fit_softmax_lockstep(X, y, C, l2[:3], linear, theta0, grad_norm_tol=1e-8, float32=False)
    assert not any(calls)


def test_float32_without_a_copy_converts_row_chunks(monkeypatch):
    X, y, C, l2, linear, theta0 = _problems(R=3)
    full = lm.SharedDesign(X, y, C, l2[:3], linear[:3], n_models=3, float32=True)
    monkeypatch.setattr(lm, "FLOAT32_MAX_BYTES", 0)  # no room for a float32 copy of X
    monkeypatch.setattr(lm, "ROW_CHUNK", 64)
    chunked = lm.SharedDesign(X, y, C, l2[:3], linear[:3], n_models=3, float32=True)
    assert chunked.X32 is None and full.X32 is not None
    idx = np.arange(3)
    f1, g1 = full(idx, theta0[:3].reshape(3, -1), True)
    f2, g2 = chunked(idx, theta0[:3].reshape(3, -1), True)
    assert np.allclose(f1, f2, rtol=1e-5) and np.allclose(g1, g2, atol=1e-5)


def test_shared_evaluator_matches_objective_in_row_chunks(monkeypatch):
    X, y, C, l2, linear, theta0 = _problems()
    monkeypatch.setattr(lm, "ROW_CHUNK", 64)
    ev = lm.SharedDesign(X, y, C, l2, linear, n_models=len(l2))
    idx = np.array([4, 1, 2])
    f, G = ev(idx, theta0[idx].reshape(3, -1))
    for i, r in enumerate(idx):
        fr, gr = softmax_objective(theta0[r].ravel(), X, y, l2[r], linear[r])
        assert f[i] == pytest.approx(fr, rel=1e-12) and np.allclose(G[i], gr, rtol=1e-10, atol=1e-14)
    ev32 = lm.SharedDesign(X, y, C, l2, linear, n_models=len(l2), float32=True)
    f32, G32 = ev32(idx, theta0[idx].reshape(3, -1), True)
    assert np.allclose(f32, f, rtol=1e-5) and np.allclose(G32, G, atol=1e-5)


def test_blocks_follow_scipy_path():
    """T members on disjoint blocks with scipy's gtol/ftol/maxiter rules: with L2 the same minimisers; without
    L2 (subsample-and-aggregate) the same stopping reason and, on these problems, the same iterates."""
    X, y = unit_ball_data(480, 12, 4, 3)
    Xs, ys = X.reshape(6, 80, 12), y.reshape(6, 80)
    for l2, gtol in ((1e-2, 1e-9), (0.0, 1e-4)):
        th, infos = lm.fit_softmax_lockstep(Xs, ys, 4, l2, gtol=gtol, maxiter=100, return_info=True)
        ref, rinfos = fit_softmax_many(Xs, ys, 4, l2, gtol=gtol, maxiter=100, return_info=True)
        for t in range(6):
            assert infos[t].converged == rinfos[t].converged
            if l2:  # strong convexity: both within ‖∇J‖/λ of the one minimiser
                g1 = softmax_objective(th[t].ravel(), Xs[t], ys[t], l2)[1]
                g2 = softmax_objective(ref[t].ravel(), Xs[t], ys[t], l2)[1]
                assert np.linalg.norm(th[t] - ref[t]) <= (np.linalg.norm(g1) + np.linalg.norm(g2)) / l2
        agree = np.mean([np.mean(np.argmax(X @ th[t], 1) == np.argmax(X @ ref[t], 1)) for t in range(6)])
        assert agree > 0.98


def test_maxiter_and_unreachable_tolerance():
    X, y, C, l2, linear, theta0 = _problems(R=2)
    th, infos = lm.fit_softmax_lockstep(X, y, C, 0.0, None, None, n_models=2, gtol=1e-12, maxiter=3,
                                        return_info=True)
    assert [i.n_iter for i in infos] == [3, 3] and not any(i.converged for i in infos)
    with pytest.raises(RuntimeError, match="did not reach"):
        lm.fit_softmax_lockstep(X, y, C, l2[:2], linear, theta0, grad_norm_tol=1e-14, maxiter=2)


@pytest.mark.parametrize("float32", [False, True])
def test_batch_invariance(float32):
    """A model's result is bit for bit the same alone or in batches of other sizes, compositions and orders
    (float64: packed; float32: each model in its own slot of a fixed stack), on 1 BLAS thread whatever the
    caller's thread count."""
    from threadpoolctl import threadpool_limits

    X, y, C, l2, linear, theta0 = _problems()
    X, y = unit_ball_data(1200, 12, C, 7)  # large enough for a multi-threaded GEMM
    tol = 1e-7

    def solve(order, threads):
        with threadpool_limits(threads):
            return lm.fit_softmax_lockstep(X, y, C, l2[order], linear[order], theta0[order], grad_norm_tol=tol,
                                           float32=float32, slots=order, n_slots=5, blas_threads=1)

    alone = [solve([r], 1)[0] for r in range(5)]
    for order, threads in (([0, 1, 2, 3, 4], 2), ([3, 1], 1), ([4, 0, 2], 2)):
        got = solve(order, threads)
        for i, r in enumerate(order):
            np.testing.assert_array_equal(got[i], alone[r])


def test_slots_are_checked():
    X, y, C, l2, linear, theta0 = _problems(R=2)
    for slots, n_slots in (([0, 0], 2), ([0, 2], 2), ([1], 2)):
        with pytest.raises(ValueError, match="slots"):
            lm.SharedDesign(X, y, C, l2[:2], linear[:2], n_models=2, float32=True, slots=slots, n_slots=n_slots)


def _ill_conditioned(n=2000, D=200, C=4, seed=3):
    """Correlated features with a power-law spectrum (like pixels): the curvature spans orders of magnitude."""
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.normal(size=(D, D)))[0]
    X = (rng.normal(size=(n, D)) * np.arange(1, D + 1) ** -1.0) @ Q
    y = np.argmax(X @ (rng.normal(size=(D, C)) * 3) + rng.gumbel(size=(n, C)), 1)
    return X / np.linalg.norm(X, axis=1).max(), y, C


def test_kronecker_curvature_matches_the_hessian_on_its_factors():
    """A ⊗ B against the exact Hessian of mean CE: B·1 = 0 (shift invariance), and the quadratic form of a
    rank-one direction u vᵀ with v ⟂ 1 is within a small factor of the exact one (an approximation: K-FAC)."""
    X, y, C = _ill_conditioned(n=300, D=12)
    theta = np.random.default_rng(0).normal(size=(12, C)) * 0.5
    k = lm.softmax_curvature(X, theta)
    B = k["V"] @ np.diag(k["b"]) @ k["V"].T
    assert np.allclose(B @ np.ones(C), 0, atol=1e-12) and (k["a"] >= 0).all() and (k["b"] >= 0).all()
    A = k["U"] @ np.diag(k["a"]) @ k["U"].T
    rng = np.random.default_rng(1)
    for _ in range(5):
        u, v = rng.normal(size=12), rng.normal(size=C)
        v -= v.mean()
        d = np.outer(u, v).ravel()
        h = 1e-5
        g1 = softmax_objective((theta.ravel() + h * d), X, y, 0.0)[1]
        g0 = softmax_objective((theta.ravel() - h * d), X, y, 0.0)[1]
        exact = d @ (g1 - g0) / (2 * h)
        approx = (u @ A @ u) * (v @ B @ v)
        assert 0.2 < approx / exact < 5


@pytest.mark.parametrize("float32", [False, True])
def test_preconditioned_solve_is_certified_on_theta_and_needs_fewer_iterations(float32):
    X, y, C = _ill_conditioned()
    R, D = 4, X.shape[1]
    rng = np.random.default_rng(7)
    l2 = np.full(R, 1e-4)
    theta_np = fit_softmax(X, y, C, 1e-4, grad_norm_tol=1e-9)
    linear = rng.normal(size=(R, D, C)) * 0.1 / np.sqrt(D * C)
    k = lm.softmax_curvature(X, theta_np)
    tol = 1e-8
    kw = dict(grad_norm_tol=tol, float32=float32, slots=np.arange(R), n_slots=R, return_info=True)
    plain, pinfo = lm.fit_softmax_lockstep(X, y, C, l2, linear, np.broadcast_to(theta_np, (R, D, C)), **kw)
    pre, info = lm.fit_softmax_lockstep(X, y, C, l2, linear, np.broadcast_to(theta_np, (R, D, C)), precondition=k, **kw)
    for r in range(R):
        _, grad = softmax_objective(pre[r].ravel(), X, y, l2[r], linear[r])  # the θ-gradient, recomputed
        assert info[r].converged and np.linalg.norm(grad) <= tol
        assert info[r].grad_norm == pytest.approx(np.linalg.norm(grad), rel=1e-6)
        assert np.linalg.norm(pre[r] - plain[r]) <= (info[r].grad_norm + pinfo[r].grad_norm) / l2[r]
    assert sum(i.n_iter for i in info) < 0.5 * sum(i.n_iter for i in pinfo)


def test_preconditioned_model_does_not_depend_on_its_batch():
    X, y, C = _ill_conditioned(n=500, D=40)
    R, D = 5, X.shape[1]
    rng = np.random.default_rng(8)
    theta_np = fit_softmax(X, y, C, 1e-3, grad_norm_tol=1e-9)
    k = lm.softmax_curvature(X, theta_np)
    linear = rng.normal(size=(R, D, C)) * 0.02
    kw = dict(grad_norm_tol=1e-8, float32=True, n_slots=R, blas_threads=1, precondition=k)
    full = lm.fit_softmax_lockstep(X, y, C, np.full(R, 1e-3), linear, np.broadcast_to(theta_np, (R, D, C)),
                                   slots=np.arange(R), **kw)
    for subset in ([3], [4, 1, 0]):
        part = lm.fit_softmax_lockstep(X, y, C, np.full(len(subset), 1e-3), linear[subset],
                                       np.broadcast_to(theta_np, (len(subset), D, C)), slots=np.array(subset), **kw)
        assert np.array_equal(part, full[subset])


def test_precondition_rejects_bad_factors_and_mixed_l2():
    X, y, C = _ill_conditioned(n=300, D=30)
    k = lm.softmax_curvature(X, np.zeros((30, C)))
    with pytest.raises(ValueError, match="U 30 x 30"):
        lm.fit_softmax_lockstep(X, y, C, 1e-3, None, None, n_models=1, grad_norm_tol=1e-6,
                                precondition={**k, "U": np.eye(3)})
    with pytest.raises(ValueError, match="one l2"):
        lm.fit_softmax_lockstep(X, y, C, [1e-3, 1e-2], None, None, grad_norm_tol=1e-6, precondition=k)
    with pytest.raises(ValueError, match="eigenvalues"):
        lm.fit_softmax_lockstep(X, y, C, 1e-3, None, None, n_models=1, grad_norm_tol=1e-6,
                                precondition={**k, "a": -k["a"] - 1})


def test_scipy_fit_from_zero_whitened_by_the_curvature_at_zero():
    """fit_softmax(precondition=curvature at 0): the certificate is tested on the θ-gradient, the result is
    within the certified bound of the plain fit, and it takes far fewer iterations on correlated features."""
    X, y, C = _ill_conditioned()
    D = X.shape[1]
    k0 = lm.softmax_curvature(X, np.zeros((D, C)))
    # at θ = 0 the factors are exact: A ⊗ B = XᵀX/N ⊗ (I/C − 11ᵀ/C²)
    A = k0["U"] @ np.diag(k0["a"]) @ k0["U"].T
    B = k0["V"] @ np.diag(k0["b"]) @ k0["V"].T
    np.testing.assert_allclose(np.kron(A, B), np.kron(X.T @ X / len(X), np.eye(C) / C - 1 / C**2), atol=1e-12)
    tol = 1e-8
    plain, pinfo = fit_softmax(X, y, C, 1e-4, grad_norm_tol=tol, return_info=True)
    pre, info = fit_softmax(X, y, C, 1e-4, grad_norm_tol=tol, precondition=k0, return_info=True)
    _, grad = softmax_objective(pre.ravel(), X, y, 1e-4)
    assert np.linalg.norm(grad) <= tol and info.grad_norm == pytest.approx(np.linalg.norm(grad), rel=1e-6)
    assert np.linalg.norm(pre - plain) <= (info.grad_norm + pinfo.grad_norm) / 1e-4
    assert info.n_iter < 0.5 * pinfo.n_iter


def test_trained_softmax_preconditioning_is_a_solver_choice(tmp_path):
    """The cached non-private fit with and without preconditioning: separate cache entries, both certified,
    within the certified distance of each other; the cell keys differ, the random streams do not."""
    from dpbench.learn import sensitivity_grad_norm_tol
    from dpbench.methods.base import Context, Problem
    from dpbench.methods.non_private import trained_softmax
    from dpbench.methods.sensitivity import ModelSensitivity
    from dpbench.store import Store

    X, y, C = _ill_conditioned(n=600, D=40)
    p = Problem("k", "v", X, y, X[:50], y[:50], C)
    ctx = Context(Store(tmp_path), 1)
    on = trained_softmax(p, 1e-3, ctx, 0.01, 2000)
    off = trained_softmax(p, 1e-3, ctx, 0.01, 2000, precondition=False)
    tol = sensitivity_grad_norm_tol(len(X), 0.01)
    for th in (on, off):
        assert np.linalg.norm(softmax_objective(th.ravel(), X, y, 1e-3)[1]) <= tol
    assert 0 < np.linalg.norm(on - off) <= 2 * tol / 1e-3
    a = ModelSensitivity(error_fraction=0.01, maxiter=2000).make_cell(p, 1e-3, 1.0, 0.0, 1, 0)
    b = ModelSensitivity(error_fraction=0.01, maxiter=2000, precondition=False).make_cell(p, 1e-3, 1.0, 0.0, 1, 0)
    assert a.key != b.key and a.stream_key == b.stream_key
