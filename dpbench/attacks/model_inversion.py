"""Model inversion of a released linear-regression model (Fredrikson et al., USENIX Security 2014), as used in
wu2016 ch. 4 (Wu 2016, §4.4 "Model Inversion Attacks" and "Model Inversion", Table 5.1 of §5.2, ch. 4 footnote 2;
Figs. 4.6–4.8; docs/studies/wu2016.md#model-inversion-attack).

**[EXTERNAL] reconstruction** (the thesis describes the attack only in words; the scoring rule is Fredrikson et
al.'s):

* The attacker knows, for a target record, every feature except the sensitive one (VKORC1), the **true**
  outcome y (the stable dose, set by doctors — not the model's prediction), the marginal distribution p of the
  sensitive attribute in the training set, the released model w and its residual scale σ.
* For every candidate value v (a one-hot pattern of the sensitive block), it rebuilds the feature row with
  v, applies the public preprocessing (here: scaling to the unit sphere), predicts f_v = ⟨w, x_v⟩ and scores
  s(v) = φ_σ(y − f_v)·p(v), φ_σ the N(0, σ²) density (the marginals of the known features are the same for every
  v and drop out). It outputs argmax_v s(v) (the MAP guess; ties go to the first candidate with the largest
  prior score).
* σ: the released model's training RMSE (docs/studies/wu2016.md#open-choices item 16), so a noisier model
  makes a flatter likelihood and the guess falls back to the prior's mode. MI accuracy: the fraction of training
  records whose value is recovered exactly (Wu 2016, ch. 4, footnote 2); the prior-only baseline guesses
  argmax_v p(v) for everyone.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["empirical_marginal", "residual_scale", "invert_attribute", "model_inversion_accuracy",
           "prior_baseline_accuracy"]


def empirical_marginal(codes: np.ndarray, k: int) -> np.ndarray:
    """Frequencies of the values 0..k-1 in ``codes`` (the attacker's knowledge of the training marginal)."""
    codes = np.asarray(codes)
    if codes.ndim != 1 or codes.size == 0 or codes.min() < 0 or codes.max() >= k:
        raise ValueError(f"codes must be a non-empty 1-D array of values in 0..{k - 1}")
    return np.bincount(codes, minlength=k) / codes.size


def residual_scale(W: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Training RMSE of every model in W (..., d) on (X, y) — the σ of the attacker's error model."""
    r = y - np.einsum("...d,nd->...n", np.asarray(W, dtype=np.float64), X)
    return np.sqrt(np.mean(r * r, axis=-1))


def invert_attribute(W: np.ndarray, Z: np.ndarray, y: np.ndarray, block: slice | np.ndarray, candidates: np.ndarray,
                     prior: np.ndarray, sigma, transform: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """MAP guesses of the sensitive attribute for every record and every model.

    W: (m, d) or (d,) released models; Z: (n, d) the records' feature rows *before* the public row transform
    (the sensitive block's content is ignored — the attacker overwrites it); y: (n,) true outcomes; ``block``:
    the columns of the sensitive one-hot block; ``candidates``: (k, |block|) the encodings of the k values;
    ``prior``: (k,) marginal; ``sigma``: scalar or (m,) residual scale per model; ``transform``: the public row
    preprocessing applied after substitution (e.g. unit-sphere scaling). Returns (m, n) or (n,) codes 0..k-1.
    """
    W = np.asarray(W, dtype=np.float64)
    single = W.ndim == 1
    W = np.atleast_2d(W)
    Z = np.asarray(Z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    candidates = np.atleast_2d(np.asarray(candidates, dtype=np.float64))
    prior = np.asarray(prior, dtype=np.float64)
    k = candidates.shape[0]
    if prior.shape != (k,) or (prior < 0).any() or not np.isclose(prior.sum(), 1.0):
        raise ValueError(f"prior must be a probability vector of length {k}")
    if Z.ndim != 2 or y.shape != (Z.shape[0],) or W.shape[1] != Z.shape[1]:
        raise ValueError(f"shapes do not match: W {W.shape}, Z {Z.shape}, y {y.shape}")
    sigma = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (W.shape[0],))
    if not (sigma > 0).all():
        raise ValueError("sigma must be > 0")
    with np.errstate(divide="ignore"):
        logp = np.log(prior)
    scores = np.empty((W.shape[0], Z.shape[0], k))
    for v in range(k):
        Zv = Z.copy()
        Zv[:, block] = candidates[v]
        Xv = transform(Zv) if transform is not None else Zv
        r = y[None, :] - W @ Xv.T                                  # (m, n)
        scores[:, :, v] = -0.5 * (r / sigma[:, None]) ** 2 + logp[v]
    guess = np.argmax(scores, axis=-1)
    return guess[0] if single else guess


def model_inversion_accuracy(W, Z, y, truth, block, candidates, prior, sigma, transform=None) -> np.ndarray:
    """Fraction of records whose sensitive value ``truth`` (codes) is recovered, per model (scalar for one)."""
    g = invert_attribute(W, Z, y, block, candidates, prior, sigma, transform)
    return np.mean(g == np.asarray(truth)[None, :] if g.ndim == 2 else g == truth, axis=-1)


def prior_baseline_accuracy(truth: np.ndarray, prior: np.ndarray) -> float:
    """Accuracy of guessing the prior's mode for every record (the simulated-world baseline of Table 5.1)."""
    return float(np.mean(np.asarray(truth) == int(np.argmax(prior))))
