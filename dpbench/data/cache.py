"""Process-safe, self-validating cache entries: the one helper behind every cache that parallel jobs write.

An **entry** is a folder (e.g. ``data/deformed-digits-v1/<hash>/``, ``results/cache/problems/<key>/``) holding
``.npy`` arrays (and possibly other files) plus ``manifest.json``, which lists every file with its size, its
SHA-256 and, for ``.npy`` files, its shape and dtype, and carries the entry's own metadata (``meta``).

* **Locking**: readers hold a shared ``flock`` on ``<parent>/.<name>.lock`` while they validate and open the
  entry, writers an exclusive one while they build and commit it, so no reader ever sees a half-swapped entry
  and two processes never build the same entry at once (the second waits and uses the first one's).
* **Commit**: a writer builds the whole entry in a temporary folder ``<parent>/.<name>.<random>.tmp`` next to
  it, writes the manifest last, and renames the folder into place (an existing entry is first renamed aside
  and removed afterwards), so all files of one entry always come from the same writer.
* **Never shrinks**: an entry that is valid and large enough for the request is used as it is; a writer only
  replaces a valid entry by one whose arrays have at least as many rows (checked before the commit).
* **Validated on read**: a missing or unparsable manifest, a missing file, a wrong size, a ``.npy`` header
  that disagrees with the manifest (shape, dtype) or a content hash that differs is a corrupt entry: a
  warning names the folder and why, and the entry is rebuilt -- it is never used. Hashes are checked once per
  file version (same inode, size, modification and change time), recorded in the entry's ``.verified.json``,
  so re-reading an entry — in this process or the next job's — is cheap (milliseconds instead of ~2 CPU-s per
  GB).
* **Sweeping**: the writer (holding the exclusive lock, hence no live writer of the same entry exists)
  removes temporaries of killed writers: ``.<name>.*.tmp`` / ``.<name>.*.old`` next to the entry and
  ``.*.tmp`` files inside its folder (left by older versions that wrote files one by one).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from dpbench import fsmode

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
_HASH_CHUNK = 1 << 22

# (path, inode, size, mtime_ns) -> sha256 already verified in this process
_verified: dict[tuple, str] = {}


class CorruptEntry(ValueError):
    """A cache entry failed validation (the message names the folder and what is wrong)."""


@dataclass
class Entry:
    """A validated cache entry: its folder, its manifest's ``meta`` and its ``.npy`` arrays by stem."""

    folder: Path
    meta: dict
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    manifest: dict = field(default_factory=dict)

    def rows(self, name: str) -> int:
        """Rows (first dimension) of array ``name`` according to the manifest (0 if it has none)."""
        info = self.manifest.get("files", {}).get(f"{name}.npy")
        return int(info["shape"][0]) if info and info.get("shape") else 0


# --------------------------------------------------------------------------------------------------------- locks
def lock_path(folder: str | os.PathLike) -> Path:
    folder = Path(folder)
    return folder.parent / f".{folder.name}.lock"


@contextlib.contextmanager
def file_lock(path: str | os.PathLike, *, shared: bool = False):
    """An advisory ``flock`` on ``path`` (created if missing); ``shared`` for readers."""
    from dpbench.fsmode import locked

    with locked(path, shared=shared):   # never through a symbolic link
        yield


# ------------------------------------------------------------------------------------------------------ manifest
def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_HASH_CHUNK):
            h.update(block)
    return h.hexdigest()


def _npy_header(path: Path) -> tuple[list[int], str]:
    with open(path, "rb") as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
        else:
            shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
    return [int(s) for s in shape], np.dtype(dtype).str


def _describe(path: Path) -> dict:
    info: dict[str, Any] = {"size": path.stat().st_size, "sha256": file_sha256(path)}
    if path.suffix == ".npy":
        info["shape"], info["dtype"] = _npy_header(path)
    return info


