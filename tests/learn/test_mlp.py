"""Tests of dpbench.learn.mlp: back-propagation, global clipping (Eq. 4), DP-SGD/SGD equivalence, rng rules."""

import math

import numpy as np
import pytest
from synthetic import unit_ball_data

import dpbench.learn.mlp as mlp_mod
from dpbench.learn import dpsgd_steps, fit_softmax, accuracy, poisson_batches
from dpbench.learn.mlp import (
    MLPParams,
    fit_mlp,
    fit_mlp_many,
    init_mlp,
    mlp_accuracy,
    mlp_accuracy_many,
    mlp_clipped_gradient_sum,
    mlp_logits,
    mlp_loss_and_gradient,
    mlp_n_params,
    mlp_per_example_gradient_norms,
    mlp_predict,
    mlp_predict_many,
)
from dpbench.methods.mlp import dpsgd_mlp

D, H, C = 12, 8, 4
X, Y = unit_ball_data(600, D, C, 0)


def random_params(seed, d=D, h=H, c=C, scale=1.0):
    """Non-trivial parameters (non-zero biases, a mix of active and inactive ReLUs)."""
    rng = np.random.default_rng(seed)
    return MLPParams(
        rng.standard_normal((d, h)) * scale,
        rng.standard_normal(h) * 0.3 * scale,
        rng.standard_normal((h, c)) * scale,
        rng.standard_normal(c) * 0.3 * scale,
    )


def explicit_per_example_gradients(params, Xb, yb):
    """(n, P) per-example gradients, one example at a time (debug reference)."""
    return np.stack([mlp_loss_and_gradient(params, Xb[i : i + 1], yb[i : i + 1])[1].flat() for i in range(len(yb))])


def xor_data(n, seed):
    """Four clusters at (±½, ±½), label = XOR of the signs: not linearly separable. Bias folded in, ‖x‖ ≤ 1."""
    rng = np.random.default_rng(seed)
    s = rng.choice([-1.0, 1.0], size=(n, 2))
    Z = 0.5 * s + 0.08 * rng.standard_normal((n, 2))
    y = (s[:, 0] != s[:, 1]).astype(int)
    Z /= np.linalg.norm(Z, axis=1).max()
    return np.hstack([Z, np.ones((n, 1))]) / np.sqrt(2.0), y


# ---------------------------------------------------------------------------------------------------------
# parameters and model
# ---------------------------------------------------------------------------------------------------------


def test_params_flat_roundtrip_and_views():
    p = random_params(0)
    v = p.flat()
    assert v.shape == (mlp_n_params(D, H, C),) == (D * H + H + H * C + C,)
    q = MLPParams.from_flat(v, D, H, C)
    for a, b in zip((p.W1, p.b1, p.W2, p.b2), (q.W1, q.b1, q.W2, q.b2)):
        np.testing.assert_array_equal(a, b)
    q.b2[0] = 123.0  # views: writes go through to the flat vector
    assert v[-C] == 123.0
    stack = init_mlp(np.random.default_rng(1), D, H, C, n_models=3)
    assert stack.n_models == 3 and stack.W1.shape == (3, D, H) and stack.flat().shape == (3, v.size)
    with pytest.raises(ValueError):
        MLPParams(p.W1, p.b1, p.W2, np.zeros(C + 1))
    with pytest.raises(ValueError):
        MLPParams.from_flat(v[:-1], D, H, C)


def test_init_statistics_and_stack_consistency():
    p = init_mlp(np.random.default_rng(2), 400, 300, 10)
    assert p.W1.std() == pytest.approx(math.sqrt(2 / 400), rel=0.02)
    assert p.W2.std() == pytest.approx(math.sqrt(2 / 310), rel=0.05)
    assert not p.b1.any() and not p.b2.any()
    single = init_mlp(np.random.default_rng(3), D, H, C)
    one = init_mlp(np.random.default_rng(3), D, H, C, n_models=1)
    np.testing.assert_array_equal(single.flat(), one.flat()[0])


def test_logits_and_predict_many_match_single():
    stack = MLPParams(*(np.stack(a) for a in zip(*[(q.W1, q.b1, q.W2, q.b2) for q in map(random_params, range(5))])))
    p0 = stack[0]
    z = np.maximum(X @ p0.W1 + p0.b1, 0) @ p0.W2 + p0.b2
    np.testing.assert_allclose(mlp_logits(p0, X), z, rtol=1e-12)
    ref = np.stack([mlp_predict(stack[t], X) for t in range(5)])
    np.testing.assert_array_equal(mlp_predict_many(stack, X), ref)
    np.testing.assert_allclose(mlp_accuracy_many(stack, X, Y), [mlp_accuracy(stack[t], X, Y) for t in range(5)])


