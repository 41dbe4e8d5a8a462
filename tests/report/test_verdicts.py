"""Three-valued anchor verdicts: never a vacuous pass, NaN is undecided, differences beyond 2 standard errors,
reduced grids marked (dpbench.verdicts, dpbench.report)."""

import numpy as np
import pandas as pd
import pytest

from dpbench import verdicts as V
from dpbench.report import anchors_html, mark_reduced, normalise_checks


def test_empty_set_is_undecided_never_a_pass():
    v = V.all_of([])
    assert v.status == V.UNDECIDED and v.reason.startswith(V.EMPTY)
    assert V.any_of([]).status == V.UNDECIDED
    assert V.fraction([], 0.5).status == V.UNDECIDED and V.fraction([], 0.5).reason == V.EMPTY
    assert V.all_of([True, True]).status == V.HOLDS
    assert V.all_of([True, False]).status == V.FAILS


def test_nan_is_undecided():
    r = V.row("s", "c", "f", "st", "m", float("nan"), True)  # a bool computed from a NaN measurement
    assert r["verdict"] == V.UNDECIDED and r["reason"] == V.NAN and r["passed"] is False
    assert V.verdict_of(None).status == V.UNDECIDED
    assert V.verdict_of(float("nan"), 1.0).status == V.UNDECIDED
    assert V.greater(float("nan"), 0.0, 1.0, 0.0).reason == V.NAN
    # an explicit verdict says why a NaN is decisive
    assert V.row("s", "c", "f", "st", "m", float("nan"), V.fails("no crossover"))["verdict"] == V.FAILS
    assert V.row("s", "c", "f", "st", "m", 0.3, True)["verdict"] == V.HOLDS


def test_differences_decided_beyond_two_standard_errors():
    assert V.compare(0.1, 0.04) == 1 and V.compare(0.1, 0.06) == 0 and V.compare(-0.1, 0.04) == -1
    assert V.greater(0.80, 0.01, 0.70, 0.01).status == V.HOLDS           # 0.10 > 2·0.014
    w = V.greater(0.80, 0.05, 0.75, 0.05)                                # 0.05 < 2·0.071
    assert w.status == V.UNDECIDED and w.reason == V.WIDE
    assert V.greater(0.70, 0.01, 0.80, 0.01).status == V.FAILS
    m, se = pd.Series({"a": 0.80, "b": 0.79, "c": 0.5}), pd.Series({"a": 0.01, "b": 0.01, "c": 0.01})
    assert V.best_of(m, se) is None                                      # a and b tied within 2 s.e.
    assert V.is_best("a", m, se).status == V.UNDECIDED
    assert V.is_best("c", m, se).status == V.FAILS
    assert V.best_of(m.drop("b"), se) == "a" and V.is_best("a", m.drop("b"), se).status == V.HOLDS


def test_fraction_with_undecided_points_and_too_few_points():
    assert V.fraction([True, True, None], 0.6).status == V.HOLDS          # 2/3 hold whatever the third is
    assert V.fraction([True, None, None], 0.6).status == V.UNDECIDED      # 1/3 .. 3/3
    assert V.fraction([False, False, None], 0.6).status == V.FAILS        # at most 1/3
    v = V.fraction([True], 0.5, min_points=2)
    assert v.status == V.UNDECIDED and v.reason.startswith(V.TOO_FEW)


def test_verdict_is_not_a_bool():
    with pytest.raises(TypeError):
        bool(V.holds())
    with pytest.raises(ValueError):
        V.Verdict(V.UNDECIDED)  # an undecided verdict needs its reason


def test_normalise_old_rows_and_html():
    old = pd.DataFrame([{"study": "s", "claim": "a", "figure": "f1", "statement": "x", "measured": "m", "value": 1.0,
                         "passed": True},
                        {"study": "s", "claim": "b", "figure": "f1", "statement": "x", "measured": "m",
                         "value": np.nan, "passed": True}])
    c = normalise_checks(old)
    assert list(c["verdict"]) == [V.HOLDS, V.UNDECIDED] and list(c["passed"]) == [True, False]
    page = anchors_html(c.assign(dataset_variant="real"))
    assert "undecided: NaN measurement" in page and "1 hold, 0 do not hold, 1 undecided" in page
    assert V.REDUCED_LABEL not in page


def _cfg(eps, reps=3):
    return {"studies": {"s": {"repetitions": reps, "figures": {"f1": {"epsilons": eps}, "f2": {"epsilons": [1.0]}}}}}


