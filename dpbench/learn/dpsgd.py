"""The DP-SGD loop (van der Maaten & Hannun 2020, §3.1, Eq. 4) vectorised over repetitions, with the
per-example clipped-sum plug of the bias-free softmax model (the MLP's plug is in :mod:`dpbench.learn.mlp`). The
private learners built on it — σ chosen by an accountant — are :func:`dpbench.methods.dpsgd.dpsgd_softmax` and
:func:`dpbench.methods.mlp.dpsgd_mlp`.

One step, for each of R independent runs (θ: (D, C), no L2 term — paper §4.1):

    g_n   = x_n (p_n − e_{y_n})ᵀ                          per-example gradient of the cross-entropy
    s_n   = min(1, ν / ‖g_n‖_F),  ‖g_n‖_F = ‖p_n − e_{y_n}‖₂ ‖x_n‖₂      GLOBAL clipping (Eq. 4)
    g̃     = ( Σ_{n∈𝓑} s_n g_n  +  N(0, σ²ν² I) ) / denom
    θ     ← θ − η_t g̃

(The authors' released code clips and noises each parameter tensor separately instead: vdm2020 erratum 14 in
docs/studies/vdm2020.md#errata.)

The clipped sum is computed as X_𝓑ᵀ (diag(s) (P − Y)) without materialising per-example gradients.

Sampling:

* ``"poisson"`` (default, what the RDP accountant assumes): every example is included independently with
  probability q = batch_size / N at every step; ``steps = ceil(epochs · N / batch_size)``; ``denom = q·N``
  (= batch_size, the EXPECTED batch size — the standard unbiased form; dividing by the random actual size
  would make the sensitivity data-dependent). Inclusion is drawn exactly via geometric gaps between included
  indices (i.i.d. Geometric(q) gaps ⇔ i.i.d. Bernoulli(q) inclusion), so each run costs O(qN) random numbers
  per step instead of N; runs are padded to the largest batch with zero-weight rows.
* ``"shuffle"``: a fresh permutation per epoch and per run, consecutive fixed-size batches (the last one of
  an epoch may be smaller), ``denom`` = actual batch size, ``steps = epochs · ceil(N / batch_size)``. This is
  what the reference code does; it does NOT match the accountant's Poisson assumption — label results.

All randomness comes from ``rng`` (numpy Generator): per step, the sampling draws for all runs, then the noise
for all runs. The same generator state gives bit-identical output.

Precision: the loop runs in the dtype of θ (float64, or float32 with X, θ, the products and the noise in single
precision — half the memory traffic of the row gathers, twice the SIMD width of the products). In float32 the
clip factors are still computed in float64 from the float32 values the sum is made of (‖x_n‖ of the float32
row, ‖p_n − e_{y_n}‖ of the float32 residual), against ν·(1 − :data:`FLOAT32_CLIP_MARGIN`): the margin covers
the float32 rounding of s_n and of s_n(p_n − e_{y_n}) (≤ 2⁻²³ relative), so every clipped per-example gradient
as represented has norm ≤ ν. The noise is float32 normals (numpy's float32 ziggurat) times σν. As in every
floating-point implementation of DP-SGD, the summation order's rounding of Σ s_n g_n is not accounted for.
"""

from __future__ import annotations

import math

import numpy as np

from dpbench.privacy.mechanisms import sample_gaussian

from .lbfgs_many import EXP_FLOOR32
from .softmax import EXP_FLOOR, _as_float_matrix, _check_labels, row_block, softmax_probabilities

__all__ = ["dpsgd_loop", "softmax_clipped_sum", "clip_target", "sq_norms64", "clip_weights", "clipped_contributions", "clip_scales",
           "poisson_batches",
           "step_batches", "lr_factors"]

_TINY = 1e-300
#: float32 runs clip to ν·(1 − margin): covers the single-precision rounding of the clip factor and the scaled
#: residual (module docstring)
FLOAT32_CLIP_MARGIN = 2.0 ** -20


def clip_target(clip, dtype):
    """The ν the clip factors are computed against: ``clip``, or ``clip``·(1 − 2⁻²⁰) in float32."""
    return clip * (1.0 - FLOAT32_CLIP_MARGIN) if np.dtype(dtype) == np.float32 else clip


def sq_norms64(A):
    """Σ of squares over the last axis, accumulated in float64 (exact enough for a clip bound in any dtype)."""
    return np.einsum("...k,...k->...", A, A, dtype=np.float64)