def write_manifest(folder: Path, meta: dict) -> dict:
    """Describe every file of ``folder`` (but the manifest) and write ``manifest.json`` (fsynced) last."""
    files = {p.name: _describe(p) for p in sorted(folder.iterdir()) if p.is_file() and p.name != MANIFEST}
    manifest = {"version": MANIFEST_VERSION, "meta": meta, "files": files}
    data = json.dumps(manifest, indent=1, sort_keys=True).encode()
    with open(folder / MANIFEST, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    return manifest


def validate(folder: str | os.PathLike) -> dict:
    """The manifest of ``folder`` after checking every file it lists; raises :class:`CorruptEntry`."""
    folder = Path(folder)
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        raise CorruptEntry(f"{folder}: no {MANIFEST} (an unfinished or foreign entry)") from None
    except (OSError, ValueError) as exc:
        raise CorruptEntry(f"{folder / MANIFEST}: unreadable ({exc})") from None
    if (not isinstance(manifest, dict) or manifest.get("version") != MANIFEST_VERSION
            or not isinstance(manifest.get("files"), dict) or not isinstance(manifest.get("meta"), dict)):
        raise CorruptEntry(f"{folder / MANIFEST}: not a version-{MANIFEST_VERSION} manifest")
    recorded, fresh = _recorded_verified(folder), {}
    for name, info in manifest["files"].items():
        path = folder / name
        try:
            st = path.stat()
        except FileNotFoundError:
            raise CorruptEntry(f"{path}: listed in the manifest but missing") from None
        if st.st_size != info.get("size"):
            raise CorruptEntry(f"{path}: {st.st_size} bytes, the manifest says {info.get('size')}")
        if name.endswith(".npy"):
            try:
                shape, dtype = _npy_header(path)
            except (OSError, ValueError) as exc:
                raise CorruptEntry(f"{path}: unreadable .npy header ({exc})") from None
            if shape != info.get("shape") or dtype != info.get("dtype"):
                raise CorruptEntry(f"{path}: shape {shape} dtype {dtype}, the manifest says "
                                   f"{info.get('shape')} {info.get('dtype')}")
        stamp = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
        if _verified.get(stamp) != info.get("sha256") and recorded.get(name) != _disk_stamp(st, info):
            got = file_sha256(path)
            if got != info.get("sha256"):
                raise CorruptEntry(f"{path}: content hash {got[:12]}… differs from the manifest's "
                                   f"{str(info.get('sha256'))[:12]}…")
            fresh[name] = _disk_stamp(st, info)
        _verified[stamp] = info.get("sha256")
    if fresh:
        _record_verified(folder, {**recorded, **fresh})
    return manifest


#: a file in an entry's folder (not listed in its manifest) recording, per file, the stat of the version whose
#: hash was verified: (inode, size, mtime_ns, ctime_ns, sha256). A later process that finds the same stat skips
#: re-hashing (a 6.3 GB training matrix costs ~12 CPU-s to hash, in every job). Any write to a file, and any
#: change of its times or permissions, moves its ctime (which no user-space tool can set back), so a damaged or
#: replaced file is hashed again and caught as before.
VERIFIED = ".verified.json"


def _disk_stamp(st: os.stat_result, info: dict) -> list:
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, info.get("sha256")]


def _recorded_verified(folder: Path) -> dict:
    try:
        got = json.loads((folder / VERIFIED).read_text())
        return got if isinstance(got, dict) else {}
    except (OSError, ValueError):
        return {}


def _record_verified(folder: Path, stamps: dict) -> None:
    """Write the verification record atomically; a folder that cannot be written (a read-only cache) just
    keeps hashing in each process."""
    from dpbench.store import atomic_write_bytes

    try:
        atomic_write_bytes(folder / VERIFIED, json.dumps(stamps).encode())
    except OSError:
        pass


def _open(folder: Path, manifest: dict, mmap) -> Entry:
    arrays = {}
    for name in manifest["files"]:
        if name.endswith(".npy"):
            stem = name[:-4]
            use_mmap = mmap if isinstance(mmap, bool) else stem in mmap
            arrays[stem] = np.load(folder / name, mmap_mode="r" if use_mmap else None, allow_pickle=False)
    return Entry(folder=folder, meta=manifest["meta"], arrays=arrays, manifest=manifest)


# ------------------------------------------------------------------------------------------------------ writing
def save_arrays(folder: Path, arrays: dict[str, np.ndarray]) -> None:
    """``np.save`` each array as ``folder/<name>.npy`` (names must be plain file stems)."""
    for name, arr in arrays.items():
        if not name or "/" in name or name.startswith("."):
            raise ValueError(f"array name {name!r} is not a plain file stem")
        np.save(folder / f"{name}.npy", np.asarray(arr), allow_pickle=False)


def sweep(folder: str | os.PathLike) -> None:
    """Remove temporaries of killed writers of entry ``folder`` (call only under its exclusive lock)."""
    folder = Path(folder)
    if folder.parent.is_dir():
        for pattern in (f".{folder.name}.*.tmp", f".{folder.name}.*.old"):
            for stale in folder.parent.glob(pattern):
                log.info("removing %s left by an interrupted writer", stale)
                _remove(stale)
    if folder.is_dir():
        for stale in folder.glob(".*.tmp"):
            log.info("removing %s left by an interrupted writer", stale)
            _remove(stale)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _check_growth(folder: Path, old: dict, new: dict) -> None:
    for name, info in old["files"].items():
        if name.endswith(".npy") and info.get("shape"):
            got = new["files"].get(name)
            if got is None or not got.get("shape") or got["shape"][0] < info["shape"][0]:
                raise RuntimeError(f"refusing to shrink cache entry {folder}: {name} would go from "
                                   f"{info['shape']} to {got and got.get('shape')}")


