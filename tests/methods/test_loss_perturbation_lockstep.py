"""Loss perturbation in lockstep (vdm2020 Alg. 4): the same noise draws as the one-cell-at-a-time code, every
released θ within the certified solver tolerance of the one-at-a-time solve, the privacy certificate kept."""

import numpy as np
import pytest

from dpbench.learn import fit_softmax, sensitivity_grad_norm_tol, softmax_objective
from dpbench.methods import Context
from dpbench.methods import loss_perturbation as lp
from dpbench.methods.base import Problem
from dpbench.privacy import sample_gaussian, sample_l2_laplace
from dpbench.store import Store


def _old_draw(rng, epsilon, delta, n_classes, shape):
    """The draw of loss_perturbation_fit before the lockstep change (kept here as the reference)."""
    kind, scale, _ = lp.loss_perturbation_noise(epsilon, delta, n_classes, "replace_one")
    size = int(np.prod(shape))
    if kind == "l2_laplace":
        return sample_l2_laplace(rng, scale, size).reshape(shape)
    return sample_gaussian(rng, scale, shape)


def _problem(n=400, D=10, C=3):
    rng = np.random.default_rng(5)
    y = rng.integers(0, C, n + 100)
    X = rng.standard_normal((C, D - 1))[y] * 2 + rng.standard_normal((n + 100, D - 1))
    X = np.hstack([X / np.linalg.norm(X, axis=1).max(), np.ones((n + 100, 1))]) / np.sqrt(2.0)
    return Problem(key="lp-lockstep-test", variant="synthetic", X_train=X[:n], y_train=y[:n], X_eval=X[n:],
                   y_eval=y[n:], n_classes=C)


def test_draws_are_the_old_draws():
    for eps, delta in ((1.0, 0.0), (0.5, 1e-5)):
        new, _, _ = lp.loss_perturbation_draw(np.random.default_rng(7), eps, delta, 3, "replace_one", (10, 3))
        np.testing.assert_array_equal(new, _old_draw(np.random.default_rng(7), eps, delta, 3, (10, 3)))


@pytest.mark.parametrize("float32", [False, True])
def test_lockstep_group_equals_one_cell_at_a_time(tmp_path, float32):
    problem = _problem()
    method = lp.LossPerturbation(regularizer="code_max", neighbouring="replace_one", error_fraction=0.01,
                                 maxiter=2000, float32=float32)
    cells = [method.make_cell(problem, lam, 1.0, 0.0, 1, r) for lam in (1e-3, 1e-1) for r in range(3)]
    assert len({repr(method.group_key(c)) for c in cells}) == 1  # every tuning value and repetition: one group
    ctx = Context(store=Store(tmp_path), seed=3)
    rows = method.run_group(problem, cells, ctx)
    n = problem.n_train
    tol = sensitivity_grad_norm_tol(n, 0.01)
    for cell, row in zip(cells, rows):
        p = cell.param
        theta0 = fit_softmax(problem.X_train, problem.y_train, 3, p["l2_effective"], grad_norm_tol=tol)
        old, kind, scale = lp.loss_perturbation_fit(problem.X_train, problem.y_train, 3, p["l2_effective"], 1.0, 0.0,
                                                    ctx.rng(cell.stream_key), theta0, error_fraction=0.01, maxiter=2000)
        assert (row["noise_kind"], row["noise_scale"]) == (kind, scale)
        # the new θ: recompute it through the lockstep path for this cell alone and certify it
        noise, _, _ = lp.loss_perturbation_draw(ctx.rng(cell.stream_key), 1.0, 0.0, 3, "replace_one", theta0.shape)
        new = lp.loss_perturbation_fit_many(problem.X_train, problem.y_train, 3, noise[None], [p["l2_effective"]],
                                            theta0[None], error_fraction=0.01, maxiter=2000, float32=float32)[0]
        g = softmax_objective(new.ravel(), problem.X_train, problem.y_train, p["l2_effective"], noise / n)[1]
        assert np.linalg.norm(g) <= tol
        assert np.linalg.norm(new - old) <= 2 * tol / p["l2_effective"]
        acc_old = float(np.mean(np.argmax(problem.X_eval @ old, 1) == problem.y_eval))
        assert abs(row["accuracy"] - acc_old) <= 0.01
        assert row["solver_error_bound"] == pytest.approx(tol / p["l2_effective"])