def test_predict_many_chunked(monkeypatch):
    stack = init_mlp(np.random.default_rng(4), D, H, C, n_models=3)
    full = mlp_predict_many(stack, X)
    monkeypatch.setattr(mlp_mod, "_CHUNK_ELEMS", 50)  # a few rows per chunk
    np.testing.assert_array_equal(mlp_predict_many(stack, X), full)


# ---------------------------------------------------------------------------------------------------------
# gradients and clipping
# ---------------------------------------------------------------------------------------------------------


def test_full_batch_gradient_equals_finite_differences():
    p = random_params(5, d=5, h=4, c=3)
    Xs, ys = unit_ball_data(30, 5, 3, 1)
    wd = 0.07
    _, g = mlp_loss_and_gradient(p, Xs, ys, weight_decay=wd)
    v = p.flat()
    fd = np.empty_like(v)
    eps = 1e-6
    for i in range(v.size):
        vp, vm = v.copy(), v.copy()
        vp[i] += eps
        vm[i] -= eps
        fp = mlp_loss_and_gradient(MLPParams.from_flat(vp, 5, 4, 3), Xs, ys, wd)[0]
        fm = mlp_loss_and_gradient(MLPParams.from_flat(vm, 5, 4, 3), Xs, ys, wd)[0]
        fd[i] = (fp - fm) / (2 * eps)
    np.testing.assert_allclose(g.flat(), fd, rtol=1e-6, atol=1e-8)
    # the value itself: mean CE + wd/2 ‖θ‖²
    z = mlp_logits(p, Xs)
    ce = np.mean(np.log(np.exp(z).sum(1)) - z[np.arange(30), ys])
    assert mlp_loss_and_gradient(p, Xs, ys, wd)[0] == pytest.approx(ce + 0.5 * wd * v @ v, rel=1e-12)


def test_per_example_norms_equal_explicit_loop():
    p = random_params(6)
    G = explicit_per_example_gradients(p, X[:40], Y[:40])
    np.testing.assert_allclose(mlp_per_example_gradient_norms(p, X[:40], Y[:40]), np.linalg.norm(G, axis=1),
                               rtol=1e-11)


def test_clipped_sum_equals_explicit_loop_and_contributions_bounded():
    p = random_params(7)
    Xb, yb = X[:50], Y[:50]
    G = explicit_per_example_gradients(p, Xb, yb)
    norms = np.linalg.norm(G, axis=1)
    clip = float(np.median(norms))
    assert norms.max() > clip > norms.min()  # both regimes exercised
    contrib = G * np.minimum(1.0, clip / norms)[:, None]
    assert np.all(np.linalg.norm(contrib, axis=1) <= clip * (1 + 1e-12))
    got = mlp_clipped_gradient_sum(p, Xb, yb, clip)
    np.testing.assert_allclose(got.flat(), contrib.sum(0), rtol=1e-10, atol=1e-12)
    # huge clip: the plain gradient sum
    np.testing.assert_allclose(mlp_clipped_gradient_sum(p, Xb, yb, 1e9).flat(),
                               50 * mlp_loss_and_gradient(p, Xb, yb)[1].flat(), rtol=1e-10)


@pytest.mark.parametrize("sampling", ["poisson", "shuffle"])
def test_dpsgd_every_clipped_contribution_bounded(sampling):
    clip = 0.05  # far below typical ‖g_n‖, so clipping is active
    params, tr = dpsgd_mlp(X, Y, C, H, 1.0, clip, 32, 1, 0.5, np.random.default_rng(8), n_runs=3,
                           sampling=sampling, return_trace=True)
    assert params.W1.shape == (3, D, H) and params.b2.shape == (3, C)
    assert tr["steps"] == dpsgd_steps(len(Y), 32, 1, sampling)
    mx = tr["max_clipped_norm"]
    assert mx.shape == (tr["steps"], 3) and np.all(mx <= clip * (1 + 1e-12))
    assert np.mean(np.isclose(mx, clip, rtol=1e-9)) > 0.9


