"""The membership study's preparation is row-wise (fixed projection, per-row unit norm, bias
feature): replacing one raw record changes at most one prepared record, so the ε of every trained model covers
the preprocessing (privacy as labelled; the rows record ``preprocessing_data_dependent = False``)."""

import numpy as np

from dpbench.config import DEFAULT_CONFIG_PATH
from dpbench.studies import load_config
from tests.raw_neighbours import halves_dataset as _ds
from tests.raw_neighbours import outlier_neighbours as _neighbours
from dpbench.studies.membership import training as mc


def test_membership_preparation_changes_one_record(monkeypatch):
    cfg = load_config(DEFAULT_CONFIG_PATH)
    cfg["studies"]["membership"]["datasets"]["mnist"]["n_members"] = 50
    for name, D, k in (("mnist", 784, 10), ("diabetes", 8, 2)):
        X, Xp = _neighbours(400, D, 1)
        y = np.arange(400) % k if k > 2 else np.where(np.arange(400) % 3 == 0, 1, -1)
        cfg["studies"]["membership"]["datasets"][name]["n_members"] = 50
        out = []
        for A in (X, Xp):
            monkeypatch.setattr(mc, "load_dataset", lambda *a, A=A, **kw: _ds(name, A, y, k))
            out.append(mc._prepare(cfg, name)["X"])
        assert np.any(out[0] != out[1], axis=1).sum() <= 1
        assert np.linalg.norm(out[1], axis=1).max() <= 1.0
        assert mc.preprocessing_label(cfg, name)[1] is False
