"""fit_softmax_many(method="row_space"): each member solved in the row space of its block (orthonormal
coordinates) follows the same L-BFGS-B iterates as the member solved in θ-space."""

import numpy as np
import pytest
from synthetic import unit_ball_data

from dpbench.learn import fit_softmax_many, softmax_objective


@pytest.mark.parametrize("l2, gtol", [(0.0, 1e-4), (1e-2, 1e-7)])
def test_row_space_follows_the_separate_fits(l2, gtol):
    X, y = unit_ball_data(6 * 30, 60, 4, 11)  # blocks of 30 rows, 60 features: n < D
    Xs, ys = X.reshape(6, 30, 60), y.reshape(6, 30)
    ref, rinfo = fit_softmax_many(Xs, ys, 4, l2, gtol=gtol, maxiter=100, return_info=True)
    got, info = fit_softmax_many(Xs, ys, 4, l2, gtol=gtol, maxiter=100, method="row_space", return_info=True)
    for t in range(6):
        assert (info[t].n_iter, info[t].converged) == (rinfo[t].n_iter, rinfo[t].converged)
        assert info[t].message.replace("_", " ") == rinfo[t].message.replace("_", " ")
        np.testing.assert_allclose(got[t], ref[t], rtol=0, atol=1e-7 * np.abs(ref[t]).max())
        g = softmax_objective(got[t].ravel(), Xs[t], ys[t], l2)[1]
        assert info[t].grad_max == pytest.approx(np.abs(g).max(), rel=1e-6)
        if info[t].message.startswith("CONVERGENCE: NORM"):
            assert np.abs(g).max() <= gtol * (1 + 1e-9)
        np.testing.assert_array_equal(np.argmax(X @ got[t], 1), np.argmax(X @ ref[t], 1))


def test_row_space_falls_back_on_dependent_rows_and_maxiter():
    X, y = unit_ball_data(2 * 30, 60, 3, 12)
    Xs, ys = X.reshape(2, 30, 60).copy(), y.reshape(2, 30).copy()
    Xs[1, 5] = Xs[1, 4]  # a repeated row: X_b X_bᵀ is singular, member 1 is solved in θ-space
    ref, rinfo = fit_softmax_many(Xs, ys, 3, 0.0, maxiter=5, return_info=True)
    got, info = fit_softmax_many(Xs, ys, 3, 0.0, maxiter=5, method="row_space", return_info=True)
    np.testing.assert_array_equal(got[1], ref[1])
    assert [i.n_iter for i in info] == [i.n_iter for i in rinfo] == [5, 5]
    assert not any(i.converged for i in info)
    np.testing.assert_allclose(got[0], ref[0], rtol=0, atol=1e-9 * np.abs(ref[0]).max())


def test_float32_members_agree_with_float64_and_refuse_a_certificate():
    """Single-precision member fits (parts of more than D/2 rows): the same stopping rules, iterates equal up
    to rounding — same test labels almost everywhere; a certified rule (grad_norm_tol) needs float64."""
    from dpbench.learn import fit_softmax

    X, y = unit_ball_data(8 * 300, 40, 4, 5)
    Xs, ys = X.reshape(8, 300, 40), y.reshape(8, 300)
    t64, i64 = fit_softmax_many(Xs, ys, 4, 0.0, maxiter=100, method="row_space", return_info=True)
    t32, i32 = fit_softmax_many(Xs, ys, 4, 0.0, maxiter=100, method="row_space", float32=True, return_info=True)
    Xe, _ = unit_ball_data(1000, 40, 4, 6)
    agree = np.mean(np.argmax(Xe @ t64, axis=2) == np.argmax(Xe @ t32, axis=2))
    assert agree >= 0.99
    assert all(abs(a.n_iter - b.n_iter) <= 5 for a, b in zip(i64, i32))
    # the float32 objective is the float64 one up to rounding
    from dpbench.learn.softmax import _Objective, _Objective32

    theta = np.random.default_rng(0).normal(size=40 * 4)
    f64, g64 = _Objective(Xs[0], ys[0], 4, 0.0, None)(theta)
    f32, g32 = _Objective32(Xs[0], ys[0], 4, 0.0, None)(theta)
    assert abs(f32 - f64) <= 1e-5 * abs(f64) and np.abs(g32 - g64).max() <= 1e-5 * np.abs(g64).max()
    with pytest.raises(ValueError, match="certify"):
        fit_softmax(X, y, 4, 1e-3, grad_norm_tol=1e-6, float32=True)
