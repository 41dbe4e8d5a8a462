"""Randomness: every random stream is derived from ``numpy.random.SeedSequence(config seed, key)``.

A *key* is any string that identifies what is being randomised (a cell key plus a purpose such as
``"noise"`` or ``"partition"``). The key is hashed to 32-bit words so the stream depends on its content
only, never on process, worker count or execution order.

A stream is keyed by *what* is computed, never by the code that computes it: cache keys include a hash of the
code (so an edit recomputes), stream keys leave it out (:func:`stream_key`), so an edit that does not change
the computation — a docstring, a caption, an anchor check, a file moved — gives bit-identical results.
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


#: payload fields that name a version of the code: they belong in cache keys, never in stream keys
CODE_FIELDS = ("code", "train_code", "attack_code")


def stream_key(payload: dict) -> str:
    """The content key of ``payload`` without its code fields (:data:`CODE_FIELDS`): the key of a random stream
    for the same computation whatever the version of the code."""
    from dpbench.store import content_key

    return content_key({k: v for k, v in payload.items() if k not in CODE_FIELDS})
