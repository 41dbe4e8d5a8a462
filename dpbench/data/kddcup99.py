"""KDD Cup 1999 intrusion detection data (Song 2018, §3.4.1), normal vs attack.

The thesis cites "the KDDCup99 dataset" with its reference [119] (Rosset & Inger, SIGKDD Explorations 2000),
which describes the KDD Cup 1998 donor data; the "normal vs. malicious" task on network connections is that of
KDD Cup 1999, used here.

Source and verification
-----------------------

* File: ``kddcup.data_10_percent.gz``, the "10 %" training set of KDD Cup 1999 (494,021 connection records),
  sha256 :data:`KDD_SHA256` and URLs taken from scikit-learn's ``fetch_kddcup99`` metadata
  (``sklearn/datasets/_kddcup99.py``, ``ARCHIVE_10_PERCENT``: figshare file 5976042; the original UCI file is
  tried second). Download, checksum and atomic caching: :func:`dpbench.data.download.fetch_file` (mirror first).
* Why the 10 % file: the thesis takes "a subsample of size 50,000" for the normal-vs-malicious task (Song 2018,
  §3.4.1) without naming the file; the 10 % file is the standard KDD'99 training set (and what the authors' earlier
  DP-ERM experiments on KDDCup99 used), and a uniform 50,000-row subsample of it is a uniform subsample of the
  training distribution. The full file (4,898,431 rows; ``ARCHIVE`` in scikit-learn, sha256
  :data:`KDD_FULL_SHA256`) can be loaded with ``load_kddcup99(..., full=True)``.
* Content check for the real file: 494,021 rows of 42 comma-separated fields, of which 97,278 are ``normal.``.

Format: 41 features (38 numeric; ``protocol_type``, ``service``, ``flag`` categorical) and a label such as
``normal.`` or ``smurf.``. Parsed features: the 38 numeric columns (float64) followed by a one-hot encoding of
the three categorical columns over the categories present in the file, sorted (deterministic for a verified
file). Label ``+1`` = attack (any label other than ``normal.``), ``-1`` = normal.

Subsample: ``dpbench.rng.generator(seed, "kddcup99/subsample").permutation(n_rows)``; its first
:data:`KDD_N_TRAIN` = 50,000 rows are the training set (the thesis's subsample), the next :data:`KDD_N_TEST`
= 10,000 a held-out set. The choice is data-independent.

Substitute (:func:`load_kddcup99_substitute`, variant :data:`SUBSTITUTE_VARIANT`): a labelled SYNTHETIC
two-class Gaussian stand-in with the same row counts, 41 features and the attack share of the 10 % file
(80.3 %); NOT the real data.
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dpbench.data.download import fetch_file
from dpbench.data.parsed import cached_parse
from dpbench.data.raw import RawSplit
from dpbench.rng import generator

KDD_FILE = "kddcup.data_10_percent.gz"
#: sha256 of the 10 % file (scikit-learn ``ARCHIVE_10_PERCENT``).
KDD_SHA256 = "8045aca0d84e70e622d1148d7df782496f6333bf6eb979a1b0837c42a9fd9561"
KDD_URLS: tuple[str, ...] = (
    "https://ndownloader.figshare.com/files/5976042",
    "https://archive.ics.uci.edu/ml/machine-learning-databases/kddcup99-mld/kddcup.data_10_percent.gz",
)
KDD_FULL_FILE = "kddcup.data.gz"
#: sha256 of the full file (scikit-learn ``ARCHIVE``).
KDD_FULL_SHA256 = "3b6c942aa0356c0ca35b7b595a26c89d343652c9db428893e7494f837b274292"
KDD_FULL_URLS: tuple[str, ...] = (
    "https://ndownloader.figshare.com/files/5976045",
    "https://archive.ics.uci.edu/ml/machine-learning-databases/kddcup99-mld/kddcup.data.gz",
)
KDD_N_ROWS = 494_021
KDD_N_NORMAL = 97_278
KDD_FULL_N_ROWS = 4_898_431
KDD_N_FIELDS = 42
CATEGORICAL = (1, 2, 3)            # protocol_type, service, flag
KDD_N_TRAIN = 50_000
KDD_N_TEST = 10_000
SUBSAMPLE_KEY = "kddcup99/subsample"
PARSER_VERSION = "v1"
SUBSTITUTE_VARIANT = "substitute:synthetic-kddcup99"
SUBSTITUTE_DESCRIPTION = ("SUBSTITUTE: synthetic two-class Gaussian data shaped like the KDDCup99 subsample "
                          "(41 features, 80.3% attacks), not KDDCup99")


#: Domain of the 38 numeric KDD'99 features (in file order, the categorical columns 1-3 left out), from the
#: feature definitions of the KDD Cup 1999 task description (Stolfo et al.), NOT from the data: (name, upper
#: bound, log scale); every lower bound is 0. Rates are fractions in [0, 1]; flags 0/1 (``su_attempted`` 0-2);
#: ``count``/``srv_count`` count connections in a 2-second window (0-511 in the feature extractor's output),
#: ``dst_host_count``/``dst_host_srv_count`` count among the last connections to the host (0-255).
#: Unbounded fields get round caps [INFERRED: the task description gives no upper bound] and a log scale
#: (values above are clipped): ``duration`` one day in seconds, byte counts 10⁹, the host-based event counts
#: (``hot``, ``num_root``, …) 1,000.
NUMERIC_DOMAIN: tuple[tuple[str, float, bool], ...] = (
    ("duration", 86400.0, True), ("src_bytes", 1e9, True), ("dst_bytes", 1e9, True), ("land", 1.0, False),
    ("wrong_fragment", 3.0, False), ("urgent", 1000.0, True), ("hot", 1000.0, True),
    ("num_failed_logins", 1000.0, True), ("logged_in", 1.0, False), ("num_compromised", 1000.0, True),
    ("root_shell", 1.0, False), ("su_attempted", 2.0, False), ("num_root", 1000.0, True),
    ("num_file_creations", 1000.0, True), ("num_shells", 1000.0, True), ("num_access_files", 1000.0, True),
    ("num_outbound_cmds", 1000.0, True), ("is_host_login", 1.0, False), ("is_guest_login", 1.0, False),
    ("count", 511.0, False), ("srv_count", 511.0, False), ("serror_rate", 1.0, False),
    ("srv_serror_rate", 1.0, False), ("rerror_rate", 1.0, False), ("srv_rerror_rate", 1.0, False),
    ("same_srv_rate", 1.0, False), ("diff_srv_rate", 1.0, False), ("srv_diff_host_rate", 1.0, False),
    ("dst_host_count", 255.0, False), ("dst_host_srv_count", 255.0, False), ("dst_host_same_srv_rate", 1.0, False),
    ("dst_host_diff_srv_rate", 1.0, False), ("dst_host_same_src_port_rate", 1.0, False),
    ("dst_host_srv_diff_host_rate", 1.0, False), ("dst_host_serror_rate", 1.0, False),
    ("dst_host_srv_serror_rate", 1.0, False), ("dst_host_rerror_rate", 1.0, False),
    ("dst_host_srv_rerror_rate", 1.0, False),
)


def domain_bounds(n_features: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, log) of the parsed features (:func:`features`: the 38 numeric columns, then one-hot columns in
    [0, 1]) from :data:`NUMERIC_DOMAIN` -- data-independent bounds for
    :func:`~dpbench.data.transforms.domain_minmax`."""
    k = len(NUMERIC_DOMAIN)
    if n_features < k:
        raise ValueError(f"the parsed KDDCup99 features have at least {k} columns, got {n_features}")
    hi = np.ones(n_features)
    log = np.zeros(n_features, dtype=bool)
    hi[:k] = [h for _, h, _ in NUMERIC_DOMAIN]
    log[:k] = [g for _, _, g in NUMERIC_DOMAIN]
    return np.zeros(n_features), hi, log


