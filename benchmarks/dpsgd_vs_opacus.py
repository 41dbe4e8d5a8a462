"""One DP-SGD epoch of dpbench against Opacus (ghost clipping and per-sample hooks) and against non-private
epochs (plain PyTorch, and dpbench's own loop without clipping and noise), timed alternately in one process.

The vdm2020 default shapes on a synthetic MNIST-like matrix (N = 54,000 rows — the tuning split —, D = 785
non-negative features with ‖x‖ ≤ 1, 10 classes), batch 256, σ = 1, ν = 0.5, learning rate 2, one epoch:

* ``linear``: the bias-free softmax model (θ: 785 × 10; the last feature is the constant bias feature);
* ``mlp``: the one-hidden-layer network, H = 64 (ReLU), biases in both layers.

Per model, one round runs every contender once, in order, and the rounds repeat (A B C D A B C D …); the CPU
seconds (``time.process_time``) of each, their median [range], and the ratios of the alternated pairs are printed,
with the 1-minute load before and after. One BLAS / torch thread (what a dpbench job uses). Every contender is
timed as a user calls it, from the float64 NumPy arrays to the trained model: dpbench's input checks and float32
copy, torch's tensor conversion and Opacus' ``make_private`` are inside the time (``--epochs`` > 1 spreads
them).

* ``dpbench``: :func:`dpbench.methods.dpsgd.dpsgd_softmax` / :func:`dpbench.methods.mlp.dpsgd_mlp`, float32
  (the default), Poisson sampling at q = 256/N, global clipping, one run.
* ``dpbench non-private``: the same loop with σ = 0 and ν = 10⁹ (no noise, nothing clipped) for the linear model;
  :func:`dpbench.learn.mlp.fit_mlp` (plain mini-batch SGD, batch 256) for the MLP.
* ``opacus ghost`` / ``opacus hooks``: ``PrivacyEngine.make_private(..., poisson_sampling=True,
  grad_sample_mode="ghost" | "hooks")`` with the same σ, ν, batch size and learning rate (plain SGD, float32). Its
  Poisson sampling is done by Opacus' own ``DPDataLoader`` over a ``TensorDataset``.
* ``torch non-private``: the same model and optimiser, shuffled batches of 256, no Opacus.

    pip install torch==2.13.0 opacus      # not dependencies of dpbench
    python benchmarks/dpsgd_vs_opacus.py [--rounds 5] [--epochs 1] [--models linear mlp]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

import numpy as np


def data(n=54_000, d=785, c=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d)) * (rng.random((n, d)) < 0.2)
    X[:, -1] = 1.0
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, rng.integers(0, c, n)


def torch_model(kind, d, c, hidden):
    import torch.nn as nn

    if kind == "linear":
        return nn.Linear(d, c, bias=False)
    return nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, c))


def opacus_epoch(X, y, kind, mode, *, sigma, clip, batch, lr, hidden, epochs=1):
    import torch
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    c0 = time.process_time()
    torch.manual_seed(0)
    model = torch_model(kind, X.shape[1], 10, hidden)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    loader = DataLoader(TensorDataset(torch.from_numpy(X.astype(np.float32)), torch.from_numpy(y)),
                        batch_size=batch)
    crit = torch.nn.CrossEntropyLoss()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = PrivacyEngine()
        if mode == "ghost":
            model, opt, crit, loader = engine.make_private(module=model, optimizer=opt, data_loader=loader,
                                                           criterion=crit, noise_multiplier=sigma, max_grad_norm=clip,
                                                           poisson_sampling=True, grad_sample_mode="ghost")
        else:
            model, opt, loader = engine.make_private(module=model, optimizer=opt, data_loader=loader,
                                                     noise_multiplier=sigma, max_grad_norm=clip,
                                                     poisson_sampling=True, grad_sample_mode="hooks")
        for _ in range(epochs):
            for xb, yb in loader:
                opt.zero_grad()
                loss = crit(model(xb), yb)
                loss.backward()
                opt.step()
    return time.process_time() - c0


def torch_epoch(X, y, kind, *, batch, lr, hidden, epochs=1):
    import torch

    c0 = time.process_time()
    torch.manual_seed(0)
    model = torch_model(kind, X.shape[1], 10, hidden)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    Xt, yt = torch.from_numpy(X.astype(np.float32)), torch.from_numpy(y)
    crit = torch.nn.CrossEntropyLoss()
    for _ in range(epochs):
        perm = torch.randperm(Xt.shape[0])
        for s in range(0, Xt.shape[0], batch):
            i = perm[s : s + batch]
            opt.zero_grad()
            crit(model(Xt[i]), yt[i]).backward()
            opt.step()
    return time.process_time() - c0


def timed(f):
    c0 = time.process_time()
    f()
    return time.process_time() - c0


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--models", nargs="+", default=["linear", "mlp"])
    ap.add_argument("--epochs", type=int, default=1)
    a = ap.parse_args(argv)
    import torch
    from threadpoolctl import threadpool_limits

    from dpbench.learn.mlp import fit_mlp
    from dpbench.methods.dpsgd import dpsgd_softmax
    from dpbench.methods.mlp import dpsgd_mlp

    torch.set_num_threads(1)
    X, y = data()
    E = a.epochs
    kw = dict(sigma=1.0, clip=0.5, batch=256, lr=2.0, hidden=64, epochs=E)
    print(f"load before {os.getloadavg()[0]:.2f}; N = {X.shape[0]}, D = {X.shape[1]}, {E} epoch(s), {a.rounds} rounds, "
          f"one thread; torch {torch.__version__}")
    with threadpool_limits(1):
        for kind in a.models:
            if kind == "linear":
                ours = lambda: dpsgd_softmax(X, y, 10, noise_multiplier=1.0, clip=0.5, batch_size=256, epochs=E,  # noqa: E731
                                             learning_rate=2.0, rng=np.random.default_rng(1), float32=True)
                ours_np = lambda: dpsgd_softmax(X, y, 10, noise_multiplier=0.0, clip=1e9, batch_size=256, epochs=E,  # noqa: E731
                                                learning_rate=2.0, rng=np.random.default_rng(1), float32=True)
            else:
                ours = lambda: dpsgd_mlp(X, y, 10, 64, 1.0, 0.5, 256, E, 2.0, np.random.default_rng(1),  # noqa: E731
                                         float32=True)
                ours_np = lambda: fit_mlp(X, y, 10, 64, E, 256, 2.0, np.random.default_rng(1))  # noqa: E731
            runs = {
                "dpbench": lambda: timed(ours),
                "dpbench non-private": lambda: timed(ours_np),
                "opacus ghost": lambda: opacus_epoch(X, y, kind, "ghost", **kw),
                "opacus hooks": lambda: opacus_epoch(X, y, kind, "hooks", **kw),
                "torch non-private": lambda: torch_epoch(X, y, kind, batch=256, lr=2.0, hidden=64, epochs=E),
            }
            t = {k: [] for k in runs}
            for _ in range(a.rounds):
                for k, f in runs.items():
                    t[k].append(f())
            fmt = lambda v: f"{statistics.median(v):.3f} [{min(v):.3f}-{max(v):.3f}]"  # noqa: E731
            print(f"\n{kind}: CPU seconds per call ({E} epoch(s)), median [range] of {a.rounds}")
            for k, v in t.items():
                print(f"  {k:22s} {fmt(v)}")
            print("  ratios of the alternated runs (same round), median [range]:")
            for num, den in (("opacus ghost", "dpbench"), ("opacus hooks", "dpbench"),
                             ("dpbench", "dpbench non-private"), ("dpbench", "torch non-private")):
                print(f"  {num} / {den}: {fmt([p / q for p, q in zip(t[num], t[den])])}")
    print(f"\nload after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
