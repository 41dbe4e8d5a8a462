"""DP-SGD for softmax regression (private training; δ > 0 only) — van der Maaten & Hannun 2020, §3.1, Eq. 4.

Global clipping of each full per-example gradient to ν, Gaussian noise N(0, σ²ν²I) on the clipped sum,
Poisson sampling with q = batch/N for ceil(epochs·N/batch) steps (what the accountant assumes; shuffling
is available and labelled). σ is calibrated by ``dpbench.privacy.calibrate_dpsgd_noise`` with the configured
accountant and RDP→DP conversion. No L2 regularisation (paper §4.1). The learner :func:`dpsgd_softmax` runs
the DP-SGD loop of :mod:`dpbench.learn.dpsgd` (sampling, steps and draw order described there) with the
softmax's per-example clipped-sum plug.

Neighbouring relation: the accountants analyse add/remove-one neighbours, while vdm2020's privacy definition
(Eq. 1) replaces one example. ``neighbouring: replace_one`` (default) calibrates the add/remove budget
(ε/2, δ/(1 + e^{ε/2})), whose replace-one guarantee is exactly (ε, δ) by group privacy (two steps);
``neighbouring: add_remove`` calibrates at (ε, δ) as the paper does — its rows record the replace-one ε at
the same δ (dp_accounting's PLD accountant, ``epsilon_achieved``), between ε and 2ε.

Repetitions are trained in fixed blocks of ``REP_BLOCK`` runs vectorised together; the block's random
stream is keyed by its content (method, parameters, ε, δ, block index), so results do not depend on the
number of workers.
"""

from __future__ import annotations

import numpy as np

from dpbench.learn import accuracy_many, blas_thread_limit, dpsgd_steps, lr_factors
from dpbench.learn.dpsgd import dpsgd_loop, softmax_clipped_sum
from dpbench.learn.softmax import _check_training
from dpbench.methods.base import REGISTRY, Cell, Context, Method, Problem, Setting
from dpbench.privacy import _validate as _v
from dpbench.privacy import calibrate_dpsgd_noise, calibrate_dpsgd_replace_one, dpsgd_replace_one_epsilon
from dpbench.privacy.attack_bounds import add_remove_budget_for_replace_one
from dpbench.store import content_key

REP_BLOCK = 10


def dpsgd_softmax(
    X,
    y,
    n_classes,
    *,
    noise_multiplier,
    clip,
    batch_size,
    epochs,
    learning_rate,
    rng,
    n_runs=1,
    sampling="poisson",
    lr_schedule="constant",
    return_trace=False,
    theta0=None,
    blas_threads=1,
    observe=None,
    float32=False,
):
    """Run ``n_runs`` independent DP-SGD trainings (Eq. 4, global clipping to ``clip`` = ν) at once.

    ``noise_multiplier`` σ: the noise added to the clipped SUM has std σ·ν per coordinate (σ from the RDP
    accountant for q = batch_size/N and ``steps`` as in :mod:`dpbench.learn.dpsgd`). ``theta0``: (D, C) or
    (n_runs, D, C) start (default 0). Plain SGD, no momentum, no weight decay, no bias.

    Returns θ of shape (n_runs, D, C); with ``return_trace=True`` returns ``(θ, trace)`` where ``trace`` has
    ``"batch_size"`` (steps, n_runs) actual batch sizes, ``"max_clipped_norm"`` (steps, n_runs) the largest
    clipped per-example gradient norm s_n‖g_n‖ of each step, ``"lr"`` (steps,), ``"steps"``, ``"denom"``.
    ``blas_threads`` (default 1, None = unchanged): the per-step GEMMs are tiny (m×D×C), extra BLAS threads do
    not help and are much slower on shared cores; parallelise over cells/repetition blocks instead.
    ``observe(t, theta)``: called after every step t with a read-only view (n_runs, D, C) of the iterates (the
    transcript the accountant bounds; used by the privacy audit, :mod:`dpbench.audit.sgd`). ``float32``: the
    loop in single precision (X, θ, products, noise; clip factors from float64 norms against ν·(1 − 2⁻²⁰),
    :mod:`dpbench.learn.dpsgd`); θ is returned as float64.
    """
    with blas_thread_limit(blas_threads):
        return _dpsgd(
            X, y, n_classes, noise_multiplier, clip, batch_size, epochs, learning_rate, rng, n_runs, sampling,
            lr_schedule, return_trace, theta0, observe, bool(float32),
        )


