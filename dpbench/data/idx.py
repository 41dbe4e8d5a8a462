"""Reader and writer of the IDX format of the MNIST files (unsigned-byte data, gzip or plain).

Header (big-endian): a 32-bit magic number -- 2051 for images (then count, rows, cols as 32-bit integers)
or 2049 for labels (then count) -- followed by the payload, one unsigned byte per value.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from pathlib import Path

import numpy as np

IDX_IMAGES = 2051
IDX_LABELS = 2049
_NDIM = {IDX_IMAGES: 3, IDX_LABELS: 1}


class IDXFormatError(ValueError):
    """The file is not a well-formed IDX file of unsigned bytes."""


def _read_bytes(path: Path) -> bytes:
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":  # gzip magic, whatever the file name says
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise IDXFormatError(
                f"{path}: corrupt or truncated gzip stream ({exc}); delete the file and fetch it again"
            ) from exc
    return raw


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file (gzip-compressed or plain).

    Returns a uint8 array of shape ``(n, rows, cols)`` for images (magic 2051) or ``(n,)`` for labels
    (magic 2049). Raises :class:`IDXFormatError` if the magic, the header or the payload length is wrong.
    """
    path = Path(path)
    data = _read_bytes(path)
    if len(data) < 4:
        raise IDXFormatError(f"{path}: {len(data)} bytes is too short for an IDX header")
    (magic,) = struct.unpack(">i", data[:4])
    if magic not in _NDIM:
        raise IDXFormatError(
            f"{path}: bad IDX magic number {magic} (0x{magic & 0xFFFFFFFF:08x}); expected {IDX_IMAGES} "
            f"(images) or {IDX_LABELS} (labels). Is this an MNIST IDX file?"
        )
    ndim = _NDIM[magic]
    header_len = 4 + 4 * ndim
    if len(data) < header_len:
        raise IDXFormatError(
            f"{path}: truncated header; magic {magic} needs {ndim} dimension(s) "
            f"({header_len} header bytes) but the file has {len(data)} bytes"
        )
    dims = struct.unpack(f">{ndim}i", data[4:header_len])
    if any(d < 0 for d in dims):
        raise IDXFormatError(f"{path}: negative dimension in header {dims}")
    expected = int(np.prod(dims, dtype=np.int64))
    payload = len(data) - header_len
    if payload != expected:
        raise IDXFormatError(
            f"{path}: header says shape {tuple(dims)} ({expected} bytes) but the payload has {payload} bytes; "
            "the file is truncated or corrupt -- delete it and fetch it again"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=header_len).reshape(dims).copy()


def write_idx(path: str | os.PathLike, array: np.ndarray) -> Path:
    """Write a uint8 array of shape ``(n,)`` (labels) or ``(n, rows, cols)`` (images) as IDX.

    The file is gzip-compressed (with a zero timestamp, so the bytes are reproducible) when ``path`` ends
    in ``.gz``.
    """
    path = Path(path)
    arr = np.asarray(array)
    if arr.ndim not in (1, 3):
        raise ValueError(f"write_idx needs a 1-d (labels) or 3-d (images) array, got shape {arr.shape}")
    if arr.dtype != np.uint8:
        if arr.size and (arr.min() < 0 or arr.max() > 255 or not np.all(arr == np.round(arr))):
            raise ValueError("write_idx stores unsigned bytes: values must be integers in 0..255")
        arr = arr.astype(np.uint8)
    magic = IDX_LABELS if arr.ndim == 1 else IDX_IMAGES
    raw = struct.pack(f">i{arr.ndim}i", magic, *arr.shape) + np.ascontiguousarray(arr).tobytes()
    if path.name.endswith(".gz"):
        raw = gzip.compress(raw, mtime=0)
    path.write_bytes(raw)
    return path
