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
