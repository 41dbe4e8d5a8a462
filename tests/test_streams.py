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


def test_solver_precision_changes_the_cache_key_not_the_noise(tiny_config):
    """``lbfgs.float32`` picks how loss perturbation is solved, not what is computed: switching it recomputes the
    cells (new cache keys) with the same noise draws, so the results differ by the solver tolerance only."""
    import copy

    from dpbench.methods.base import SOLVER_PARAMS, Cell

    a = Cell("m", "p", (("float32", True), ("l2", 0.1)), 1.0, 0.0, None, 0)
    b = Cell("m", "p", (("float32", False), ("l2", 0.1)), 1.0, 0.0, None, 0)
    assert a.key != b.key and a.stream_key == b.stream_key and "float32" in SOLVER_PARAMS
    assert Cell("m", "p", (("l2", 0.1),), 1.0, 0.0, None, 0).stream_key == a.stream_key
    assert Cell("m", "p", (("float32", True), ("l2", 0.2)), 1.0, 0.0, None, 0).stream_key != a.stream_key
    cfg = {False: tiny_config, True: copy.deepcopy(tiny_config)}
    lb = cfg[True]["studies"]["vdm2020"]["lbfgs"]
    lb["float32"] = not lb.get("float32", True)
    f64, f32 = (run_series(cfg[k], "vdm2020", "fig1a", "loss_perturbation") for k in (False, True))
    assert not set(f64["cell_key"]) & set(f32["cell_key"])
    np.testing.assert_allclose(f64["value"].to_numpy(), f32["value"].to_numpy(), atol=0.02)
