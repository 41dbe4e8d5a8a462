"""Metrics of membership-inference attacks with confidence intervals (spec lectures.md §3.1–3.2).

Conventions: ``is_member`` holds the membership labels (1 = member, see
:data:`dpbench.attacks.membership.MEMBER`), ``scores`` are larger for "more likely a member", ``decisions`` are
the attack's hard guesses (1 = member). Evaluation sets are balanced (as many members as non-members), so the
accuracy is (TPR + 1 − FPR)/2 and the advantage TPR − FPR = 2·accuracy − 1.

Confidence intervals:

* rates (TPR, FPR) — exact two-sided Clopper–Pearson intervals (:func:`clopper_pearson`);
* accuracy and advantage — combined from the TPR and FPR Clopper–Pearson intervals each at level α/2
  (Bonferroni), so the joint coverage is ≥ 1 − α (:func:`rate_summary`);
* AUC — DeLong et al. (1988) variance of the Mann–Whitney statistic (fast midrank form of Sun & Xu 2014),
  normal interval clipped to [0, 1] (:func:`auc_delong`);
* empirical ε lower bound — ln((TPR − δ)/FPR) with TPR at its Clopper–Pearson lower and FPR at its upper limit
  (:func:`epsilon_lower_bound`), the auditing bound of Jagielski et al. (2020) / Nasr et al. (2021).

Every interval treats the member/non-member trials as independent given the model; when all trials come from
one trained model they are not (the model's randomness is shared), which is why the study pools independently
trained target models and states the caveat in its captions.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = ["clopper_pearson", "roc_curve", "auc_trapezoid", "auc_delong", "tpr_at_fpr", "rate_summary",
           "epsilon_lower_bound", "epsilon_audit", "roc_on_grid"]


def _check_alpha(alpha: float) -> float:
    alpha = float(alpha)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    return alpha


def clopper_pearson(k, n, alpha: float = 0.05) -> tuple[float, float]:
    """Exact two-sided (1 − α) Clopper–Pearson interval for a binomial proportion k/n (each tail α/2)."""
    alpha = _check_alpha(alpha)
    k, n = int(k), int(n)
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


def _labels(is_member) -> np.ndarray:
    m = np.asarray(is_member)
    if m.ndim != 1 or not np.isin(m, (0, 1)).all():
        raise ValueError("is_member must be a 1-d array of 0/1 labels")
    m = m.astype(bool)
    if m.all() or not m.any():
        raise ValueError("need at least one member and one non-member")
    return m


def roc_curve(scores, is_member) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fpr, tpr, thresholds) of the rule "member iff score ≥ threshold", one point per distinct score plus
    (0, 0) at threshold +inf; ties are handled exactly (a tied group moves both rates at once)."""
    s = np.asarray(scores, dtype=np.float64)
    m = _labels(is_member)
    if s.shape != m.shape or not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite and have the shape of is_member")
    order = np.argsort(-s, kind="mergesort")
    s_sorted, m_sorted = s[order], m[order]
    last = np.r_[np.nonzero(np.diff(s_sorted))[0], s.size - 1]  # last index of every distinct score
    tp = np.cumsum(m_sorted)[last]
    fp = np.cumsum(~m_sorted)[last]
    P, N = int(m.sum()), int((~m).sum())
    tpr = np.r_[0.0, tp / P]
    fpr = np.r_[0.0, fp / N]
    thr = np.r_[np.inf, s_sorted[last]]
    return fpr, tpr, thr


def auc_trapezoid(fpr, tpr) -> float:
    """Area under a ROC curve given by its vertices (ties counted as ½, i.e. the Mann–Whitney statistic)."""
    fpr, tpr = np.asarray(fpr, float), np.asarray(tpr, float)
    return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))


def _midrank(x: np.ndarray) -> np.ndarray:
    return stats.rankdata(x, method="average")


def auc_delong(scores, is_member, alpha: float = 0.05) -> tuple[float, float, float]:
    """(AUC, lower, upper): AUC = P(score_member > score_non) + ½P(tie), with the DeLong variance (fast
    midrank algorithm) and a normal (1 − α) interval clipped to [0, 1]."""
    alpha = _check_alpha(alpha)
    s = np.asarray(scores, dtype=np.float64)
    m = _labels(is_member)
    pos, neg = s[m], s[~m]
    P, N = pos.size, neg.size
    tx, ty, tz = _midrank(pos), _midrank(neg), _midrank(np.r_[pos, neg])
    auc = (tz[:P].sum() - P * (P + 1) / 2) / (P * N)
    v01 = (tz[:P] - tx) / N          # structural components of the members
    v10 = 1.0 - (tz[P:] - ty) / P    # ... of the non-members
    var = (np.var(v01, ddof=1) / P if P > 1 else 0.0) + (np.var(v10, ddof=1) / N if N > 1 else 0.0)
    z = stats.norm.ppf(1 - alpha / 2)
    half = z * math.sqrt(max(var, 0.0))
    return float(auc), float(max(0.0, auc - half)), float(min(1.0, auc + half))


def tpr_at_fpr(fpr, tpr, target: float) -> float:
    """Largest TPR among the ROC vertices with FPR ≤ ``target`` (no interpolation: a conservative reading;
    with fewer than 1/target non-members this is the TPR at FPR = 0)."""
    fpr, tpr = np.asarray(fpr, float), np.asarray(tpr, float)
    ok = fpr <= target + 1e-15
    return float(tpr[ok].max()) if ok.any() else 0.0


