"""Permissions of the files and folders dpbench writes: what ``open()`` / ``mkdir()`` would have given.

Atomic writes go through ``tempfile.mkstemp`` / ``mkdtemp``, which create mode 0600 / 0700 whatever the user's
umask; renamed into place, such a file would be private even in a shared group folder (a cluster's project
space with ``umask 002``). :func:`as_created` gives the temporary the mode a plain ``open(path, "w")``
(0666 & ~umask) or ``mkdir`` (0777 & ~umask) would have, before it is renamed into place; :func:`mkstemp` and
:func:`mkdtemp` create temporaries that way.
"""

from __future__ import annotations

import contextlib
import os
import tempfile


def current_umask() -> int:
    """The process umask, read without changing it where possible (``/proc/self/status`` on Linux; the
    set-and-restore fallback is not thread-safe, so it is used only where ``/proc`` is unavailable)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def file_mode() -> int:
    return 0o666 & ~current_umask()


def dir_mode() -> int:
    return 0o777 & ~current_umask()


def as_created(target, directory: bool = False) -> None:
    """Give ``target`` (a path or an open file descriptor) the mode a new file (or folder) gets under the
    current umask."""
    mode = dir_mode() if directory else file_mode()
    if isinstance(target, int):
        os.fchmod(target, mode)
    else:
        os.chmod(target, mode)


def mkstemp(**kwargs) -> tuple[int, str]:
    """``tempfile.mkstemp`` whose file has the mode ``open()`` would give it (see :func:`as_created`)."""
    fd, name = tempfile.mkstemp(**kwargs)
    as_created(fd)
    return fd, name


def mkdtemp(**kwargs) -> str:
    """``tempfile.mkdtemp`` whose folder has the mode ``mkdir`` would give it (see :func:`as_created`)."""
    name = tempfile.mkdtemp(**kwargs)
    as_created(name, directory=True)
    return name


class LockFileError(RuntimeError):
    """A lock file that cannot be used safely (its folder is a file, or the lock is a symbolic link)."""


def open_lock(path) -> int:
    """A file descriptor on the lock file ``path`` (created with the umask's mode if missing), never following a
    symbolic link (a dangling link in a lock folder would otherwise create files outside the tree). Raises
    :class:`LockFileError` naming the path when the folder is a file or the lock is a link."""
    from pathlib import Path

    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as e:
        raise LockFileError(f"{path.parent} must be a folder (it holds lock files) but a file is in the way: "
                            f"remove it ({e})") from None
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError as e:
        if os.path.islink(path):
            raise LockFileError(f"lock file {path} is a symbolic link: not followed (remove it)") from None
        raise


@contextlib.contextmanager
def locked(path, *, shared: bool = False):
    """An advisory ``flock`` on the lock file ``path`` (:func:`open_lock`: created if missing, never through a
    symbolic link), exclusive or ``shared``, held for the ``with`` block."""
    import fcntl

    fd = open_lock(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
