"""The registry of audited methods: :class:`MethodAudit` (name, study, the audit function, its twins, notes) and
the helpers every audit uses — the noise factor of a ``noise_x<f>`` twin and the chunked draw of many trials."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np


CHUNK = 50_000  # noise draws per block (memory bound)


@dataclass(frozen=True)
class MethodAudit:
    name: str
    label: str
    study: str
    run: Callable
    twins: tuple[str, ...] = ("noise_x0.5",)
    post_training_noise: bool = True     # noise added after a deterministic training (power target 0.5·ε)
    pure: bool = True                    # ε-DP (δ = 0) at the study's default
    gaussian_composition: bool = False   # the release is a composition of (subsampled) Gaussian steps: the
                                         # μ-GDP bound from the AUC applies (a run may then return gdp=True)
    notes: str = ""
    twin_labels: dict = field(default_factory=dict)
    pairs: tuple[str, ...] = ("worst_case",)   # the neighbouring pairs the audit function builds (its ``pair``
                                         # keyword), the calibration's worst case first; with more than one, a
                                         # pilot on each chooses the one the cell audits (dpbench.audit.core)
    pair_notes: dict = field(default_factory=dict)   # pair name -> what it is and which fault it exposes


REGISTRY: dict[str, MethodAudit] = {}


def register(**kw):
    def deco(fn):
        REGISTRY[kw["name"]] = MethodAudit(run=fn, **kw)
        return fn
    return deco


def factor(twin: str) -> float:
    """Noise multiplier of a twin: ``noise_x<f>`` → f; 1 for the correct method and the bug twins."""
    return float(twin[len("noise_x"):]) if twin.startswith("noise_x") else 1.0


def chunked(trials: int, draw: Callable[[int], np.ndarray], chunk: int = CHUNK) -> np.ndarray:
    """``draw(k)`` for blocks of at most ``chunk`` trials, concatenated (``trials`` values in all)."""
    out, left = [], int(trials)
    while left > 0:
        k = min(chunk, left)
        out.append(np.asarray(draw(k), dtype=np.float64))
        left -= k
    return np.concatenate(out)
