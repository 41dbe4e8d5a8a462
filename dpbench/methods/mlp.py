"""The non-convex substitute of vdm2020 Fig. 7: one-hidden-layer ReLU MLPs (``dpbench.learn.mlp``).

CIFAR-10 / ResNet-20 cannot run here; the figure's structure is kept: DP-SGD (Eq. 4, GLOBAL clipping of the
full per-example gradient, Poisson sampling, RDP accountant) vs subsample-and-aggregate with T = 16 MLPs
(no L2, exponential mechanism on the votes), and the non-private MLP as reference. The other methods need
a convex, Lipschitz, smooth loss (assumptions 1 and 3, §4.3 footnote 1) and are not applicable.

The private learner :func:`dpsgd_mlp` runs the DP-SGD loop of :mod:`dpbench.learn.dpsgd` with the MLP's
per-example clipped-sum plug (:func:`dpbench.learn.mlp.mlp_clipped_sum`).

Training runs are keyed by content (problem, settings, repetition), so results do not depend on how
repetitions are grouped or on the number of workers.
"""

from __future__ import annotations

import numpy as np

from dpbench.learn.dpsgd import dpsgd_loop, dpsgd_steps, lr_factors
from dpbench.learn.mlp import (MLPParams, _check_clip, _check_common, _check_sizes, _init_runs, _streams, fit_mlp,
                               fit_mlp_many, mlp_accuracy, mlp_accuracy_many, mlp_clipped_sum, mlp_predict_many)
from dpbench.learn.softmax import _check_labels, blas_thread_limit
from dpbench.privacy import _validate as _v
from dpbench.methods.base import REGISTRY, Cell, Context, Method, Problem, Setting
from dpbench.methods.dpsgd import DPSGD, clip_norm, dpsgd_settings
from dpbench.methods.subsample_aggregate import add_votes, disjoint_parts, private_vote_accuracy
from dpbench.store import content_key


def dpsgd_mlp(
    X,
    y,
    n_classes,
    hidden,
    noise_multiplier,
    clip,
    batch_size,
    epochs,
    learning_rate,
    rng,
    n_runs=1,
    sampling="poisson",
    schedule=None,
    return_trace=False,
    *,
    params0=None,
    blas_threads=1,
    observe=None,
    float32=False,
    clipping="global",
):
    """Run ``n_runs`` independent DP-SGD trainings of the MLP (Eq. 4, GLOBAL clipping to ``clip`` = ν) at once.

    One step, per run: g̃ = ( Σ_{n∈𝓑} min(1, ν/‖g_n‖) g_n + N(0, σ²ν² I_P) ) / denom,  θ ← θ − η_t g̃,
    with ‖g_n‖ the norm of the full per-example gradient over all P parameters (module docstring) and
    σ = ``noise_multiplier``. Sampling, step count (:func:`dpsgd_steps`), ``denom`` (q·N = batch_size for
    ``"poisson"``, the actual batch size for ``"shuffle"``) and the padding of Poisson batches with
    zero-weight rows are exactly those of :func:`dpbench.methods.dpsgd.dpsgd_softmax`; plain SGD (no momentum, no
    weight decay — paper §4.1, code momentum 0 for DP-SGD). ``schedule``: None/"constant" or "step"
    (:func:`lr_factors`). Each run starts from :func:`init_mlp` drawn from ``rng`` (or ``params0``, a single
    MLP or a stack of ``n_runs``). ``rng``: one Generator, or one per run (:mod:`dpbench.learn.mlp`). No noise is
    drawn when σ = 0.

    Returns the stacked MLPParams (n_runs, …); with ``return_trace=True`` returns ``(params, trace)`` with
    ``"batch_size"`` (steps, n_runs), ``"max_clipped_norm"`` (steps, n_runs) (largest s_n‖g_n‖ of each step),
    ``"lr"`` (steps,), ``"steps"``, ``"denom"``. ``blas_threads`` as in ``dpsgd_softmax`` (default 1).
    ``observe(t, params)``: called after every step with read-only stacked MLPParams views of the iterates (the
    transcript; :mod:`dpbench.audit.sgd`). ``float32``: the loop in single precision (clip factors still from
    float64 norms, :mod:`dpbench.learn.dpsgd`); the start is drawn in float64 and rounded; the returned
    parameters are float64. ``clipping="per_tensor"``: each parameter tensor clipped to ν on its own
    (:func:`dpbench.learn.mlp.mlp_clipped_sum`) — the authors' code (vdm2020 erratum 14), NOT ε-DP at this σ;
    only for the audit's twin.
    """
    if clipping not in ("global", "per_tensor"):
        raise ValueError(f"clipping must be 'global' (Eq. 4) or the audit's bug 'per_tensor', got {clipping!r}")
    X = _v.feature_matrix("X", X)      # finite, non-empty (every gradient is clipped: any norm)
    N, D = X.shape
    C = int(n_classes)
    _check_sizes(D, hidden, C)
    y = _check_labels(y, N, C)
    R = int(n_runs)
    if R < 1:
        raise ValueError("n_runs must be >= 1")
    _check_clip(clip)
    if not (np.isscalar(noise_multiplier) and noise_multiplier >= 0 and np.isfinite(noise_multiplier)):
        raise ValueError(f"noise_multiplier must be a finite number >= 0, got {noise_multiplier!r}")
    if not (np.isscalar(epochs) and epochs > 0):
        raise ValueError(f"epochs must be > 0, got {epochs!r}")
    schedule = _check_common(batch_size, N, learning_rate, schedule)
    steps = dpsgd_steps(N, batch_size, epochs, sampling)  # validates sampling
    if steps < 1:
        raise ValueError("epochs too small: no DP-SGD step would be taken")
    streams = _streams(rng, R)
    with blas_thread_limit(blas_threads):
        return _dpsgd(X, y, C, int(hidden), float(noise_multiplier), float(clip), int(batch_size), steps,
                      float(learning_rate), streams, R, sampling, schedule, return_trace, params0, observe,
                      bool(float32), clipping == "per_tensor")


