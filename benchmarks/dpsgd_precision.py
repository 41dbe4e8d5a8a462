"""DP-SGD in float64 vs float32 (the ``float32`` setting of ``dpsgd`` and ``mlp.dpsgd``), timed alternately.

One epoch of the vdm2020 default shapes on a synthetic MNIST-like matrix (N = 54,000 rows — the tuning split —,
D = 785, non-negative, ‖x‖ ≤ 1, 10 classes): a DP-SGD block of 10 softmax runs (``dpsgd_softmax``, batch 256,
Poisson) and one MLP run (``dpsgd_mlp``, H = 64). BLAS limited to one thread (what a job does); each pair
A B A B … in one process; prints per kind the CPU seconds of each precision (median [range]) and the ratio
float32 / float64 of the alternated pairs, and the 1-minute load. Then the private step against a non-private
one of ours on the same shapes, alternated the same way: the MLP's DP-SGD epoch (float32) vs ``fit_mlp`` (plain
mini-batch SGD, batch 256, same network), and the softmax block of 10 DP-SGD runs (float32) vs the same loop
without noise and clipping (σ = 0, ν = 10⁹: minibatch SGD, float32).

    python benchmarks/dpsgd_precision.py [--pairs 5] [--epochs 1]

``--blocks``: instead, the softmax block of 10 runs (float32) with its two products per step cut into row blocks
under OpenBLAS's small-matrix size (:func:`dpbench.learn.softmax.row_block`, the default) against whole products
(one block), alternated the same way; prints the ratio blocked / whole and how far the final parameters move.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

from dpbench.methods.dpsgd import dpsgd_softmax
from dpbench.methods.mlp import dpsgd_mlp


def data(n=54_000, d=785, c=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d)) * (rng.random((n, d)) < 0.2)
    X[:, -1] = 1.0
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = rng.integers(0, c, n)
    return X, y


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--blocks", action="store_true", help="row-blocked products against whole ones")
    a = ap.parse_args(argv)
    X, y = data()
    if a.blocks:
        return blocks(X, y, a)
    kinds = {
        "softmax block of 10": lambda f32: dpsgd_softmax(X, y, 10, noise_multiplier=1.0, clip=0.5, batch_size=256,
                                                        epochs=a.epochs, learning_rate=2.0,
                                                        rng=np.random.default_rng(1), n_runs=10, float32=f32),
        "MLP run (H = 64)": lambda f32: dpsgd_mlp(X, y, 10, 64, 1.0, 0.5, 256, a.epochs, 2.0,
                                                  np.random.default_rng(1), float32=f32),
    }
    print(f"load {os.getloadavg()[0]:.2f}; {a.pairs} pairs, {a.epochs} epoch(s), one BLAS thread")
    with threadpool_limits(1):
        for name, run in kinds.items():
            t = {False: [], True: []}
            for _ in range(a.pairs):
                for f32 in (False, True):
                    c0 = time.process_time()
                    run(f32)
                    t[f32].append(time.process_time() - c0)
            r = [b / a_ for a_, b in zip(t[False], t[True])]
            fmt = lambda v: f"{statistics.median(v):.3f} [{min(v):.3f}-{max(v):.3f}]"  # noqa: E731
            print(f"{name}: float64 {fmt(t[False])} s, float32 {fmt(t[True])} s, "
                  f"float32/float64 {fmt(r)}")
        from dpbench.learn.mlp import fit_mlp

        pairs = {
            "MLP: DP-SGD float32 / non-private SGD": (
                lambda: dpsgd_mlp(X, y, 10, 64, 1.0, 0.5, 256, a.epochs, 2.0, np.random.default_rng(1), float32=True),
                lambda: fit_mlp(X, y, 10, 64, a.epochs, 256, 2.0, np.random.default_rng(1))),
            "softmax x10: DP-SGD float32 / no noise, no clip": (
                lambda: kinds["softmax block of 10"](True),
                lambda: dpsgd_softmax(X, y, 10, noise_multiplier=0.0, clip=1e9, batch_size=256, epochs=a.epochs,
                                      learning_rate=2.0, rng=np.random.default_rng(1), n_runs=10, float32=True)),
        }
        for name, (priv, plain) in pairs.items():
            t = {0: [], 1: []}
            for _ in range(a.pairs):
                for i, f in enumerate((priv, plain)):
                    c0 = time.process_time()
                    f()
                    t[i].append(time.process_time() - c0)
            r = [p / q for p, q in zip(t[0], t[1])]
            print(f"{name}: {fmt(t[0])} s / {fmt(t[1])} s = {fmt(r)}")
    print(f"load {os.getloadavg()[0]:.2f}")


def blocks(X, y, a):
    import dpbench.learn.dpsgd as dpsgd_module

    blocked_rows = dpsgd_module.row_block

    def run(whole):
        dpsgd_module.row_block = (lambda d, c: 1 << 30) if whole else blocked_rows
        try:
            c0 = time.process_time()
            theta = dpsgd_softmax(X, y, 10, noise_multiplier=1.0, clip=0.5, batch_size=256, epochs=a.epochs,
                                  learning_rate=2.0, rng=np.random.default_rng(1), n_runs=10, float32=True)
            return time.process_time() - c0, theta
        finally:
            dpsgd_module.row_block = blocked_rows

    print(f"load {os.getloadavg()[0]:.2f}; {a.pairs} pairs, {a.epochs} epoch(s), one BLAS thread, "
          f"blocks of {blocked_rows(X.shape[1], 10)} rows")
    t = {True: [], False: []}
    with threadpool_limits(1):
        for i in range(a.pairs):
            for whole in ((True, False) if i % 2 == 0 else (False, True)):
                cpu, theta = run(whole)
                t[whole].append(cpu)
                if whole:
                    th_whole = np.asarray(theta)
                else:
                    th_blocked = np.asarray(theta)
    r = [b / w for w, b in zip(t[True], t[False])]
    fmt = lambda v: f"{statistics.median(v):.3f} [{min(v):.3f}-{max(v):.3f}]"  # noqa: E731
    rel = float(np.abs(th_blocked - th_whole).max() / np.abs(th_whole).max())
    print(f"softmax block of 10, float32: whole {fmt(t[True])} s, blocked {fmt(t[False])} s, "
          f"blocked/whole {fmt(r)}; final parameters: max |difference| / max |θ| = {rel:.2e}")
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
