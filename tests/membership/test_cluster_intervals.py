"""Intervals for membership trials pooled over independently trained models (clusters): the design effect by
hand, the effective-sample-size Clopper–Pearson interval (never narrower than the binomial one, equal to it
without over-dispersion), its coverage on simulated over-dispersed clusters against the naive pooled
Clopper–Pearson, and the study's pooled summaries widening when repetitions disagree."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpbench.attacks import metrics as M
from dpbench.studies import membership as S


def test_design_effect_by_hand():
    # p̂ = 1/2, v_clu = 2/1·(10² + 10²)/200² = 0.01, v_bin = 0.25/200 = 0.00125 → deff = 8
    assert M.design_effect([40, 60], [100, 100]) == pytest.approx(8.0)
    assert M.design_effect([50, 50, 50], [100, 100, 100]) == 1.0          # identical clusters: floor
    assert M.design_effect([0, 0], [10, 10]) == 1.0 and M.design_effect([10, 10], [10, 10]) == 1.0
    assert math.isnan(M.design_effect([3], [10]))                          # one model: not estimable
    with pytest.raises(ValueError):
        M.design_effect([11], [10])


def test_clustered_interval_equals_clopper_pearson_without_dispersion():
    lo, hi, deff = M.clustered_clopper_pearson([50, 50, 50, 50, 50], [100] * 5, 0.05)
    assert deff == 1.0 and (lo, hi) == M.clopper_pearson(250, 500, 0.05)
    assert M.clustered_clopper_pearson([37], [100], 0.05)[:2] == M.clopper_pearson(37, 100, 0.05)   # K = 1
    assert M.rate_interval([40, 60], [100, 100], 0.05, "clopper_pearson")[:2] == M.clopper_pearson(100, 200, 0.05)
    with pytest.raises(ValueError, match="unknown interval method"):
        M.rate_interval([40, 60], [100, 100], 0.05, "bootstrap")
    # binomial clusters with a common rate: the interval always contains the binomial one
    rng = np.random.default_rng(0)
    for K in (2, 3, 5, 20):
        for _ in range(50):
            n = rng.integers(20, 200, size=K)
            k = rng.binomial(n, 0.2)
            lo, hi, deff = M.clustered_clopper_pearson(k, n, 0.05)
            clo, chi = M.clopper_pearson(int(k.sum()), int(n.sum()), 0.05)
            assert deff >= 1.0 and lo <= clo and hi >= chi


def test_clustered_interval_widens_with_disagreement_and_small_k():
    agree = M.clustered_clopper_pearson([50, 50, 50, 50], [100] * 4)
    mild = M.clustered_clopper_pearson([44, 56, 47, 53], [100] * 4)
    strong = M.clustered_clopper_pearson([30, 70, 40, 60], [100] * 4)
    widths = [hi - lo for lo, hi, _ in (agree, mild, strong)]
    assert widths[0] < widths[1] < widths[2] and 1.0 < mild[2] < strong[2]
    # the same estimated design effect from fewer models: the variance estimate has fewer degrees of freedom,
    # so the inflation is larger; it tends to the design effect itself as K grows
    f = [M._variance_inflation(2.0, K, 0.05) for K in (2, 5, 20, 10_000)]
    assert f[0] > f[1] > f[2] > f[3] > 2.0 and f[3] == pytest.approx(2.0, rel=1e-3)
    assert M._variance_inflation(1.0, 5, 0.05) == 1.0 and M._variance_inflation(float("nan"), 1, 0.05) == 1.0


def _coverage(K, n, p, deff_true, studies, alpha, rng):
    rho = (deff_true - 1) / (n - 1)                     # beta-binomial: deff = 1 + (n − 1)ρ, ρ = 1/(a + b + 1)
    if rho > 0:
        ab = 1 / rho - 1
        pj = rng.beta(p * ab, (1 - p) * ab, size=(studies, K))
    else:
        pj = np.full((studies, K), p)
    k = rng.binomial(n, pj)
    lo, hi = stats.beta.ppf(alpha / 2, k.sum(1), K * n - k.sum(1) + 1), stats.beta.ppf(1 - alpha / 2, k.sum(1) + 1,
                                                                                      K * n - k.sum(1))
    naive = np.mean((np.nan_to_num(lo, nan=0.0) <= p) & (p <= np.nan_to_num(hi, nan=1.0)))
    lo, hi, _ = M.clustered_clopper_pearson(k, np.full(K, n), alpha)
    return float(naive), float(np.mean((lo <= p) & (p <= hi)))


def test_coverage_on_overdispersed_clusters():
    """2000 simulated studies of K = 20 models × 100 trials, per-model success rate ~ Beta with design effect
    1.5 (mean 0.3): the adjusted 95% interval covers close to nominally, the pooled Clopper–Pearson does not."""
    naive, adj = _coverage(K=20, n=100, p=0.3, deff_true=1.5, studies=2000, alpha=0.05,
                           rng=np.random.default_rng(20261123))
    assert adj >= 0.93, (naive, adj)
    assert naive <= 0.925 and adj - naive >= 0.02, (naive, adj)


def test_cluster_mean_interval_is_a_t_interval():
    mean, half, se = M.cluster_mean_interval([0.5, 0.6, 0.7])
    assert mean == pytest.approx(0.6) and se == pytest.approx(0.1 / math.sqrt(3))
    assert half == pytest.approx(stats.t.ppf(0.975, 2) * se)
    assert math.isnan(M.cluster_mean_interval([0.5])[1])


def test_pooled_epsilon_lower_bound_matches_unclustered_without_dispersion():
    out = M.pooled_epsilon_lower_bound([30, 30], [50, 50], [2, 2], [50, 50], 0.0, 0.05)
    assert (out["eps_point"], out["eps_lower"]) == M.epsilon_lower_bound(60, 100, 4, 100, 0.0, 0.05)
    spread = M.pooled_epsilon_lower_bound([20, 40], [50, 50], [0, 4], [50, 50], 0.0, 0.05)
    assert spread["eps_point"] == out["eps_point"] and spread["eps_lower"] < out["eps_lower"]
    assert spread["deff_tpr"] > 1 and spread["deff_fpr"] > 1


def _study_rows(tps, n=100, fp=40):
    """Long rows of one (dataset, method, ε, attack) over repetitions with the given true-positive counts."""
    rows = []
    for r, tp in enumerate(tps):
        base = {"dataset": "covertype", "method": "output_perturbation", "epsilon": 1.0, "attack": "gap", "rep": r,
                "n_members": n, "n_nonmembers": n, "tp": tp, "fp": fp, "eps_tp": tp // 2, "eps_fp": fp // 2,
                "eps_n_pos": n // 2, "eps_n_neg": n // 2, "epsilon_game": 1.0, "delta_game": 0.0,
                "dataset_variant": "substitute", "train_accuracy": 0.8, "test_accuracy": 0.7}
        for metric, v in (("accuracy", (tp + n - fp) / (2 * n)), ("auc", 0.6), ("tpr_at_fpr_1e-3", 0.0)):
            rows.append({**base, "metric": metric, "value": v})
    return pd.DataFrame(rows)


def test_study_pooled_interval_widens_when_repetitions_disagree():
    agree, disagree = _study_rows([60, 60, 60, 60, 60]), _study_rows([40, 80, 50, 70, 60])
    pa, pd_ = S.pooled(agree, 0.05), S.pooled(disagree, 0.05)
    assert pa["accuracy"].iloc[0] == pd_["accuracy"].iloc[0]
    assert (pa["ci_method"] == "design_effect").all() and pa["deff_tpr"].iloc[0] == 1.0
    assert pd_["deff_tpr"].iloc[0] > 1.0 and pd_["deff_accuracy"].iloc[0] > 1.0
    wa = pa["accuracy_hi"].iloc[0] - pa["accuracy_lo"].iloc[0]
    wd = pd_["accuracy_hi"].iloc[0] - pd_["accuracy_lo"].iloc[0]
    assert wd > wa
    assert pd_["eps_lower"].iloc[0] <= pa["eps_lower"].iloc[0]
    # the binomial interval ignores the disagreement (same pooled counts, same interval)
    ca, cd = S.pooled(agree, 0.05, "clopper_pearson"), S.pooled(disagree, 0.05, "clopper_pearson")
    assert ca["accuracy_lo"].iloc[0] == cd["accuracy_lo"].iloc[0] and (cd["ci_method"] == "clopper_pearson").all()
    assert cd["accuracy_hi"].iloc[0] - cd["accuracy_lo"].iloc[0] < wd


def test_accuracy_interval_sees_through_a_threshold_that_moves_tpr_and_fpr_together():
    # model 1 flags many records, model 2 few: TPR and FPR swing together, the accuracy does not
    tp, fp, n = [80, 30], [60, 10], [100, 100]
    r = M.pooled_rate_summary(tp, n, fp, n, 0.05)
    assert r["deff_tpr"] > 10 and r["deff_fpr"] > 10 and r["deff_accuracy"] == 1.0
    lo, hi = M.clopper_pearson(80 + 40 + 30 + 90, 400, 0.05)        # correct decisions of both models
    assert (r["accuracy_lo"], r["accuracy_hi"]) == (lo, hi) and r["advantage_lo"] == pytest.approx(2 * lo - 1)
    # the binomial method reproduces rate_summary of the pooled counts exactly
    c = M.pooled_rate_summary(tp, n, fp, n, 0.05, "clopper_pearson")
    old = M.rate_summary(110, 200, 70, 200, 0.05)
    assert all(c[k] == pytest.approx(old[k]) for k in old) and c["ci_method"] == "clopper_pearson"


def test_rows_record_the_interval_and_the_audit_reads_it():
    rows = _study_rows([40, 80, 50, 70, 60]).assign(ci_level=0.95, audit_alpha=0.05, audit_correction="none",
                                                    ci_method="clopper_pearson")
    assert S._cfg_from(None, rows)["ci_method"] == "clopper_pearson"
    assert S._cfg_from(None, rows.drop(columns="ci_method"))["ci_method"] == "design_effect"
    a = S.audit_table({"fig_attack_covertype": rows}, S._cfg_from(None, rows))
    assert (a["ci_method"] == "clopper_pearson").all()
