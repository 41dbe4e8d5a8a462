"""wu2016 chapter-3 anchor checks A1–A8 on synthetic result frames: every difference of means and every threshold
is decided beyond 2 standard errors over the repetitions (dpbench.verdicts) — a clear effect holds, the reversed
effect does not hold, an effect within 2 standard errors is undecided (WIDE) and a single repetition is undecided
(TOO_FEW), never a pass.

The "noise" of a group is a fixed vector with mean exactly 0 and std exactly 1, so each mean is exact."""

import pandas as pd
import pytest

from dpbench import verdicts as V
from tests.exact_noise import exact_noise
from dpbench.studies import wu2016


_z = exact_noise


def fig3_2(spec, dataset="covertype", tests=(2,), sd=0.001, n=10):
    """spec: {method: {ε: mean test accuracy}} for every test."""
    rows = []
    for i, (m, curve) in enumerate(spec.items()):
        for t in tests:
            for j, (x, mean) in enumerate(curve.items()):
                rows += [{"dataset": dataset, "test": t, "method": m, "x": float(x), "rep": r,
                          "metric": "test_accuracy", "value": float(mean + sd * v)}
                         for r, v in enumerate(_z(n, 1000 * i + 10 * j + t))]
    return {"fig3_2": pd.DataFrame(rows)}


def _check(frames, claim):
    c = wu2016.anchor_checks(frames).set_index("claim")
    return c.loc[claim]


def _status(frames, claim):
    r = _check(frames, claim)
    return r["verdict"], r["reason"]


def _assert_too_few(frames, claim):
    v, reason = _status(frames, claim)
    assert v == V.UNDECIDED and reason.startswith(V.TOO_FEW), (v, reason)


# ---------------------------------------------------------------------------------------------------------
# A1: ours above SCS13 / BST14 at ≥ 75 % of the points


def test_a1_ours_above_the_baseline():
    r = _check(fig3_2({"bolt_on": {0.1: 0.7, 1.0: 0.8}, "scs13": {0.1: 0.2, 1.0: 0.4}}), "A1-scs13")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(3.5) and "2 standard errors" in r["statement"]
    assert _status(fig3_2({"bolt_on": {0.1: 0.2, 1.0: 0.4}, "scs13": {0.1: 0.7, 1.0: 0.8}}), "A1-scs13")[0] == V.FAILS
    tie = fig3_2({"bolt_on": {0.1: 0.701, 1.0: 0.801}, "scs13": {0.1: 0.7, 1.0: 0.8}}, sd=0.05)
    assert _status(tie, "A1-scs13")[0] == V.UNDECIDED and _status(tie, "A1-scs13")[1].startswith(V.WIDE)
    _assert_too_few(fig3_2({"bolt_on": {0.1: 0.7, 1.0: 0.8}, "scs13": {0.1: 0.2, 1.0: 0.4}}, n=1), "A1-scs13")


# ---------------------------------------------------------------------------------------------------------
# A2-bst14: Protein, ours above BST14 and within 0.05 at every (test, ε)


def protein(ours, bst, **kw):
    return fig3_2({"bolt_on": ours, "bst14": bst}, dataset="protein", tests=(2, 4), **kw)


OURS = {0.01: 0.72, 0.1: 0.75}


def test_a2_bst14_close_and_better():
    r = _check(protein(OURS, {0.01: 0.70, 0.1: 0.74}), "A2-bst14")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(0.015)
    v, reason = _status(protein(OURS, {0.01: 0.73, 0.1: 0.76}), "A2-bst14")            # BST14 better
    assert v == V.FAILS and reason == "ours above BST14 at every (test, ε)"
    v, reason = _status(protein({0.01: 0.9, 0.1: 0.95}, {0.01: 0.70, 0.1: 0.74}), "A2-bst14")   # far apart
    assert v == V.FAILS and reason == "|ours − BST14| below 0.05 at every (test, ε)"
    v, reason = _status(protein(OURS, {0.01: 0.719, 0.1: 0.749}, sd=0.05), "A2-bst14")    # a tie: was a pass
    assert v == V.UNDECIDED and reason.startswith(V.WIDE) and "ours above BST14" in reason
    _assert_too_few(protein(OURS, {0.01: 0.70, 0.1: 0.74}, n=1), "A2-bst14")


# ---------------------------------------------------------------------------------------------------------
# A2-scs13: Protein, SCS13 at the largest ε above the smallest by > 0.02 in every test


