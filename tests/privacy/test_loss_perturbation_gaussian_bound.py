"""Loss perturbation with Gaussian noise (δ > 0) against brute force: the proved replace-one bound
(:func:`loss_perturbation_gaussian_loss_bound`) behind both the tight calibration and the floor of the source's.

For a small softmax problem (two features, C classes, the other records given with counts) an output θ drawn
with noise B is the minimiser of Σℓ + (ρ/2)‖θ‖² + ⟨B, θ⟩ on D, and its exact privacy loss against D′ (one record
replaced) is

    (‖b_D′(θ)‖² − ‖b_D(θ)‖²)/(2σ²) + log det H_D(θ) − log det H_D′(θ),

b_D(θ) = −(Σ ∇ℓ + ρθ) = B. On every draw it must stay below the bound evaluated at that draw's own noise
projection t (the inequality the proof makes, with no tail probability in it), and the fraction of draws whose
loss exceeds ε must stay below δ at the calibrated σ (δ = 0.05 here, so a few thousand draws see the tail)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbench.methods.loss_perturbation import (
    _chi_radius, _kifer_sigma, loss_perturbation_epsilon, loss_perturbation_gaussian_loss_bound,
    loss_perturbation_gaussian_loss_bound_at, loss_perturbation_gaussian_sigma, loss_perturbation_noise,
)
from tests.privacy.test_tight_loss_perturbation_brute_force import _parts, noise_and_jacobian

K = math.sqrt(2.0)


def _perturbed_minimiser(X, y, w, rho, B, theta0):
    """argmin Σ w·ℓ + (ρ/2)‖θ‖² + ⟨B, θ⟩ by damped Newton (strongly convex)."""
    d, C = B.shape
    th = theta0.copy()
    obj = lambda t: _parts(t, X, y, w)[0] + rho / 2 * (t ** 2).sum() + float((B * t).sum())  # noqa: E731
    for _ in range(100):
        _, g, H = _parts(th, X, y, w)
        g = g + rho * th + B
        if np.linalg.norm(g) <= 1e-11 * max(1.0, float(np.sum(w))):
            break
        step = np.linalg.solve(H + rho * np.eye(d * C), g.ravel()).reshape(d, C)
        F0, t = obj(th), 1.0
        while t > 1e-12:
            new = th - t * step
            if obj(new) <= F0 - 1e-4 * t * float(g.ravel() @ step.ravel()):
                break
            t /= 2
        th = new
    return th


def _exact_loss(theta, others, rec_d, rec_p, sigma, rho):
    b_d, b_p, jac = noise_and_jacobian(theta, others, rec_d, rec_p, rho)
    return ((b_p ** 2).sum() - (b_d ** 2).sum()) / (2 * sigma ** 2) + jac, b_d


def _own_t(B, x, xp, sigma):
    """The draw's t: min(max of the two records' projections, the projection on their joint span) / σ."""
    C = B.shape[1]
    P = np.eye(C) - 1.0 / C
    one = max(np.linalg.norm(P @ (B.T @ x)) / np.linalg.norm(x), np.linalg.norm(P @ (B.T @ xp)) / np.linalg.norm(xp))
    basis = np.stack([np.kron(v, u) for v in (x, xp) for u in np.linalg.svd(P)[0][:, : C - 1].T])  # (2(C-1), dC)
    q, _ = np.linalg.qr(basis.T)
    joint = np.linalg.norm(q.T @ B.ravel())
    return min(one, joint) / sigma


def _problem(rng, C, d=2):
    others_X = rng.normal(size=(3, d))
    others_X /= np.maximum(1.0, np.linalg.norm(others_X, axis=1))[:, None]
    others = (others_X, rng.integers(0, C, size=3), rng.choice([1.0, 10.0, 1e3], size=3))
    x, xp = (v / max(1.0, np.linalg.norm(v)) * rng.uniform(0.5, 1.0) for v in rng.normal(size=(2, d)))
    return others, (x, int(rng.integers(C))), (xp, int(rng.integers(C)))


@pytest.mark.parametrize("C, calibration", [(2, "tight"), (3, "tight"), (3, "source")])
def test_every_draw_stays_below_the_bound_at_its_own_t_and_the_tail_below_delta(C, calibration):
    eps, delta, d = 1.0, 0.05, 2
    kind, sigma, rho = loss_perturbation_noise(eps, delta, C, calibration=calibration)
    rng = np.random.default_rng(17 + C)
    worst, over, n = -np.inf, 0, 0
    for _ in range(4):                            # configurations
        others, rec_d, rec_p = _problem(rng, C, d)
        Xd = np.vstack([others[0], rec_d[0]])
        yd = np.r_[others[1], rec_d[1]]
        wd = np.r_[others[2], 1.0]
        theta0 = np.zeros((d, C))
        for _ in range(60):                       # noise draws
            B = rng.normal(0.0, sigma, size=(d, C))
            th = _perturbed_minimiser(Xd, yd, wd, rho, B, theta0)
            loss, b_d = _exact_loss(th, others, rec_d, rec_p, sigma, rho)
            assert np.allclose(b_d, B, atol=1e-7 * max(1.0, sigma))     # θ is the minimiser for this B
            t = _own_t(B, rec_d[0], rec_p[0], sigma)
            assert loss <= loss_perturbation_gaussian_loss_bound_at(sigma, rho, C, t) + 1e-9
            worst, over, n = max(worst, loss), over + (loss > eps), n + 1
    assert over / n <= delta / 2                  # the tail: below δ with room (P(over) ≤ δ is what is proved)
    assert worst > 0.1 * eps                      # the draws do reach a sizeable loss


def test_bound_is_the_maximum_over_the_gradient_norm():
    for C in (2, 3, 10):
        for sigma, rho, t in ((18.3, 10.0, 6.4), (0.9, 0.5, 4.0), (3.0, 100.0, 2.0), (0.3, 0.2, 1.0)):
            a = np.linspace(0.0, K, 200001)
            grid = ((a + K) * t / sigma + (a + K) ** 2 / (2 * sigma ** 2)
                    + np.minimum(1 - 1 / C, 2 - a * a) / rho).max()
            assert loss_perturbation_gaussian_loss_bound_at(sigma, rho, C, t) == pytest.approx(grid, rel=1e-9)


def test_chi_radius_is_the_smaller_valid_quantile():
    from scipy.stats import chi

    for C, delta in ((2, 1e-5), (10, 1e-5), (10, 0.05), (50, 1e-10)):
        t = _chi_radius(C, delta)
        assert t == pytest.approx(min(chi.isf(delta / 2, C - 1), chi.isf(delta, 2 * C - 2)))
        assert chi.sf(t, C - 1) <= delta / 2 * (1 + 1e-9) or chi.sf(t, 2 * C - 2) <= delta * (1 + 1e-9)


@pytest.mark.parametrize("C", [2, 3, 5, 10])
def test_the_source_calibration_is_proved_for_mnist_class_counts(C):
    """For C ≤ 10 Kifer's σ passes the proved bound on vdm2020's whole (ε, δ) range, so the default is
    unchanged bit for bit; the tight σ is the least that passes."""
    for eps in (0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0):
        for delta in (1e-10, 1e-5, 1e-3, 1e-1):
            kind, sigma, rho = loss_perturbation_noise(eps, delta, C)
            assert kind == "gaussian_kifer" and sigma == _kifer_sigma(2 * K, eps, delta)
            assert loss_perturbation_gaussian_loss_bound(sigma, rho, C, delta) <= 0.85 * eps
            tight = loss_perturbation_gaussian_sigma(eps, delta, C)
            assert 0.4 * sigma < tight < sigma
            assert loss_perturbation_gaussian_loss_bound(tight, rho, C, delta) <= eps
            assert loss_perturbation_gaussian_loss_bound(0.999 * tight, rho, C, delta) > eps
            assert loss_perturbation_epsilon(eps, delta, "replace_one", "tight", C) <= eps


def test_many_classes_raise_the_source_sigma_to_the_proved_one():
    eps, delta, C = 1.0, 1e-5, 50
    kind, sigma, rho = loss_perturbation_noise(eps, delta, C)
    assert kind == "gaussian" and sigma > _kifer_sigma(2 * K, eps, delta)
    assert sigma == loss_perturbation_gaussian_sigma(eps, delta, C)
    assert loss_perturbation_gaussian_loss_bound(sigma, rho, C, delta) <= eps
    # the paper's add/remove σ: its replace-one ε is the proved bound where that is larger than Kifer's value
    kifer_only = loss_perturbation_epsilon(eps, delta, "add_remove")
    assert loss_perturbation_epsilon(eps, delta, "add_remove", n_classes=C) > kifer_only
    assert loss_perturbation_epsilon(eps, delta, "add_remove", n_classes=10) == kifer_only