def _dpsgd(
    X, y, n_classes, noise_multiplier, clip, batch_size, epochs, learning_rate, rng, n_runs, sampling,
    lr_schedule, return_trace, theta0, observe=None, float32=False,
):
    X, y, C, _ = _check_training(X, y, n_classes)  # finite, non-empty X; labels; n_classes ≥ 2
    N, D = X.shape
    _v.nonnegative("noise_multiplier", noise_multiplier)
    _v.positive("clip", clip)
    _v.positive("learning_rate", learning_rate)
    R = int(n_runs)
    if R < 1:
        raise ValueError("n_runs must be >= 1")
    if not (1 <= batch_size <= N):
        raise ValueError(f"batch_size must be in [1, N={N}], got {batch_size}")
    if clip <= 0 or noise_multiplier < 0 or epochs <= 0:
        raise ValueError("need clip > 0, noise_multiplier >= 0, epochs > 0")
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")

    steps = dpsgd_steps(N, batch_size, epochs, sampling)
    dt = np.float32 if float32 else np.float64
    theta = np.zeros((R, C * D), dtype=dt)  # θᵀ (C, D) per run, flattened: the fast layout for the products below
    if theta0 is not None:
        theta.reshape(R, C, D)[...] = np.swapaxes(np.asarray(theta0, dtype=np.float64), -1, -2)
    if float32:
        X = X.astype(np.float32)
    out = dpsgd_loop(X, theta, softmax_clipped_sum(y, X, C, clip), rng=rng, batch_size=batch_size, steps=steps,
                     sampling=sampling, noise_std=float(noise_multiplier) * float(clip),
                     lrs=learning_rate * lr_factors(steps, lr_schedule), return_trace=return_trace,
                     observe=None if observe is None else
                     (lambda t, th: observe(t, th.reshape(R, C, D).transpose(0, 2, 1))))
    theta = np.ascontiguousarray(theta.reshape(R, C, D).transpose(0, 2, 1), dtype=np.float64)
    return (theta, out) if return_trace else theta


def clip_norm(value: float, batch_size: int, scale: str) -> float:
    """The clip ν of Eq. 4 (on the full per-example gradient) from a configured/tuned value.

    ``per_example``: the value is ν. ``batch_mean``: the value clips the per-example gradient of the
    batch-MEAN loss, g_n/|𝓑| — the scale of the CV grid 5e-4…5e-1 in the authors' released code — so
    ν = value·|𝓑| (exact for Eq. 4: clipping g_n/|𝓑| to c is clipping g_n to c|𝓑|, and the noise σc on the mean
    is σc|𝓑| on the sum)."""
    if scale == "per_example":
        return value
    if scale == "batch_mean":
        return value * batch_size
    raise ValueError(f"clip_scale must be 'per_example' or 'batch_mean', got {scale!r}")



def dpsgd_noise_calibration(n: int, batch_size: int, epochs, sampling: str, epsilon: float, delta: float,
                            relation: str = "replace_one", accountant: str = "rdp", conversion: str | None = None,
                            calibration: str = "source"):
    """σ of DP-SGD on n examples (q = batch/N, the learner's own step count :func:`dpbench.learn.dpsgd_steps`)
    for the replace-one budget (ε, δ) under ``relation`` (module docstring): ``"replace_one"`` calibrates the
    add/remove budget (ε/2, δ/(1 + e^{ε/2})), ``"add_remove"`` calibrates (ε, δ) as the paper does.
    ``calibration="tight"``: the smallest σ whose replace-one ε(δ) by the PLD accountant is ≤ ε
    (:func:`dpbench.privacy.calibrate_dpsgd_replace_one`; σ × 0.62–0.72 of the default at ε = 0.1–4 on vdm2020's
    grid). Returns the :class:`~dpbench.privacy.DpsgdCalibration`."""
    steps = dpsgd_steps(n, batch_size, epochs, sampling)
    q = min(1.0, batch_size / n)
    if calibration == "tight":
        if relation != "replace_one":
            raise ValueError("calibration 'tight' analyses replace-one neighbours: set neighbouring: replace_one")
        return calibrate_dpsgd_replace_one(epsilon, delta, q, steps)
    if calibration != "source":
        raise ValueError(f"calibration must be 'source' or 'tight', got {calibration!r}")
    if relation == "replace_one":
        eps, delta = add_remove_budget_for_replace_one(epsilon, delta)
    elif relation == "add_remove":
        eps = epsilon
    else:
        raise ValueError(f"neighbouring must be 'replace_one' or 'add_remove', got {relation!r}")
    return calibrate_dpsgd_noise(eps, delta, q, steps, accountant=accountant,
                                 conversion=conversion if accountant == "rdp" else None)


