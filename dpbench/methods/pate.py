"""PATE's noisy aggregators of teacher votes (Song 2018, PhD dissertation, ch. 5, §5.2-5.3; Papernot et al.,
"Scalable private learning with PATE", ICLR 2018): LNMax, GNMax, Confident-GNMax (Song 2018, Algorithm 3) and
Interactive-GNMax (Algorithm 4). Each takes the vote histograms of Q queries (shape (Q, m), teachers' label
counts n_j(x)) and a numpy Generator, and returns an :class:`Answers` record: the released labels (−1 = ⊥, not
answered by the teachers), the answered mask and the per-query data-dependent RDP at every order
(:mod:`dpbench.privacy.pate`).

Draw order (fixed, so that results are reproducible from the stream): LNMax draws Laplace (Q, m); GNMax draws
normals (Q, m); Confident-GNMax draws normals (Q,) for the threshold step, then normals (Q, m) for GNMax (drawn
for every query, used where answered); Interactive-GNMax the same as Confident-GNMax.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpbench.privacy import pate as P

__all__ = ["Answers", "lnmax", "gnmax", "confident_gnmax", "interactive_gnmax"]


@dataclasses.dataclass
class Answers:
    """``labels`` (Q,) int, −1 where not answered; ``answered`` (Q,) bool (a teacher label released);
    ``rdp`` (Q, K): per-query RDP at ``orders`` (what the query cost, data-dependent); ``rdp_threshold`` (Q, K):
    the threshold step's share of ``rdp`` (zeros without a threshold step); ``reinforced`` (Q,) bool:
    Interactive-GNMax's queries answered with the student's own label (no teacher label released);
    ``rdp_independent`` (Q, K): the data-independent cost of the same releases."""
    labels: np.ndarray
    answered: np.ndarray
    rdp: np.ndarray
    rdp_threshold: np.ndarray
    rdp_independent: np.ndarray
    orders: np.ndarray
    reinforced: np.ndarray | None = None


def _votes(votes) -> np.ndarray:
    v = np.asarray(votes, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] < 2:
        raise ValueError(f"votes must have shape (queries, classes >= 2), got {v.shape}")
    return v


def _orders(orders):
    return np.asarray(P.ORDERS if orders is None else orders, dtype=np.float64)


def lnmax(votes, b: float, rng: np.random.Generator, orders=None) -> Answers:
    """LNMax (Song 2018, §5.2): argmax_j n_j + Lap(b); pure 2/b-DP per query; data-dependent RDP of
    Papernot et al. 2017 (Theorem 3) with the pure-ε fallback."""
    v, o = _votes(votes), _orders(orders)
    labels = np.argmax(v + rng.laplace(0.0, b, size=v.shape), axis=1)
    rdp = P.rdp_laplace(P.logq_lnmax(v, b), b, o)
    ind = np.broadcast_to(P.rdp_laplace([0.0], b, o)[0], rdp.shape).copy()     # q̃ = 1: the fallback alone
    return Answers(labels, np.ones(len(v), bool), rdp, np.zeros_like(rdp), ind, o)


def gnmax(votes, sigma: float, rng: np.random.Generator, orders=None) -> Answers:
    """GNMax (Song 2018, §5.3.1): argmax_j n_j + N(0, σ²); RDP of Theorem 5.3.1 (≤ λ/σ²)."""
    v, o = _votes(votes), _orders(orders)
    labels = np.argmax(v + rng.normal(0.0, sigma, size=v.shape), axis=1)
    rdp = P.rdp_gaussian(P.logq_gnmax(v, sigma), sigma, o)
    ind = np.broadcast_to(P.rdp_gaussian_independent(sigma, o), rdp.shape).copy()
    return Answers(labels, np.ones(len(v), bool), rdp, np.zeros_like(rdp), ind, o)


def _thresholded(screen, v, threshold, sigma1, sigma2, rng, o):
    """The shared part of Algorithms 3 and 4: noisy threshold test on ``screen`` (Q, m), GNMax on ``v``."""
    top = screen.max(axis=1)
    passed = top + rng.normal(0.0, sigma1, size=len(v)) >= threshold
    labels = np.argmax(v + rng.normal(0.0, sigma2, size=v.shape), axis=1)
    r1 = P.rdp_threshold(P.log_pr_answered(top, threshold, sigma1), sigma1, o)
    r2 = P.rdp_gaussian(P.logq_gnmax(v, sigma2), sigma2, o)
    rdp = r1 + passed[:, None] * r2
    ind = (P.rdp_threshold_independent(sigma1, o)[None, :]
           + passed[:, None] * P.rdp_gaussian_independent(sigma2, o)[None, :])
    return passed, np.where(passed, labels, -1), rdp, r1, ind


def confident_gnmax(votes, threshold: float, sigma1: float, sigma2: float, rng: np.random.Generator,
                    orders=None) -> Answers:
    """Confident-GNMax (Song 2018, Algorithm 3): if max_j n_j + N(0, σ₁²) ≥ T, release argmax_j n_j + N(0, σ₂²),
    else ⊥. Pays the threshold step on every query and GNMax on the answered ones (§5.3.3)."""
    v, o = _votes(votes), _orders(orders)
    passed, labels, rdp, r1, ind = _thresholded(v, v, threshold, sigma1, sigma2, rng, o)
    return Answers(labels, passed, rdp, r1, ind, o)


def interactive_gnmax(votes, student_proba, threshold: float, sigma1: float, sigma2: float, gamma: float,
                      rng: np.random.Generator, orders=None) -> Answers:
    """Interactive-GNMax (Song 2018, Algorithm 4): with the student's scores p(x) (Q, m) and M teachers, if
    max_j (n_j − M p_j) + N(0, σ₁²) ≥ T, the teachers' GNMax label; elif max_i p_i > γ, the student's own label
    (``reinforced``, no privacy cost beyond the threshold step); else ⊥. The threshold step is accounted on the
    vote differences (§5.3.3)."""
    v, o = _votes(votes), _orders(orders)
    p = np.asarray(student_proba, dtype=np.float64)
    if p.shape != v.shape:
        raise ValueError(f"student_proba must have the votes' shape {v.shape}, got {p.shape}")
    M = v[0].sum()
    passed, labels, rdp, r1, ind = _thresholded(v - M * p, v, threshold, sigma1, sigma2, rng, o)
    reinforced = ~passed & (p.max(axis=1) > gamma)
    labels = np.where(reinforced, np.argmax(p, axis=1), labels)
    return Answers(labels, passed, rdp, r1, ind, o, reinforced)
