"""Tests of dpbench.learn.dpsgd and its softmax learner dpbench.methods.dpsgd.dpsgd_softmax: clipping (Eq. 4,
global), sampling, determinism, SGD equivalence."""

import math

import numpy as np
from synthetic import unit_ball_data
import pytest

from dpbench.learn import (
    clip_scales,
    clipped_contributions,
    lr_factors,
    per_example_gradient_norms,
    poisson_batches,
    softmax_objective,
)
from dpbench.methods.dpsgd import dpsgd_softmax




X, Y = unit_ball_data(600, 12, 4, 0)


def test_clip_scales():
    s = clip_scales(np.array([0.0, 0.5, 1.0, 4.0]), 1.0)
    np.testing.assert_allclose(s, [1.0, 1.0, 1.0, 0.25])


def test_clipped_contributions_explicit():
    rng = np.random.default_rng(1)
    theta = rng.standard_normal((12, 4)) * 5
    clip = 0.3
    raw = per_example_gradient_norms(theta, X[:100], Y[:100])
    assert raw.max() > clip and raw.min() < clip  # both regimes exercised
    norms = clipped_contributions(theta, X[:100], Y[:100], clip)
    assert np.all(norms <= clip + 1e-12)
    np.testing.assert_allclose(norms, np.minimum(raw, clip), rtol=1e-12)


@pytest.mark.parametrize("sampling", ["poisson", "shuffle"])
def test_every_clipped_contribution_bounded(sampling):
    clip = 0.05  # far below typical ‖g_n‖ so clipping is active
    theta, tr = dpsgd_softmax(
        X, Y, 4, noise_multiplier=1.0, clip=clip, batch_size=32, epochs=2, learning_rate=0.5,
        rng=np.random.default_rng(2), n_runs=3, sampling=sampling, return_trace=True,
    )
    assert theta.shape == (3, 12, 4)
    mx = tr["max_clipped_norm"]
    assert mx.shape == (tr["steps"], 3)
    assert np.all(mx <= clip + 1e-12)
    assert np.mean(np.isclose(mx, clip, rtol=1e-9)) > 0.9  # the bound is actually reached


def test_noise_free_huge_clip_equals_minibatch_sgd():
    """σ = 0, ν = ∞-like, shuffling: DP-SGD is plain minibatch SGD on the mean CE (same permutations)."""
    n, bs, epochs, lr = len(Y), 50, 3, 1.0
    theta = dpsgd_softmax(
        X, Y, 4, noise_multiplier=0.0, clip=1e6, batch_size=bs, epochs=epochs, learning_rate=lr,
        rng=np.random.default_rng(3), sampling="shuffle",
    )[0]
    rng = np.random.default_rng(3)
    ref = np.zeros(12 * 4)
    for _ in range(epochs):
        perm = rng.permuted(np.broadcast_to(np.arange(n), (1, n)), axis=1)[0]
        for j in range(0, n, bs):
            b = perm[j : j + bs]
            ref -= lr * softmax_objective(ref, X[b], Y[b], 0.0)[1]
    np.testing.assert_allclose(theta.ravel(), ref, rtol=1e-9, atol=1e-12)
    j0 = softmax_objective(np.zeros(48), X, Y, 0.0)[0]
    j1 = softmax_objective(theta.ravel(), X, Y, 0.0)[0]
    assert j0 == pytest.approx(math.log(4))
    assert j1 < 0.5 * j0


def test_noise_free_poisson_reduces_objective():
    theta = dpsgd_softmax(
        X, Y, 4, noise_multiplier=0.0, clip=1e6, batch_size=50, epochs=3, learning_rate=1.0,
        rng=np.random.default_rng(4), n_runs=2,
    )
    j0 = softmax_objective(np.zeros(48), X, Y, 0.0)[0]
    for r in range(2):
        assert softmax_objective(theta[r].ravel(), X, Y, 0.0)[0] < 0.5 * j0


def test_deterministic_and_runs_independent():
    kw = dict(noise_multiplier=1.0, clip=1.0, batch_size=40, epochs=1, learning_rate=0.5)
    a = dpsgd_softmax(X, Y, 4, rng=np.random.default_rng(5), n_runs=3, **kw)
    b = dpsgd_softmax(X, Y, 4, rng=np.random.default_rng(5), n_runs=3, **kw)
    np.testing.assert_array_equal(a, b)
    for r in range(3):
        for s in range(r + 1, 3):
            assert not np.allclose(a[r], a[s])
    c = dpsgd_softmax(X, Y, 4, rng=np.random.default_rng(6), n_runs=3, **kw)
    assert not np.allclose(a, c)
    for sampling in ("shuffle",):
        a = dpsgd_softmax(X, Y, 4, rng=np.random.default_rng(5), sampling=sampling, n_runs=2, **kw)
        b = dpsgd_softmax(X, Y, 4, rng=np.random.default_rng(5), sampling=sampling, n_runs=2, **kw)
        np.testing.assert_array_equal(a, b)
        assert not np.allclose(a[0], a[1])