def dpsgd_settings(block: str, clip_scale_default=None) -> tuple[Setting, ...]:
    """The settings of DP-SGD read from config ``block`` (``dpsgd``; ``mlp.dpsgd`` for the MLP)."""
    enum = lambda *v: {"enum": list(v)}  # noqa: E731
    kw = {} if clip_scale_default is None else {"default": clip_scale_default}
    return (Setting("batch_size", block, schema={"type": "integer", "minimum": 1}),
            Setting("epochs", block, schema={"type": "number", "exclusiveMinimum": 0}),
            Setting("learning_rate", block, schema={"type": "number", "exclusiveMinimum": 0}),
            Setting("sampling", block, schema=enum("poisson", "shuffle")),
            Setting("accountant", block, schema=enum("rdp", "pld")),
            Setting("conversion", block, schema=enum("classic", "improved")),
            Setting("clip_scale", block, schema=enum("batch_mean", "per_example"), **kw),
            Setting("neighbouring", block, default="replace_one", schema=enum("replace_one", "add_remove")),
            Setting("float32", block, default=True, type="boolean"))


@REGISTRY.register
class DPSGD(Method):
    unit_ball = False     # every per-example gradient is clipped to ν: no norm bound assumed
    name = "dpsgd"
    label = "DP-SGD"
    kind = "training"
    depends_on = ("epsilon", "delta", "rep")
    tuned = "clip"
    settings_spec = dpsgd_settings("dpsgd", clip_scale_default="per_example")
    style = dict(color="tab:purple", marker="v")

    def supports(self, epsilon, delta, budget):
        return None if delta > 0 else "DP-SGD does not support delta = 0 (paper §4.2)"

    def cell_params(self, problem, tuned, epsilon, delta):
        s = self.settings
        return {"clip": clip_norm(float(tuned), s["batch_size"], s.get("clip_scale", "per_example")),
                "batch_size": s["batch_size"], "epochs": s["epochs"],
                "learning_rate": s["learning_rate"], "sampling": s["sampling"],
                "accountant": s["accountant"], "conversion": s["conversion"],
                "neighbouring": s.get("neighbouring", "replace_one"), "float32": bool(s.get("float32", True))}

    def group_key(self, cell: Cell):
        return (cell.problem, cell.params, cell.epsilon, cell.delta, cell.rep // REP_BLOCK)

    def calibration(self, problem: Problem, cell: Cell):
        """σ for (ε, δ) under the configured neighbouring relation, with the configured accountant, q = batch/N
        and the learner's own step count; returns (calibration, replace-one ε of the release)."""
        p = cell.param
        n = problem.n_train
        relation = p.get("neighbouring", "replace_one")
        tight = p.get("calibration", "source") == "tight"
        cal = dpsgd_noise_calibration(n, p["batch_size"], p["epochs"], p["sampling"], cell.epsilon, cell.delta,
                                      relation, p["accountant"], p["conversion"],
                                      calibration="tight" if tight else "source")
        steps = dpsgd_steps(n, p["batch_size"], p["epochs"], p["sampling"])
        achieved = (2 * cal.epsilon if relation == "replace_one" and not tight
                    else dpsgd_replace_one_epsilon(cal.noise_multiplier, min(1.0, p["batch_size"] / n), steps,
                                                   cell.delta))
        return cal, achieved

    @staticmethod
    def record(accuracy: float, calibration, p: dict) -> dict:
        cal, achieved = calibration
        if p.get("calibration", "source") == "tight":   # the replace-one PLD calibration (rows say so)
            return {"accuracy": float(accuracy), "noise_kind": "gaussian", "noise_scale": cal.noise_multiplier,
                    "composition": "pld", "accountant": "pld/replace_one", "calibration": "tight",
                    "epsilon_achieved": achieved, "sampling": p["sampling"]}
        return {"accuracy": float(accuracy), "noise_kind": "gaussian", "noise_scale": cal.noise_multiplier,
                "composition": "rdp" if p["accountant"] == "rdp" else "pld",
                "accountant": f"{p['accountant']}/{p['conversion'] if p['accountant'] == 'rdp' else 'pld'}",
                "epsilon_achieved": achieved, "sampling": p["sampling"]}

    def train(self, X, y, n_classes, epsilon, delta, rng):
        """One softmax model by DP-SGD with the method's settings (the tuned ``clip`` as a setting; batch size
        capped at n), σ from :func:`dpsgd_noise_calibration` for the replace-one (ε, δ)."""
        s = self.settings
        n = X.shape[0]
        b = min(int(s["batch_size"]), n)
        relation = s.get("neighbouring", "replace_one")
        cal = dpsgd_noise_calibration(n, b, s["epochs"], s["sampling"], epsilon, delta, relation, s["accountant"],
                                      s["conversion"], calibration=self.calibration_kind)
        theta = dpsgd_softmax(X, y, n_classes, noise_multiplier=cal.noise_multiplier,
                              clip=clip_norm(s["clip"], b, s.get("clip_scale", "per_example")), batch_size=b,
                              epochs=s["epochs"], learning_rate=s["learning_rate"], rng=rng, n_runs=1,
                              sampling=s["sampling"], float32=bool(s.get("float32", True)))[0]
        return theta, {"noise_scale": cal.noise_multiplier, "epsilon_add_remove": cal.epsilon,
                       "delta_add_remove": cal.delta}


    def run_group(self, problem: Problem, cells: list[Cell], ctx: Context) -> list[dict]:
        c0 = cells[0]
        p = c0.param
        calibration = self.calibration(problem, c0)
        cal = calibration[0]
        block = c0.rep // REP_BLOCK
        block_key = content_key({"dpsgd-block": [c0.problem, c0.stream_params, c0.epsilon, c0.delta, block]})
        reps = list(range(block * REP_BLOCK, (block + 1) * REP_BLOCK))
        thetas = dpsgd_softmax(problem.X_train, problem.y_train, problem.n_classes,
                               noise_multiplier=cal.noise_multiplier, clip=p["clip"], batch_size=p["batch_size"],
                               epochs=p["epochs"], learning_rate=p["learning_rate"], rng=ctx.rng(block_key),
                               n_runs=len(reps), sampling=p["sampling"], float32=p.get("float32", False))
        accs = accuracy_many(thetas, problem.X_eval, problem.y_eval)
        return [self.record(accs[reps.index(cell.rep)], calibration, p) for cell in cells]


@REGISTRY.register
class DPSGDTight(DPSGD):
    """DP-SGD with the tight calibration (issue: privacy left on the table): σ is the smallest noise multiplier
    whose replace-one ε(δ) by dp_accounting's PLD accountant is ≤ ε (:func:`dpbench.privacy.calibrate_dpsgd_replace_one`)
    — the replace-one pair of Poisson-subsampled Gaussian steps analysed directly instead of the add/remove budget
    (ε/2, δ/(1 + e^{ε/2})) converted by group privacy. Same settings (block ``dpsgd``), same learner; its rows carry
    ``calibration: tight`` and the PLD's ε as ``epsilon_achieved`` (≤ ε). Add ``dpsgd_tight`` to a figure's
    ``methods`` to draw it beside ``dpsgd`` (same colour, dashed)."""

    name = "dpsgd_tight"
    label = "DP-SGD (tight calibration)"
    style = dict(color="tab:purple", marker="v", linestyle="--")
    calibration_kind = "tight"
