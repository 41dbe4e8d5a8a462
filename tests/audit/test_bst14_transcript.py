"""BST14's transcript audit: the engine's observe hook, the with-replacement transcript statistic, and the audit at
small sizes (the ×0.001 twin caught, the correct implementation not flagged)."""

import copy
import math

import numpy as np
import pytest
from scipy import stats

from dpbench.audit import run_cell
from dpbench.audit import stats as S
from dpbench.config import DEFAULT_CONFIG_PATH
from dpbench.learn.psgd_many import psgd_many
from dpbench.methods.private_psgd_many import bst14_many
from dpbench.studies import load_config


def _data(n=120, d=3, seed=0):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    Y = np.where(r.random((n, 2)) < 0.5, 1.0, -1.0)
    return X, Y


@pytest.mark.parametrize("l2", [0.0, 0.05])
def test_bst14_observe_hook_does_not_change_results(l2):
    X, Y = _data()
    kw = dict(batch_size=5, passes=2, l2=l2, radius=2.0)
    W0, _ = bst14_many(X, Y, "logistic", [0.5, 2.0], 1e-3, np.random.default_rng(7), **kw)
    seen = []
    W1, info = bst14_many(X, Y, "logistic", [0.5, 2.0], 1e-3, np.random.default_rng(7),
                          observe=lambda t, W: seen.append((t, W.copy())), **kw)
    np.testing.assert_array_equal(W0, W1)
    assert [t for t, _ in seen] == list(range(info["steps"]))          # after every update, t = 0, …, T − 1
    assert seen[-1][1].shape == (4, 3)
    np.testing.assert_array_equal(seen[-1][1].reshape(W1.shape), W1)   # the last observation is the result
    assert not np.array_equal(seen[0][1], seen[-1][1])


def test_psgd_many_observe_is_inert_for_permutation_sampling():
    X, Y = _data(seed=1)
    a = psgd_many(X, Y, "logistic", 2, 7, "inv_sqrt", np.random.default_rng(3), l2=0.01)
    ts = []
    b = psgd_many(X, Y, "logistic", 2, 7, "inv_sqrt", np.random.default_rng(3), l2=0.01,
                  observe=lambda t, W: ts.append(t))
    np.testing.assert_array_equal(a, b)
    assert ts == list(range(2 * math.ceil(120 / 7)))


def test_replacement_llr_with_one_draw_is_the_bernoulli_transcript_llr():
    """b = 1: the multiplicity is Bernoulli(1/n), exactly DP-SGD's batch-1 transcript (g = +1 on D, −1 on D′)."""
    r = np.random.default_rng(0)
    y = r.normal(size=(5, 40)) * 1.3 + (r.random((5, 40)) < 0.1)
    a = S.replacement_gaussian_transcript_llr(y, 1.0, -1.0, 1, 10, sigma=1.3, c_max=1)
    b = S.subsampled_gaussian_transcript_llr(y, 0.1, sigma=1.3)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert not np.allclose(a, S.replacement_gaussian_transcript_llr(y, 1.0, -1.0, 1, 10, sigma=1.0, c_max=1))


def test_replacement_llr_matches_brute_force_with_censoring():
    r = np.random.default_rng(1)
    b, n, s, C = 4, 3, 0.7, 4                                  # c_max = b: exact, no truncation
    y = r.normal(size=(3, 6))
    gd, gp = -r.random((3, 6)), r.random((3, 6))
    cen = r.integers(-1, 2, size=(3, 6))
    got = S.replacement_gaussian_transcript_llr(y, gd, gp, b, n, sigma=s, censor=cen, c_max=C)
    pi = stats.binom.pmf(np.arange(C + 1), b, 1 / n)

    def like(yv, g, k):
        if k == 0:
            return sum(p * stats.norm.pdf(yv, c * g, s) for c, p in enumerate(pi))
        if k > 0:
            return sum(p * stats.norm.cdf(yv, c * g, s) for c, p in enumerate(pi))
        return sum(p * stats.norm.sf(yv, c * g, s) for c, p in enumerate(pi))
    ref = np.array([sum(math.log(like(y[i, t], gd[i, t], cen[i, t]) / like(y[i, t], gp[i, t], cen[i, t]))
                        for t in range(6)) for i in range(3)])
    np.testing.assert_allclose(got, ref, rtol=1e-10)


def test_replacement_llr_is_a_likelihood_ratio_by_simulation():
    """Exact LLR ⇒ E_D[e^{−L}] = 1 and E_D[L] = KL ≥ 0 (simulated with the mixture drawn as the mechanism does),
    and the median-σ estimate does not break it."""
    r = np.random.default_rng(2)
    R, T, b, n, s, gd, gp = 200_000, 1, 3, 4, 0.8, -0.4, 0.6
    c = r.binomial(b, 1 / n, size=(R, T))
    y = c * gd + s * r.normal(size=(R, T))
    L = S.replacement_gaussian_transcript_llr(y, gd, gp, b, n, sigma=s, c_max=b)
    assert abs(np.mean(np.exp(-L)) - 1.0) < 0.01
    assert np.mean(L) > 0
    assert S.binomial_tail_bound(50, 1 / 72876, 3) * 14576 < 2e-10
    yy = np.array([c_ * gd + s * r.normal(size=2000) for c_ in r.binomial(50, 1e-3, size=(4, 1))])[:, :]
    est = S.replacement_gaussian_transcript_llr(yy, gd, gp, 50, 1000, c_max=3)
    known = S.replacement_gaussian_transcript_llr(yy, gd, gp, 50, 1000, sigma=s, c_max=3)
    assert np.all(np.isfinite(est)) and np.corrcoef(est, known)[0, 1] > 0.9


