"""Output files and cache entries respect the user's umask (temporary file + rename used to make them 0600)."""

import contextlib
import os
import stat

import numpy as np
import pandas as pd
import pytest

from dpbench.data import cache
from dpbench.fsmode import current_umask
from dpbench.results import write_parquet
from dpbench.store import atomic_write_bytes


@contextlib.contextmanager
def umask(mask):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode(p) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


@pytest.mark.parametrize("mask", [0o002, 0o022, 0o077])
def test_atomic_writes_get_the_umask(tmp_path, mask):
    with umask(mask):
        assert current_umask() == mask
        atomic_write_bytes(tmp_path / "a.html", b"x")
        write_parquet(pd.DataFrame({"x": [1.0]}), tmp_path / "r.parquet", {"k": "v"})
        assert mode(tmp_path / "a.html") == 0o666 & ~mask
        assert mode(tmp_path / "r.parquet") == 0o666 & ~mask


@pytest.mark.parametrize("mask", [0o002, 0o077])
def test_cache_entries_get_the_umask(tmp_path, mask):
    def build(tmp, previous):
        cache.save_arrays(tmp, {"X": np.zeros(3)})
        return {}

    with umask(mask):
        cache.write_entry(tmp_path / "entry", build)
    assert mode(tmp_path / "entry") == 0o777 & ~mask
    assert mode(tmp_path / "entry" / "X.npy") == 0o666 & ~mask
