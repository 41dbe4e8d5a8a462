"""vdm2020 anchor checks on synthetic result frames: every difference of means and every threshold is decided
beyond 2 standard errors over the repetitions (dpbench.verdicts) — a clear effect holds, the reversed effect does
not hold, an effect within 2 standard errors (a tie included) is undecided (WIDE) and a single repetition is
undecided (TOO_FEW), never a pass.

The "noise" of a cell is a fixed vector with mean exactly 0 and std exactly 1, so each mean is exact."""

import pandas as pd
import pytest

from dpbench import verdicts as V
from tests.exact_noise import exact_noise
from dpbench.studies import vdm2020


_z = exact_noise


def frame(fig, table, sd=0.005, n=6, curve="", n_train=54000):
    """table: {series: {x: mean accuracy}}."""
    rows = []
    for i, (s, values) in enumerate(table.items()):
        for j, (x, v) in enumerate(values.items()):
            rows += [{"figure": fig, "series": s, "x": float(x), "rep": r, "value": float(v + sd * z),
                      "n_train": n_train, "n_classes": int(x) if fig == "fig5b" else 10, "curve": curve,
                      "runtime_s": 1.0} for r, z in enumerate(_z(n, 100 * i + j + 7 * len(curve)))]
    return pd.DataFrame(rows)


def check(frames, claim):
    return vdm2020.anchor_checks(frames).set_index("claim").loc[claim]


def status(frames, claim):
    r = check(frames, claim)
    return r["verdict"], r["reason"]


def assert_too_few(frames, claim):
    v, reason = status(frames, claim)
    assert v == V.UNDECIDED and reason.startswith(V.TOO_FEW), (claim, v, reason)


# ---------------------------------------------------------------------------------------------------------
# claims 3b and 4 (fig2a, fig2b)


LP_FLAT = dict.fromkeys((1, 10, 40, 100, 200, 500), 0.6)
SA_FALLING = {1: 0.9, 10: 0.8, 40: 0.7, 100: 0.55, 200: 0.5, 500: 0.4}


def fig2a(sa, lp=LP_FLAT, **kw):
    return {"fig2a": frame("fig2a", {"loss_perturbation": lp, "subsample_aggregate": sa}, **kw)}


def test_claim3b_crossover_decided_on_both_sides():
    r = check(fig2a(SA_FALLING), "claim3b")
    assert r["verdict"] == V.HOLDS and 40 < r["value"] < 100 and "2 standard errors" in r["statement"]
    v, reason = status(fig2a({x: 0.65 + 0.5 * (x == 1) for x in LP_FLAT}), "claim3b")   # subsagg better everywhere
    assert v == V.FAILS and reason == "loss perturbation better at every B ≥ 160"
    v, reason = status(fig2a({**SA_FALLING, 1: 0.5}), "claim3b")                          # loss perturbation at B = 1
    assert v == V.FAILS and reason == "subsagg better at every B ≤ 40"
    v, reason = status(fig2a({**SA_FALLING, 200: 0.601}, sd=0.02), "claim3b")
    assert v == V.UNDECIDED and reason.startswith(V.WIDE)
    assert_too_few(fig2a({1: 0.9, 100: 0.5}, lp={1: 0.6, 100: 0.6}), "claim3b")           # grid short of B ≥ 160
    assert_too_few(fig2a(SA_FALLING, n=1), "claim3b")


def test_claim4_at_least_as_well_is_decided_beyond_two_standard_errors():
    def f(sa, **kw):
        return {"fig2b": frame("fig2b", {"loss_perturbation": {1: 0.9, 100: 0.9}, "dpsgd": {1: 0.88, 100: 0.9},
                                         "subsample_aggregate": sa}, **kw)}
    r = check(f({1: 0.8, 100: 0.5}), "claim4")
    assert r["verdict"] == V.HOLDS and r["value"] == 1.0
    assert status(f({1: 0.95, 100: 0.5}), "claim4")[0] == V.FAILS
    assert status(f({1: 0.879, 100: 0.5}, sd=0.05), "claim4") == (V.UNDECIDED, V.WIDE)   # a tie: was a pass
    assert_too_few(f({1: 0.8, 100: 0.5}, n=1), "claim4")


