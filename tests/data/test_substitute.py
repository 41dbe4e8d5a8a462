import numpy as np
import pytest

from dpbench.data import DeformedDigits, load_substitute
from dpbench.data.substitute import substitute_cache_dir


@pytest.fixture(scope="module")
def gen():
    return DeformedDigits(seed=0)


def test_originals_split_disjoint_and_stratified(gen):
    idx_tr, _, y_tr = gen.originals("train")
    idx_te, _, y_te = gen.originals("test")
    assert len(np.intersect1d(idx_tr, idx_te)) == 0
    assert len(idx_tr) + len(idx_te) == 1797 and len(np.unique(idx_tr)) == len(idx_tr)
    assert abs(len(idx_te) / 1797 - 0.2) < 0.01
    for c in range(10):
        frac = np.mean(y_te == c) / np.mean(y_tr == c)
        assert 0.85 < frac < 1.15


def test_images_shape_range_and_labels(gen):
    X, y = gen.images("train", 0, 50)
    assert X.shape == (50, 784) and X.dtype == np.float32
    assert X.min() >= 0.0 and X.max() <= 1.0 and X.max() > 0.9
    assert y.dtype == np.int64 and set(np.unique(y)) <= set(range(10))
    np.testing.assert_allclose(X * 255, np.round(X * 255), atol=1e-4)  # 8-bit levels like MNIST
    # border of 4 px is mostly blank like MNIST, not all (deformations may move strokes)
    img = X.reshape(50, 28, 28)
    assert img[:, :2, :].mean() < 0.02


def test_determinism_and_slices(gen):
    X1, y1 = gen.images("train", 10, 20)
    X2, y2 = gen.images("train", 0, 30)
    np.testing.assert_array_equal(X1, X2[10:20])
    np.testing.assert_array_equal(y1, y2[10:20])
    X3, y3 = DeformedDigits(seed=0).images("train", 0, 30)
    np.testing.assert_array_equal(X2, X3)
    X4, _ = DeformedDigits(seed=1).images("train", 0, 30)
    assert not np.array_equal(X2, X4)
    # chunk boundaries and joblib workers do not change anything
    from dpbench.data import substitute

    Xa, _ = gen.images("test", 350, 380)
    old = substitute._CHUNK
    substitute._CHUNK = 7
    try:
        Xb, _ = gen.images("test", 350, 380, n_jobs=2)
    finally:
        substitute._CHUNK = old
    np.testing.assert_array_equal(Xa, Xb)


def test_test_set_starts_with_undeformed_originals(gen):
    idx_te, imgs, y_te = gen.originals("test")
    m = len(idx_te)
    X, y = gen.images_uint8("test", 0, m + 5)
    np.testing.assert_array_equal(X[:m], np.round(imgs.reshape(m, -1) * 255).astype(np.uint8))
    np.testing.assert_array_equal(y[:m], y_te)
    np.testing.assert_array_equal(y[m:], y_te[:5])  # deformed copies cycle through held-out originals
    assert not np.allclose(X[m], X[0])


def test_train_uses_only_training_originals(gen):
    idx_tr, imgs_tr, y_tr = gen.originals("train")
    n = len(idx_tr)
    _, y = gen.images("train", 0, n + 3)
    np.testing.assert_array_equal(y[:n], y_tr)
    np.testing.assert_array_equal(y[n:], y_tr[:3])


def test_bad_arguments(gen):
    with pytest.raises(ValueError, match="split"):
        gen.images("val", 0, 3)
    with pytest.raises(ValueError, match="start"):
        gen.images("train", 5, 3)
    with pytest.raises(ValueError, match="unknown deformation"):
        DeformedDigits(0, deformation={"twist": 1})


