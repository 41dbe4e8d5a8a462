"""Protein (KDD Cup 2004 protein homology, ``bio_train.dat``; Wu 2016, §3.3 and ch. 3 footnote 4;
docs/studies/wu2016.md#protein).

Format: one example per line, whitespace (tab) separated: block id, example id, label 0/1, then 74 features;
145,751 labelled rows. The official test file has no labels, so (as in wu2016) the labelled file is split into
random halves: 72,876 train / 72,875 test by the data-independent permutation
``dpbench.rng.generator(seed, "protein/split").permutation(145751)`` (first 72,876 entries = train, in permuted
order). Rows are split individually (the block structure is ignored, as in the thesis). Labels become
``y = 2 * label - 1`` in {-1, +1}; features are float32 (the file has at most 6-7 significant digits).

Obtaining the file: download-only from the KDD Cup 2004 site (http://osmot.cs.cornell.edu/kddcup/datasets.html),
which distributes it inside the archive ``data_kddcup04.tar.gz`` (:data:`PROTEIN_URLS` is the best-known
address of that archive; it may need a registration on the site). **The documented way in is a mirror**: a
local folder (or base URL) holding ``bio_train.dat`` or ``data_kddcup04.tar.gz`` (set ``data.mirror`` in the
config, or pass ``mirror=``); a ``bio_train.dat`` copied directly into the cache folder also works.

Verification: no checksum is published for this file, so **the content is verified instead of the bytes**:
exactly 145,751 rows, 77 numeric columns, labels in {0, 1}, finite features, unique example ids, block ids in
1..303 with 153 distinct blocks (the KDD Cup's format notes: 303 native sequences, split into the training and
test files). No digest is checked: none is published and no copy of the file could be obtained to establish one
(a file with the right shape, ids and labels but other values is therefore not detected). Every candidate (a cached file, the mirror's file,
a file extracted from an archive, a download) is written to a temporary file, parsed and verified, and only
then moved into place with ``os.replace``; a file failing verification never becomes (or stays) the cache
entry. The parsed arrays are cached in ``bio_train.dat.parsed-<key>/`` (key = sha256 of the file + parser
version; :mod:`dpbench.data.parsed`).
"""

from __future__ import annotations

import logging
import os
import shutil
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from dpbench import fsmode
from dpbench.data.download import DownloadError, _is_url, _say, attempt_lines, file_digest, try_sources
from dpbench.data.parsed import cached_parse, seeded_split, write_parsed
from dpbench.data.raw import RawSplit

log = logging.getLogger(__name__)

PROTEIN_FILE = "bio_train.dat"
PROTEIN_ARCHIVE = "data_kddcup04.tar.gz"
#: best-known full URLs of the archive holding ``bio_train.dat`` (tried after the mirror).
PROTEIN_URLS: tuple[str, ...] = ("http://osmot.cs.cornell.edu/kddcup/data_kddcup04.tar.gz",)
PROTEIN_PAGE = "http://osmot.cs.cornell.edu/kddcup/datasets.html"
PROTEIN_N_ROWS = 145_751
PROTEIN_N_FEATURES = 74
PROTEIN_N_COLUMNS = PROTEIN_N_FEATURES + 3
#: block ids run from 1 to 303, one per native sequence, assigned before the blocks were split into the train and
#: test files (the KDD Cup 2004 format notes); the training file holds 153 of them (the test file the other 150;
#: the 153 training blocks as reported in the participants' data inspections, e.g. the Dortmund group's report)
PROTEIN_MAX_BLOCK = 303
PROTEIN_N_BLOCKS = 153
PROTEIN_N_TRAIN = 72_876
PROTEIN_N_TEST = 72_875
SPLIT_KEY = "protein/split"
PARSER_VERSION = "v1"
_CHUNK = 1 << 20


class ProteinFormatError(ValueError):
    """``bio_train.dat`` does not have the expected layout or content."""


