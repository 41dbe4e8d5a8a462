"""A plugin's method with a train hook joins the membership study when its name is in ``methods``: the config
validates, the attack figure's series trains it (its models keyed by its own file's code hash) and its rows carry
its label; an unknown name is still named in the error."""

from __future__ import annotations

import pytest

from dpbench.config import ConfigError
from dpbench.studies import membership as S
from dpbench.studies.extensions import load_plugins
from dpbench.studies.membership import training as mc
from tests.extending.test_extending import doc_files
from tests.membership.test_canary_audit import study_config


@pytest.fixture()
def estimator_plugin(tmp_path, isolated_registries):
    path = tmp_path / "estimators.py"
    path.write_text(doc_files()["myext/estimators.py"])
    load_plugins({"plugins": [str(path)]})
    return "sk_noisy_centroid"


def test_a_plugin_method_joins_the_attack_figure(tmp_path, data_dir, estimator_plugin):
    assert estimator_plugin in mc.plugin_methods()
    cfg = study_config(tmp_path, data_dir, ["fig_attack_diabetes"], methods=["non_private", estimator_plugin],
                       epsilons=[1.0], repetitions=1, datasets={"diabetes": {"n_members": 50}})
    assert S.series(cfg["studies"]["membership"], "fig_attack_diabetes") == ["non_private", estimator_plugin]
    df = S.run_series(cfg, "fig_attack_diabetes", estimator_plugin, n_jobs=1)
    assert set(df["method"]) == {estimator_plugin}
    assert set(df["method_label"]) == {"noisy centroids (sklearn-style)"}
    assert df["value"].notna().any()
    import pandas as pd

    both = pd.concat([S.run_series(cfg, "fig_attack_diabetes", "non_private", n_jobs=1), df])
    S.plot(cfg, "fig_attack_diabetes", both, tmp_path / "fig.png")          # its legend and style from the registry
    assert (tmp_path / "fig.png").stat().st_size > 0
    settings = mc._training_settings(cfg["studies"]["membership"], estimator_plugin)
    assert settings["plugin_code"] and settings["delta"] == 0.0


def test_unknown_membership_method_is_named(tmp_path, data_dir):
    with pytest.raises(ConfigError, match=r"methods\[1\].*no_such_method"):
        study_config(tmp_path, data_dir, ["fig_attack_diabetes"], methods=["non_private", "no_such_method"])
