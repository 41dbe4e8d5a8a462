"""Pima Indians diabetes, the LIBSVM ``diabetes`` file named by wu2016 ch. 4 (Wu 2016, §4.4 and ch. 4 footnote 5;
docs/studies/wu2016.md#diabetes).

Formats accepted (from the mirror, the cache or the canonical URL):

* ``diabetes`` — LIBSVM text, one record per line: ``label idx:value ...`` with indices 1..8 (zero values may be
  omitted), labels ±1, unscaled features (:data:`DIABETES_URLS`).
* ``diabetes.csv`` — the same rows as a headed CSV ``Pregnancies,…,Age,Outcome`` with labels 0/1.

Verification: no checksum is published and copies differ in formatting (LIBSVM's ``33.599998`` is the CSV's
``33.6``; CRLF or LF; header spellings), so the **content** is verified (:func:`verify_diabetes`): 768 rows, 8
features, one class with 268 rows (the diabetic class) and the other with 500, the column sums
:data:`DIABETES_COLUMN_SUMS` (to 1e-6 relative, 0.01 absolute; these give the named errors), and then a
cryptographic digest of the content in file order, :data:`DIABETES_CONTENT_SHA256` (:func:`content_digest`), which
rejects any other values or row order — a fabricated file that matches the counts and column sums, a copy with a
few altered values, a shuffled copy. The digest was established from independent public copies, which all give it:
three byte-identical copies of Kaggle's ``diabetes.csv`` (23,873 bytes, SHA-256 :data:`KAGGLE_CSV_SHA256`), one
that differs only in line endings, the LIBSVM ``diabetes`` rows in file order and a 0/1-labelled LIBSVM
conversion; copies with altered values (14 glucose values; 3 blood-pressure values) fail the column sums, a
shuffled copy fails the digest. The diabetic class is
identified by its count (LIBSVM's copy labels it −1, the CSV 1), and returned as ``y = +1``; the other class is
``y = −1``.

Obtaining and caching: candidates are tried in the order cached file, mirror (a local folder or a base URL
holding ``diabetes`` or ``diabetes.csv``), canonical URL. Each is copied to a temporary file in the cache folder,
parsed and verified, and only then moved into place with ``os.replace`` — a file that fails verification never
becomes (or stays) the cache entry. If nothing works :class:`~dpbench.data.download.DownloadError` says how to
provide the file; the registry then falls back to the labelled substitute (:func:`load_diabetes_substitute`).

Split: 614 train / 154 test by ``seeded_split(768, 614, seed, "diabetes/split")`` (the thesis gives none; the
ch. 4 study re-splits the 768 rows per repetition).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dpbench.data.download import DownloadError, _is_url, _say, attempt_lines, try_sources
from dpbench.data.parsed import seeded_split
from dpbench.data.raw import RawSplit
from dpbench.data.tabular_substitute import SyntheticBinary, TabularSpec

LIBSVM_FILE = "diabetes"
CSV_FILE = "diabetes.csv"
DIABETES_URLS: tuple[str, ...] = ("https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/diabetes",)
DIABETES_N_ROWS = 768
DIABETES_N_FEATURES = 8
DIABETES_N_POSITIVE = 268
DIABETES_N_TRAIN = 614
DIABETES_N_TEST = 154
#: column sums of the unscaled features (pregnancies, glucose, blood pressure, skin thickness, insulin, BMI,
#: diabetes pedigree, age) of the 768 rows, the same in the LIBSVM and the CSV copy.
DIABETES_COLUMN_SUMS = (2953.0, 92847.0, 53073.0, 15772.0, 61286.0, 24570.3, 362.401, 25529.0)
#: SHA-256 of the canonical content (:func:`content_digest` of the 768 rows in file order, as in the UCI, LIBSVM
#: and Kaggle copies).
DIABETES_CONTENT_SHA256 = "d43a44b5d8a02e51ede85f1bc8cdb0fac58abee5b49bba69a87e36ca9f309385"
#: SHA-256 of Kaggle's ``diabetes.csv`` (23,873 bytes, CRLF line ends, no final newline), for reference: any
#: formatting of the same content is accepted.
KAGGLE_CSV_SHA256 = "698c203a14aa31941d2251175330c9199f3ccdb31597abbba2a3e35416257a72"
CSV_COLUMNS = ("Pregnancies", "Glucose", "BloodPressure", "SkinThickness", "Insulin", "BMI",
               "DiabetesPedigreeFunction", "Age", "Outcome")
SPLIT_KEY = "diabetes/split"

#: the labelled substitute: synthetic Gaussian binary data shaped like Pima (8 features, 34.9 % positive).
#: Calibration (seed 0, unit-sphere rows after the LIBSVM [−1, 1] column scaling, non-private logistic
#: regression without intercept, 80/20 splits): test accuracy about 0.77 (real Pima: about 0.77–0.80).
SUBSTITUTE_SPEC = TabularSpec(
    name="synthetic-diabetes", n_features=8, n_train=DIABETES_N_TRAIN, n_test=DIABETES_N_TEST,
    positive_fraction=DIABETES_N_POSITIVE / DIABETES_N_ROWS, separation=1.6, offset=1.0, anisotropy=2.0, flip=0.0,
    description="SUBSTITUTE: synthetic Gaussian binary data shaped like Pima diabetes (768 × 8, 34.9% positive), "
    "not the diabetes data")
SUBSTITUTE_VARIANT = SUBSTITUTE_SPEC.variant


class DiabetesFormatError(ValueError):
    """A diabetes file does not parse or does not have the expected content."""


def parse_libsvm(text: str, n_features: int = DIABETES_N_FEATURES) -> tuple[np.ndarray, np.ndarray]:
    """(X, labels) of LIBSVM text ``label idx:value ...`` (1-based indices ≤ n_features; absent = 0)."""
    rows, labels = [], []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        try:
            labels.append(float(parts[0]))
            x = np.zeros(n_features)
            for tok in parts[1:]:
                i, v = tok.split(":", 1)
                i = int(i)
                if not 1 <= i <= n_features:
                    raise DiabetesFormatError(f"line {lineno}: feature index {i} outside 1..{n_features}")
                x[i - 1] = float(v)
        except (ValueError, IndexError) as exc:
            if isinstance(exc, DiabetesFormatError):
                raise
            raise DiabetesFormatError(f"line {lineno}: not LIBSVM 'label idx:value' format ({exc})") from None
        rows.append(x)
    if not rows:
        raise DiabetesFormatError("no records")
    return np.array(rows), np.array(labels)


def parse_csv(text: str) -> tuple[np.ndarray, np.ndarray]:
    """(X, labels) of the headed CSV ``Pregnancies,…,Age,Outcome``."""
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise DiabetesFormatError("empty CSV") from None
    if tuple(header) != CSV_COLUMNS:
        raise DiabetesFormatError(f"CSV header {header} is not {list(CSV_COLUMNS)}")
    try:
        A = np.array([[float(v) for v in r] for r in reader if r], dtype=np.float64)
    except ValueError as exc:
        raise DiabetesFormatError(f"non-numeric CSV field ({exc})") from None
    if A.ndim != 2 or A.shape[1] != len(CSV_COLUMNS):
        raise DiabetesFormatError(f"CSV rows need {len(CSV_COLUMNS)} fields")
    return A[:, :-1], A[:, -1]


def read_diabetes(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Parse a LIBSVM or CSV diabetes file (CSV if the first line is the CSV header)."""
    try:
        text = Path(path).read_text()
    except UnicodeDecodeError:
        raise DiabetesFormatError(f"{path}: not a text file") from None
    first = text.lstrip().split("\n", 1)[0]
    return parse_csv(text) if first.startswith("Pregnancies") else parse_libsvm(text)