def roc_on_grid(fpr, tpr, grid) -> np.ndarray:
    """The ROC step function (largest TPR with FPR ≤ g) on a grid of FPR values, for averaging curves."""
    return np.array([tpr_at_fpr(fpr, tpr, g) for g in np.asarray(grid, float)])


def rate_summary(tp: int, n_pos: int, fp: int, n_neg: int, alpha: float = 0.05) -> dict:
    """TPR, FPR (Clopper–Pearson at level α/2 each), and balanced accuracy and advantage with the intervals
    implied by the two rate intervals (joint coverage ≥ 1 − α)."""
    alpha = _check_alpha(alpha)
    tpr, fpr = tp / n_pos, fp / n_neg
    tlo, thi = clopper_pearson(tp, n_pos, alpha / 2)
    flo, fhi = clopper_pearson(fp, n_neg, alpha / 2)
    return {"tpr": tpr, "tpr_lo": tlo, "tpr_hi": thi, "fpr": fpr, "fpr_lo": flo, "fpr_hi": fhi,
            "accuracy": (tpr + 1 - fpr) / 2, "accuracy_lo": (tlo + 1 - fhi) / 2, "accuracy_hi": (thi + 1 - flo) / 2,
            "advantage": tpr - fpr, "advantage_lo": tlo - fhi, "advantage_hi": thi - flo}


def epsilon_lower_bound(tp: int, n_pos: int, fp: int, n_neg: int, delta: float = 0.0,
                        alpha: float = 0.05) -> tuple[float, float]:
    """(point estimate, (1 − α) lower confidence bound) of the ε an (ε, δ)-DP mechanism must have for a test
    with these counts: max of ln((TPR − δ)/FPR) and of the complementary test ln((1 − FPR − δ)/(1 − TPR))
    (both are implied by the hypothesis-testing characterisation, spec §3.2). The bound uses TPR at its
    Clopper–Pearson lower and FPR at its upper limit (α/2 each); non-positive or undefined values give 0."""
    alpha = _check_alpha(alpha)

    def ln_ratio(a, b):
        return math.log(a / b) if a > 0 and b > 0 else (math.inf if a > 0 else 0.0)

    tpr, fpr = tp / n_pos, fp / n_neg
    tlo, thi = clopper_pearson(tp, n_pos, alpha / 2)
    flo, fhi = clopper_pearson(fp, n_neg, alpha / 2)
    point = max(ln_ratio(tpr - delta, fpr), ln_ratio(1 - fpr - delta, 1 - tpr), 0.0)
    lower = max(ln_ratio(tlo - delta, fhi), ln_ratio(1 - fhi - delta, 1 - tlo), 0.0)
    return point, lower


def epsilon_audit(scores, is_member, delta: float, rng: np.random.Generator, alpha: float = 0.05,
                  select_fraction: float = 0.5, min_count: int = 1) -> dict:
    """Empirical ε lower bound with an honest threshold: the trials are split at random (stratified) into a
    selection part, on which the threshold maximising the lower bound is chosen, and an evaluation part, on
    which the counts and the bound are computed (a threshold chosen on the same trials would overstate ε).
    ``min_count``: thresholds that flag fewer than this many selection trials are not considered.
    Returns the counts of the evaluation part at the chosen threshold, the point estimate and the bound."""
    s = np.asarray(scores, dtype=np.float64)
    m = _labels(is_member)
    sel = np.zeros(s.size, dtype=bool)
    for grp in (np.nonzero(m)[0], np.nonzero(~m)[0]):
        pick = rng.permutation(grp)[: int(round(select_fraction * grp.size))]
        sel[pick] = True
    ev = ~sel
    if m[sel].all() or not m[sel].any() or m[ev].all() or not m[ev].any():
        raise ValueError("too few trials to split into selection and evaluation parts")
    fpr, tpr, thr = roc_curve(s[sel], m[sel].astype(int))
    P, N = int(m[sel].sum()), int((~m[sel]).sum())
    tpk, fpk = np.rint(tpr[1:] * P), np.rint(fpr[1:] * N)
    a = alpha / 2
    tlo = np.where(tpk > 0, stats.beta.ppf(a / 2, np.maximum(tpk, 1), P - tpk + 1), 0.0)
    fhi = np.where(fpk < N, stats.beta.ppf(1 - a / 2, fpk + 1, np.maximum(N - fpk, 1)), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lb = np.maximum(np.log(np.maximum(tlo - delta, 0) / fhi), np.log(np.maximum(1 - fhi - delta, 0) / (1 - tlo)))
    lb = np.where(np.isnan(lb), -np.inf, lb)
    lb[(tpk + fpk) < min_count] = -np.inf
    best_t = thr[1:][int(np.argmax(lb))]
    flag = s[ev] >= best_t
    tp, fp = int((flag & m[ev]).sum()), int((flag & ~m[ev]).sum())
    n_pos, n_neg = int(m[ev].sum()), int((~m[ev]).sum())
    point, lower = epsilon_lower_bound(tp, n_pos, fp, n_neg, delta, alpha)
    return {"threshold": float(best_t), "tp": tp, "n_pos": n_pos, "fp": fp, "n_neg": n_neg,
            "eps_point": point, "eps_lower": lower}
