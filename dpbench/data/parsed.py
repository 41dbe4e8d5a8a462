"""Helpers shared by the tabular loaders (Covertype, Protein): a parsed-array cache next to a downloaded file
and a seeded, data-independent train/test split.

The parsed cache of ``folder/NAME`` is ``folder/NAME.parsed-<key>.npz`` where ``key`` is derived from the
source file's content digest and the parser version, so a changed source (or parser) is re-parsed. It is
written atomically (temporary file in the same folder, then ``os.replace``); stale caches of the same source
name are removed once a new one is in place; an unreadable cache is ignored and rewritten.
"""

from __future__ import annotations

import logging
import os
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from dpbench.rng import generator

log = logging.getLogger(__name__)


def parsed_cache_path(source: str | os.PathLike, key: str) -> Path:
    """``source.parent / f"{source.name}.parsed-{key}.npz"``."""
    source = Path(source)
    return source.parent / f"{source.name}.parsed-{key}.npz"


def _atomic_savez(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def read_parsed(source: str | os.PathLike, key: str) -> dict[str, np.ndarray] | None:
    """The cached arrays of ``source`` under ``key``, or None if there is no readable cache."""
    path = parsed_cache_path(source, key)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        log.warning("ignoring unreadable parsed cache %s (%s); parsing the source again", path, exc)
        return None


def write_parsed(source: str | os.PathLike, key: str, arrays: Mapping[str, np.ndarray]) -> Path:
    """Store ``arrays`` as the parsed cache of ``source`` under ``key``; remove caches under other keys."""
    path = parsed_cache_path(source, key)
    _atomic_savez(path, arrays)
    for old in Path(source).parent.glob(f"{Path(source).name}.parsed-*.npz"):
        if old != path:
            try:
                old.unlink()
            except OSError:  # pragma: no cover - another process may have removed it
                pass
    return path


def drop_parsed(source: str | os.PathLike, key: str) -> None:
    """Remove the parsed cache of ``source`` under ``key`` if it exists."""
    parsed_cache_path(source, key).unlink(missing_ok=True)


def cached_parse(
    source: str | os.PathLike,
    key: str,
    parse: Callable[[Path], dict[str, np.ndarray]],
    verify: Callable[[dict[str, np.ndarray]], None],
) -> dict[str, np.ndarray]:
    """Arrays of ``source``: from the parsed cache under ``key`` if it is readable and passes ``verify``,
    otherwise ``parse(source)`` (which must pass ``verify``, else its error propagates and nothing is
    cached), stored in the cache."""
    arrays = read_parsed(source, key)
    if arrays is not None:
        try:
            verify(arrays)
            return arrays
        except ValueError as exc:
            log.warning("parsed cache of %s fails verification (%s); parsing the source again", source, exc)
            drop_parsed(source, key)
    arrays = parse(Path(source))
    verify(arrays)
    write_parsed(source, key, arrays)
    return arrays


def seeded_split(n_total: int, n_train: int, seed: int, key: str) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (train, test) of a data-independent split: the permutation
    ``generator(seed, key).permutation(n_total)``, its first ``n_train`` entries for training and the rest
    for testing. Both keep the permuted order, so the first N rows of either split are a uniformly random
    subset of it."""
    n_total, n_train = int(n_total), int(n_train)
    if not 0 < n_train < n_total:
        raise ValueError(f"need 0 < n_train < n_total, got n_train={n_train}, n_total={n_total}")
    perm = generator(int(seed), key).permutation(n_total)
    return perm[:n_train], perm[n_train:]