def _commit(tmp: Path, folder: Path) -> None:
    if folder.exists() or folder.is_symlink():
        aside = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.", suffix=".old"))
        os.replace(folder, aside / "entry")
        os.replace(tmp, folder)
        _remove(aside)
    else:
        os.replace(tmp, folder)


def _build_and_commit(folder: Path, build, previous: Entry | None) -> dict:
    """Build the entry in a temporary folder and rename it into place (caller holds the exclusive lock)."""
    sweep(folder)
    tmp = Path(fsmode.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.", suffix=".tmp"))  # the user's umask
    try:
        meta = build(tmp, previous)
        manifest = write_manifest(tmp, dict(meta or {}))
        if previous is not None:
            _check_growth(folder, previous.manifest, manifest)
        del previous
        _commit(tmp, folder)
    finally:
        if tmp.exists():
            _remove(tmp)
    for name, info in manifest["files"].items():  # hashed while writing: no need to hash again on reading
        st = (folder / name).stat()
        _verified[(str(folder / name), st.st_ino, st.st_size, st.st_mtime_ns)] = info["sha256"]
    return manifest


# ------------------------------------------------------------------------------------------------------ public
def write_entry(folder: str | os.PathLike, build: Callable[[Path, Entry | None], dict]) -> dict:
    """Build entry ``folder`` unconditionally (``build(tmp, None)``, as in :func:`open_entry`) under its
    exclusive lock and commit it, replacing whatever is there; returns the manifest."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(lock_path(folder)):
        return _build_and_commit(folder, build, None)


def remove_entry(folder: str | os.PathLike) -> None:
    """Delete entry ``folder`` (and its stale temporaries) under its exclusive lock."""
    folder = Path(folder)
    if folder.exists() or folder.parent.is_dir():
        with file_lock(lock_path(folder)):
            sweep(folder)
            if folder.exists():
                _remove(folder)


def read_entry(folder: str | os.PathLike, *, mmap: bool | set[str] | frozenset[str] = True,
               what: str = "cache entry") -> Entry | None:
    """The valid entry at ``folder`` (opened under its shared lock), or None if there is none; a corrupt
    entry logs a warning naming it and reads as None (the caller rebuilds it)."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    with file_lock(lock_path(folder), shared=True):
        try:
            return _open(folder, validate(folder), mmap)
        except CorruptEntry as exc:
            log.warning("%s %s is corrupt (%s); it will be rebuilt", what, folder, exc)
        except FileNotFoundError:
            pass
    return None


def open_entry(
    folder: str | os.PathLike,
    build: Callable[[Path, Entry | None], dict],
    *,
    accept: Callable[[Entry], bool] | None = None,
    mmap: bool | set[str] | frozenset[str] = True,
    what: str = "cache entry",
) -> Entry:
    """The entry at ``folder``, built if it is missing, corrupt or not ``accept``-ed (e.g. too few rows).

    ``build(tmp, previous)`` writes the entry's files into the empty folder ``tmp`` and returns its ``meta``
    (a JSON-able dict); ``previous`` is the current valid entry (opened, memory-mapped) when one exists but
    was not accepted, so a builder can extend it, else None. ``accept(entry)`` says whether an existing valid
    entry serves the request (default: any valid entry does). ``mmap``: memory-map every ``.npy`` (True),
    none (False) or those whose stems are in the set. The returned entry's arrays are opened under the lock,
    so they always belong to one committed version.
    """
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    accept = accept or (lambda entry: True)
    lock = lock_path(folder)
    problem = None
    if folder.is_dir():
        with file_lock(lock, shared=True):
            try:
                entry = _open(folder, validate(folder), mmap)
                if accept(entry):
                    return entry
            except CorruptEntry as exc:
                problem = exc
            except FileNotFoundError:  # swapped between is_dir and the lock: look again under the lock
                pass
    with file_lock(lock):
        previous = None
        if folder.is_dir():
            try:
                entry = _open(folder, validate(folder), mmap)
                if accept(entry):
                    return entry  # another process built it while we waited
                previous = entry
            except CorruptEntry as exc:
                log.warning("%s %s is corrupt (%s); rebuilding it", what, folder, exc)
                previous = None
        elif problem is not None:
            log.warning("%s %s was corrupt (%s); rebuilding it", what, folder, problem)
        manifest = _build_and_commit(folder, build, previous)
        entry = _open(folder, manifest, mmap)
        if not accept(entry):
            raise RuntimeError(f"the {what} built at {folder} does not serve the request it was built for")
        return entry
