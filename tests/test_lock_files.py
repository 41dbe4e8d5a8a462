"""Lock files never follow a symbolic link (a dangling link in results/cache/locks/ created files outside the
tree), and a file where the lock folder should be is a named error, not a FileExistsError traceback."""

import os

import pytest

from dpbench.data.cache import file_lock
from dpbench.fsmode import LockFileError
from dpbench.store import Store


def test_a_dangling_symlink_lock_is_refused_and_nothing_is_created_outside(tmp_path):
    store = Store(tmp_path / "cache")
    (tmp_path / "cache" / "locks").mkdir(parents=True)
    outside = tmp_path / "outside" / "victim"
    (tmp_path / "outside").mkdir()
    os.symlink(outside, tmp_path / "cache" / "locks" / "k.lock")
    with pytest.raises(LockFileError, match="symbolic link"):
        with store.lock("k"):
            pass
    assert not outside.exists()
    os.symlink(outside, tmp_path / "data.lock")
    with pytest.raises(LockFileError, match="symbolic link"):
        with file_lock(tmp_path / "data.lock"):
            pass
    assert not outside.exists()


def test_a_file_in_place_of_the_lock_folder_is_named(tmp_path):
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "locks").write_text("not a folder")
    with pytest.raises(LockFileError, match="must be a folder"):
        with Store(tmp_path / "cache").lock("k"):
            pass


def test_locks_still_work(tmp_path):
    store = Store(tmp_path / "cache")
    with store.lock("a"):
        with store.lock("b"):
            pass
    with file_lock(tmp_path / "x.lock", shared=True):
        pass