def test_float32_is_the_default_and_in_the_cell_key():
    problem = _problem()
    on = lp.LossPerturbation(regularizer="code_max", error_fraction=0.01, maxiter=2000)
    off = lp.LossPerturbation(regularizer="code_max", error_fraction=0.01, maxiter=2000, float32=False)
    assert on.make_cell(problem, 1e-3, 1.0, 0.0, 1, 0).param["float32"] is True
    assert next(st.default for st in lp.LossPerturbation.settings_spec if st.name == "float32") is True
    assert on.make_cell(problem, 1e-3, 1.0, 0.0, 1, 0).key != off.make_cell(problem, 1e-3, 1.0, 0.0, 1, 0).key


def test_preconditioning_is_the_default_in_the_cell_key_but_not_in_the_stream():
    problem = _problem()
    on = lp.LossPerturbation(regularizer="code_max", error_fraction=0.01, maxiter=2000)
    off = lp.LossPerturbation(regularizer="code_max", error_fraction=0.01, maxiter=2000, precondition=False)
    a, b = on.make_cell(problem, 1e-3, 1.0, 0.0, 1, 0), off.make_cell(problem, 1e-3, 1.0, 0.0, 1, 0)
    assert a.param["precondition"] is True and b.param["precondition"] is False
    assert a.key != b.key and a.stream_key == b.stream_key


@pytest.mark.parametrize("float32", [False, True])
def test_a_cell_does_not_depend_on_the_cells_computed_with_it(tmp_path, float32):
    """Resumed runs (part of a group cached), shards and cells shared by two figures hand run_group a subset of
    a group, in any order: every cell's row is bit for bit the one computed with the whole group."""
    problem = _problem()
    method = lp.LossPerturbation(regularizer="code_max", neighbouring="replace_one", error_fraction=0.01,
                                 maxiter=2000, float32=float32)
    cells = [method.make_cell(problem, lam, 1.0, 0.0, 1, r) for lam in (1e-3, 1e-1) for r in range(4)]
    ctx = Context(store=Store(tmp_path), seed=3)
    full = dict(zip([c.key for c in cells], method.run_group(problem, cells, ctx)))
    for subset in ([cells[2]], [cells[7], cells[1], cells[4]], cells[::-1]):
        for cell, row in zip(subset, method.run_group(problem, subset, ctx)):
            assert row == full[cell.key]
    # the released θ itself: a model alone in its slot equals the model solved with its block
    n = problem.n_train
    warm = np.stack([fit_softmax(problem.X_train, problem.y_train, 3, 0.05, grad_norm_tol=1e-6)] * 4)
    noises = np.stack([lp.loss_perturbation_draw(np.random.default_rng(r), 1.0, 0.0, 3, "replace_one",
                                                 warm[0].shape)[0] for r in range(4)])
    kw = dict(error_fraction=0.01, maxiter=2000, float32=float32)
    together = lp.loss_perturbation_fit_many(problem.X_train, problem.y_train, 3, noises, [0.05] * 4, warm, **kw)
    for r in range(4):
        alone = lp.loss_perturbation_fit_many(problem.X_train, problem.y_train, 3, noises[r:r + 1], [0.05],
                                              warm[r:r + 1], slots=[r], **kw)
        np.testing.assert_array_equal(alone[0], together[r])
        g = softmax_objective(together[r].ravel(), problem.X_train, problem.y_train, 0.05, noises[r] / n)[1]
        assert np.linalg.norm(g) <= sensitivity_grad_norm_tol(n, 0.01)  # the float64 certificate


def test_lockstep_batches():
    assert lp.lockstep_batches([1.0, 2.0, 1.0, 2.0, 1.0], [0, 0, 1, 1, 0]) == [[0, 2], [1, 3], [4]]
