"""Learners: bias-free softmax regression (losses, constants K and L, L-BFGS fits, batched prediction,
per-example gradient norms) and a DP-SGD engine vectorised over repetitions (spec vdm2020 §2.0–2.3, §2.7)."""

from .dpsgd import clip_scales, clipped_contributions, dpsgd_softmax, lr_factors, poisson_batches
from .softmax import (
    HESSIAN_BOUND_L,
    LIPSCHITZ_K,
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
    softmax_objective,
    softmax_probabilities,
)

__all__ = [
    "LIPSCHITZ_K",
    "HESSIAN_BOUND_L",
    "FitInfo",
    "softmax_objective",
    "fit_softmax",
    "fit_softmax_many",
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
    "clipped_contributions",
    "clip_scales",
    "poisson_batches",
    "lr_factors",
]
