"""vdm2020 figures' ``tight`` key: which tight calibrations a figure draws beside their source series, the
defaults of config.yaml, and the config errors that name the key."""

from __future__ import annotations

import copy

import pytest

from dpbench.config import ConfigError
from dpbench.studies import validate_config
from dpbench.studies.vdm2020 import series


def _fig(config, name, **entry):
    cfg = copy.deepcopy(config)
    fig = cfg["studies"]["vdm2020"]["figures"][name]
    fig.pop("tight", None)
    fig.update(entry)
    return cfg


def test_true_adds_every_tight_calibration_that_supports_a_point(tiny_config):
    got = series(_fig(tiny_config, "fig1b", tight=True)["studies"]["vdm2020"], "fig1b")
    assert got[-4:] == ["loss_perturbation_tight", "prediction_sensitivity_tight", "subsample_aggregate_tight",
                        "dpsgd_tight"]
    # δ = 0: prediction sensitivity's and subsample-and-aggregate's are left out (pure composition is tight there)
    got = series(_fig(tiny_config, "fig1a", tight=True)["studies"]["vdm2020"], "fig1a")
    assert got[-1] == "loss_perturbation_tight" and sum(s.endswith("_tight") for s in got) == 1


def test_a_list_adds_only_those_and_methods_still_selects(tiny_config):
    cfg = _fig(tiny_config, "fig3", tight=["subsample_aggregate"])["studies"]["vdm2020"]
    assert [s for s in series(cfg, "fig3") if s.endswith("_tight")] == ["subsample_aggregate_tight"]
    cfg = _fig(tiny_config, "fig3", tight=True, methods=["dpsgd", "non_private"])["studies"]["vdm2020"]
    assert series(cfg, "fig3") == ["dpsgd", "non_private", "dpsgd_tight"]
    assert not [s for s in series(_fig(tiny_config, "fig3")["studies"]["vdm2020"], "fig3") if s.endswith("_tight")]


def test_config_yaml_draws_the_cheap_tight_calibrations(tiny_config):
    cfg = tiny_config["studies"]["vdm2020"]   # the figures' tight entries come from config.yaml
    assert series(cfg, "fig1a")[-1] == "loss_perturbation_tight"
    for name in ("fig1b", "fig2b", "fig3"):
        assert [s for s in series(cfg, name) if s.endswith("_tight")] == [
            "loss_perturbation_tight", "prediction_sensitivity_tight", "subsample_aggregate_tight"]


@pytest.mark.parametrize("name, tight, message", [
    ("fig1a", ["dpsgd"], r"figures\.fig1a\.tight\[0\]: 'dpsgd' is not a series of fig1a"),
    ("fig1a", ["prediction_sensitivity"], r"figures\.fig1a\.tight\[0\]: prediction_sensitivity_tight supports no "
                                          r"point of fig1a"),
    ("fig1b", ["model_sensitivity"], r"figures\.fig1b\.tight"),   # no tight calibration registered: schema enum
    ("fig1b", "yes", r"figures\.fig1b\.tight"),
])
def test_a_bad_tight_entry_is_refused_naming_the_key(tiny_config, name, tight, message):
    with pytest.raises(ConfigError, match=message):
        validate_config(_fig(tiny_config, name, tight=tight))
