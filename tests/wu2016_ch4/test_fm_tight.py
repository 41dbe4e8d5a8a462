"""The functional mechanism's tight calibration (issue: privacy left on the table): Δ* = (d + 2)²/8 (logistic)
and (d + 1)² (linear) on the box are the exact replace-one L1 sensitivities of the coefficient vector — never
exceeded by any pair found (exhaustive lattice search, optimisation from random starts over the continuous box)
and attained by the witness pairs — the sphere bound is never exceeded either, and the exact Laplace privacy loss
at Δ* on the worst pair found is ≤ ε (= ε on the witness)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from dpbench.methods import functional_mechanism as fm


def _coef(kind, x, y):
    if kind == "logistic":
        return fm.fm_logistic_record_coefficients(x, y)
    return fm.fm_linear_record_coefficients(x, y)


def _sens(kind, d, domain="box", calibration="tight"):
    f = fm.fm_logistic_sensitivity if kind == "logistic" else fm.fm_linear_sensitivity
    return f(d, domain, calibration=calibration)


LABELS = {"logistic": (0.0, 1.0), "linear": (-1.0, 1.0)}


@pytest.mark.parametrize("kind", ["logistic", "linear"])
@pytest.mark.parametrize("d", [1, 2, 3])
def test_exact_on_a_lattice(kind, d):
    """Every pair of records on the lattice {−1, −½, 0, ½, 1}^d (labels {0, 1} or {−1, 0, 1}): the largest L1
    move equals Δ* (which the witness attains), against the source's larger Δ."""
    vals = (-1.0, -0.5, 0.0, 0.5, 1.0)
    ys = LABELS[kind] if kind == "logistic" else (-1.0, 0.0, 1.0)
    recs = np.array([_coef(kind, np.array(x), y) for x in itertools.product(vals, repeat=d) for y in ys])
    best = max(float(np.abs(recs - r).sum(axis=1).max()) for r in recs)
    assert best == pytest.approx(_sens(kind, d), rel=1e-12)
    assert _sens(kind, d) < _sens(kind, d, calibration="source")


@pytest.mark.parametrize("kind", ["logistic", "linear"])
@pytest.mark.parametrize("d", [2, 4, 8])
def test_never_exceeded_on_the_continuous_box(kind, d):
    """Maximise the L1 move over (x, x′) ∈ [−1, 1]^{2d} and every label pair from 60 random starts (L-BFGS-B on
    the box): never above Δ*, and the best found reaches it."""
    g = np.random.default_rng(d)
    cap = _sens(kind, d)
    ys = (0.0, 1.0) if kind == "logistic" else (-1.0, 1.0)
    best = 0.0
    for y, yp in itertools.product(ys, repeat=2):
        def neg(z):
            return -float(np.abs(_coef(kind, z[:d], y) - _coef(kind, z[d:], yp)).sum())
        for _ in range(15):
            r = minimize(neg, g.uniform(-1, 1, 2 * d), method="L-BFGS-B", bounds=[(-1, 1)] * (2 * d))
            best = max(best, -r.fun)
            assert -r.fun <= cap * (1 + 1e-9), (kind, d, y, yp, -r.fun, cap)
    assert best >= 0.97 * cap
    # the witness pairs of the module docstring attain Δ* exactly
    if kind == "logistic":
        x, xp = np.r_[np.zeros(d - 2), 1.0, 1.0], -np.ones(d)
        w = np.abs(_coef(kind, x, 0.0) - _coef(kind, xp, 0.0)).sum()
    else:
        x, xp = np.r_[np.zeros(d - 1), 1.0], -np.ones(d)
        w = np.abs(_coef(kind, x, 1.0) - _coef(kind, xp, 1.0)).sum()
    assert w == pytest.approx(cap, rel=1e-12)


