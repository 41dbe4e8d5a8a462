"""Many binary linear models trained side by side by non-private permutation SGD (the engine of wu2016 ch. 3,
song2018 ch. 3–4 and the membership study's PSGD models).

The experiments of wu2016 Figs 3.2/3.3 train, per repetition, one model per (ε, class of a one-vs-all
problem): MNIST has 10 binary models per ε and every method is evaluated on 6 ε values. Those M models see the
same batches (the permutation or the with-replacement indices are data-independent randomness, so sharing
them between models that are released separately does not change any model's guarantee), so one pass over
the data can update all of them at once: ``W`` has shape (M, d) and label matrix ``Y`` (n, M) holds each
model's ±1 labels. Each update is the update of :mod:`dpbench.learn.psgd`, row by row:

    W_m ← Π_{R_m}( W_m − s_m η_t (λ W_m + (1/b) Σ_{i∈B_t} φ′(y_im⟨W_m, x_i⟩) y_im x_i + z_tm) )

with a per-model step multiplier ``s_m`` (BST14's convex step 2R/(G√t) depends on σ, hence on ε) and a per-
model noise hook ``z`` supplied by the caller. The private algorithms built on it (SCS13, BST14 and bolt-on
for many models, with their calibrations) are in :mod:`dpbench.methods.private_psgd_many`.

The loop itself is :func:`many_model_sgd`, the one many-model margin-SGD engine of the package: it also runs
song2018's chapters 3–4 (:func:`dpbench.methods.ldp_sgd.sgd_runs`, models on their own batches through
:func:`run_batch_gradient`) and the membership study's PSGD models.

Assumptions as in the engine: rows ‖x_i‖ ≤ 1, labels ±1. The timing experiment (Fig. 3.4) uses the one-model
aggregate, not this module.
"""

from __future__ import annotations

import math

import numpy as np

from dpbench.learn.psgd import get_loss, make_schedule, total_updates
from dpbench.privacy import _validate as V

__all__ = ["many_model_sgd", "shared_batch_gradient", "run_batch_gradient", "psgd_many", "one_vs_all_labels"]


def one_vs_all_labels(y, n_classes: int) -> np.ndarray:
    """(n, C) matrix of ±1 labels: column k is +1 where ``y == k`` (one binary model per class)."""
    y = np.asarray(y)
    n_classes = V.count("n_classes", n_classes)
    return np.where(y[:, None] == np.arange(n_classes)[None, :], 1.0, -1.0)


def _as_vector(name, v, M) -> np.ndarray:
    a = np.broadcast_to(np.asarray(v, dtype=np.float64), (M,)).copy()
    if not np.all(np.isfinite(a) & (a > 0)):
        raise ValueError(f"{name} must be finite and > 0, got {v!r}")
    return a