def test_poisson_batch_sizes_and_steps():
    n, bs, epochs = len(Y), 30, 5
    _, tr = dpsgd_softmax(
        X, Y, 4, noise_multiplier=1.0, clip=1.0, batch_size=bs, epochs=epochs, learning_rate=0.1,
        rng=np.random.default_rng(7), n_runs=4, return_trace=True,
    )
    assert tr["steps"] == math.ceil(epochs * n / bs)
    assert tr["denom"] == pytest.approx(bs)  # expected batch size q·N
    sizes = tr["batch_size"].ravel()
    q = bs / n
    se = math.sqrt(n * q * (1 - q) / sizes.size)
    assert abs(sizes.mean() - bs) < 4 * se
    assert sizes.var() == pytest.approx(n * q * (1 - q), rel=0.3)


def test_poisson_batches_exact_inclusion():
    rng = np.random.default_rng(8)
    n, q, R = 40, 0.15, 20000
    idx, valid = poisson_batches(rng, n, q, R)
    inc = np.zeros((R, n), dtype=bool)
    rows = np.broadcast_to(np.arange(R)[:, None], idx.shape)
    inc[rows[valid], idx[valid]] = True
    assert inc.sum() == valid.sum()  # no duplicates within a batch
    freq = inc.mean(0)
    assert np.all(np.abs(freq - q) < 5 * math.sqrt(q * (1 - q) / R))
    # pairwise independence of inclusions (correlation ~ 0)
    c = np.corrcoef(inc[:, :10].T)
    assert np.abs(c[np.triu_indices(10, 1)]).max() < 0.05
    both = valid[:, 1:] & valid[:, :-1]
    assert np.all(np.diff(idx, axis=1)[both] > 0)  # sorted
    assert np.all(np.diff(valid.astype(int), axis=1) <= 0)  # padding last
    # q = 1: everything included
    idx1, valid1 = poisson_batches(rng, 7, 1.0, 3)
    assert valid1.all() and np.array_equal(idx1, np.tile(np.arange(7), (3, 1)))


def test_shuffle_covers_each_example_once_per_epoch():
    _, tr = dpsgd_softmax(
        X, Y, 4, noise_multiplier=0.0, clip=1.0, batch_size=70, epochs=2, learning_rate=0.1,
        rng=np.random.default_rng(9), n_runs=2, sampling="shuffle", return_trace=True,
    )
    per_epoch = math.ceil(len(Y) / 70)
    assert tr["steps"] == 2 * per_epoch
    assert np.all(tr["batch_size"][:per_epoch].sum(0) == len(Y))


def test_lr_schedule():
    f = lr_factors(100, "step")
    np.testing.assert_allclose(f[[0, 24, 25, 49, 50, 74, 75, 99]], [1, 1, 0.1, 0.1, 0.01, 0.01, 1e-3, 1e-3])
    assert np.all(lr_factors(10, "constant") == 1)
    with pytest.raises(ValueError):
        lr_factors(10, "cosine")
    _, tr = dpsgd_softmax(
        X, Y, 4, noise_multiplier=1.0, clip=1.0, batch_size=60, epochs=4, learning_rate=2.0,
        rng=np.random.default_rng(10), lr_schedule="step", return_trace=True,
    )
    assert tr["lr"][0] == 2.0 and tr["lr"][-1] == pytest.approx(2e-3)


def test_empty_batches_and_warm_start():
    Xs, ys = X[:10], Y[:10]
    theta, tr = dpsgd_softmax(
        Xs, ys, 4, noise_multiplier=1.0, clip=1.0, batch_size=1, epochs=5, learning_rate=0.1,
        rng=np.random.default_rng(11), return_trace=True, theta0=np.ones((12, 4)),
    )
    assert (tr["batch_size"] == 0).any() and np.all(np.isfinite(theta))
    th0 = dpsgd_softmax(
        X, Y, 4, noise_multiplier=0.0, clip=1e-300, batch_size=10, epochs=1, learning_rate=1.0,
        rng=np.random.default_rng(12), n_runs=2, theta0=np.full((12, 4), 0.25),
    )
    np.testing.assert_allclose(th0, 0.25, atol=1e-250)  # ν → 0 and σ = 0: θ stays at theta0


