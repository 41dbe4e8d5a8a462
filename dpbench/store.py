"""Content-keyed, process-safe caches for cells and trained artefacts.

* A **cell** result is a small JSON document stored under ``<root>/cells/<k[:2]>/<k>.json``.
* An **artefact** (a trained model, a vote-count matrix) is an ``.npz`` under ``<root>/artefacts/``.

Keys are SHA-256 digests of canonical JSON, so two figures that need the same cell share it.
Writes go to a temporary file in the same folder followed by ``os.replace``: a partially written entry
never exists. Computations of the same key in concurrent processes (two Snakemake jobs, joblib workers)
are serialised by an advisory ``flock`` on ``<root>/locks/<k>.lock``; the second waiter finds the entry
done and loads it. An entry that cannot be read back (a truncated or garbage cell, a cell that is not a JSON
object with the caller's required fields, an ``.npz`` failing to load or its zip CRC) is logged as a warning
naming the file and treated as missing: it is recomputed and replaced, never used. Locks are only ever nested cell-group -> artefact, never the reverse, so no deadlock.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
import zipfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

from dpbench import fsmode

log = logging.getLogger(__name__)

def content_key(obj: Any) -> str:
    """SHA-256 of the canonical JSON of ``obj`` (sorted keys, floats in repr form)."""
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_json_default)
    return hashlib.sha256(blob.encode()).hexdigest()


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    raise TypeError(f"not JSON-serialisable: {type(o).__name__}")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = fsmode.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # the user's umask
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _sweep_stale_temporaries(path: Path) -> None:
    """Remove temporaries of ``path`` left by a writer that was killed (SIGKILL skips its cleanup). Only
    called by the holder of the artefact's own lock, which serialises every writer of ``path``, so no live
    writer's file is hit. (Cells are not swept: two Snakemake jobs may write the same cell under different
    group locks; a killed cell write leaves at most one small ``.tmp`` file.)"""
    if path.parent.is_dir():
        for stale in path.parent.glob(f".{path.name}.*.tmp"):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()


def _read_npz(path: Path) -> dict[str, np.ndarray] | None:
    """The arrays of ``path``, or None if it is missing or unreadable (truncated, garbage, a member failing its
    zip CRC): the latter is logged as a warning naming the file, and the caller recomputes and replaces it."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except FileNotFoundError:
        return None
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        log.warning("artefact %s is unreadable (%s: %s); recomputing it", path, type(exc).__name__, exc)
        return None


#: required cell fields that must hold a finite number (a cell with ``accuracy: "high"`` or NaN is recomputed)
NUMERIC_FIELDS = frozenset({"accuracy", "runtime_s"})


def _finite_number(v) -> bool:
    import math

    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


#: the field of a stored cell that holds its content digest
DIGEST_FIELD = "_sha256"


def cell_digest(key: str, record: dict) -> str:
    """SHA-256 of the cell's key and its record as canonical JSON (sorted keys): a value changed in place, or a
    record copied under another cell's name, no longer matches."""
    body = json.dumps(record, sort_keys=True, allow_nan=True)
    return hashlib.sha256(key.encode() + b"\0" + body.encode()).hexdigest()


class Store:
    """The cell and artefact cache rooted at ``root``."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._memo: dict[str, dict[str, np.ndarray]] = {}

    # -- locking -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, key: str):
        with fsmode.locked(self.root / "locks" / f"{key}.lock"):
            yield

    # -- cells ---------------------------------------------------------------------------------
    def cell_path(self, key: str) -> Path:
        return self.root / "cells" / key[:2] / f"{key}.json"

    def get_cell(self, key: str, require: tuple[str, ...] = ()) -> dict | None:
        """The record of cell ``key``, or None if it is missing or unusable: an unreadable file (truncated,
        garbage, not JSON), a record whose content digest does not match (altered after it was written; records
        written before digests existed have none and are read as they are), a record that is not a non-empty JSON
        object or lacks a ``require``-d field is logged as a warning naming the file and read as missing, so the
        caller recomputes and overwrites it."""
        path = self.cell_path(key)
        try:
            with open(path, "rb") as fh:
                rec = json.loads(fh.read().decode("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            log.warning("cell %s is unreadable (%s: %s); recomputing it", path, type(exc).__name__, exc)
            return None
        if isinstance(rec, dict) and DIGEST_FIELD in rec:
            stored = rec.pop(DIGEST_FIELD)
            if stored != cell_digest(key, rec):
                log.warning("cell %s fails its content digest (altered after it was written); recomputing it", path)
                return None
        missing = [k for k in require if k not in rec] if isinstance(rec, dict) else None
        bad = [k for k in require if k in NUMERIC_FIELDS and not _finite_number(rec.get(k))] \
            if isinstance(rec, dict) and not missing else []
        if not isinstance(rec, dict) or not rec or missing or bad:
            why = (f"lacks {missing}" if missing else
                   f"{bad[0]} = {rec[bad[0]]!r} is not a finite number" if bad else
                   f"holds {type(rec).__name__} {str(rec)[:40]!r}")
            log.warning("cell %s is invalid (%s); recomputing it", path, why)
            return None
        return rec

    def has_cell(self, key: str, require: tuple[str, ...] = ()) -> bool:
        """Whether cell ``key`` holds a usable record (see :meth:`get_cell`)."""
        return self.get_cell(key, require) is not None

    def put_cell(self, key: str, record: dict) -> None:
        """Store ``record`` atomically with its content digest (:func:`cell_digest`), checked on every read."""
        canon = json.loads(json.dumps(record, default=_json_default))   # as it will read back (numpy → JSON)
        canon.pop(DIGEST_FIELD, None)
        body = {**canon, DIGEST_FIELD: cell_digest(key, canon)}
        atomic_write_bytes(self.cell_path(key), json.dumps(body).encode())

    def record(self, key: str, compute: Callable[[], dict]) -> dict:
        """The JSON record ``key``, computed once (process-safe: other processes wait for the lock and read
        it) and stored atomically; an interrupted computation leaves nothing behind. Every stored record
        carries ``runtime_s``: the compute's own measurement if it sets one, else the wall time of
        ``compute()`` (records cached before this field existed are read as they are)."""
        rec = self.get_cell(key)
        if rec is None:
            with self.lock(key):
                rec = self.get_cell(key)
                if rec is None:
                    t0 = time.perf_counter()
                    rec = compute()
                    if isinstance(rec, dict) and "runtime_s" not in rec:
                        rec = {**rec, "runtime_s": time.perf_counter() - t0}
                    self.put_cell(key, rec)
        return rec

    # -- artefacts -----------------------------------------------------------------------------
    def artefact_path(self, key: str) -> Path:
        return self.root / "artefacts" / key[:2] / f"{key}.npz"

    def artefact(self, key: str, compute: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        """Load artefact ``key`` or compute it once (process-safe) and store it."""
        if key in self._memo:
            return self._memo[key]
        path = self.artefact_path(key)
        arrays = _read_npz(path)
        if arrays is None:
            with self.lock(key):
                arrays = _read_npz(path)
                if arrays is None:
                    arrays = compute()
                    import io

                    buf = io.BytesIO()
                    np.savez(buf, **arrays)
                    _sweep_stale_temporaries(path)
                    atomic_write_bytes(path, buf.getvalue())
                    arrays = _read_npz(path)
        if len(self._memo) > 8:
            self._memo.pop(next(iter(self._memo)))
        self._memo[key] = arrays
        return arrays
