"""Helpers shared by the tabular loaders (Covertype, Protein): a parsed-array cache next to a downloaded file
and a seeded, data-independent train/test split.

The parsed cache of ``folder/NAME`` is ``folder/NAME.parsed-<key>.npz`` where ``key`` is derived from the
source file's content digest and the parser version, so a changed source (or parser) is re-parsed. It is
one cache entry of :mod:`dpbench.data.cache` (arrays as ``.npy`` plus a manifest with their hashes, written under a
lock into a temporary folder renamed into place, validated on read); stale caches of the same source name are
removed once a new one is in place; a corrupt cache is reported and rewritten.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from dpbench.data.cache import open_entry, read_entry, remove_entry, save_arrays, write_entry
from dpbench.rng import generator

log = logging.getLogger(__name__)


def parsed_cache_path(source: str | os.PathLike, key: str) -> Path:
    """``source.parent / f"{source.name}.parsed-{key}"`` (a cache entry folder, see :mod:`dpbench.data.cache`)."""
    source = Path(source)
    return source.parent / f"{source.name}.parsed-{key}"


def _builder(source: Path, key: str, arrays: Mapping[str, np.ndarray]):
    def build(tmp: Path, previous) -> dict:
        save_arrays(tmp, dict(arrays))
        return {"source": source.name, "key": key}
    return build


def _drop_stale(source: Path, keep: Path) -> None:
    for old in source.parent.glob(f"{source.name}.parsed-*"):
        if old != keep and not old.name.startswith("."):
            remove_entry(old)


def read_parsed(source: str | os.PathLike, key: str) -> dict[str, np.ndarray] | None:
    """The cached arrays of ``source`` under ``key``, or None if there is no valid cache (a corrupt one is
    reported with a warning naming it)."""
    entry = read_entry(parsed_cache_path(source, key), mmap=False, what="parsed cache")
    return None if entry is None else dict(entry.arrays)


def write_parsed(source: str | os.PathLike, key: str, arrays: Mapping[str, np.ndarray]) -> Path:
    """Store ``arrays`` as the parsed cache of ``source`` under ``key``; remove caches under other keys."""
    source = Path(source)
    path = parsed_cache_path(source, key)
    write_entry(path, _builder(source, key, arrays))
    _drop_stale(source, path)
    return path


def drop_parsed(source: str | os.PathLike, key: str) -> None:
    """Remove the parsed cache of ``source`` under ``key`` if it exists."""
    remove_entry(parsed_cache_path(source, key))


def cached_parse(
    source: str | os.PathLike,
    key: str,
    parse: Callable[[Path], dict[str, np.ndarray]],
    verify: Callable[[dict[str, np.ndarray]], None],
) -> dict[str, np.ndarray]:
    """Arrays of ``source``: from the parsed cache under ``key`` if it is valid and passes ``verify``,
    otherwise ``parse(source)`` (which must pass ``verify``, else its error propagates and nothing is
    cached), stored in the cache. Concurrent callers parse once: the others wait for the entry's lock."""
    source = Path(source)
    path = parsed_cache_path(source, key)

    def accept(entry) -> bool:
        try:
            verify(dict(entry.arrays))
            return True
        except ValueError as exc:
            log.warning("parsed cache %s fails verification (%s); parsing the source again", path, exc)
            return False

    def build(tmp: Path, previous) -> dict:
        arrays = parse(source)
        verify(arrays)
        return _builder(source, key, arrays)(tmp, previous)

    entry = open_entry(path, build, accept=accept, mmap=False, what="parsed cache")
    _drop_stale(source, path)
    return dict(entry.arrays)


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
