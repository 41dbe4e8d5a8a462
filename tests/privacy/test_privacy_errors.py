"""Bad arguments raise ValueError naming the argument."""

import math

import numpy as np
import pytest

from dpbench import privacy as P

RNG = np.random.default_rng(0)

CASES = [
    # ε ≤ 0
    (lambda: P.classic_gaussian_sigma(-1, 1e-5), "epsilon must be > 0, got -1"),
    (lambda: P.analytic_gaussian_alpha(0, 1e-5), "epsilon must be > 0, got 0"),
    (lambda: P.analytic_gaussian_sigma(-0.5, 1e-5), "epsilon"),
    (lambda: P.gaussian_mechanism_delta(1.0, -1), "epsilon must be >= 0"),
    (lambda: P.advanced_composition_step_epsilon(0, 10, 1e-5), "epsilon"),
    (lambda: P.per_query_gaussian_multiplier(0, 1e-5, 10), "epsilon"),
    (lambda: P.per_query_pure_epsilon(-1, 0, 10), "epsilon must be > 0, got -1"),
    (lambda: P.basic_composition(-1, 0, 2), "epsilon"),
    (lambda: P.advanced_composition(-0.1, 0, 2, 1e-5), "epsilon_step"),
    (lambda: P.analytic_gaussian_alpha(math.nan, 1e-5), "epsilon"),
    # δ outside [0, 1) (and δ = 0 where Gaussian noise needs δ > 0)
    (lambda: P.analytic_gaussian_alpha(1, 0), "delta must be in \\(0, 1\\)"),
    (lambda: P.analytic_gaussian_alpha(1, 1), "delta"),
    (lambda: P.analytic_gaussian_sigma(1, -1e-5), "delta"),
    (lambda: P.classic_gaussian_sigma(0.5, 1.5), "delta"),
    (lambda: P.per_query_gaussian_multiplier(1, 0, 10), "delta"),
    (lambda: P.per_query_pure_epsilon(1, 1.0, 10), "delta must be in \\[0, 1\\)"),
    (lambda: P.per_query_pure_epsilon(1, -0.1, 10), "delta"),
    (lambda: P.basic_composition(1, 1.0, 2), "delta"),
    (lambda: P.advanced_composition(0.1, 1.2, 2, 1e-5), "delta_step"),
    (lambda: P.advanced_composition(0.1, 0, 2, 0), "delta_prime"),
    (lambda: P.advanced_composition_step_epsilon(1, 10, 1.0), "delta_prime"),
    # B < 1 / non-integer counts
    (lambda: P.per_query_gaussian_multiplier(1, 1e-5, 0), "n_queries must be an integer >= 1, got 0"),
    (lambda: P.per_query_gaussian_multiplier(1, 1e-5, 2.5), "n_queries"),
    (lambda: P.per_query_pure_epsilon(1, 1e-5, 0), "n_queries"),
    (lambda: P.per_query_pure_epsilon(1, 0, -3), "n_queries"),
    (lambda: P.basic_composition(1, 0, 0), "k must be"),
    (lambda: P.advanced_composition(0.1, 0, 0, 1e-5), "k must be"),
    (lambda: P.advanced_composition_step_epsilon(1, 0, 1e-5), "k must be"),
    # other arguments
    (lambda: P.analytic_gaussian_sigma(1, 1e-5, sensitivity=0), "sensitivity"),
    (lambda: P.gaussian_mechanism_delta(0, 1), "sigma must be > 0"),
    (lambda: P.sample_l2_laplace(RNG, 0, 3), "beta must be > 0"),
    (lambda: P.sample_l2_laplace(RNG, 1, 0), "dim"),
    (lambda: P.sample_laplace(RNG, -1, 3), "scale"),
    (lambda: P.exponential_mechanism(RNG, [1.0, 2.0], -1), "beta must be >= 0"),
    (lambda: P.exponential_mechanism(RNG, [1.0, np.nan], 1), "utilities"),
    (lambda: P.exponential_mechanism(RNG, np.zeros((2, 0)), 1), "utilities"),
]


@pytest.mark.parametrize("call, match", CASES)
def test_value_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_integral_float_counts_accepted():
    assert P.per_query_pure_epsilon(1.0, 0.0, 10.0) == (0.1, "standard")
