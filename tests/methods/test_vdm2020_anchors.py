"""vdm2020 anchor claims 5–10 and the regenerated Table 4.3: checks that pass and checks that fail."""

import numpy as np
import pandas as pd

from dpbench.studies import vdm2020


def frame(fig, x_name, table, reps=4, n_train=54000, curve="", runtime=None):
    rows = []
    for series, values in table.items():
        for x, v in values.items():
            for r in range(reps):
                rows.append({"figure": fig, "series": series, "x": float(x), "rep": r, "x_name": x_name,
                             "value": v + 0.001 * (r - 1.5), "n_train": n_train,
                             "n_classes": int(x) if x_name == "n_classes" else 10, "curve": curve,
                             "runtime_s": (runtime or {}).get(series, {}).get(x, 1.0)})
    return pd.DataFrame(rows)


def checks(frames):
    return vdm2020.anchor_checks(frames).set_index("claim")


def test_claim5_delta():
    good = frame("fig3", "delta", {
        "loss_perturbation": {1e-8: 0.80, 1e-5: 0.82, 1e-2: 0.84, 1e-1: 0.85},
        "dpsgd": {1e-8: 0.83, 1e-5: 0.85, 1e-2: 0.86, 1e-1: 0.86},
        "model_sensitivity": {1e-8: 0.70, 1e-5: 0.74, 1e-2: 0.78, 1e-1: 0.80},
        "subsample_aggregate": {1e-8: 0.60, 1e-5: 0.70, 1e-2: 0.80, 1e-1: 0.85},
        "prediction_sensitivity": {1e-8: 0.10, 1e-5: 0.11, 1e-2: 0.40, 1e-1: 0.70}})
    c = checks({"fig3": good})
    assert c.loc[["claim5a", "claim5b", "claim5c"], "passed"].all()
    assert c.loc["claim5a", "value"] == np.float64(0.8 - 0.6).round(12) or abs(c.loc["claim5a", "value"] - 0.2) < 1e-9
    bad = good.copy()
    bad.loc[bad["series"] == "subsample_aggregate", "value"] = 0.7        # flat: gains nothing
    bad.loc[(bad["series"] == "prediction_sensitivity"), "value"] = 0.8   # fine at every delta
    bad.loc[(bad["series"] == "dpsgd") & (bad["x"] == 1e-8), "value"] = 0.3  # collapses at small delta
    c = checks({"fig3": bad})
    assert not c.loc[["claim5a", "claim5b", "claim5c"], "passed"].any()


def test_claim6_training_set_size():
    good = frame("fig4", "n_train", {
        "subsample_aggregate": {1e3: 0.5, 1e4: 0.7, 1e6: 0.8},
        "loss_perturbation": {1e3: 0.2, 1e4: 0.6, 1e6: 0.9},
        "model_sensitivity": {1e3: 0.15, 1e4: 0.5, 1e6: 0.88},
        "prediction_sensitivity": {1e3: 0.1, 1e4: 0.1, 1e6: 0.3}})
    c = checks({"fig4": good})
    assert c.loc[["claim6a", "claim6b"], "passed"].all()
    bad = good.copy()
    bad.loc[bad["series"] == "subsample_aggregate", "value"] = 0.05   # worst everywhere
    bad.loc[bad["series"] == "prediction_sensitivity", "value"] = 0.95  # best everywhere
    c = checks({"fig4": bad})
    assert not c.loc[["claim6a", "claim6b"], "passed"].any()
    chance = frame("fig4", "n_train", {"subsample_aggregate": {1e3: 0.1, 1e4: 0.11}, "loss_perturbation": {1e3: 0.1, 1e4: 0.1}})
    c = checks({"fig4": chance})
    assert (c.loc[["claim6a", "claim6b"], "verdict"] == "undecided").all()
    assert c.loc["claim6a", "reason"].startswith("too few informative points")


def test_claim7_dimension():
    good = frame("fig5a", "dim", {
        "loss_perturbation": {10: 0.7, 100: 0.6, 784: 0.5}, "model_sensitivity": {10: 0.65, 100: 0.5, 784: 0.3},
        "subsample_aggregate": {10: 0.6, 100: 0.8, 784: 0.85}, "prediction_sensitivity": {10: 0.2, 100: 0.2, 784: 0.2}})
    assert checks({"fig5a": good}).loc["claim7", "passed"]
    bad = good.copy()
    bad.loc[bad["series"] == "subsample_aggregate", "value"] = bad["x"].map({10.0: 0.9, 100.0: 0.6, 784.0: 0.4})
    assert not checks({"fig5a": bad}).loc["claim7", "passed"]


def test_claim8_classes():
    dec = {c: 1.0 - 0.05 * c for c in range(2, 11)}
    good = frame("fig5b", "n_classes", {
        "loss_perturbation": {c: v - 0.05 for c, v in dec.items()}, "subsample_aggregate": dec,
        "model_sensitivity": {c: v - 0.1 for c, v in dec.items()}, "prediction_sensitivity": {c: v - 0.3 for c, v in dec.items()},
        "non_private": {c: v + 0.05 for c, v in dec.items()}})
    c = checks({"fig5b": good})
    assert c.loc[["claim8a", "claim8b"], "passed"].all() and c.loc["claim8b", "value"] == 1.0
    bad = good.copy()
    rising = bad["series"] == "prediction_sensitivity"
    bad.loc[rising, "value"] = 0.2 + 0.06 * bad.loc[rising, "x"]  # rises with C and changes the ranking
    c = checks({"fig5b": bad})
    assert not c.loc["claim8a", "passed"]


