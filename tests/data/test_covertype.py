import gzip
import hashlib
import logging

import numpy as np
import pytest

from dpbench.data import DownloadError, load_dataset
from dpbench.data import covertype as cov
from dpbench.data.covertype import CovertypeFormatError, load_covertype
from dpbench.data.parsed import parsed_cache_path

NO_NET = ["file:///nonexistent/covtype.data.gz"]


def _make_covtype(folder, n=40, n_cols=55, seed=0, classes=None):
    """Write a tiny covtype.data.gz (ints, class last); return (sha256, features, classes)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    X = rng.integers(-200, 4000, (n, n_cols - 1))
    c = rng.integers(1, 8, n) if classes is None else np.asarray(classes)
    lines = "\n".join(",".join(str(v) for v in row) for row in np.column_stack([X, c])) + "\n"
    path = folder / "covtype.data.gz"
    with gzip.open(path, "wt") as f:
        f.write(lines)
    return hashlib.sha256(path.read_bytes()).hexdigest(), X, c


def _load(tmp_path, sha, **kw):
    kw.setdefault("n_rows", 40)
    kw.setdefault("train_size", 30)
    return load_covertype(tmp_path / "cache", tmp_path / "mirror", checksum=sha, urls=NO_NET, progress=False, **kw)


def test_constants():
    assert cov.COVTYPE_SHA256 == "614360d0257557dd1792834a85a1cdebfadc3c4f30b011d56afee7ffb5b15771"
    assert sum(cov.COVTYPE_CLASS_COUNTS.values()) == cov.COVTYPE_N_ROWS == cov.COVTYPE_N_TRAIN + cov.COVTYPE_N_TEST
    assert cov.COVTYPE_CLASS_COUNTS[2] == 283_301
    assert cov.COVTYPE_URLS[1] == "https://ndownloader.figshare.com/files/5976039"


def test_load_parse_binarise_split(tmp_path):
    sha, X, c = _make_covtype(tmp_path / "mirror")
    raw = _load(tmp_path, sha, seed=3)
    assert raw.X_train.shape == (30, 54) and raw.X_test.shape == (10, 54)
    assert raw.X_train.dtype == np.float32 and raw.y_train.dtype == np.int64
    # rows are a partition of the file, labels are class 2 vs rest
    Xall = np.vstack([raw.X_train, raw.X_test])
    yall = np.concatenate([raw.y_train, raw.y_test])
    order = np.lexsort(Xall.T[::-1])
    ref = np.lexsort(X.T[::-1])
    np.testing.assert_array_equal(Xall[order], X[ref].astype(np.float32))
    np.testing.assert_array_equal(yall[order], np.where(c[ref] == 2, 1, -1))
    assert set(np.unique(yall)) <= {-1, 1}
    # the split is the documented seeded permutation (data-independent)
    from dpbench.rng import generator

    perm = generator(3, "covertype/split").permutation(40)
    np.testing.assert_array_equal(raw.X_train, X[perm[:30]].astype(np.float32))
    np.testing.assert_array_equal(raw.y_test, np.where(c[perm[30:]] == 2, 1, -1))
    # deterministic; another seed gives another split
    again = _load(tmp_path, sha, seed=3)
    np.testing.assert_array_equal(raw.X_train, again.X_train)
    other = _load(tmp_path, sha, seed=4)
    assert not np.array_equal(raw.X_train, other.X_train)


def test_figshare_style_url_is_cached_under_the_file_name(tmp_path):
    sha, _, _ = _make_covtype(tmp_path / "src")
    nameless = tmp_path / "src" / "5976039"
    (tmp_path / "src" / "covtype.data.gz").rename(nameless)
    load_covertype(tmp_path / "cache", None, checksum=sha, urls=[*NO_NET, nameless.as_uri()], n_rows=40,
                   train_size=30, progress=False)
    assert (tmp_path / "cache" / "covtype.data.gz").is_file()


def test_bad_checksum_raises_and_caches_nothing(tmp_path):
    _make_covtype(tmp_path / "mirror")
    with pytest.raises(DownloadError, match="sha256 mismatch") as ei:
        _load(tmp_path, None)  # the real published checksum: the generated file cannot match it
    assert "covtype.data.gz" in str(ei.value) and "data.mirror" in str(ei.value)
    assert list((tmp_path / "cache").iterdir()) == []


def test_parsed_cache_reused_and_invalidated(tmp_path, monkeypatch):
    sha, _, _ = _make_covtype(tmp_path / "mirror")
    first = _load(tmp_path, sha)
    src = tmp_path / "cache" / "covtype.data.gz"
    key = f"{sha[:16]}-{cov.PARSER_VERSION}"
    npz = parsed_cache_path(src, key)
    assert (npz / "manifest.json").is_file()
    names = sorted(p.name for p in (tmp_path / "cache").iterdir() if not p.name.startswith("."))  # not locks
    assert names == sorted(["covtype.data.gz", npz.name])

    calls = []
    real_read = cov.read_covtype
    monkeypatch.setattr(cov, "read_covtype", lambda *a, **k: calls.append(1) or real_read(*a, **k))
    second = _load(tmp_path, sha)
    assert calls == []  # served from the parsed cache
    np.testing.assert_array_equal(first.X_test, second.X_test)

    # a changed source (new checksum) is re-parsed and the stale cache removed
    sha2, X2, _ = _make_covtype(tmp_path / "mirror", seed=1)
    src.unlink()
    third = _load(tmp_path, sha2)
    assert calls == [1]
    assert not npz.exists() and parsed_cache_path(src, f"{sha2[:16]}-{cov.PARSER_VERSION}").is_dir()
    assert np.isin(third.X_train[:, 0], X2[:, 0]).all()

    # a corrupt parsed cache is ignored and rewritten
    for f in parsed_cache_path(src, f"{sha2[:16]}-{cov.PARSER_VERSION}").glob("*.npy"):
        f.write_bytes(b"not an array")
    fourth = _load(tmp_path, sha2)
    assert calls == [1, 1]
    np.testing.assert_array_equal(third.X_train, fourth.X_train)


def test_wrong_column_count(tmp_path):
    sha, _, _ = _make_covtype(tmp_path / "mirror", n_cols=54)
    with pytest.raises(CovertypeFormatError, match="54 columns, expected 55"):
        _load(tmp_path, sha)
    # ragged rows
    bad = tmp_path / "m2" / "covtype.data.gz"
    bad.parent.mkdir()
    with gzip.open(bad, "wt") as f:
        f.write(",".join(["1"] * 55) + "\n" + ",".join(["1"] * 54) + "\n")
    sha = hashlib.sha256(bad.read_bytes()).hexdigest()
    with pytest.raises(CovertypeFormatError, match="covtype.data.gz: cannot parse"):
        load_covertype(tmp_path / "c2", bad.parent, checksum=sha, urls=NO_NET, n_rows=2, train_size=1, progress=False)
    assert not any(p.name.endswith(".npz") for p in (tmp_path / "c2").iterdir())


def test_row_class_and_count_checks(tmp_path):
    sha, _, _ = _make_covtype(tmp_path / "mirror")
    with pytest.raises(CovertypeFormatError, match="40 rows, expected 41"):
        _load(tmp_path, sha, n_rows=41)
    classes = [1] * 10 + [2] * 25 + [7] * 5
    sha, _, _ = _make_covtype(tmp_path / "m3", classes=classes)
    kw = dict(checksum=sha, urls=NO_NET, n_rows=40, train_size=30, progress=False)
    raw = load_covertype(tmp_path / "c3", tmp_path / "m3", class_counts={1: 10, 2: 25, 7: 5}, **kw)
    assert (np.concatenate([raw.y_train, raw.y_test]) == 1).sum() == 25
    with pytest.raises(CovertypeFormatError, match="class counts"):
        load_covertype(tmp_path / "c3", tmp_path / "m3", class_counts={1: 11, 2: 24, 7: 5}, **kw)
    sha, _, _ = _make_covtype(tmp_path / "m4", classes=[0] + [1] * 39)
    with pytest.raises(CovertypeFormatError, match="classes must lie in 1..7"):
        load_covertype(tmp_path / "c4", tmp_path / "m4", **kw | {"checksum": sha})


def test_registry_real_from_mirror(tmp_path, monkeypatch):
    classes = [2] * 20 + [3] * 20
    sha, _, _ = _make_covtype(tmp_path / "mirror", classes=classes)
    monkeypatch.setattr(cov, "COVTYPE_SHA256", sha)
    monkeypatch.setattr(cov, "COVTYPE_URLS", tuple(NO_NET))
    monkeypatch.setattr(cov, "COVTYPE_N_ROWS", 40)
    monkeypatch.setattr(cov, "COVTYPE_N_TRAIN", 30)
    monkeypatch.setattr(cov, "COVTYPE_CLASS_COUNTS", {2: 20, 3: 20})
    ds = load_dataset("covertype", cache_dir=tmp_path / "data", mirror=tmp_path / "mirror", source="auto", n_train=25)
    assert not ds.is_substitute and ds.variant == "covertype" and ds.n_classes == 2
    assert ds.X_train.shape == (25, 54) and ds.X_test.shape == (10, 54)
    assert set(np.unique(ds.y_train)) <= {-1, 1} and "±1" in ds.description
    assert (tmp_path / "data" / "covertype" / "covtype.data.gz").is_file()
    with pytest.raises(ValueError):
        ds.X_train[0, 0] = 1.0
    with pytest.raises(ValueError, match="has 30 train examples; n_train=31 needs the substitute"):
        load_dataset("covertype", cache_dir=tmp_path / "data", mirror=tmp_path / "mirror", n_train=31)


def test_registry_fallback_warns(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(cov, "COVTYPE_URLS", tuple(NO_NET))
    with caplog.at_level(logging.WARNING, logger="dpbench.data"):
        ds = load_dataset("covertype", cache_dir=tmp_path, source="auto", n_train=100, n_test=50)
    assert ds.is_substitute and ds.variant == "substitute:synthetic-covertype"
    msgs = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("substitute:synthetic-covertype" in m and "covtype.data.gz" in m and "data.mirror" in m for m in msgs)
    with pytest.raises(DownloadError):
        load_dataset("covertype", cache_dir=tmp_path, source="real", n_train=100, n_test=50)
