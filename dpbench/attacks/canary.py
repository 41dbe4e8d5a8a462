"""Canary audit: a worst-case membership test of a private training method (privacy auditing in the style of
Jagielski et al. 2020, "Auditing differentially private machine learning", and Nasr et al. 2021, "Adversary
instantiation").

The average-member attacks of :mod:`dpbench.attacks.membership` test the privacy bound on typical records,
far from the worst case the ε-DP guarantee is about, so they only catch gross faults. The canary audit tests
the guarantee itself on one chosen neighbouring pair:

Neighbouring relation — REPLACE-ONE (:data:`dpbench.privacy.attack_bounds.NEIGHBOURING`). From a training set
X (n rows, ‖x‖ ≤ 1) the audit builds

    D  = X with its last row replaced by the canary (x_c, y_in),
    D′ = X with its last row replaced by (x_c, y_out),

i.e. D and D′ differ in exactly one record (the same feature vector with a flipped label), a replace-one pair
of datasets of the same size n, as every analysed method assumes.

Canary choice (:func:`canary_pair`): x_c is the unit right-singular vector of X with the smallest singular
value — the direction the other records span least, so their loss curvature hardly counteracts the canary's
gradient and the two trained models differ as much as the L2-regularised problem allows (the model
difference lies almost entirely along x_c ⊗ (e_in − e_out)); ‖x_c‖ = 1, the largest norm every sensitivity
bound allows. The two labels are two different classes (1 vs 0): flipping the label of one record maximises
the difference of its loss gradients, ‖∇ℓ(x_c, y_in) − ∇ℓ(x_c, y_out)‖ = √2 for softmax at any model.

Statistic (:func:`canary_margin`): the canary's score margin ⟨θ_{y_in} − θ_{y_out}, x_c⟩ of every released
model θ (for a ±1 linear model w, embedded as the score matrix [0, w], this is ⟨w, x_c⟩): the projection of the
release on the direction that separates the two noiseless solutions. It is a function of the released model
only (post-processing), so for an (ε, δ)-DP method every threshold test "D iff margin ≥ t" satisfies
TPR ≤ e^ε·FPR + δ and 1 − FPR ≤ e^ε(1 − TPR) + δ (TPR = Pr over A(D), FPR = Pr over A(D′)); a Clopper–Pearson
lower confidence limit of ln((TPR − δ)/FPR) (or of the complementary ratio) above ε refutes the claim.

Procedure (:func:`canary_audit`): T models trained on D and T on D′ with independent randomness, the margin of
each, then :func:`dpbench.attacks.metrics.epsilon_audit`: a stratified random half of the 2T trials chooses
the threshold maximising the ε lower bound, the other half gives the counts and the
:func:`~dpbench.attacks.metrics.epsilon_lower_bound` (TPR at its Clopper–Pearson lower and FPR at its upper
limit, α/2 each). The audit FIRES when that lower confidence limit exceeds the claimed ε.

Data-independent randomness (the sampling order of PSGD, the mini-batches of DP-SGD) may be FIXED across the
trials of both sides (a ``release`` that trains once and redraws only the noise): the methods' guarantees hold
for every fixed sampling order (their sensitivity/accounting analysis is uniform over it), so the bound holds
conditionally on it. What must not happen is a different fixed order on the two sides — the ``release``
callables of :mod:`dpbench.studies.membership.training` use the same ``shared_seed`` on both sides and draw the
noise from the side's own generator, so the 2T trials are independent given the shared order.

Intervals: unlike the average-member attacks (whose trials share one trained target model per repetition and are
therefore clustered, see :func:`dpbench.attacks.metrics.clustered_clopper_pearson`), every canary trial is its
own release: a batched release's noiseless solution is a deterministic function of (D or D′, shared order) —
the same for every trial of a side, not a random model the trials share — and each trial adds its own
independent noise; an unbatched release trains each trial with independent randomness. The trials of a side are
therefore i.i.d. given the neighbouring pair and the shared order, the conditioning under which the guarantee
holds, and the exact Clopper–Pearson interval applies without a clustering adjustment.
"""

from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np

from dpbench.attacks.metrics import epsilon_audit
from dpbench.privacy.attack_bounds import NEIGHBOURING

__all__ = ["NEIGHBOURING", "canary_pair", "canary_margin", "canary_audit"]

# release(X, y, trials, rng, shared_seed) -> (trials, d, C) released score matrices
Release = Callable[[np.ndarray, np.ndarray, int, np.random.Generator, int], np.ndarray]