def test_reduced_grid_decided_from_the_config_run_vs_the_full_config():
    full = _cfg([0.1, 1.0, 10.0])
    assert not V.reduced_grid(_cfg([0.1, 1.0, 10.0]), "s", "f1", full=full)
    assert V.reduced_grid(_cfg([1.0]), "s", "f1", full=full)              # a shorter grid for this figure
    assert not V.reduced_grid(_cfg([1.0]), "s", "f2", full=full)          # the other figure is untouched
    assert V.reduced_grid(_cfg([1.0]), "s", full=full)                    # the study as a whole
    assert V.reduced_grid(_cfg([0.1, 1.0, 10.0], reps=1), "s", "f2", full=full)  # fewer repetitions: every figure
    assert not V.reduced_grid(_cfg([1.0]), "unknown", "f1", full=full)


def test_reduced_grid_rows_and_page_are_marked(monkeypatch):
    full = _cfg([0.1, 1.0, 10.0])
    monkeypatch.setattr(V, "full_config", lambda: full)
    rows = [V.row("s", "a", "f1", "x", "m", 1.0, True), V.row("s", "b", "f2", "x", "m", 1.0, False),
            V.row("s", "c", "all figures", "x", "m", 1.0, True)]
    c = mark_reduced(pd.DataFrame(rows), _cfg([1.0]), "s")
    assert list(c["reduced_grid"]) == [True, False, True]  # a row of no single figure: by the whole study
    page = anchors_html(c.assign(dataset_variant="real"))
    assert page.count(V.REDUCED_LABEL) == 3  # two rows + the page's summary line
    assert "Reduced grid: indicative only" in page
    c = mark_reduced(pd.DataFrame(rows), _cfg([0.1, 1.0, 10.0]), "s")
    assert not c["reduced_grid"].any() and V.REDUCED_LABEL not in anchors_html(c.assign(dataset_variant="real"))


def test_repository_smoke_config_is_reduced():
    from dpbench.studies import load_config

    from dpbench.config import DEFAULT_CONFIG_PATH
    smoke = load_config(DEFAULT_CONFIG_PATH, DEFAULT_CONFIG_PATH.parent / "config" / "smoke.yaml")
    assert V.reduced_grid(smoke, "vdm2020", "fig1a")
    assert not V.reduced_grid(load_config(), "vdm2020", "fig1a")


def test_the_default_config_as_a_job_sees_it_is_not_reduced():
    """Snakemake hands a job its config through JSON, which turns the float keys of the audit's per-ε trials
    ({4.0: 500}) into strings: the default grid run that way is still the full grid in every study."""
    import json

    default = V.full_config()     # config.yaml as written: float keys
    assert default["studies"]["audit"]["methods"]["bst14"]["twin_trials"]["noise_x0.001"] == {4.0: 1000}
    as_job = json.loads(json.dumps(default, default=str))
    for study in default["studies"]:
        assert not V.reduced_grid(as_job, study), study
    assert not V.reduced_grid(as_job, "audit", "fig_audit")


# -- the cases reported on the smoke profile, in the studies themselves ------------------------------------------


def _vdm_frame(fig, table, reps=4, spread=0.001):
    rows = [{"figure": fig, "series": s, "x": float(x), "rep": r, "value": v + spread * (r - 1.5), "n_train": 8000,
             "n_classes": 10, "curve": "", "runtime_s": 1.0}
            for s, vals in table.items() for x, v in vals.items() for r in range(reps)]
    return pd.DataFrame(rows)


def test_vdm2020_claim10b_empty_set_is_undecided_not_a_pass():
    from dpbench.studies import vdm2020

    never = _vdm_frame("fig7a", {"dpsgd_mlp": {1.0: 0.8, 5.0: 0.85}, "subsample_aggregate_mlp": {1.0: 0.5, 5.0: 0.6},
                                 "non_private_mlp": {1.0: 0.9, 5.0: 0.9}})
    c = vdm2020.anchor_checks({"fig7a": never}).set_index("claim")
    assert c.loc["claim10b", "verdict"] == V.UNDECIDED and c.loc["claim10b", "reason"].startswith(V.EMPTY)
    upward = _vdm_frame("fig7a", {"dpsgd_mlp": {1.0: 0.8, 5.0: 0.6}, "subsample_aggregate_mlp": {1.0: 0.5, 5.0: 0.85},
                                  "non_private_mlp": {1.0: 0.9, 5.0: 0.9}})
    assert vdm2020.anchor_checks({"fig7a": upward}).set_index("claim").loc["claim10b", "verdict"] == V.HOLDS
    downward = _vdm_frame("fig7a", {"dpsgd_mlp": {1.0: 0.5, 5.0: 0.85}, "subsample_aggregate_mlp": {1.0: 0.8, 5.0: 0.6},
                                    "non_private_mlp": {1.0: 0.9, 5.0: 0.9}})
    assert vdm2020.anchor_checks({"fig7a": downward}).set_index("claim").loc["claim10b", "verdict"] == V.FAILS


