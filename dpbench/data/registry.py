"""Dataset registry: ``load_dataset(name, ...)`` returns a :class:`Dataset` that records which variant
(real data or a labelled substitute) it holds, so results, figures and the report can carry it."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpbench.data import covertype as _covertype
from dpbench.data import kddcup99 as _kddcup99
from dpbench.data import diabetes as _diabetes
from dpbench.data import mnist as _mnist
from dpbench.data import protein as _protein
from dpbench.data import substitute as _substitute
from dpbench.data import tabular_substitute as _tabular
from dpbench.data.download import DownloadError
from dpbench.data.transforms import add_bias_feature, pca_project, unit_ball_normalise

log = logging.getLogger(__name__)

SOURCES = ("auto", "real", "substitute")


@dataclass(frozen=True, eq=False)
class Dataset:
    """A loaded dataset. Arrays are read-only (they are shared through the in-process cache).

    ``variant`` is what the rows, figures and report record: e.g. ``"mnist"`` or
    ``"substitute:deformed-digits-28x28"``. ``description`` is a one-line label for figure captions.

    Labels: int64. MNIST carries class indices 0..9; the binary datasets ``covertype`` and ``protein``
    (``n_classes == 2``) carry labels in {-1, +1} (the logistic-loss convention of wu2016 ch. 3).
    """

    name: str
    variant: str
    is_substitute: bool
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    description: str

    @property
    def n_train(self) -> int:
        return int(self.X_train.shape[0])

    @property
    def n_test(self) -> int:
        return int(self.X_test.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X_train.shape[1])


@dataclass(frozen=True)
class DatasetEntry:
    """A registered dataset: ``load(cache_dir, mirror, source, seed, n_train, n_test) -> Dataset``.

    ``task``: the kind of data, which says which figures can take it — ``"classification"`` (labels 0..C−1:
    MNIST and the user datasets, :mod:`dpbench.data.user`) or ``""`` (a dataset only its own study reads,
    e.g. the ±1-labelled binary sets of wu2016)."""

    name: str
    description: str
    substitute_variant: str | None
    load: Callable[..., Dataset]
    task: str = ""


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _mnist_real(cache_dir: Path, mirror, seed: int, n_train, n_test) -> Dataset:
    if n_train is not None and n_train > _mnist.MNIST_N_TRAIN:
        raise ValueError(f"real MNIST has {_mnist.MNIST_N_TRAIN} training examples; n_train={n_train} needs the substitute")
    raw = _mnist.load_mnist(cache_dir / "mnist", mirror)
    scale = np.float32(1.0 / 255.0)
    return Dataset(
        name="mnist",
        variant="mnist",
        is_substitute=False,
        X_train=_readonly(raw.X_train[:n_train].astype(np.float32) * scale),
        y_train=_readonly(raw.y_train[:n_train]),
        X_test=_readonly(raw.X_test[:n_test].astype(np.float32) * scale),
        y_test=_readonly(raw.y_test[:n_test]),
        n_classes=10,
        description="MNIST (LeCun et al.), 28×28 handwritten digits",
    )


def _mnist_substitute(cache_dir: Path, seed: int, n_train, n_test) -> Dataset:
    raw = _substitute.load_substitute(
        cache_dir, n_train=n_train or _mnist.MNIST_N_TRAIN, n_test=n_test or _mnist.MNIST_N_TEST, seed=seed
    )
    return Dataset(
        name="mnist",
        variant=_substitute.VARIANT,
        is_substitute=True,
        X_train=_readonly(raw.X_train),
        y_train=_readonly(raw.y_train),
        X_test=_readonly(raw.X_test),
        y_test=_readonly(raw.y_test),
        n_classes=10,
        description=_substitute.DESCRIPTION,
    )


def _tabular_dataset(name: str, variant: str, is_substitute: bool, raw, n_train, n_test, description: str) -> Dataset:
    for arg, v, have in (("n_train", n_train, raw.X_train.shape[0]), ("n_test", n_test, raw.X_test.shape[0])):
        if v is not None and v > have:
            raise ValueError(f"{variant} has {have} {arg[2:]} examples; {arg}={v} needs the substitute")
    return Dataset(
        name=name,
        variant=variant,
        is_substitute=is_substitute,
        X_train=_readonly(np.ascontiguousarray(raw.X_train[:n_train])),
        y_train=_readonly(np.ascontiguousarray(raw.y_train[:n_train])),
        X_test=_readonly(np.ascontiguousarray(raw.X_test[:n_test])),
        y_test=_readonly(np.ascontiguousarray(raw.y_test[:n_test])),
        n_classes=2,
        description=description,
    )


def _tabular_substitute(name: str, seed: int, n_train, n_test) -> Dataset:
    spec = _tabular.SPECS[name]
    raw = _tabular.load_tabular_substitute(name, n_train=n_train, n_test=n_test, seed=seed)
    return _tabular_dataset(name, spec.variant, True, raw, None, None, spec.description)


def _fallback_reason(exc: DownloadError) -> str:
    """Why the real data could not be had, for the fallback warning: a file that was found but rejected (a
    checksum or content mismatch, e.g. in the mirror) first — it is what the user can fix — then the count of the
    other failures with the last one's error."""
    attempts = list(exc.attempts or [])
    if not attempts:
        return str(exc).splitlines()[0]
    rejected = [(loc, why) for loc, why in attempts if why.startswith("ValueError")]
    if rejected:
        loc, why = rejected[0]
        rest = len(attempts) - 1
        return f"{loc} was rejected ({why})" + (f"; {rest} other source(s) failed too, the last with "
                                                f"{attempts[-1][1]}" if rest else "")
    return (f"{attempts[-1][1]}" if len(attempts) == 1 else
            f"all {len(attempts)} sources failed, the last with {attempts[-1][1]}")


