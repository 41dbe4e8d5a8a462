"""Benchmarks of the learners (not a test): ``python benchmarks/learners.py [fit|many|dpsgd|all]``.

Synthetic MNIST-shaped data (N=60000, 784 features + folded bias = 785, C=10; correlated rectified features
scaled into the unit ball). Iteration counts on real MNIST differ; timings are wall clock on whatever machine runs it.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from dpbench.methods.dpsgd import dpsgd_softmax
from dpbench.learn.softmax import accuracy, accuracy_many, fit_softmax, fit_softmax_many, predict_many


def synthetic(n=60000, d=784, c=10, seed=0, k=40, noise=0.7, iso=0.05):
    """Correlated, rectified features (class means in a k-dim latent space, mixed into d dims with a decaying
    spectrum, plus small isotropic noise), bias folded in, ‖x̃‖ ≤ 1. Returns (X (n, d+1), y)."""
    g = np.random.default_rng(12345)
    means = g.standard_normal((c, k))
    A = g.standard_normal((k, d)) / np.arange(1, k + 1)[:, None]
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, n)
    Z = means[y] + noise * rng.standard_normal((n, k))
    X = np.maximum(Z @ A + iso * rng.standard_normal((n, d)), 0.0)
    X /= np.linalg.norm(X, axis=1).max()
    X = np.hstack([X, np.ones((n, 1))]) / np.sqrt(2.0)
    return X, y


def bench_fit(X, y, Xt, yt, blas_threads=None):
    for l2 in (1e-4, 1e-3, 1e-2):
        theta, info = fit_softmax(X, y, 10, l2, blas_threads=blas_threads, return_info=True)
        print(
            f"fit_softmax N={X.shape[0]} D={X.shape[1]} l2={l2:g} blas_threads={blas_threads}: {info.n_iter} it, {info.n_fev} fev, "
            f"{info.seconds:.1f} s ({info.message}); test acc {accuracy(theta, Xt, yt):.4f}",
            flush=True,
        )


def bench_many(X, y, Xt, yt, T=256):
    n = X.shape[0] // T
    perm = np.random.default_rng(1).permutation(X.shape[0])[: T * n]
    Xs, ys = X[perm].reshape(T, n, -1), y[perm].reshape(T, n)
    preds = {}
    for method in ("separate", "joint"):
        t0 = time.perf_counter()
        thetas, info = fit_softmax_many(Xs, ys, 10, method=method, return_info=True)
        sec = time.perf_counter() - t0
        its = [info.n_iter] if method == "joint" else [i.n_iter for i in info]
        preds[method] = predict_many(thetas, Xt)
        print(
            f"fit_softmax_many[{method}] T={T} n={n} D={X.shape[1]} l2=0 gtol=1e-4: {sec:.1f} s, "
            f"iterations median {int(np.median(its))} max {max(its)}; member test acc "
            f"{accuracy_many(thetas, Xt, yt).mean():.4f}",
            flush=True,
        )
    agree = np.mean(preds["separate"] == preds["joint"])
    print(f"  member test-prediction agreement separate vs joint: {agree:.4f}", flush=True)


def bench_dpsgd(X, y, Xt, yt, epochs=20, runs=(1, 10)):
    for R in runs:
        t0 = time.perf_counter()
        th = dpsgd_softmax(
            X, y, 10, noise_multiplier=1.622, clip=2.0, batch_size=256, epochs=epochs, learning_rate=2.0,
            rng=np.random.default_rng(0), n_runs=R,
        )
        sec = time.perf_counter() - t0
        print(
            f"dpsgd_softmax N={X.shape[0]} D={X.shape[1]} bs=256 epochs={epochs} R={R}: {sec:.1f} s "
            f"({sec / R:.2f} s/run); test acc mean {accuracy_many(th, Xt, yt).mean():.4f}",
            flush=True,
        )


def main(argv=None):
    what = (argv if argv is not None else sys.argv[1:]) or ["all"]
    X, y = synthetic()
    Xt, yt = synthetic(10000, seed=1)
    if "fit" in what or "all" in what:
        bench_fit(X, y, Xt, yt)
        bench_fit(X, y, Xt, yt, blas_threads=1)
    if "many" in what or "all" in what:
        bench_many(X, y, Xt, yt)
    if "dpsgd" in what or "all" in what:
        bench_dpsgd(X, y, Xt, yt)


if __name__ == "__main__":
    main()
