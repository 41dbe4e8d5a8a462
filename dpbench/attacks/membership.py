"""Black-box membership-inference attacks on a trained classifier's outputs (the attacks the Mondal 2024 slides
name, as specified in the papers cited below; docs/studies/membership.md).

Every attack sees only the released model's outputs (logits, equivalently the probability vector) on the
candidate records and their labels, plus what the attacker knows: data from the same distribution (the
shadow / reference pool) and, for the loss-threshold attack of Yeom et al., the target's mean training loss.
Every attack returns ``(scores, decisions)``: scores are larger for "more likely a member" (for ROC curves),
decisions are hard guesses with :data:`MEMBER` = 1 (for accuracy and advantage).

* :func:`gap_attack` — Yeom et al. 2018: member iff correctly classified (advantage = train acc − test acc on
  balanced sets);
* :func:`loss_threshold_attack` — Yeom et al. 2018: member iff loss ≤ τ, τ = the target's mean training loss;
  the calibrated variant picks τ on shadow models' member/non-member losses (:func:`best_threshold`);
* :class:`ShadowAttack` — Shokri et al. 2017: shadow models trained the same way as the target on data from the
  same distribution, one binary attack classifier per class on the prediction vector;
* :func:`lira_offline` — Carlini et al. 2022, offline variant: reference models trained WITHOUT the candidate;
  Gaussian fit of the logit-scaled confidence φ = log(p_y/(1 − p_y)) over the reference models; one-sided test
  against the OUT distribution.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MEMBER", "NON_MEMBER", "ATTACKS", "log_softmax", "cross_entropy", "logit_confidence", "gap_attack",
           "loss_threshold_attack", "best_threshold", "shadow_features", "ShadowAttack", "lira_offline",
           "lira_calibration_threshold", "evaluate_attacks"]

#: The membership label, defined once for the whole package: 1 = member of the training set, 0 = non-member.
MEMBER = 1
NON_MEMBER = 0

ATTACKS = ("gap", "loss_threshold", "loss_calibrated", "shadow", "lira_offline")

_LOG_FLOOR = -50.0  # log-probabilities are clipped here in the shadow features (numerical range only)


def _logits(logits) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim != 2 or z.shape[1] < 2:
        raise ValueError(f"logits must have shape (m, C) with C >= 2, got {z.shape}")
    return z


def _y(y, m: int, C: int) -> np.ndarray:
    y = np.asarray(y)
    if y.shape != (m,) or (m and (y.min() < 0 or y.max() >= C)):
        raise ValueError(f"labels must have shape ({m},) with values in [0, {C})")
    return y.astype(np.intp)


def log_softmax(logits) -> np.ndarray:
    from scipy.special import logsumexp

    z = _logits(logits)
    return z - logsumexp(z, axis=1, keepdims=True)


def cross_entropy(logits, y) -> np.ndarray:
    """Per-record cross-entropy loss −log p_y."""
    z = _logits(logits)
    y = _y(y, z.shape[0], z.shape[1])
    return -log_softmax(z)[np.arange(z.shape[0]), y]


def logit_confidence(logits, y) -> np.ndarray:
    """φ = log(p_y/(1 − p_y)) = z_y − logsumexp_{c≠y} z_c, computed stably from the logits."""
    from scipy.special import logsumexp

    z = _logits(logits)
    y = _y(y, z.shape[0], z.shape[1])
    rows = np.arange(z.shape[0])
    other = z.copy()
    other[rows, y] = -np.inf
    return z[rows, y] - logsumexp(other, axis=1)


def gap_attack(logits, y) -> tuple[np.ndarray, np.ndarray]:
    """Member iff correctly classified (scores = decisions, so its ROC has one inner vertex)."""
    z = _logits(logits)
    y = _y(y, z.shape[0], z.shape[1])
    correct = (np.argmax(z, axis=1) == y).astype(int)
    return correct.astype(np.float64), correct


def loss_threshold_attack(logits, y, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Member iff loss ≤ ``threshold``; scores = −loss."""
    loss = cross_entropy(logits, y)
    return -loss, (loss <= threshold).astype(int)


