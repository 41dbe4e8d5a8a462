"""Privacy attacks on released models: model inversion (Fredrikson et al. 2014; wu2016 ch. 4)."""

from .model_inversion import (
    empirical_marginal,
    invert_attribute,
    model_inversion_accuracy,
    prior_baseline_accuracy,
    residual_scale,
)

__all__ = ["empirical_marginal", "invert_attribute", "model_inversion_accuracy", "prior_baseline_accuracy",
           "residual_scale"]
