"""The tight loss-perturbation calibration against brute force. For a small softmax problem (two or three
features, C classes, the other records given with counts) the exact privacy loss of an output θ between two
datasets that differ in one replaced record is

    β(‖b_D′(θ)‖ − ‖b_D(θ)‖) + log det H_D(θ) − log det H_D′(θ),

b_D(θ) = −(Σ ∇ℓ + ρθ) the noise that makes θ the perturbed minimiser on D (N·l2 = ρ, the smallest regulariser
either of vdm2020's rules allows) and H_D(θ) = Σ ∇²ℓ + ρI its Jacobian (Chaudhuri et al. 2011, Thm 9). It must
never exceed ε at the tight β — on random configurations (records in the unit ball, counts up to 10⁹, θ the
minimiser on D plus random offsets) and on the constructed near-worst pair — while the ×0.9-noise twin of the
tight calibration is broken on that pair (C = 10): the calibration cannot be loosened by 10 %."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbench.methods.loss_perturbation import (
    LossPerturbationTight, loss_perturbation_epsilon, loss_perturbation_epsilon_bound, loss_perturbation_noise,
    loss_perturbation_privacy_loss_bound, loss_perturbation_tight_beta,
)

K = math.sqrt(2.0)


def _softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


def _parts(theta, X, y, w):
    """Σ w·ℓ, Σ w·∇ℓ (d, C) and Σ w·∇²ℓ (dC, dC; row-major vec) of softmax cross-entropy."""
    d, C = theta.shape
    f, g, H = 0.0, np.zeros((d, C)), np.zeros((d * C, d * C))
    for x, yy, ww in zip(X, y, w):
        z = x @ theta
        p = _softmax(z)
        q = p.copy()
        q[yy] -= 1.0
        f += ww * (math.log(np.exp(z - z.max()).sum()) + z.max() - z[yy])
        g += ww * np.outer(x, q)
        H += ww * np.kron(np.outer(x, x), np.diag(p) - np.outer(p, p))
    return f, g, H


def _minimiser(X, y, w, rho, C):
    """argmin Σ w·ℓ + (ρ/2)‖θ‖² by damped Newton (strongly convex)."""
    d = X.shape[1]
    th = np.zeros((d, C))
    for _ in range(100):
        f, g, H = _parts(th, X, y, w)
        g = g + rho * th
        step = np.linalg.solve(H + rho * np.eye(d * C), g.ravel()).reshape(d, C)
        F0, t = f + rho / 2 * (th ** 2).sum(), 1.0
        while t > 1e-12:
            new = th - t * step
            if _parts(new, X, y, w)[0] + rho / 2 * (new ** 2).sum() <= F0 - 1e-4 * t * float(g.ravel() @ step.ravel()):
                break
            t /= 2
        th = new
        if np.linalg.norm(g) <= 1e-13 * max(1.0, float(np.sum(w))):
            break
    return th


def noise_and_jacobian(theta, others, rec_d, rec_p, rho):
    """(b_D(θ), b_D′(θ), log det H_D(θ) − log det H_D′(θ)): the noises that make θ the perturbed minimiser on D and
    on D′, and the Jacobian term of the density ratio (module docstring)."""
    Xo, yo, wo = others
    _, go, Ho = _parts(theta, Xo, yo, wo)
    _, g1, H1 = _parts(theta, [rec_d[0]], [rec_d[1]], [1.0])
    _, g2, H2 = _parts(theta, [rec_p[0]], [rec_p[1]], [1.0])
    reg = rho * np.eye(theta.size)
    return (-(go + g1 + rho * theta), -(go + g2 + rho * theta),
            np.linalg.slogdet(Ho + H1 + reg)[1] - np.linalg.slogdet(Ho + H2 + reg)[1])


def privacy_loss(theta, others, rec_d, rec_p, beta, rho):
    """The exact log density ratio p_D(θ)/p_D′(θ) of loss perturbation with L2-Laplace noise (module docstring)."""
    b_d, b_p, jac = noise_and_jacobian(theta, others, rec_d, rec_p, rho)
    return beta * (np.linalg.norm(b_p) - np.linalg.norm(b_d)) + jac


def _near_worst_pair(c: float, n_others: float):
    """Others: x = (0, 1) of class 1 (count n_others) drive the bias of class 1 up; the replaced record is
    (±√(1 − c²), c) of class 0, predicted as class 1 on both sides, so its gradients differ by ≈ 2K√(1 − c²)."""
    z = math.sqrt(1 - c * c)
    others = (np.array([[0.0, 1.0]]), [1], [n_others])
    return others, (np.array([z, c]), 0), (np.array([-z, c]), 0)


def test_tight_beta_meets_its_bound_and_halves_the_noise_from_eight_classes():
    for C, ratio in [(2, 1.6077), (3, 1.7127), (5, 1.8934), (8, 2.0), (10, 2.0)]:
        for eps in (0.1, 1.0, 4.0):
            beta = loss_perturbation_tight_beta(eps, C)
            assert beta / (eps / (4 * K)) == pytest.approx(ratio, abs=1e-4)
            bound = loss_perturbation_privacy_loss_bound(beta, C / eps, C)
            assert eps * (1 - 1e-9) <= bound <= eps
            assert loss_perturbation_epsilon(eps, 0.0, "replace_one", "tight", C) == bound
            assert loss_perturbation_epsilon_bound(eps, C) <= eps          # the source's calibration: valid, loose
    assert loss_perturbation_noise(1.0, 0.0, 10, calibration="tight") == ("l2_laplace", 1 / (2 * K), 10.0)


def test_tight_calibration_refuses_what_it_does_not_prove():
    # δ > 0 has its own proved Gaussian bound (tests/privacy/test_loss_perturbation_gaussian_bound.py)
    assert loss_perturbation_noise(1.0, 1e-5, 10, calibration="tight")[0] == "gaussian"
    with pytest.raises(ValueError, match="replace_one"):
        loss_perturbation_noise(1.0, 0.0, 10, "add_remove", calibration="tight")
    with pytest.raises(ValueError, match="calibration"):
        loss_perturbation_noise(1.0, 0.0, 10, calibration="loose")


@pytest.mark.parametrize("C,d", [(2, 2), (3, 3), (10, 2)])
def test_brute_force_privacy_loss_never_exceeds_epsilon(C, d):
    rng = np.random.default_rng(20261127 + C)
    eps = 1.0
    rho, beta = C / eps, loss_perturbation_tight_beta(eps, C)
    bound = loss_perturbation_privacy_loss_bound(beta, rho, C)
    worst = -np.inf

    def ball(k):
        v = rng.normal(size=(k, d))
        return v / np.linalg.norm(v, axis=1, keepdims=True) * rng.uniform(0.3, 1.0, size=(k, 1)) ** 0.25

    for _ in range(150):
        k = int(rng.integers(1, 4))
        Xo, yo, wo = ball(k), rng.integers(0, C, size=k), 10.0 ** rng.uniform(0, 9, size=k)
        (xd, xp), yd, yp = ball(2), int(rng.integers(0, C)), int(rng.integers(0, C))
        th0 = _minimiser(np.vstack([Xo, xd]), list(yo) + [yd], list(wo) + [1.0], rho, C)
        for s in (0.0, 0.1, 1.0, 10.0):      # the noise-free output and outputs of growing noise
            th = th0 + s * rng.normal(size=th0.shape)
            for pair in (((xd, yd), (xp, yp)), ((xp, yp), (xd, yd))):
                worst = max(worst, privacy_loss(th, (Xo, yo, wo), *pair, beta, rho))
    for c in (0.2, 0.3, 0.5):                 # the constructed near-worst pairs
        others, rd, rp = _near_worst_pair(c, 1e12)
        th = _minimiser(np.vstack([others[0], rd[0]]), [1, 0], [1e12, 1.0], rho, C)
        worst = max(worst, privacy_loss(th, others, rd, rp, beta, rho))
    assert worst <= bound <= eps


def test_tight_calibration_is_nearly_attained_and_its_x09_twin_is_broken():
    C, eps = 10, 1.0
    rho, beta = C / eps, loss_perturbation_tight_beta(eps, C)
    others, rd, rp = _near_worst_pair(0.3, 1e12)
    th = _minimiser(np.vstack([others[0], rd[0]]), [1, 0], [1e12, 1.0], rho, C)
    tight = privacy_loss(th, others, rd, rp, beta, rho)
    twin = privacy_loss(th, others, rd, rp, beta / 0.9, rho)       # noise scale × 0.9
    assert 0.94 * eps < tight <= eps
    assert twin > 1.05 * eps


def test_tight_method_rows_beside_the_source_and_delta_points_left_out(tiny_config):
    """Through the runner on tiny data: the tight series' rows carry calibration 'tight', half the source's noise
    (C = 10: β doubles; ``noise_scale`` holds β for L2-Laplace noise) and ε_achieved ≤ ε; the source's rows are
    unchanged by the tight method's presence; at δ > 0 it draws Gaussian noise below the source's."""
    import copy

    from dpbench.runner import run_series
    from dpbench.studies.vdm2020.spec import series

    cfg = copy.deepcopy(tiny_config)
    cfg["studies"]["vdm2020"]["figures"]["fig1a"]["methods"] = ["loss_perturbation", "loss_perturbation_tight"]
    src = run_series(cfg, "vdm2020", "fig1a", "loss_perturbation")
    tight = run_series(cfg, "vdm2020", "fig1a", "loss_perturbation_tight")
    assert set(src["calibration"]) == {"source"} and set(tight["calibration"]) == {"tight"}
    a = src.groupby("epsilon")["noise_scale"].first()
    b = tight.groupby("epsilon")["noise_scale"].first()
    np.testing.assert_allclose(b / a, 2.0, rtol=1e-12)
    assert (tight["epsilon_achieved"] <= tight["epsilon"] * (1 + 1e-12)).all()
    alone = run_series(tiny_config, "vdm2020", "fig1a", "loss_perturbation")
    np.testing.assert_array_equal(alone["value"].to_numpy(), src["value"].to_numpy())
    cfg["studies"]["vdm2020"]["figures"]["fig1b"]["methods"] = ["loss_perturbation", "loss_perturbation_tight"]
    assert "loss_perturbation_tight" in series(cfg["studies"]["vdm2020"], "fig1b")
    src_b = run_series(cfg, "vdm2020", "fig1b", "loss_perturbation")
    tight_b = run_series(cfg, "vdm2020", "fig1b", "loss_perturbation_tight")
    assert set(tight_b["noise_kind"]) == {"gaussian"} and set(src_b["noise_kind"]) == {"gaussian_kifer"}
    ratio = tight_b.groupby("epsilon")["noise_scale"].first() / src_b.groupby("epsilon")["noise_scale"].first()
    assert ((ratio > 0.5) & (ratio < 0.75)).all()
    assert (tight_b["epsilon_achieved"] <= tight_b["epsilon"] * (1 + 1e-12)).all()
    assert LossPerturbationTight.calibration_kind == "tight"
