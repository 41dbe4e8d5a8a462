"""Anchor directions on small deterministic runs (tiny substitute data), where they are meaningful at that size.

The remaining claims (rankings, crossovers, humps) need the smoke or paper grids; their checks are tested on
constructed results in test_vdm2020_anchors.py and evaluated on real runs in the report.
"""

import copy

from dpbench.runner import run_series
from dpbench.studies import vdm2020


def means(df):
    return df.groupby("x")["value"].mean()


def test_accuracy_rises_with_the_training_set_size(tiny_config):
    cfg = copy.deepcopy(tiny_config)
    cfg["studies"]["vdm2020"]["figures"]["fig4"].update(n_trains=[100, 640], epsilon=100.0)  # above chance at N=640
    for series in ("non_private", "subsample_aggregate", "model_sensitivity"):
        m = means(run_series(cfg, "vdm2020", "fig4", series))
        assert m[640] > m[100], (series, m.to_dict())


def test_accuracy_falls_with_the_number_of_classes(tiny_config):
    import pandas as pd

    cfg = copy.deepcopy(tiny_config)
    cfg["studies"]["vdm2020"]["figures"]["fig5b"].update(n_classes=[2, 5, 10])
    runs = {s: run_series(cfg, "vdm2020", "fig5b", s) for s in vdm2020.series(cfg["studies"]["vdm2020"], "fig5b")}
    for series, df in runs.items():
        m = means(df)
        assert m[2] > m[10], (series, m.to_dict())
    checks = vdm2020.anchor_checks({"fig5b": pd.concat(runs.values())}).set_index("claim")
    assert checks.loc["claim8a", "passed"], checks.loc["claim8a", "measured"]