def test_claim9_humps():
    lam = [1e-5, 1e-4, 1e-3, 1e-2, 1e-1]
    f6a = pd.concat([frame("fig6a", "lambda", {"loss_perturbation": dict(zip(lam, [0.5, 0.7, 0.8, 0.6, 0.3]))},
                           curve="ε = 1"),
                     frame("fig6a", "lambda", {"loss_perturbation": dict(zip(lam, [0.6, 0.8, 0.7, 0.6, 0.3]))},
                           curve="ε = 10")])
    f6b = frame("fig6b", "n_models", {"subsample_aggregate": {8: 0.5, 64: 0.8, 256: 0.85, 2048: 0.6}})
    c = checks({"fig6a": f6a, "fig6b": f6b})
    assert c.loc[["claim9a", "claim9b", "claim9c"], "passed"].all()
    assert "ε = 1: 0.001" in c.loc["claim9b", "measured"] and "ε = 10: 0.0001" in c.loc["claim9b", "measured"]
    mono = frame("fig6b", "n_models", {"subsample_aggregate": {8: 0.5, 64: 0.8, 256: 0.85, 2048: 0.9}})
    flat = frame("fig6a", "lambda", {"loss_perturbation": dict(zip(lam, [0.8, 0.8, 0.8, 0.6, 0.3]))}, curve="ε = 1")
    c = checks({"fig6a": flat, "fig6b": mono})
    assert not c.loc[["claim9a", "claim9c"], "passed"].any()


def test_claim10_nonconvex():
    f7b = frame("fig7b", "budget", {"dpsgd_mlp": {1: 0.6, 2: 0.6, 10: 0.6, 100: 0.6},
                                    "subsample_aggregate_mlp": {1: 0.8, 2: 0.7, 10: 0.5, 100: 0.2}})
    f7a = frame("fig7a", "epsilon", {"dpsgd_mlp": {0.5: 0.3, 1: 0.4, 5: 0.5, 10: 0.55},
                                     "subsample_aggregate_mlp": {0.5: 0.1, 1: 0.2, 5: 0.55, 10: 0.7},
                                     "non_private_mlp": {0.5: 0.866, 1: 0.866, 5: 0.866, 10: 0.866}})
    c = checks({"fig7a": f7a, "fig7b": f7b})
    assert c.loc[["claim10a", "claim10b", "claim10c"], "passed"].all()
    assert 2 < c.loc["claim10a", "value"] < 10
    f7a_bad = frame("fig7a", "epsilon", {"dpsgd_mlp": {0.5: 0.3, 1: 0.4, 5: 0.8, 10: 0.85},
                                         "subsample_aggregate_mlp": {0.5: 0.5, 1: 0.2, 5: 0.55, 10: 0.7},
                                         "non_private_mlp": {0.5: 0.866, 1: 0.866, 5: 0.866, 10: 0.866}})
    f7b_bad = frame("fig7b", "budget", {"dpsgd_mlp": {1: 0.1, 100: 0.1}, "subsample_aggregate_mlp": {1: 0.8, 100: 0.5}})
    c = checks({"fig7a": f7a_bad, "fig7b": f7b_bad})
    assert not c.loc[["claim10a", "claim10b", "claim10c"], "passed"].any()


def test_trend_arrows():
    s = pd.Series
    assert vdm2020.trend(s([0.1, 0.5, 0.9], index=[1, 2, 3])) == "↗"
    assert vdm2020.trend(s([0.9, 0.5, 0.1], index=[1, 2, 3])) == "↘"
    assert vdm2020.trend(s([0.1, 0.9, 0.2], index=[1, 2, 3])) == "↷"
    assert vdm2020.trend(s([0.5, 0.503, 0.501], index=[1, 2, 3])) == "⋯"


def test_effects_table_compares_measured_arrows_with_the_paper():
    f4 = frame("fig4", "n_train", {m: {1e3: 0.3, 1e4: 0.6, 1e5: 0.8} for m in vdm2020.PRIVATE[:4]},
               runtime={"loss_perturbation": {1e3: 0.1, 1e4: 1.0, 1e5: 10.0}})
    f6b = frame("fig6b", "n_models", {"subsample_aggregate": {8: 0.9, 64: 0.8, 512: 0.5}},  # no hump: disagrees
                runtime={"subsample_aggregate": {8: 1.0, 64: 5.0, 512: 40.0}})
    t = vdm2020.effects_table({"fig4": f4, "fig6b": f6b}).set_index(["property", "hyperparameter"])
    assert t.loc[("accuracy", "N"), "measured"] == "↗" and t.loc[("accuracy", "N"), "agrees"]
    assert t.loc[("training time", "N"), "measured"] == "↗"
    assert t.loc[("accuracy", "T"), "measured"] == "↘" and not t.loc[("accuracy", "T"), "agrees"]
    assert t.loc[("training time", "T"), "measured"] == "↗"
    assert t.loc[("accuracy", "C"), "measured"] == "" and "fig5b not in this run" in t.loc[("accuracy", "C"), "detail"]
    html = vdm2020.report_html({}, {"fig4": f4, "fig6b": f6b})
    assert "measured <b style='color:green'>↗</b>" in html and "color:darkred" in html


def test_claims_are_data_with_the_papers_sections():
    from dpbench.studies.vdm2020.claims import CLAIMS

    assert len(CLAIMS) == 21
    for c in CLAIMS.values():
        assert c.figure in vdm2020.FIGURES and c.section.startswith("van der Maaten & Hannun 2020")
