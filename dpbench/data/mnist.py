"""MNIST: the four IDX files, fetched from a mirror or the canonical URLs and verified by md5 (docs/sources.md)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from dpbench.data.download import fetch_file
from dpbench.data.idx import read_idx
from dpbench.data.raw import RawSplit

#: file name -> md5 (the published checksums; docs/sources.md).
MNIST_FILES: dict[str, str] = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}
#: base URLs, tried in this order (each serves the same files).
MNIST_URLS: tuple[str, ...] = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
    "http://yann.lecun.com/exdb/mnist/",
)
MNIST_N_TRAIN = 60_000
MNIST_N_TEST = 10_000
MNIST_IMAGE_SHAPE = (28, 28)
MNIST_N_CLASSES = 10

_ROLES = {
    "X_train": "train-images-idx3-ubyte.gz",
    "y_train": "train-labels-idx1-ubyte.gz",
    "X_test": "t10k-images-idx3-ubyte.gz",
    "y_test": "t10k-labels-idx1-ubyte.gz",
}


def mnist_paths(
    cache_dir: str | os.PathLike,
    mirror: str | os.PathLike | None = None,
    *,
    checksums: Mapping[str, str] | None = None,
    urls: Sequence[str] | None = None,
    progress: bool = True,
) -> dict[str, Path]:
    """Fetch (or find in ``cache_dir``) the four verified MNIST files; role ("X_train", ...) -> path."""
    md5s = dict(MNIST_FILES if checksums is None else checksums)
    missing = set(_ROLES.values()) - set(md5s)
    if missing:
        raise ValueError(f"checksums lack an md5 for {sorted(missing)}")
    bases = MNIST_URLS if urls is None else tuple(urls)  # read at call time (monkeypatchable)
    return {
        role: fetch_file(
            fname,
            [b.rstrip("/") + "/" + fname for b in bases],
            ("md5", md5s[fname]),
            cache_dir,
            mirror=mirror,
            progress=progress,
        )
        for role, fname in _ROLES.items()
    }


def load_mnist(
    cache_dir: str | os.PathLike,
    mirror: str | os.PathLike | None = None,
    *,
    checksums: Mapping[str, str] | None = None,
    urls: Sequence[str] | None = None,
    n_train: int | None = None,
    n_test: int | None = None,
    image_shape: tuple[int, int] = MNIST_IMAGE_SHAPE,
    n_classes: int = MNIST_N_CLASSES,
    progress: bool = True,
) -> RawSplit:
    """Load MNIST as uint8 pixels: X_train (60000, 784), y_train (60000,), X_test (10000, 784), y_test.

    Files are cached in ``cache_dir`` (fetched from ``mirror`` first, then :data:`MNIST_URLS`; see
    :func:`dpbench.data.download.fetch_file`). ``checksums`` (file name -> md5), ``urls`` (base URLs) and the
    expected sizes default to the module constants (read at call time); overriding them lets tests load tiny
    files of the same format. The shapes and the label range ``0..n_classes-1`` are verified. Raises ``DownloadError`` if a file cannot be obtained.
    """
    paths = mnist_paths(cache_dir, mirror, checksums=checksums, urls=urls, progress=progress)
    arrays = {role: read_idx(p) for role, p in paths.items()}
    expected_n = {
        "train": MNIST_N_TRAIN if n_train is None else n_train,
        "test": MNIST_N_TEST if n_test is None else n_test,
    }
    out = {}
    for split in ("train", "test"):
        X, y = arrays[f"X_{split}"], arrays[f"y_{split}"]
        where = f"MNIST {split} ({paths[f'X_{split}'].name}, {paths[f'y_{split}'].name})"
        if X.ndim != 3 or X.shape[1:] != tuple(image_shape):
            raise ValueError(f"{where}: images have shape {X.shape}, expected (n, {image_shape[0]}, {image_shape[1]})")
        if X.shape[0] != expected_n[split] or y.shape[0] != expected_n[split]:
            raise ValueError(
                f"{where}: {X.shape[0]} images and {y.shape[0]} labels, expected {expected_n[split]} of each"
            )
        if y.size and int(y.max()) >= n_classes:
            raise ValueError(f"{where}: labels must lie in 0..{n_classes - 1}, found {int(y.max())}")
        out[f"X_{split}"] = X.reshape(X.shape[0], -1)
        out[f"y_{split}"] = y.astype(np.int64)
    return RawSplit(**out)
