"""The products of a single-precision softmax evaluation and of a DP-SGD step cut into row blocks
(:func:`dpbench.learn.softmax.row_block`, OpenBLAS's small-matrix size): the same sums as whole products up to
rounding, with blocks that do not divide the rows (a ragged last block)."""

import numpy as np
import pytest
from synthetic import unit_ball_data

import dpbench.learn.dpsgd as dpsgd_module
import dpbench.learn.softmax as softmax_module
from dpbench.learn.softmax import _Objective, _Objective32, row_block
from dpbench.methods.dpsgd import dpsgd_softmax

X, Y = unit_ball_data(203, 12, 4, 7)   # 203 rows: blocks of 10 leave a last block of 3


def test_row_block_size():
    assert row_block(785, 10) == 114              # 114 * 785 * 10 = 894,900 <= 9e5 < 115 * 785 * 10
    assert row_block(785, 2) == 573 and row_block(10_000, 100) == 16   # at least 16 rows
    assert row_block(12, 4) * 12 * 4 <= 900_000 < (row_block(12, 4) + 1) * 12 * 4


@pytest.mark.parametrize("rows", [1, 10, 64])
def test_float32_objective_in_row_blocks(monkeypatch, rows):
    theta = np.random.default_rng(0).normal(size=12 * 4)
    f64, g64 = _Objective(X, Y, 4, 0.0, None)(theta)
    whole = _Objective32(X, Y, 4, 0.0, None)
    assert whole.block >= X.shape[0]              # one block at these sizes
    monkeypatch.setattr(softmax_module, "row_block", lambda d, c: rows)
    blocked = _Objective32(X, Y, 4, 0.0, None)
    assert blocked.block == rows
    fw, gw = whole(theta)
    fb, gb = blocked(theta)
    for f, g in ((fw, gw), (fb, gb)):
        assert abs(f - f64) <= 1e-6 * abs(f64) and np.abs(g - g64).max() <= 1e-6 * np.abs(g64).max()
    assert np.abs(gb - gw).max() <= 1e-6 * np.abs(gw).max()


@pytest.mark.parametrize("float32", [False, True])
def test_dpsgd_step_in_row_blocks(monkeypatch, float32):
    """DP-SGD with its per-step products in blocks of 7 rows (batches of ~64: 10 blocks, the last ragged) gives
    the parameters of whole products: equal to float64 rounding, or float32's."""
    kw = dict(noise_multiplier=1.0, clip=0.5, batch_size=64, epochs=2, learning_rate=0.5, n_runs=3,
              float32=float32)
    whole = dpsgd_softmax(X, Y, 4, rng=np.random.default_rng(2), **kw)
    monkeypatch.setattr(dpsgd_module, "row_block", lambda d, c: 7)
    blocked = dpsgd_softmax(X, Y, 4, rng=np.random.default_rng(2), **kw)
    tol = 2e-5 if float32 else 1e-12
    np.testing.assert_allclose(blocked, whole, rtol=0, atol=tol * np.abs(whole).max())
    assert not np.array_equal(blocked, np.zeros_like(blocked))
