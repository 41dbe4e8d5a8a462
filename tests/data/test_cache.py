"""The shared data-cache helper and the caches built on it: concurrent writers (processes started together at a
barrier) build once and never shrink an entry; corrupt entries are reported and rebuilt; killed writers'
temporaries are swept."""

from __future__ import annotations

import json
import multiprocessing as mp
import time
from pathlib import Path

import numpy as np
import pytest

from dpbench.data import cache
from dpbench.data.parsed import cached_parse, parsed_cache_path


def _race(n, target, *args):
    """Run ``target(barrier, out, i, *args)`` in ``n`` forked processes released together; their reports."""
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=target, args=(barrier, out, i, *args)) for i in range(n)]
    for p in procs:
        p.start()
    got = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    return got


def _count(counter):
    with open(counter, "a") as fh:
        fh.write("x")


# ------------------------------------------------------------------------------------------------ the helper
def _grow_worker(barrier, out, i, folder, sizes):
    n = sizes[i]

    def build(tmp, previous):
        have = previous.rows("a") if previous is not None else 0
        m = max(n, have)
        time.sleep(0.1 * (len(sizes) - i))  # smaller requests finish last: the worst interleaving
        np.save(tmp / "a.npy", np.arange(m))
        np.save(tmp / "b.npy", -np.arange(m))
        return {"rows": m}

    barrier.wait()
    try:
        e = cache.open_entry(folder, build, accept=lambda e: e.rows("a") >= n)
        ok = e.rows("a") >= n and np.array_equal(e.arrays["a"][:n], np.arange(n)) and np.array_equal(
            e.arrays["b"], -e.arrays["a"])
        out.put("ok" if ok else "bad")
    except Exception as exc:  # noqa: BLE001
        out.put(f"{type(exc).__name__}: {exc}")


def test_stress_entry_grows_and_never_shrinks(tmp_path):
    sizes = [5, 50, 500, 5000, 50]
    got = _race(len(sizes), _grow_worker, tmp_path / "entry", sizes)
    assert got == ["ok"] * len(sizes), got
    assert np.load(tmp_path / "entry" / "a.npy").shape == (5000,)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith((".tmp", ".old"))]


def test_refuses_to_shrink_a_valid_entry(tmp_path):
    folder = tmp_path / "e"
    cache.open_entry(folder, lambda tmp, prev: np.save(tmp / "a.npy", np.arange(10)) or {})
    with pytest.raises(RuntimeError, match="shrink"):
        cache.open_entry(folder, lambda tmp, prev: np.save(tmp / "a.npy", np.arange(3)) or {},
                         accept=lambda e: False)
    assert np.load(folder / "a.npy").shape == (10,)


def test_writer_killed_between_renames_is_recovered(tmp_path):
    folder = tmp_path / "e"
    cache.open_entry(folder, lambda tmp, prev: np.save(tmp / "a.npy", np.arange(4)) or {})
    aside = tmp_path / ".e.k1ll.old"
    aside.mkdir()
    folder.rename(aside / "entry")  # what a SIGKILL between the two renames of a commit leaves
    half = tmp_path / ".e.h4lf.tmp"
    half.mkdir()
    (half / "a.npy").write_bytes(b"partial")
    e = cache.open_entry(folder, lambda tmp, prev: np.save(tmp / "a.npy", np.arange(4)) or {})
    np.testing.assert_array_equal(e.arrays["a"], np.arange(4))
    assert not aside.exists() and not half.exists()


@pytest.mark.parametrize("damage", ["truncate", "flip", "missing", "manifest"])
def test_corrupt_entry_is_reported_and_rebuilt(tmp_path, dpbench_log, damage):
    folder = tmp_path / "e"
    builds = []

    def build(tmp, prev):
        builds.append(1)
        np.save(tmp / "a.npy", np.arange(100.0))
        return {}

    cache.open_entry(folder, build)
    f = folder / ("manifest.json" if damage == "manifest" else "a.npy")
    data = f.read_bytes()
    if damage == "truncate" or damage == "manifest":
        f.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        f.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    else:
        f.unlink()
    cache._verified.clear()
    with dpbench_log.at_level("WARNING"):
        e = cache.open_entry(folder, build)
    assert builds == [1, 1] and str(folder) in dpbench_log.text
    np.testing.assert_array_equal(e.arrays["a"], np.arange(100.0))
    assert json.loads((folder / "manifest.json").read_text())["files"]["a.npy"]["shape"] == [100]


