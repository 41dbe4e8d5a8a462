"""Non-private learning engines: bias-free softmax regression (losses, constants K and L, L-BFGS fits, batched
prediction, per-example gradient norms), the DP-SGD loop vectorised over repetitions with the per-example
clipped-sum plugs of the softmax and the MLP (van der Maaten & Hannun 2020, §3, Eq. 2, Eq. 4, App. D), the MLP,
and permutation SGD for binary linear models (one model, and many at once). Every private algorithm built on them
is in :mod:`dpbench.methods`."""

from .lbfgs_many import fit_softmax_lockstep
from .dpsgd import (clip_scales, clipped_contributions, dpsgd_loop, dpsgd_steps, lr_factors, poisson_batches,
                    softmax_clipped_sum)
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
    "dpsgd_loop",
    "softmax_clipped_sum",
    "dpsgd_steps",
    "clipped_contributions",
    "clip_scales",
    "poisson_batches",
    "lr_factors",
]

# one-hidden-layer ReLU MLP (non-convex substitute for vdm2020 Fig. 7): SGD, T members at once, DP-SGD plug
from .mlp import (  # noqa: E402
    MLPParams,
    fit_mlp,
    fit_mlp_many,
    init_mlp,
    mlp_accuracy,
    mlp_accuracy_many,
    mlp_clipped_gradient_sum,
    mlp_clipped_sum,
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
    "mlp_clipped_sum",
]

# permutation SGD for binary linear models (the engine of wu2016 ch. 3's PSGD algorithms, song2018 ch. 3)
from .psgd import (  # noqa: E402
    HuberHingeLoss,
    LogisticLoss,
    PSGDAggregate,
    PSGDState,
    StepSchedule,
    get_loss,
    make_schedule,
    psgd,
    total_updates,
)

__all__ += ["LogisticLoss", "HuberHingeLoss", "get_loss", "StepSchedule", "make_schedule", "PSGDState",
            "PSGDAggregate", "psgd", "total_updates"]