def _dpsgd(X, y, C, H, sigma, clip, batch_size, steps, learning_rate, streams, R, sampling, schedule,
           return_trace, params0, observe=None, float32=False, per_tensor=False):
    N, D = X.shape
    theta = _init_runs(streams, R, D, H, C, params0)
    if float32:
        X, theta = X.astype(np.float32), theta.astype(np.float32)
    shared, gens = streams
    trace = dpsgd_loop(X, theta, mlp_clipped_sum(y, X, H, C, clip, per_tensor), rng=shared if shared is not None else gens,
                       batch_size=batch_size, steps=steps, sampling=sampling, noise_std=sigma * clip,
                       lrs=learning_rate * lr_factors(steps, schedule), return_trace=return_trace,
                       observe=None if observe is None else
                       (lambda t, th: observe(t, MLPParams.from_flat(th, D, H, C))))
    params = MLPParams.from_flat(theta.astype(np.float64, copy=False), D, H, C)
    return (params, trace) if return_trace else params


_SGD = ("hidden", "schedule", "epochs", "batch_size", "learning_rate")

#: the network and learning-rate schedule shared by the three MLP methods (config block ``mlp``)
MLP_SETTINGS = (Setting("hidden", "mlp", schema={"type": "integer", "minimum": 1}),
                Setting("schedule", "mlp", schema={"enum": ["step", "constant"]}))


def sgd_settings(block: str) -> tuple[Setting, ...]:
    """Plain mini-batch SGD settings read from config ``block``."""
    return (Setting("epochs", block, schema={"type": "number", "exclusiveMinimum": 0}),
            Setting("batch_size", block, schema={"type": "integer", "minimum": 1}),
            Setting("learning_rate", block, schema={"type": "number", "exclusiveMinimum": 0}))


@REGISTRY.register
class NonPrivateMLP(Method):
    unit_ball = False     # not private: no norm bound to keep
    name = "non_private_mlp"
    label = "non-private MLP"
    kind = "baseline"
    depends_on = ()
    settings_spec = MLP_SETTINGS + sgd_settings("mlp.non_private")
    style = dict(color="black", linestyle="--", marker=None)

    def cell_params(self, problem, tuned, epsilon, delta):
        return {k: self.settings[k] for k in _SGD}

    def run_group(self, problem: Problem, cells: list[Cell], ctx: Context) -> list[dict]:
        out = []
        for cell in cells:
            p = cell.param
            params = fit_mlp(problem.X_train, problem.y_train, problem.n_classes, p["hidden"], int(p["epochs"]),
                             p["batch_size"], p["learning_rate"], ctx.rng(cell.stream_key), schedule=p["schedule"])
            out.append({"accuracy": float(mlp_accuracy(params, problem.X_eval, problem.y_eval)),
                        "noise_kind": "none", "noise_scale": 0.0})
        return out


