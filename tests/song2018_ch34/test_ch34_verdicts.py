"""song2018 chapters 3-4 anchor checks on synthetic result frames: every difference of means is decided beyond
2 standard errors over the repetitions and every std ratio by the matching F interval (dpbench.verdicts) — a clear
effect holds, the reversed effect does not hold, an effect within 2 standard errors is undecided (WIDE) and a single
repetition is undecided (TOO_FEW), never a pass.

The "noise" of a group is a fixed vector with mean exactly 0 and std exactly 1, so each mean and std is exact."""

import math

import numpy as np
import pandas as pd
import pytest

from dpbench import verdicts as V
from dpbench.studies.song2018 import ch34_anchors, ch34_stats
from dpbench.studies.song2018.spec import DATASET_LABELS
from tests.exact_noise import exact_noise


_z = exact_noise


def _rows(mean, sd, n, seed, **cols):
    return [{**cols, "rep": r, "value": float(v)} for r, v in enumerate(mean + sd * _z(n, seed))]


def _check(frames, claim, dataset=None):
    rows = [r for r in ch34_anchors.anchor_rows(frames) if r["claim"] == claim]
    if dataset is not None:
        rows = [r for r in rows if r["statement"].startswith(DATASET_LABELS[dataset])]
    assert len(rows) == 1, rows
    return rows[0]


def _status(frames, claim, dataset=None):
    r = _check(frames, claim, dataset)
    return r["verdict"], r["reason"]


# ---------------------------------------------------------------------------------------------------------
# A3.1 (fig3_1): gap and std at the smallest and the largest b


def fig3_1(spec, n=20):
    """spec: {b: (private mean, private std, non-private mean, non-private std)}; two iterations, the last final."""
    rows = []
    for i, (b, (pm, ps, nm, ns)) in enumerate(spec.items()):
        for it in (0, 10):
            last = it == 10
            base = dict(dataset="kddcup99", batch_size=b, schedule="inv_sqrt", iteration=it)
            rows += _rows(pm if last else 5.0, ps, n, 10 * i + it, method="private", **base)
            rows += _rows(nm if last else 5.0, ns, n, 10 * i + it + 1, method="non_private", **base)
    return {"fig3_1": pd.DataFrame(rows)}


def test_a3_1_clear_effect_holds():
    r = _check(fig3_1({1: (1.5, 0.1, 1.0, 0.005), 5: (1.0, 0.01, 1.0, 0.005)}), "A3.1")
    assert r["verdict"] == V.HOLDS, r
    assert abs(r["value"]) < 0.01                                       # the gap at the largest b
    assert "2 standard errors" in r["statement"] and "F interval" in r["statement"]


def test_a3_1_reversed_effect_does_not_hold():
    v, reason = _status(fig3_1({1: (1.0, 0.01, 1.0, 0.005), 5: (1.5, 0.1, 1.0, 0.005)}), "A3.1")
    assert v == V.FAILS and "gap at b = 5 < 5 %" in reason


def test_a3_1_gap_at_the_threshold_is_undecided():
    # the gap at b = 5 is exactly 5 %: within 2 standard errors of the threshold; every other part holds
    v, reason = _status(fig3_1({1: (1.5, 0.1, 1.0, 0.005), 5: (1.05, 0.01, 1.0, 0.005)}), "A3.1")
    assert v == V.UNDECIDED and reason.startswith(V.WIDE) and "gap at b = 5 < 5 %" in reason


def test_a3_1_equal_stds_are_undecided():
    v, reason = _status(fig3_1({1: (1.5, 0.01, 1.0, 0.005), 5: (1.0, 0.01, 1.0, 0.005)}), "A3.1")
    assert v == V.UNDECIDED and "std at b = 1 > std at b = 5" in reason


def test_a3_1_single_repetition_is_undecided():
    v, reason = _status(fig3_1({1: (1.5, 0.1, 1.0, 0.005), 5: (1.0, 0.01, 1.0, 0.005)}, n=1), "A3.1")
    assert v == V.UNDECIDED and reason.startswith(V.TOO_FEW)


