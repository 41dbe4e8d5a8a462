"""Raw neighbouring datasets for the whole-pipeline preprocessing tests: a generated dataset split in halves,
and a neighbour that replaces one raw record by a worst-case outlier."""

import numpy as np

from dpbench.data.registry import Dataset


def halves_dataset(name, X, y, n_classes):
    h = X.shape[0] // 2
    return Dataset(name=name, variant=name, is_substitute=False, X_train=X[:h], y_train=y[:h], X_test=X[h:],
                   y_test=y[h:], n_classes=n_classes, description="generated")


def outlier_neighbours(n, D, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, D))
    Xp = X.copy()
    Xp[3] = 1e6 * np.arange(1, D + 1)            # a worst-case outlier record
    return X, Xp