def test_verified_hashes_are_recorded_for_the_next_process(tmp_path, monkeypatch):
    """A job's first read of an entry hashes its files once and records the verified version (inode, size,
    mtime, ctime); the next process (``_verified`` cleared) trusts the record and hashes nothing; a file damaged
    with its modification time put back still moves its ctime, is hashed again and caught."""
    import os

    folder = tmp_path / "e"
    cache.open_entry(folder, lambda tmp, prev: np.save(tmp / "a.npy", np.arange(1000.0)) or {})
    hashed = []
    real = cache.file_sha256
    monkeypatch.setattr(cache, "file_sha256", lambda p: hashed.append(p) or real(p))
    cache._verified.clear()
    assert cache.read_entry(folder) is not None and len(hashed) == 1   # first job: hashed, recorded
    assert (folder / cache.VERIFIED).exists()
    cache._verified.clear()
    assert cache.read_entry(folder) is not None and len(hashed) == 1   # next job: the record suffices
    f = folder / "a.npy"
    st = f.stat()
    data = f.read_bytes()
    time.sleep(0.01)
    f.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))                  # mtime restored, ctime cannot be
    cache._verified.clear()
    assert cache.read_entry(folder) is None and len(hashed) == 2      # re-hashed, corrupt


def test_read_only_entry_still_validates(tmp_path):
    """A cache folder that cannot be written keeps working (no record, every process hashes)."""
    import os
    import stat

    folder = tmp_path / "e"
    cache.open_entry(folder, lambda tmp, prev: np.save(tmp / "a.npy", np.arange(10.0)) or {})
    os.chmod(folder, stat.S_IRUSR | stat.S_IXUSR)
    try:
        cache._verified.clear()
        assert cache.read_entry(folder) is not None
    finally:
        os.chmod(folder, stat.S_IRWXU)


# ------------------------------------------------------------------------------------------ parsed caches
def _parse_worker(barrier, out, i, source, counter):
    def parse(path):
        _count(counter)
        time.sleep(0.3)
        return {"X": np.arange(12).reshape(4, 3) + int(Path(path).read_text()), "y": np.arange(4)}

    barrier.wait()
    try:
        a = cached_parse(source, "k1", parse, lambda a: None)
        out.put("ok" if np.array_equal(a["X"], np.arange(12).reshape(4, 3) + 7) else "bad")
    except Exception as exc:  # noqa: BLE001
        out.put(f"{type(exc).__name__}: {exc}")


def test_stress_parsed_cache_is_parsed_once(tmp_path):
    source = tmp_path / "src.txt"
    source.write_text("7")
    counter = tmp_path / "parses"
    counter.write_text("")
    assert _race(4, _parse_worker, source, counter) == ["ok"] * 4
    assert counter.read_text() == "x"  # one parse; the others waited for the lock and read the entry


def test_corrupt_parsed_cache_is_reported_and_reparsed(tmp_path, dpbench_log):
    source = tmp_path / "src.txt"
    source.write_text("1")
    calls = []
    parse = lambda p: calls.append(1) or {"X": np.ones((3, 2))}  # noqa: E731
    cached_parse(source, "k", parse, lambda a: None)
    folder = parsed_cache_path(source, "k")
    (folder / "X.npy").write_bytes(b"\x93NUMPY garbage")
    with dpbench_log.at_level("WARNING"):
        a = cached_parse(source, "k", parse, lambda a: None)
    assert calls == [1, 1] and str(folder) in dpbench_log.text
    np.testing.assert_array_equal(a["X"], np.ones((3, 2)))


# --------------------------------------------------------------------------------- simulated Markov chains
def _markov_worker(barrier, out, i, cache_dir, counter):
    from dpbench.data import markov

    real = markov.simulate_activity

    def counting(*a, **k):
        _count(counter)
        time.sleep(0.3)
        return real(*a, **k)

    markov.simulate_activity = counting
    barrier.wait()
    try:
        d = markov.load_activity(cache_dir, 0, persons=(2, 1, 2), observations=(50, 60))
        out.put(int(sum(int(c.states.sum()) for c in d.values())))
    except Exception as exc:  # noqa: BLE001
        out.put(f"{type(exc).__name__}: {exc}")


def test_stress_markov_cache_is_simulated_once(tmp_path):
    counter = tmp_path / "sims"
    counter.write_text("")
    got = _race(4, _markov_worker, tmp_path / "cache", counter)
    assert len(set(got)) == 1 and isinstance(got[0], int), got
    assert counter.read_text() == "x"


def test_corrupt_markov_cache_is_rebuilt(tmp_path, dpbench_log):
    from dpbench.data import markov

    first = markov.load_electricity(tmp_path, 0, T=500)
    [folder] = [p for p in (tmp_path / "song2018").iterdir() if not p.name.startswith(".")]
    victim = next(folder.glob("*.states.npy"))
    victim.write_bytes(victim.read_bytes()[:100])
    with dpbench_log.at_level("WARNING"):
        again = markov.load_electricity(tmp_path, 0, T=500)
    assert str(folder) in dpbench_log.text
    np.testing.assert_array_equal(again.states, first.states)