class KDDFormatError(ValueError):
    """The KDDCup99 file does not have the expected layout or content."""


def read_kddcup99(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Parse a gzip CSV of 42 fields: ``{"numeric": (n, 38) float64, "codes": (n, 3) int32, "vocab_<j>":
    categories of column j (sorted), "attack": (n,) bool}``. Raises :class:`KDDFormatError`."""
    import pandas as pd

    path = Path(path)
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
        df = pd.read_csv(io.BytesIO(raw), header=None, dtype=str, keep_default_na=False)
    except (ValueError, EOFError, OSError, zlib.error) as exc:
        raise KDDFormatError(f"{path.name}: cannot parse as gzip CSV: {exc}") from None
    if df.shape[1] != KDD_N_FIELDS:
        raise KDDFormatError(f"{path.name}: {df.shape[1]} fields per row, expected {KDD_N_FIELDS}")
    num_cols = [j for j in range(KDD_N_FIELDS - 1) if j not in CATEGORICAL]
    try:
        numeric = df[num_cols].to_numpy(dtype=np.float64)
    except ValueError as exc:
        raise KDDFormatError(f"{path.name}: a numeric field is not a number ({exc})") from None
    out = {"numeric": numeric}
    codes = np.empty((df.shape[0], len(CATEGORICAL)), dtype=np.int32)
    for k, j in enumerate(CATEGORICAL):
        vocab, inv = np.unique(df[j].to_numpy(dtype=str), return_inverse=True)
        out[f"vocab_{k}"] = vocab.astype(str)
        codes[:, k] = inv
    out["codes"] = codes
    labels = df[KDD_N_FIELDS - 1].to_numpy(dtype=str)
    if not np.all(np.char.endswith(labels, ".")):
        raise KDDFormatError(f"{path.name}: labels must end with '.', e.g. 'normal.'")
    out["attack"] = labels != "normal."
    return out


def verify_kddcup99(arrays, n_rows: int | None, n_normal: int | None = None) -> None:
    """Row count (and count of ``normal.`` rows, if given); raise :class:`KDDFormatError`."""
    n = arrays["numeric"].shape[0]
    if arrays["numeric"].shape[1] != KDD_N_FIELDS - 1 - len(CATEGORICAL) or arrays["codes"].shape != (n, 3):
        raise KDDFormatError(f"unexpected parsed shapes {arrays['numeric'].shape}, {arrays['codes'].shape}")
    if n_rows is not None and n != n_rows:
        raise KDDFormatError(f"{n} rows, expected {n_rows}")
    if n_normal is not None and int((~arrays["attack"].astype(bool)).sum()) != n_normal:
        raise KDDFormatError(f"{int((~arrays['attack']).sum())} normal rows, expected {n_normal}")


def features(arrays) -> np.ndarray:
    """(n, 38 + Σ|vocab|) float64: numeric columns, then the one-hot categorical columns."""
    parts = [np.asarray(arrays["numeric"], dtype=np.float64)]
    for k in range(len(CATEGORICAL)):
        parts.append((arrays["codes"][:, k][:, None] == np.arange(len(arrays[f"vocab_{k}"]))[None, :]).astype(float))
    return np.hstack(parts)


def load_kddcup99(cache_dir: str | os.PathLike, mirror: str | os.PathLike | None = None, *, seed: int = 0,
                  full: bool = False, checksum: str | None = None, urls: Sequence[str] | None = None,
                  n_rows: int | None = None, n_train: int | None = None, n_test: int | None = None,
                  progress: bool = True) -> RawSplit:
    """KDDCup99 normal (−1) vs attack (+1): a seeded subsample of ``n_train`` (50,000) training rows and the next
    ``n_test`` (10,000) rows. ``checksum``/``urls``/``n_rows`` default to the 10 % (or ``full``) file constants;
    overriding them lets tests load tiny files of the same format (no content fingerprint is then checked)."""
    fname = KDD_FULL_FILE if full else KDD_FILE
    sha = checksum or (KDD_FULL_SHA256 if full else KDD_SHA256)
    srcs = tuple(urls) if urls is not None else (KDD_FULL_URLS if full else KDD_URLS)
    path = fetch_file(fname, list(srcs), ("sha256", sha), cache_dir, mirror=mirror, progress=progress)
    real = checksum is None
    rows = n_rows if n_rows is not None else ((KDD_FULL_N_ROWS if full else KDD_N_ROWS) if real else None)
    normal = KDD_N_NORMAL if (real and not full) else None
    arrays = cached_parse(path, f"{sha[:16]}-{PARSER_VERSION}", read_kddcup99,
                          lambda a: verify_kddcup99(a, rows, normal))
    X = features(arrays)
    y = np.where(arrays["attack"].astype(bool), 1, -1).astype(np.int64)
    n_train = KDD_N_TRAIN if n_train is None else int(n_train)
    n_test = KDD_N_TEST if n_test is None else int(n_test)
    if n_train + n_test > X.shape[0]:
        raise ValueError(f"{path.name} has {X.shape[0]} rows, n_train + n_test = {n_train + n_test} requested")
    perm = generator(int(seed), SUBSAMPLE_KEY).permutation(X.shape[0])
    tr, te = perm[:n_train], perm[n_train:n_train + n_test]
    return RawSplit(X_train=X[tr], y_train=y[tr], X_test=X[te], y_test=y[te])


def load_kddcup99_substitute(seed: int = 0, n_train: int | None = None, n_test: int | None = None,
                             n_features: int = 41, attack_fraction: float = 0.803) -> RawSplit:
    """The labelled SYNTHETIC stand-in (module docstring): latent z ~ N(0, I), class shift ±1.5 along a random
    unit direction, features A z with a random orthogonal A times log-uniform scales in [0.1, 10] and an offset;
    label +1 (attack) with probability ``attack_fraction``. Row i does not depend on how many rows are drawn
    (train and test come from separate streams)."""
    n_train = KDD_N_TRAIN if n_train is None else int(n_train)
    n_test = KDD_N_TEST if n_test is None else int(n_test)
    g = generator(int(seed), "kddcup99/substitute/v1/model")
    Q, Rm = np.linalg.qr(g.standard_normal((n_features, n_features)))
    Q *= np.sign(np.diag(Rm))
    A = Q * np.exp(g.uniform(np.log(0.1), np.log(10.0), n_features))[None, :]
    e = g.standard_normal(n_features)
    e /= np.linalg.norm(e)
    o = g.standard_normal(n_features)
    o /= np.linalg.norm(o)

    def draw(split, n):
        from scipy.special import ndtr

        u = generator(int(seed), f"kddcup99/substitute/v1/{split}").standard_normal((n, n_features + 1))
        y = np.where(ndtr(u[:, 0]) < attack_fraction, 1, -1).astype(np.int64)     # row i uses row i of u only
        z = u[:, 1:] + 1.5 * y[:, None] * e[None, :] + 2.0 * o[None, :]
        return z @ A.T, y

    Xtr, ytr = draw("train", n_train)
    Xte, yte = draw("test", n_test)
    return RawSplit(X_train=Xtr, y_train=ytr, X_test=Xte, y_test=yte)