def clip_scales(norms, clip):
    """Global-clipping factors s = min(1, ν/‖g‖) (Eq. 4); 1 for a zero gradient."""
    return np.minimum(1.0, clip / np.maximum(norms, _TINY))


def poisson_batches(rng, n, q, n_runs):
    """Poisson-sampled batches for ``n_runs`` runs: each index in [0, n) included independently w.p. ``q``.

    Returns ``(idx, valid)``, both (n_runs, m) with m the largest batch: ``idx`` holds the sorted included
    indices of each run, padded with 0 where ``valid`` is False. Exact in distribution (geometric gaps).
    """
    if not 0.0 < q <= 1.0:
        raise ValueError(f"sampling rate q must be in (0, 1], got {q}")
    mean = q * n
    k = int(math.ceil(mean + 8.0 * math.sqrt(mean * (1.0 - q)) + 16.0))
    pos = np.cumsum(rng.geometric(q, size=(n_runs, k)), axis=1)
    pos -= 1
    while np.any(pos[:, -1] < n - 1):  # some run might include more indices (probability ~1e-15)
        more = np.cumsum(rng.geometric(q, size=(n_runs, k)), axis=1)
        more += pos[:, -1:]
        pos = np.concatenate([pos, more], axis=1)
    valid = pos < n
    m = int(valid.sum(axis=1).max()) if n_runs else 0
    pos = pos[:, :m]
    valid = valid[:, :m]
    idx = np.where(valid, pos, 0)
    return idx, valid


def step_batches(rng, n, batch_size, steps, sampling, n_runs):
    """The mini-batches of ``steps`` updates of ``n_runs`` runs, one step at a time: yields ``(idx, valid,
    denom)`` with ``idx`` (n_runs, m) the sorted row indices, ``valid`` the padding mask (None when every row
    is real) and ``denom`` the divisor of Eq. 4 (q·N for ``"poisson"``, the actual size for ``"shuffle"``).

    ``rng``: one Generator for all runs, or a sequence of one Generator per run (then run r draws only from
    ``rng[r]``; Poisson batches are padded to the largest). Lazy: a step's draws happen when it is requested,
    so a caller that draws its noise between steps keeps the order sampling, noise, sampling, noise, …
    """
    shared = rng if isinstance(rng, np.random.Generator) else None
    gens = None if shared is not None else list(rng)
    if sampling == "poisson":
        q = batch_size / n
        for _ in range(steps):
            if shared is not None:
                idx, valid = poisson_batches(shared, n, q, n_runs)
            else:
                parts = [poisson_batches(g, n, q, 1) for g in gens]
                m = max(i.shape[1] for i, _ in parts)
                idx = np.zeros((n_runs, m), dtype=parts[0][0].dtype)
                valid = np.zeros((n_runs, m), dtype=bool)
                for r, (i, v) in enumerate(parts):
                    idx[r, : i.shape[1]] = i[0]
                    valid[r, : v.shape[1]] = v[0]
            yield idx, valid, q * n
    elif sampling == "shuffle":
        per_epoch = int(math.ceil(n / batch_size))
        grid = np.broadcast_to(np.arange(n), (n_runs, n))
        perm = None
        for t in range(steps):
            j = t % per_epoch
            if j == 0:  # a fresh permutation per epoch and per run
                perm = (shared.permuted(grid, axis=1) if shared is not None
                        else np.stack([g.permuted(grid[:1], axis=1)[0] for g in gens]))
            idx = np.sort(perm[:, j * batch_size : (j + 1) * batch_size], axis=1)  # sorted: faster gather
            yield idx, None, idx.shape[1]
    else:
        raise ValueError(f"sampling must be 'poisson' or 'shuffle', got {sampling!r}")


def dpsgd_steps(n, batch_size, epochs, sampling="poisson"):
    """Number of noisy updates: ceil(epochs·N/batch) with Poisson sampling, int(epochs)·ceil(N/batch) with
    shuffled batches. The accountant must be given exactly this count (one formula for both)."""
    if sampling == "poisson":
        return int(math.ceil(epochs * n / batch_size))
    if sampling == "shuffle":
        return int(epochs) * int(math.ceil(n / batch_size))
    raise ValueError(f"sampling must be 'poisson' or 'shuffle', got {sampling!r}")