def content_digest(X: np.ndarray, diabetic: np.ndarray) -> str:
    """SHA-256 (hex) of the content independent of formatting: ``np.round(X, 3)`` as little-endian float64 bytes
    (row-major), then one byte per row, 1 for a diabetic row and 0 otherwise. Three decimals are the precision of
    the source (the diabetes pedigree has three; LIBSVM's float32 renderings such as ``33.599998`` round back)."""
    import hashlib

    X = np.round(np.asarray(X, dtype=np.float64), 3) + 0.0   # + 0.0: −0.0 and 0.0 hash alike
    h = hashlib.sha256(np.ascontiguousarray(X, dtype="<f8").tobytes())
    h.update(np.asarray(diabetic, dtype=bool).astype("u1").tobytes())
    return h.hexdigest()


def verify_diabetes(X: np.ndarray, labels: np.ndarray, n_rows: int = DIABETES_N_ROWS,
                    n_positive: int = DIABETES_N_POSITIVE,
                    column_sums: Sequence[float] | None = DIABETES_COLUMN_SUMS,
                    content_sha256: str | None = DIABETES_CONTENT_SHA256) -> np.ndarray:
    """Check the content (shape, class counts, column sums, then :func:`content_digest` against
    ``content_sha256``; None skips a check); return y in {−1, +1} with +1 for the class that has ``n_positive``
    rows."""
    if X.shape != (n_rows, DIABETES_N_FEATURES):
        raise DiabetesFormatError(f"{X.shape[0]} rows × {X.shape[1]} features, expected {n_rows} × {DIABETES_N_FEATURES}")
    if not np.isfinite(X).all():
        raise DiabetesFormatError("features contain NaN or infinity")
    values, counts = np.unique(labels, return_counts=True)
    if len(values) != 2 or n_positive not in counts or (n_rows - n_positive) not in counts:
        raise DiabetesFormatError(f"labels {dict(zip(values.tolist(), counts.tolist()))}: expected two classes of "
                                  f"{n_positive} and {n_rows - n_positive} rows")
    pos = values[list(counts).index(n_positive)] if n_positive != n_rows - n_positive else values.max()
    if column_sums is not None:
        sums = X.sum(axis=0)
        if not np.allclose(sums, column_sums, rtol=1e-6, atol=0.01):
            raise DiabetesFormatError(f"column sums {np.round(sums, 3).tolist()} differ from the fingerprint "
                                      f"{list(column_sums)}")
    y = np.where(labels == pos, 1, -1).astype(np.int64)
    if content_sha256 is not None:
        got = content_digest(X, y == 1)
        if got != content_sha256:
            raise DiabetesFormatError(
                f"content digest sha256 {got[:16]}… is not the Pima data's {content_sha256[:16]}…: the file has "
                f"the expected shape, class counts and column sums but other values or another row order (an "
                f"altered, shuffled or fabricated copy)")
    return y


