import io
import logging
import tarfile

import numpy as np
import pytest

from dpbench.data import DownloadError, load_dataset
from dpbench.data import protein as prot
from dpbench.data.protein import ProteinFormatError, load_protein, read_bio_train

NO_NET = ["file:///nonexistent/data_kddcup04.tar.gz"]
N = 41  # odd, like the real 145,751: train gets the extra row


def _rows(n=N, n_features=74, seed=0, labels=None):
    rng = np.random.default_rng(seed)
    lab = rng.integers(0, 2, n) if labels is None else np.asarray(labels)
    feats = np.round(rng.normal(0, 30, (n, n_features)), 3)
    lines = []
    for i in range(n):
        lines.append("\t".join([str(279 + i // 10), str(100000 + i), str(lab[i]), *("%g" % v for v in feats[i])]))
    return "\n".join(lines) + "\n", lab, feats


def _write(folder, text, name="bio_train.dat"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder / name


def _tarball(folder, text, member="kddcup04/bio_train.dat"):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "data_kddcup04.tar.gz"
    data = text.encode()
    with tarfile.open(path, "w:gz") as tar:
        for name, payload in (("kddcup04/bio_test.dat", b"1\t2\t3\n"), (member, data)):
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    return path


def _load(tmp_path, mirror, **kw):
    kw.setdefault("n_rows", N)
    kw.setdefault("train_size", 21)
    return load_protein(tmp_path / "cache", mirror, urls=NO_NET, progress=False, **kw)


def test_read_and_halves_split(tmp_path):
    text, lab, feats = _rows()
    _write(tmp_path / "mirror", text)
    raw = _load(tmp_path, tmp_path / "mirror", seed=5)
    assert raw.X_train.shape == (21, 74) and raw.X_test.shape == (20, 74)
    assert raw.X_train.dtype == np.float32 and raw.y_train.dtype == np.int64
    from dpbench.rng import generator

    perm = generator(5, "protein/split").permutation(N)
    np.testing.assert_allclose(raw.X_train, feats[perm[:21]], rtol=1e-6)
    np.testing.assert_array_equal(raw.y_train, 2 * lab[perm[:21]] - 1)
    np.testing.assert_array_equal(raw.y_test, 2 * lab[perm[21:]] - 1)
    assert set(np.unique(raw.y_train)) <= {-1, 1}
    assert len(np.intersect1d(perm[:21], perm[21:])) == 0
    again = _load(tmp_path, None, seed=5)  # from the cache, no mirror needed
    np.testing.assert_array_equal(raw.X_test, again.X_test)
    assert not np.array_equal(_load(tmp_path, None, seed=6).X_train, raw.X_train)
    names = sorted(p.name for p in (tmp_path / "cache").iterdir() if not p.name.startswith("."))  # not locks
    assert names[0] == "bio_train.dat" and names[1].startswith("bio_train.dat.parsed-") and len(names) == 2
    d = read_bio_train(tmp_path / "cache" / "bio_train.dat")
    np.testing.assert_array_equal(d["example"], 100000 + np.arange(N))
    np.testing.assert_array_equal(d["block"][:11], [279] * 10 + [280])


def test_tarball_in_mirror(tmp_path):
    text, lab, _ = _rows(seed=1)
    _tarball(tmp_path / "mirror", text)
    raw = _load(tmp_path, tmp_path / "mirror")
    assert np.sort(np.concatenate([raw.y_train, raw.y_test])).tolist() == sorted((2 * lab - 1).tolist())
    assert (tmp_path / "cache" / "bio_train.dat").read_text() == text
    assert not any(p.name.startswith(".") and not p.name.endswith(".lock") for p in (tmp_path / "cache").iterdir())


def test_tarball_as_url(tmp_path):
    text, _, _ = _rows(seed=2)
    tgz = _tarball(tmp_path / "src", text)
    raw = load_protein(tmp_path / "cache", None, urls=[*NO_NET, tgz.as_uri()], n_rows=N, train_size=21, progress=False)
    assert raw.X_train.shape == (21, 74)


@pytest.mark.parametrize(
    "kind, match",
    [
        ("columns", "76 columns, expected 77"),
        ("labels", r"labels \(column 3\) must be 0 or 1, found \[2\]"),
        ("rows", f"{N - 1} rows, expected {N}"),
        ("text", "cannot parse"),
    ],
)
def test_content_verification_errors(tmp_path, kind, match):
    if kind == "columns":
        text, _, _ = _rows(n_features=73)
    elif kind == "labels":
        text, _, _ = _rows(labels=[0] * (N - 1) + [2])
    elif kind == "rows":
        text, _, _ = _rows(n=N - 1)
    else:
        text = _rows()[0].replace("\t", "\tx", 1)
    _write(tmp_path / "mirror", text)
    with pytest.raises(DownloadError, match=match) as ei:
        _load(tmp_path, tmp_path / "mirror")
    assert "content is verified" in str(ei.value) and "data.mirror" in str(ei.value)
    assert list((tmp_path / "cache").iterdir()) == []  # nothing poisons the cache


def test_bad_mirror_file_falls_through_to_archive(tmp_path):
    text, _, _ = _rows()
    _write(tmp_path / "mirror", _rows(n_features=70)[0])
    _tarball(tmp_path / "mirror", text)
    raw = _load(tmp_path, tmp_path / "mirror")
    assert raw.X_train.shape == (21, 74)


def test_bad_cached_file_is_replaced_or_removed(tmp_path):
    text, _, _ = _rows()
    _write(tmp_path / "cache", "1\t2\t3\n")  # e.g. copied in by hand
    _write(tmp_path / "mirror", text)
    raw = _load(tmp_path, tmp_path / "mirror")
    assert raw.X_test.shape == (20, 74)
    assert (tmp_path / "cache" / "bio_train.dat").read_text() == text
    _write(tmp_path / "c2", "1\t2\t3\n")
    with pytest.raises(DownloadError, match="bio_train.dat"):
        load_protein(tmp_path / "c2", None, urls=NO_NET, n_rows=N, train_size=21, progress=False)
    assert [p for p in (tmp_path / "c2").iterdir() if not p.name.endswith(".lock")] == []


def test_archive_without_member(tmp_path):
    _tarball(tmp_path / "mirror", _rows()[0], member="kddcup04/other.dat")
    with pytest.raises(DownloadError, match="no member named bio_train.dat"):
        _load(tmp_path, tmp_path / "mirror")


def test_parsed_cache_reused_and_invalidated(tmp_path, monkeypatch):
    text, _, _ = _rows()
    _write(tmp_path / "mirror", text)
    first = _load(tmp_path, tmp_path / "mirror")
    calls = []
    real_read = prot.read_bio_train
    monkeypatch.setattr(prot, "read_bio_train", lambda *a, **k: calls.append(1) or real_read(*a, **k))
    np.testing.assert_array_equal(_load(tmp_path, None).X_train, first.X_train)
    assert calls == []
    # the cached source changes (e.g. replaced by hand): re-parsed, old parsed cache dropped
    text2, _, feats2 = _rows(seed=9)
    _write(tmp_path / "cache", text2)
    second = _load(tmp_path, None, seed=0)
    assert calls == [1]
    assert np.isin(second.X_train[:, 0], feats2[:, 0].astype(np.float32)).all()
    assert len([p for p in (tmp_path / "cache").iterdir() if ".parsed-" in p.name and not p.name.startswith(".")]) == 1


def test_registry_real_and_fallback(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(prot, "PROTEIN_URLS", tuple(NO_NET))
    with caplog.at_level(logging.WARNING, logger="dpbench.data"):
        ds = load_dataset("protein", cache_dir=tmp_path / "d1", source="auto", n_train=80, n_test=60)
    assert ds.is_substitute and ds.variant == "substitute:synthetic-protein" and ds.n_classes == 2
    msgs = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("substitute:synthetic-protein" in m and "bio_train.dat" in m and "data.mirror" in m for m in msgs)
    with pytest.raises(DownloadError):
        load_dataset("protein", cache_dir=tmp_path / "d1", source="real")

    text, _, _ = _rows()
    _write(tmp_path / "mirror", text)
    monkeypatch.setattr(prot, "PROTEIN_N_ROWS", N)
    monkeypatch.setattr(prot, "PROTEIN_N_TRAIN", 21)
    monkeypatch.setattr(prot, "PROTEIN_N_TEST", 20)
    monkeypatch.setattr(prot, "PROTEIN_N_BLOCKS", 5)   # blocks 279..283 of _rows
    ds = load_dataset("protein", cache_dir=tmp_path / "d2", mirror=tmp_path / "mirror", source="auto", n_test=7)
    assert not ds.is_substitute and ds.variant == "protein"
    assert ds.X_train.shape == (21, 74) and ds.X_test.shape == (7, 74)
    assert set(np.unique(ds.y_train)) <= {-1, 1}
    assert (tmp_path / "d2" / "protein" / "bio_train.dat").is_file()


def test_read_bio_train_raises_format_errors(tmp_path):
    p = _write(tmp_path, _rows(n_features=75)[0])
    with pytest.raises(ProteinFormatError, match="bio_train.dat: 78 columns, expected 77"):
        read_bio_train(p)
    p = _write(tmp_path, _rows(labels=[0] * (N - 1) + [-1])[0])
    with pytest.raises(ProteinFormatError, match=r"must be 0 or 1, found \[-1\]"):
        read_bio_train(p)
    p = _write(tmp_path, "1.5\t2\t0\t" + "\t".join(["0.1"] * 74) + "\n")
    with pytest.raises(ProteinFormatError, match="must be integers"):
        read_bio_train(p)


def test_ids_are_checked():
    """Beyond shape and labels: repeated example ids, block ids outside 1..303 and (for the full file) a wrong
    number of distinct blocks are named errors."""
    import pytest

    text, lab, feats = _rows()
    arrays = {"block": np.full(N, 279, np.int64), "example": np.arange(N, dtype=np.int64),
              "label": lab.astype(np.int8), "features": feats.astype(np.float32)}
    prot.verify_protein(arrays, N)
    prot.verify_protein(arrays, N, n_blocks=1)
    with pytest.raises(ProteinFormatError, match="distinct blocks"):
        prot.verify_protein(arrays, N, n_blocks=153)
    with pytest.raises(ProteinFormatError, match="example ids"):
        prot.verify_protein({**arrays, "example": np.zeros(N, np.int64)}, N)
    with pytest.raises(ProteinFormatError, match="1..303"):
        prot.verify_protein({**arrays, "block": np.full(N, 304, np.int64)}, N)