def scs13(curve, **kw):
    return fig3_2({"scs13": curve}, dataset="protein", tests=(1, 2), **kw)


def test_a2_scs13_decreases_with_smaller_epsilon():
    r = _check(scs13({0.01: 0.5, 0.1: 0.6, 0.4: 0.7}), "A2-scs13")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(0.2)
    assert _status(scs13({0.01: 0.7, 0.1: 0.6, 0.4: 0.5}), "A2-scs13")[0] == V.FAILS
    v, reason = _status(scs13({0.01: 0.5, 0.1: 0.51, 0.4: 0.52}), "A2-scs13")             # a drop of exactly 0.02
    assert v == V.UNDECIDED and reason.startswith(V.WIDE) and "above 0.02" in reason
    _assert_too_few(scs13({0.01: 0.5, 0.1: 0.6, 0.4: 0.7}, n=1), "A2-scs13")


# ---------------------------------------------------------------------------------------------------------
# A3: Covertype, ours within 0.01 of noiseless from ε ≤ 0.1, BST14 no earlier


EPS = (0.01, 0.05, 0.1, 0.4)
NOISELESS = dict.fromkeys(EPS, 0.76)


def covertype(ours, bst, **kw):
    return fig3_2({"noiseless": NOISELESS, "bolt_on": dict(zip(EPS, ours)), "bst14": dict(zip(EPS, bst))}, **kw)


def test_a3_reaching_noiseless():
    r = _check(covertype((0.70, 0.755, 0.758, 0.76), (0.5, 0.6, 0.7, 0.755)), "A3")
    assert r["verdict"] == V.HOLDS and r["value"] == 0.05
    assert "Ours (bolt-on) test 2: ε ≥ 0.05" in r["measured"] and "BST14 test 2: ε ≥ 0.4" in r["measured"]
    v, reason = _status(covertype((0.5, 0.6, 0.7, 0.755), (0.70, 0.755, 0.758, 0.76)), "A3")   # swapped
    assert v == V.FAILS and "ours within 0.01 from ε ≤ 0.1" in reason and "BST14" in reason
    # ours exactly 0.01 below noiseless at ε = 0.1: from ε = 0.05 or from ε = 0.4, undecided
    r = _check(covertype((0.70, 0.755, 0.75, 0.76), (0.5, 0.6, 0.7, 0.755)), "A3")
    assert r["verdict"] == V.UNDECIDED and r["reason"].startswith(V.WIDE)
    assert "ε ≥ 0.05 to 0.4 (undecided between)" in r["measured"]
    _assert_too_few(covertype((0.70, 0.755, 0.758, 0.76), (0.5, 0.6, 0.7, 0.755), n=1), "A3")


# ---------------------------------------------------------------------------------------------------------
# A4: some private point above noiseless


def test_a4_some_point_above_noiseless():
    r = _check(fig3_2({"noiseless": {0.1: 0.76, 1.0: 0.76}, "bolt_on": {0.1: 0.7, 1.0: 0.79}}), "A4")
    assert r["verdict"] == V.HOLDS and r["value"] == 1
    assert _status(fig3_2({"noiseless": {0.1: 0.76, 1.0: 0.76}, "bolt_on": {0.1: 0.7, 1.0: 0.73}}), "A4")[0] == V.FAILS
    tie = fig3_2({"noiseless": {0.1: 0.76, 1.0: 0.76}, "bolt_on": {0.1: 0.5, 1.0: 0.761}}, sd=0.05)
    assert _status(tie, "A4") == (V.UNDECIDED, V.WIDE)
    _assert_too_few(fig3_2({"noiseless": {0.1: 0.76, 1.0: 0.76}, "bolt_on": {0.1: 0.7, 1.0: 0.79}}, n=1), "A4")


# ---------------------------------------------------------------------------------------------------------
# A5 / A6 / A7 (fig3_3): passes and batch sizes of ours


def fig3_3(panel, curves, sd=0.005, n=10):
    """curves: {curve label: {ε: mean}} of one panel."""
    rows = []
    for i, (c, curve) in enumerate(curves.items()):
        for j, (x, mean) in enumerate(curve.items()):
            rows += [{"series": panel, "curve": c, "method": "bolt_on", "x": float(x), "rep": r,
                      "metric": "test_accuracy", "value": float(mean + sd * v)} for r, v in enumerate(_z(n, 10 * i + j))]
    return {"fig3_3": pd.DataFrame(rows)}