def best_threshold(scores_in, scores_out) -> float:
    """Threshold t maximising the balanced accuracy of "member iff score ≥ t" on labelled scores (members
    ``scores_in``, non-members ``scores_out``); the midpoint between neighbouring distinct scores."""
    a, b = np.asarray(scores_in, float), np.asarray(scores_out, float)
    if a.size == 0 or b.size == 0:
        raise ValueError("need member and non-member scores")
    s = np.r_[a, b]
    m = np.r_[np.ones(a.size, bool), np.zeros(b.size, bool)]
    order = np.argsort(-s, kind="mergesort")
    ss, mm = s[order], m[order]
    last = np.r_[np.nonzero(np.diff(ss))[0], s.size - 1]
    tpr = np.cumsum(mm)[last] / a.size
    fpr = np.cumsum(~mm)[last] / b.size
    acc = np.r_[0.5, (tpr + 1 - fpr) / 2]  # first entry: flag nobody
    i = int(np.argmax(acc))
    if i == 0:
        return float(ss[0]) + 1.0
    j = last[i - 1]
    nxt = ss[j + 1] if j + 1 < ss.size else ss[j] - 1.0
    return float((ss[j] + nxt) / 2)


def shadow_features(logits, y) -> np.ndarray:
    """Attack-classifier input per record: the clipped log-probability vector, φ and the loss."""
    lp = np.maximum(log_softmax(logits), _LOG_FLOOR)
    y = _y(y, lp.shape[0], lp.shape[1])
    phi = np.clip(logit_confidence(logits, y), -2 * abs(_LOG_FLOOR), 2 * abs(_LOG_FLOOR))
    return np.c_[lp, phi, -lp[np.arange(lp.shape[0]), y]]


class ShadowAttack:
    """Shokri et al.'s attack model: one logistic-regression classifier per class (standardised features of
    :func:`shadow_features`), trained on the shadow models' outputs on their own members (label 1) and held-out
    records (label 0); a class with a single label in the attack training set falls back to a classifier
    trained on all classes. ``C`` is the inverse L2 penalty of the classifiers."""

    def __init__(self, n_classes: int, C: float = 1.0, max_iter: int = 200):
        self.n_classes, self.C, self.max_iter = int(n_classes), float(C), int(max_iter)
        self.models: dict = {}

    def _fit_one(self, F, t):
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        return make_pipeline(StandardScaler(), LogisticRegression(C=self.C, max_iter=self.max_iter)).fit(F, t)

    def fit(self, logits, y, in_out) -> "ShadowAttack":
        F = shadow_features(logits, y)
        y = np.asarray(y)
        t = np.asarray(in_out).astype(int)
        if np.unique(t).size < 2:
            raise ValueError("the shadow attack needs shadow members and non-members")
        self.models = {"all": self._fit_one(F, t)}
        for c in range(self.n_classes):
            sel = y == c
            if sel.sum() >= 4 and np.unique(t[sel]).size == 2:
                self.models[c] = self._fit_one(F[sel], t[sel])
        return self

    def score(self, logits, y) -> np.ndarray:
        F = shadow_features(logits, y)
        y = np.asarray(y)
        out = np.empty(y.shape[0])
        for c in np.unique(y):
            sel = y == c
            out[sel] = self.models.get(int(c), self.models["all"]).predict_proba(F[sel])[:, 1]
        return out

    def attack(self, logits, y) -> tuple[np.ndarray, np.ndarray]:
        s = self.score(logits, y)
        return s, (s >= 0.5).astype(int)


def _out_stats(ref_phi: np.ndarray, mask: np.ndarray | None, variance: str, min_std: float):
    """Mean and std of φ over the OUT reference models of every record (``mask`` (k, m): which reference
    models may be used for which record; None = all)."""
    if mask is None:
        mask = np.ones(ref_phi.shape, dtype=bool)
    cnt = mask.sum(axis=0)
    if np.any(cnt < 1):
        raise ValueError("every record needs at least one OUT reference model")
    mu = np.where(mask, ref_phi, 0.0).sum(axis=0) / cnt
    resid = np.where(mask, ref_phi - mu, 0.0)
    if variance == "global":
        dof = max(1, int(mask.sum() - mask.shape[1]))
        sd = np.full(mu.shape, np.sqrt((resid ** 2).sum() / dof))
    elif variance == "per_example":
        sd = np.sqrt((resid ** 2).sum(axis=0) / np.maximum(cnt - 1, 1))
    else:
        raise ValueError(f"variance must be 'global' or 'per_example', got {variance!r}")
    return mu, np.maximum(sd, min_std)