def _candidates(mirror, urls: Sequence[str]) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    if mirror is not None and str(mirror) != "":
        m = str(mirror)
        for name in (LIBSVM_FILE, CSV_FILE):
            if _is_url(m):
                out.append(("url", m.rstrip("/") + "/" + name, name))
            else:
                out.append(("path", str(Path(m).expanduser() / name), name))
    out.extend(("url", u, LIBSVM_FILE) for u in ([urls] if isinstance(urls, str) else urls))
    return out


def diabetes_arrays(cache_dir: str | os.PathLike, mirror: str | os.PathLike | None = None, *,
                    urls: Sequence[str] | None = None, n_rows: int | None = None, n_positive: int | None = None,
                    column_sums: Sequence[float] | None | str = "default",
                    content_sha256: str | None = DIABETES_CONTENT_SHA256, progress: bool = True,
                    timeout: float = 60.0) -> tuple[np.ndarray, np.ndarray]:
    """(X (768, 8) float64 unscaled, y (768,) int64 ±1 with +1 = diabetic) of a verified file, obtained and
    cached in ``cache_dir`` as the module docstring says. ``urls``/``n_rows``/``n_positive``/``column_sums``/
    ``content_sha256`` default to the module constants (tests pass their own for tiny files; None skips the
    column sums or the digest)."""
    urls = DIABETES_URLS if urls is None else tuple(urls)
    n_rows = DIABETES_N_ROWS if n_rows is None else int(n_rows)
    n_positive = DIABETES_N_POSITIVE if n_positive is None else int(n_positive)
    sums = DIABETES_COLUMN_SUMS if column_sums == "default" else column_sums
    cache_dir = Path(cache_dir).expanduser()
    cache_dir.mkdir(parents=True, exist_ok=True)

    def check(path):
        X, lab = read_diabetes(path)
        return X, verify_diabetes(X, lab, n_rows, n_positive, sums, content_sha256)

    attempts: list[tuple[str, str]] = []
    for name in (LIBSVM_FILE, CSV_FILE):
        target = cache_dir / name
        if target.exists():
            try:
                return check(target)
            except (DiabetesFormatError, OSError) as exc:
                attempts.append((str(target), f"{type(exc).__name__}: {exc}"))
                _say(progress, f"cached {target} fails verification ({exc}); removing it")
                target.unlink()
    def accept(tmp: Path, location: str, name: str):
        arrays = check(tmp)
        os.replace(tmp, cache_dir / name)
        _say(progress, f"verified {cache_dir / name} ({n_rows} rows, {n_positive} diabetic, column sums"
                       + (", content digest)" if content_sha256 else ")"))
        return arrays

    ok, arrays, more = try_sources(_candidates(mirror, urls), cache_dir, accept, timeout=timeout, progress=progress)
    if ok:
        return arrays
    attempts += more
    lines = attempt_lines(attempts)
    raise DownloadError(
        f"could not obtain a valid Pima diabetes file ({n_rows} rows × 8 features, {n_positive} diabetic; no checksum "
        f"is published, so the content is verified by its digest). Sources tried:\n{lines}\n"
        f"To provide it by hand: download the LIBSVM file {DIABETES_URLS[0]} (or the Kaggle/UCI diabetes.csv with "
        f"header {','.join(CSV_COLUMNS)}), put it as `{LIBSVM_FILE}` or `{CSV_FILE}` in a folder and set "
        f"`data.mirror: /that/folder` in the config, or copy it to {cache_dir}.",
        filename=LIBSVM_FILE, attempts=attempts)