# ---------------------------------------------------------------------------------------------------------
# claims 5a, 5b, 5c (fig3): accuracy against δ; δ ≤ 1/N = 1.9e-5 is {1e-8, 1e-5}


FIG3 = {"loss_perturbation": {1e-8: 0.80, 1e-5: 0.82, 1e-2: 0.84},
        "dpsgd": {1e-8: 0.83, 1e-5: 0.85, 1e-2: 0.86},
        "model_sensitivity": {1e-8: 0.70, 1e-5: 0.74, 1e-2: 0.78},
        "subsample_aggregate": {1e-8: 0.60, 1e-5: 0.70, 1e-2: 0.80},
        "prediction_sensitivity": {1e-8: 0.10, 1e-5: 0.11, 1e-2: 0.40}}


def fig3(sd=0.005, n=6, **changes):
    return {"fig3": frame("fig3", {s: {**v, **changes.get(s, {})} for s, v in FIG3.items()}, sd=sd, n=n)}


def test_claim5a_subsagg_gains_the_most():
    r = check(fig3(), "claim5a")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(0.2)
    assert status(fig3(subsample_aggregate=dict.fromkeys(FIG3["subsample_aggregate"], 0.7)), "claim5a")[0] == V.FAILS
    tie = {"subsample_aggregate": {1e-8: 0.70, 1e-5: 0.75, 1e-2: 0.781}}                 # gain 0.081 vs 0.08
    assert status(fig3(sd=0.05, **tie), "claim5a") == (V.UNDECIDED, V.WIDE)
    assert_too_few(fig3(n=1), "claim5a")


def test_claim5b_prediction_sensitivity_needs_a_large_delta():
    assert check(fig3(), "claim5b")["verdict"] == V.HOLDS
    assert status(fig3(prediction_sensitivity={1e-8: 0.8, 1e-5: 0.8}), "claim5b")[0] == V.FAILS
    # above chance + 0.05 beyond 2 SE, and exactly half the best other method: undecided
    assert status(fig3(prediction_sensitivity={1e-8: 0.415, 1e-5: 0.425}), "claim5b") == (V.UNDECIDED, V.WIDE)
    assert_too_few(fig3(n=1), "claim5b")


def test_claim5c_small_loss_at_small_delta():
    r = check(fig3(), "claim5c")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(0.08)                  # the largest loss
    assert status(fig3(dpsgd={1e-8: 0.3}), "claim5c")[0] == V.FAILS
    assert status(fig3(model_sensitivity={1e-8: 0.68}), "claim5c") == (V.UNDECIDED, V.WIDE)   # a loss of 0.1
    assert_too_few(fig3(n=1), "claim5c")


# ---------------------------------------------------------------------------------------------------------
# claim 7 (fig5a): loss perturbation and model sensitivity more competitive at small D


def fig5a(sa, lp=None, ms=None, **kw):
    return {"fig5a": frame("fig5a", {"loss_perturbation": lp or {10: 0.7, 784: 0.5},
                                     "model_sensitivity": ms or {10: 0.65, 784: 0.3}, "subsample_aggregate": sa,
                                     "prediction_sensitivity": {10: 0.2, 784: 0.2}}, **kw)}


def test_claim7_competitive_at_small_dimension():
    r = check(fig5a({10: 0.6, 784: 0.85}), "claim7")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx(0.45)                  # the smaller change
    assert status(fig5a({10: 0.9, 784: 0.4}), "claim7")[0] == V.FAILS
    flat = fig5a({10: 0.6, 784: 0.4}, lp={10: 0.7, 784: 0.5}, ms={10: 0.65, 784: 0.45})   # the same advantage
    assert status(flat, "claim7") == (V.UNDECIDED, V.WIDE)
    assert_too_few(fig5a({10: 0.6, 784: 0.85}, n=1), "claim7")


# ---------------------------------------------------------------------------------------------------------
# claims 8a and 8b (fig5b): accuracy against the number of classes C


DEC = {c: 1.0 - 0.05 * c for c in (2, 5, 10)}


def fig5b(table, **kw):
    return {"fig5b": frame("fig5b", table, **kw)}


