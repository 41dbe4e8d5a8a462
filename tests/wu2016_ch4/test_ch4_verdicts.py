"""wu2016 chapter-4 anchor checks B1–B7 on synthetic result frames: every difference of means, ratio and threshold
is decided beyond 2 standard errors over the splits (dpbench.verdicts), paired by split — a clear effect holds, the
reversed effect does not hold, an effect within 2 standard errors is undecided (WIDE) and a single split is undecided
(TOO_FEW), never a pass.

The "noise" of a group is a fixed vector with mean exactly 0 and std exactly 1, so each mean is exact."""

import pandas as pd
import pytest

from dpbench import verdicts as V
from tests.exact_noise import exact_noise
from dpbench.studies.wu2016 import ch4_anchors as ch4


_z = exact_noise


def frame(spec, metric="mse", sd=0.01, n=10, shared_noise=False, **cols):
    """spec: {method: {x: mean}}; one row per (method, x, split); independent noise per (method, x) unless
    ``shared_noise`` (the same noise for every method at a split: a paired design)."""
    rows = []
    for i, (m, curve) in enumerate(spec.items()):
        for j, (x, mean) in enumerate(curve.items()):
            z = _z(n, 100 * j + (0 if shared_noise else i))
            rows += [{"method": m, "x": float(x), "epsilon": cols.get("epsilon", float(x)), "rep": r, "metric": metric,
                      "value": float(mean + sd * v), "is_substitute": False, "prior_baseline": 0.4,
                      "dataset": "warfarin", **{k: v for k, v in cols.items() if k != "epsilon"}}
                     for r, v in enumerate(z)]
    return pd.DataFrame(rows)


def _check(frames, claim):
    rows = [r for r in ch4.anchor_checks(frames) if r["claim"] == claim]
    assert len(rows) == 1, rows
    return rows[0]


def _status(frames, claim):
    r = _check(frames, claim)
    return r["verdict"], r["reason"]


def _assert_too_few(frames, claim):
    v, reason = _status(frames, claim)
    assert v == V.UNDECIDED and reason.startswith(V.TOO_FEW), (v, reason)


# ---------------------------------------------------------------------------------------------------------
# B1 (fig4_1): Data-Independent OP more accurate than FM at every ε


def fig4_1(op, fm, **kw):
    return {"fig4_1": frame({"non_private": {0.1: 0.8, 1.0: 0.8}, "op_data_independent": op, "fm": fm},
                            metric="accuracy", **kw)}


def test_b1_op_above_fm_holds_reversed_fails_tie_and_single_split_undecided():
    r = _check(fig4_1({0.1: 0.65, 1.0: 0.75}, {0.1: 0.45, 1.0: 0.55}), "B1")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(0.8)
    assert "2 standard errors" in r["statement"]
    assert _status(fig4_1({0.1: 0.45, 1.0: 0.55}, {0.1: 0.65, 1.0: 0.75}), "B1")[0] == V.FAILS
    assert _status(fig4_1({0.1: 0.65, 1.0: 0.551}, {0.1: 0.45, 1.0: 0.55}, sd=0.05), "B1") == (V.UNDECIDED, V.WIDE)
    _assert_too_few(fig4_1({0.1: 0.65, 1.0: 0.75}, {0.1: 0.45, 1.0: 0.55}, n=1), "B1")


# ---------------------------------------------------------------------------------------------------------
# B2 / B7 (fig4_2): OP below FM for ε < 5 and FM/Data-Independent ratio above 2 somewhere; FM at ε = 5 > 1.2× NP


def fig4_2(fm, di=None, oracle=None, **kw):
    di = di or {0.1: 1.5, 1.0: 1.2, 5.0: 1.1}
    oracle = oracle or {0.1: 1.4, 1.0: 1.15, 5.0: 1.05}
    return {"fig4_2": frame({"fm": fm, "op_data_independent": di, "op_oracle": oracle,
                             "non_private": {0.1: 1.0, 1.0: 1.0, 5.0: 1.0}}, **kw)}


GOOD_FM = {0.1: 20.0, 1.0: 5.0, 5.0: 1.5}


def test_b2_clear_effect_holds():
    r = _check(fig4_2(GOOD_FM), "B2")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(20.0 / 1.5)   # the largest ratio of means
    assert "2 standard errors" in r["statement"]


def test_b2_reversed_does_not_hold():
    v, reason = _status(fig4_2({0.1: 1.0, 1.0: 0.9, 5.0: 0.9}), "B2")
    assert v == V.FAILS and "every OP variant below FM" in reason and "ratio above 2" in reason


def test_b2_within_two_standard_errors_is_undecided():
    # ratio 2.5 at ε = 0.1 (holds), FM only 0.001 above Data-Independent at ε = 1 (sd 0.05): undecided
    v, reason = _status(fig4_2({0.1: 3.0, 1.0: 1.201, 5.0: 1.1}, di={0.1: 1.2, 1.0: 1.2, 5.0: 1.1},
                               oracle={0.1: 1.1, 1.0: 1.15, 5.0: 1.05}, sd=0.05), "B2")
    assert v == V.UNDECIDED and reason.startswith(V.WIDE) and "every OP variant below FM" in reason


def test_b2_single_split_is_undecided():
    _assert_too_few(fig4_2(GOOD_FM, n=1), "B2")


def test_b7_fm_at_five_against_non_private():
    r = _check(fig4_2(GOOD_FM), "B7")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(1.5)
    assert _status(fig4_2({**GOOD_FM, 5.0: 1.0}), "B7")[0] == V.FAILS                 # ratio 1.0 < 1.2
    assert _status(fig4_2({**GOOD_FM, 5.0: 1.2}, sd=0.05), "B7") == (V.UNDECIDED, V.WIDE)
    _assert_too_few(fig4_2(GOOD_FM, n=1), "B7")