def read_bio_train(
    path: str | os.PathLike, n_features: int = PROTEIN_N_FEATURES, *, name: str | None = None
) -> dict[str, np.ndarray]:
    """Parse ``bio_train.dat``: ``{"block": int64, "example": int64, "label": int8 in {0,1},
    "features": (n, n_features) float32}``. Raises :class:`ProteinFormatError` for a wrong column count, a
    non-numeric field or a label outside {0, 1} (the row count is checked by :func:`verify_protein`).
    ``name``: how messages call the file (default: its file name)."""
    path = Path(path)
    name = path.name if name is None else name
    n_cols = n_features + 3
    try:
        A = np.loadtxt(path, dtype=np.float64, ndmin=2)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProteinFormatError(f"{name}: cannot parse as {n_cols} whitespace-separated numbers per row: {exc}") from None
    if A.shape[1] != n_cols:
        raise ProteinFormatError(f"{name}: {A.shape[1]} columns, expected {n_cols} (block id, example id, label, "
                                 f"{n_features} features)")
    ids = A[:, :2]
    if not np.array_equal(ids, np.round(ids)):
        raise ProteinFormatError(f"{name}: block and example ids (columns 1-2) must be integers")
    arrays = {
        "block": ids[:, 0].astype(np.int64),
        "example": ids[:, 1].astype(np.int64),
        "label": A[:, 2].astype(np.int8),
        "features": A[:, 3:].astype(np.float32),
    }
    if not np.isin(A[:, 2], (0.0, 1.0)).all():
        bad = np.unique(A[:, 2][~np.isin(A[:, 2], (0.0, 1.0))])[:5]
        raise ProteinFormatError(f"{name}: labels (column 3) must be 0 or 1, found [{', '.join('%g' % v for v in bad)}]")
    return arrays


def verify_protein(arrays: Mapping[str, np.ndarray], n_rows: int, n_features: int = PROTEIN_N_FEATURES,
                   n_blocks: int | None = None) -> None:
    """Check the row and feature counts, the labels, finite features, unique example ids, block ids within
    1..:data:`PROTEIN_MAX_BLOCK` and (when given) the number of distinct blocks; raise
    :class:`ProteinFormatError`."""
    X, lab = arrays["features"], arrays["label"]
    if X.ndim != 2 or X.shape[1] != n_features or lab.shape != (X.shape[0],):
        raise ProteinFormatError(f"features of shape {X.shape} and labels {lab.shape}, expected (n, {n_features})")
    if X.shape[0] != n_rows:
        raise ProteinFormatError(f"{X.shape[0]} rows, expected {n_rows}")
    if not np.isin(lab, (0, 1)).all():
        raise ProteinFormatError("labels must be 0 or 1")
    if not np.isfinite(X).all():
        raise ProteinFormatError("features contain NaN or infinity")
    block, example = arrays.get("block"), arrays.get("example")
    if example is not None and np.unique(example).size != example.size:
        raise ProteinFormatError(f"example ids (column 2) repeat: {example.size - np.unique(example).size} "
                                 f"duplicates (each example has its own id)")
    if block is not None:
        if block.size and (block.min() < 1 or block.max() > PROTEIN_MAX_BLOCK):
            raise ProteinFormatError(f"block ids (column 1) must lie in 1..{PROTEIN_MAX_BLOCK}, found "
                                     f"{block.min()}..{block.max()}")
        if n_blocks is not None and np.unique(block).size != n_blocks:
            raise ProteinFormatError(f"{np.unique(block).size} distinct blocks, expected {n_blocks}")


def _key(path: Path) -> str:
    return f"{file_digest(path, 'sha256')[:16]}-{PARSER_VERSION}"


def _candidates(mirror, urls: Sequence[str]) -> list[tuple[str, str, str]]:
    """(kind, location, name): the mirror's bio_train.dat and archive first, then the canonical URLs."""
    out: list[tuple[str, str, str]] = []
    if mirror is not None and str(mirror) != "":
        m = str(mirror)
        for name in (PROTEIN_FILE, PROTEIN_ARCHIVE):
            if _is_url(m):
                out.append(("url", m.rstrip("/") + "/" + name, name))
            else:
                out.append(("path", str(Path(m).expanduser() / name), name))
    out.extend(("url", u, Path(u).name or PROTEIN_FILE) for u in ([urls] if isinstance(urls, str) else urls))
    return out


def _extract_member(archive: Path, dest_dir: Path) -> Path:
    """Extract the member named ``bio_train.dat`` (at any depth) of a tar archive to a temporary file."""
    with tarfile.open(archive, "r:*") as tar:
        member = next((m for m in tar if m.isfile() and Path(m.name).name == PROTEIN_FILE), None)
        if member is None:
            raise ProteinFormatError(f"archive has no member named {PROTEIN_FILE}")
        fd, name = fsmode.mkstemp(dir=dest_dir, prefix=f".{PROTEIN_FILE}.", suffix=".extract")  # the user's umask
        try:
            with os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(tar.extractfile(member), out, _CHUNK)
        except BaseException:
            os.unlink(name)
            raise
    return Path(name)