@pytest.mark.parametrize("kind", ["logistic", "linear"])
@pytest.mark.parametrize("d", [2, 5, 8])
def test_sphere_bound_never_exceeded(kind, d):
    """Records on the unit sphere (‖x‖₂ ≤ 1; the optimiser works on unconstrained z, x = z/max(1, ‖z‖)): the
    largest move found stays under the sphere bound, which is below the source's."""
    g = np.random.default_rng(10 + d)
    cap = _sens(kind, d, "sphere")
    assert cap < _sens(kind, d, "sphere", "source")
    ys = (0.0, 1.0) if kind == "logistic" else (-1.0, 1.0)

    def ball(z):
        return z / max(1.0, float(np.linalg.norm(z)))

    best = 0.0
    for y, yp in itertools.product(ys, repeat=2):
        def neg(z):
            return -float(np.abs(_coef(kind, ball(z[:d]), y) - _coef(kind, ball(z[d:]), yp)).sum())
        for _ in range(10):
            r = minimize(neg, g.normal(size=2 * d), method="Nelder-Mead", options={"maxiter": 4000, "fatol": 1e-12})
            best = max(best, -r.fun)
    assert best <= cap * (1 + 1e-9)
    assert best >= 0.75 * cap      # the bound is not exact on the sphere, but not far off either


@pytest.mark.parametrize("eps", [1.0, 4.0])
def test_privacy_loss_of_the_tight_laplace_is_at_most_eps(eps):
    """The exact privacy loss of Laplace(Δ*/ε) on every coefficient, on the witness pair (d = 8) and on the
    label pair of the audit: log p_D(z) − log p_D′(z) at outputs z drawn from both sides and at the far output
    that attains the maximum — never above ε, = ε on the witness; the ×0.9-noise twin exceeds ε there."""
    d = 8
    cap = _sens("logistic", d)
    scale = cap / eps
    x, xp = np.r_[np.zeros(d - 2), 1.0, 1.0], -np.ones(d)
    pairs = [(_coef("logistic", x, 0.0), _coef("logistic", xp, 0.0)),
             (_coef("logistic", np.ones(d), 0.0), _coef("logistic", np.ones(d), 1.0))]
    g = np.random.default_rng(0)
    for a, b in pairs:
        z = np.concatenate([a + g.laplace(0, scale, (20_000, a.size)), b + g.laplace(0, scale, (20_000, a.size))])
        far = a + 1e6 * np.sign(a - b)                       # every coordinate past both centres
        z = np.vstack([z, far])
        loss = (np.abs(z - b).sum(axis=1) - np.abs(z - a).sum(axis=1)) / scale
        assert loss.max() <= eps * (1 + 1e-9)
    assert loss.max() == pytest.approx(eps * 8 / cap)        # the label pair: 0.64 ε
    a, b = pairs[0]
    far = a + 1e6 * np.sign(a - b)
    assert (np.abs(far - b).sum() - np.abs(far - a).sum()) / scale == pytest.approx(eps)   # the witness: ε
    assert (np.abs(far - b).sum() - np.abs(far - a).sum()) / (0.9 * scale) > eps          # ×0.9 twin: broken


def test_methods_and_series_use_it():
    """The training method and the wu2016 ch. 4 series ``fm_tight`` draw their noise at Δ*."""
    from dpbench.methods import training_method
    from dpbench.studies.wu2016 import ch4_compute as C

    g = np.random.default_rng(0)
    X = g.uniform(-1, 1, (50, 8))
    y = (g.random(50) > 0.5).astype(float)
    r = fm.functional_mechanism_logistic(X, y, 1.0, np.random.default_rng(1), "box", calibration="tight")
    assert r.sensitivity == 12.5
    m = training_method("functional_mechanism_tight")
    assert m.calibration_kind == "tight" and training_method("functional_mechanism").calibration_kind == "source"
    assert C.calibration("fm_tight") == "tight" and C._base("fm_tight", {"fm": {"domain": "box"}})[1]["fm"] == {
        "domain": "box", "calibration": "tight"}
    with pytest.raises(ValueError, match="calibration"):
        fm.fm_logistic_sensitivity(8, "box", calibration="loose")
