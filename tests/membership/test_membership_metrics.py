"""Metric functions on hand-computed toy ROCs, Clopper–Pearson, DeLong, the ε lower bound and the DP bounds on attack
success (Kairouz, Oh & Viswanath 2015)."""

import math

import numpy as np
import pytest

from dpbench.attacks import membership as mia
from dpbench.attacks import metrics as M
from dpbench.privacy import attack_bounds as B

# members score 0.9, 0.8, 0.6; non-members 0.7, 0.5, 0.4
SCORES = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
LABELS = np.array([1, 1, 0, 1, 0, 0])


def test_toy_roc_vertices_auc_and_tpr_at_fpr():
    fpr, tpr, thr = M.roc_curve(SCORES, LABELS)
    assert np.allclose(fpr, [0, 0, 0, 1 / 3, 1 / 3, 2 / 3, 1])
    assert np.allclose(tpr, [0, 1 / 3, 2 / 3, 2 / 3, 1, 1, 1])
    assert thr[0] == np.inf and np.allclose(thr[1:], SCORES)
    assert M.auc_trapezoid(fpr, tpr) == pytest.approx(8 / 9)   # 8 of 9 member/non-member pairs ordered right
    assert M.tpr_at_fpr(fpr, tpr, 1e-3) == pytest.approx(2 / 3)
    assert M.tpr_at_fpr(fpr, tpr, 1 / 3) == pytest.approx(1.0)


def test_ties_move_both_rates_and_count_half():
    fpr, tpr, _ = M.roc_curve([1.0, 1.0, 0.0, 0.0], [1, 0, 1, 0])
    assert np.allclose(fpr, [0, 0.5, 1]) and np.allclose(tpr, [0, 0.5, 1])
    assert M.auc_trapezoid(fpr, tpr) == pytest.approx(0.5)
    assert M.auc_delong([1.0, 1.0, 0.0, 0.0], [1, 0, 1, 0])[0] == pytest.approx(0.5)


def test_delong_by_hand():
    # structural components: members beat (1, 1, 2/3) of the non-members, non-members are beaten by (2/3, 1, 1)
    # var = var_ddof1(1, 1, 2/3)/3 + the same = 2/81
    auc, lo, hi = M.auc_delong(SCORES, LABELS, alpha=0.05)
    half = 1.959963984540054 * math.sqrt(2 / 81)
    assert auc == pytest.approx(8 / 9)
    assert lo == pytest.approx(8 / 9 - half) and hi == 1.0


def test_clopper_pearson_closed_forms():
    assert M.clopper_pearson(0, 10, 0.05) == pytest.approx((0.0, 1 - 0.025 ** 0.1))
    assert M.clopper_pearson(10, 10, 0.05) == pytest.approx((0.025 ** 0.1, 1.0))
    lo, hi = M.clopper_pearson(50, 100, 0.05)
    assert 0.39 < lo < 0.40 and 0.60 < hi < 0.61   # tabulated: (0.3983, 0.6017)


def test_rate_summary_accuracy_is_balanced_and_intervals_nest():
    s = M.rate_summary(60, 100, 20, 100, alpha=0.05)
    assert s["accuracy"] == pytest.approx((0.6 + 0.8) / 2) and s["advantage"] == pytest.approx(0.4)
    assert s["accuracy_lo"] < s["accuracy"] < s["accuracy_hi"]
    assert s["advantage"] == pytest.approx(2 * s["accuracy"] - 1)


def test_epsilon_lower_bound_hand_computed():
    point, lower = M.epsilon_lower_bound(50, 100, 5, 100, delta=0.0, alpha=0.05)
    assert point == pytest.approx(math.log(0.5 / 0.05))
    tlo = M.clopper_pearson(50, 100, 0.025)[0]
    fhi = M.clopper_pearson(5, 100, 0.025)[1]
    assert lower == pytest.approx(max(math.log(tlo / fhi), math.log((1 - fhi) / (1 - tlo))))
    assert M.epsilon_lower_bound(10, 100, 10, 100)[1] == 0.0   # no evidence: bound 0


def test_epsilon_audit_uses_held_out_trials():
    rng = np.random.default_rng(0)
    m = np.r_[np.ones(2000, int), np.zeros(2000, int)]
    s = rng.normal(size=4000) + 1.5 * m
    out = M.epsilon_audit(s, m, 0.0, np.random.default_rng(1))
    assert out["n_pos"] == 1000 and out["n_neg"] == 1000
    assert 0 < out["eps_lower"] <= out["eps_point"]
    # pure noise scores: the held-out bound stays at (or near) 0
    noise = M.epsilon_audit(rng.normal(size=4000), m, 0.0, np.random.default_rng(2))
    assert noise["eps_lower"] < 0.15


def test_bounds_table_of_spec_3_2():
    for eps, delta, acc, adv, tpr in [(0.1, 0, 0.5250, 0.0500, 0.00111), (1, 0, 0.7311, 0.4621, 0.00272),
                                      (1, 1e-5, 0.7311, 0.4621, 0.00273), (4, 0, 0.9820, 0.9640, 0.0546)]:
        assert B.accuracy_bound(eps, delta) == pytest.approx(acc, abs=1e-4)
        assert B.advantage_bound(eps, delta) == pytest.approx(adv, abs=1e-4)
        assert B.tpr_bound(1e-3, eps, delta) == pytest.approx(tpr, abs=1e-5)
    assert B.accuracy_bound(math.inf) == 1.0 and B.tpr_bound(0.0, math.inf) == 1.0
    assert B.replace_one_from_add_remove(*B.add_remove_budget_for_replace_one(1.0, 1e-5)) == pytest.approx((1.0, 1e-5))
    assert B.NEIGHBOURING == "replace-one"


def test_attack_primitives_on_toy_logits():
    z = np.array([[2.0, 0.0], [0.0, 3.0], [1.0, 1.0]])
    y = np.array([0, 0, 1])
    assert np.allclose(mia.gap_attack(z, y)[1], [1, 0, 0])
    loss = mia.cross_entropy(z, y)
    assert loss == pytest.approx([np.log1p(np.exp(-2)), np.log1p(np.exp(3)), np.log(2)])
    assert mia.logit_confidence(z, y) == pytest.approx([2.0, -3.0, 0.0])   # binary: φ = logit margin
    assert np.array_equal(mia.loss_threshold_attack(z, y, 0.7)[1], [1, 0, 1])
    assert mia.best_threshold([3.0, 2.0], [1.0, 0.0]) == pytest.approx(1.5)
    z_lira = mia.lira_offline([1.0, 0.0], [[0.0, 0.0], [0.0, 2.0]], variance="per_example")
    assert z_lira == pytest.approx([1.0 / 1e-3, -1.0 / math.sqrt(2)])   # σ floored at min_std = 1e-3
    assert mia.MEMBER == 1 and mia.NON_MEMBER == 0