def load_diabetes(cache_dir: str | os.PathLike, mirror: str | os.PathLike | None = None, *, seed: int = 0,
                  train_size: int | None = None, progress: bool = True, **kwargs) -> RawSplit:
    """Diabetes: X_train (614, 8), y ±1 (+1 diabetic), X_test (154, 8), unscaled; seeded split (docstring)."""
    X, y = diabetes_arrays(cache_dir, mirror, progress=progress, **kwargs)
    train_size = round(0.8 * X.shape[0]) if train_size is None else int(train_size)
    tr, te = seeded_split(X.shape[0], train_size, seed, SPLIT_KEY)
    return RawSplit(X_train=X[tr], y_train=y[tr], X_test=X[te], y_test=y[te])


def load_diabetes_substitute(seed: int = 0, n_train: int | None = None, n_test: int | None = None) -> RawSplit:
    """The labelled substitute (:data:`SUBSTITUTE_SPEC`): float64 features, labels ±1."""
    gen = SyntheticBinary(SUBSTITUTE_SPEC, seed)
    X_train, y_train = gen.rows("train", SUBSTITUTE_SPEC.n_train if n_train is None else n_train)
    X_test, y_test = gen.rows("test", SUBSTITUTE_SPEC.n_test if n_test is None else n_test)
    return RawSplit(X_train=X_train.astype(np.float64), y_train=y_train, X_test=X_test.astype(np.float64), y_test=y_test)


def libsvm_scale(X: np.ndarray) -> np.ndarray:
    """Per-column min–max scaling to [−1, 1] (LIBSVM ``svm-scale`` defaults, the recipe of ``diabetes_scale``);
    constant columns become 0. DATA-DEPENDENT: the minimum and maximum are those of ``X`` (non-private when ``X``
    holds training rows); :func:`domain_scale` is the data-independent version."""
    X = np.asarray(X, dtype=np.float64)
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return np.where(hi > lo, 2.0 * (X - lo) / span - 1.0, 0.0)


#: Domain of the 8 Pima features (units of the UCI documentation), NOT computed from the data: (name, lower,
#: upper). Round physiological ranges [INFERRED: the source documents no bounds; chosen to contain every
#: plausible value] (0 also encodes a missing value in this file; the study enrolled women aged 21 or more);
#: values outside are clipped.
DOMAIN: tuple[tuple[str, float, float], ...] = (
    ("pregnancies", 0.0, 20.0), ("glucose (2-h OGTT, mg/dl)", 0.0, 250.0), ("blood pressure (diastolic, mm Hg)", 0.0, 150.0),
    ("skin thickness (triceps, mm)", 0.0, 100.0), ("insulin (2-h serum, μU/ml)", 0.0, 900.0), ("BMI (kg/m²)", 0.0, 70.0),
    ("diabetes pedigree function", 0.0, 2.5), ("age (years)", 20.0, 90.0),
)


def domain_scale(X: np.ndarray) -> np.ndarray:
    """Per-column scaling to [−1, 1] like :func:`libsvm_scale`, but with the FIXED bounds of :data:`DOMAIN` (values
    clipped): each row is mapped on its own, so the map is data-independent (costs no privacy)."""
    from dpbench.data.transforms import domain_minmax

    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != DIABETES_N_FEATURES:
        raise ValueError(f"expected (n, {DIABETES_N_FEATURES}) diabetes features, got shape {X.shape}")
    lo = np.array([a for _, a, _ in DOMAIN])
    hi = np.array([b for _, _, b in DOMAIN])
    return 2.0 * domain_minmax(X, lo, hi) - 1.0
