"""Loss perturbation's replace-one ε bound over every pair (loss_perturbation_epsilon_bound): the algebra checked on
random softmax outputs, its values (0.525ε for the method at C = 10, exactly ε for the noise ×0.5 twin, 5ε for
×0.1), and the audit's verdict for the ×0.5 twin: not broken (undecided), not "broken twin not caught"."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpbench.learn import HESSIAN_BOUND_L, LIPSCHITZ_K
from dpbench.methods.loss_perturbation import loss_perturbation_epsilon_bound


def test_the_bound_dominates_every_softmax_output():
    """For random outputs p of every shape (and labels y), the two terms evaluated at p — noise (a + K)/(4Kf)
    with a = ‖p − e_y‖, Jacobian (1 − ‖p‖²)/(2LC) — never exceed the bound, and 1 − ‖p‖² ≤ 2 − a² holds."""
    rng = np.random.default_rng(0)
    K, L = LIPSCHITZ_K, HESSIAN_BOUND_L
    for C in (2, 3, 10):
        for f in (1.0, 0.5, 0.1):
            bound = loss_perturbation_epsilon_bound(1.0, C, f)
            worst = 0.0
            for conc in (0.02, 0.2, 1.0, 5.0):
                p = rng.dirichlet(np.full(C, conc), size=20_000)
                y = rng.integers(0, C, size=len(p))
                a = np.linalg.norm(p - np.eye(C)[y], axis=1)
                curv = 1 - (p * p).sum(axis=1)
                assert np.all(curv <= 2 - a * a + 1e-12)
                worst = max(worst, float(np.max((a + K) / (4 * K * f) + curv / (2 * L * C))))
            assert worst <= bound + 1e-12, (C, f, worst, bound)
            if C == 10 and f <= 0.5:   # the maximum at a = K (p on a wrong vertex) is approached: the bound is tight
                assert worst >= 0.95 * bound, (C, f, worst, bound)


def test_values_at_ten_classes():
    assert math.isclose(loss_perturbation_epsilon_bound(1.0, 10, 1.0), 0.5254, abs_tol=1e-4)
    assert loss_perturbation_epsilon_bound(1.0, 10, 0.5) == 1.0          # exactly ε: the ×0.5 twin stays ε-DP
    assert loss_perturbation_epsilon_bound(4.0, 10, 0.5) == 4.0
    assert math.isclose(loss_perturbation_epsilon_bound(1.0, 10, 0.1), 5.0, rel_tol=1e-12)
    assert loss_perturbation_epsilon_bound(1.0, 5, 0.5) > 1.0            # few classes: the twin is broken


def test_audit_row_of_the_half_noise_twin_is_not_a_failure():
    from dpbench.studies.audit import anchor_checks

    rows = []
    for variant, own, fires in (("correct", float("nan"), False), ("noise_x0.5", 1.0, False),
                                ("noise_x0.1", 5.0, True)):
        rows.append({"series": "loss_perturbation", "label": "loss perturbation (vdm2020 Alg. 4)",
                     "variant": variant, "claimed_epsilon": 1.0, "delta": 0.0, "eps_lower": 1.5 if fires else 0.0,
                     "eps_hat": 1.5 if fires else 0.0, "eps_lower_gdp": float("nan"), "eps_point": 0.0,
                     "eps_pair": float("nan"), "eps_pair_variant": own, "fires": fires, "trials": 20,
                     "seed_index": 0, "runtime_s": 0.1, "cpu_s": 0.1, "post_training_noise": False})
    checks = anchor_checks({"fig_audit": pd.DataFrame(rows)}).set_index("claim")
    half = checks.loc["twin-caught/loss_perturbation@ε=1/noise_x0.5"]
    assert half["verdict"] == "undecided" and "not broken" in half["reason"], dict(half)
    assert checks.loc["twin-caught/loss_perturbation@ε=1/noise_x0.1"]["verdict"] == "holds"