def test_a3_1_gap_standard_error_is_paired_by_repetition():
    # private model r = 1.06 × non-private model r (same permutation r): the paired residuals P_r − r·N_r vanish, so
    # the 6 % gap is decided above 5 % although each mean alone is noisy (unpaired, it would be within 2 SE)
    npv = 1.0 + 0.2 * _z(20, 99)
    g = pd.DataFrame(_rows(0.0, 0.0, 20, 0, method="non_private") + _rows(0.0, 0.0, 20, 0, method="private"))
    g["value"] = np.r_[npv, 1.06 * npv]
    gap = ch34_stats.rel_gap(g)
    assert gap.mean == pytest.approx(0.06) and gap.se < 1e-9
    assert ch34_stats.below(gap, ch34_stats.Est(0.05)).status == V.FAILS
    unpaired = ch34_stats.rel_gap(g.assign(rep=np.r_[np.arange(20), np.arange(20, 40)]))
    assert unpaired.se > 0.02 and ch34_stats.below(unpaired, ch34_stats.Est(0.05)).status == V.UNDECIDED


# ---------------------------------------------------------------------------------------------------------
# A3.2a / A3.2b (fig3_2): final objective by b, two schedules, centralized


def fig3_2(inv_sqrt, large=None, sd=0.01, n=10, central=1.0):
    """inv_sqrt / large: {b: private mean}; non-private rows and one centralized row per (b, schedule)."""
    rows = []
    for s, means in (("inv_sqrt", inv_sqrt), ("large", large)):
        for i, (b, m) in enumerate((means or {}).items()):
            base = dict(dataset="mnist", schedule=s, batch_size=b, x=float(b))
            rows += _rows(m, sd, n, 100 * i + len(s), method="private", **base)
            rows += _rows(m - 0.05, sd, n, 100 * i + len(s) + 1, method="non_private", **base)
            rows.append({**base, "method": "centralized", "rep": 0, "value": central})
    return {"fig3_2": pd.DataFrame(rows)}


def test_a3_2a_u_shape_holds_and_value_is_the_best_b():
    r = _check(fig3_2({1: 1.5, 5: 1.1, 50: 1.3}), "A3.2a")
    assert r["verdict"] == V.HOLDS and r["value"] == 5.0


@pytest.mark.parametrize("means", [{1: 1.1, 5: 1.5, 50: 1.3},      # inverted U
                                   {1: 1.5, 5: 1.3, 50: 1.1}])     # monotone: the largest b is best
def test_a3_2a_reversed_does_not_hold(means):
    assert _status(fig3_2(means), "A3.2a")[0] == V.FAILS


def test_a3_2a_within_two_standard_errors_is_undecided():
    v, reason = _status(fig3_2({1: 1.5, 5: 1.1, 50: 1.105}, sd=0.05), "A3.2a")
    assert v == V.UNDECIDED and reason == V.WIDE


def test_a3_2a_single_repetition_or_two_batch_sizes_is_undecided():
    v, reason = _status(fig3_2({1: 1.5, 5: 1.1, 50: 1.3}, n=1), "A3.2a")
    assert v == V.UNDECIDED and reason.startswith(V.TOO_FEW)
    v, reason = _status(fig3_2({1: 1.5, 50: 1.3}), "A3.2a")          # no b between the two ends
    assert v == V.UNDECIDED and reason.startswith(V.TOO_FEW)


def test_a3_2b_less_degradation_and_closer_to_centralized_holds():
    r = _check(fig3_2({1: 1.5, 5: 1.1, 50: 1.3}, {1: 1.2, 5: 1.05, 50: 1.06}), "A3.2b")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(0.01 - 0.2)


def test_a3_2b_reversed_does_not_hold():
    v, reason = _status(fig3_2({1: 1.2, 5: 1.05, 50: 1.06}, {1: 1.5, 5: 1.1, 50: 1.3}), "A3.2b")
    assert v == V.FAILS and "smaller degradation" in reason and "closer to centralized" in reason


def test_a3_2b_within_two_standard_errors_is_undecided():
    v, reason = _status(fig3_2({1: 1.5, 5: 1.1, 50: 1.3}, {1: 1.5, 5: 1.1, 50: 1.29}, sd=0.05), "A3.2b")
    assert v == V.UNDECIDED and reason.startswith(V.WIDE)


