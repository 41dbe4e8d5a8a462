"""The generator probe of every audit cell (dpbench.audit.core.generator_probe): a release that ignores the
generator it is given — the twin ``bug_fixed_seed`` of every registered method — is caught with ε̂ = ∞, while the
correct releases pass the probe. The audits call vectorised public releases (``n_runs`` trainings, ``size`` noise
draws), inside which a fixed-seed release still draws independent values: the probe is what catches it."""

import math

import numpy as np
import pytest

from dpbench.audit import REGISTRY, run_cell, variants
from dpbench.audit.core import FIXED_SEED, generator_probe, twins
from dpbench.audit.registry import MethodAudit
from dpbench.config import DEFAULT_CONFIG_PATH
from dpbench.studies import load_config


@pytest.fixture(scope="module")
def config():
    return load_config(DEFAULT_CONFIG_PATH, "config/smoke.yaml")


def test_every_method_has_the_fixed_seed_twin():
    for name in REGISTRY:
        assert FIXED_SEED in twins(name) and FIXED_SEED in variants(name), name


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_fixed_seed_twin_is_caught_and_correct_release_passes_the_probe(config, name):
    for eps in (1.0, 4.0):
        r = run_cell(config, name, eps, FIXED_SEED, 0, 50)
        assert r["generator_independent"] and r["fires"] and math.isinf(r["eps_hat"]), (name, eps)
    p = generator_probe(config, name, 1.0, "correct", f"test/{name}")
    assert not p["generator_independent"], name


def test_probe_sees_a_fixed_seed_inside_a_vectorised_release(config, monkeypatch):
    """A vectorised release whose sampler seeds itself: within one call its draws are independent, so the
    likelihood-ratio bound alone stays below ε; the probe catches it (ε̂ = ∞) — and the same release drawing from
    the generator it is given passes."""
    eps, n = 1.0, 4000

    def run(buggy):
        def release(config, epsilon, twin, trials, rng):
            r = np.random.default_rng(7) if buggy else rng
            s_d = 1.0 + r.laplace(0.0, 1.0 / epsilon, trials)       # counting query, sensitivity 1
            s_dp = 0.0 + r.laplace(0.0, 1.0 / epsilon, trials)
            return {"s_d": s_d, "s_dp": s_dp, "delta": 0.0, "eps_pair": epsilon}
        return release

    for buggy in (False, True):
        monkeypatch.setitem(REGISTRY, "_vector_laplace", MethodAudit(
            name="_vector_laplace", label="vectorised Laplace", study="audit", run=run(buggy), twins=()))
        r = run_cell(config, "_vector_laplace", eps, "correct", 0, n)
        assert r["generator_independent"] is buggy
        assert r["fires"] is buggy
        if not buggy:
            assert r["eps_hat"] <= eps


def test_probe_does_not_fire_on_a_release_that_is_constant_on_both_sides(config, monkeypatch):
    """Deterministic but equal on D and D′: nothing separates the pair, so the probe does not claim ε = ∞ (the
    release leaks nothing on this pair; the likelihood-ratio bound then decides, here 0)."""
    def release(config, epsilon, twin, trials, rng):
        return {"s_d": np.zeros(trials), "s_dp": np.zeros(trials), "delta": 0.0}

    monkeypatch.setitem(REGISTRY, "_constant", MethodAudit(name="_constant", label="constant", study="audit",
                                                            run=release, twins=()))
    r = run_cell(config, "_constant", 1.0, "correct", 0, 200)
    assert not r["generator_independent"] and not r["fires"]
