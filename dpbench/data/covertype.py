"""Forest Covertype (UCI ``covtype.data.gz``), binarised as class 2 vs rest (Wu 2016, §3.3 and ch. 3 footnote 5;
docs/studies/wu2016.md#covertype).

Source and verification:

* ``covtype.data.gz`` (the file scikit-learn's ``fetch_covtype`` uses), sha256 :data:`COVTYPE_SHA256`, from
  the mirror first, then :data:`COVTYPE_URLS` (UCI, then figshare; the figshare URL has no file name, the
  cached file is still ``covtype.data.gz``). Download, checksum and atomic caching:
  :func:`dpbench.data.download.fetch_file`.
* Content: 581,012 rows of 55 comma-separated integers (54 features, then the class 1..7); for the real file
  (the published checksum) the class counts :data:`COVTYPE_CLASS_COUNTS` are verified too.

Labels: ``y = +1`` for class 2 (Lodgepole Pine, 283,301 rows, 48.8 %) and ``-1`` otherwise -- the LIBSVM
``covtype.binary`` convention; wu2016 does not state its binarisation [INFERRED: the common LIBSVM reading;
docs/studies/wu2016.md#open-choices item 9].

Split: 498,010 train / 83,002 test by the data-independent permutation
``dpbench.rng.generator(seed, "covertype/split").permutation(581012)`` (first 498,010 entries = train, in
permuted order; the rest = test). wu2016 does not publish its split; any seed gives a uniformly random one.

Features are returned as float32: every value is an integer of magnitude < 2**24, so float32 is exact and
halves the memory of float64 (the study normalises rows to the unit sphere afterwards).

Parsed-array cache: parsing the CSV takes about a second; the parsed integers are kept next to the download in
``covtype.data.gz.parsed-<key>/`` (key = checksum + parser version; see :mod:`dpbench.data.parsed`), so
a later load only reads that folder.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from dpbench.data.download import fetch_file
from dpbench.data.parsed import cached_parse, seeded_split
from dpbench.data.raw import RawSplit

COVTYPE_FILE = "covtype.data.gz"
#: sha256 of ``covtype.data.gz`` (the checksum in scikit-learn's ``fetch_covtype`` metadata, same file).
COVTYPE_SHA256 = "614360d0257557dd1792834a85a1cdebfadc3c4f30b011d56afee7ffb5b15771"
#: full URLs of the file, tried in this order after the mirror.
COVTYPE_URLS: tuple[str, ...] = (
    "https://archive.ics.uci.edu/ml/machine-learning-databases/covtype/covtype.data.gz",
    "https://ndownloader.figshare.com/files/5976039",
)
COVTYPE_N_ROWS = 581_012
COVTYPE_N_FEATURES = 54
COVTYPE_N_TRAIN = 498_010
COVTYPE_N_TEST = 83_002
#: class -> rows in the real file (as counted in the verified file).
COVTYPE_CLASS_COUNTS: dict[int, int] = {1: 211_840, 2: 283_301, 3: 35_754, 4: 2_747, 5: 9_493, 6: 17_367, 7: 20_510}
COVTYPE_POSITIVE_CLASS = 2
COVTYPE_N_CLASSES_RAW = 7
SPLIT_KEY = "covertype/split"
PARSER_VERSION = "v1"


#: Domain of the 10 quantitative Covertype features (file order; covtype.info gives their units), NOT computed
#: from the data: (name, lower, upper). Aspect is an azimuth in degrees, slope in degrees, hillshade an index
#: 0-255; elevation and the distances (metres) get round bounds [INFERRED: covtype.info gives units, not
#: ranges] around the study area (four wilderness areas of the Roosevelt National Forest, northern Colorado);
#: values outside are clipped. The 44
#: remaining columns (wilderness area and soil type indicators) are binary, domain [0, 1].
QUANTITATIVE_DOMAIN: tuple[tuple[str, float, float], ...] = (
    ("Elevation", 1500.0, 4500.0), ("Aspect", 0.0, 360.0), ("Slope", 0.0, 90.0),
    ("Horizontal_Distance_To_Hydrology", 0.0, 2000.0), ("Vertical_Distance_To_Hydrology", -1000.0, 1000.0),
    ("Horizontal_Distance_To_Roadways", 0.0, 8000.0), ("Hillshade_9am", 0.0, 255.0), ("Hillshade_Noon", 0.0, 255.0),
    ("Hillshade_3pm", 0.0, 255.0), ("Horizontal_Distance_To_Fire_Points", 0.0, 8000.0),
)


def domain_bounds(n_features: int = COVTYPE_N_FEATURES) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) of the 54 features from :data:`QUANTITATIVE_DOMAIN` and the binary indicators -- data-independent
    bounds for :func:`~dpbench.data.transforms.domain_minmax`."""
    if n_features != COVTYPE_N_FEATURES:
        raise ValueError(f"Covertype has {COVTYPE_N_FEATURES} features, got {n_features}")
    lo, hi = np.zeros(n_features), np.ones(n_features)
    k = len(QUANTITATIVE_DOMAIN)
    lo[:k] = [a for _, a, _ in QUANTITATIVE_DOMAIN]
    hi[:k] = [b for _, _, b in QUANTITATIVE_DOMAIN]
    return lo, hi


