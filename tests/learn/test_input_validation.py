"""The learners' public functions reject bad inputs with a ValueError naming the argument (finding: NaN in X
used to give θ = 0 silently, ∞ or l2 < 0 a diverging θ, n_classes = 1 a degenerate model, empty X a
ZeroDivisionError, mismatched shapes raw numpy errors)."""

from __future__ import annotations

import numpy as np
import pytest

from dpbench.learn.softmax import accuracy, fit_softmax, fit_softmax_many
from dpbench.methods.dpsgd import dpsgd_softmax

rng = np.random.default_rng(0)
X = rng.normal(size=(20, 3))
X /= np.linalg.norm(X, axis=1, keepdims=True)
y = rng.integers(0, 3, 20)


def with_value(i, j, v):
    Z = X.copy()
    Z[i, j] = v
    return Z


@pytest.mark.parametrize("kwargs, match", [
    (dict(X=with_value(3, 1, np.nan)), "X must hold only finite"),
    (dict(X=with_value(0, 0, np.inf)), "X must hold only finite"),
    (dict(X=np.empty((0, 3)), y=np.empty(0, int)), "X must have at least one row"),
    (dict(y=y[:-1]), r"y must have shape \(20,\)"),
    (dict(y=np.where(np.arange(20) == 4, np.nan, y.astype(float))), "y must hold integer class labels"),
    (dict(l2=-1.0), "l2 must be >= 0"),
    (dict(l2=float("nan")), "l2 must be >= 0"),
    (dict(n_classes=1, y=np.zeros(20, int)), "n_classes must be an integer >= 2"),
    (dict(X=X[:, 0]), "X must be 2-D"),
])
def test_fit_softmax_rejects(kwargs, match):
    args = dict(X=X, y=y, n_classes=3, l2=1e-3)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        fit_softmax(args["X"], args["y"], args["n_classes"], args["l2"])


def test_fit_softmax_many_rejects():
    Xs, ys = np.stack([X, X]), np.stack([y, y])
    with pytest.raises(ValueError, match="X must hold only finite"):
        fit_softmax_many(np.stack([X, with_value(1, 1, np.nan)]), ys, 3)
    with pytest.raises(ValueError, match="l2 must be >= 0"):
        fit_softmax_many(Xs, ys, 3, l2=-1)
    with pytest.raises(ValueError, match="n_classes must be an integer >= 2"):
        fit_softmax_many(Xs, np.zeros_like(ys), 1)
    with pytest.raises(ValueError, match="Xs must be 3-D"):
        fit_softmax_many(np.empty((2, 0, 3)), np.empty((2, 0), int), 3)


@pytest.mark.parametrize("kwargs, match", [
    (dict(X=with_value(2, 2, np.nan)), "X must hold only finite"),
    (dict(noise_multiplier=-1.0), "noise_multiplier must be >= 0"),
    (dict(clip=0.0), "clip must be > 0"),
    (dict(learning_rate=float("inf")), "learning_rate must be finite"),
    (dict(n_classes=1), "n_classes must be an integer >= 2"),
])
def test_dpsgd_rejects(kwargs, match):
    args = dict(X=X, n_classes=3, noise_multiplier=1.0, clip=1.0, learning_rate=0.1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        dpsgd_softmax(args.pop("X"), y if args["n_classes"] > 1 else np.zeros(20, int), args.pop("n_classes"),
                      batch_size=5, epochs=1, rng=np.random.default_rng(1), **args)


def test_accuracy_rejects_mismatched_shapes():
    theta = np.zeros((3, 3))
    assert accuracy(theta, X, y) == np.mean(y == 0)
    with pytest.raises(ValueError, match=r"y must have shape \(20,\)"):
        accuracy(theta, X, y[:5])
    with pytest.raises(ValueError, match=r"theta must have shape \(D=3, C\)"):
        accuracy(np.zeros((4, 3)), X, y)
    with pytest.raises(ValueError, match="X must hold only finite"):
        accuracy(theta, with_value(0, 0, np.nan), y)