def canary_pair(X, y, n_classes: int) -> dict:
    """The replace-one neighbouring pair (D, D′) of the audit (module docstring): the canary x_c (unit norm,
    least-spanned direction of X) replaces the last row with label ``y_in = 1`` in D and ``y_out = 0`` in D′.
    Returns ``{"x": x_c, "y_in", "y_out", "X": the common feature matrix, "y_D", "y_Dp"}``."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[0] < 2 or y.shape != (X.shape[0],):
        raise ValueError("X must be (n, d) with n >= 2 and y of shape (n,)")
    if int(n_classes) < 2:
        raise ValueError("the canary pair needs at least two classes")
    _, _, vt = np.linalg.svd(X[:-1], full_matrices=True)
    x_c = vt[-1] / np.linalg.norm(vt[-1])
    Xc = X.copy()
    Xc[-1] = x_c
    y_in, y_out = 1, 0
    y_D, y_Dp = y.copy(), y.copy()
    y_D[-1], y_Dp[-1] = y_in, y_out
    return {"x": x_c, "y_in": y_in, "y_out": y_out, "X": Xc, "y_D": y_D, "y_Dp": y_Dp}


def canary_margin(W, x_c, y_in: int = 1, y_out: int = 0) -> np.ndarray:
    """⟨θ_{y_in} − θ_{y_out}, x_c⟩ for released score matrices θ of shape (d, C) or a stack (T, d, C)."""
    W = np.asarray(W, dtype=np.float64)
    diff = W[..., y_in] - W[..., y_out]
    return diff @ np.asarray(x_c, dtype=np.float64)


def canary_audit(release: Release, X, y, n_classes: int, epsilon: float, delta: float, trials: int,
                 rng: np.random.Generator, alpha: float = 0.05, shared_seed: int = 0) -> dict:
    """Run the canary audit of one training method at claimed replace-one budget (ε, δ).

    ``release(X, y, trials, rng, shared_seed)`` returns ``trials`` released models (T, d, C) trained on (X, y)
    with noise from ``rng``; ``shared_seed`` seeds the data-independent randomness a release may fix across
    trials (the same on both sides). ``trials`` models per side; ``alpha``: two-sided level of the
    Clopper–Pearson intervals (the lower limit of the empirical ε holds with probability ≥ 1 − α).

    Returns counts on the evaluation half, ``eps_point`` and ``eps_lower`` (the (1 − α) lower confidence limit),
    ``claimed_epsilon``, ``delta``, ``fires`` (eps_lower > ε), the margins' means and the runtime."""
    trials = int(trials)
    if trials < 4:
        raise ValueError(f"the canary audit needs at least 4 trials per side, got {trials}")
    t0 = time.perf_counter()
    pair = canary_pair(X, y, n_classes)
    seeds = rng.integers(0, 2**63 - 1, size=3)
    W_in = np.asarray(release(pair["X"], pair["y_D"], trials, np.random.default_rng(seeds[0]), shared_seed))
    W_out = np.asarray(release(pair["X"], pair["y_Dp"], trials, np.random.default_rng(seeds[1]), shared_seed))
    if W_in.shape[0] != trials or W_out.shape[0] != trials:
        raise ValueError("release must return one model per trial")
    s_in = canary_margin(W_in, pair["x"], pair["y_in"], pair["y_out"])
    s_out = canary_margin(W_out, pair["x"], pair["y_in"], pair["y_out"])
    if not (np.all(np.isfinite(s_in)) and np.all(np.isfinite(s_out))):
        raise ValueError("non-finite canary margins (diverged training?)")
    is_d = np.r_[np.ones(trials, dtype=int), np.zeros(trials, dtype=int)]
    a = epsilon_audit(np.r_[s_in, s_out], is_d, float(delta), np.random.default_rng(seeds[2]), alpha)
    eps = float(epsilon)
    return {"neighbouring": NEIGHBOURING, "trials": trials, "claimed_epsilon": eps, "delta": float(delta),
            "alpha": float(alpha), "threshold": a["threshold"], "tp": a["tp"], "n_pos": a["n_pos"], "fp": a["fp"],
            "n_neg": a["n_neg"], "eps_point": a["eps_point"], "eps_lower": a["eps_lower"],
            "fires": bool(math.isfinite(eps) and a["eps_lower"] > eps + 1e-12),
            "margin_in_mean": float(s_in.mean()), "margin_out_mean": float(s_out.mean()),
            "margin_sd": float(np.sqrt((s_in.var() + s_out.var()) / 2)), "runtime_s": time.perf_counter() - t0}