class CovertypeFormatError(ValueError):
    """``covtype.data.gz`` does not have the expected layout or content."""


def read_covtype(path: str | os.PathLike, n_features: int = COVTYPE_N_FEATURES) -> dict[str, np.ndarray]:
    """Parse a gzip CSV of ``n_features + 1`` integers per row: ``{"features": (n, n_features) int16 or
    int32, "classes": (n,) int8}``. Raises :class:`CovertypeFormatError` for a wrong column count, a
    non-integer field, a class outside 1..7 or a file that is not gzip."""
    path = Path(path)
    try:
        with gzip.open(path, "rt") as f:
            A = np.loadtxt(f, delimiter=",", dtype=np.int32, ndmin=2)
    except (ValueError, EOFError, OSError, zlib.error) as exc:
        raise CovertypeFormatError(
            f"{path.name}: cannot parse as gzip CSV of {n_features + 1} integers per row: {exc}"
        ) from None
    if A.shape[1] != n_features + 1:
        raise CovertypeFormatError(f"{path.name}: {A.shape[1]} columns, expected {n_features + 1} (features + class)")
    feats, classes = A[:, :-1], A[:, -1]
    if classes.size and (classes.min() < 1 or classes.max() > COVTYPE_N_CLASSES_RAW):
        raise CovertypeFormatError(
            f"{path.name}: classes must lie in 1..{COVTYPE_N_CLASSES_RAW}, found {classes.min()}..{classes.max()}"
        )
    i16 = np.iinfo(np.int16)
    small = feats.size == 0 or (feats.min() >= i16.min and feats.max() <= i16.max)
    return {"features": feats.astype(np.int16 if small else np.int32), "classes": classes.astype(np.int8)}


def verify_covtype(
    arrays: Mapping[str, np.ndarray],
    n_rows: int,
    n_features: int = COVTYPE_N_FEATURES,
    class_counts: Mapping[int, int] | None = None,
) -> None:
    """Check the row and column counts (and the class counts, if given); raise :class:`CovertypeFormatError`."""
    X, c = arrays["features"], arrays["classes"]
    if X.ndim != 2 or X.shape[1] != n_features or c.shape != (X.shape[0],):
        raise CovertypeFormatError(f"features of shape {X.shape} and classes {c.shape}, expected (n, {n_features})")
    if X.shape[0] != n_rows:
        raise CovertypeFormatError(f"{X.shape[0]} rows, expected {n_rows}")
    if class_counts is not None:
        got = np.bincount(c.astype(np.int64), minlength=COVTYPE_N_CLASSES_RAW + 1)
        have = {k: int(got[k]) for k in range(1, got.size) if got[k]}
        want = {int(k): int(v) for k, v in class_counts.items() if v}
        if have != want:
            raise CovertypeFormatError(f"class counts {have} differ from the expected {want}")


