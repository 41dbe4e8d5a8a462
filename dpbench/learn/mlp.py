"""One-hidden-layer ReLU MLP in numpy: non-private SGD, T independent members, and the per-example clipped-sum
plug of the DP-SGD loop (Eq. 4, global clip; the private learner is :func:`dpbench.methods.mlp.dpsgd_mlp`).

The non-convex substitute for vdm2020 Fig. 7 (CIFAR-10/ResNet-20 is out of reach on a few CPU cores): DP-SGD vs
subsample-and-aggregate with T = 16 members, plus a non-private reference.

Model (conventions of :mod:`dpbench.learn.softmax`: ``X`` (n, D) float64, integer labels ``y`` in [0, C)):

    a_n = W1ᵀ x_n + b1        (H,)     W1: (D, H), b1: (H,)
    h_n = relu(a_n)                    ReLU hidden layer (relu'(a) = 1[a > 0], 0 at the kink)
    z_n = W2ᵀ h_n + b2        (C,)     W2: (H, C), b2: (C,)
    ℓ_n = CE(z_n, y_n) = logsumexp(z_n) − z_{n,y_n}

The layers have their own biases even when the caller's X already holds a constant bias feature (harmless).
Back-propagation for one example, with δ2 = p_n − e_{y_n} and δ1 = (W2 δ2) ⊙ relu'(a_n):

    ∂ℓ/∂W1 = x δ1ᵀ,  ∂ℓ/∂b1 = δ1,  ∂ℓ/∂W2 = h δ2ᵀ,  ∂ℓ/∂b2 = δ2
    ‖g_n‖² = (‖x_n‖² + 1) ‖δ1_n‖² + (‖h_n‖² + 1) ‖δ2_n‖²          (GLOBAL norm over all parameters)

so per-example norms and clipped sums Σ_n s_n g_n (= Xᵀ(s·δ1), Σ s·δ1, Hᵀ(s·δ2), Σ s·δ2) need only the
(n, H) and (n, C) activations, never an (n, D, H) tensor.

Parameters are an :class:`MLPParams` (W1, b1, W2, b2), optionally stacked with a leading model axis
(W1: (T, D, H), …). The flat layout ("flat vector") is ``[W1.ravel(), b1, W2.ravel(), b2]`` (C order), size
P = D·H + H + H·C + C; DP-SGD noise is drawn in this order.

Initialisation (:func:`init_mlp`): He-normal for W1 (std √(2/D)), Glorot-normal for W2 (std √(2/(H + C))),
zero biases. Draw order: W1 of all models, then W2 of all models (so a stack of one equals a single model).

Randomness (same rules as :mod:`dpbench.learn.dpsgd`): everything comes from ``rng``; the same generator
state gives bit-identical output. ``rng`` may be either

* one ``numpy.random.Generator`` shared by all runs/models: initialisation of all runs, then per step the
  sampling draws for all runs, then the noise for all runs (exactly the consumption order of
  ``dpbench.methods.dpsgd.dpsgd_softmax``, plus the initialisation up front). Run r then depends on how many
  runs share the call; or
* a sequence of one Generator per run/model ("per-run streams"): run r draws only from ``rng[r]`` (its init,
  then per step its sampling, then its noise). Run r of such a call equals the call with ``rng=rng[r]`` and
  ``n_runs=1`` (the same draws; results agree to floating-point summation order, since padded batches change
  GEMM blocking — bit-identical in the tests here). A single-Generator call with ``n_runs=1`` consumes
  exactly what per-run stream 0 would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .dpsgd import clip_scales, clip_target, clip_weights, lr_factors, sq_norms64, step_batches
from .softmax import EXP_FLOOR, _as_float_matrix, _check_labels, blas_thread_limit

__all__ = [
    "MLPParams",
    "mlp_n_params",
    "init_mlp",
    "mlp_logits",
    "mlp_predict",
    "mlp_accuracy",
    "mlp_predict_many",
    "mlp_accuracy_many",
    "mlp_loss_and_gradient",
    "mlp_per_example_gradient_norms",
    "mlp_clipped_gradient_sum",
    "fit_mlp",
    "fit_mlp_many",
    "mlp_clipped_sum",
]

_CHUNK_ELEMS = 1 << 23  # ~64 MB of float64 hidden activations per chunk in the batched predictions


# ----------------------------------------------------------------------------------------------------------
# parameters
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class MLPParams:
    """Weights of one MLP (W1 (D, H), b1 (H,), W2 (H, C), b2 (C,)) or of a stack of T MLPs (leading axis T).

    Frozen (the fields cannot be rebound), but the arrays are ordinary numpy arrays — often views into one
    flat buffer (:meth:`from_flat`). ``params[t]`` is model t of a stack.
    """

    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray

    def __post_init__(self):
        W1, b1, W2, b2 = self.W1, self.b1, self.W2, self.b2
        if W1.ndim not in (2, 3):
            raise ValueError(f"W1 must be (D, H) or (T, D, H), got shape {W1.shape}")
        lead = W1.shape[:-2]
        D, H = W1.shape[-2:]
        C = W2.shape[-1] if W2.ndim >= 2 else -1
        want = {"b1": lead + (H,), "W2": lead + (H, C), "b2": lead + (C,)}
        for name, arr in (("b1", b1), ("W2", W2), ("b2", b2)):
            if arr.shape != want[name]:
                raise ValueError(f"{name} must have shape {want[name]} (from W1 {W1.shape}), got {arr.shape}")

    @property
    def dim(self) -> int:
        return self.W1.shape[-2]

    @property
    def hidden(self) -> int:
        return self.W1.shape[-1]

    @property
    def n_classes(self) -> int:
        return self.W2.shape[-1]

    @property
    def n_models(self):
        """T for a stack, None for a single model."""
        return self.W1.shape[0] if self.W1.ndim == 3 else None

    def __getitem__(self, t) -> "MLPParams":
        if self.n_models is None:
            raise TypeError("a single MLP is not indexable; only stacks are")
        return MLPParams(self.W1[t], self.b1[t], self.W2[t], self.b2[t])

    def flat(self) -> np.ndarray:
        """A new flat vector (P,) — or (T, P) for a stack — in the layout ``[W1, b1, W2, b2]``."""
        lead = self.W1.shape[:-2]
        return np.concatenate([a.reshape(lead + (-1,)) for a in (self.W1, self.b1, self.W2, self.b2)], axis=-1)

    @staticmethod
    def from_flat(vec, dim, hidden, n_classes) -> "MLPParams":
        """Views into ``vec`` ((P,) or (T, P), float64, C-contiguous) as MLPParams (writes go through)."""
        vec = np.asarray(vec)
        D, H, C = int(dim), int(hidden), int(n_classes)
        P = mlp_n_params(D, H, C)
        if vec.shape[-1:] != (P,) or vec.ndim not in (1, 2):
            raise ValueError(f"flat parameters must have shape (P,) or (T, P) with P = {P}, got {vec.shape}")
        lead = vec.shape[:-1]
        o1, o2, o3 = D * H, D * H + H, D * H + H + H * C
        return MLPParams(
            vec[..., :o1].reshape(lead + (D, H)),
            vec[..., o1:o2],
            vec[..., o2:o3].reshape(lead + (H, C)),
            vec[..., o3:],
        )


def mlp_n_params(dim, hidden, n_classes) -> int:
    """Number of parameters P = D·H + H + H·C + C."""
    D, H, C = int(dim), int(hidden), int(n_classes)
    return D * H + H + H * C + C


def _check_sizes(dim, hidden, n_classes):
    for name, v in (("dim", dim), ("hidden", hidden), ("n_classes", n_classes)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return int(dim), int(hidden), int(n_classes)


def _as_params(params) -> MLPParams:
    if not isinstance(params, MLPParams):
        raise TypeError(f"params must be an MLPParams, got {type(params).__name__}")
    return MLPParams(*(np.asarray(a, dtype=np.float64) for a in (params.W1, params.b1, params.W2, params.b2)))


def init_mlp(rng, dim, hidden, n_classes, *, n_models=None) -> MLPParams:
    """Random initial parameters: W1 ~ N(0, 2/D) (He), W2 ~ N(0, 2/(H + C)) (Glorot), b1 = b2 = 0.

    ``n_models=T`` returns a stack (leading axis T); the draws are W1 of all models then W2 of all models,
    so ``n_models=1`` gives the same numbers as a single model. The arrays are views into one flat buffer.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")
    D, H, C = _check_sizes(dim, hidden, n_classes)
    lead = () if n_models is None else (int(n_models),)
    if n_models is not None and lead[0] < 1:
        raise ValueError(f"n_models must be >= 1, got {n_models}")
    flat = np.zeros(lead + (mlp_n_params(D, H, C),))
    p = MLPParams.from_flat(flat, D, H, C)
    p.W1[...] = rng.standard_normal(lead + (D, H)) * math.sqrt(2.0 / D)
    p.W2[...] = rng.standard_normal(lead + (H, C)) * math.sqrt(2.0 / (H + C))
    return p