def falling(**changes):
    t = {"loss_perturbation": {c: v - 0.05 for c, v in DEC.items()}, "subsample_aggregate": DEC,
         "model_sensitivity": {c: v - 0.1 for c, v in DEC.items()},
         "non_private": {c: v + 0.05 for c, v in DEC.items()}}
    return {**t, **changes}


def test_claim8a_every_method_falls_with_c():
    assert check(fig5b(falling()), "claim8a")["verdict"] == V.HOLDS
    v, _ = status(fig5b(falling(model_sensitivity={2: 0.3, 5: 0.5, 10: 0.7})), "claim8a")
    assert v == V.FAILS
    almost_flat = falling(model_sensitivity={2: 0.5, 5: 0.4995, 10: 0.499})              # drop 0.001, sd 0.05
    assert status(fig5b(almost_flat, sd=0.05), "claim8a") == (V.UNDECIDED, V.WIDE)
    assert_too_few(fig5b(falling(), n=1), "claim8a")


def test_claim8b_ranking_decided_pair_by_pair():
    r = check(fig5b(falling()), "claim8b")
    assert r["verdict"] == V.HOLDS and r["value"] == 1.0
    # a > b > c overall, but the per-C rankings agree with it only at C = 2: concordance 1, 1/3, 1/3, −1/3
    mixed = {"a": {2: 0.9, 3: 0.6, 4: 0.9, 5: 0.6}, "b": {2: 0.6, 3: 0.9, 4: 0.3, 5: 0.3},
             "c": {2: 0.3, 3: 0.3, 4: 0.6, 5: 0.85}}
    f = fig5b(mixed, sd=0.001)
    f["fig5b"]["series"] = f["fig5b"]["series"].map({"a": "loss_perturbation", "b": "model_sensitivity",
                                                     "c": "subsample_aggregate"})
    assert status(f, "claim8b")[0] == V.FAILS
    # loss perturbation and model sensitivity tied at every C: that pair can go either way (concordance 1/3 … 1)
    tied = falling(model_sensitivity={c: v - 0.05 + 0.001 for c, v in DEC.items()})
    assert status(fig5b(tied, sd=0.05), "claim8b") == (V.UNDECIDED, V.WIDE)
    assert_too_few(fig5b(falling(), n=1), "claim8b")


# ---------------------------------------------------------------------------------------------------------
# claim 9b (fig6a): the best λ differs between the ε curves


LAM = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1)


def fig6a(c1, c10, **kw):
    return {"fig6a": pd.concat([frame("fig6a", {"loss_perturbation": dict(zip(LAM, c1))}, curve="ε = 1", **kw),
                                frame("fig6a", {"loss_perturbation": dict(zip(LAM, c10))}, curve="ε = 10", **kw)])}


def test_claim9b_optimal_lambda_depends_on_epsilon():
    r = check(fig6a([0.5, 0.7, 0.8, 0.6, 0.3], [0.6, 0.8, 0.7, 0.6, 0.3]), "claim9b")
    assert r["verdict"] == V.HOLDS and r["value"] == 2.0
    assert "ε = 1: 0.001" in r["measured"] and "ε = 10: 0.0001" in r["measured"]
    assert status(fig6a([0.5, 0.7, 0.8, 0.6, 0.3], [0.4, 0.6, 0.8, 0.5, 0.3]), "claim9b")[0] == V.FAILS
    near = fig6a([0.5, 0.7, 0.8, 0.6, 0.3], [0.6, 0.8, 0.799, 0.6, 0.3], sd=0.05)          # best λ of ε = 10 unclear
    assert status(near, "claim9b") == (V.UNDECIDED, V.WIDE)
    assert_too_few(fig6a([0.5, 0.7, 0.8, 0.6, 0.3], [0.6, 0.8, 0.7, 0.6, 0.3], n=1), "claim9b")


# ---------------------------------------------------------------------------------------------------------
# claims 10a and 10c (fig7b, fig7a)


def fig7b(sa, **kw):
    return {"fig7b": frame("fig7b", {"dpsgd_mlp": dict.fromkeys(sa, 0.6), "subsample_aggregate_mlp": sa}, **kw)}