def _fallback_loader(name: str, real: Callable[..., Dataset], substitute: Callable[..., Dataset],
                     variant: str, description: str, how: str) -> Callable[..., Dataset]:
    """A registry loader: the real data via ``real(cache_dir, mirror, seed, n_train, n_test)``, the labelled
    substitute via ``substitute(cache_dir, seed, n_train, n_test)``, or (``auto``) the real data with a
    WARNING fallback to the substitute that says how to provide the real files (``how``, with ``{cache}``)."""

    def load(cache_dir: Path, mirror, source: str, seed: int, n_train, n_test) -> Dataset:
        if source == "substitute":
            return substitute(cache_dir, seed, n_train, n_test)
        try:
            return real(cache_dir, mirror, seed, n_train, n_test)
        except DownloadError as exc:
            if source == "real":
                raise
            reason = _fallback_reason(exc)
            log.warning(
                "%s is not available (%s: %s). Using the labelled substitute %r (%s) instead; results, figures "
                "and the report record this variant. To use the real data, %s, or set source='real' to make "
                "this an error.",
                name, exc.filename, reason, variant, description, how.format(cache=cache_dir / name.lower()),
            )
            return substitute(cache_dir, seed, n_train, n_test)

    return load


def _binary_loader(name: str, real: Callable[..., Dataset], how: str) -> Callable[..., Dataset]:
    spec = _tabular.SPECS[name]
    return _fallback_loader(name, real, lambda cache_dir, seed, n_train, n_test: _tabular_substitute(
        name, seed, n_train, n_test), spec.variant, spec.description, how)


def _covertype_real(cache_dir: Path, mirror, seed: int, n_train, n_test) -> Dataset:
    raw = _covertype.load_covertype(cache_dir / "covertype", mirror, seed=seed)
    return _tabular_dataset("covertype", "covertype", False, raw, n_train, n_test,
                            "Forest Covertype (UCI), class 2 vs rest, labels ±1")


def _protein_real(cache_dir: Path, mirror, seed: int, n_train, n_test) -> Dataset:
    raw = _protein.load_protein(cache_dir / "protein", mirror, seed=seed)
    return _tabular_dataset("protein", "protein", False, raw, n_train, n_test,
                            "KDD Cup 2004 Protein (bio_train.dat, random halves), labels ±1")