def _init_runs(streams, R, D, H, C, params0):
    """Flat (R, P) start: params0 (single -> broadcast, or a stack of R) or drawn from the stream(s)."""
    flat = np.empty((R, mlp_n_params(D, H, C)))
    if params0 is not None:
        p0 = _as_params(params0)
        if (p0.dim, p0.hidden, p0.n_classes) != (D, H, C) or p0.n_models not in (None, R):
            raise ValueError(
                f"params0 must be an MLP with D={D}, H={H}, C={C} (single or a stack of {R}), got "
                f"D={p0.dim}, H={p0.hidden}, C={p0.n_classes}, stack={p0.n_models}"
            )
        flat[...] = p0.flat()
        return flat
    shared, gens = streams
    if shared is not None:
        flat[...] = init_mlp(shared, D, H, C, n_models=R).flat()
    else:
        for r, g in enumerate(gens):
            flat[r] = init_mlp(g, D, H, C).flat()
    return flat


def _streams(rng, n):
    """(shared Generator, None) or (None, list of n Generators); see the module docstring."""
    if isinstance(rng, np.random.Generator):
        return rng, None
    if isinstance(rng, (list, tuple)):
        gens = list(rng)
        if len(gens) != n or not all(isinstance(g, np.random.Generator) for g in gens):
            raise TypeError(f"rng must be a numpy.random.Generator or a sequence of {n} Generators (one per run)")
        return None, gens
    raise TypeError("rng must be a numpy.random.Generator or a sequence of Generators (one per run)")


