"""Checksum-verified, atomic file downloads with an optional mirror (a local folder or a base URL).

A cache entry ``cache_dir/filename`` only ever exists with the right checksum: every download goes to a
temporary file in the same directory, is verified, and is then moved into place with ``os.replace``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import time
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Iterable, Sequence

from dpbench import fsmode

log = logging.getLogger(__name__)

_CHUNK = 1 << 20
_ALGORITHMS = ("md5", "sha256")
_URL_SCHEMES = ("http", "https", "ftp", "file")


class DownloadError(RuntimeError):
    """No source delivered a file with the expected checksum.

    ``attempts`` lists ``(source, reason)`` for every source that was tried.
    """

    def __init__(self, message: str, filename: str = "", attempts: Sequence[tuple[str, str]] = ()):
        super().__init__(message)
        self.filename = filename
        self.attempts = list(attempts)


def _check_checksum_spec(checksum: tuple[str, str]) -> tuple[str, str]:
    try:
        algorithm, hexdigest = checksum
    except (TypeError, ValueError):
        raise ValueError(f"checksum must be a pair (algorithm, hexdigest), got {checksum!r}") from None
    algorithm = str(algorithm).lower()
    if algorithm not in _ALGORITHMS:
        raise ValueError(f"unsupported checksum algorithm {algorithm!r}; use one of {_ALGORITHMS}")
    return algorithm, str(hexdigest).lower()


def file_digest(path: str | os.PathLike, algorithm: str) -> str:
    """Hex digest of the file at ``path`` with ``algorithm`` ("md5" or "sha256")."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def verify_checksum(path: str | os.PathLike, checksum: tuple[str, str]) -> bool:
    """True if the file at ``path`` exists and has ``checksum`` = (``"md5"``|``"sha256"``, hexdigest)."""
    algorithm, expected = _check_checksum_spec(checksum)
    if not Path(path).is_file():
        return False
    return file_digest(path, algorithm) == expected


def _is_url(s: str) -> bool:
    return urllib.parse.urlparse(s).scheme.lower() in _URL_SCHEMES


def _sources(filename: str, urls: Iterable[str], mirror: str | os.PathLike | None) -> list[tuple[str, str]]:
    """Ordered (kind, location) pairs: the mirror first, then every canonical URL."""
    sources: list[tuple[str, str]] = []
    if mirror is not None and str(mirror) != "":
        m = str(mirror)
        if _is_url(m):
            sources.append(("url", m.rstrip("/") + "/" + filename))
        else:
            sources.append(("path", str(Path(m).expanduser() / filename)))
    if isinstance(urls, str):
        urls = [urls]
    sources.extend(("url", u) for u in urls)
    return sources


def _say(progress: bool, msg: str) -> None:
    log.info(msg)
    if progress and not logging.getLogger("dpbench").handlers:  # the harness logs to stderr already
        print(f"[dpbench.data] {msg}", file=sys.stderr, flush=True)


def copy_source(kind: str, location: str, out, label: str, timeout: float, progress: bool) -> None:
    """Copy one source into the open binary file ``out``: a local file (``kind="path"``) or a URL."""
    if kind == "path":
        src = Path(location)
        if not src.is_file():
            raise FileNotFoundError(f"no such file {src}")
        _say(progress, f"copying {label} from {src}")
        with open(src, "rb") as f:
            shutil.copyfileobj(f, out, _CHUNK)
    else:
        _say(progress, f"downloading {label} from {location}")
        _copy_url(location, out, timeout, progress)


#: a download is abandoned (the next source is tried) when it has run this long, or when after
#: :data:`SLOW_AFTER_S` seconds it averages less than :data:`MIN_RATE` bytes/s: the socket timeout alone never
#: fires on a server that trickles a byte every few seconds
DEADLINE_S = 900.0
SLOW_AFTER_S = 60.0
MIN_RATE = 1024.0
_now = time.monotonic


def _copy_url(url: str, out, timeout: float, progress: bool) -> None:
    req = urllib.request.Request(url, headers={"User-Agent": "dpbench-data/0.1"})
    start = _now()
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        total = resp.headers.get("Content-Length") if hasattr(resp, "headers") else None
        total = int(total) if total and str(total).isdigit() else None
        done, next_report = 0, 0.25
        read = getattr(resp, "read1", resp.read)   # returns what has arrived: the deadline is checked as bytes trickle
        while True:
            block = read(_CHUNK)
            if not block:
                break
            out.write(block)
            done += len(block)
            took = _now() - start
            if took > DEADLINE_S or (took > SLOW_AFTER_S and done / took < MIN_RATE):
                raise OSError(f"download too slow: {done} bytes in {took:.0f} s (deadline {DEADLINE_S:.0f} s, at "
                              f"least {MIN_RATE:.0f} B/s after {SLOW_AFTER_S:.0f} s)")
            if progress and total and done / total >= next_report:
                _say(progress, f"  {done / total:4.0%} of {total / 1e6:.1f} MB")
                next_report += 0.25
        if total is not None and done != total:
            raise OSError(f"incomplete transfer: got {done} of {total} bytes")


