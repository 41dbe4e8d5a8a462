"""Privacy primitives: noise samplers and calibration, composition rules, DP-SGD accounting.

See ``mechanisms`` (L2-Laplace / Laplace / Gaussian / exponential mechanism), ``noisy_sgd`` (SCS13 calibration
and the per-update noise of the margin-SGD engines), ``composition`` (basic and advanced composition, vdm2020
per-query budget rules) and ``accounting`` (DP-SGD with dp_accounting).
"""

from . import attack_bounds  # noqa: F401  (membership-inference bounds implied by (ε, δ)-DP)
from . import noisy_sgd  # noqa: F401  (SCS13 calibration, per-update noise of noisy mini-batch SGD)
from .accounting import (TF_ORDERS, DpsgdCalibration, calibrate_dpsgd_noise, calibrate_dpsgd_replace_one,
                         classic_rdp_to_dp, dpsgd_epsilon, dpsgd_replace_one_epsilon)
from .composition import (
    GaussianQueryMultiplier,
    advanced_composition,
    advanced_composition_step_epsilon,
    basic_composition,
    per_query_gaussian_multiplier,
    per_query_pure_epsilon,
    pure_composition_epsilon,
    vote_exponential_mechanism_beta,
    vote_exponential_mechanism_epsilon,
)
from .mechanisms import (
    analytic_gaussian_alpha,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    exponential_mechanism,
    gaussian_mechanism_delta,
    l2_laplace_rows,
    l2_laplace_sum,
    sample_gaussian,
    sample_l2_laplace,
    sample_laplace,
)

__all__ = [
    "attack_bounds",
    "noisy_sgd",
    "TF_ORDERS",
    "DpsgdCalibration",
    "calibrate_dpsgd_noise",
    "calibrate_dpsgd_replace_one",
    "classic_rdp_to_dp",
    "dpsgd_epsilon",
    "dpsgd_replace_one_epsilon",
    "GaussianQueryMultiplier",
    "advanced_composition",
    "advanced_composition_step_epsilon",
    "basic_composition",
    "per_query_gaussian_multiplier",
    "per_query_pure_epsilon",
    "pure_composition_epsilon",
    "vote_exponential_mechanism_beta",
    "vote_exponential_mechanism_epsilon",
    "analytic_gaussian_alpha",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "exponential_mechanism",
    "gaussian_mechanism_delta",
    "l2_laplace_rows",
    "l2_laplace_sum",
    "sample_gaussian",
    "sample_l2_laplace",
    "sample_laplace",
]