# ---------------------------------------------------------------------------------------------------------
# DP-SGD vs plain SGD
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("schedule", ["constant", "step"])
def test_noise_free_huge_clip_equals_sgd_on_same_poisson_batches(schedule):
    """σ = 0, ν huge: each step is θ ← θ − η_t (|𝓑|/(qN)) · mean gradient on the same Poisson batch."""
    n, bs, epochs, lr = 200, 20, 2, 0.8
    Xs, ys = X[:n], Y[:n]
    got = dpsgd_mlp(Xs, ys, C, H, 0.0, 1e9, bs, epochs, lr, np.random.default_rng(9), schedule=schedule)
    rng = np.random.default_rng(9)  # replay the documented consumption: init, then one batch per step
    ref = init_mlp(rng, D, H, C).flat()
    steps = dpsgd_steps(n, bs, epochs)
    q = bs / n
    lrs = lr * (np.ones(steps) if schedule == "constant" else 0.1 ** np.minimum(3, 4 * np.arange(steps) // steps))
    sizes = []
    for t in range(steps):
        idx, valid = poisson_batches(rng, n, q, 1)
        b = idx[0][valid[0]]
        sizes.append(len(b))
        if len(b):
            g = mlp_loss_and_gradient(MLPParams.from_flat(ref, D, H, C), Xs[b], ys[b])[1].flat()
            ref = ref - lrs[t] * (len(b) / (q * n)) * g
    assert len(set(sizes)) > 1  # batch sizes really vary
    np.testing.assert_allclose(got.flat()[0], ref, rtol=1e-9, atol=1e-12)


def test_noise_free_shuffle_dpsgd_equals_fit_mlp():
    """σ = 0, ν huge, shuffled batches: DP-SGD and the non-private SGD consume the rng identically."""
    kw = dict(batch_size=64, epochs=2, learning_rate=0.7)
    dp = dpsgd_mlp(X, Y, C, H, 0.0, 1e9, rng=np.random.default_rng(10), sampling="shuffle", **kw)
    sgd = fit_mlp(X, Y, C, H, rng=np.random.default_rng(10), **kw)
    np.testing.assert_allclose(dp.flat()[0], sgd.flat(), rtol=1e-10, atol=1e-13)


def test_noise_scale():
    """σ huge: θ − θ₀ is the accumulated noise, std = η σ ν/(qN) √steps on every coordinate (biases too)."""
    sigma, clip, bs, lr, n = 1e6, 1e-3, 20, 1.0, 100
    p0 = init_mlp(np.random.default_rng(0), D, H, C)
    params = dpsgd_mlp(X[:n], Y[:n], C, H, sigma, clip, bs, 1, lr, np.random.default_rng(11), n_runs=40,
                       params0=p0)
    delta = params.flat() - p0.flat()[None]
    steps = math.ceil(n / bs)
    expected = lr * sigma * clip / bs * math.sqrt(steps)
    assert delta.std() == pytest.approx(expected, rel=0.02)
    assert (params.b2 - p0.b2).std() == pytest.approx(expected, rel=0.15)
    assert abs(delta.mean()) < 0.02 * expected


def test_huge_noise_near_chance_and_noise_free_learns():
    Xa, ya = unit_ball_data(1200, D, C, 3)
    Xtr, ytr, Xte, yte = Xa[:800], ya[:800], Xa[800:], ya[800:]
    kw = dict(batch_size=50, epochs=15, learning_rate=1.0, n_runs=20)
    noisy = dpsgd_mlp(Xtr, ytr, C, 32, 1e4, 1.0, rng=np.random.default_rng(13), **kw)
    acc_noisy = mlp_accuracy_many(noisy, Xte, yte)
    clean = dpsgd_mlp(Xtr, ytr, C, 32, 0.0, 1.0, rng=np.random.default_rng(13), **kw)
    acc_clean = mlp_accuracy_many(clean, Xte, yte)
    assert acc_noisy.mean() < 0.4  # chance = 0.25
    assert acc_clean.min() > 0.9


# ---------------------------------------------------------------------------------------------------------
# determinism and rng streams
# ---------------------------------------------------------------------------------------------------------


def test_dpsgd_deterministic_runs_differ_and_per_run_streams_match_alone():
    kw = dict(noise_multiplier=1.0, clip=1.0, batch_size=40, epochs=1, learning_rate=0.5)
    a = dpsgd_mlp(X, Y, C, H, rng=np.random.default_rng(14), n_runs=3, **kw).flat()
    b = dpsgd_mlp(X, Y, C, H, rng=np.random.default_rng(14), n_runs=3, **kw).flat()
    np.testing.assert_array_equal(a, b)
    for r in range(3):
        for s in range(r + 1, 3):
            assert not np.allclose(a[r], a[s])
    assert not np.allclose(a, dpsgd_mlp(X, Y, C, H, rng=np.random.default_rng(15), n_runs=3, **kw).flat())
    # one Generator per run: run r of the vectorised call == run r trained alone on its own generator
    for sampling in ("poisson", "shuffle"):
        seeds = [21, 22, 23]
        many = dpsgd_mlp(X, Y, C, H, rng=[np.random.default_rng(s) for s in seeds], n_runs=3, sampling=sampling,
                         **kw).flat()
        for r, s in enumerate(seeds):
            alone = dpsgd_mlp(X, Y, C, H, rng=np.random.default_rng(s), sampling=sampling, **kw).flat()[0]
            np.testing.assert_allclose(many[r], alone, rtol=1e-12, atol=1e-15)



def test_fit_many_deterministic_and_members_match_fit_mlp():
    Xs, ys = X[:480].reshape(4, 120, D), Y[:480].reshape(4, 120)
    kw = dict(epochs=3, batch_size=32, learning_rate=0.5, momentum=0.9, weight_decay=1e-3, schedule="step")
    a = fit_mlp_many(Xs, ys, C, H, rng=np.random.default_rng(16), **kw).flat()
    np.testing.assert_array_equal(a, fit_mlp_many(Xs, ys, C, H, rng=np.random.default_rng(16), **kw).flat())
    assert not np.allclose(a[0], a[1])
    seeds = [31, 32, 33, 34]
    many = fit_mlp_many(Xs, ys, C, H, rng=[np.random.default_rng(s) for s in seeds], **kw).flat()
    for t, s in enumerate(seeds):
        alone = fit_mlp(Xs[t], ys[t], C, H, rng=np.random.default_rng(s), **kw).flat()
        np.testing.assert_allclose(many[t], alone, rtol=1e-12, atol=1e-15)


def test_fit_trace_loss_decreases():
    _, tr = fit_mlp(X, Y, C, H, 5, 50, 0.5, np.random.default_rng(17), return_trace=True)
    per_epoch = math.ceil(len(Y) / 50)
    assert tr["steps"] == 5 * per_epoch and tr["loss"].shape == (tr["steps"], 1)
    assert tr["loss"][-per_epoch:].mean() < 0.5 * tr["loss"][:per_epoch].mean()


# ---------------------------------------------------------------------------------------------------------
# learning
# ---------------------------------------------------------------------------------------------------------


def test_fit_mlp_easy_problem_high_accuracy():
    Xa, ya = unit_ball_data(1000, D, C, 18)
    p = fit_mlp(Xa[:700], ya[:700], C, 16, 20, 32, 0.5, np.random.default_rng(19), momentum=0.9)
    assert mlp_accuracy(p, Xa[700:], ya[700:]) > 0.95


def test_fit_mlp_beats_linear_on_xor():
    Xtr, ytr = xor_data(400, 20)
    Xte, yte = xor_data(400, 21)
    lin = accuracy(fit_softmax(Xtr, ytr, 2, 1e-4), Xte, yte)
    p = fit_mlp(Xtr, ytr, 2, 16, 100, 32, 0.5, np.random.default_rng(22), momentum=0.9)
    acc = mlp_accuracy(p, Xte, yte)
    assert lin < 0.8 and acc > 0.97


def test_empty_poisson_batches_are_fine():
    params, tr = dpsgd_mlp(X[:10], Y[:10], C, H, 1.0, 1.0, 1, 5, 0.1, np.random.default_rng(23), return_trace=True)
    assert (tr["batch_size"] == 0).any() and np.all(np.isfinite(params.flat()))
    assert tr["denom"] == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------------------


def test_input_validation():
    p = random_params(24)
    rng = np.random.default_rng(0)
    dp = dict(noise_multiplier=1.0, clip=1.0, batch_size=10, epochs=1, learning_rate=0.1)
    bad_calls = [
        lambda: mlp_loss_and_gradient(p, X, np.where(Y == 0, C, Y)),  # label out of range
        lambda: mlp_per_example_gradient_norms(p, X, -np.ones(len(Y), int)),
        lambda: mlp_per_example_gradient_norms(p, X, Y + 0.5),  # non-integer labels
        lambda: mlp_per_example_gradient_norms(p, X, Y[:-1]),  # wrong length
        lambda: mlp_per_example_gradient_norms(p, X[:, :-1], Y),  # wrong D
        lambda: mlp_clipped_gradient_sum(p, X, Y, 0.0),
        lambda: mlp_clipped_gradient_sum(p, X, Y, -1.0),
        lambda: mlp_logits(p, X[0]),  # 1-D X
        lambda: mlp_predict_many(p, X),  # not a stack
        lambda: mlp_logits(init_mlp(rng, D, H, C, n_models=2), X),  # a stack where a single MLP is expected
        lambda: dpsgd_mlp(X, Y, C, H, **{**dp, "clip": 0.0}, rng=rng),
        lambda: dpsgd_mlp(X, Y, C, H, **{**dp, "noise_multiplier": -1.0}, rng=rng),
        lambda: dpsgd_mlp(X, Y, C, H, **{**dp, "batch_size": 0}, rng=rng),
        lambda: dpsgd_mlp(X, Y, C, H, **{**dp, "batch_size": len(Y) + 1}, rng=rng),
        lambda: dpsgd_mlp(X, Y, C, H, **dp, rng=rng, sampling="bernoulli"),
        lambda: dpsgd_mlp(X, Y, C, H, **dp, rng=rng, schedule="cosine"),
        lambda: dpsgd_mlp(X, Y, C, H, **dp, rng=rng, n_runs=0),
        lambda: dpsgd_mlp(X, Y[:-1], C, H, **dp, rng=rng),
        lambda: dpsgd_mlp(X, Y, C, 0, **dp, rng=rng),
        lambda: dpsgd_mlp(X, Y, C, H, **dp, rng=rng, params0=random_params(0, h=H + 1)),
        lambda: dpsgd_mlp(X, Y, C, H, **dp, rng=rng, n_runs=2, params0=init_mlp(rng, D, H, C, n_models=3)),
        lambda: fit_mlp_many(X, Y, C, H, 1, 10, 0.1, rng),  # Xs must be 3-D
        lambda: fit_mlp_many(X[None], Y, C, H, 1, 10, 0.1, rng),  # ys shape
        lambda: fit_mlp(X, Y, C, H, 1.5, 10, 0.1, rng),  # epochs not an integer
        lambda: fit_mlp(X, Y, C, H, 1, 10, 0.1, rng, momentum=1.0),
        lambda: fit_mlp(X, Y, C, H, 1, 10, 0.0, rng),  # learning rate
    ]
    for call in bad_calls:
        with pytest.raises(ValueError):
            call()
    with pytest.raises(TypeError):
        dpsgd_mlp(X, Y, C, H, **dp, rng=0)
    with pytest.raises(TypeError):
        dpsgd_mlp(X, Y, C, H, **dp, rng=[np.random.default_rng(0)], n_runs=2)  # one Generator per run


def test_per_tensor_clipping_plug_matches_brute_force():
    """The audit's per-tensor twin (the authors' code, vdm2020 erratum 14): every tensor of every example clipped
    to ν on its own, checked against per-example gradients from ``mlp_loss_and_gradient``; the global plug is
    unchanged, and a dominated example moves the per-tensor sum by up to 2ν (four tensors) instead of ν."""
    from dpbench.learn.mlp import MLPParams, init_mlp, mlp_clipped_sum, mlp_loss_and_gradient

    g = np.random.default_rng(3)
    D, H, C, n, nu = 3, 4, 3, 7, 0.3
    X = g.standard_normal((n, D)) * 3
    y = g.integers(0, C, n)
    p = init_mlp(g, D, H, C)
    flat = p.to_flat() if hasattr(p, "to_flat") else np.concatenate([a.ravel() for a in (p.W1, p.b1, p.W2, p.b2)])
    want = [np.zeros_like(a) for a in (p.W1, p.b1, p.W2, p.b2)]
    want_global = [np.zeros_like(a) for a in want]
    for i in range(n):
        _, gi = mlp_loss_and_gradient(p, X[i:i + 1], y[i:i + 1])
        parts = (gi.W1, gi.b1, gi.W2, gi.b2)
        tot = np.sqrt(sum(float(np.vdot(a, a)) for a in parts))
        for w, wg, a in zip(want, want_global, parts):
            w += a * min(1.0, nu / np.linalg.norm(a))
            wg += a * min(1.0, nu / tot)
    for per_tensor, expect in ((True, want), (False, want_global)):
        out = np.zeros((1, flat.size))
        plug = mlp_clipped_sum(y, X, H, C, nu, per_tensor=per_tensor)
        scale, gnorm = plug(flat[None].copy(), X[None], np.arange(n)[None], None, out)
        got = MLPParams.from_flat(out, D, H, C)
        for a, b in zip((got.W1[0], got.b1[0], got.W2[0], got.b2[0]), expect):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        assert np.all(scale * gnorm <= (2 * nu if per_tensor else nu) * (1 + 1e-12))
    # one example whose four tensors all exceed ν: its per-tensor clipped gradient has norm 2ν
    out = np.zeros((1, flat.size))
    plug = mlp_clipped_sum(y, X, H, C, 1e-6, per_tensor=True)
    scale, gnorm = plug(flat[None].copy(), X[None, :1], np.zeros((1, 1), dtype=np.int64), None, out)
    np.testing.assert_allclose(np.linalg.norm(out), 2e-6, rtol=1e-9)