def try_sources(candidates, cache_dir: Path, accept, *, timeout: float, progress: bool, errors: tuple = ()):
    """Copy each ``(kind, location, name)`` candidate (kind ``"path"`` or ``"url"``) to a temporary file in
    ``cache_dir`` and call ``accept(tmp, location, name)``, which verifies it and moves it into place; the
    first candidate accepted wins. The temporary file is always removed. Returns ``(ok, result, attempts)``,
    ``attempts`` the ``(location, reason)`` of every candidate that failed (``errors``: extra exception types
    that count as a failed candidate)."""
    attempts: list[tuple[str, str]] = []
    for kind, location, name in candidates:
        fd, tmp_name = fsmode.mkstemp(dir=cache_dir, prefix=f".{name}.", suffix=".part")  # the user's umask
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out:
                copy_source(kind, location, out, name, timeout, progress)
            return True, accept(tmp, location, name), attempts
        except (OSError, ValueError, urllib.error.URLError, *errors) as exc:  # URLError/timeouts are OSErrors
            reason = getattr(exc, "reason", None) if isinstance(exc, urllib.error.URLError) else None
            attempts.append((location, f"{type(exc).__name__}: {reason or exc}"))
            _say(progress, f"  failed: {attempts[-1][1]}")
        finally:
            if tmp.exists():
                tmp.unlink()
    return False, None, attempts


def attempt_lines(attempts) -> str:
    """The ``(source, reason)`` list of a failed fetch as indented lines for an error message."""
    return "\n".join(f"  - {src}: {why}" for src, why in attempts) or "  (no source given)"


def fetch_file(
    filename: str,
    urls: Sequence[str],
    checksum: tuple[str, str],
    cache_dir: str | os.PathLike,
    mirror: str | os.PathLike | None = None,
    progress: bool = True,
    timeout: float = 60.0,
) -> Path:
    """Return ``cache_dir/filename`` with the given checksum, fetching it if needed.

    Parameters
    ----------
    filename: name of the file in the cache (and in the mirror).
    urls: canonical full URLs of the file, tried in order after the mirror.
    checksum: ``("md5"|"sha256", hexdigest)``.
    cache_dir: folder of the cache; created if missing.
    mirror: a local folder holding ``filename``, or a base URL (``http(s)://``, ``file://``) to which
        ``/filename`` is appended. Tried first.
    progress: print short progress messages to stderr.
    timeout: socket timeout in seconds for each URL.

    A cached file is re-verified on every call; a corrupted one is removed and fetched again. Every source
    is downloaded to a temporary file next to the target and only moved into place (``os.replace``) after
    its checksum matched, so a failed or partial download never leaves anything at ``cache_dir/filename``.
    Raises :class:`DownloadError` listing every source and why it failed if no source works.
    """
    algorithm, expected = _check_checksum_spec(checksum)
    cache_dir = Path(cache_dir).expanduser()
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / filename

    if target.exists():
        if verify_checksum(target, (algorithm, expected)):
            return target
        _say(progress, f"cached {target} fails its {algorithm} check; removing it and fetching again")
        target.unlink()

    def accept(tmp: Path, location: str, name: str) -> Path:
        got = file_digest(tmp, algorithm)
        if got != expected:
            raise ValueError(f"{algorithm} mismatch: expected {expected}, got {got}")
        os.replace(tmp, target)
        _say(progress, f"verified {target} ({algorithm} {expected})")
        return target

    candidates = [(kind, location, filename) for kind, location in _sources(filename, urls, mirror)]
    ok, result, attempts = try_sources(candidates, cache_dir, accept, timeout=timeout, progress=progress)
    if ok:
        return result
    lines = attempt_lines(attempts)
    raise DownloadError(
        f"could not obtain {filename!r} with {algorithm} {expected}. Sources tried:\n{lines}\n"
        f"To provide it by hand: download {filename} on a machine with network access (from one of the URLs "
        f"above), check its {algorithm}, and either copy it to {target} or put it in a folder and set "
        f"`data.mirror: /that/folder` in the config (or pass mirror=...). A base URL also works as a mirror.",
        filename=filename,
        attempts=attempts,
    )