def test_a5_more_passes_hurt_with_b_1():
    r = _check(fig3_3("panel_a", {"k = 1": {1.0: 0.6, 4.0: 0.71}, "k = 20": {1.0: 0.4, 4.0: 0.45}}), "A5")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(0.26)
    assert _status(fig3_3("panel_a", {"k = 1": {4.0: 0.45}, "k = 20": {4.0: 0.71}}), "A5")[0] == V.FAILS
    assert _status(fig3_3("panel_a", {"k = 1": {4.0: 0.451}, "k = 20": {4.0: 0.45}}, sd=0.05), "A5") == \
        (V.UNDECIDED, V.WIDE)
    _assert_too_few(fig3_3("panel_a", {"k = 1": {4.0: 0.71}, "k = 20": {4.0: 0.45}}, n=1), "A5")


def test_a6_more_passes_help_with_b_50():
    good = {"k = 1": {0.1: 0.5, 1.0: 0.6, 4.0: 0.7}, "k = 20": {0.1: 0.6, 1.0: 0.7, 4.0: 0.8}}
    r = _check(fig3_3("panel_b", good), "A6")
    assert r["verdict"] == V.HOLDS and r["value"] == 1.0
    assert _status(fig3_3("panel_b", {"k = 1": good["k = 20"], "k = 20": good["k = 1"]}), "A6")[0] == V.FAILS
    tie = {"k = 1": {0.1: 0.5, 1.0: 0.6, 4.0: 0.7}, "k = 20": {0.1: 0.6, 1.0: 0.601, 4.0: 0.701}}
    v, reason = _status(fig3_3("panel_b", tie, sd=0.02), "A6")
    assert v == V.UNDECIDED and reason.startswith(V.WIDE)
    _assert_too_few(fig3_3("panel_b", good, n=1), "A6")


def test_a7_larger_batch_helps_with_20_passes():
    r = _check(fig3_3("panel_c", {"b = 1": {4.0: 0.45}, "b = 10": {4.0: 0.71}}), "A7")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(0.26)
    assert _status(fig3_3("panel_c", {"b = 1": {4.0: 0.71}, "b = 10": {4.0: 0.45}}), "A7")[0] == V.FAILS
    assert _status(fig3_3("panel_c", {"b = 1": {4.0: 0.45}, "b = 10": {4.0: 0.451}}, sd=0.05), "A7") == \
        (V.UNDECIDED, V.WIDE)
    _assert_too_few(fig3_3("panel_c", {"b = 1": {4.0: 0.45}, "b = 10": {4.0: 0.71}}, n=1), "A7")


# ---------------------------------------------------------------------------------------------------------
# A8 (fig3_4): runtime ratios to noiseless


def fig3_4(ours=1.02, slow_small=6.0, slow_large=1.1, sd=0.01, n=4):
    pts = {("epochs", 1.0): 2.5, ("epochs", 20.0): 2.5, ("batch", 1.0): slow_small, ("batch", 500.0): slow_large}
    rows = []
    for i, (m, f) in enumerate((("noiseless", lambda v: 1.0), ("bolt_on", lambda v: ours),
                                ("scs13", lambda v: v), ("bst14", lambda v: v - 0.1))):
        for j, ((sweep, x), v) in enumerate(pts.items()):
            rows += [{"dataset": "mnist", "sweep": sweep, "x": x, "method": m, "rep": r, "metric": "runtime_ratio",
                      "value": float(f(v) + (0.0 if m == "noiseless" else sd * z))}
                     for r, z in enumerate(_z(n, 10 * i + j))]
    return {"fig3_4": pd.DataFrame(rows)}


def test_a8_runtime_ratios():
    r = _check(fig3_4(), "A8")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(6.0)
    v, reason = _status(fig3_4(ours=1.5), "A8")
    assert v == V.FAILS and reason == "ours/noiseless mean below 1.10"
    v, reason = _status(fig3_4(slow_large=7.0), "A8")
    assert v == V.FAILS and reason.startswith("largest SCS13/BST14 ratio smaller")
    v, reason = _status(fig3_4(ours=1.10, sd=0.05), "A8")                              # at the threshold
    assert v == V.UNDECIDED and reason == f"{V.WIDE} (ours/noiseless mean below 1.10)"
    _assert_too_few(fig3_4(n=1), "A8")