def lira_offline(target_phi, ref_phi, variance: str = "global", min_std: float = 1e-3, mask=None) -> np.ndarray:
    """Offline LiRA score of every candidate: z = (φ_target − μ_out)/σ_out with μ_out, σ_out the Gaussian fit
    of φ over the reference models trained without the candidate (``ref_phi`` (k, m)). The one-sided test
    "member iff Φ(z) ≥ 1 − p" is monotone in z, so z is the score. ``variance``: ``global`` (one σ pooled
    over all records, Carlini et al.'s choice with few reference models) or ``per_example``."""
    target_phi = np.asarray(target_phi, float)
    ref_phi = np.asarray(ref_phi, float)
    if ref_phi.ndim != 2 or ref_phi.shape[1] != target_phi.shape[0]:
        raise ValueError("ref_phi must have shape (k, m) with m candidates")
    mu, sd = _out_stats(ref_phi, mask, variance, min_std)
    return (target_phi - mu) / sd


def lira_calibration_threshold(pool_phi, in_mask, variance: str = "global", min_std: float = 1e-3) -> float:
    """Decision threshold on the LiRA z-score, calibrated on the shadow models: each shadow model j in turn
    plays the target, its records are scored against the OTHER shadow models that did not train on them, and
    the balanced-accuracy-optimal threshold is taken; the median over j is returned."""
    pool_phi, in_mask = np.asarray(pool_phi, float), np.asarray(in_mask, bool)
    k = pool_phi.shape[0]
    thr = []
    for j in range(k):
        others = np.delete(np.arange(k), j)
        ok = (~in_mask[others]).sum(axis=0) >= 1
        if not ok.any() or in_mask[j, ok].all() or not in_mask[j, ok].any():
            continue
        z = lira_offline(pool_phi[j, ok], pool_phi[others][:, ok], variance, min_std, mask=~in_mask[others][:, ok])
        thr.append(best_threshold(z[in_mask[j, ok]], z[~in_mask[j, ok]]))
    if not thr:
        raise ValueError("LiRA calibration needs at least two shadow models with OUT records")
    return float(np.median(thr))


def evaluate_attacks(target_logits, y, train_loss_mean: float, shadow_pool_logits, pool_y, in_mask,
                     shadow_target_logits, *, n_classes: int, lira_variance: str = "global",
                     shadow_C: float = 1.0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every attack of :data:`ATTACKS` on one target model.

    ``target_logits`` (m, C) on the candidates (labels ``y``); ``train_loss_mean`` the target's mean training
    loss (Yeom's threshold); ``shadow_pool_logits`` (k, S, C) the k shadow models on the shadow pool (labels
    ``pool_y``) with ``in_mask`` (k, S) their training membership; ``shadow_target_logits`` (k, m, C) the same
    shadow models on the candidates (none trained on them: offline LiRA references).
    Returns {attack: (scores, decisions)}."""
    target_logits = _logits(target_logits)
    pool_logits = np.asarray(shadow_pool_logits, float)
    in_mask = np.asarray(in_mask, bool)
    k = pool_logits.shape[0]
    out = {"gap": gap_attack(target_logits, y),
           "loss_threshold": loss_threshold_attack(target_logits, y, train_loss_mean)}
    # calibrated loss threshold: τ maximising balanced accuracy on the shadows' own members / non-members
    sh_loss = np.stack([cross_entropy(pool_logits[j], pool_y) for j in range(k)])
    tau_score = best_threshold(-sh_loss[in_mask], -sh_loss[~in_mask])
    s = -cross_entropy(target_logits, y)
    out["loss_calibrated"] = (s, (s >= tau_score).astype(int))
    att = ShadowAttack(n_classes, C=shadow_C).fit(pool_logits.reshape(-1, pool_logits.shape[-1]),
                                                  np.tile(pool_y, k), in_mask.reshape(-1))
    out["shadow"] = att.attack(target_logits, y)
    pool_phi = np.stack([logit_confidence(pool_logits[j], pool_y) for j in range(k)])
    ref_phi = np.stack([logit_confidence(t, y) for t in np.asarray(shadow_target_logits, float)])
    z = lira_offline(logit_confidence(target_logits, y), ref_phi, lira_variance)
    thr = lira_calibration_threshold(pool_phi, in_mask, lira_variance)
    out["lira_offline"] = (z, (z >= thr).astype(int))
    return out
