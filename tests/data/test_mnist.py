import hashlib

import numpy as np
import pytest

from dpbench.data import MNIST_FILES, MNIST_URLS, DownloadError, load_mnist
from dpbench.data.idx import IDXFormatError


def test_constants():
    assert len(MNIST_FILES) == 4 and all(len(v) == 32 for v in MNIST_FILES.values())
    assert MNIST_FILES["train-images-idx3-ubyte.gz"] == "f68b3c2dcbeaaa9fbdd348bbdeb94873"
    assert MNIST_URLS[0] == "https://ossci-datasets.s3.amazonaws.com/mnist/"
    assert len(MNIST_URLS) == 3


NO_NET = ["file:///nonexistent/mnist/"]


def test_load_from_mirror_folder(tmp_path, make_tiny_mnist):
    md5s, arrays = make_tiny_mnist(tmp_path / "mirror")
    raw = load_mnist(tmp_path / "cache", tmp_path / "mirror", checksums=md5s, urls=NO_NET, n_train=12, n_test=7,
                     progress=False)
    assert raw.X_train.shape == (12, 784) and raw.X_train.dtype == np.uint8
    assert raw.X_test.shape == (7, 784)
    np.testing.assert_array_equal(raw.X_train, arrays["train-images-idx3-ubyte.gz"].reshape(12, -1))
    np.testing.assert_array_equal(raw.y_test, arrays["t10k-labels-idx1-ubyte.gz"])
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == sorted(MNIST_FILES)
    # second call reads the cache only
    raw2 = load_mnist(tmp_path / "cache", None, checksums=md5s, urls=NO_NET, n_train=12, n_test=7, progress=False)
    np.testing.assert_array_equal(raw.X_test, raw2.X_test)


def test_shape_and_label_checks(tmp_path, make_tiny_mnist):
    md5s, _ = make_tiny_mnist(tmp_path / "m1")
    with pytest.raises(ValueError, match="expected 60000"):
        load_mnist(tmp_path / "c1", tmp_path / "m1", checksums=md5s, urls=NO_NET, progress=False)
    md5s, _ = make_tiny_mnist(tmp_path / "m2", shape=(27, 28))
    with pytest.raises(ValueError, match="shape"):
        load_mnist(tmp_path / "c2", tmp_path / "m2", checksums=md5s, urls=NO_NET, n_train=12, n_test=7, progress=False)
    md5s, _ = make_tiny_mnist(tmp_path / "m3", label_max=12, n_train=50)
    with pytest.raises(ValueError, match="labels must lie in 0..9"):
        load_mnist(tmp_path / "c3", tmp_path / "m3", checksums=md5s, urls=NO_NET, n_train=50, n_test=7, progress=False)


def test_real_checksums_reject_fake_files(tmp_path, make_tiny_mnist):
    make_tiny_mnist(tmp_path / "mirror")
    with pytest.raises(DownloadError, match="train-images-idx3-ubyte.gz"):
        load_mnist(tmp_path / "cache", tmp_path / "mirror", urls=NO_NET, progress=False)
    assert list((tmp_path / "cache").iterdir()) == []


def test_malformed_but_checksummed_file(tmp_path, make_tiny_mnist):
    md5s, _ = make_tiny_mnist(tmp_path / "mirror")
    bad = tmp_path / "mirror" / "t10k-labels-idx1-ubyte.gz"
    bad.write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x07abc")
    md5s[bad.name] = hashlib.md5(bad.read_bytes()).hexdigest()
    with pytest.raises(IDXFormatError, match="payload"):
        load_mnist(tmp_path / "cache", tmp_path / "mirror", checksums=md5s, urls=NO_NET, n_train=12, n_test=7,
                   progress=False)