def _diabetes_real(cache_dir: Path, mirror, seed: int, n_train, n_test) -> Dataset:
    raw = _diabetes.load_diabetes(cache_dir / "diabetes", mirror, seed=seed)
    return _tabular_dataset("diabetes", "diabetes", False, raw, n_train, n_test,
                            "Pima Indians diabetes (LIBSVM `diabetes`), 768 × 8, labels ±1 (+1 diabetic)")


def _diabetes_substitute(cache_dir: Path, seed: int, n_train, n_test) -> Dataset:
    raw = _diabetes.load_diabetes_substitute(seed, n_train, n_test)
    return _tabular_dataset("diabetes", _diabetes.SUBSTITUTE_VARIANT, True, raw, None, None,
                            _diabetes.SUBSTITUTE_SPEC.description)


def _kddcup99_real(cache_dir: Path, mirror, seed: int, n_train, n_test) -> Dataset:
    raw = _kddcup99.load_kddcup99(cache_dir / "kddcup99", mirror, seed=seed)
    return _tabular_dataset("kddcup99", "kddcup99", False, raw, n_train, n_test,
                            "KDDCup99 (10% file), attack (+1) vs normal (-1), seeded 50,000-row subsample")


def _kddcup99_substitute(cache_dir: Path, seed: int, n_train, n_test) -> Dataset:
    raw = _kddcup99.load_kddcup99_substitute(seed, n_train, n_test)
    return _tabular_dataset("kddcup99", _kddcup99.SUBSTITUTE_VARIANT, True, raw, None, None,
                            _kddcup99.SUBSTITUTE_DESCRIPTION)


DATASETS: dict[str, DatasetEntry] = {
    "mnist": DatasetEntry(
        name="mnist",
        description="MNIST 60,000/10,000, 28×28, 10 classes (substitute: deformed scikit-learn digits)",
        substitute_variant=_substitute.VARIANT,
        load=_fallback_loader(
            "MNIST", _mnist_real, _mnist_substitute, _substitute.VARIANT, _substitute.DESCRIPTION,
            f"put the files {', '.join(_mnist.MNIST_FILES)} in a folder and set `data.mirror` in the config "
            "(or copy them to {cache})",
        ),
        task="classification",
    ),
    "covertype": DatasetEntry(
        name="covertype",
        description="Forest Covertype (UCI) class 2 vs rest, 498,010/83,002, 54 features, labels ±1 "
        "(substitute: synthetic Gaussian binary data)",
        substitute_variant=_tabular.SPECS["covertype"].variant,
        load=_binary_loader(
            "covertype", _covertype_real,
            f"put {_covertype.COVTYPE_FILE} (sha256 {_covertype.COVTYPE_SHA256[:12]}…) in a folder and set "
            "`data.mirror` in the config (or copy it to {cache})",
        ),
    ),
    "kddcup99": DatasetEntry(
        name="kddcup99",
        description="KDDCup99 10% file, attack vs normal, seeded 50,000/10,000 subsample, labels ±1 "
        "(substitute: synthetic Gaussian binary data)",
        substitute_variant=_kddcup99.SUBSTITUTE_VARIANT,
        load=_fallback_loader(
            "kddcup99", _kddcup99_real, _kddcup99_substitute, _kddcup99.SUBSTITUTE_VARIANT,
            _kddcup99.SUBSTITUTE_DESCRIPTION,
            f"put {_kddcup99.KDD_FILE} (sha256 {_kddcup99.KDD_SHA256[:12]}…) in a folder and set `data.mirror` in "
            "the config (or copy it to {cache})",
        ),
    ),
    "protein": DatasetEntry(
        name="protein",
        description="KDD Cup 2004 Protein, random halves 72,876/72,875, 74 features, labels ±1 "
        "(substitute: synthetic Gaussian binary data)",
        substitute_variant=_tabular.SPECS["protein"].variant,
        load=_binary_loader(
            "protein", _protein_real,
            f"put {_protein.PROTEIN_FILE} or {_protein.PROTEIN_ARCHIVE} (from {_protein.PROTEIN_PAGE}) in a folder "
            "and set `data.mirror` in the config (or copy bio_train.dat to {cache})",
        ),
    ),
    "diabetes": DatasetEntry(
        name="diabetes",
        description="Pima Indians diabetes (LIBSVM `diabetes`), 614/154, 8 features, labels ±1 "
        "(substitute: synthetic Gaussian binary data)",
        substitute_variant=_diabetes.SUBSTITUTE_VARIANT,
        load=_fallback_loader(
            "diabetes", _diabetes_real, _diabetes_substitute, _diabetes.SUBSTITUTE_VARIANT,
            _diabetes.SUBSTITUTE_SPEC.description,
            f"put the LIBSVM file `{_diabetes.LIBSVM_FILE}` (or `{_diabetes.CSV_FILE}`) in a folder and set "
            "`data.mirror` in the config (or copy it to {cache})",
        ),
    ),
}


