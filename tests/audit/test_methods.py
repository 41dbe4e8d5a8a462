"""Per-method audits at small sizes (smoke calibrations): correct implementations never fire, broken twins are
caught, twins are parameters of the real methods, the study and the CLI are wired."""

import numpy as np
import pytest

from dpbench.audit import REGISTRY, run_cell, variants
from dpbench.config import DEFAULT_CONFIG_PATH
from dpbench.studies import load_config

SMALL = {"model_sensitivity": 20_000, "loss_perturbation": 20, "dpsgd_softmax": 200, "bolt_on": 5_000,
         "output_perturbation_erm": 3_000, "objective_perturbation": 1_000, "functional_mechanism": 20_000,
         "mean_laplace": 20_000, "mean_gaussian": 20_000, "ldp_mean": 20_000, "ldp_sgd_report": 20_000}

# (method, twin, claimed ε, trials per side): each twin is caught (ε̂ > claimed ε) at this small size
CAUGHT = [("model_sensitivity", "noise_x0.1", 1.0, 20_000),
          ("loss_perturbation", "noise_x0.01", 1.0, 60),
          ("dpsgd_softmax", "noise_x0.1", 1.0, 300),
          ("bolt_on", "noise_x0.1", 1.0, 5_000),
          ("output_perturbation_erm", "noise_x0.1", 1.0, 3_000),
          ("objective_perturbation", "noise_x0.1", 1.0, 2_000),
          ("functional_mechanism", "noise_x0.25", 4.0, 400_000),
          ("mean_laplace", "noise_x0.5", 1.0, 20_000),
          ("mean_laplace", "bug_l2_sensitivity", 1.0, 20_000),
          ("mean_gaussian", "noise_x0.5", 1.0, 300_000),
          ("ldp_mean", "noise_x0.5", 1.0, 20_000),
          ("ldp_sgd_report", "noise_x0.5", 1.0, 20_000)]


@pytest.fixture(scope="module")
def config():
    return load_config(DEFAULT_CONFIG_PATH, "config/smoke.yaml")


def test_every_method_has_a_noise_twin_and_a_caught_twin_test():
    assert set(SMALL) == set(REGISTRY)
    for name, m in REGISTRY.items():
        assert "noise_x0.5" in m.twins, name
    assert {c[0] for c in CAUGHT} == set(REGISTRY)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_correct_implementation_does_not_fire(config, name):
    for eps in (1.0, 4.0):
        r = run_cell(config, name, eps, "correct", 0, SMALL[name])
        assert not r["fires"], f"{name} at ε={eps}: ε̂ = {r['eps_lower']:.3f} — PRIVACY BUG"
        assert r["eps_lower"] <= eps
        if np.isfinite(r["eps_pair"]):        # a lower bound never exceeds the exact ε of the pair (bar α)
            assert r["eps_lower"] <= r["eps_pair"] * 1.02 + 1e-9


@pytest.mark.parametrize("name,twin,eps,trials", CAUGHT)
def test_twin_is_caught_at_small_size(config, name, twin, eps, trials):
    r = run_cell(config, name, eps, twin, 0, trials)
    assert r["fires"], f"{name}/{twin} at ε={eps}: ε̂ = {r['eps_lower']:.3f} not above ε"


def test_twins_are_parameters_of_the_real_methods():
    """The objective-perturbation and functional-mechanism hooks leave the mechanisms unchanged at factor 1 and
    scale exactly the noise otherwise."""
    from dpbench.methods.functional_mechanism import fm_logistic_objective, fm_perturb
    from dpbench.methods.objective_perturbation import objective_perturbation

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(rng.random(40) < 0.5, 1.0, -1.0)
    a = objective_perturbation("logistic", X, y, 0.1, 1.0, 1.0, np.random.default_rng(5))
    b = objective_perturbation("logistic", X, y, 0.1, 1.0, 1.0, np.random.default_rng(5), noise_factor=1.0)
    np.testing.assert_array_equal(a.w, b.w)
    M, c = fm_logistic_objective(X, (y > 0).astype(float))
    M1, c1 = fm_perturb(M, c, 2.0, 1.0, np.random.default_rng(3))
    M2, c2 = fm_perturb(M, c, 2.0, 1.0, np.random.default_rng(3), noise_factor=0.5)
    np.testing.assert_allclose(M2 - M, 0.5 * (M1 - M), atol=1e-12)
    np.testing.assert_allclose(c2 - c, 0.5 * (c1 - c), atol=1e-12)


def test_cells_are_reproducible_and_seeded_by_key(config):
    a = run_cell(config, "ldp_mean", 1.0, "correct", 0, 2_000)
    b = run_cell(config, "ldp_mean", 1.0, "correct", 0, 2_000)
    c = run_cell(config, "ldp_mean", 1.0, "correct", 1, 2_000)
    assert (a["tp"], a["fp"], a["eps_lower"]) == (b["tp"], b["fp"], b["eps_lower"])
    assert (a["tp"], a["fp"]) != (c["tp"], c["fp"])
    assert variants("mean_laplace") == ("correct", "noise_x0.5", "bug_l2_sensitivity")


def test_study_rows_anchors_and_cli(config, tmp_path, capsys):
    import copy

    from dpbench.cli import main
    from dpbench.studies import audit as A

    cfg = copy.deepcopy(config)
    cfg["studies"]["audit"]["trials"] = 2_000
    df = A.run_series(cfg, "fig_audit", "ldp_mean", n_jobs=1)
    assert set(df["variant"]) == {"correct", "noise_x0.5"} and len(df) == 4
    checks = A.anchor_checks({"fig_audit": df})
    ok = checks.set_index("claim")["passed"]
    assert ok["ldp_mean@ε=1"] and ok["ldp_mean@ε=4"]          # correct: no PRIVACY BUG
    assert ok["ldp_mean@ε=1/noise_x0.5"]                      # twin caught
    bad = df.copy()
    bad.loc[bad["variant"] == "correct", "fires"] = True      # an anchor that can fail does fail
    assert "PRIVACY BUG" in " ".join(A.anchor_checks({"fig_audit": bad})["statement"])
    out = A.plot(cfg, "fig_audit", df, tmp_path / "fig_audit.png")
    assert (tmp_path / "fig_audit.png").stat().st_size > 0 and "ldp_mean" in out
    assert main(["audit", "ldp_mean", "--epsilon", "1", "--trials", "2000", "--configfile", "config/smoke.yaml"]) == 0
    text = capsys.readouterr().out
    assert "caught" in text and "ok" in text
    assert main(["audit", "no_such_method"]) == 2


def test_dpsgd_last_iterate_epsilon_reduces_to_the_gaussian_closed_form():
    """q = 1: the canary is in every step, the last iterate is a Gaussian shift 2T/(σ√T) (in units of lr·ν)."""
    from dpbench.audit.methods import last_iterate_epsilon
    from dpbench.audit.stats import gaussian_epsilon

    assert abs(last_iterate_epsilon(100, 1.0, 10.0, 1e-5) - gaussian_epsilon(2.0, 1e-5)) < 1e-3
    # more noise, or a smaller sampling rate, is more private
    assert last_iterate_epsilon(400, 0.05, 2.0, 1e-5) < last_iterate_epsilon(400, 0.05, 1.0, 1e-5)
    assert last_iterate_epsilon(400, 0.02, 1.0, 1e-5) < last_iterate_epsilon(400, 0.05, 1.0, 1e-5)
