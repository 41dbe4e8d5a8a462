"""Sensitivity methods on a trained L2-regularised softmax model (van der Maaten & Hannun 2020, §3.1 and App. B.1; §3.2 and App. C.1).

Both rest on Lemma 1: the minimisers on neighbouring datasets (replace one example) satisfy
‖θ₁ − θ₂‖_F ≤ Δ = 2K/(Nλ), with K = √2 the Lipschitz constant of softmax cross-entropy for ‖x‖₂ ≤ 1.
The fit is not exact: it stops at ‖∇J‖₂ ≤ η·K/N (:func:`dpbench.learn.sensitivity_grad_norm_tol`), so each
fit is within (η/2)Δ of its exact minimiser and two neighbouring fits within **Δ(1 + η)**; every noise scale
below is calibrated to that (η = ``error_fraction``, default 0.01), so the guarantee covers the solver.

* **Model sensitivity** (output perturbation, private training): θ + noise, once per release.
  δ = 0: p(B) ∝ exp(−β‖B‖_F), β = ε/Δ' with Δ' = Δ(1 + η) (Alg. 1). δ > 0: Gaussian with the
  analytic-Gaussian σ = αΔ'/√(2ε) (Alg. 3).
* **Prediction sensitivity** (private prediction over B queries): logits θᵀx̂ + b per query; needs ‖x̂‖ ≤ 1.
  δ = 0: β = ε/(BΔ') in C dimensions (Alg. 6, standard composition). δ > 0: σ = Δ' × the smaller of
  the standard- and advanced-composition per-query multipliers (Alg. 7, appendix form of σ, erratum 2).
"""

from __future__ import annotations

import numpy as np

from dpbench.learn import LIPSCHITZ_K, SOLVER_ERROR_FRACTION, sensitivity_grad_norm_tol, solver_error_fraction
from dpbench.methods.base import REGISTRY, Cell, Context, Method, Problem, accuracy_of_logits
from dpbench.methods.non_private import LBFGS_SETTINGS, fit_minimiser, trained_softmax
from dpbench.privacy import analytic_gaussian_sigma, per_query_gaussian_multiplier, sample_gaussian, sample_l2_laplace


def minimiser_sensitivity(n: int, lam: float, error_fraction: float = SOLVER_ERROR_FRACTION) -> float:
    """Δ(1 + η) = 2K(1 + η)/(Nλ): replace-one sensitivity of the approximate fit (Lemma 1 plus the solver
    error of :func:`dpbench.learn.sensitivity_grad_norm_tol`; ``error_fraction=0`` gives Lemma 1 alone)."""
    if not 0.0 <= float(error_fraction) <= 1.0:
        raise ValueError(f"error_fraction must lie in [0, 1], got {error_fraction!r}")
    if not (lam > 0) or not (n >= 1):
        raise ValueError(f"need n >= 1 and lam > 0, got n={n!r}, lam={lam!r}")
    eta = solver_error_fraction(n, error_fraction) if error_fraction > 0 else 0.0
    return 2 * LIPSCHITZ_K * (1.0 + eta) / (n * lam)


def model_sensitivity_noise(n: int, lam: float, epsilon: float, delta: float,
                            error_fraction: float = SOLVER_ERROR_FRACTION) -> tuple[str, float]:
    """(noise kind, scale) of model sensitivity: β = ε/Δ' for δ = 0 (Alg. 1), else the analytic-Gaussian
    σ = αΔ'/√(2ε) (Alg. 3), with Δ' = :func:`minimiser_sensitivity`."""
    sens = minimiser_sensitivity(n, lam, error_fraction)
    if delta == 0:
        return "l2_laplace", epsilon / sens
    return "gaussian_analytic", analytic_gaussian_sigma(epsilon, delta, sensitivity=sens)


