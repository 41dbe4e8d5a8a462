"""Shared fixtures: a tiny configuration whose data cache is generated once per test session."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from dpbench.config import DEFAULT_CONFIG_PATH
from dpbench.studies import load_config

TINY = {
    "studies": {
        "vdm2020": {
            "n_train": 640,
            "n_test": 200,
            "repetitions": 2,
            "subsagg_models": 8,
            "cross_validation": {"repetitions": 1, "lambda_grid": [1.0e-3, 1.0e-2], "clip_grid": [1.0],
                                 "fixed": {"l2": 1.0e-3, "clip": 1.0}},
            "lbfgs": {"maxiter": 200, "subsagg_maxiter": 20},
            "dpsgd": {"epochs": 1, "batch_size": 64, "clip_scale": "per_example"},
            "mlp": {"hidden": 8, "non_private": {"epochs": 2}, "subsample_aggregate": {"epochs": 2, "n_models": 4},
                    "dpsgd": {"epochs": 1, "batch_size": 64, "clip_scale": "per_example"}},
            "figures": {
                "fig1a": {"epsilons": [1.0, 10.0]},
                "fig1b": {"epsilons": [0.5, 1.0]},
                "fig2a": {"budgets": [1, 100]},
                "fig2b": {"budgets": [1, 100]},
                "fig3": {"deltas": [1.0e-5, 1.0e-1]},
                "fig4": {"n_trains": [200, 640]},
                "fig5a": {"dims": [5, 20]},
                "fig5b": {"n_classes": [2, 10]},
                "fig6a": {"lambdas": [1.0e-3, 1.0e-1], "epsilons": [1.0]},
                "fig6b": {"n_models": [4, 16]},
                "fig7a": {"epsilons": [1.0]},
                "fig7b": {"budgets": [1, 100]},
            },
        },
        "song2018": {
            "activity": {"persons": [3, 2, 3], "observations": [400, 600]},
            "electricity": {"length": 3000},
            "figures": {
                "fig7_4": {"chain_length": 20, "alphas": [0.2, 0.45], "epsilons": [1.0], "trials": 20,
                           "theta_grid_step": 0.3},
                "table7_1": {"trials": 2},
                "table7_2": {"repeats": 1, "chain_length": 20, "theta_grid_step": 0.4},
                "table7_3": {"epsilons": [1.0], "trials": 2},
                "fig7_5": {"trials": 2},
                # chapters 3-4: disabled here (their own tiny runs: tests/song2018_ch34)
                "fig3_1": None, "fig3_2": None, "fig3_3": None, "fig4_1": None,
                # chapter 5: disabled here (its own tiny runs: tests/song2018_ch5)
                "table5_1": None, "fig5_1": None, "fig5_4": None, "fig5_5": None, "fig5_6": None,
                # chapter 6: disabled here (its own tiny runs: tests/song2018_ch6)
                "fig6_1": None, "fig6_2": None, "table6_1": None, "table6_4": None,
            },
        },
        "wu2016": {
            "repetitions": 1,
            "datasets": {"mnist": {"n_train": 400, "n_test": 200}, "protein": {"n_train": 400, "n_test": 200},
                         "covertype": {"n_train": 400, "n_test": 200}},
            "figures": {
                "fig3_2": {"datasets": ["protein"], "tests": [1, 2], "methods": ["noiseless", "bolt_on"],
                           "passes": 2, "epsilons": {"protein": [0.1, 0.5]}},
                "fig3_3": None,
                "fig3_4": {"datasets": ["covertype"], "epochs": [1], "batch_sizes": [10], "runs": 2, "warmup": 0},
                "fig4_1": {"epsilons": [1.0]},
                "fig4_2": {"epsilons": [1.0], "methods": ["fm", "op_data_independent", "non_private"]},
                "fig4_3": None, "fig4_5": None, "fig4_6": None, "fig4_7": None,
                "fig4_8": {"fractions": [0.5, 1.0], "repetitions": 1, "methods": ["op_tuned_r1"]},
            },
            "ch4": {"repetitions": 1},
        },
        "membership": {
            "datasets": {"diabetes": {"n_members": 40}},
            "methods": ["non_private", "output_perturbation"],
            "epsilons": [1.0], "repetitions": 1, "shadow_models": 2,
            "figures": {"fig_attack_mnist": None, "fig_attack_covertype": None, "fig_attack_diabetes": {},
                        "fig_roc": None, "fig_eps_lower_bound": None, "table_generalisation": None},
        },
        "estimation": {
            "figures": {
                "mean_vs_d": {"n": 200, "dims": [2, 8], "repetitions": 3},
                "cov_vs_d": {"n": 200, "dims": [2, 4], "repetitions": 3},
                "ldp_vs_n": {"ns": [100, 1000], "epsilons": [1.0], "repetitions": 3},
            },
        },
    }
}

# the privacy audit on tiny runs: the smoke profile's reduced audit (without it the whole-workflow tests would
# run the default audit's trial counts — minutes of SCS13 and DP-SGD trials — on the tiny calibrations)
TINY["studies"]["audit"] = yaml.safe_load((Path(DEFAULT_CONFIG_PATH).parent / "config" / "smoke.yaml")
                                          .read_text())["studies"]["audit"]


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("data")


@pytest.fixture
def tiny_config(tmp_path, data_dir):
    """A valid config on tiny substitute data; results and cache in a fresh temporary folder."""
    over = copy.deepcopy(TINY)
    over.update({"results_dir": str(tmp_path / "results"), "figures_dir": str(tmp_path / "figures"),
                 "cache_dir": str(tmp_path / "results" / "cache"),
                 "data": {"cache_dir": str(data_dir), "mnist_source": "substitute", "covertype_source": "substitute",
                    "protein_source": "substitute", "kddcup99_source": "substitute",
                    "diabetes_source": "substitute"}})
    return load_config(DEFAULT_CONFIG_PATH, overrides=over)


@pytest.fixture
def isolated_registries(monkeypatch):
    """The method registries as copies for one test: a plugin it imports (a file under the test's own tmp_path,
    so a module of its own) registers there and is gone after it — otherwise the same plugin imported from
    another path by a later test in the same pytest worker is a second class under a registered name."""
    from dpbench.methods import REGISTRY, TRAINING

    monkeypatch.setattr(REGISTRY, "methods", dict(REGISTRY.methods))
    monkeypatch.setattr(TRAINING, "methods", dict(TRAINING.methods))


@pytest.fixture
def dpbench_log(caplog):
    """``caplog`` that also sees the ``dpbench`` logger's records (the runner stops it propagating to the root
    logger once it has installed its own stderr handler)."""
    import logging

    logger = logging.getLogger("dpbench")
    logger.addHandler(caplog.handler)
    try:
        yield caplog
    finally:
        logger.removeHandler(caplog.handler)