def protein_arrays(
    cache_dir: str | os.PathLike,
    mirror: str | os.PathLike | None = None,
    *,
    urls: Sequence[str] | None = None,
    n_rows: int | None = None,
    progress: bool = True,
    timeout: float = 60.0,
) -> dict[str, np.ndarray]:
    """The verified parsed ``bio_train.dat`` in file order (see :func:`read_bio_train`), obtained as the
    module docstring says and cached in ``cache_dir``. ``urls`` and ``n_rows`` default to
    :data:`PROTEIN_URLS` and :data:`PROTEIN_N_ROWS` (read at call time). Raises ``DownloadError`` (listing
    every source and why it failed) if no source yields a file that passes verification."""
    n_blocks = PROTEIN_N_BLOCKS if n_rows is None else None    # the block count only for the full file
    n_rows = PROTEIN_N_ROWS if n_rows is None else int(n_rows)
    srcs = PROTEIN_URLS if urls is None else tuple(urls)
    cache_dir = Path(cache_dir).expanduser()
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / PROTEIN_FILE

    def verify(a):
        verify_protein(a, n_rows, n_blocks=n_blocks)

    attempts: list[tuple[str, str]] = []
    if target.exists():
        try:
            return cached_parse(target, _key(target), read_bio_train, verify)
        except (ProteinFormatError, OSError) as exc:
            attempts.append((str(target), f"{type(exc).__name__}: {exc}"))
            _say(progress, f"cached {target} fails verification ({exc}); removing it and fetching again")
            target.unlink()

    def accept(tmp: Path, location: str, name: str):
        extracted = None
        try:
            candidate = tmp
            if tarfile.is_tarfile(tmp):
                extracted = candidate = _extract_member(tmp, cache_dir)
            arrays = read_bio_train(candidate, name=f"{PROTEIN_FILE} from {location}")
            verify(arrays)
            os.replace(candidate, target)
            write_parsed(target, _key(target), arrays)
        finally:
            if extracted is not None and extracted.exists():
                extracted.unlink()
        _say(progress, f"verified {target} ({n_rows} rows, {PROTEIN_N_COLUMNS} columns, labels in {{0, 1}})")
        return arrays

    ok, arrays, more = try_sources(_candidates(mirror, srcs), cache_dir, accept, timeout=timeout, progress=progress,
                                   errors=(tarfile.TarError,))
    if ok:
        return arrays
    attempts += more
    lines = attempt_lines(attempts)
    raise DownloadError(
        f"could not obtain a valid {PROTEIN_FILE!r} ({n_rows} rows of {PROTEIN_N_COLUMNS} columns, labels 0/1; no "
        f"checksum is published, so the content is verified). Sources tried:\n{lines}\n"
        f"To provide it by hand: get {PROTEIN_ARCHIVE} (which contains {PROTEIN_FILE}) from the KDD Cup 2004 site "
        f"{PROTEIN_PAGE}, and put {PROTEIN_FILE} or the archive in a folder and set `data.mirror: /that/folder` in "
        f"the config (or pass mirror=...), or copy {PROTEIN_FILE} to {target}.",
        filename=PROTEIN_FILE,
        attempts=attempts,
    )


def load_protein(
    cache_dir: str | os.PathLike,
    mirror: str | os.PathLike | None = None,
    *,
    seed: int = 0,
    urls: Sequence[str] | None = None,
    n_rows: int | None = None,
    train_size: int | None = None,
    progress: bool = True,
) -> RawSplit:
    """Protein: X_train (72876, 74) float32, y_train int64 in {-1, +1}, X_test (72875, 74), y_test.

    The split is ``seeded_split(n_rows, train_size, seed, "protein/split")`` (module docstring).
    ``urls``/``n_rows``/``train_size`` default to the module constants (read at call time).
    """
    arrays = protein_arrays(cache_dir, mirror, urls=urls, n_rows=n_rows, progress=progress)
    X = arrays["features"]
    train_size = PROTEIN_N_TRAIN if train_size is None else int(train_size)
    tr, te = seeded_split(X.shape[0], train_size, seed, SPLIT_KEY)
    y = 2 * arrays["label"].astype(np.int64) - 1
    return RawSplit(X_train=X[tr], y_train=y[tr], X_test=X[te], y_test=y[te])