def model_sensitivity_release(theta, n: int, lam: float, epsilon: float, delta: float, rng,
                              error_fraction: float = SOLVER_ERROR_FRACTION, size=()) -> tuple:
    """Output perturbation of a fit θ (Alg. 1 for δ = 0, Alg. 3 for δ > 0): θ + noise calibrated by
    :func:`model_sensitivity_noise`. ``size`` adds leading axes of independent releases (one vectorised draw).
    Returns ``(released (*size, *θ.shape), noise kind, scale)``; the scale is β (L2-Laplace) or σ."""
    theta = np.asarray(theta)
    kind, scale = model_sensitivity_noise(n, lam, epsilon, delta, error_fraction)
    size = (int(size),) if isinstance(size, (int, np.integer)) else tuple(size)
    if kind == "l2_laplace":
        noise = sample_l2_laplace(rng, scale, theta.size, size).reshape(size + theta.shape)
    else:
        noise = sample_gaussian(rng, scale, size + theta.shape)
    return theta + noise, kind, scale


def prediction_sensitivity_noise(n: int, lam: float, epsilon: float, delta: float, budget: int,
                                 error_fraction: float = SOLVER_ERROR_FRACTION, calibration: str = "source"
                                 ) -> tuple[str, float, str]:
    """(noise kind, per-query scale, composition) of prediction sensitivity over ``budget`` queries:
    β = ε/(BΔ') for δ = 0 (Alg. 6); else σ = Δ'·min(standard, advanced multiplier) (Alg. 7).

    ``calibration="tight"`` (δ > 0 only): the B answers θ̂ᵀx̂₁, …, θ̂ᵀx̂_B form one vector whose replace-one L2
    sensitivity is ‖(θ̂_D − θ̂_D′)ᵀX̂‖_F ≤ ‖θ̂_D − θ̂_D′‖_F·‖X̂‖_op ≤ Δ'·√B (every ‖x̂ᵢ‖ ≤ 1; equality when all
    queries are the top singular direction of the difference), and B independent N(0, σ²I) draws are the
    Gaussian mechanism on it: σ = the analytic Gaussian σ (Balle & Wang 2018, vdm2020 Alg. 2) for (ε, δ) at
    sensitivity Δ'·√B — exact, also for queries chosen adaptively (Gaussian composition is exact; Dong, Roth &
    Su 2022). Composition ``gaussian_exact``. δ = 0 has no tight variant here (pure-ε composition is tight
    for the per-query L2-Laplace noise): a ValueError."""
    if calibration not in ("source", "tight"):
        raise ValueError(f"prediction sensitivity calibration must be 'source' or 'tight', got {calibration!r}")
    sens = minimiser_sensitivity(n, lam, error_fraction)
    if calibration == "tight":
        if delta == 0:
            raise ValueError("prediction_sensitivity_tight: the tight calibration is for delta > 0 (at delta = 0 "
                             "the source's pure-epsilon composition is already tight); use prediction_sensitivity")
        return "gaussian_analytic", analytic_gaussian_sigma(epsilon, delta, sens * float(budget) ** 0.5), \
            "gaussian_exact"
    if delta == 0:
        return "l2_laplace", epsilon / (sens * budget), "standard"
    rule = per_query_gaussian_multiplier(epsilon, delta, budget)
    return "gaussian_analytic", rule.multiplier * sens, rule.composition


def solver_record(n: int, l2: float, error_fraction: float) -> dict:
    """Row fields of an approximate fit: the bound τ/λ on its distance to the exact minimiser and η."""
    return {"solver_error_bound": sensitivity_grad_norm_tol(n, error_fraction) / l2,
            "solver_error_fraction": solver_error_fraction(n, error_fraction)}


class _TrainedModelMethod(Method):
    tuned = "l2"
    settings_spec = LBFGS_SETTINGS

    def cell_params(self, problem, tuned, epsilon, delta):
        return {"l2": float(tuned), "error_fraction": self.settings["error_fraction"],
                "maxiter": self.settings["maxiter"], "precondition": bool(self.settings.get("precondition", True))}

    def group_key(self, cell: Cell):
        return (cell.problem, cell.params)  # every cell of one fitted model is computed in one call

    def run_group(self, problem: Problem, cells: list[Cell], ctx: Context) -> list[dict]:
        p = cells[0].param
        theta = trained_softmax(problem, p["l2"], ctx, p["error_fraction"], p["maxiter"], p.get("precondition", True))
        logits = problem.X_eval @ theta
        return [self._evaluate(problem, theta, logits, cell, ctx.rng(cell.stream_key)) for cell in cells]


