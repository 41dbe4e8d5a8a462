"""Randomness: every random stream is derived from ``numpy.random.SeedSequence(config seed, key)``.

A *key* is any string that identifies what is being randomised (a cell key plus a purpose such as
``"noise"`` or ``"partition"``). The key is hashed to 32-bit words so the stream depends on its content
only, never on process, worker count or execution order.
"""

from __future__ import annotations

import hashlib

import numpy as np


def key_words(key: str) -> list[int]:
    """Eight 32-bit words of the SHA-256 digest of ``key``."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 32, 4)]


def seed_sequence(seed: int, key: str) -> np.random.SeedSequence:
    """The SeedSequence for ``(seed, key)``."""
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.SeedSequence([int(seed), *key_words(key)])


def generator(seed: int, key: str) -> np.random.Generator:
    """A fresh PCG64 generator for ``(seed, key)``."""
    return np.random.default_rng(seed_sequence(seed, key))