# ----------------------------------------------------------------------------------------------------------
# forward / backward core on stacks: X (R, m, D), parameters (R, ...)
# ----------------------------------------------------------------------------------------------------------


def _forward_backward(W1, b1, W2, b2, Xb, yb, want_loss=False):
    """Hidden activations and back-propagated errors for a stack of R models on their own batches.

    Returns ``(Hh, D1, D2, loss_sum)``: Hh = relu(X W1 + b1) (R, m, H), D2 = P − Y (R, m, C),
    D1 = (D2 W2ᵀ) ⊙ 1[a > 0] (R, m, H); ``loss_sum`` (R,) summed cross-entropy (None unless ``want_loss``).
    """
    R, m, _ = Xb.shape
    C = W2.shape[-1]
    A = np.matmul(Xb, W1)
    A += b1[:, None, :]
    np.maximum(A, 0.0, out=A)  # A is now h; relu'(a) = 1[h > 0]
    Hh = A
    Z = np.matmul(Hh, W2)
    Z += b2[:, None, :]
    Z -= Z.max(axis=2, keepdims=True)
    flat_true = ((np.arange(R)[:, None] * m + np.arange(m)[None, :]) * C + yb).reshape(-1)
    zf = Z.reshape(-1)
    loss_sum = None
    if want_loss:
        true_logit = zf[flat_true].reshape(R, m)
    np.maximum(Z, EXP_FLOOR if Z.dtype == np.float64 else -87.0, out=Z)  # no subnormals (softmax.EXP_FLOOR)
    np.exp(Z, out=Z)
    s = Z.sum(axis=2, keepdims=True)
    if want_loss:
        loss_sum = np.log(s[..., 0]).sum(axis=1) - true_logit.sum(axis=1)
    Z /= s
    zf[flat_true] -= 1.0
    D1 = np.matmul(Z, W2.transpose(0, 2, 1))
    D1 *= Hh > 0.0
    return Hh, D1, Z, loss_sum


def _check_xy(params, X, y):
    X = _as_float_matrix(X)
    if X.shape[1] != params.dim:
        raise ValueError(f"X has {X.shape[1]} columns but the MLP expects D = {params.dim}")
    y = _check_labels(y, X.shape[0], params.n_classes)
    return X, y


def _single(params) -> MLPParams:
    p = _as_params(params)
    if p.n_models is not None:
        raise ValueError("expected a single MLP (W1 of shape (D, H)), got a stack; use the *_many functions")
    return p