@pytest.fixture(scope="module")
def tiny():
    """The smoke calibration on a Protein split of 1,000 rows: T = 200 steps of b = 50 (fast)."""
    c = copy.deepcopy(load_config(DEFAULT_CONFIG_PATH, "config/smoke.yaml"))
    c["studies"]["wu2016"]["datasets"]["protein"]["n_train"] = 1000
    return c


@pytest.mark.parametrize("eps", [1.0, 4.0])
def test_bst14_transcript_audit_does_not_flag_the_correct_implementation(tiny, eps):
    r = run_cell(tiny, "bst14", eps, "correct", 0, 200)
    assert np.isfinite(r["eps_lower_gdp"]), "the BST14 audit must report the GDP bound"
    assert not r["fires"], f"correct BST14 at ε={eps}: ε̂ = {r['eps_hat']:.3f} — PRIVACY BUG"


def test_bst14_transcript_audit_catches_the_x0001_twin_at_eps_4(tiny):
    """The GDP bound (200 runs per side) catches it where the split-half bound cannot exceed ≈ 3.3."""
    r = run_cell(tiny, "bst14", 4.0, "noise_x0.001", 0, 200)
    assert r["fires"] and r["eps_lower_gdp"] > 4.0, r["eps_hat"]


def test_bst14_observations_recover_the_noise(tiny):
    """The inverted steps of a real run are the noise (σ√ι on the gradient sum) wherever the canary is absent."""
    from dpbench.audit.sgd import _bst14_observations

    m, b, lam = 1000, 50, 1e-4
    X = np.zeros((m, 1))
    X[-1, 0] = 1.0
    Yk = np.ones((m, 2))
    w = np.zeros((2, 201))

    def observe(t, W):
        w[:, t + 1] = W[:, 0]
    W, info = bst14_many(X, Yk, "logistic", [4.0], 1e-3, np.random.default_rng(0), batch_size=b, passes=10,
                         l2=lam, iota=4.0, observe=observe)
    eta = np.array([info["schedule"](t) for t in range(1, 201)])
    y, cen = _bst14_observations(w, eta, lam, b, info["radius"])
    ok = cen == 0
    s = info["sigma"][0] * 2.0
    assert abs(np.std(y[ok]) / s - 1) < 0.15
    assert np.all(y[cen > 0] < 0) and np.all(y[cen < 0] > 0)       # +R is reached by a negative gradient sum


def test_bst14_tight_audit_runs_at_the_tight_noise_and_bounds_its_pair(tiny):
    """The tight audit trains at bst14_tight_calibration's σ (ι = 4), does not fire, and records the pair's proved
    bound: the tight accountant at noise σ√ι per unit of gradient (the pair moves each side by ≤ L = 1)."""
    from dpbench.privacy.noisy_sgd import bst14_calibration, bst14_tight_calibration, bst14_tight_epsilon

    m, b = 1000, 50
    steps = -(-10 * m // b)
    r = run_cell(tiny, "bst14_tight", 1.0, "correct", 0, 200)
    assert not r["fires"], r["eps_hat"]
    sigma = bst14_tight_calibration(1.0, 1.0 / m, m, steps, b)["sigma"]
    assert sigma < 0.5 * bst14_calibration(1.0, 1.0 / m, m, steps, b)["sigma"]
    assert r["noise_scale"] == pytest.approx(2.0 * sigma)
    assert r["eps_pair"] == pytest.approx(bst14_tight_epsilon(2.0 * sigma, m, steps, b, 1.0 / m))
    assert 0.0 < r["eps_pair"] < 1.0


def test_bst14_tight_twins_scale_the_calibrated_sigma_and_carry_their_pair_bound(tiny):
    from dpbench.studies.audit import twin_pair_epsilon
    from types import SimpleNamespace

    c = run_cell(tiny, "bst14_tight", 1.0, "correct", 0, 200)
    t = run_cell(tiny, "bst14_tight", 1.0, "noise_x0.5", 0, 200)
    assert t["noise_scale"] == pytest.approx(0.5 * c["noise_scale"])
    assert t["eps_pair"] == pytest.approx(c["eps_pair"])
    # at half the noise the pair's bound is the accountant's at the calibrated σ itself: ≈ ε, never above it
    assert c["eps_pair"] < t["eps_pair_variant"] <= 1.0
    assert twin_pair_epsilon(SimpleNamespace(**t)) == t["eps_pair_variant"]


def test_a_calibration_callable_is_used_as_given():
    X, Y = _data()
    seen = []

    def mine(eps, delta, n, steps, b):
        seen.append((eps, delta, n, steps, b))
        return {"sigma": 3.0, "epsilon1": float("nan"), "epsilon2": float("nan")}
    W, info = bst14_many(X, Y, "logistic", [0.5], 1e-3, np.random.default_rng(0), batch_size=5, passes=1,
                         radius=2.0, calibration=mine)
    assert seen == [(0.5, 1e-3, X.shape[0], -(-X.shape[0] // 5), 5)]
    assert info["sigma"][0] == 3.0 and info["calibration"] == "custom"
