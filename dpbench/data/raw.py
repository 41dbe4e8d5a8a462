"""The raw train/test arrays returned by dataset loaders, before any transform."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class RawSplit:
    """Train and test arrays of one dataset: ``X_*`` of shape (n, D), ``y_*`` of shape (n,)."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray

    def __post_init__(self) -> None:
        for X, y, split in ((self.X_train, self.y_train, "train"), (self.X_test, self.y_test, "test")):
            if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
                raise ValueError(f"{split}: need X of shape (n, D) and y of shape (n,), got {X.shape}, {y.shape}")
        if self.X_train.shape[1] != self.X_test.shape[1]:
            raise ValueError(f"train and test dimensions differ: {self.X_train.shape[1]} != {self.X_test.shape[1]}")