def binarise_covtype(classes: np.ndarray, positive: int = COVTYPE_POSITIVE_CLASS) -> np.ndarray:
    """int64 labels: +1 where ``classes == positive`` (class 2 by default), -1 elsewhere."""
    return np.where(np.asarray(classes) == positive, 1, -1).astype(np.int64)


def covtype_path(
    cache_dir: str | os.PathLike,
    mirror: str | os.PathLike | None = None,
    *,
    checksum: str | None = None,
    urls: Sequence[str] | None = None,
    progress: bool = True,
) -> Path:
    """Fetch (or find in ``cache_dir``) the verified ``covtype.data.gz``. ``checksum`` (sha256) and ``urls``
    default to :data:`COVTYPE_SHA256` and :data:`COVTYPE_URLS` (read at call time)."""
    sha = COVTYPE_SHA256 if checksum is None else checksum
    srcs = COVTYPE_URLS if urls is None else tuple(urls)
    return fetch_file(COVTYPE_FILE, list(srcs), ("sha256", sha), cache_dir, mirror=mirror, progress=progress)


def covtype_arrays(
    cache_dir: str | os.PathLike,
    mirror: str | os.PathLike | None = None,
    *,
    checksum: str | None = None,
    urls: Sequence[str] | None = None,
    n_rows: int | None = None,
    class_counts: Mapping[int, int] | None = None,
    progress: bool = True,
) -> dict[str, np.ndarray]:
    """The verified parsed file in file order: ``{"features": (n, 54) ints, "classes": (n,) int8 in 1..7}``.

    ``n_rows`` defaults to :data:`COVTYPE_N_ROWS`. ``class_counts`` defaults to :data:`COVTYPE_CLASS_COUNTS`
    when the published checksum is used (``checksum=None``) and to no class-count check otherwise (a file
    with another checksum is not the real file, so its fingerprint is unknown).
    """
    path = covtype_path(cache_dir, mirror, checksum=checksum, urls=urls, progress=progress)
    sha = (COVTYPE_SHA256 if checksum is None else checksum).lower()
    n_rows = COVTYPE_N_ROWS if n_rows is None else int(n_rows)
    if class_counts is None and checksum is None:
        class_counts = COVTYPE_CLASS_COUNTS
    key = f"{sha[:16]}-{PARSER_VERSION}"
    return cached_parse(path, key, read_covtype, lambda a: verify_covtype(a, n_rows, class_counts=class_counts))


def load_covertype(
    cache_dir: str | os.PathLike,
    mirror: str | os.PathLike | None = None,
    *,
    seed: int = 0,
    checksum: str | None = None,
    urls: Sequence[str] | None = None,
    n_rows: int | None = None,
    train_size: int | None = None,
    class_counts: Mapping[int, int] | None = None,
    progress: bool = True,
) -> RawSplit:
    """Covertype class 2 vs rest: X_train (498010, 54) float32, y_train int64 in {-1, +1}, X_test (83002, 54).

    The split is ``seeded_split(n_rows, train_size, seed, "covertype/split")`` (module docstring).
    ``checksum``/``urls``/``n_rows``/``train_size``/``class_counts`` default to the module constants (read at
    call time); overriding them lets tests load tiny files of the same format. Raises ``DownloadError`` if
    the file cannot be obtained and :class:`CovertypeFormatError` if its content is not as expected.
    """
    arrays = covtype_arrays(
        cache_dir, mirror, checksum=checksum, urls=urls, n_rows=n_rows, class_counts=class_counts, progress=progress
    )
    X, classes = arrays["features"], arrays["classes"]
    train_size = COVTYPE_N_TRAIN if train_size is None else int(train_size)
    tr, te = seeded_split(X.shape[0], train_size, seed, SPLIT_KEY)
    y = binarise_covtype(classes)
    return RawSplit(
        X_train=X[tr].astype(np.float32), y_train=y[tr], X_test=X[te].astype(np.float32), y_test=y[te]
    )