def test_vdm2020_best_method_within_two_standard_errors_is_undecided():
    from dpbench.studies import vdm2020

    # subsagg ahead by 0.005 with repetitions spread ±0.05: not a decided "best"
    tied = _vdm_frame("fig1b", {"dpsgd": {0.2: 0.800, 0.5: 0.850}, "subsample_aggregate": {0.2: 0.805, 0.5: 0.855}},
                      spread=0.05)
    c = vdm2020.anchor_checks({"fig1b": tied}).set_index("claim")
    assert c.loc["claim2", "verdict"] == V.UNDECIDED and c.loc["claim2", "reason"].startswith(V.WIDE)
    clear = _vdm_frame("fig1b", {"dpsgd": {0.2: 0.85, 0.5: 0.9}, "subsample_aggregate": {0.2: 0.7, 0.5: 0.8}})
    assert vdm2020.anchor_checks({"fig1b": clear}).set_index("claim").loc["claim2", "verdict"] == V.HOLDS


def test_wu2016_spearman_nan_is_undecided():
    from dpbench.studies import wu2016

    rows = [{"dataset": "protein", "test": t, "method": "scs13", "x": e, "value": 0.7, "metric": "test_accuracy"}
            for t in (1, 2) for e in (0.1, 1.0, 10.0) for _ in range(2)]  # constant: Spearman ρ undefined
    c = wu2016.anchor_checks({"fig3_2": pd.DataFrame(rows)}).set_index("claim")
    assert c.loc["A2-scs13", "verdict"] == V.UNDECIDED and c.loc["A2-scs13", "reason"].startswith(V.NAN)
    assert "nan" not in c.loc["A2-scs13", "measured"]
    two = [r for r in rows if r["x"] != 1.0]  # two ε per test: no trend to test, not a vacuous pass
    c = wu2016.anchor_checks({"fig3_2": pd.DataFrame(two)}).set_index("claim")
    assert c.loc["A2-scs13", "verdict"] == V.UNDECIDED and c.loc["A2-scs13", "reason"].startswith(V.TOO_FEW)


# -- estimates over repetitions (dpbench.verdicts.Est, estimate, paired, ratio, exceeds, within) ------------------


def test_estimate_and_single_repetition_is_too_few():
    e = V.estimate([1.0, 2.0, 3.0, float("nan")])
    assert e.mean == 2.0 and e.n == 3 and e.se == pytest.approx(1.0 / np.sqrt(3))
    one = V.estimate([5.0])
    assert one.n == 1 and np.isnan(one.se)
    for v in (V.exceeds(one, 0.0), V.within(one, 10.0), V.exceeds(10.0, one)):
        assert v.status == V.UNDECIDED and v.reason.startswith(V.TOO_FEW)
    assert V.exceeds(1.0, 0.5).status == V.HOLDS                      # two exact numbers


def test_exceeds_and_within_decide_beyond_two_standard_errors():
    assert V.exceeds(V.Est(1.0, 0.1, 10), 0.7).status == V.HOLDS       # 0.3 > 2·0.1
    assert V.exceeds(V.Est(1.0, 0.1, 10), 0.9).status == V.UNDECIDED   # 0.1 < 2·0.1
    assert V.exceeds(V.Est(1.0, 0.1, 10), 1.3).status == V.FAILS
    assert V.within(V.Est(0.05, 0.01, 10), 0.1).status == V.HOLDS      # 0.05 + 0.02 < 0.1
    assert V.within(V.Est(-0.05, 0.01, 10), 0.1).status == V.HOLDS
    assert V.within(V.Est(0.09, 0.01, 10), 0.1).status == V.UNDECIDED
    assert V.within(V.Est(-0.2, 0.01, 10), 0.1).status == V.FAILS
    assert V.within(V.Est(0.2, 0.01, 10), 0.1).status == V.FAILS


def test_paired_and_ratio_pair_by_repetition():
    base = pd.Series([1.0, 2.0, 3.0, 4.0], index=[0, 1, 2, 3])
    d = V.paired(base + 0.1, base)                                     # same repetitions: exact difference
    assert d.mean == pytest.approx(0.1) and d.se < 1e-12 and V.exceeds(d, 0.0).status == V.HOLDS
    u = V.paired((base + 0.1).set_axis([4, 5, 6, 7]), base)            # other repetitions: independent
    assert u.mean == pytest.approx(0.1) and u.se > 0.5 and V.exceeds(u, 0.0).status == V.UNDECIDED
    r = V.ratio(1.5 * base, base)
    assert r.mean == pytest.approx(1.5) and r.se < 1e-12
    assert V.ratio((1.5 * base).set_axis([4, 5, 6, 7]), base).se > 0.1


def test_all_parts_names_the_parts():
    v = V.all_parts({"a": V.holds(), "b": V.fails(), "c": V.undecided(V.WIDE)})
    assert v.status == V.FAILS and v.reason == "b"
    v = V.all_parts({"a": V.holds(), "c": V.undecided(V.WIDE)})
    assert v.status == V.UNDECIDED and v.reason == f"{V.WIDE} (c)"
    assert V.parts_text({"a": V.holds()}) == "a: holds"