def test_a3_2b_single_repetition_is_undecided():
    v, reason = _status(fig3_2({1: 1.5, 5: 1.1, 50: 1.3}, {1: 1.2, 5: 1.05, 50: 1.06}, n=1), "A3.2b")
    assert v == V.UNDECIDED and reason.startswith(V.TOO_FEW)


# ---------------------------------------------------------------------------------------------------------
# A3.3 (fig3_3): std ratio ≥ 10 by the F interval


def fig3_3(sd_lt, sd_sqrt=1.0, n=20):
    rows = []
    for i, (s, sd) in enumerate((("inv_lambda_t", sd_lt), ("inv_sqrt", sd_sqrt))):
        base = dict(dataset="synthetic", schedule=s, batch_size=5, updates=100, iteration=100, method="private")
        rows += _rows(1.0, sd, n, i, **base)
    return {"fig3_3": pd.DataFrame(rows)}


def test_a3_3_std_ratio_interval():
    # n = 20 per schedule: the 95.4 % interval of the std ratio is ratio ×/÷ 1.605
    r = _check(fig3_3(20.0), "A3.3")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(20.0)
    assert _status(fig3_3(17.0), "A3.3")[0] == V.HOLDS                 # lower bound 10.6
    assert _status(fig3_3(6.0), "A3.3")[0] == V.FAILS                  # upper bound 9.6
    assert _status(fig3_3(3.0), "A3.3")[0] == V.FAILS
    assert _status(fig3_3(10.0), "A3.3") == (V.UNDECIDED, V.WIDE)      # [6.2, 16]
    assert _status(fig3_3(15.0), "A3.3") == (V.UNDECIDED, V.WIDE)      # lower bound 9.3
    v, reason = _status(fig3_3(20.0, n=1), "A3.3")
    assert v == V.UNDECIDED and reason.startswith(V.TOO_FEW)


def test_sd_ratio_interval_matches_the_f_distribution():
    from scipy import stats

    a, b = 3.0 * _z(10, 1), _z(12, 2)
    v, r, lo, hi = ch34_stats.sd_ratio_at_least(a, b, 1.0)
    alpha = 2 * stats.norm.sf(V.Z)
    assert r == pytest.approx(3.0) and v.status == V.HOLDS
    assert lo == pytest.approx(3.0 / math.sqrt(stats.f.ppf(1 - alpha / 2, 9, 11)))
    assert hi == pytest.approx(3.0 / math.sqrt(stats.f.ppf(alpha / 2, 9, 11)))


# ---------------------------------------------------------------------------------------------------------
# A4.1a (fig4_1, panel order): CleanFirst best below 1/λ, NoisyFirst above (lower is better)


def fig4_1_order(below, above, sd=0.01, n=10, cs=(100.0, 300.0, 3000.0, 10000.0), lam=1e-3):
    """below / above: {method: mean |f(w) − f(v)|} for the c < 1/λ and the c > 1/λ."""
    rows = []
    for i, c in enumerate(cs):
        for j, (m, mean) in enumerate((below if c < 1 / lam else above).items()):
            rows += _rows(mean, sd, n, 10 * i + j, dataset="mnist", panel="order", method=m, x=c, l2=lam)
    return {"fig4_1": pd.DataFrame(rows)}


CLEAN = {"clean_first": 0.1, "noisy_first": 0.5, "arbitrary": 0.3}
NOISY = {"clean_first": 0.5, "noisy_first": 0.1, "arbitrary": 0.3}


def test_a4_1a_expected_order_best_holds():
    r = _check(fig4_1_order(CLEAN, NOISY), "A4.1a", "mnist")
    assert r["verdict"] == V.HOLDS and r["value"] == 1.0
    assert "2 standard errors" in r["statement"]


def test_a4_1a_reversed_does_not_hold():
    r = _check(fig4_1_order(NOISY, CLEAN), "A4.1a", "mnist")
    assert r["verdict"] == V.FAILS and r["value"] == 0.0


