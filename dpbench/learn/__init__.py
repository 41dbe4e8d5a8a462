"""Learners: bias-free softmax regression (losses, constants K and L, L-BFGS fits, batched prediction,
per-example gradient norms) and a DP-SGD engine vectorised over repetitions (van der Maaten & Hannun 2020, §3,
Eq. 2, Eq. 4, App. D)."""

from .lbfgs_many import fit_softmax_lockstep
from .dpsgd import clip_scales, clipped_contributions, dpsgd_softmax, dpsgd_steps, lr_factors, poisson_batches
from .softmax import (
    HESSIAN_BOUND_L,
    LIPSCHITZ_K,
    SOLVER_ERROR_FRACTION,
    FitInfo,
    accuracy,
    accuracy_many,
    blas_thread_limit,
    fit_softmax,
    fit_softmax_many,
    per_example_gradient_norms,
    predict,
    predict_logits,
    predict_logits_many,
    predict_many,
    sensitivity_grad_norm_tol,
    softmax_objective,
    solver_error_fraction,
    softmax_probabilities,
)

__all__ = [
    "LIPSCHITZ_K",
    "HESSIAN_BOUND_L",
    "FitInfo",
    "SOLVER_ERROR_FRACTION",
    "sensitivity_grad_norm_tol",
    "solver_error_fraction",
    "softmax_objective",
    "fit_softmax",
    "fit_softmax_many",
    "fit_softmax_lockstep",
    "predict_logits",
    "predict",
    "accuracy",
    "predict_logits_many",
    "predict_many",
    "accuracy_many",
    "per_example_gradient_norms",
    "softmax_probabilities",
    "blas_thread_limit",
    "dpsgd_softmax",
    "dpsgd_steps",
    "clipped_contributions",
    "clip_scales",
    "poisson_batches",
    "lr_factors",
]

# one-hidden-layer ReLU MLP (non-convex substitute for vdm2020 Fig. 7): SGD, T members at once, DP-SGD
from .mlp import (  # noqa: E402
    MLPParams,
    dpsgd_mlp,
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

__all__ += [
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
    "dpsgd_mlp",
]

# permutation SGD for binary linear models (wu2016 ch. 3 bolt-on PSGD / SCS13 / BST14, song2018 ch. 3)
from .psgd import (  # noqa: E402
    HuberHingeLoss,
    LogisticLoss,
    PSGDAggregate,
    PSGDState,
    StepSchedule,
    gaussian_batch_noise,
    get_loss,
    l2_laplace_batch_noise,
    make_schedule,
    psgd,
    total_updates,
)

__all__ += ["LogisticLoss", "HuberHingeLoss", "get_loss", "StepSchedule", "make_schedule", "PSGDState",
            "PSGDAggregate", "psgd", "total_updates", "l2_laplace_batch_noise", "gaussian_batch_noise"]

# private PSGD of wu2016 ch. 3: bolt-on output perturbation, SCS13 (noise per mini-batch), BST14
from .private_psgd import (  # noqa: E402
    bolt_on_psgd,
    bolt_on_sensitivity_convex,
    bolt_on_sensitivity_strongly_convex,
    bst14_calibration,
    bst14_epsilon1,
    bst14_psgd,
    scs13_psgd,
)

__all__ += ["bolt_on_psgd", "bolt_on_sensitivity_convex", "bolt_on_sensitivity_strongly_convex", "bst14_calibration",
            "bst14_epsilon1", "bst14_psgd", "scs13_psgd"]
