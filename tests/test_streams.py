"""Random streams are keyed by what is computed, not by the code that computes it (dpbench.rng.stream_key): an
edit that changes a method's or a study's code hash (a docstring, a caption, an anchor check) recomputes the
cells — their cache keys change — and gives bit-identical values."""

import numpy as np

from dpbench.rng import CODE_FIELDS, stream_key
from dpbench.runner import run_series


def test_stream_key_ignores_only_the_code_fields():
    payload = {"kind": "k", "rep": 1, "code": "a", "train_code": "b", "attack_code": "c"}
    assert stream_key(payload) == stream_key({**payload, "code": "edited", "train_code": "x"})
    assert stream_key(payload) != stream_key({**payload, "rep": 2})
    assert set(CODE_FIELDS) == {"code", "train_code", "attack_code"}


def test_a_code_edit_recomputes_a_cell_study_with_identical_values(tiny_config, monkeypatch):
    from dpbench.methods.loss_perturbation import LossPerturbation

    before = run_series(tiny_config, "vdm2020", "fig1a", "loss_perturbation")
    monkeypatch.setattr(LossPerturbation, "code_hash", classmethod(lambda cls: "edited"))
    after = run_series(tiny_config, "vdm2020", "fig1a", "loss_perturbation")
    assert not set(before["cell_key"]) & set(after["cell_key"])          # new cache keys: recomputed
    np.testing.assert_array_equal(before["value"].to_numpy(), after["value"].to_numpy())


def test_a_code_edit_recomputes_a_unit_study_with_identical_values(tiny_config, monkeypatch):
    from dpbench.studies.wu2016 import ch3_compute as ch3

    args = (tiny_config, "covertype", "bolt_on", "convex", (1,), [0.5, 2.0], 10, 1, 0)
    before = ch3.train_unit(*args)
    monkeypatch.setattr(ch3, "code_hash", lambda: "edited")
    after = ch3.train_unit(*args)
    assert before["acc"] == after["acc"] and before["noise_scale"] == after["noise_scale"]


def test_a_problem_preparation_edit_recomputes_vdm2020_cells_with_identical_values(tiny_config, monkeypatch):
    from dpbench.studies import vdm2020
    from dpbench.studies.vdm2020 import data

    before = run_series(tiny_config, "vdm2020", "fig1a", "loss_perturbation")
    monkeypatch.setattr(data, "preparation_code_hash", lambda: "edited")
    vdm2020._problem.cache_clear()
    try:
        after = run_series(tiny_config, "vdm2020", "fig1a", "loss_perturbation")
    finally:
        vdm2020._problem.cache_clear()
    assert not set(before["cell_key"]) & set(after["cell_key"])          # re-prepared, cells recomputed
    np.testing.assert_array_equal(before["value"].to_numpy(), after["value"].to_numpy())