def test_load_substitute_caches(tmp_path, gen):
    raw = load_substitute(tmp_path, n_train=300, n_test=120, seed=0)
    folder = substitute_cache_dir(tmp_path, 0)
    assert folder.parent.name == "deformed-digits-v1"
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["X_test.npy", "X_train.npy", "manifest.json", "params.json", "y_test.npy", "y_train.npy"]
    assert [p.name for p in folder.parent.iterdir() if p.name.endswith(".tmp")] == []  # no temp files
    assert np.load(folder / "X_train.npy").dtype == np.uint8
    assert raw.X_train.dtype == np.float32 and raw.X_train.shape == (300, 784)
    X, y = gen.images("train", 0, 300)
    np.testing.assert_array_equal(raw.X_train, X)
    np.testing.assert_array_equal(raw.y_train, y)
    # reload: nothing regenerated; a smaller request is a prefix
    mtime = (folder / "X_train.npy").stat().st_mtime_ns
    raw2 = load_substitute(tmp_path, n_train=100, n_test=120, seed=0)
    assert (folder / "X_train.npy").stat().st_mtime_ns == mtime
    np.testing.assert_array_equal(raw.X_train[:100], raw2.X_train)
    np.testing.assert_array_equal(raw.X_test, raw2.X_test)
    # a larger request extends the cache with identical leading rows
    raw3 = load_substitute(tmp_path, n_train=450, n_test=120, seed=0)
    np.testing.assert_array_equal(raw3.X_train[:300], raw.X_train)
    np.testing.assert_array_equal(raw3.X_train[300:], gen.images("train", 300, 450)[0])
    assert np.load(folder / "X_train.npy", mmap_mode="r").shape == (450, 784)
    assert substitute_cache_dir(tmp_path, 1) != folder


def test_stopped_generation_resumes_from_its_last_step(tmp_path, gen, monkeypatch):
    """ensure_substitute commits every ``step`` training rows: a generation stopped in its third step keeps the
    two committed steps, and the rerun generates only the rest (identical rows)."""
    import dpbench.data.substitute as sub

    real, asked = sub._build_split, []

    def stop_in_third_step(g, tmp, previous, split, n, n_jobs):
        asked.append((split, previous.rows(f"X_{split}") if previous is not None else 0, n))
        if split == "train" and n > 100:
            raise KeyboardInterrupt   # Ctrl-C during the third step
        return real(g, tmp, previous, split, n, n_jobs)

    monkeypatch.setattr(sub, "_build_split", stop_in_third_step)
    with pytest.raises(KeyboardInterrupt):
        sub.ensure_substitute(tmp_path, n_train=130, n_test=20, step=50)
    folder = substitute_cache_dir(tmp_path, 0)
    assert np.load(folder / "X_train.npy", mmap_mode="r").shape == (100, 784)   # two steps committed
    monkeypatch.setattr(sub, "_build_split", real)
    asked.clear()
    real_build = sub._build_split

    def record(g, tmp, previous, split, n, n_jobs):
        asked.append((split, previous.rows(f"X_{split}") if previous is not None else 0, n))
        return real_build(g, tmp, previous, split, n, n_jobs)

    monkeypatch.setattr(sub, "_build_split", record)
    sub.ensure_substitute(tmp_path, n_train=130, n_test=20, step=50)
    assert ("train", 100, 130) in asked and not any(s == "train" and have < 100 for s, have, _ in asked)
    X = np.load(folder / "X_train.npy")
    np.testing.assert_array_equal(X, gen.images_uint8("train", 0, 130)[0])
    with pytest.raises(ValueError, match="step"):
        sub.ensure_substitute(tmp_path, n_train=130, n_test=20, step=0)


def test_inconsistent_cache_is_regenerated(tmp_path, gen):
    load_substitute(tmp_path, n_train=50, n_test=20, seed=0)
    folder = substitute_cache_dir(tmp_path, 0)
    np.save(folder / "y_train.npy", np.zeros(7, dtype=np.int64))  # e.g. interrupted between the two writes
    raw = load_substitute(tmp_path, n_train=50, n_test=20, seed=0)
    np.testing.assert_array_equal(raw.y_train, gen.images("train", 0, 50)[1])


