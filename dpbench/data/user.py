"""User datasets: classification data in a folder (CSV, Parquet, LIBSVM, IDX or ``.npz`` files), declared in
the config (``datasets:``, docs/extending.md) and registered into :data:`dpbench.data.registry.DATASETS` like the
built-in ones, so every study whose figures take classification data can use it.

A dataset folder holds a training part and, optionally, a test part, named by the format:

=========  ==================================================================================
format     files (``.gz`` allowed where shown)
=========  ==================================================================================
csv        ``train.csv[.gz]``, ``test.csv[.gz]``: a header row; the ``label`` column is the class
parquet    ``train.parquet``, ``test.parquet``: the ``label`` column is the class
libsvm     ``train.libsvm[.gz]``, ``test.libsvm[.gz]``: ``label index:value ...`` lines
idx        ``train-images.idx[.gz]`` + ``train-labels.idx[.gz]`` (and ``test-``): IDX as MNIST's
npz        ``train.npz``, ``test.npz``: array ``X`` (n × ...) and the array named ``label`` (default ``y``)
=========  ==================================================================================

Every other column (array) is a numeric feature. Without a test part, ``test_fraction`` of the rows (a seeded
permutation, ``split_seed``) is the test set. Classes are the sorted distinct labels of both parts (taken as
public, like the number of classes of every dataset), numbered 0..C−1. ``sha256`` ({file name: hex digest})
pins the files: a mismatch is an error naming the file. The variant recorded in every result row is
``user:<name>:<first 12 hex digits of the content hash>``, so results on changed files are never mixed with
earlier ones. Features are returned as written (float64); the study scales them (vdm2020: every row to the unit
ball by its own norm, a data-independent map, so the ε holds from the raw rows on).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dpbench.data.download import file_digest
from dpbench.data.raw import RawSplit

FORMATS = ("csv", "parquet", "libsvm", "idx", "npz")
TASKS = ("classification",)
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class UserDatasetError(ValueError):
    """A user dataset that cannot be read or does not match its declaration; the message names the file or key."""


def _candidates(fmt: str, part: str) -> list[tuple[str, ...]]:
    """File-name tuples that make up ``part`` ("train" or "test") in format ``fmt`` (first existing wins)."""
    if fmt == "csv":
        return [(f"{part}.csv",), (f"{part}.csv.gz",)]
    if fmt == "parquet":
        return [(f"{part}.parquet",)]
    if fmt == "libsvm":
        return [(f"{part}.libsvm",), (f"{part}.libsvm.gz",)]
    if fmt == "idx":  # each of the two files plain or gzip-compressed
        return [(f"{part}-images.idx{a}", f"{part}-labels.idx{b}") for a in ("", ".gz") for b in ("", ".gz")]
    if fmt == "npz":
        return [(f"{part}.npz",)]
    raise UserDatasetError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")


_DIGESTS: dict[tuple, str] = {}


def _sha256(path: Path) -> str:
    """SHA-256 of a file, memoised per (path, size, modification time) within the process."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        _DIGESTS[key] = file_digest(path, "sha256")
    return _DIGESTS[key]