def test_claim10a_dpsgd_better_from_b_20():
    r = check(fig7b({1: 0.8, 2: 0.7, 10: 0.5, 100: 0.2}), "claim10a")
    assert r["verdict"] == V.HOLDS and 2 < r["value"] < 10
    assert status(fig7b({1: 0.8, 2: 0.7, 10: 0.5, 100: 0.8}), "claim10a")[0] == V.FAILS
    assert status(fig7b({1: 0.8, 2: 0.7, 10: 0.5, 100: 0.601}, sd=0.05), "claim10a") == (V.UNDECIDED, V.WIDE)
    assert_too_few(fig7b({1: 0.8, 2: 0.7, 10: 0.5}), "claim10a")                         # the grid stops at B = 10
    assert_too_few(fig7b({1: 0.8, 2: 0.7, 10: 0.5, 100: 0.2}, n=1), "claim10a")


def fig7a(sa5, **kw):
    return {"fig7a": frame("fig7a", {"dpsgd_mlp": {1: 0.4, 5: 0.5}, "subsample_aggregate_mlp": {1: 0.2, 5: sa5},
                                     "non_private_mlp": {1: 0.866, 5: 0.866}}, **kw)}


def test_claim10c_private_models_30_percent_below_non_private():
    r = check(fig7a(0.55), "claim10c")
    assert r["verdict"] == V.HOLDS and r["value"] == pytest.approx((0.866 - 0.55) / 0.866)
    assert status(fig7a(0.8), "claim10c")[0] == V.FAILS
    assert status(fig7a(0.7 * 0.866), "claim10c") == (V.UNDECIDED, V.WIDE)                # exactly 30 % below
    assert_too_few(fig7a(0.55, n=1), "claim10c")


# ---------------------------------------------------------------------------------------------------------
# the checks that already compared with standard errors: a single repetition is undecided, never a pass


def test_single_repetition_is_undecided_in_every_standard_error_check():
    one = dict(n=1)
    frames = {
        "fig1a": frame("fig1a", {"loss_perturbation": {0.1: 0.5, 1: 0.6, 10: 0.8},
                                 "subsample_aggregate": {0.1: 0.3, 1: 0.7, 10: 0.9},
                                 "prediction_sensitivity": {0.1: 0.1, 1: 0.1, 10: 0.2}}, **one),
        "fig1b": frame("fig1b", {"dpsgd": {0.5: 0.9, 1: 0.9}, "loss_perturbation": {0.5: 0.8, 1: 0.8}}, **one),
        "fig2a": fig2a(SA_FALLING, **one)["fig2a"],
        "fig4": frame("fig4", {"subsample_aggregate": {1e3: 0.5, 1e6: 0.8}, "loss_perturbation": {1e3: 0.2, 1e6: 0.9},
                               "model_sensitivity": {1e3: 0.15, 1e6: 0.88}}, **one),
        "fig6a": fig6a([0.5, 0.7, 0.8, 0.6, 0.3], [0.6, 0.8, 0.7, 0.6, 0.3], **one)["fig6a"],
        "fig6b": frame("fig6b", {"subsample_aggregate": {8: 0.5, 64: 0.8, 256: 0.85, 2048: 0.6}}, **one),
        "fig7a": frame("fig7a", {"dpsgd_mlp": {1: 0.8, 5: 0.6}, "subsample_aggregate_mlp": {1: 0.5, 5: 0.85},
                                 "non_private_mlp": {1: 0.9, 5: 0.9}}, **one),
    }
    c = vdm2020.anchor_checks(frames).set_index("claim")
    for claim in ("claim1a", "claim1b", "claim1c", "claim2", "claim3a", "claim6a", "claim6b", "claim9a", "claim9c",
                  "claim10b"):
        assert c.loc[claim, "verdict"] == V.UNDECIDED and c.loc[claim, "reason"].startswith(V.TOO_FEW), claim
    # the same frames with two repetitions decide
    two = {k: pd.concat([f, f.assign(rep=1, value=f["value"] + 0.001)]) for k, f in frames.items()}
    c = vdm2020.anchor_checks(two).set_index("claim")
    assert c.loc[["claim1b", "claim2", "claim3a", "claim6a", "claim6b", "claim9c", "claim10b"], "verdict"].eq(
        V.HOLDS).all()
