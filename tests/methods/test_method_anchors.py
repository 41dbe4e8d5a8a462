"""Noise calibrations of the vdm2020 methods against values computed from the paper's formulas (App. B–C)
[DERIVED: ours, not printed in the paper; tabled in docs/studies/vdm2020.md#derived]."""

import numpy as np
import pytest

from dpbench.learn import LIPSCHITZ_K
from dpbench.methods.loss_perturbation import loss_perturbation_l2, loss_perturbation_noise
from dpbench.methods.sensitivity import model_sensitivity_noise, prediction_sensitivity_noise


@pytest.mark.parametrize("eps, beta, rho, rho_n, sigma", [
    (0.1, 0.035355, 100, 1.667e-3, 140.03),
    (0.5, 0.17678, 20, 3.333e-4, 28.235),
    (1.0, 0.35355, 10, 1.667e-4, 14.258),
])
def test_loss_perturbation_constants(eps, beta, rho, rho_n, sigma):  # loss perturbation (K=√2, L=1/2, C=10)
    # the paper's anchors are its add/remove calibration
    kind, b, r = loss_perturbation_noise(eps, 0.0, 10, "add_remove")
    assert kind == "l2_laplace" and b == pytest.approx(beta, rel=1e-4) and r == pytest.approx(rho)
    assert r / 60000 == pytest.approx(rho_n, rel=1e-3)
    kind, s, _ = loss_perturbation_noise(eps, 1e-5, 10, "add_remove")
    assert kind == "gaussian_kifer" and s == pytest.approx(sigma, rel=1e-4)
    # the default, replace-one: a replaced record moves the gradient sum by up to 2K -> half β, twice σ
    kind, b, r2 = loss_perturbation_noise(eps, 0.0, 10)
    assert b == pytest.approx(beta / 2, rel=1e-4) and r2 == r
    assert loss_perturbation_noise(eps, 1e-5, 10)[1] == pytest.approx(2 * sigma, rel=1e-4)


def test_loss_perturbation_regulariser_rules():
    assert loss_perturbation_l2("code_max", 10, 60000, 1e-3) == 1e-3
    assert loss_perturbation_l2("code_max", 10, 60000, 1e-5) == pytest.approx(10 / 60000)
    assert loss_perturbation_l2("paper_sum", 10, 60000, 1e-3) == pytest.approx(10 / 60000 + 1e-3)
    with pytest.raises(ValueError, match="regularizer"):
        loss_perturbation_l2("other", 10, 60000, 1e-3)


@pytest.mark.parametrize("lam, beta_model, e_norm_model, beta_pred, e_norm_pred", [
    (1e-4, 2.1213, 3701, 0.021213, 471.4),
    (1e-3, 21.213, 370.1, 0.21213, 47.14),
    (1e-2, 212.13, 37.01, 2.1213, 4.714),
])
def test_laplace_type_sensitivity_methods(lam, beta_model, e_norm_model, beta_pred, e_norm_pred):  # Laplace-type noise
    kind, b = model_sensitivity_noise(60000, lam, 1.0, 0.0, 0.0)
    assert kind == "l2_laplace" and b == pytest.approx(beta_model, rel=1e-4)
    assert 7850 / b == pytest.approx(e_norm_model, rel=1e-3)  # E‖B‖ = d/β over D·C (+C bias) = 7850 dims
    kind, b, comp = prediction_sensitivity_noise(60000, lam, 1.0, 0.0, 100, 0.0)
    assert b == pytest.approx(beta_pred, rel=1e-4) and comp == "standard"
    assert 10 / b == pytest.approx(e_norm_pred, rel=1e-3)


def test_gaussian_sensitivity_methods_use_analytic_gaussian():  # Alg. 2 / Alg. 7 multipliers times Δ₂ = 2K/(Nλ)
    n, lam = 60000, 1e-3
    delta2 = 2 * LIPSCHITZ_K / (n * lam)
    kind, s = model_sensitivity_noise(n, lam, 1.0, 1e-5, 0.0)
    assert kind == "gaussian_analytic" and s / delta2 == pytest.approx(3.73063, rel=1e-5)
    for budget, mult, comp in [(1, 3.7306, "standard"), (10, 36.305, "standard"), (100, 197.60, "advanced"),
                               (1000, 664.05, "advanced")]:
        kind, s, c = prediction_sensitivity_noise(n, lam, 1.0, 1e-5, budget, 0.0)
        assert s / delta2 == pytest.approx(mult, rel=1e-4) and c == comp


def test_sampled_model_sensitivity_noise_has_the_calibrated_norm():
    from dpbench.privacy import sample_l2_laplace

    kind, beta = model_sensitivity_noise(60000, 1e-3, 1.0, 0.0)
    draws = sample_l2_laplace(np.random.default_rng(0), beta, 7850, size=(200,))
    assert np.linalg.norm(draws, axis=1).mean() == pytest.approx(370.1, rel=0.01)
