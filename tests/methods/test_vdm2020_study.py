"""vdm2020 study: problem construction, method rules, and anchor checks that can fail."""

import numpy as np
import pandas as pd
import pytest

from dpbench.methods.base import Context
from dpbench.store import Store
from dpbench.studies import vdm2020


def test_problems_are_in_the_unit_ball_and_validation_is_disjoint(tiny_config):
    cfg = tiny_config["studies"]["vdm2020"]
    test = vdm2020.problem(tiny_config, cfg, "test")
    val = vdm2020.problem(tiny_config, cfg, "validation")
    for p in (test, val):
        assert np.linalg.norm(p.X_train, axis=1).max() <= 1 + 1e-12
        assert np.linalg.norm(p.X_eval, axis=1).max() <= 1 + 1e-12
        assert p.dim == 785 and p.n_classes == 10
    assert test.n_train == 640 and test.X_eval.shape[0] == 200
    assert val.n_train + val.X_eval.shape[0] == 640 and val.X_eval.shape[0] == 64
    train_rows = {r.tobytes() for r in val.X_train}
    assert not any(r.tobytes() in train_rows for r in val.X_eval)
    assert test.key != val.key and test.variant == "substitute:deformed-digits-28x28"


def test_subsagg_standard_beta_rule_halves_beta(tiny_config, tmp_path):
    cfg = dict(tiny_config["studies"]["vdm2020"])
    problem = vdm2020.problem(tiny_config, cfg, "test")
    ctx = Context(store=Store(tmp_path), seed=1)
    out = {}
    for rule in ("paper", "standard"):
        cfg["subsample_aggregate"] = {"beta_rule": rule}
        m = vdm2020.make_method(cfg, "subsample_aggregate")
        cells = [m.make_cell(problem, None, 1.0, 0.0, b, 0) for b in (1, 10)]
        out[rule] = [r["noise_scale"] for r in m.run_group(problem, cells, ctx)]
    assert out["paper"] == pytest.approx([1.0, 0.1])
    assert out["standard"] == pytest.approx([0.5, 0.05])


def test_training_methods_ignore_budget_and_baseline_ignores_everything(tiny_config):
    cfg = tiny_config["studies"]["vdm2020"]
    problem = vdm2020.problem(tiny_config, cfg, "test")
    lp = vdm2020.make_method(cfg, "loss_perturbation")
    assert lp.make_cell(problem, 1e-3, 1.0, 0.0, 1, 0).key == lp.make_cell(problem, 1e-3, 1.0, 0.0, 1000, 0).key
    assert lp.make_cell(problem, 1e-3, 1.0, 0.0, 1, 0).key != lp.make_cell(problem, 1e-3, 1.0, 0.0, 1, 1).key
    # lambdas below rho/N give the same objective under code_max: the same cell
    assert lp.make_cell(problem, 1e-5, 1.0, 0.0, 1, 0).key == lp.make_cell(problem, 1e-4, 1.0, 0.0, 1, 0).key
    npv = vdm2020.make_method(cfg, "non_private")
    assert npv.make_cell(problem, 1e-3, 0.1, 0.0, 1, 0).key == npv.make_cell(problem, 1e-3, 9.0, 1e-5, 50, 7).key
    ps = vdm2020.make_method(cfg, "prediction_sensitivity")
    assert ps.make_cell(problem, 1e-3, 1.0, 0.0, 1, 0).key != ps.make_cell(problem, 1e-3, 1.0, 0.0, 2, 0).key
    assert vdm2020.make_method(cfg, "dpsgd").supports(1.0, 0.0, 100) is not None


def frame(fig, x_name, table, reps=3, noise=0.0):
    rows = []
    rng = np.random.default_rng(0)
    for series, values in table.items():
        for x, v in values.items():
            for r in range(reps):
                rows.append({"figure": fig, "series": series, "x": x, "rep": r, "x_name": x_name,
                             "value": v + noise * rng.standard_normal()})
    return pd.DataFrame(rows)


def test_crossover_budget_interpolates_on_log_b():
    df = frame("fig2a", "budget", {"loss_perturbation": {1: 0.6, 50: 0.6, 200: 0.6},
                                   "subsample_aggregate": {1: 0.9, 50: 0.7, 200: 0.5}})
    b = vdm2020.crossover_budget(df)
    assert 50 < b < 200
    assert b == pytest.approx(np.exp(np.log(50) + (np.log(200) - np.log(50)) * 0.1 / 0.2))
    never = frame("fig2a", "budget", {"loss_perturbation": {1: 0.1, 10: 0.1}, "subsample_aggregate": {1: 0.9, 10: 0.5}})
    assert np.isnan(vdm2020.crossover_budget(never))


