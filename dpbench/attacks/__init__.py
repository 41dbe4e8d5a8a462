"""Privacy attacks on released models: model inversion (Fredrikson et al. 2014; wu2016 ch. 4) and black-box
membership inference with metrics and confidence intervals (``membership``, ``metrics``), and the worst-case
canary audit (``canary``)."""

from .model_inversion import (
    empirical_marginal,
    invert_attribute,
    model_inversion_accuracy,
    prior_baseline_accuracy,
    residual_scale,
)

from . import canary, membership, metrics  # noqa: E402,F401
from .canary import canary_audit  # noqa: E402
from .membership import MEMBER, NON_MEMBER, evaluate_attacks  # noqa: E402

__all__ = ["MEMBER", "NON_MEMBER", "evaluate_attacks", "membership", "metrics", "canary", "canary_audit", "empirical_marginal", "invert_attribute", "model_inversion_accuracy", "prior_baseline_accuracy",
           "residual_scale"]