def psgd_many(X, Y, loss, passes, batch_size, schedule, rng, *, l2=0.0, radius=None, step_scale=None,
              batch_noise=None, sampling="permutation", steps=None, last_batch="keep", observe=None,
              own_batches=False):
    """Train M binary linear models on shared batches; returns ``W`` of shape (M, d) (last iterates).

    ``X`` (n, d) float rows with ‖x‖ ≤ 1 (used as given when already float64 C-contiguous: no copy);
    ``Y`` (n, M) labels ±1 (one column per model); ``schedule`` as in :func:`~dpbench.learn.psgd.make_schedule`
    (common t ↦ η_t), times ``step_scale`` (scalar or (M,), default 1); ``radius`` None, scalar or (M,)
    (projection of each row onto its ball); ``batch_noise`` None or ``(rng, M, d, m) -> (M, d)``.

    ``sampling="permutation"``: ``passes`` passes, a fresh ``rng.permutation(n)`` each, consecutive batches
    (``last_batch`` ``"keep"``/``"drop"`` as in the engine). ``sampling="replacement"`` (BST14): ``steps``
    updates (default ⌈passes·n/b⌉), each on b indices drawn uniformly with replacement (``rng.integers``).
    ``own_batches=True``: every model draws its own permutations / indices (one (M, ·) draw per pass / update),
    so the M models are independent trainings — e.g. repeated runs of a randomised algorithm, as a privacy
    audit needs; the default shares one draw among all models (one training per label column, as the studies).

    ``observe(t, W)``, if given, is called after every update t = 0, 1, …, T − 1 with the current iterates (M, d)
    — a view, updated in place afterwards (the callback must copy what it keeps) — as
    :func:`dpbench.learn.dpsgd.dpsgd_loop`'s ``observe``: the whole transcript w₁, …, w_T (a privacy audit reads
    it). It draws nothing and changes nothing.
    """
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    if X.ndim != 2 or Y.ndim != 2 or Y.shape[0] != X.shape[0]:
        raise ValueError(f"X must be (n, d) and Y (n, M) with the same n, got {X.shape} and {Y.shape}")
    n, d = X.shape
    M = Y.shape[1]
    if n < 1 or M < 1:
        raise ValueError("X needs at least one row and Y at least one column (model)")
    if not np.all(np.abs(Y) == 1.0):
        raise ValueError("labels Y must be -1 or +1")
    loss = get_loss(loss)
    passes = V.count("passes", passes)
    batch_size = V.count("batch_size", batch_size)
    if batch_size > n:
        raise ValueError(f"batch_size must be <= n = {n}, got {batch_size}")
    l2 = V.nonnegative("l2", l2)
    sched = make_schedule(schedule, l2=l2, loss=loss)
    scale = np.ones(M) if step_scale is None else _as_vector("step_scale", step_scale, M)
    R = None if radius is None else _as_vector("radius", radius, M)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if batch_noise is not None and not callable(batch_noise):
        raise ValueError("batch_noise must be None or a callable (rng, M, d, m) -> (M, d)")
    if observe is not None and not callable(observe):
        raise ValueError("observe must be None or a callable (t, W)")


    def step_sizes(t):
        eta = float(sched(t))
        if not (eta > 0 and math.isfinite(eta)):
            raise ValueError(f"step size must be finite and > 0, got eta_{t} = {eta!r}")
        return eta * scale

    def noise(rng_, G, t, m):
        G += batch_noise(rng_, M, d, m)

    if own_batches not in (True, False):
        raise ValueError(f"own_batches must be True or False, got {own_batches!r}")
    if sampling == "permutation":
        n_full = n - n % batch_size if last_batch == "drop" else n
        total_updates(n, batch_size, passes, last_batch)       # validates last_batch

        def batches():
            for _ in range(passes):
                perm = (rng.permuted(np.broadcast_to(np.arange(n), (M, n)), axis=1) if own_batches
                        else rng.permutation(n))
                for start in range(0, n_full, batch_size):
                    yield perm[..., start:min(start + batch_size, n_full)]
    elif sampling == "replacement":
        steps = -(-passes * n // batch_size) if steps is None else V.count("steps", steps)
        shape = (M, batch_size) if own_batches else batch_size

        def batches():
            for _ in range(steps):
                yield rng.integers(0, n, size=shape)
    else:
        raise ValueError(f"sampling must be 'permutation' or 'replacement', got {sampling!r}")
    gradient = run_batch_gradient(X, Y, loss, np.arange(M)) if own_batches else shared_batch_gradient(X, Y, loss)
    return many_model_sgd(np.zeros((M, d)), batches(), gradient, step_sizes, rng=rng, l2=l2,
                          radius=R, noise=None if batch_noise is None else noise,
                          observe=None if observe is None else (lambda k, W: observe(k - 1, W) if k else None))


def shared_batch_gradient(X, Y, loss):
    """Gradient plug of :func:`many_model_sgd` for M models on SHARED batches (``batch`` = the row indices):
    model m has labels ``Y[:, m]``; returns the mean batch gradients (M, d) = (φ′(Y_B ⊙ X_B Wᵀ) ⊙ Y_B)ᵀ X_B / m
    (one GEMM for all models) and the batch size m."""
    def gradient(W, idx):
        Xb, Yb = X[idx], Y[idx]
        m = Xb.shape[0]
        coef = loss.dphi(Yb * (Xb @ W.T)) * Yb              # (m, M)
        return (coef.T @ Xb) / m, m                         # (M, d): mean gradient of every model

    return gradient


def run_batch_gradient(X, y, loss, model_run):
    """Gradient plug of :func:`many_model_sgd` for models on their OWN batches: ``batch`` = (R, b) row indices,
    one row per run, model m reads run ``model_run[m]``'s rows with the common labels ``y`` (n,) — or, if ``y``
    is (n, M), with its own label column ``y[:, m]``; returns the mean batch gradients (M, d) (batched over
    models) and b."""
    same = np.array_equal(model_run, np.arange(model_run.size))
    per_model = np.ndim(y) == 2
    if per_model and np.shape(y)[1] != model_run.size:
        raise ValueError(f"per-model labels y must be (n, M) with M = {model_run.size}, got {np.shape(y)}")
    cols = np.arange(model_run.size)[:, None]

    def gradient(W, idx):
        if per_model:                                            # model m: rows of its run, its own labels
            rows = idx if same and idx.shape[0] == W.shape[0] else idx[model_run]          # (M, b)
            Xb, yb = X[rows], y[rows, cols]
        else:
            Xr, yr = X[idx], y[idx]                              # (R, b, d), (R, b)
            Xb, yb = (Xr, yr) if same and idx.shape[0] == W.shape[0] else (Xr[model_run], yr[model_run])
        b = idx.shape[1]
        coef = loss.dphi(yb * np.einsum("mbd,md->mb", Xb, W)) * yb
        return np.einsum("mb,mbd->md", coef, Xb) / b, b

    return gradient


def many_model_sgd(W, batches, gradient, step_sizes, *, rng=None, l2=0.0, radius=None, noise=None, observe=None):
    """THE projected mini-batch SGD engine of M binary linear models (rows of ``W`` (M, d), updated in place and
    returned): for each batch of ``batches`` (consumed lazily, so a batch's random draws come before the
    update's noise), with t = 1, 2, … counting updates,

        G ← gradient(W, batch) + λW + noise;   W ← Π_R(W − step_sizes(t)[:, None] · G)   row by row,

    ``gradient(W, batch) -> (G (M, d) mean batch gradients, m batch size)`` (:func:`shared_batch_gradient`,
    :func:`run_batch_gradient`), ``step_sizes(t) -> (M,)``, ``noise(rng, G, t, m)`` adds the update's noise to
    G in place (None: no noise; per-update noise comes from :mod:`dpbench.privacy.noisy_sgd` or
    :mod:`dpbench.privacy.mechanisms`), ``radius`` None or (M,) projection radii, ``observe(k, W)`` called
    after k = 0, 1, …, T updates (e.g. objective checkpoints). Serves wu2016 ch. 3 (:func:`psgd_many`), song2018
    ch. 3–4 (:func:`dpbench.methods.ldp_sgd.sgd_runs`) and the membership study.
    """
    t = 0
    for batch in batches:
        if observe is not None:
            observe(t, W)
        G, m = gradient(W, batch)
        if l2:
            G += l2 * W
        if noise is not None:
            noise(rng, G, t, m)
        t += 1
        W -= step_sizes(t)[:, None] * G
        if radius is not None:
            norms = np.linalg.norm(W, axis=1)
            over = norms > radius
            if np.any(over):
                W[over] *= (radius[over] / norms[over])[:, None]
    if observe is not None:
        observe(t, W)
    return W
