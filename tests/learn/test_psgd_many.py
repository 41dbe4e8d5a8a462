"""dpbench.learn.psgd_many: many models on shared batches equal the one-model algorithms (M = 1, same
generator state) and each model's noise has its own calibrated scale."""

import importlib
import math

import numpy as np
import pytest

from dpbench.methods import private_psgd as pp
from dpbench.learn import psgd_many as pm
from dpbench.methods import private_psgd_many as ppm

engine = importlib.import_module("dpbench.learn.psgd")


def data(n=203, d=6, seed=0):
    r = np.random.default_rng(seed)
    X = r.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X[:, 0] + 0.3 * r.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def g(seed=42):
    return np.random.default_rng(seed)


X, y = data()
Y1 = y[:, None]


def test_noiseless_matches_the_engine():
    w = engine.psgd(X, y, "logistic", 3, 10, "inv_sqrt", g(), l2=0.01, radius=5.0)
    W = pm.psgd_many(X, Y1, "logistic", 3, 10, "inv_sqrt", g(), l2=0.01, radius=5.0)
    np.testing.assert_allclose(W[0], w, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("delta,l2,radius", [(0.0, 0.0, None), (1e-3, 0.01, 100.0)])
def test_scs13_matches_one_model(delta, l2, radius):
    w, info = pp.scs13_psgd(X, y, "logistic", 3, 10, 0.5, g(), l2=l2, radius=radius, delta=delta)
    W, minfo = ppm.scs13_many(X, Y1, "logistic", 3, 10, [0.5], g(), l2=l2, radius=radius, delta=delta)
    np.testing.assert_allclose(W[0, 0], w, rtol=1e-12, atol=1e-14)
    assert minfo["noise_scale"][0] == pytest.approx(info["noise_scale"])


@pytest.mark.parametrize("l2,radius", [(0.01, None), (0.0, 3.0)])
def test_bst14_matches_one_model(l2, radius):
    w, info = pp.bst14_psgd(X, y, "logistic", 0.5, 1e-3, g(), batch_size=10, passes=2, l2=l2, radius=radius)
    W, minfo = ppm.bst14_many(X, Y1, "logistic", [0.5], 1e-3, g(), batch_size=10, passes=2, l2=l2, radius=radius)
    np.testing.assert_allclose(W[0, 0], w, rtol=1e-10, atol=1e-12)
    assert minfo["sigma"][0] == pytest.approx(info["sigma"]) and minfo["steps"] == info["steps"]


@pytest.mark.parametrize("l2,delta", [(0.01, 0.0), (0.0, 1e-3), (0.01, 1e-3)])
def test_bolt_on_matches_one_model(l2, delta):
    w, info = pp.bolt_on_psgd(X, y, "logistic", 3, 10, 0.5, delta, g(), l2=l2)
    W, minfo = ppm.bolt_on_many(X, Y1, "logistic", 3, 10, [0.5], delta, g(), l2=l2)
    np.testing.assert_allclose(W[0, 0], w, rtol=1e-12, atol=1e-14)
    assert minfo["sensitivity"] == pytest.approx(info["sensitivity"])
    assert minfo["noise_scale"][0] == pytest.approx(info["noise_scale"])


def test_models_train_independently_on_shared_batches():
    """Without noise, column k of a 3-column run equals a 1-column run on the same permutations."""
    Y = np.column_stack([y, -y, np.where(X[:, 1] > 0, 1.0, -1.0)])
    W = pm.psgd_many(X, Y, "logistic", 2, 7, 0.3, g(3), l2=0.0)
    for k in range(3):
        np.testing.assert_allclose(W[k], pm.psgd_many(X, Y[:, k:k + 1], "logistic", 2, 7, 0.3, g(3))[0],
                                   rtol=1e-12, atol=1e-14)


def test_per_model_step_scale_and_radius():
    Y = np.column_stack([y, y])
    W = pm.psgd_many(X, Y, "logistic", 1, 5, 0.5, g(), step_scale=[1.0, 0.5], radius=[10.0, 0.01])
    w0 = pm.psgd_many(X, Y1, "logistic", 1, 5, 0.5, g(), radius=10.0)[0]
    np.testing.assert_allclose(W[0], w0, rtol=1e-12)
    assert np.linalg.norm(W[1]) <= 0.01 + 1e-12


def test_l2_laplace_noise_scales_per_model():
    """‖Z_m‖ ~ Gamma(d, 2/ε_m) / b: the mean norm of each model's draws matches 2d/(ε_m b)."""
    eps = np.array([0.5, 2.0, 8.0])
    hook = ppm.l2_laplace_noise_many(eps)
    r = g(7)
    d, b = 5, 4
    norms = np.array([np.linalg.norm(hook(r, 3, d, b), axis=1) for _ in range(4000)])
    expected = 2 * d / (eps * b)
    sd = np.sqrt(d) * 2 / (eps * b) / math.sqrt(4000)          # std of Gamma(d, θ) is √d θ
    assert np.all(np.abs(norms.mean(axis=0) - expected) < 5 * sd)


def test_gaussian_noise_scales_per_model_and_batch_divisor():
    hook = ppm.gaussian_noise_many([1.0, 3.0], batch_size=2)
    z = np.array([hook(g(i), 2, 4, 10) for i in range(3000)])      # m = 10 > b = 2: divisor 2
    np.testing.assert_allclose(z.std(axis=(0, 2)), [0.5, 1.5], rtol=0.05)
    with pytest.raises(ValueError, match="built for 2 models"):
        hook(g(), 3, 4, 10)


def test_bolt_on_many_shares_one_noiseless_run_across_epsilons():
    Yk = np.column_stack([y, -y])
    W, info = ppm.bolt_on_many(X, Yk, "logistic", 2, 5, [0.5, 1.0, 2.0], 0.0, g())
    assert W.shape == (3, 2, X.shape[1]) and info["W0"].shape == (2, X.shape[1])
    np.testing.assert_allclose(info["noise_scale"], info["sensitivity"] / np.array([0.5, 1.0, 2.0]))
    W0 = pm.psgd_many(X, Yk, "logistic", 2, 5, 1 / math.sqrt(X.shape[0]), g(), last_batch="drop")
    np.testing.assert_allclose(info["W0"], W0, rtol=1e-12)


def test_bst14_convex_step_depends_on_sigma():
    W, info = ppm.bst14_many(X, Y1, "logistic", [0.2, 2.0], 1e-3, g(), batch_size=5, radius=2.0)
    d = X.shape[1]
    G = np.sqrt(d * info["sigma"] ** 2 * 4 + 25)
    np.testing.assert_allclose(info["step_c"], 4.0 / G)
    assert info["sigma"][0] > info["sigma"][1]
    assert np.all(np.linalg.norm(W, axis=-1) <= 2.0 + 1e-9)


def test_one_vs_all_labels_and_validation():
    Yk = pm.one_vs_all_labels(np.array([0, 2, 1, 2]), 3)
    np.testing.assert_array_equal(Yk, [[1, -1, -1], [-1, -1, 1], [-1, 1, -1], [-1, -1, 1]])
    with pytest.raises(ValueError, match="labels Y must be -1 or \\+1"):
        pm.psgd_many(X, np.zeros((X.shape[0], 1)), "logistic", 1, 5, 0.1, g())
    with pytest.raises(ValueError, match="same n"):
        pm.psgd_many(X, Y1[:-1], "logistic", 1, 5, 0.1, g())
    with pytest.raises(ValueError, match="sampling"):
        pm.psgd_many(X, Y1, "logistic", 1, 5, 0.1, g(), sampling="poisson")
    with pytest.raises(ValueError, match="epsilons"):
        ppm.scs13_many(X, Y1, "logistic", 1, 5, [0.0], g())
    with pytest.raises(ValueError, match="radius"):
        ppm.bst14_many(X, Y1, "logistic", [1.0], 1e-3, g())


def _scs13_logratios(eps_noise, N=20_000, seed=5, min_count=200):
    """1-d tight pair (x = 1; S: four labels +1, S′: one flipped). With the Huber hinge in its linear region
    at w = 0 the gradient sums differ by exactly 2 = SCS13's sensitivity, and one update (b = n = 4, η₁ = 1)
    releases w = −(mean gradient + Z/4). N models at once = N independent releases of each dataset."""
    from dpbench.learn.psgd import HuberHingeLoss

    X = np.ones((4, 1))
    ys = (np.ones(4), np.array([1.0, 1.0, 1.0, -1.0]))
    out = [ppm.scs13_many(X, yy[:, None], HuberHingeLoss(0.5), 1, 4, np.full(N, eps_noise), g(seed + j))[0][:, 0, 0]
           for j, yy in enumerate(ys)]
    edges = np.linspace(-2.5, 3.5, 49)
    c1, _ = np.histogram(out[0], edges)
    c2, _ = np.histogram(out[1], edges)
    ok = (c1 >= min_count) & (c2 >= min_count)
    assert ok.sum() >= 8
    return np.log(c1[ok] / c2[ok]), np.sqrt(1.0 / c1[ok] + 1.0 / c2[ok])


def test_scs13_many_statistical_neighbour_test():
    """ε-DP of one SCS13 update (ε/k with k = 1): every bin's log-ratio within ε + 4 s.e., and the bound is
    nearly attained (the pair is tight)."""
    lr, se = _scs13_logratios(1.0)
    assert np.all(np.abs(lr) <= 1.0 + 4.0 * se)
    assert np.abs(lr).max() >= 0.8


def test_scs13_many_neighbour_test_has_power():
    """Noise calibrated for ε = 2 fails the ε = 1 check."""
    lr, se = _scs13_logratios(2.0)
    assert np.any(np.abs(lr) > 1.0 + 4.0 * se)


# Outputs of the two many-model margin-SGD loops before they were merged into psgd_many.many_model_sgd
# (psgd_many's own loop and ldp_sgd.sgd_runs), frozen: the shared engine must reproduce them (bit-identical
# here; the tolerance only allows for another BLAS).
_FROZEN_ENGINES = {
    "psgd_many": [0.7787776279350127, -0.6803011636300869],
    "batch": [-1.117216888480149, 0.5787766321546868, 1.1883865543420407],
    "sample": [-0.7348822761180678, 0.5787766321546868, -2.4110896075898496],
    "trace": [1.2400896261681593, 0.5397262224376433, 2.0907011801069664],
}


def test_merged_engine_reproduces_psgd_many_and_sgd_runs():
    from dpbench.methods import ldp_sgd as L

    gen = np.random.default_rng(0)
    X = gen.standard_normal((30, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    W = pm.psgd_many(X, np.c_[y, -y], "logistic", 2, 4, "inv_sqrt", g(1), l2=0.1, radius=[1.0, 2.0],
                     batch_noise=ppm.l2_laplace_noise_many([1.0, 2.0]))
    np.testing.assert_allclose(W[:, 0], _FROZEN_ENGINES["psgd_many"], rtol=1e-12)
    seq = np.stack([g(5 + r).permutation(30) for r in range(2)])
    eta = np.tile(1.0 / np.arange(1, 6), (3, 1))
    kw = dict(l2=0.1, radius=3.0, model_run=[0, 1, 0])
    out = L.sgd_runs(X, y, seq, 5, eta, g(2), noise="batch", epsilon=[1.0, np.inf, 2.0], **kw)
    np.testing.assert_allclose(out["W"][:, 0], _FROZEN_ENGINES["batch"], rtol=1e-12)
    eps_s = np.where(g(3).random(seq.shape) < 0.5, 0.5, 3.0)
    out = L.sgd_runs(X, y, seq, 5, eta, g(2), noise="sample", epsilon=eps_s, noisy=[True, False, True],
                     checkpoints=[0, 5], **kw)
    np.testing.assert_allclose(out["W"][:, 0], _FROZEN_ENGINES["sample"], rtol=1e-12)
    np.testing.assert_allclose(out["trace"][:, 1], _FROZEN_ENGINES["trace"], rtol=1e-12)


def test_many_model_sgd_on_own_batches_equals_shared_batches():
    """The two gradient plugs agree when every model reads the same rows (up to summation order)."""
    X, y = np.random.default_rng(1).standard_normal((20, 3)) / 2, np.where(np.arange(20) % 3, 1.0, -1.0)
    Y = np.c_[y, -y]
    idx = [np.arange(s, s + 5) for s in range(0, 20, 5)]
    steps = lambda t: np.full(2, 0.5 / t)  # noqa: E731
    a = pm.many_model_sgd(np.zeros((2, 3)), iter(idx), pm.shared_batch_gradient(X, Y, engine.get_loss("logistic")), steps)
    W = np.zeros((2, 3))
    for k, col in enumerate((y, -y)):       # model k alone on its own labels, batches as (1, b) runs
        W[k] = pm.many_model_sgd(np.zeros((1, 3)), (i[None] for i in idx),
                                 pm.run_batch_gradient(X, col, engine.get_loss("logistic"), np.arange(1)),
                                 lambda t: np.full(1, 0.5 / t))[0]
    np.testing.assert_allclose(a, W, rtol=1e-12)


@pytest.mark.parametrize("sampling", ["replacement", "permutation"])
def test_own_batches_are_independent_trainings(sampling):
    """``own_batches=True``: model m is exactly a training of its label column alone on the batches it drew
    (one (M, ·) draw per update / pass, replayed here from the same seed); the models differ although their
    labels are identical, because their batches do."""
    X, y = data(n=40, d=3)
    M, b, passes = 3, 7, 2
    Y = np.tile(y[:, None], (1, M))
    W = pm.psgd_many(X, Y, "logistic", passes, b, "inv_sqrt", g(5), own_batches=True, sampling=sampling)
    rng = g(5)
    if sampling == "replacement":
        draws = [rng.integers(0, 40, size=(M, b)) for _ in range(-(-passes * 40 // b))]
    else:
        draws = [p[:, s:s + b] for p in (rng.permuted(np.tile(np.arange(40), (M, 1)), axis=1) for _ in range(passes))
                 for s in range(0, 40, b)]
    sched = engine.make_schedule("inv_sqrt", l2=0.0, loss=engine.get_loss("logistic"))
    for m in range(M):
        alone = pm.many_model_sgd(np.zeros((1, 3)), (d_[m] for d_ in draws),
                                  pm.shared_batch_gradient(X, Y[:, [m]], engine.get_loss("logistic")),
                                  lambda t: np.full(1, float(sched(t))))
        np.testing.assert_allclose(W[m], alone[0], rtol=1e-12, atol=1e-15)
    assert not np.allclose(W[0], W[1])


def test_run_batch_gradient_with_per_model_labels():
    """Per-model label columns give each model its own labels on its run's rows; identical columns reduce to the
    common-label plug; a label matrix with the wrong number of columns is refused."""
    X, y = data(n=30, d=4)
    loss = engine.get_loss("logistic")
    idx = np.random.default_rng(0).integers(0, 30, size=(2, 5))
    W = np.random.default_rng(1).standard_normal((2, 4))
    common, _ = pm.run_batch_gradient(X, y, loss, np.arange(2))(W, idx)
    same, _ = pm.run_batch_gradient(X, np.c_[y, y], loss, np.arange(2))(W, idx)
    np.testing.assert_allclose(same, common, rtol=1e-14)
    flipped, _ = pm.run_batch_gradient(X, np.c_[y, -y], loss, np.arange(2))(W, idx)
    np.testing.assert_allclose(flipped[0], common[0], rtol=1e-14)
    expect = ((loss.dphi(-y[idx[1]] * (X[idx[1]] @ W[1])) * -y[idx[1]]) @ X[idx[1]]) / 5
    np.testing.assert_allclose(flipped[1], expect, rtol=1e-12)
    with pytest.raises(ValueError, match="per-model labels"):
        pm.run_batch_gradient(X, np.c_[y, y, y], loss, np.arange(2))