def available_datasets() -> list[str]:
    """Names accepted by :func:`load_dataset`."""
    return sorted(DATASETS)


def datasets_for(task: str) -> list[str]:
    """Registered datasets of a kind (e.g. ``"classification"``), built-in first, in registration order."""
    return [n for n, e in DATASETS.items() if e.task == task]


@functools.lru_cache(maxsize=4)
def _load_cached(name, cache_dir, mirror, source, seed, n_train, n_test) -> Dataset:
    return DATASETS[name].load(Path(cache_dir), mirror, source, seed, n_train, n_test)


def clear_cache() -> None:
    """Drop the datasets held by the in-process cache."""
    _load_cached.cache_clear()


def load_dataset(
    name: str,
    *,
    cache_dir: str | os.PathLike = "data",
    mirror: str | os.PathLike | None = None,
    source: str = "auto",
    seed: int = 0,
    n_train: int | None = None,
    n_test: int | None = None,
) -> Dataset:
    """Load a registered dataset (raw features -- MNIST pixels in [0, 1], Covertype/Protein values as in the
    files; no normalisation -- see :func:`prepare_features` and :func:`~dpbench.data.transforms.unit_sphere_rows`).
    Labels: MNIST 0..9; ``covertype`` and ``protein`` are binary with labels in {-1, +1}.

    source: ``"real"`` downloads (``DownloadError`` propagates), ``"substitute"`` uses the registered
    substitute, ``"auto"`` tries the real data and falls back to the substitute with a WARNING.
    n_train / n_test keep the first N examples (the substitute generates exactly that many; train example
    i does not depend on N). Results are cached in-process per argument tuple.
    """
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; known datasets: {', '.join(available_datasets())}")
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    for arg, v in (("n_train", n_train), ("n_test", n_test)):
        if v is not None and (not isinstance(v, (int, np.integer)) or v < 1):
            raise ValueError(f"{arg} must be a positive integer or None, got {v!r}")
    cache_key = str(Path(cache_dir).expanduser().resolve())
    mirror_key = None if mirror in (None, "") else str(mirror)
    n_train = None if n_train is None else int(n_train)
    n_test = None if n_test is None else int(n_test)
    return _load_cached(name, cache_key, mirror_key, source, int(seed), n_train, n_test)


def prepare_features(
    dataset: Dataset, *, bias: bool = True, pca_dim: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(X_train, X_test) scaled into the unit ball by the training maximum norm, optionally PCA-projected
    to ``pca_dim`` dimensions (re-normalised), then optionally augmented with the bias feature
    ``[x, 1]/sqrt(2)``. Every row has ``||x|| <= 1``."""
    Xtr, Xte = unit_ball_normalise(dataset.X_train, dataset.X_test)
    if pca_dim is not None:
        Xtr, Xte = pca_project(Xtr, Xte, pca_dim)
    if bias:
        Xtr, Xte = add_bias_feature(Xtr), add_bias_feature(Xte)
    return Xtr, Xte
