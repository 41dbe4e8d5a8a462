import logging

import numpy as np
import pytest

from dpbench.data import (
    DATASETS,
    Dataset,
    DownloadError,
    available_datasets,
    load_dataset,
    prepare_features,
    row_norms,
)
from dpbench.data import mnist as mnist_mod

NO_NET = ("file:///nonexistent/mnist/", "file:///nonexistent/other-mirror/")


@pytest.fixture
def no_network(monkeypatch):
    monkeypatch.setattr(mnist_mod, "MNIST_URLS", NO_NET)


def test_registry_lists_and_unknown_name():
    assert "mnist" in available_datasets() and "mnist" in DATASETS
    with pytest.raises(ValueError, match="unknown dataset 'mnits'.*mnist"):
        load_dataset("mnits")
    with pytest.raises(ValueError, match="source"):
        load_dataset("mnist", source="fake")


def test_auto_falls_back_to_substitute(tmp_path, no_network, caplog):
    with caplog.at_level(logging.WARNING, logger="dpbench.data"):
        ds = load_dataset("mnist", cache_dir=tmp_path, source="auto", n_train=200, n_test=90)
    assert isinstance(ds, Dataset)
    assert ds.is_substitute and ds.variant == "substitute:deformed-digits-28x28"
    assert "SUBSTITUTE" in ds.description and "not MNIST" in ds.description
    assert ds.X_train.shape == (200, 784) and ds.X_test.shape == (90, 784) and ds.n_classes == 10
    assert ds.y_train.dtype == np.int64
    assert 0.0 <= ds.X_train.min() and ds.X_train.max() <= 1.0
    assert any("substitute" in r.getMessage() and "data.mirror" in r.getMessage() for r in caplog.records)
    assert not (tmp_path / "mnist" / "train-images-idx3-ubyte.gz").exists()
    # in-process cache: same object; arrays read-only
    assert load_dataset("mnist", cache_dir=tmp_path, source="auto", n_train=200, n_test=90) is ds
    with pytest.raises(ValueError):
        ds.X_train[0, 0] = 1.0


def test_real_source_propagates_download_error(tmp_path, no_network):
    with pytest.raises(DownloadError, match="data.mirror"):
        load_dataset("mnist", cache_dir=tmp_path, source="real")


def test_substitute_source_and_truncation_prefix(tmp_path):
    a = load_dataset("mnist", cache_dir=tmp_path, source="substitute", n_train=60, n_test=30)
    b = load_dataset("mnist", cache_dir=tmp_path, source="substitute", n_train=100, n_test=30)
    np.testing.assert_array_equal(a.X_train, b.X_train[:60])
    assert a.variant == b.variant == "substitute:deformed-digits-28x28"


def test_real_mnist_from_mirror(tmp_path, no_network, monkeypatch, make_tiny_mnist):
    md5s, arrays = make_tiny_mnist(tmp_path / "mirror", n_train=20, n_test=8)
    monkeypatch.setattr(mnist_mod, "MNIST_FILES", md5s)
    monkeypatch.setattr(mnist_mod, "MNIST_N_TRAIN", 20)
    monkeypatch.setattr(mnist_mod, "MNIST_N_TEST", 8)
    ds = load_dataset("mnist", cache_dir=tmp_path / "data", mirror=tmp_path / "mirror", source="auto", n_train=15)
    assert not ds.is_substitute and ds.variant == "mnist"
    assert ds.X_train.shape == (15, 784) and ds.X_test.shape == (8, 784)
    np.testing.assert_allclose(ds.X_train, arrays["train-images-idx3-ubyte.gz"][:15].reshape(15, -1) / 255, rtol=1e-6)
    assert (tmp_path / "data" / "mnist" / "t10k-images-idx3-ubyte.gz").is_file()


def test_prepare_features(tmp_path):
    ds = load_dataset("mnist", cache_dir=tmp_path, source="substitute", n_train=120, n_test=40)
    Xtr, Xte = prepare_features(ds)
    assert Xtr.shape == (120, 785) and Xte.shape == (40, 785)
    assert row_norms(Xtr).max() <= 1.0 and row_norms(Xte).max() <= 1.0
    Xtr, Xte = prepare_features(ds, bias=False, pca_dim=16)
    assert Xtr.shape == (120, 16) and row_norms(Xte).max() <= 1.0


def test_fallback_warning_names_a_rejected_mirror_file(tmp_path, no_network, monkeypatch, make_tiny_mnist, caplog):
    """A mirror file that fails its checksum is what the user can fix: the fallback warning quotes that rejection,
    not only the last canonical host's network error."""
    md5s, _ = make_tiny_mnist(tmp_path / "mirror", n_train=20, n_test=8)
    monkeypatch.setattr(mnist_mod, "MNIST_FILES", {k: "0" * 32 for k in md5s})   # every mirror file "corrupt"
    with caplog.at_level(logging.WARNING, logger="dpbench.data"):
        ds = load_dataset("mnist", cache_dir=tmp_path / "data", mirror=tmp_path / "mirror", source="auto",
                          n_train=50, n_test=20)
    assert ds.is_substitute
    msg = next(r.getMessage() for r in caplog.records if "not available" in r.getMessage())
    assert f"{tmp_path / 'mirror'}" in msg and "was rejected (ValueError: md5 mismatch" in msg, msg
    assert "other source(s) failed too, the last with" in msg, msg