def lr_factors(steps, schedule):
    """Learning-rate multipliers for each step: ``"constant"`` (all 1) or ``"step"``.

    ``"step"`` divides by 10 three times at equally spaced points (after 1/4, 1/2, 3/4 of the steps), the
    paper's CIFAR schedule (§4.3); the authors' released code used StepLR(step=epochs//4, γ=0.1) per epoch.
    """
    t = np.arange(steps)
    if schedule == "constant":
        return np.ones(steps)
    if schedule == "step":
        return 0.1 ** np.minimum(3, (4 * t) // max(steps, 1))
    raise ValueError(f"lr_schedule must be 'constant' or 'step', got {schedule!r}")


def clipped_contributions(theta, X_batch, y_batch, clip):
    """Verification hook: Frobenius norms of the clipped per-example gradients s_n g_n, shape (n,).

    Materialises each g_n = x_n (p_n − e_{y_n})ᵀ explicitly (debug use only) and applies the same clipping
    factors as :func:`dpbench.methods.dpsgd.dpsgd_softmax` (computed from the closed-form norm), so a test can
    check ≤ ν.
    """
    X_batch = _as_float_matrix(X_batch)
    theta = np.asarray(theta, dtype=np.float64)
    y_batch = _check_labels(y_batch, X_batch.shape[0], theta.shape[1])
    P = softmax_probabilities(X_batch @ theta, axis=1)
    P[np.arange(X_batch.shape[0]), y_batch] -= 1.0
    closed = np.sqrt(np.einsum("nc,nc->n", P, P) * np.einsum("nd,nd->n", X_batch, X_batch))
    s = clip_scales(closed, clip)
    G = X_batch[:, :, None] * (s[:, None] * P)[:, None, :]  # (n, D, C)
    return np.sqrt(np.einsum("ndc,ndc->n", G, G))


def softmax_clipped_sum(y, X, C, clip):
    """The per-example clipped-sum plug of :func:`dpsgd_loop` for the bias-free softmax (parameters θᵀ (C, D)
    flattened): adds Σ_n s_n (p_n − e_{y_n}) x_nᵀ to ``out`` with the closed-form norm ‖g_n‖ = ‖p − y‖·‖x‖.
    Works in X's dtype (float32: norms and clip factors in float64, module docstring)."""
    D = X.shape[1]
    xnorm = np.sqrt(sq_norms64(X))
    nu = clip_target(clip, X.dtype)
    floor = EXP_FLOOR if X.dtype == np.float64 else EXP_FLOOR32
    rows = row_block(D, C)

    def plug(theta, Xb, ii, valid, out):
        k, m, _ = Xb.shape
        # both products in row blocks under OpenBLAS's small-matrix size (softmax.row_block): a batch of 256
        # rows x 785 in 3 blocks; a block of 10 runs costs 0.775x the CPU of whole products
        # (benchmarks/dpsgd_precision.py --blocks). One block: the whole product, no copy into ZT
        nb = -(-m // rows)
        edges = [m * j // nb for j in range(nb + 1)]
        # (P − Y)ᵀ, shape (k, C, m)
        thetaR = theta.reshape(k, C, D)
        if nb == 1:
            ZT = np.matmul(thetaR, Xb.transpose(0, 2, 1))
        else:
            ZT = np.empty((k, C, m), dtype=Xb.dtype)
            for a, b in zip(edges[:-1], edges[1:]):
                ZT[:, :, a:b] = np.matmul(thetaR, Xb[:, a:b].transpose(0, 2, 1))
        ZT -= ZT.max(axis=1, keepdims=True)
        np.maximum(ZT, floor, out=ZT)  # avoid subnormals (10x slower arithmetic)
        np.exp(ZT, out=ZT)
        ZT /= ZT.sum(axis=1, keepdims=True)
        flat_true = ((np.arange(k)[:, None] * C + y[ii]) * m + np.arange(m)).reshape(-1)
        ZT.reshape(-1)[flat_true] -= 1.0
        # global clipping with the closed-form norm ‖p − y‖·‖x‖
        gnorm = np.sqrt(sq_norms64(ZT.transpose(0, 2, 1))) * xnorm[ii]
        scale = clip_weights(gnorm, nu, valid)
        ZT *= scale.astype(ZT.dtype)[:, None, :]
        acc = out.reshape(k, C, D)
        for a, b in zip(edges[:-1], edges[1:]):
            acc += np.matmul(ZT[:, :, a:b], Xb[:, a:b])  # Σ_n s_n (p_n − y_n) x_nᵀ
        return scale, gnorm

    return plug


def clip_weights(gnorm, clip, valid):
    """Weights of the per-example gradients in the clipped sum: :func:`clip_scales`, times 0 on the padding
    rows of a Poisson batch (``valid`` False; None when every row is real)."""
    scale = clip_scales(gnorm, clip)
    if valid is not None:
        scale *= valid  # padded rows contribute exactly 0
    return scale


def dpsgd_loop(X, theta, clipped_sum, *, rng, batch_size, steps, sampling, noise_std, lrs, return_trace=False,
               observe=None):
    """The DP-SGD loop of Eq. 4 for ``R`` runs of any model whose parameters are a flat vector: ``theta``
    (R, P) float64, updated IN PLACE. Per step t, for every run:

        g̃ = ( Σ_{n∈𝓑} s_n g_n + N(0, noise_std² I_P) ) / denom,    θ ← θ − lrs[t] · g̃

    with the batches of :func:`step_batches` (``sampling`` "poisson" or "shuffle", ``denom`` q·N or the actual
    size), the noise of :func:`~dpbench.privacy.mechanisms.sample_gaussian` (none drawn when ``noise_std`` = 0)
    and the model-specific plug ``clipped_sum(theta_rows (k, P), Xb (k, m, D), ii (k, m), valid (k, m) or None,
    out (k, P)) -> (scale, gnorm)`` that ADDS Σ_n s_n g_n of k runs to ``out`` (the rows of the noise buffer)
    and returns the clip weights s_n and norms ‖g_n‖ (k, m) (use :func:`clip_weights`).

    ``rng``: one Generator (per step: sampling of all runs, then one noise draw (R, P)) or one Generator per
    run (run r draws its sampling, then its noise (P,), from ``rng[r]`` only). Runs are processed in chunks
    whose gathered rows stay cache-resident (~4 MB). ``observe(t, theta)``, if given, is called after every
    update with the current iterates (R, P) — the full transcript θ₁, …, θ_T that DP-SGD's accountant bounds
    (a privacy audit reads it; the callback must copy what it keeps). Returns the trace dict (``"batch_size"``,
    ``"max_clipped_norm"``, ``"lr"``, ``"steps"``, ``"denom"``) if ``return_trace``, else None.
    """
    N, D = X.shape
    R, P = theta.shape
    dt = theta.dtype
    if dt not in (np.float32, np.float64) or X.dtype != dt:
        raise TypeError(f"theta and X must both be float64 or both float32, got {dt} and {X.dtype}")
    shared = rng if isinstance(rng, np.random.Generator) else None
    gens = None if shared is not None else list(rng)
    if return_trace:
        tr_bs = np.zeros((steps, R), dtype=np.int64)
        tr_max = np.zeros((steps, R))
    itemsize = X.dtype.itemsize
    buf = np.empty((0, D), dtype=dt)
    gsum = np.empty((R, P), dtype=dt)
    batches = step_batches(rng, N, batch_size, steps, sampling, R)
    for t, (idx, valid, d_t) in enumerate(batches):  # each step: its sampling draws, then its noise
        m = idx.shape[1]
        # ---- noise on the sum (all runs), then the clipped sums added in place ---------------------------
        if noise_std > 0.0:
            if shared is not None:
                gsum[...] = sample_gaussian(shared, noise_std, (R, P), dtype=dt)
            else:
                for r, g in enumerate(gens):
                    gsum[r] = sample_gaussian(g, noise_std, P, dtype=dt)
        else:
            gsum[...] = 0.0
        if m:
            chunk = max(1, min(R, (4 << 20) // max(1, m * D * itemsize)))
            if buf.shape[0] < chunk * m:
                buf = np.empty((int(chunk * m * 1.25) + 8, D), dtype=dt)
            for s in range(0, R, chunk):
                e = min(R, s + chunk)
                k = e - s
                ii = idx[s:e]
                Xb = np.take(X, ii.reshape(-1), axis=0, out=buf[: k * m], mode="clip").reshape(k, m, D)
                scale, gnorm = clipped_sum(theta[s:e], Xb, ii, None if valid is None else valid[s:e], gsum[s:e])
                if return_trace:
                    tr_max[t, s:e] = (scale * gnorm).max(axis=1)
        gsum *= dt.type(lrs[t] / d_t)
        theta -= gsum
        if observe is not None:
            observe(t, theta)
        if return_trace:
            tr_bs[t] = valid.sum(axis=1) if valid is not None else m
    if not return_trace:
        return None
    denom = (batch_size / N) * N if sampling == "poisson" else "actual batch size"
    return {"batch_size": tr_bs, "max_clipped_norm": tr_max, "lr": lrs, "steps": steps, "denom": denom}
