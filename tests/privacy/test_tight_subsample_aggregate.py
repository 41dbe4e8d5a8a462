"""The tight calibration of subsample-and-aggregate (δ > 0): the B exponential-mechanism queries composed by the
optimal composition theorem (Kairouz, Oh & Viswanath 2015, Thm 3.3). Checked (1) against dp_accounting's privacy
loss distribution of B composed ε*-DP mechanisms (an independent library), (2) by brute force: the exact output
distributions of B real exponential-mechanism queries on neighbouring vote counts, enumerated, never exceed δ(ε)
at the calibrated β, and (3) through the runner: rows carry ``calibration: tight``, β above the source's, the
true ε as ``epsilon_achieved`` (≤ ε), and δ = 0 points leave the method out."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpbench.privacy.composition import (optimal_pure_composition_delta, optimal_pure_composition_epsilon,
                                         optimal_pure_step_epsilon, per_query_pure_epsilon)


@pytest.mark.parametrize("eps0,k", [(0.05, 100), (0.0135, 100), (0.004, 1000), (0.3, 10)])
def test_optimal_composition_matches_dp_accounting(eps0, k):
    from dp_accounting.pld import privacy_loss_distribution as P
    from dp_accounting.pld.common import DifferentialPrivacyParameters

    pld = P.from_privacy_parameters(DifferentialPrivacyParameters(eps0, 0.0),
                                    value_discretization_interval=1e-5).self_compose(k)
    ours = optimal_pure_composition_epsilon(eps0, k, 1e-5)
    assert ours == pytest.approx(pld.get_epsilon_for_delta(1e-5), rel=1e-3, abs=1e-6)
    assert optimal_pure_composition_delta(eps0, k, ours) <= 1e-5 * (1 + 1e-9)


@pytest.mark.parametrize("epsilon,delta,budget", [(1.0, 1e-5, 100), (1.0, 1e-5, 1000), (0.1, 1e-5, 100),
                                                  (1.0, 1e-3, 10), (4.0, 1e-5, 20)])
def test_step_is_valid_maximal_and_above_both_theorems(epsilon, delta, budget):
    step = optimal_pure_step_epsilon(epsilon, budget, delta)
    assert optimal_pure_composition_epsilon(step, budget, delta) <= epsilon * (1 + 1e-9)
    assert optimal_pure_composition_epsilon(step * 1.001, budget, delta) > epsilon     # the largest such step
    assert step >= per_query_pure_epsilon(epsilon, delta, budget)[0] * (1 - 1e-9)  # ≥ advanced composition
    assert step >= epsilon / budget
    assert optimal_pure_step_epsilon(epsilon, budget, 0.0) == epsilon / budget         # δ = 0: already tight


def _em_probs(counts: np.ndarray, beta: float) -> np.ndarray:
    z = np.exp(beta * (counts - counts.max()))
    return z / z.sum()


@pytest.mark.parametrize("budget,epsilon,delta", [(3, 1.0, 1e-2), (4, 0.5, 1e-3)])
def test_brute_force_exponential_mechanism_queries_stay_within_delta(budget, epsilon, delta):
    """B queries of the exponential mechanism (∝ exp(β·count)) on vote counts of T = 4 teachers and 3 classes,
    where replacing one record moves one teacher's vote (a → b). Every pair of count vectors of every query and
    every product output enumerated: the hockey-stick divergence at ε never exceeds δ."""
    beta = optimal_pure_step_epsilon(epsilon, budget, delta) / 2.0
    T, C = 4, 3
    votes = [np.bincount(v, minlength=C) for v in itertools.product(range(C), repeat=T)]
    pairs = []                                   # (counts on D, counts on D′): one vote moved
    for c in {tuple(v) for v in votes}:
        c = np.array(c)
        for a, b in itertools.permutations(range(C), 2):
            if c[a] > 0:
                d = c.copy()
                d[a] -= 1
                d[b] += 1
                pairs.append((c, d))
    # the worst query: the pair with the largest privacy loss; B copies of it, and B mixed queries
    losses = [np.max(np.abs(np.log(_em_probs(c, beta)) - np.log(_em_probs(d, beta)))) for c, d in pairs]
    order = np.argsort(losses)[::-1]
    for chosen in ([order[0]] * budget, [order[i % 5] for i in range(budget)]):
        P, Q = np.ones(1), np.ones(1)
        for i in chosen:
            c, d = pairs[i]
            P = np.outer(P, _em_probs(c, beta)).ravel()
            Q = np.outer(Q, _em_probs(d, beta)).ravel()
        for e in (0.5 * epsilon, epsilon):
            for p, q in ((P, Q), (Q, P)):
                assert np.maximum(p - math.exp(e) * q, 0.0).sum() <= optimal_pure_composition_delta(
                    2 * beta, budget, e) * (1 + 1e-9) + 1e-15
        assert np.maximum(P - math.exp(epsilon) * Q, 0.0).sum() <= delta * (1 + 1e-9)
    assert max(losses) <= 2 * beta * (1 + 1e-9)          # one query is 2β-DP


def test_tight_rows_through_the_runner(tiny_config):
    import copy

    from dpbench.runner import run_series
    from dpbench.studies.vdm2020.spec import series

    cfg = copy.deepcopy(tiny_config)
    cfg["studies"]["vdm2020"]["figures"]["fig2b"]["methods"] = ["subsample_aggregate", "subsample_aggregate_tight"]
    src = run_series(cfg, "vdm2020", "fig2b", "subsample_aggregate")
    tight = run_series(cfg, "vdm2020", "fig2b", "subsample_aggregate_tight")
    assert set(tight["calibration"]) == {"tight"} and set(src["calibration"]) == {"source"}
    assert set(tight["composition"]) == {"optimal"}
    a = src.groupby("budget")["noise_scale"].first()
    b = tight.groupby("budget")["noise_scale"].first()
    assert (b >= a * (1 - 1e-12)).all() and (b > a).any()            # β never smaller, larger somewhere
    assert (tight["epsilon_achieved"] <= tight["epsilon"] * (1 + 1e-9)).all()
    cfg["studies"]["vdm2020"]["figures"]["fig1a"]["methods"] = ["subsample_aggregate_tight", "non_private"]
    assert "subsample_aggregate_tight" not in series(cfg["studies"]["vdm2020"], "fig1a")     # δ = 0: left out