def test_noise_scale():
    """With all-zero features every g_n = 0, so θ is pure noise: std = lr·σ·ν/(qN)·√steps."""
    sigma, clip, bs, lr = 2.0, 1e-3, 20, 1.0
    Xs, ys = np.zeros((100, 12)), Y[:100]
    theta = dpsgd_softmax(
        Xs, ys, 4, noise_multiplier=sigma, clip=clip, batch_size=bs, epochs=1, learning_rate=lr,
        rng=np.random.default_rng(13), n_runs=50,
    )
    steps = math.ceil(100 / bs)
    expected = lr * sigma * clip / bs * math.sqrt(steps)
    assert theta.std() == pytest.approx(expected, rel=0.05)
    assert abs(theta.mean()) < 0.05 * expected


def test_input_validation():
    with pytest.raises(ValueError):
        dpsgd_softmax(X, Y, 4, noise_multiplier=1, clip=1, batch_size=0, epochs=1, learning_rate=1,
                      rng=np.random.default_rng(0))
    with pytest.raises(ValueError):
        dpsgd_softmax(X, Y, 4, noise_multiplier=1, clip=1, batch_size=10, epochs=1, learning_rate=1,
                      rng=np.random.default_rng(0), sampling="bernoulli")
    with pytest.raises(TypeError):
        dpsgd_softmax(X, Y, 4, noise_multiplier=1, clip=1, batch_size=10, epochs=1, learning_rate=1, rng=0)


@pytest.mark.parametrize("sampling, epochs", [("poisson", 2), ("poisson", 1.5), ("shuffle", 2)])
def test_accounted_steps_are_the_steps_taken(sampling, epochs):
    from dpbench.learn import dpsgd_steps

    X, y = unit_ball_data(103, 6, 3, seed=5)
    _, trace = dpsgd_softmax(X, y, 3, noise_multiplier=1.0, clip=1.0, batch_size=10, epochs=epochs,
                             learning_rate=0.1, rng=np.random.default_rng(0), sampling=sampling, return_trace=True)
    assert trace["steps"] == dpsgd_steps(103, 10, epochs, sampling)
    assert dpsgd_steps(103, 10, 2, "shuffle") == 22 and dpsgd_steps(103, 10, 2, "poisson") == 21


# Outputs of the two DP-SGD loops before they were merged into dpbench.learn.dpsgd.dpsgd_loop (the softmax loop of
# this module and the copy in learn/mlp.py), frozen: the shared loop must reproduce them (bit-identical here; the
# tolerance only allows for another BLAS).
_FROZEN_DPSGD = {
    "softmax_poisson": [[0.13370694965513757, 0.22056357025555995, -0.09877761180040201],
                        [-0.09647638294185557, -0.2709473992807671, 0.2034442064511076]],
    "mlp_poisson": [[0.26053659972458526, -0.38021009150071766, -0.3321745789779046],
                    [1.6060973381059849, -1.8729755568751425, 0.1700309592138453]],
    "softmax_shuffle": [[-0.12902592059747733, 0.21239317842481092, 0.06422163157312667],
                        [0.04293580058404202, 0.11473208504126677, 0.11692949691717963]],
    "mlp_shuffle": [[0.2315875541126774, -0.3752765099214587, -0.4264538631230458],
                    [1.339638113331975, -1.6638789866571861, 0.25072866187896825]],
}


