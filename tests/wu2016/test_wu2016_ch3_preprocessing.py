"""wu2016 ch. 3's preparation is row-wise (MNIST: fixed Gaussian projection; every dataset: per-row unit norm,
thesis §3.3): replacing one raw record changes at most one prepared record, so the ε of every trained model covers
the preprocessing (privacy as labelled; the rows record ``preprocessing_data_dependent = False``)."""

import numpy as np

from dpbench.config import DEFAULT_CONFIG_PATH
from dpbench.studies import load_config
from tests.raw_neighbours import halves_dataset as _ds
from tests.raw_neighbours import outlier_neighbours as _neighbours
from dpbench.studies.wu2016 import ch3_data as ch3


def test_wu2016_ch3_preparation_changes_one_record(monkeypatch):
    cfg = load_config(DEFAULT_CONFIG_PATH)
    for name, D in (("mnist", 784), ("covertype", 54)):
        X, Xp = _neighbours(400, D, 2)
        y = np.arange(400) % 10 if name == "mnist" else np.where(np.arange(400) % 2 == 0, 1, -1)
        out = []
        for A in (X, Xp):
            monkeypatch.setattr(ch3, "load_dataset", lambda *a, A=A, **kw: _ds(name, A, y, 10 if name == "mnist" else 2))
            out.append(ch3._prepare(cfg, name)["X_train"])
        assert np.flatnonzero(np.any(out[0] != out[1], axis=1)).tolist() == [3]
        assert ch3.preprocessing_label(name)[1] is False