def test_anchor_checks_pass_and_fail():
    good = {
        "fig1a": frame("fig1a", "epsilon", {"loss_perturbation": {0.1: 0.5, 1: 0.6, 10: 0.8},
                                            "subsample_aggregate": {0.1: 0.3, 1: 0.7, 10: 0.9},
                                            "prediction_sensitivity": {0.1: 0.1, 1: 0.1, 10: 0.2}}),
        "fig1b": frame("fig1b", "epsilon", {"dpsgd": {0.5: 0.9, 1: 0.9}, "loss_perturbation": {0.5: 0.8, 1: 0.8}}),
        "fig2a": frame("fig2a", "budget", {"loss_perturbation": {1: 0.6, 100: 0.6},
                                           "subsample_aggregate": {1: 0.9, 100: 0.5}}),
        "fig2b": frame("fig2b", "budget", {"loss_perturbation": {1: 0.9, 100: 0.9}, "dpsgd": {1: 0.9, 100: 0.9},
                                           "subsample_aggregate": {1: 0.8, 100: 0.5}}),
    }
    checks = vdm2020.anchor_checks(good).set_index("claim")
    assert checks.loc[["claim1b", "claim1c", "claim2", "claim3a", "claim4"], "passed"].all()
    # "at least as well as": a tie within 2 standard errors (here: equal means, B = 1) is undecided, never a pass
    tie = frame("fig2b", "budget", {"loss_perturbation": {1: 0.9, 100: 0.9}, "dpsgd": {1: 0.9, 100: 0.9},
                                    "subsample_aggregate": {1: 0.9, 100: 0.5}})
    c4 = vdm2020.anchor_checks({"fig2b": tie}).set_index("claim").loc["claim4"]
    assert (c4["verdict"], c4["reason"]) == ("undecided", "interval too wide")
    bad = {
        "fig1b": frame("fig1b", "epsilon", {"dpsgd": {0.5: 0.2, 1: 0.3}, "loss_perturbation": {0.5: 0.8, 1: 0.8}}),
        "fig2a": frame("fig2a", "budget", {"loss_perturbation": {1: 0.1, 100: 0.1},
                                           "subsample_aggregate": {1: 0.9, 100: 0.5}}),
        "fig2b": frame("fig2b", "budget", {"loss_perturbation": {1: 0.5, 100: 0.5}, "dpsgd": {1: 0.5, 100: 0.5},
                                           "subsample_aggregate": {1: 0.9, 100: 0.9}}),
    }
    checks = vdm2020.anchor_checks(bad).set_index("claim")
    assert not checks.loc[["claim2", "claim3b", "claim4"], "passed"].any()


def test_chance_level_points_do_not_decide_rankings():
    fig1a = frame("fig1a", "epsilon", {"loss_perturbation": {0.01: 0.11, 0.1: 0.10, 1: 0.5, 10: 0.7},
                                       "subsample_aggregate": {0.01: 0.10, 0.1: 0.11, 1: 0.6, 10: 0.9},
                                       "prediction_sensitivity": {0.01: 0.105, 0.1: 0.09, 1: 0.2, 10: 0.3}})
    checks = vdm2020.anchor_checks({"fig1a": fig1a}).set_index("claim")
    assert checks.loc["claim1a", "value"] == 1.0 and "2 ε at chance level left out" in checks.loc["claim1a", "measured"]
    assert checks.loc["claim1c", "value"] == 1.0


def test_cell_keys_follow_the_method_source(tiny_config, monkeypatch):
    from dpbench.methods.loss_perturbation import LossPerturbation
    from dpbench.methods.sensitivity import ModelSensitivity

    cfg = tiny_config["studies"]["vdm2020"]
    problem = vdm2020.problem(tiny_config, cfg, "test")
    lp, ms = vdm2020.make_method(cfg, "loss_perturbation"), vdm2020.make_method(cfg, "model_sensitivity")
    before = lp.make_cell(problem, 1e-3, 1.0, 0.0, 1, 0).key, ms.make_cell(problem, 1e-3, 1.0, 0.0, 1, 0).key
    assert LossPerturbation.code_hash() != ModelSensitivity.code_hash()
    monkeypatch.setattr(LossPerturbation, "code_hash", classmethod(lambda cls: "edited"))
    after = lp.make_cell(problem, 1e-3, 1.0, 0.0, 1, 0).key, ms.make_cell(problem, 1e-3, 1.0, 0.0, 1, 0).key
    assert after[0] != before[0] and after[1] == before[1]  # only the edited method's cells change