def _stacked_single(p):
    return p.W1[None], p.b1[None], p.W2[None], p.b2[None]


# ----------------------------------------------------------------------------------------------------------
# prediction
# ----------------------------------------------------------------------------------------------------------


def mlp_logits(params, X):
    """Logits relu(X W1 + b1) W2 + b2 of one MLP, shape (n, C)."""
    p = _single(params)
    X = _as_float_matrix(X)
    if X.shape[1] != p.dim:
        raise ValueError(f"X has {X.shape[1]} columns but the MLP expects D = {p.dim}")
    Hh = X @ p.W1
    Hh += p.b1
    np.maximum(Hh, 0.0, out=Hh)
    Z = Hh @ p.W2
    Z += p.b2
    return Z


def mlp_predict(params, X):
    """Predicted labels argmax_c logits, shape (n,)."""
    return np.argmax(mlp_logits(params, X), axis=1)


def mlp_accuracy(params, X, y):
    """Fraction of correctly classified rows."""
    return float(np.mean(mlp_predict(params, X) == np.asarray(y)))


def mlp_predict_many(params_many, X):
    """Labels of each model of a stack (W1 (T, D, H)) on X (n, D) -> (T, n) int.

    The first layer of all models is one wide GEMM X [W1_1 … W1_T]; chunked over rows to bound memory.
    """
    p = _as_params(params_many)
    if p.n_models is None:
        raise ValueError("mlp_predict_many expects a stack of MLPs (W1 of shape (T, D, H))")
    X = _as_float_matrix(X)
    T, D, H = p.W1.shape
    if X.shape[1] != D:
        raise ValueError(f"X has {X.shape[1]} columns but the MLPs expect D = {D}")
    n = X.shape[0]
    Wwide = np.ascontiguousarray(p.W1.transpose(1, 0, 2).reshape(D, T * H))
    bwide = p.b1.reshape(T * H)
    out = np.empty((T, n), dtype=np.intp)
    step = max(1, _CHUNK_ELEMS // max(1, T * H))
    for s in range(0, n, step):
        Hh = X[s : s + step] @ Wwide
        Hh += bwide
        np.maximum(Hh, 0.0, out=Hh)
        Hh = Hh.reshape(-1, T, H).transpose(1, 0, 2)  # (T, k, H)
        Z = np.matmul(Hh, p.W2)
        Z += p.b2[:, None, :]
        out[:, s : s + step] = np.argmax(Z, axis=2)
    return out


def mlp_accuracy_many(params_many, X, y):
    """Accuracy of each model of a stack -> (T,)."""
    return np.mean(mlp_predict_many(params_many, X) == np.asarray(y)[None, :], axis=1)


# ----------------------------------------------------------------------------------------------------------
# gradients
# ----------------------------------------------------------------------------------------------------------


def _grad_sums(Xb, Hh, D1, D2):
    """Σ_n of the per-example gradients of a stack (rows already weighted): (gW1, gb1, gW2, gb2)."""
    return (
        np.matmul(Xb.transpose(0, 2, 1), D1),
        D1.sum(axis=1),
        np.matmul(Hh.transpose(0, 2, 1), D2),
        D2.sum(axis=1),
    )


def mlp_loss_and_gradient(params, X, y, weight_decay=0.0):
    """Mean cross-entropy + (weight_decay/2)‖θ‖² over ALL parameters (biases included, like torch's SGD
    ``weight_decay``) and its gradient as an MLPParams. Returns ``(value, grad)``."""
    p = _single(params)
    X, y = _check_xy(p, X, y)
    n = X.shape[0]
    if n == 0:
        raise ValueError("X must have at least one row")
    Hh, D1, D2, loss = _forward_backward(*_stacked_single(p), X[None], y[None], want_loss=True)
    g = [a[0] / n for a in _grad_sums(X[None], Hh, D1, D2)]
    value = float(loss[0]) / n
    if weight_decay:
        arrays = (p.W1, p.b1, p.W2, p.b2)
        value += 0.5 * weight_decay * sum(float(np.vdot(a, a)) for a in arrays)
        g = [gi + weight_decay * a for gi, a in zip(g, arrays)]
    return value, MLPParams(*g)


def _norms_from_parts(xsq, Hh, D1, D2):
    """Per-example gradient norms over all parameters, accumulated in float64 from the values the gradient is made
    of (whatever their dtype: the clip bound of a float32 loop, :mod:`dpbench.learn.dpsgd`)."""
    return np.sqrt((xsq + 1.0) * sq_norms64(D1) + (sq_norms64(Hh) + 1.0) * sq_norms64(D2))


def mlp_per_example_gradient_norms(params, X, y):
    """‖∇_θ ℓ(x_n, y_n)‖₂ over all parameters (global norm), shape (n,), in closed form
    ‖g_n‖² = (‖x_n‖² + 1)‖δ1_n‖² + (‖h_n‖² + 1)‖δ2_n‖² — no per-example gradient is materialised."""
    p = _single(params)
    X, y = _check_xy(p, X, y)
    Hh, D1, D2, _ = _forward_backward(*_stacked_single(p), X[None], y[None])
    return _norms_from_parts(sq_norms64(X)[None], Hh, D1, D2)[0]


def mlp_clipped_gradient_sum(params, X, y, clip):
    """Σ_n min(1, ν/‖g_n‖) g_n with global clipping to ``clip`` = ν (Eq. 4 without noise), as an MLPParams.

    Computed as Xᵀ(s·δ1), Σ s·δ1, Hᵀ(s·δ2), Σ s·δ2 — the same code path as :func:`dpbench.methods.mlp.dpsgd_mlp`.
    """
    p = _single(params)
    X, y = _check_xy(p, X, y)
    _check_clip(clip)
    Hh, D1, D2, _ = _forward_backward(*_stacked_single(p), X[None], y[None])
    s = clip_scales(_norms_from_parts(sq_norms64(X)[None], Hh, D1, D2), clip)
    D1 *= s[..., None]
    D2 *= s[..., None]
    return MLPParams(*(a[0] for a in _grad_sums(X[None], Hh, D1, D2)))


def _check_clip(clip):
    if not (np.isscalar(clip) and np.isfinite(clip) and clip > 0):
        raise ValueError(f"clip must be a finite number > 0, got {clip!r}")


def _check_common(batch_size, n, learning_rate, schedule):
    if not isinstance(batch_size, (int, np.integer)) or not (1 <= batch_size <= n):
        raise ValueError(f"batch_size must be an integer in [1, N={n}], got {batch_size!r}")
    if not (np.isscalar(learning_rate) and np.isfinite(learning_rate) and learning_rate > 0):
        raise ValueError(f"learning_rate must be a finite number > 0, got {learning_rate!r}")
    schedule = "constant" if schedule is None else schedule
    lr_factors(1, schedule)  # validates
    return schedule


# ----------------------------------------------------------------------------------------------------------
# non-private SGD (reference model and subsample-and-aggregate members)
# ----------------------------------------------------------------------------------------------------------


def fit_mlp(
    X,
    y,
    n_classes,
    hidden,
    epochs,
    batch_size,
    learning_rate,
    rng,
    weight_decay=0.0,
    schedule="constant",
    *,
    momentum=0.0,
    params0=None,
    blas_threads=1,
    return_trace=False,
):
    """Non-private mini-batch SGD on the mean cross-entropy (the reference line of Fig. 7).

    Exactly :func:`fit_mlp_many` with T = 1 (see there); returns a single MLPParams (or ``(params, trace)``).
    """
    X = _as_float_matrix(X)
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
    out = fit_mlp_many(
        X[None], y[None], n_classes, hidden, epochs, batch_size, learning_rate, rng, weight_decay, schedule,
        momentum=momentum, params0=params0, blas_threads=blas_threads, return_trace=return_trace,
    )
    if return_trace:
        return out[0][0], out[1]
    return out[0]


def fit_mlp_many(
    Xs,
    ys,
    n_classes,
    hidden,
    epochs,
    batch_size,
    learning_rate,
    rng,
    weight_decay=0.0,
    schedule="constant",
    *,
    momentum=0.0,
    params0=None,
    blas_threads=1,
    return_trace=False,
):
    """Train T independent MLPs on T equally sized parts (subsample-and-aggregate members), all at once.

    ``Xs`` (T, n, D), ``ys`` (T, n). Each model: init (:func:`init_mlp`, or ``params0`` — single or a stack of
    T), then ``int(epochs)`` epochs of a fresh permutation of its own part, consecutive batches of
    ``batch_size`` (the last of an epoch may be smaller; all models share the batch sizes), step

        v ← μ v + (mean batch gradient + weight_decay · θ);   θ ← θ − η_t v     (torch SGD semantics)

    with μ = ``momentum`` (0 = plain SGD; the reference code used 0.9 for the CIFAR subsagg members) and
    η_t = ``learning_rate`` × :func:`lr_factors` (``schedule`` ``"constant"`` or ``"step"``: ÷10 after 1/4,
    1/2 and 3/4 of the ``int(epochs)·ceil(n/batch_size)`` steps, paper §4.3). Weight decay applies to all
    parameters, biases included.

    All models advance together with batched matmuls over the model axis. Randomness: the initialisation,
    then one permutation per model per epoch (``rng.permuted`` of the (T, n) index grid with one shared
    Generator, or each model's own Generator with per-run streams — module docstring).

    Returns the stacked MLPParams (T, …); with ``return_trace=True`` also a dict with ``"loss"`` (steps, T)
    mean batch cross-entropy before each update, ``"lr"`` (steps,), ``"steps"``.
    """
    Xs = np.asarray(Xs, dtype=np.float64)
    if Xs.ndim != 3:
        raise ValueError(f"Xs must be 3-D (T, n, D), got shape {Xs.shape}")
    if not np.isfinite(Xs).all():
        raise ValueError("Xs must hold only finite values (found NaN or infinity)")
    T, n, D = Xs.shape
    C, H = int(n_classes), hidden
    _check_sizes(D, H, C)
    ys = np.asarray(ys)
    if ys.shape != (T, n):
        raise ValueError(f"ys must have shape ({T}, {n}), got {ys.shape}")
    ys = _check_labels(ys.reshape(-1), T * n, C).reshape(T, n)
    if T < 1 or n < 1:
        raise ValueError("need at least one model and one example per model")
    if not (np.isscalar(epochs) and epochs >= 1 and float(epochs) == int(epochs)):
        raise ValueError(f"epochs must be a positive integer, got {epochs!r}")
    schedule = _check_common(batch_size, n, learning_rate, schedule)
    if not (0.0 <= momentum < 1.0) or not (weight_decay >= 0.0):
        raise ValueError(f"need 0 <= momentum < 1 and weight_decay >= 0, got {momentum}, {weight_decay}")
    streams = _streams(rng, T)
    with blas_thread_limit(blas_threads):
        return _fit_many(Xs, ys, C, int(H), int(epochs), int(batch_size), float(learning_rate), streams,
                         float(weight_decay), schedule, float(momentum), params0, return_trace)


def _fit_many(Xs, ys, C, H, epochs, bs, lr, streams, wd, schedule, mu, params0, return_trace):
    T, n, D = Xs.shape
    per_epoch = int(math.ceil(n / bs))
    steps = epochs * per_epoch
    lrs = lr * lr_factors(steps, schedule)
    theta = _init_runs(streams, T, D, H, C, params0)
    W1, b1, W2, b2 = _fields(MLPParams.from_flat(theta, D, H, C))
    grad = np.empty_like(theta)
    gW1, gb1, gW2, gb2 = _fields(MLPParams.from_flat(grad, D, H, C))
    vel = np.zeros_like(theta) if mu else None
    Xflat = Xs.reshape(T * n, D)
    yflat = ys.reshape(-1)
    base = (np.arange(T) * n)[:, None]
    shared, gens = streams
    if return_trace:
        tr_loss = np.zeros((steps, T))
    buf = np.empty((T * min(bs, n), D))
    for t, (idx, _, _) in enumerate(step_batches(shared if shared is not None else gens, n, bs, steps, "shuffle", T)):
        idx = idx + base  # rows of model t's own part in the flattened (T·n, D) stack
        m = idx.shape[1]
        # models in chunks whose gathered rows stay cache-resident (~4 MB): measured ~1.4x faster than all T
        chunk = max(1, min(T, (4 << 20) // (m * D * 8)))
        for s in range(0, T, chunk):
            e = min(T, s + chunk)
            ii = idx[s:e]
            Xb = np.take(Xflat, ii.reshape(-1), axis=0, out=buf[: (e - s) * m], mode="clip").reshape(e - s, m, D)
            Hh, D1, D2, loss = _forward_backward(W1[s:e], b1[s:e], W2[s:e], b2[s:e], Xb, yflat[ii],
                                                 want_loss=return_trace)
            if return_trace:
                tr_loss[t, s:e] = loss / m
            sW1, sb1, sW2, sb2 = _grad_sums(Xb, Hh, D1, D2)
            gW1[s:e] = sW1
            gb1[s:e] = sb1
            gW2[s:e] = sW2
            gb2[s:e] = sb2
        grad *= 1.0 / m
        if wd:
            grad += wd * theta
        if mu:
            vel *= mu
            vel += grad
            theta -= lrs[t] * vel
        else:
            grad *= lrs[t]
            theta -= grad
    params = MLPParams.from_flat(theta, D, H, C)
    if return_trace:
        return params, {"loss": tr_loss, "lr": lrs, "steps": steps}
    return params


def _fields(p):
    return p.W1, p.b1, p.W2, p.b2


# ----------------------------------------------------------------------------------------------------------
# the per-example clipped-sum plug of the DP-SGD loop (the learner: dpbench.methods.mlp.dpsgd_mlp)
# ----------------------------------------------------------------------------------------------------------


def mlp_clipped_sum(y, X, H, C, clip, per_tensor=False):
    """The per-example clipped-sum plug of :func:`dpbench.learn.dpsgd.dpsgd_loop` for the MLP: global norm over
    all parameters (module docstring), clipped sums Xᵀ(s·δ1), Σ s·δ1, Hᵀ(s·δ2), Σ s·δ2 added to ``out``. Works in
    X's dtype (float32: norms and clip factors in float64 against ν·(1 − 2⁻²⁰), :mod:`dpbench.learn.dpsgd`).

    ``per_tensor=True`` clips each parameter tensor (W1, b1, W2, b2) of each example to ν on its own — the
    clipping of the authors' released code (vdm2020 erratum 14) and, at the noise σν of global clipping, an
    implementation bug: an example then moves the sum by up to 2ν (four tensors at ν each), not ν, so the
    accountant's ε does not hold. It exists for the audit's twin (:mod:`dpbench.audit.sgd`)."""
    D = X.shape[1]
    xsq = sq_norms64(X)
    nu = clip_target(clip, X.dtype)

    def per_tensor_plug(theta, Xb, ii, valid, out):
        W1, b1, W2, b2 = _fields(MLPParams.from_flat(theta, D, H, C))
        Hh, D1, D2, _ = _forward_backward(W1, b1, W2, b2, Xb, y[ii])
        d1, d2, h = sq_norms64(D1), sq_norms64(D2), sq_norms64(Hh)
        norms = (np.sqrt(xsq[ii] * d1), np.sqrt(d1), np.sqrt(h * d2), np.sqrt(d2))   # W1, b1, W2, b2
        sW1, sb1, sW2, sb2 = (clip_weights(n, nu, valid) for n in norms)
        acc = _fields(MLPParams.from_flat(out, D, H, C))
        pa = _grad_sums(Xb, Hh, D1 * sW1.astype(D1.dtype)[..., None], D2 * sW2.astype(D2.dtype)[..., None])
        pb = _grad_sums(Xb, Hh, D1 * sb1.astype(D1.dtype)[..., None], D2 * sb2.astype(D2.dtype)[..., None])
        for a, part in zip(acc, (pa[0], pb[1], pa[2], pb[3])):
            a += part
        gnorm = np.sqrt(sum(n * n for n in norms))
        clipped = np.sqrt(sum((sc * n) ** 2 for sc, n in zip((sW1, sb1, sW2, sb2), norms)))
        return np.divide(clipped, gnorm, out=np.zeros_like(gnorm), where=gnorm > 0), gnorm

    def plug(theta, Xb, ii, valid, out):
        W1, b1, W2, b2 = _fields(MLPParams.from_flat(theta, D, H, C))
        Hh, D1, D2, _ = _forward_backward(W1, b1, W2, b2, Xb, y[ii])
        gnorm = _norms_from_parts(xsq[ii], Hh, D1, D2)  # global norm over all parameters
        scale = clip_weights(gnorm, nu, valid)
        s = scale.astype(D1.dtype)[..., None]
        D1 *= s
        D2 *= s
        for acc, part in zip(_fields(MLPParams.from_flat(out, D, H, C)), _grad_sums(Xb, Hh, D1, D2)):
            acc += part
        return scale, gnorm

    return per_tensor_plug if per_tensor else plug
