import hashlib

import numpy as np
import pytest

from dpbench.data import clear_cache, write_idx


@pytest.fixture(autouse=True)
def _fresh_dataset_cache():
    clear_cache()
    yield
    clear_cache()


def _make_tiny_mnist(folder, n_train=12, n_test=7, shape=(28, 28), label_max=9, seed=0):
    """Write tiny IDX .gz files with the MNIST names; return (file -> md5, arrays)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {
        "train-images-idx3-ubyte.gz": rng.integers(0, 256, (n_train, *shape), dtype=np.uint8),
        "train-labels-idx1-ubyte.gz": rng.integers(0, label_max + 1, n_train, dtype=np.uint8),
        "t10k-images-idx3-ubyte.gz": rng.integers(0, 256, (n_test, *shape), dtype=np.uint8),
        "t10k-labels-idx1-ubyte.gz": rng.integers(0, label_max + 1, n_test, dtype=np.uint8),
    }
    md5s = {}
    for name, a in arrays.items():
        md5s[name] = hashlib.md5(write_idx(folder / name, a).read_bytes()).hexdigest()
    return md5s, arrays


@pytest.fixture
def make_tiny_mnist():
    return _make_tiny_mnist