@pytest.mark.parametrize("sampling", ["poisson", "shuffle"])
def test_shared_dpsgd_loop_reproduces_the_softmax_and_mlp_loops_it_replaced(sampling):
    from dpbench.methods.mlp import dpsgd_mlp

    g = np.random.default_rng(0)
    X = g.standard_normal((40, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = g.integers(0, 3, 40)
    th = dpsgd_softmax(X, y, 3, noise_multiplier=1.1, clip=0.5, batch_size=8, epochs=2, learning_rate=0.5,
                       rng=np.random.default_rng(1), n_runs=2, sampling=sampling)
    np.testing.assert_allclose(th[:, 0, :], _FROZEN_DPSGD[f"softmax_{sampling}"], rtol=1e-12, atol=1e-15)
    p = dpsgd_mlp(X, y, 3, 3, 1.1, 0.5, 8, 2, 0.5, [np.random.default_rng(2), np.random.default_rng(3)], n_runs=2,
                  sampling=sampling)
    np.testing.assert_allclose(p.flat()[:, :3], _FROZEN_DPSGD[f"mlp_{sampling}"], rtol=1e-12, atol=1e-15)


# ---- float32 (the ``float32`` setting of vdm2020's dpsgd and mlp.dpsgd) ---------------------------------------

def _one_example_sums(plug_of, theta, X32, P):
    """Σ_n s_n g_n of single-example batches through a float32 plug: the clipped gradient of each example exactly
    as the loop adds it (float32 products), one row per example."""
    out = []
    for n in range(X32.shape[0]):
        acc = np.zeros((1, P), dtype=np.float32)
        plug_of(theta[None], X32[n][None, None], np.array([[n]]), None, acc)
        out.append(acc[0])
    return np.array(out)


def test_float32_clipped_gradient_as_represented_is_at_most_clip():
    """In float32 every clipped per-example gradient, as the float32 sum receives it, has norm ≤ ν (clip factors
    from float64 norms against ν·(1 − 2⁻²⁰)) — softmax and MLP, on examples far above the clip."""
    from dpbench.learn.dpsgd import softmax_clipped_sum
    from dpbench.learn.mlp import mlp_clipped_sum

    rng = np.random.default_rng(3)
    X32 = X[:300].astype(np.float32)
    y = Y[:300]
    # without the margin the represented norm exceeds ν by up to ~1e-7 (relative) on these draws
    for clip in (0.05, 0.3, 0.3, 0.3, 0.05):
        theta = (rng.standard_normal(4 * 12) * 5).astype(np.float32)
        sums = _one_example_sums(softmax_clipped_sum(y, X32, 4, clip), theta, X32, 48)
        norms = np.linalg.norm(sums.astype(np.float64), axis=1)
        assert norms.max() <= clip and np.mean(norms > clip * (1 - 1e-5)) > 0.2   # clipped, and near ν
        H = 5
        P = 12 * H + H + H * 4 + 4
        theta = (rng.standard_normal(P) * 3).astype(np.float32)
        sums = _one_example_sums(mlp_clipped_sum(y, X32, H, 4, clip), theta, X32, P)
        norms = np.linalg.norm(sums.astype(np.float64), axis=1)
        assert norms.max() <= clip and np.mean(norms > clip * (1 - 1e-5)) > 0.2


def test_float32_is_reproducible_and_matches_float64_within_noise():
    """float32 runs: bit-identical for the same generator, float64 parameters returned, and the same model as
    float64 up to the noise: noise-free, the two precisions agree to single-precision rounding; with noise, the
    mean test accuracy of 20 runs agrees within its standard errors."""
    kw = dict(clip=0.5, batch_size=32, epochs=3, learning_rate=0.5, n_runs=20)
    a = dpsgd_softmax(X, Y, 4, noise_multiplier=1.0, rng=np.random.default_rng(5), float32=True, **kw)
    b = dpsgd_softmax(X, Y, 4, noise_multiplier=1.0, rng=np.random.default_rng(5), float32=True, **kw)
    assert a.dtype == np.float64 and np.array_equal(a, b)
    f64 = dpsgd_softmax(X, Y, 4, noise_multiplier=0.0, rng=np.random.default_rng(5), **kw)
    f32 = dpsgd_softmax(X, Y, 4, noise_multiplier=0.0, rng=np.random.default_rng(5), float32=True, **kw)
    np.testing.assert_allclose(f32, f64, rtol=0, atol=2e-4 * np.abs(f64).max())
    c = dpsgd_softmax(X, Y, 4, noise_multiplier=1.0, rng=np.random.default_rng(6), **kw)

    def acc(th):
        return ((X @ th).argmax(axis=2) == Y).mean(axis=1)
    se = math.hypot(acc(a).std(ddof=1), acc(c).std(ddof=1)) / math.sqrt(20)
    assert abs(acc(a).mean() - acc(c).mean()) < 4 * se + 1e-3


def test_float32_noise_scale():
    """float32 noise: std lr·σ·ν/(qN)·√steps as in float64 (all-zero features: θ is the noise alone)."""
    sigma, clip, bs, lr = 2.0, 1e-3, 20, 1.0
    theta = dpsgd_softmax(np.zeros((100, 12)), Y[:100], 4, noise_multiplier=sigma, clip=clip, batch_size=bs,
                          epochs=1, learning_rate=lr, rng=np.random.default_rng(13), n_runs=50, float32=True)
    expected = lr * sigma * clip / bs * math.sqrt(math.ceil(100 / bs))
    assert theta.std() == pytest.approx(expected, rel=0.05)
