import gzip
import struct

import numpy as np
import pytest

from dpbench.data import IDXFormatError, read_idx, write_idx


@pytest.mark.parametrize("name", ["imgs-idx3-ubyte", "imgs-idx3-ubyte.gz"])
def test_images_round_trip(tmp_path, name):
    a = np.random.default_rng(0).integers(0, 256, size=(5, 28, 28), dtype=np.uint8)
    p = write_idx(tmp_path / name, a)
    assert (p.read_bytes()[:2] == b"\x1f\x8b") == name.endswith(".gz")
    b = read_idx(p)
    assert b.dtype == np.uint8 and b.shape == (5, 28, 28)
    np.testing.assert_array_equal(a, b)


def test_labels_round_trip_and_header(tmp_path):
    y = np.array([3, 1, 4, 1, 5, 9], dtype=np.uint8)
    p = write_idx(tmp_path / "l.gz", y)
    raw = gzip.decompress(p.read_bytes())
    assert struct.unpack(">ii", raw[:8]) == (2049, 6)
    np.testing.assert_array_equal(read_idx(p), y)
    assert p.read_bytes() == write_idx(tmp_path / "l2.gz", y).read_bytes()  # reproducible bytes


def _write_raw(path, raw, gz=False):
    path.write_bytes(gzip.compress(raw) if gz else raw)
    return path


@pytest.mark.parametrize(
    "raw, match",
    [
        (struct.pack(">iiii", 2052, 1, 2, 2) + bytes(4), "bad IDX magic"),
        (struct.pack(">ii", 2051, 1), "truncated header"),
        (b"\x00\x00", "too short"),
        (struct.pack(">iiii", 2051, 2, 3, 3) + bytes(17), "payload has 17 bytes"),
        (struct.pack(">ii", 2049, 5) + bytes(6), "payload has 6 bytes"),
    ],
)
@pytest.mark.parametrize("gz", [False, True])
def test_malformed_files(tmp_path, raw, match, gz):
    with pytest.raises(IDXFormatError, match=match):
        read_idx(_write_raw(tmp_path / "bad", raw, gz))


def test_corrupt_gzip(tmp_path):
    good = gzip.compress(struct.pack(">ii", 2049, 100) + bytes(100))
    with pytest.raises(IDXFormatError, match="gzip"):
        read_idx(_write_raw(tmp_path / "bad.gz", good[: len(good) // 2]))


def test_write_rejects_bad_input(tmp_path):
    with pytest.raises(ValueError, match="1-d"):
        write_idx(tmp_path / "x", np.zeros((2, 2), dtype=np.uint8))
    with pytest.raises(ValueError, match="0..255"):
        write_idx(tmp_path / "x", np.array([1, 300]))