def mlp_vote_counts(problem: Problem, p: dict, rep: int, ctx: Context) -> np.ndarray:
    """Vote counts (n_eval, C) of T MLPs trained on a fresh random partition of repetition ``rep``."""
    key = content_key({"artefact": "subsagg-mlp-votes", "problem": problem.key,
                       "settings": {k: p[k] for k in (*_SGD, "n_models")}, "rep": rep})

    def compute():
        rng = ctx.rng(key)
        perm = disjoint_parts(problem.n_train, p["n_models"], rng)
        models = fit_mlp_many(problem.X_train[perm], problem.y_train[perm], problem.n_classes, p["hidden"],
                              int(p["epochs"]), p["batch_size"], p["learning_rate"], rng, schedule=p["schedule"])
        counts = np.zeros((problem.X_eval.shape[0], problem.n_classes), dtype=np.int32)
        return {"counts": add_votes(counts, mlp_predict_many(models, problem.X_eval))}

    return ctx.store.artefact(key, compute)["counts"]


@REGISTRY.register
class SubsampleAggregateMLP(Method):
    name = "subsample_aggregate_mlp"
    label = "subsample-and-aggregate (T MLPs)"
    kind = "prediction"
    settings_spec = MLP_SETTINGS + (
        Setting("n_models", "mlp.subsample_aggregate", schema={"type": "integer", "minimum": 1}),
        *sgd_settings("mlp.subsample_aggregate"),
        Setting("beta_rule", "subsample_aggregate", schema={"enum": ["paper", "standard"]}),
    )
    style = dict(color="tab:red", marker="D")

    def cell_params(self, problem, tuned, epsilon, delta):
        return {**{k: self.settings[k] for k in (*_SGD, "n_models")}, "beta_rule": self.settings["beta_rule"]}

    def group_key(self, cell: Cell):
        return (cell.problem, cell.params, cell.rep)

    def run_group(self, problem: Problem, cells: list[Cell], ctx: Context) -> list[dict]:
        p = cells[0].param
        counts = mlp_vote_counts(problem, p, cells[0].rep, ctx)
        return private_vote_accuracy(counts, problem.y_eval, cells, p["beta_rule"], ctx)


@REGISTRY.register
class DPSGDMLP(DPSGD):
    """DP-SGD on the MLP: the linear DP-SGD's support rule, grouping, calibration and record; only the
    learner differs."""

    name = "dpsgd_mlp"
    label = "DP-SGD (MLP)"
    settings_spec = MLP_SETTINGS + dpsgd_settings("mlp.dpsgd")

    def cell_params(self, problem, tuned, epsilon, delta):
        s = self.settings
        return {"clip": clip_norm(float(tuned), s["batch_size"], s["clip_scale"]),
                **{k: s[k] for k in (*_SGD, "sampling", "accountant", "conversion")},
                "neighbouring": s.get("neighbouring", "replace_one"), "float32": bool(s.get("float32", True))}

    def run_group(self, problem: Problem, cells: list[Cell], ctx: Context) -> list[dict]:
        p = cells[0].param
        calibration = self.calibration(problem, cells[0])
        cal = calibration[0]
        # one stream per repetition, keyed by the cell: a run does not depend on which runs share the call
        params = dpsgd_mlp(problem.X_train, problem.y_train, problem.n_classes, p["hidden"],
                           noise_multiplier=cal.noise_multiplier, clip=p["clip"], batch_size=p["batch_size"],
                           epochs=p["epochs"], learning_rate=p["learning_rate"],
                           rng=[ctx.rng(c.stream_key) for c in cells], n_runs=len(cells), sampling=p["sampling"],
                           schedule=p["schedule"], float32=p.get("float32", False))
        accs = mlp_accuracy_many(params, problem.X_eval, problem.y_eval)
        return [self.record(a, calibration, p) for a in accs]


@REGISTRY.register
class DPSGDMLPTight(DPSGDMLP):
    """DP-SGD on the MLP with the tight calibration of :class:`dpbench.methods.dpsgd.DPSGDTight`: the smallest σ
    whose replace-one ε(δ) by the PLD accountant is ≤ ε for the MLP's q and steps (the analysis depends on q, σ
    and the steps only, not on the model). Same settings (block ``mlp.dpsgd``); rows carry ``calibration:
    tight``. Add ``dpsgd_mlp_tight`` to Fig. 7a/7b's ``methods`` to draw it beside ``dpsgd_mlp`` (dashed)."""

    name = "dpsgd_mlp_tight"
    label = "DP-SGD (MLP, tight calibration)"
    style = {**DPSGDMLP.style, "linestyle": "--"}
    calibration_kind = "tight"