@dataclass(frozen=True)
class UserDataset:
    """A declared user dataset (one entry of the config's ``datasets:``)."""

    name: str
    folder: Path
    format: str
    task: str = "classification"
    label: str | None = None
    sha256: dict = field(default_factory=dict)
    test_fraction: float | None = None
    split_seed: int = 0
    description: str = ""

    @classmethod
    def from_config(cls, name: str, spec: dict, base: str | os.PathLike = ".") -> "UserDataset":
        """From a config entry; ``path`` relative to ``base`` (the run's working folder). Checks what can be
        checked without reading the data (the folder and the files exist, the checksums name files of the
        dataset); :class:`UserDatasetError` naming the key otherwise."""
        key = f"datasets.{name}"
        if not _NAME.match(name):
            raise UserDatasetError(f"{key}: a dataset name must match {_NAME.pattern}")
        fmt = spec.get("format")
        if fmt not in FORMATS:
            raise UserDatasetError(f"{key}.format: {fmt!r} is not one of {', '.join(FORMATS)}")
        if spec.get("task", "classification") not in TASKS:
            raise UserDatasetError(f"{key}.task: {spec.get('task')!r} is not one of {', '.join(TASKS)}")
        if fmt in ("csv", "parquet") and not spec.get("label"):
            raise UserDatasetError(f"{key}.label: required for format {fmt} (the name of the class column)")
        folder = (Path(base) / Path(spec["path"]).expanduser()).resolve()
        if not folder.is_dir():
            raise UserDatasetError(f"{key}.path: {folder} is not a folder")
        ds = cls(name=name, folder=folder, format=fmt, task=spec.get("task", "classification"),
                 label=spec.get("label"), sha256=dict(spec.get("sha256") or {}),
                 test_fraction=spec.get("test_fraction"), split_seed=int(spec.get("split_seed", 0)),
                 description=spec.get("description", ""))
        parts = ds.parts()  # raises if the training part is missing
        if "test" not in parts and ds.test_fraction is None:
            raise UserDatasetError(f"{key}.test_fraction: {folder} has no test part "
                                   f"({' or '.join(' + '.join(c) for c in _candidates(fmt, 'test'))}); add one or "
                                   "set test_fraction")
        names = {p.name for files in parts.values() for p in files}
        for f in ds.sha256:
            if f not in names:
                raise UserDatasetError(f"{key}.sha256.{f}: not a file of the dataset; its files: {sorted(names)}")
        return ds

    def parts(self) -> dict[str, tuple[Path, ...]]:
        """{"train": files, "test": files} (test only if present)."""
        out = {}
        for part in ("train", "test"):
            for names in _candidates(self.format, part):
                paths = tuple(self.folder / n for n in names)
                if all(p.is_file() for p in paths):
                    out[part] = paths
                    break
        if "train" not in out:
            want = " or ".join(" + ".join(c) for c in _candidates(self.format, "train")[:2])
            raise UserDatasetError(f"datasets.{self.name}.path: no training part in {self.folder} "
                                   f"(format {self.format}: expected {want})")
        return out

    def files(self) -> list[Path]:
        return [p for files in self.parts().values() for p in files]

    def fingerprint(self) -> str:
        """SHA-256 over the files' names and contents, and the declaration fields that change the arrays."""
        h = hashlib.sha256()
        for p in sorted(self.files(), key=lambda p: p.name):
            h.update(f"{p.name}:{_sha256(p)}\n".encode())
        h.update(repr((self.format, self.task, self.label, self.test_fraction, self.split_seed)).encode())
        return h.hexdigest()

    @property
    def variant(self) -> str:
        return f"user:{self.name}:{self.fingerprint()[:12]}"

    def verify(self) -> None:
        """Check the declared checksums; :class:`UserDatasetError` naming the file on a mismatch."""
        for p in self.files():
            want = self.sha256.get(p.name)
            if want is not None and _sha256(p) != str(want).lower():
                raise UserDatasetError(f"datasets.{self.name}.sha256.{p.name}: checksum mismatch for {p}: expected "
                                       f"{want}, got {_sha256(p)} (the file changed; if that is intended, update "
                                       "the checksum)")

    def read(self) -> tuple[RawSplit, np.ndarray]:
        """(the train/test split with labels numbered 0..C−1, the original label of each class)."""
        self.verify()
        parts = self.parts()
        if self.format == "libsvm":
            Xs, ys = _read_libsvm(self.name, [parts[k][0] for k in ("train", "test") if k in parts])
        else:
            Xs, ys = zip(*(read_part(self.name, self.format, parts[k], self.label) for k in ("train", "test")
                           if k in parts))
        if len(Xs) == 2 and Xs[0].shape[1] != Xs[1].shape[1]:
            raise UserDatasetError(f"datasets.{self.name}: the training part has {Xs[0].shape[1]} features, the "
                                   f"test part {Xs[1].shape[1]}")
        if len(Xs) == 1:  # no test part: a seeded split
            perm = np.random.default_rng(np.random.SeedSequence([self.split_seed, 12])).permutation(len(ys[0]))
            n_test = int(round(self.test_fraction * len(perm)))
            if not 1 <= n_test < len(perm):
                raise UserDatasetError(f"datasets.{self.name}.test_fraction: {self.test_fraction} of {len(perm)} "
                                       "rows leaves an empty part")
            test, train = np.sort(perm[:n_test]), np.sort(perm[n_test:])
            Xs, ys = (Xs[0][train], Xs[0][test]), (ys[0][train], ys[0][test])
        labels = np.concatenate([np.asarray(y) for y in ys])
        if labels.dtype.kind == "O":
            labels = labels.astype(str)
        classes = np.unique(labels)
        if len(classes) < 2:
            raise UserDatasetError(f"datasets.{self.name}: classification needs at least 2 classes, found "
                                   f"{classes.tolist()}")
        y = np.searchsorted(classes, labels).astype(np.int64)
        n = len(ys[0])
        return RawSplit(Xs[0], y[:n], Xs[1], y[n:]), classes


def _features(name: str, X, path: Path) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    X = X.reshape(len(X), -1)
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise UserDatasetError(f"datasets.{name}: {path} has no rows or no features (shape {X.shape})")
    if not np.isfinite(X).all():
        row = int(np.flatnonzero(~np.isfinite(X).all(axis=1))[0])
        raise UserDatasetError(f"datasets.{name}: {path} has a missing or non-finite value in row {row}")
    return X


