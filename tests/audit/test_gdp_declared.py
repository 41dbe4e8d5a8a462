"""The μ-GDP bound only where the method declares a Gaussian composition: on a pure-ε mechanism it overstates ε
(a false privacy bug), so an audit that asks for it without the declaration is refused."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbench.audit import REGISTRY, run_cell
from dpbench.audit import stats as S
from dpbench.audit.registry import MethodAudit
from dpbench.config import DEFAULT_CONFIG_PATH
from dpbench.studies import load_config


def _laplace_run(config, epsilon, twin, trials, rng):
    """The Laplace mechanism on a counting query (sensitivity 1): a correct ε-DP release; statistic = output."""
    b = 1.0 / epsilon
    return {"s_d": rng.laplace(1.0, b, trials), "s_dp": rng.laplace(0.0, b, trials), "delta": 1e-5,
            "eps_pair": float(epsilon), "gdp": True}


def test_the_gdp_bound_overstates_a_pure_epsilon_mechanism():
    rng = np.random.default_rng(3)
    for eps, false_alarm in ((1.0, 3.0), (4.0, 12.0)):     # measured 3.41 and 14.55 (seed 3)
        s_d, s_dp = rng.laplace(1, 1 / eps, 20_000), rng.laplace(0, 1 / eps, 20_000)
        assert S.gdp_epsilon_lower_bound(s_d, s_dp, 1e-5, 0.05)["eps_lower"] > false_alarm
        assert S.epsilon_lower_bound_split(s_d, s_dp, 1e-5, rng, 0.05)["eps_lower"] <= eps   # no model: sound


def test_undeclared_gdp_is_refused_and_declared_gdp_is_used(monkeypatch):
    config = load_config(DEFAULT_CONFIG_PATH)
    monkeypatch.setitem(REGISTRY, "toy_laplace", MethodAudit(name="toy_laplace", label="toy", study="audit",
                                                             run=_laplace_run, twins=()))
    with pytest.raises(ValueError, match="gaussian_composition=True.*false privacy bug"):
        run_cell(config, "toy_laplace", 1.0, trials=5_000)
    monkeypatch.setitem(REGISTRY, "toy_laplace", MethodAudit(name="toy_laplace", label="toy", study="audit",
                                                             run=_laplace_run, twins=(), gaussian_composition=True))
    r = run_cell(config, "toy_laplace", 1.0, trials=5_000)
    assert math.isfinite(r["eps_lower_gdp"]) and r["eps_hat"] == max(r["eps_lower"], r["eps_lower_gdp"])


def test_only_gaussian_compositions_declare_it():
    assert sorted(n for n, m in REGISTRY.items() if m.gaussian_composition) == ["bst14", "bst14_tight", "dpsgd_mlp", "dpsgd_mlp_tensors",
                                                                                 "dpsgd_softmax", "dpsgd_softmax_tight"]


def test_audit_legends_and_captions_speak_words():
    from types import SimpleNamespace

    from dpbench.studies.audit import twin_pair_epsilon, variant_label

    assert variant_label("mean_laplace", "correct") == "correct"
    assert variant_label("mean_laplace", "noise_x0.5") == "noise × 0.5 (twin)"
    assert variant_label("model_sensitivity", "bug_addremove_sensitivity") == "bug: addremove sensitivity"
    pure = SimpleNamespace(variant="noise_x0.5", delta=0.0, eps_pair=1.0, eps_pair_variant=float("nan"))
    assert twin_pair_epsilon(pure) == 2.0                  # pure-ε noise halved: the pair's ε doubles
    bug = SimpleNamespace(variant="bug_l2_sensitivity", delta=0.0, eps_pair=1.0, eps_pair_variant=float("nan"))
    assert math.isnan(twin_pair_epsilon(bug))              # unknown: not the correct method's 1.0
