"""Every public ``Method.train`` / ``releases`` refuses input that would void its guarantee (issue: the library
released output perturbation, loss perturbation, SCS13 and BST14 models on rows with ‖x‖ = 6.4 at the noise
scale of ‖x‖ ≤ 1): rows outside the unit ball (for the methods whose calibration assumes it), non-finite values,
an empty X, labels outside 0..C−1, δ ≥ 1, ε ≤ 0. DP-SGD clips every per-example gradient, so it takes any norm."""

import copy

import numpy as np
import pytest

from dpbench.config import DEFAULT_CONFIG_PATH
from dpbench.studies import load_config
from dpbench.studies.membership import training as mc


@pytest.fixture(scope="module")
def cfg():
    c = copy.deepcopy(load_config(DEFAULT_CONFIG_PATH, "config/smoke.yaml")["studies"]["membership"])
    c["training"]["dpsgd"]["epochs"] = 1
    return c


def _data(n=40, seed=0):
    g = np.random.default_rng(seed)
    X = g.standard_normal((n, 3))
    X /= 2 * np.linalg.norm(X, axis=1, keepdims=True)
    return np.c_[X, np.full(n, 0.5)], (X[:, 0] > 0).astype(np.int64)


def _train(cfg, name, X, y, eps=1.0, delta=None, C=2):
    m = mc.method_object(cfg, name, C)
    d = mc.method_delta(cfg, name) if delta is None else delta
    return m.train(X, y, C, eps, d, np.random.default_rng(1))


@pytest.mark.parametrize("name", mc.METHODS)
def test_out_of_domain_input_is_refused(cfg, name):
    X, y = _data()
    _train(cfg, name, X, y)                                   # in the domain: trains
    big = X.copy()
    big[3] *= 6.4 / np.linalg.norm(big[3])                    # one row of norm 6.4
    m = mc.method_object(cfg, name, 2)
    if m.unit_ball:
        with pytest.raises(ValueError, match="‖x‖ ≤ 1"):
            _train(cfg, name, big, y)
    else:
        _train(cfg, name, big, y)                             # clips (DP-SGD) or is not private
    for bad, what in ((np.where(np.arange(X.size).reshape(X.shape) == 5, np.nan, X), "finite"),
                      (np.where(np.arange(X.size).reshape(X.shape) == 5, np.inf, X), "finite"),
                      (X[:0], "at least one row")):
        with pytest.raises(ValueError, match=what):
            _train(cfg, name, bad, y[: len(bad)])
    with pytest.raises(ValueError, match="labels"):
        _train(cfg, name, X, np.where(np.arange(len(y)) == 2, 2, y))
    with pytest.raises(ValueError, match="delta"):
        _train(cfg, name, X, y, delta=1.0)
    if m.kind != "baseline":
        with pytest.raises(ValueError, match="epsilon"):
            _train(cfg, name, X, y, eps=0.0)


def test_dpsgd_replace_one_budget_refuses_delta_one():
    from dpbench.privacy.attack_bounds import add_remove_budget_for_replace_one

    with pytest.raises(ValueError, match="delta"):
        add_remove_budget_for_replace_one(1.0, 1.0)
    assert add_remove_budget_for_replace_one(1.0, 1e-5)[1] < 1e-5


def test_releases_are_checked_too(cfg):
    """The audit's many-release entry point goes through the same check."""
    X, y = _data()
    big = X.copy()
    big[0] *= 3.0 / np.linalg.norm(big[0])
    m = mc.method_object(cfg, "bolt_on", 2)
    with pytest.raises(ValueError, match="‖x‖ ≤ 1"):
        m.releases(big, y, 2, 1.0, 0.0, np.random.default_rng(0), 2, np.random.default_rng(1))


def test_learners_refuse_non_finite_input_and_tiny_sigma_is_infinite_epsilon():
    import math

    from dpbench.learn.mlp import fit_mlp
    from dpbench.methods.mlp import dpsgd_mlp
    from dpbench.privacy import dpsgd_epsilon

    X, y = _data()
    X[1, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        fit_mlp(X, y, 2, 4, epochs=1, batch_size=4, learning_rate=0.1, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="finite"):
        dpsgd_mlp(X, y, 2, 4, 1.0, 0.1, 4, 1, 0.1, np.random.default_rng(0))
    assert dpsgd_epsilon(1e-310, 0.01, 10, 1e-5) == math.inf       # was a ZeroDivisionError