def read_part(name: str, fmt: str, files: tuple[Path, ...], label: str | None) -> tuple[np.ndarray, np.ndarray]:
    """(features (n, D) float64, labels (n,)) of one part in format ``fmt`` (not LIBSVM: :func:`_read_libsvm`)."""
    path = files[0]
    if fmt in ("csv", "parquet"):
        import pandas as pd

        try:
            df = pd.read_csv(path) if fmt == "csv" else pd.read_parquet(path)
        except Exception as exc:  # noqa: BLE001 - any reader error: name the file
            raise UserDatasetError(f"datasets.{name}: cannot read {path} as {fmt}: {exc}") from None
        if label not in df.columns:
            raise UserDatasetError(f"datasets.{name}.label: no column {label!r} in {path}; columns: "
                                   f"{list(map(str, df.columns))}")
        feats = df.drop(columns=[label])
        bad = [str(c) for c in feats.columns if not pd.api.types.is_numeric_dtype(feats[c])]
        if bad:
            raise UserDatasetError(f"datasets.{name}: non-numeric feature column(s) {bad} in {path} (encode them "
                                   "as numbers, or drop them)")
        return _features(name, feats.to_numpy(), path), df[label].to_numpy()
    if fmt == "npz":
        key = label or "y"
        try:
            with np.load(path, allow_pickle=False) as z:
                if "X" not in z or key not in z:
                    raise UserDatasetError(f"datasets.{name}: {path} needs arrays 'X' and {key!r}; it has "
                                           f"{sorted(z.files)}")
                X, y = z["X"], z[key]
        except (OSError, ValueError) as exc:
            if isinstance(exc, UserDatasetError):
                raise
            raise UserDatasetError(f"datasets.{name}: cannot read {path} as npz: {exc}") from None
    elif fmt == "idx":
        from dpbench.data.idx import IDXFormatError, read_idx

        try:
            X, y = read_idx(files[0]), read_idx(files[1])
        except IDXFormatError as exc:
            raise UserDatasetError(f"datasets.{name}: {exc}") from None
    else:
        raise UserDatasetError(f"datasets.{name}.format: {fmt!r} is not one of {', '.join(FORMATS)}")
    if np.ndim(y) != 1 or len(y) != len(X):
        raise UserDatasetError(f"datasets.{name}: {path}: {len(X)} rows of features but labels of shape {np.shape(y)}")
    return _features(name, X, path), np.asarray(y)


def _read_libsvm(name: str, paths: list[Path]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Features (dense float64) and labels of LIBSVM files, with one feature count for all of them."""
    from sklearn.datasets import load_svmlight_files

    try:
        loaded = load_svmlight_files([str(p) for p in paths])
    except (OSError, ValueError) as exc:
        raise UserDatasetError(f"datasets.{name}: cannot read {', '.join(map(str, paths))} as LIBSVM: {exc}") from None
    Xs = [_features(name, loaded[2 * i].toarray(), p) for i, p in enumerate(paths)]
    ys = [np.asarray(loaded[2 * i + 1]) for i in range(len(paths))]
    return Xs, ys


# -- registration ----------------------------------------------------------------------------------------------

#: the user datasets registered in this process, by name
USER: dict[str, UserDataset] = {}


def user_dataset(name: str) -> UserDataset | None:
    """The registered user dataset ``name``, or None (a built-in dataset or an unknown name)."""
    return USER.get(name)


def register(ds: UserDataset) -> None:
    """Add ``ds`` to the dataset registry (:func:`dpbench.data.load_dataset` then loads it by name). A name of a
    built-in dataset is an error; registering a name again replaces the earlier declaration."""
    from dpbench.data.registry import DATASETS, DatasetEntry, clear_cache

    if ds.name in DATASETS and ds.name not in USER:
        raise UserDatasetError(f"datasets.{ds.name}: the name of a built-in dataset; choose another name")
    if USER.get(ds.name) == ds:
        return
    USER[ds.name] = ds
    DATASETS[ds.name] = DatasetEntry(
        name=ds.name, description=ds.description or f"user dataset {ds.name} ({ds.format} files in {ds.folder})",
        substitute_variant=None, load=lambda cache_dir, mirror, source, seed, n_train, n_test: load(
            ds, n_train, n_test), task=ds.task)
    clear_cache()


def load(ds: UserDataset, n_train: int | None = None, n_test: int | None = None):
    """The :class:`~dpbench.data.registry.Dataset` of ``ds``; ``n_train`` / ``n_test`` keep at most the first N
    rows of each part (a user dataset may be smaller than a study's default sizes)."""
    from dpbench.data.registry import Dataset, _readonly

    raw, classes = ds.read()
    return Dataset(
        name=ds.name, variant=ds.variant, is_substitute=False,
        X_train=_readonly(np.ascontiguousarray(raw.X_train[:n_train])),
        y_train=_readonly(np.ascontiguousarray(raw.y_train[:n_train])),
        X_test=_readonly(np.ascontiguousarray(raw.X_test[:n_test])),
        y_test=_readonly(np.ascontiguousarray(raw.y_test[:n_test])),
        n_classes=int(len(classes)),
        description=ds.description or f"user dataset {ds.name}: {ds.format} files, classes {classes.tolist()}",
    )
