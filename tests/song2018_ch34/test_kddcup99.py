"""KDDCup99 loader on tiny generated files in the real format (gzip CSV, 42 fields); no network."""

import gzip
import hashlib
import logging

import numpy as np
import pytest

from dpbench.data import DownloadError, clear_cache, load_dataset
from dpbench.data import kddcup99 as kdd
from dpbench.rng import generator

NO_NET = ["file:///nonexistent/kddcup.data_10_percent.gz"]
PROTOCOLS = ["tcp", "udp", "icmp"]
SERVICES = ["http", "smtp", "private", "ecr_i"]
FLAGS = ["SF", "S0", "REJ"]
LABELS = ["normal.", "smurf.", "neptune.", "back."]


@pytest.fixture(autouse=True)
def _fresh():
    clear_cache()
    yield
    clear_cache()


def _make(folder, n=50, seed=0, fields=42):
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    num = rng.integers(0, 1000, (n, 38)).astype(float)
    num[:, 20:] = rng.random((n, 18)).round(2)
    cats = [rng.choice(PROTOCOLS, n), rng.choice(SERVICES, n), rng.choice(FLAGS, n)]
    lab = rng.choice(LABELS, n)
    lines = []
    for i in range(n):
        vals = [f"{num[i, 0]:g}", cats[0][i], cats[1][i], cats[2][i]] + [f"{v:g}" for v in num[i, 1:]] + [lab[i]]
        lines.append(",".join(vals[:fields - 1] + [lab[i]]) if fields != 42 else ",".join(vals))
    path = folder / kdd.KDD_FILE
    with gzip.open(path, "wt") as f:
        f.write("\n".join(lines) + "\n")
    return hashlib.sha256(path.read_bytes()).hexdigest(), num, cats, lab


def test_constants_are_scikit_learns_metadata():
    assert kdd.KDD_SHA256 == "8045aca0d84e70e622d1148d7df782496f6333bf6eb979a1b0837c42a9fd9561"
    assert kdd.KDD_URLS[0] == "https://ndownloader.figshare.com/files/5976042"
    assert kdd.KDD_FULL_SHA256 == "3b6c942aa0356c0ca35b7b595a26c89d343652c9db428893e7494f837b274292"
    assert kdd.KDD_N_TRAIN == 50_000


def test_parse_label_onehot_and_seeded_subsample(tmp_path):
    sha, num, cats, lab = _make(tmp_path / "mirror")
    raw = kdd.load_kddcup99(tmp_path / "cache", tmp_path / "mirror", seed=4, checksum=sha, urls=NO_NET,
                            n_train=30, n_test=12, progress=False)
    width = 38 + len(set(cats[0])) + len(set(cats[1])) + len(set(cats[2]))
    assert raw.X_train.shape == (30, width) and raw.X_test.shape == (12, width)
    perm = generator(4, kdd.SUBSAMPLE_KEY).permutation(50)
    np.testing.assert_array_equal(raw.y_train, np.where(lab[perm[:30]] == "normal.", -1, 1))
    np.testing.assert_allclose(raw.X_train[:, :38], num[perm[:30]])
    onehot = raw.X_train[:, 38:38 + 3]                       # protocol_type, sorted vocabulary
    vocab = sorted(set(cats[0]))
    np.testing.assert_array_equal(onehot.argmax(1), [vocab.index(v) for v in cats[0][perm[:30]]])
    assert np.all(raw.X_train[:, 38:].sum(1) == 3)            # one category per categorical column
    assert not set(perm[:30]) & set(perm[30:42])
    # the parsed cache is reused and gives the same arrays
    again = kdd.load_kddcup99(tmp_path / "cache", tmp_path / "mirror", seed=4, checksum=sha, urls=NO_NET,
                              n_train=30, n_test=12, progress=False)
    np.testing.assert_array_equal(again.X_train, raw.X_train)


def test_wrong_field_count_and_row_count_are_errors(tmp_path):
    sha, *_ = _make(tmp_path / "m1", fields=41)
    with pytest.raises(kdd.KDDFormatError, match="fields"):
        kdd.load_kddcup99(tmp_path / "c1", tmp_path / "m1", checksum=sha, urls=NO_NET, n_train=5, n_test=5,
                          progress=False)
    sha, *_ = _make(tmp_path / "m2")
    with pytest.raises(kdd.KDDFormatError, match="rows"):
        kdd.load_kddcup99(tmp_path / "c2", tmp_path / "m2", checksum=sha, urls=NO_NET, n_rows=49, n_train=5,
                          n_test=5, progress=False)


def test_missing_file_is_a_download_error_and_auto_falls_back(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(kdd, "KDD_URLS", tuple(NO_NET))
    with pytest.raises(DownloadError):
        load_dataset("kddcup99", cache_dir=tmp_path, mirror=tmp_path / "none", source="real")
    with caplog.at_level(logging.WARNING):
        ds = load_dataset("kddcup99", cache_dir=tmp_path, mirror=tmp_path / "none", source="auto", n_train=500,
                          n_test=100)
    assert ds.is_substitute and ds.variant == kdd.SUBSTITUTE_VARIANT == "substitute:synthetic-kddcup99"
    assert "substitute" in caplog.text and kdd.KDD_FILE in caplog.text
    assert ds.X_train.shape == (500, 41) and set(np.unique(ds.y_train)) == {-1, 1}
    assert 0.75 < (ds.y_train > 0).mean() < 0.85


def test_substitute_prefix_property():
    a = kdd.load_kddcup99_substitute(seed=1, n_train=300, n_test=10)
    b = kdd.load_kddcup99_substitute(seed=1, n_train=100, n_test=10)
    np.testing.assert_array_equal(a.X_train[:100], b.X_train)
    np.testing.assert_array_equal(a.y_train[:100], b.y_train)