def test_a4_1a_tie_within_two_standard_errors_is_undecided():
    tie = {"clean_first": 0.5, "noisy_first": 0.1, "arbitrary": 0.101}   # NoisyFirst vs Arbitrary within 2 SE
    r = _check(fig4_1_order(CLEAN, tie, sd=0.05), "A4.1a", "mnist")
    assert (r["verdict"], r["reason"]) == (V.UNDECIDED, V.WIDE)
    assert r["value"] == 0.5                                            # decided (holds) at the two c < 1/λ


def test_a4_1a_single_repetition_is_undecided():
    v, reason = _status(fig4_1_order(CLEAN, NOISY, n=1), "A4.1a", "mnist")
    assert v == V.UNDECIDED and reason.startswith(V.TOO_FEW)


# ---------------------------------------------------------------------------------------------------------
# A4.1c (fig4_1, panel c2): best c₂ inside [c₂(L), c₂(U)] and some c₂ beats CleanOnly


def fig4_1_c2(alg1, clean_only, sd=0.01, n=10, n_clean=None, lo=30.0, hi=300.0):
    """alg1: {c₂: mean objective}; CleanOnly's runs are repeated at every grid c₂ (as run_ch4 writes them)."""
    grid = sorted(alg1)
    base = dict(dataset="covertype", panel="c2", c2_lower=lo, c2_upper=hi)
    rows = []
    for i, c2 in enumerate(grid):
        rows += _rows(alg1[c2], sd, n, i, method="alg1", x=c2, **base)
    co = _rows(clean_only, sd, n if n_clean is None else n_clean, 99, method="clean_only", **base)
    rows += [{**r, "x": c2} for r in co for c2 in grid]
    return {"fig4_1": pd.DataFrame(rows)}


GOOD = {10.0: 0.6, 30.0: 0.45, 100.0: 0.4, 300.0: 0.45, 1000.0: 0.6}


def test_a4_1c_best_inside_and_beats_clean_only_holds():
    r = _check(fig4_1_c2(GOOD, 0.5), "A4.1c", "covertype")
    assert r["verdict"] == V.HOLDS and r["value"] == 100.0


def test_a4_1c_best_outside_does_not_hold():
    v, reason = _status(fig4_1_c2({**GOOD, 10.0: 0.3}, 0.5), "A4.1c", "covertype")
    assert v == V.FAILS and reason == "best c₂ inside the bracket"


def test_a4_1c_no_c2_beats_clean_only_does_not_hold():
    v, reason = _status(fig4_1_c2(GOOD, 0.3), "A4.1c", "covertype")
    assert v == V.FAILS and reason == "some c₂ beats CleanOnly"


def test_a4_1c_tie_with_a_c2_outside_is_undecided():
    v, reason = _status(fig4_1_c2({**GOOD, 10.0: 0.401}, 0.5, sd=0.05), "A4.1c", "covertype")
    assert v == V.UNDECIDED and reason.startswith(V.WIDE) and "best c₂ inside the bracket" in reason


def test_a4_1c_single_repetition_is_undecided():
    v, reason = _status(fig4_1_c2(GOOD, 0.5, n=1), "A4.1c", "covertype")
    assert v == V.UNDECIDED and reason.startswith(V.TOO_FEW)
    # one CleanOnly run written at every grid c₂ is still one repetition
    v, reason = _status(fig4_1_c2(GOOD, 0.5, n_clean=1), "A4.1c", "covertype")
    assert v == V.UNDECIDED and reason.startswith(V.TOO_FEW) and "CleanOnly" in reason


# ---------------------------------------------------------------------------------------------------------
# A4.1b / A4.1b2 (fig4_1, panel epsn): Algorithm2 below SameClean / SameNoisy, the gap shrinking; Algorithm2 best at
# moderate/high ε_N, CleanOnly better at the lowest (lower is better); a tie within 2 SE is undecided, never a pass


