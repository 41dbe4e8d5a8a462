"""Bad input fails with one clear error naming the key, before any compute."""

import pytest

from dpbench.config import DEFAULT_CONFIG_PATH, ConfigError, load_config
from pathlib import Path

SMOKE = Path(__file__).resolve().parent.parent / "config" / "smoke.yaml"


def fig(name, **kw):
    return {"studies": {"vdm2020": {"figures": {name: kw}}}}


def test_default_and_smoke_configs_are_valid():
    load_config(DEFAULT_CONFIG_PATH)
    cfg = load_config(DEFAULT_CONFIG_PATH, SMOKE)
    assert cfg["studies"]["vdm2020"]["repetitions"] == 3
    assert cfg["studies"]["vdm2020"]["figures"]["fig1a"]["delta"] == 0.0  # deep merge keeps unlisted keys


@pytest.mark.parametrize(
    "override, key",
    [
        (fig("fig1a", epsilons=[0.1, 0.0]), "studies.vdm2020.figures.fig1a.epsilons[1]"),
        (fig("fig1a", epsilons=[-1.0]), "studies.vdm2020.figures.fig1a.epsilons[0]"),
        (fig("fig1b", delta=1.0), "studies.vdm2020.figures.fig1b.delta"),
        (fig("fig1b", delta=-1e-5), "studies.vdm2020.figures.fig1b.delta"),
        (fig("fig2a", budgets=[0, 10]), "studies.vdm2020.figures.fig2a.budgets[0]"),
        (fig("fig2a", budgets=[1.5]), "studies.vdm2020.figures.fig2a.budgets[0]"),
        (fig("fig2b", epsilon=0), "studies.vdm2020.figures.fig2b.epsilon"),
        (fig("fig1a", epsilons="0.1, 1"), "studies.vdm2020.figures.fig1a.epsilons"),
        (fig("fig1a", epsilons=[]), "studies.vdm2020.figures.fig1a.epsilons"),
        (fig("fig1a", epsilons=[1.0, 1.0]), "studies.vdm2020.figures.fig1a.epsilons"),
        (fig("fig1a", methods=["magic"]), "studies.vdm2020.figures.fig1a.methods[0]"),
        (fig("fig1a", methods=["dpsgd"]), "studies.vdm2020.figures.fig1a.methods[0]"),
        (fig("fig9", epsilons=[1.0], delta=0.0, budget=1), "studies.vdm2020.figures"),
        ({"studies": {"vdm2020": {"repetitions": 0}}}, "studies.vdm2020.repetitions"),
        ({"studies": {"vdm2020": {"n_train": 100, "subsagg_models": 256}}}, "studies.vdm2020.subsagg_models"),
        ({"studies": {"vdm2020": {"dpsgd": {"sampling": "random"}}}}, "studies.vdm2020.dpsgd.sampling"),
        ({"studies": {"nostudy": {}}}, "studies"),
        ({"data": {"mnist_source": "internet"}}, "data.mnist_source"),
        ({"seed": -3}, "seed"),
    ],
)
def test_bad_config_names_the_key(override, key):
    with pytest.raises(ConfigError) as err:
        load_config(DEFAULT_CONFIG_PATH, overrides=override)
    assert f"invalid config: {key}" in str(err.value)


def test_unknown_figure_and_method_in_api():
    from dpbench.studies import vdm2020
    from dpbench.methods import REGISTRY

    with pytest.raises(ValueError, match="unknown figure 'fig99'"):
        vdm2020.figure("fig99")
    with pytest.raises(ValueError, match="unknown method 'magic'"):
        REGISTRY.get("magic")
