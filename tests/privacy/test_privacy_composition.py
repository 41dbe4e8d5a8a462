"""Unit tests for dpbench.privacy.composition (anchors: docs/studies/vdm2020.md#derived)."""

import math
import time

import numpy as np
import pytest

from dpbench.privacy import (
    advanced_composition,
    advanced_composition_step_epsilon,
    analytic_gaussian_alpha,
    basic_composition,
    per_query_gaussian_multiplier,
    per_query_pure_epsilon,
)
from dpbench.privacy import composition as comp_mod


def sig(x, n):
    return f"{x:.{n}g}"


# --- formulas vs hand-computed values --------------------------------------------------------------------


def test_basic_composition():
    eps, delta = basic_composition(0.1, 1e-6, 10)
    assert eps == pytest.approx(1.0) and delta == pytest.approx(1e-5)
    assert basic_composition(0.5, 0.0, 1) == (0.5, 0.0)


def test_advanced_composition_hand_value():
    # √(2·10·ln 1e5)·0.1 + 10·0.1·(e^0.1 − 1)/2 = 1.51742713 + 0.05258546 ; δ = 1e-5 + 10·1e-6
    eps, delta = advanced_composition(0.1, 1e-6, 10, 1e-5)
    assert eps == pytest.approx(1.5174271294 + 0.0525854590, abs=1e-9)
    assert delta == pytest.approx(2e-5, rel=1e-12)


def test_step_epsilon_hand_value_and_quadratic_identity():
    # √(2/10)(√(ln 1e5 + 1) − √(ln 1e5)) = √0.2 · (3.53743... − 3.39318...) = 0.0645289677
    assert advanced_composition_step_epsilon(1.0, 10, 1e-5) == pytest.approx(0.0645289677, abs=1e-10)
    for eps, k, dp in [(1.0, 100, 1e-5), (0.1, 7, 1e-3), (5.0, 1000, 1e-8)]:
        e = advanced_composition_step_epsilon(eps, k, dp)
        # Eq. 50 with equality
        assert math.sqrt(2 * k * math.log(1 / dp)) * e + k * e**2 / 2 == pytest.approx(eps, rel=1e-12)
        # Eq. 48 at that ε* is eps up to the e^x − 1 ≈ x approximation, k ε*³/4
        total, _ = advanced_composition(e, 0.0, k, dp)
        assert eps <= total <= eps + k * e**3 / 4 * 1.1


# --- subsample-and-aggregate β (Thm 7, Thm 8) ----------------------------------------------------------


@pytest.mark.parametrize(
    "eps, B, std, adv, used",
    [
        (1, 1, "1", "0.20406", "1"),
        (1, 10, "0.1", "0.064529", "0.1"),
        (1, 20, "0.05", "0.045629", "0.05"),
        (1, 50, "0.02", "0.028858", "0.028858"),
        (1, 100, "0.01", "0.020406", "0.020406"),
        (1, 1000, "0.001", "0.0064529", "0.0064529"),
        (5, 10, "0.5", "0.29987", "0.5"),
        (5, 100, "0.05", "0.094829", "0.094829"),
        (0.1, 100, "0.001", "0.0020795", "0.0020795"),
    ],
)
def test_subsagg_beta_anchors(eps, B, std, adv, used):
    beta0, c0 = per_query_pure_epsilon(eps, 0.0, B)
    assert sig(beta0, 5) == std and c0 == "standard"
    assert sig(advanced_composition_step_epsilon(eps, B, 1e-5), 5) == adv
    beta, c = per_query_pure_epsilon(eps, 1e-5, B)
    assert sig(beta, 5) == used
    assert c == ("advanced" if used == adv and used != std else "standard")


def test_subsagg_crossover_between_20_and_50():
    assert per_query_pure_epsilon(1.0, 1e-5, 20)[1] == "standard"
    assert per_query_pure_epsilon(1.0, 1e-5, 50)[1] == "advanced"


# --- Gaussian prediction sensitivity (Alg. 7) ----------------------------------------------------------


@pytest.mark.parametrize(
    "B, standard, advanced, dprime, used, which",
    [
        (1, 3.7306, 17.168, 3.27e-6, 3.7306, "standard"),
        (10, 36.305, 58.416, 3.61e-6, 36.305, "standard"),
        (100, 362.02, 197.60, 3.93e-6, 197.60, "advanced"),
        (1000, 3619.2, 664.05, 4.23e-6, 664.05, "advanced"),
    ],
)
def test_gaussian_per_query_anchors(B, standard, advanced, dprime, used, which):
    r = per_query_gaussian_multiplier(1.0, 1e-5, B)
    assert float(sig(r.multiplier_standard, 5)) == standard
    assert float(sig(r.multiplier_advanced, 5)) == advanced
    assert float(sig(r.delta_prime_advanced, 3)) == dprime
    assert float(sig(r.multiplier, 5)) == used
    assert r.composition == which
    if which == "standard":
        assert math.isnan(r.delta_prime)
    else:
        assert r.delta_prime == r.delta_prime_advanced


def test_gaussian_per_query_search_matches_scalar_path():
    r = per_query_gaussian_multiplier(1.0, 1e-5, 100)
    grid = np.linspace(0, 1e-5, 1000)[1:-1]  # the reference code's grid
    assert r.delta_prime in grid
    i = int(np.flatnonzero(grid == r.delta_prime)[0])

    def mult(dp):
        e = advanced_composition_step_epsilon(1.0, 100, dp)
        return analytic_gaussian_alpha(e, (1e-5 - dp) / 100) / math.sqrt(2 * e)

    assert mult(float(grid[i])) == pytest.approx(r.multiplier_advanced, rel=1e-12)
    assert mult(float(grid[i - 1])) >= r.multiplier_advanced
    assert mult(float(grid[i + 1])) >= r.multiplier_advanced
    # standard = analytic Gaussian at (ε/B, δ/B)
    assert r.multiplier_standard == pytest.approx(
        analytic_gaussian_alpha(0.01, 1e-7) / math.sqrt(0.02), rel=1e-14
    )


def test_gaussian_per_query_grid_is_fast_and_monotone():
    comp_mod._per_query_gaussian_multiplier.cache_clear()
    grid = [1, 2, 5, 10, 20, 30, 40, 50, 75, 100, 150, 200, 250, 300, 400, 500, 750, 1000]
    t0 = time.perf_counter()
    mults = [per_query_gaussian_multiplier(1.0, 1e-5, B).multiplier for B in grid]
    assert time.perf_counter() - t0 < 2.0
    assert all(a < b for a, b in zip(mults, mults[1:]))
    t0 = time.perf_counter()
    [per_query_gaussian_multiplier(1.0, 1e-5, B) for B in grid]  # cached
    assert time.perf_counter() - t0 < 0.05
