import hashlib

import pytest

from dpbench.data import DownloadError, fetch_file, verify_checksum

CONTENT = b"dpbench test payload\n" * 100


def _md5(b):
    return ("md5", hashlib.md5(b).hexdigest())


def _sha(b):
    return ("sha256", hashlib.sha256(b).hexdigest())


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.fixture
def mirror(tmp_path):
    m = tmp_path / "mirror"
    m.mkdir()
    (m / "f.bin").write_bytes(CONTENT)
    return m


def test_verify_checksum(mirror):
    assert verify_checksum(mirror / "f.bin", _md5(CONTENT))
    assert verify_checksum(mirror / "f.bin", _sha(CONTENT))
    assert not verify_checksum(mirror / "f.bin", _md5(b"other"))
    assert not verify_checksum(mirror / "missing", _md5(CONTENT))
    with pytest.raises(ValueError, match="unsupported checksum"):
        verify_checksum(mirror / "f.bin", ("sha1", "00"))


def test_fetch_from_local_mirror_folder(tmp_path, mirror):
    cache = tmp_path / "cache"
    p = fetch_file("f.bin", ["file:///nonexistent/f.bin"], _sha(CONTENT), cache, mirror=mirror, progress=False)
    assert p == cache / "f.bin" and p.read_bytes() == CONTENT
    assert _leftovers(cache) == []
    # cached: works without any source
    assert fetch_file("f.bin", [], _sha(CONTENT), cache, progress=False) == p


def test_fetch_from_file_urls(tmp_path, mirror):
    cache = tmp_path / "cache"
    urls = ["file:///nonexistent/dir/f.bin", (mirror / "f.bin").as_uri()]
    p = fetch_file("f.bin", urls, _md5(CONTENT), cache, progress=False)
    assert p.read_bytes() == CONTENT
    # a file:// base URL as mirror
    p2 = fetch_file("f.bin", [], _md5(CONTENT), tmp_path / "c2", mirror=mirror.as_uri() + "/", progress=False)
    assert p2.read_bytes() == CONTENT


def test_mirror_tried_first(tmp_path, mirror):
    other = tmp_path / "other.bin"
    other.write_bytes(b"different")
    p = fetch_file("f.bin", [other.as_uri()], _md5(CONTENT), tmp_path / "c", mirror=mirror, progress=False)
    assert p.read_bytes() == CONTENT


def test_mismatch_raises_and_leaves_nothing(tmp_path, mirror):
    cache = tmp_path / "cache"
    with pytest.raises(DownloadError) as ei:
        fetch_file(
            "f.bin", [(mirror / "f.bin").as_uri(), "file:///nonexistent/f.bin"], _md5(b"not it"), cache,
            mirror=mirror, progress=False,
        )
    msg = str(ei.value)
    assert "md5 mismatch" in msg and "nonexistent" in msg and "data.mirror" in msg
    assert len(ei.value.attempts) == 3
    assert isinstance(ei.value, RuntimeError)
    assert not (cache / "f.bin").exists()
    assert list(cache.iterdir()) == []


def test_mismatch_falls_through_to_next_source(tmp_path, mirror):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "f.bin").write_bytes(b"corrupt copy")
    p = fetch_file("f.bin", [(mirror / "f.bin").as_uri()], _md5(CONTENT), tmp_path / "c", mirror=bad, progress=False)
    assert p.read_bytes() == CONTENT


def test_corrupted_cache_entry_is_replaced(tmp_path, mirror, capsys):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "f.bin").write_bytes(CONTENT[:-5])  # truncated earlier download
    p = fetch_file("f.bin", [], _md5(CONTENT), cache, mirror=mirror)
    assert p.read_bytes() == CONTENT
    assert "fails its md5 check" in capsys.readouterr().err
    # corrupted and no source: removed, error, nothing left behind
    (cache / "f.bin").write_bytes(b"junk")
    with pytest.raises(DownloadError):
        fetch_file("f.bin", ["file:///nonexistent/f.bin"], _md5(CONTENT), cache, progress=False)
    assert list(cache.iterdir()) == []


def test_a_trickling_server_is_abandoned_for_the_next_source(tmp_path, mirror, monkeypatch):
    """A server that sends a byte every 2 s never trips the socket timeout: after SLOW_AFTER_S at under MIN_RATE
    bytes/s the download is abandoned (the clock is simulated) and the next source is used."""
    import dpbench.data.download as D

    clock = [0.0]
    monkeypatch.setattr(D, "_now", lambda: clock[0])

    class Trickle:
        headers = {}

        def read1(self, n):
            clock[0] += 2.0
            return b"x"

        read = read1

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    real = D.urllib.request.urlopen
    monkeypatch.setattr(D.urllib.request, "urlopen",
                        lambda req, timeout: Trickle() if "slow.example" in req.full_url else real(req, timeout=timeout))
    p = fetch_file("f.bin", ["http://slow.example/f.bin", (mirror / "f.bin").as_uri()], _sha(CONTENT),
                   tmp_path / "c", progress=False)
    assert p.read_bytes() == CONTENT and clock[0] <= D.SLOW_AFTER_S + 4
    with pytest.raises(DownloadError, match="download too slow"):
        fetch_file("g.bin", ["http://slow.example/g.bin"], _sha(CONTENT), tmp_path / "c", progress=False)