def fig4_1_epsn(spec, clean_only=None, sd=0.01, n=10):
    """spec: {ε_N: (Algorithm2, SameClean, SameNoisy) mean objectives}; CleanOnly's runs repeated at every ε_N."""
    rows = []
    for i, (x, means) in enumerate(spec.items()):
        for j, (m, mean) in enumerate(zip(("alg2", "same_clean", "same_noisy"), means)):
            rows += _rows(mean, sd, n, 10 * i + j, dataset="mnist", panel="epsn", method=m, x=x)
    if clean_only is not None:
        co = _rows(clean_only, sd, n, 99, dataset="mnist", panel="epsn", method="clean_only")
        rows += [{**r, "x": x} for r in co for x in spec]
    return {"fig4_1": pd.DataFrame(rows)}


SHRINK = {1.0: (0.30, 0.50, 0.60), 3.0: (0.25, 0.35, 0.40), 10.0: (0.20, 0.25, 0.30)}


def test_a4_1b_clear_effect_holds():
    r = _check(fig4_1_epsn(SHRINK), "A4.1b", "mnist")
    assert r["verdict"] == V.HOLDS and r["value"] == 1.0
    assert "2 standard errors" in r["statement"] and "never a pass" in r["statement"]


def test_a4_1b_reversed_does_not_hold():
    worse = {x: (s[1] + 0.1, s[1], s[2]) for x, s in SHRINK.items()}    # Algorithm2 above SameClean everywhere
    r = _check(fig4_1_epsn(worse), "A4.1b", "mnist")
    assert r["verdict"] == V.FAILS and r["value"] == 0.0
    grows = {1.0: (0.45, 0.50, 0.60), 3.0: (0.25, 0.35, 0.40), 10.0: (0.05, 0.25, 0.30)}   # the gap grows
    v, reason = _status(fig4_1_epsn(grows), "A4.1b", "mnist")
    assert v == V.FAILS and reason == "gap larger at the smallest ε_N than at the largest"


def test_a4_1b_tie_within_two_standard_errors_is_undecided_not_a_pass():
    tie = {x: (s[1], s[1] + 0.001, s[2]) for x, s in SHRINK.items()}   # Algorithm2 = SameClean within 2 SE
    r = _check(fig4_1_epsn(tie, sd=0.05), "A4.1b", "mnist")
    assert r["verdict"] == V.UNDECIDED and r["reason"].startswith(V.WIDE) and r["value"] == 0.0


def test_a4_1b_single_repetition_is_undecided():
    v, reason = _status(fig4_1_epsn(SHRINK, n=1), "A4.1b", "mnist")
    assert v == V.UNDECIDED and reason.startswith(V.TOO_FEW)


def test_a4_1b2_clear_effect_holds():
    r = _check(fig4_1_epsn(SHRINK, clean_only=0.28), "A4.1b2", "mnist")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(0.02)  # Algorithm2 − CleanOnly at ε_N = 1


def test_a4_1b2_reversed_does_not_hold():
    v, reason = _status(fig4_1_epsn(SHRINK, clean_only=0.15), "A4.1b2", "mnist")   # CleanOnly best everywhere
    assert v == V.FAILS and reason == "Algorithm2 lowest at every ε_N ≥ 3"
    v, reason = _status(fig4_1_epsn(SHRINK, clean_only=0.4), "A4.1b2", "mnist")    # CleanOnly worse at ε_N = 1
    assert v == V.FAILS and reason == "CleanOnly below Algorithm2 at ε_N = 1"


def test_a4_1b2_tie_within_two_standard_errors_is_undecided_not_a_pass():
    # CleanOnly ties Algorithm2 at ε_N = 10 (was a pass: "ties within 2 SE count") and at ε_N = 1
    spec = {1.0: (0.30, 0.50, 0.60), 3.0: (0.25, 0.35, 0.40), 10.0: (0.301, 0.35, 0.40)}
    v, reason = _status(fig4_1_epsn(spec, clean_only=0.30, sd=0.05), "A4.1b2", "mnist")
    assert v == V.UNDECIDED and reason.startswith(V.WIDE) and "Algorithm2 lowest at every ε_N ≥ 3" in reason


def test_a4_1b2_single_repetition_is_undecided():
    v, reason = _status(fig4_1_epsn(SHRINK, clean_only=0.28, n=1), "A4.1b2", "mnist")
    assert v == V.UNDECIDED and reason.startswith(V.TOO_FEW)