# ---------------------------------------------------------------------------------------------------------
# B3 (fig4_3): |Data-Independent − Oracle| within 0.1 at every ε


def fig4_3(gap, sd=0.01, n=10, shared_noise=False):
    spec = {"op_data_independent": {0.1: 1.5 + gap, 1.0: 1.2 + gap / 2}, "op_oracle": {0.1: 1.5, 1.0: 1.2}}
    f = pd.concat([frame(spec, "mse", sd, n, shared_noise), frame(spec, "mse_scaled", sd / 10, n, shared_noise)])
    return {"fig4_3": f}


def test_b3_gap_within_threshold():
    r = _check(fig4_3(0.05), "B3")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(0.05)
    assert _status(fig4_3(0.3), "B3")[0] == V.FAILS
    assert _status(fig4_3(-0.3), "B3")[0] == V.FAILS                                   # either sign
    assert _status(fig4_3(0.1), "B3") == (V.UNDECIDED, V.WIDE)                          # at the threshold
    _assert_too_few(fig4_3(0.05, n=1), "B3")


def test_b3_splits_are_paired():
    # the noise of a split is the same for both methods: the gap 0.09 is decided below 0.1 although each mean alone
    # has a standard error of 0.16
    assert _status(fig4_3(0.09, sd=0.5, shared_noise=True), "B3")[0] == V.HOLDS
    assert _status(fig4_3(0.09, sd=0.5), "B3") == (V.UNDECIDED, V.WIDE)


# ---------------------------------------------------------------------------------------------------------
# B4 (fig4_5): some tuned objective perturbation within 0.1 of Data-Independent OP at every ε


def fig4_5(g1, g2, **kw):
    di = {0.1: 1.5, 1.0: 1.2}
    return {"fig4_5": frame({"objp_tuned_r1": {x: v + g1 for x, v in di.items()},
                             "objp_tuned_r2": {x: v + g2 for x, v in di.items()},
                             "op_data_independent": di, "op_oracle": {0.1: 1.45, 1.0: 1.18}}, **kw)}


def test_b4_some_objective_perturbation_within_threshold():
    r = _check(fig4_5(0.3, 0.05), "B4")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(0.05)
    assert _status(fig4_5(0.3, -0.3), "B4")[0] == V.FAILS
    assert _status(fig4_5(0.3, 0.1), "B4") == (V.UNDECIDED, V.WIDE)
    _assert_too_few(fig4_5(0.3, 0.05, n=1), "B4")


# ---------------------------------------------------------------------------------------------------------
# B5 (fig4_6): at ε = 0.2 the Oracle's MI accuracy above FM's and its MSE below FM's


def fig4_6(mi_oracle, mi_fm, mse_oracle=1.82, mse_fm=22.57, **kw):
    f = pd.concat([frame({"op_oracle": {0.2: mi_oracle, 1.0: 0.5}, "fm": {0.2: mi_fm, 1.0: 0.4}}, "mi_accuracy", **kw),
                   frame({"op_oracle": {0.2: mse_oracle, 1.0: 1.5}, "fm": {0.2: mse_fm, 1.0: 5.0}}, "mse", **kw)])
    return {"fig4_6": f}


def test_b5_oracle_against_fm_at_0_2():
    r = _check(fig4_6(0.45, 0.35), "B5")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(0.10)
    v, reason = _status(fig4_6(0.35, 0.45), "B5")
    assert v == V.FAILS and reason == "MI accuracy Oracle > FM"
    v, reason = _status(fig4_6(0.45, 0.35, mse_oracle=22.57, mse_fm=1.82), "B5")
    assert v == V.FAILS and reason == "MSE FM > Oracle"
    v, reason = _status(fig4_6(0.451, 0.45, sd=0.05), "B5")
    assert v == V.UNDECIDED and reason == f"{V.WIDE} (MI accuracy Oracle > FM)"
    _assert_too_few(fig4_6(0.45, 0.35, n=1), "B5")


# ---------------------------------------------------------------------------------------------------------
# B6 (fig4_8): MSE falls and MI rises from the smallest r to r ≈ 0.9


def fig4_8(mse, mi, **kw):
    f = pd.concat([frame({"op_tuned_r1": mse}, "mse", epsilon=0.5, **kw),
                   frame({"op_tuned_r1": mi}, "mi_accuracy", epsilon=0.5, **kw)])
    return {"fig4_8": f}


MSE8 = {0.1: 5.05, 0.5: 3.5, 0.9: 2.9}
MI8 = {0.1: 0.36, 0.5: 0.38, 0.9: 0.40}


def test_b6_training_fraction():
    r = _check(fig4_8(MSE8, MI8), "B6")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(5.05 - 2.9)
    v, reason = _status(fig4_8(dict(zip(MSE8, [2.9, 3.5, 5.05])), MI8), "B6")
    assert v == V.FAILS and reason == "MSE lower at r = 0.9 than at r = 0.1"
    v, reason = _status(fig4_8(MSE8, {0.1: 0.38, 0.5: 0.38, 0.9: 0.381}, sd=0.05), "B6")   # MI flat: a tie
    assert v == V.UNDECIDED and reason == f"{V.WIDE} (MI accuracy higher at r = 0.9 than at r = 0.1)"
    _assert_too_few(fig4_8(MSE8, MI8, n=1), "B6")