@pytest.mark.parametrize("damage", ["truncate", "garbage", "flip"])
def test_corrupt_cache_is_reported_and_rebuilt(tmp_path, gen, dpbench_log, damage):
    load_substitute(tmp_path, n_train=40, n_test=20, seed=0)
    folder = substitute_cache_dir(tmp_path, 0)
    path = folder / "X_train.npy"
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(np.random.default_rng(0).bytes(len(data)))
    else:  # same size, same header, one pixel changed: only the content hash sees it
        path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with dpbench_log.at_level("WARNING"):
        raw = load_substitute(tmp_path, n_train=40, n_test=20, seed=0)
    assert str(folder) in dpbench_log.text and "corrupt" in dpbench_log.text
    np.testing.assert_array_equal(raw.X_train, gen.images("train", 0, 40)[0])


def test_stale_temporaries_are_swept(tmp_path):
    load_substitute(tmp_path, n_train=20, n_test=10, seed=0)
    folder = substitute_cache_dir(tmp_path, 0)
    stale_inside = folder / ".X_train.npy.abc123.tmp"  # what a killed writer of an older version left
    stale_inside.write_bytes(b"x" * 100)
    stale_next = folder.parent / f".{folder.name}.xyz.tmp"
    stale_next.mkdir()
    (stale_next / "X_train.npy").write_bytes(b"partial")
    load_substitute(tmp_path, n_train=30, n_test=10, seed=0)  # a writer (larger request) sweeps them
    assert not stale_inside.exists() and not stale_next.exists()


def _racing_request(cache_dir, n, delay, barrier, out):
    """One process of the stress test: waits at the barrier, then asks for ``n`` training rows; generation is
    slowed down by ``delay`` s so that smaller (earlier) requests commit last -- the worst interleaving."""
    import time

    from dpbench.data import substitute as sub

    real = sub.DeformedDigits.images_uint8

    def slow(self, *args, **kwargs):
        result = real(self, *args, **kwargs)
        time.sleep(delay)
        return result

    sub.DeformedDigits.images_uint8 = slow
    barrier.wait()
    try:
        raw = sub.load_substitute(cache_dir, n_train=n, n_test=10, seed=0)
        want_X, want_y = sub.DeformedDigits(0).images("train", 0, n)
        ok = raw.X_train.shape == (n, 784) and np.array_equal(raw.X_train, want_X) and np.array_equal(raw.y_train, want_y)
        out.put((n, "ok" if ok else "wrong rows"))
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        out.put((n, f"{type(exc).__name__}: {exc}"))


def test_stress_concurrent_requests_of_different_sizes(tmp_path):
    """Several processes extend one substitute cache at once (different sizes, started together): every one
    gets its rows, the cache ends with the largest size (never shrinks) and consistent X/y."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    sizes = [30, 60, 90, 120]
    barrier, out = ctx.Barrier(len(sizes)), ctx.Queue()
    procs = [ctx.Process(target=_racing_request, args=(tmp_path, n, 0.3 * (len(sizes) - i), barrier, out))
             for i, n in enumerate(sizes)]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    assert results == {n: "ok" for n in sizes}, results
    folder = substitute_cache_dir(tmp_path, 0)
    X, y = np.load(folder / "X_train.npy"), np.load(folder / "y_train.npy")
    assert X.shape == (max(sizes), 784) and y.shape == (max(sizes),)
    want_X, want_y = DeformedDigits(0).images_uint8("train", 0, max(sizes))
    np.testing.assert_array_equal(X, want_X)
    np.testing.assert_array_equal(y, want_y)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_far_above_chance(gen):
    from sklearn.linear_model import LogisticRegression

    Xtr, ytr = gen.images("train", 0, 1500)
    Xte, yte = gen.images("test", 0, 600)
    acc = LogisticRegression(max_iter=100).fit(Xtr, ytr).score(Xte, yte)
    assert acc > 0.7, acc