@REGISTRY.register
class ModelSensitivity(_TrainedModelMethod):
    name = "model_sensitivity"
    label = "model sensitivity"
    kind = "training"
    style = dict(color="tab:orange", marker="s")
    depends_on = ("epsilon", "delta", "rep")

    def train(self, X, y, n_classes, epsilon, delta, rng):
        """Output perturbation of the solver-aware fit (:func:`fit_minimiser`) at the settings' ``l2``: Alg. 1
        (δ = 0) or Alg. 3 (δ > 0)."""
        released, kind, scale = self._release(X, y, n_classes, epsilon, delta, rng, ())
        return released, {"noise_kind": kind, "noise_scale": scale}

    def releases(self, X, y, n_classes, epsilon, delta, rng, trials, shared_rng):
        """The fit once (it is deterministic), then ``trials`` independent noise draws in one vectorised draw."""
        return self._release(X, y, n_classes, epsilon, delta, rng, int(trials))[0]

    def _release(self, X, y, n_classes, epsilon, delta, rng, size):
        s = self.settings
        ef = s.get("error_fraction", SOLVER_ERROR_FRACTION)
        theta = fit_minimiser(X, y, n_classes, s["l2"], s["maxiter"], ef)
        return model_sensitivity_release(theta, X.shape[0], s["l2"], epsilon, delta, rng, ef, size=size)

    def _evaluate(self, problem, theta, logits, cell, rng):
        p = cell.param
        released, kind, scale = model_sensitivity_release(theta, problem.n_train, p["l2"], cell.epsilon, cell.delta,
                                                          rng, p["error_fraction"])
        acc = accuracy_of_logits(problem.X_eval @ released, problem.y_eval)
        return {"accuracy": acc, "noise_kind": kind, "noise_scale": scale, "composition": "none",
                **solver_record(problem.n_train, p["l2"], p["error_fraction"])}


@REGISTRY.register
class PredictionSensitivity(_TrainedModelMethod):
    name = "prediction_sensitivity"
    label = "prediction sensitivity"
    kind = "prediction"
    style = dict(color="tab:green", marker="^")
    depends_on = ("epsilon", "delta", "budget", "rep")

    def _evaluate(self, problem, theta, logits, cell, rng):
        p = cell.param
        cal = p.get("calibration", "source")
        kind, scale, comp = prediction_sensitivity_noise(problem.n_train, p["l2"], cell.epsilon, cell.delta,
                                                         cell.budget, p["error_fraction"], cal)
        if kind == "l2_laplace":  # one independent draw per query (test point)
            noise = sample_l2_laplace(rng, scale, logits.shape[1], size=(logits.shape[0],))
        else:
            noise = sample_gaussian(rng, scale, logits.shape)
        acc = accuracy_of_logits(logits + noise, problem.y_eval)
        return {"accuracy": acc, "noise_kind": kind, "noise_scale": scale, "composition": comp,
                **({"calibration": cal} if cal != "source" else {}),
                **solver_record(problem.n_train, p["l2"], p["error_fraction"])}


@REGISTRY.register
class PredictionSensitivityTight(PredictionSensitivity):
    """Prediction sensitivity with the tight calibration for δ > 0 (:func:`prediction_sensitivity_noise`,
    ``calibration="tight"``): the B noisy answers are one Gaussian mechanism on the vector of answers, L2
    sensitivity Δ'·√B, calibrated exactly by the analytic Gaussian — instead of a per-query budget composed by
    the standard or advanced composition theorem. Same fitted model and settings; δ = 0 points are left out (the
    source's calibration is tight there). Rows carry ``calibration: tight``. Add ``prediction_sensitivity_tight``
    to a figure's ``methods`` to draw it beside ``prediction_sensitivity`` (same colour, dashed)."""

    name = "prediction_sensitivity_tight"
    label = "prediction sensitivity (tight calibration)"
    style = dict(color="tab:green", marker="^", linestyle="--")
    calibration_kind = "tight"

    def supports(self, epsilon, delta, budget):
        if delta == 0:
            return "δ = 0: the source's pure-ε composition is already tight (no tight variant)"
        return None
