"""Metrics of membership-inference attacks with confidence intervals (docs/studies/membership.md).

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

The functions above treat the trials as independent Bernoulli draws. Membership trials that share one trained
model are not: the model's training randomness is common to all of them, so trials pooled over K independently
trained models form K clusters whose success rates differ from model to model (over-dispersion) and the pooled
Clopper–Pearson interval is too narrow. For counts pooled over clusters:

* :func:`design_effect` — the estimated design effect of the pooled proportion (cluster-robust variance over
  binomial variance, floored at 1);
* :func:`clustered_clopper_pearson` — a Clopper–Pearson interval at the effective sample size (Korn &
  Graubard 1998) with a small-K correction, never narrower than the pooled binomial interval;
* :func:`rate_interval`, :func:`pooled_rate_summary`, :func:`pooled_epsilon_lower_bound` — the rate, accuracy /
  advantage and ε-lower-bound intervals of pooled trials with either interval (:data:`CI_METHODS`);
* :func:`cluster_mean_interval` — t interval of a per-model statistic (AUC, TPR at a low FPR) over the models.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["clopper_pearson", "roc_curve", "auc_trapezoid", "auc_delong", "tpr_at_fpr", "rate_summary",
           "epsilon_lower_bound", "epsilon_audit", "roc_on_grid", "CI_METHODS", "design_effect",
           "clustered_clopper_pearson", "rate_interval", "pooled_rate_summary", "pooled_epsilon_lower_bound",
           "cluster_mean_interval"]

CI_METHODS = ("design_effect", "clopper_pearson")
"""Intervals for trials pooled over clusters (independently trained models): ``design_effect`` =
:func:`clustered_clopper_pearson`; ``clopper_pearson`` = the pooled binomial interval (trials taken as independent)."""


def _check_alpha(alpha: float) -> float:
    alpha = float(alpha)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    return alpha


def clopper_pearson(k, n, alpha: float = 0.05) -> tuple[float, float]:
    """Exact two-sided (1 − α) Clopper–Pearson interval for a binomial proportion k/n (each tail α/2)."""
    from scipy import stats

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
    from scipy import stats

    return stats.rankdata(x, method="average")


def auc_delong(scores, is_member, alpha: float = 0.05) -> tuple[float, float, float]:
    """(AUC, lower, upper): AUC = P(score_member > score_non) + ½P(tie), with the DeLong variance (fast
    midrank algorithm) and a normal (1 − α) interval clipped to [0, 1]."""
    from scipy import stats

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


def _ln_ratio(a: float, b: float) -> float:
    return math.log(a / b) if a > 0 and b > 0 else (math.inf if a > 0 else 0.0)


def _epsilon_from_limits(tpr: float, fpr: float, tlo: float, fhi: float, delta: float) -> tuple[float, float]:
    """(point, lower) of the ε a test with rates (tpr, fpr) implies, the lower one from TPR at ``tlo`` and FPR
    at ``fhi`` (see :func:`epsilon_lower_bound`)."""
    point = max(_ln_ratio(tpr - delta, fpr), _ln_ratio(1 - fpr - delta, 1 - tpr), 0.0)
    lower = max(_ln_ratio(tlo - delta, fhi), _ln_ratio(1 - fhi - delta, 1 - tlo), 0.0)
    return point, lower


def epsilon_lower_bound(tp: int, n_pos: int, fp: int, n_neg: int, delta: float = 0.0,
                        alpha: float = 0.05) -> tuple[float, float]:
    """(point estimate, (1 − α) lower confidence bound) of the ε an (ε, δ)-DP mechanism must have for a test
    with these counts: max of ln((TPR − δ)/FPR) and of the complementary test ln((1 − FPR − δ)/(1 − TPR))
    (both are implied by the hypothesis-testing characterisation of DP, Kairouz, Oh & Viswanath 2015). The
    bound uses TPR at its Clopper–Pearson lower and FPR at its upper limit (α/2 each); non-positive or
    undefined values give 0."""
    alpha = _check_alpha(alpha)
    tlo, _ = clopper_pearson(tp, n_pos, alpha / 2)
    _, fhi = clopper_pearson(fp, n_neg, alpha / 2)
    return _epsilon_from_limits(tp / n_pos, fp / n_neg, tlo, fhi, delta)


def epsilon_audit(scores, is_member, delta: float, rng: np.random.Generator, alpha: float = 0.05,
                  select_fraction: float = 0.5, min_count: int = 1, select_alpha: float | None = None,
                  max_thresholds: int | None = None) -> dict:
    """Empirical ε lower bound with an honest threshold: the trials are split at random (stratified) into a
    selection part, on which the threshold maximising the lower bound is chosen, and an evaluation part, on
    which the counts and the bound are computed (a threshold chosen on the same trials would overstate ε).
    ``min_count``: thresholds that flag fewer than this many selection trials are not considered.
    ``select_alpha`` (default ``alpha``): level of the Clopper–Pearson limits of the selection criterion. A
    much smaller level (e.g. 1e-6) penalises thresholds with few tail counts on either side, where the maximum
    over many thresholds is mostly selection noise (winner's curse) and the evaluation half then finds nothing;
    it only changes which threshold is chosen, never the evaluation, so the bound stays valid.
    ``max_thresholds``: consider only about this many candidate thresholds, geometrically spaced in the number of
    flagged selection trials from both ends of the ROC curve (the tails, where the ε bound lives, keep every
    small count); bounds the cost of the Clopper–Pearson limits for millions of trials.
    Returns the counts of the evaluation part at the chosen threshold, the point estimate and the bound."""
    from scipy import stats

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
    if max_thresholds is not None and thr.size - 1 > int(max_thresholds):
        L = thr.size - 1
        g = np.unique(np.rint(np.geomspace(1, L, max(2, int(max_thresholds) // 2))).astype(np.int64))
        keep = np.unique(np.r_[g, L + 1 - g]) - 1          # positions in fpr[1:], tpr[1:], thr[1:]
        keep = keep[(keep >= 0) & (keep < L)]
        fpr, tpr, thr = (np.r_[a[:1], a[1:][keep]] for a in (fpr, tpr, thr))
    tpk, fpk = np.rint(tpr[1:] * P), np.rint(fpr[1:] * N)
    a = (alpha if select_alpha is None else _check_alpha(select_alpha)) / 2
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


# ---------------------------------------------------------------------------------------------------------
# trials pooled over clusters (one cluster = the trials that share one trained model)
# ---------------------------------------------------------------------------------------------------------


def _cluster_counts(k, n) -> tuple[np.ndarray, np.ndarray]:
    k = np.atleast_1d(np.asarray(k, dtype=np.float64))
    n = np.atleast_1d(np.asarray(n, dtype=np.float64))
    if k.ndim != 1 or k.shape != n.shape or k.size < 1:
        raise ValueError("k and n must be 1-d arrays of per-cluster counts of the same length >= 1")
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n) or np.any(k != np.round(k)) or np.any(n != np.round(n)):
        raise ValueError(f"need integer counts with 0 <= k_j <= n_j and n_j >= 1, got k={k.tolist()}, n={n.tolist()}")
    return k, n


def design_effect(k, n) -> float:
    """Estimated design effect of the pooled proportion p̂ = Σk_j / Σn_j of K clusters with counts (k_j, n_j):

        deff = max(1, v_clu / v_bin),   v_clu = K/(K − 1) · Σ_j (k_j − p̂ n_j)² / N²,   v_bin = p̂(1 − p̂)/N,

    N = Σn_j. v_clu is the cluster-robust (between-cluster, linearisation) variance of the ratio estimator p̂
    with the usual K/(K − 1) small-sample factor; v_bin the binomial variance that treats all N trials as
    independent. The ratio estimates the variance inflation 1 + (m − 1)ρ caused by an intra-cluster correlation ρ
    (clusters of size m); it is floored at 1 so that an interval built on it is never narrower than the
    binomial one (a ratio below 1 is sampling noise, or under-dispersion the audit should not take credit for).
    With one cluster the between-cluster variance cannot be estimated: NaN. When p̂ is 0 or 1 every cluster
    has p̂_j = p̂ and the data show no dispersion: 1."""
    k, n = _cluster_counts(k, n)
    return float(_design_effects(k[None, :], n)[0])


def _design_effects(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """:func:`design_effect` of every row of k (studies × clusters) with common cluster sizes n."""
    K = n.size
    if K < 2:
        return np.full(k.shape[0], np.nan)
    N = n.sum()
    p = k.sum(axis=1) / N
    v_clu = K / (K - 1) * np.sum((k - p[:, None] * n) ** 2, axis=1) / N**2
    v_bin = p * (1 - p) / N
    with np.errstate(divide="ignore", invalid="ignore"):
        deff = np.where(v_bin > 0, np.maximum(1.0, v_clu / np.where(v_bin > 0, v_bin, 1.0)), 1.0)
    return deff


def _variance_inflation(deff, K: int, alpha: float):
    """Small-K corrected inflation of the binomial variance: 1 + (deff − 1)·(t_{K−1, 1−α/2} / z_{1−α/2})²
    (1 where deff ≤ 1, is NaN or K < 2); scalar or array deff."""
    from scipy import stats

    d = np.asarray(deff, dtype=np.float64)
    if K < 2:
        f = np.ones_like(d)
    else:
        r = float(stats.t.ppf(1 - alpha / 2, K - 1) / stats.norm.ppf(1 - alpha / 2))
        f = np.where(np.isfinite(d) & (d > 1.0), 1.0 + (np.nan_to_num(d, nan=1.0) - 1.0) * r * r, 1.0)
    return float(f) if f.ndim == 0 else f


def clustered_clopper_pearson(k, n, alpha: float = 0.05):
    """(lower, upper, deff): a two-sided (1 − α) interval for the pooled proportion of K clusters of trials
    (counts (k_j, n_j); in the membership study one cluster = the trials that share one trained model).

    Method — the effective-sample-size Clopper–Pearson interval of Korn & Graubard (1998, "Confidence
    intervals for proportions with small expected number of positive counts estimated from survey data",
    Survey Methodology 24(2)): the exact binomial (beta-quantile) interval evaluated at the pooled p̂ with
    the total N replaced by the effective sample size N* = N / f, where

        f = 1 + (deff − 1)·(t_{K−1, 1−α/2} / z_{1−α/2})²,   deff = :func:`design_effect` (≥ 1),

    i.e. the variance p̂(1 − p̂)/N* = v_bin + (v_clu − v_bin)·(t/z)²: the binomial part is taken as known and
    only the estimated between-cluster excess, which has K − 1 degrees of freedom, is inflated by the squared
    ratio of the t and normal quantiles (Korn & Graubard's degrees-of-freedom adjustment applied to the
    estimated component only). The result is never narrower than the pooled Clopper–Pearson interval (the
    union of both is returned) and equals it when the data show no over-dispersion (deff = 1) or K = 1.

    Why this and not a per-model bootstrap: the study pools K = 2–5 models, and a bootstrap over 2–5 clusters
    has at most a few dozen distinct resamples and is known to under-cover badly; the full Korn–Graubard
    adjustment n*·(t_{N−1}/t_{K−1})² over-covers heavily at such K (coverage ≈ 1 in simulation even without
    over-dispersion, intervals 2–6× wider), which would cost the audit its power to catch broken mechanisms.

    Assumptions: the clusters are independent (independently trained models, fresh member splits) and
    exchangeable (equal or similar sizes); the pooled proportion is the target (the marginal rate over the
    training randomness — the quantity the ε-DP bounds constrain). With K tiny the variance estimate is noisy.
    Simulated coverage of the 95% interval (beta-binomial clusters of 100 trials, rate 0.1 or 0.5, true design
    effect 1, 1.2 or 1.6, 20 000 studies per case): K = 3–20: 0.947–0.980 (pooled Clopper–Pearson: 0.887–0.969);
    K = 2: 0.939–0.978 (naive 0.896–0.969); mean width relative to the binomial interval 1.07–1.30 at K = 20,
    1.2–1.5 at K = 5, 2.3–4.0 at K = 2. With K = 1 nothing is known about between-model variation and the
    binomial interval is returned (deff NaN).

    ``k`` may also be 2-d (independent studies × clusters, common cluster sizes ``n``): the three results are
    then arrays, one entry per study (vectorised, for simulations)."""
    alpha = _check_alpha(alpha)
    k = np.asarray(k)
    if k.ndim == 2:
        n = np.asarray(n)
        for row in (k[0], k[-1]):
            _cluster_counts(row, n)
        if np.any(k < 0) or np.any(k > n):
            raise ValueError("need 0 <= k_j <= n_j in every study")
        return _clustered_cp(k.astype(np.float64), n.astype(np.float64), alpha)
    k, n = _cluster_counts(k, n)
    lo, hi, deff = _clustered_cp(k[None, :], n, alpha)
    return float(lo[0]), float(hi[0]), float(deff[0])


def _clustered_cp(k: np.ndarray, n: np.ndarray, alpha: float):
    from scipy import stats

    kt, N = k.sum(axis=1), n.sum()
    lo_cp = np.where(kt > 0, stats.beta.ppf(alpha / 2, np.maximum(kt, 1), N - kt + 1), 0.0)
    hi_cp = np.where(kt < N, stats.beta.ppf(1 - alpha / 2, kt + 1, np.maximum(N - kt, 1)), 1.0)
    deff = _design_effects(k, n)
    n_eff = N / _variance_inflation(deff, n.size, alpha)
    x = n_eff * kt / N
    lo = np.where(kt > 0, stats.beta.ppf(alpha / 2, np.maximum(x, 1e-300), n_eff - x + 1), 0.0)
    hi = np.where(kt < N, stats.beta.ppf(1 - alpha / 2, x + 1, np.maximum(n_eff - x, 1e-300)), 1.0)
    return np.minimum(lo, lo_cp), np.maximum(hi, hi_cp), deff


def rate_interval(k, n, alpha: float = 0.05, method: str = "design_effect") -> tuple[float, float, float]:
    """(lower, upper, deff) of the proportion pooled over clusters (per-cluster counts k, n): ``design_effect``
    = :func:`clustered_clopper_pearson`, ``clopper_pearson`` = the binomial interval of the pooled counts
    (trials taken as independent). The estimated design effect is returned with both methods."""
    if method == "design_effect":
        return clustered_clopper_pearson(k, n, alpha)
    if method == "clopper_pearson":
        k, n = _cluster_counts(k, n)
        lo, hi = clopper_pearson(int(k.sum()), int(n.sum()), alpha)
        return lo, hi, design_effect(k, n)
    raise ValueError(f"unknown interval method {method!r}; known: {list(CI_METHODS)}")


def pooled_rate_summary(tp, n_pos, fp, n_neg, alpha: float = 0.05, method: str = "design_effect") -> dict:
    """:func:`rate_summary` for trials pooled over clusters: per-cluster counts (tp_j of n_pos_j members, fp_j of
    n_neg_j non-members, one entry per trained model). TPR and FPR: :func:`rate_interval` at level α/2 each.

    Accuracy and advantage (= 2·accuracy − 1):

    * ``clopper_pearson`` — combined from the TPR and FPR intervals (Bonferroni, joint coverage ≥ 1 − α), as
      :func:`rate_summary`;
    * ``design_effect`` with balanced clusters (n_pos_j = n_neg_j) — the (1 − α) :func:`clustered_clopper_pearson`
      interval of the proportion of correct decisions, c_j = tp_j + n_neg_j − fp_j of 2n_j trials per model (the
      balanced accuracy of a balanced set is exactly that proportion). One interval instead of two at α/2, and,
      what matters under clustering, it sees the accuracy's own between-model variation: an attack whose
      calibrated threshold flags more records on one model than on another moves TPR and FPR together, which
      inflates their design effects but cancels in the accuracy. Given the model the correct decisions are
      independent Bernoulli trials with two success rates (TPR, 1 − FPR); the binomial interval of their sum is
      conservative for such a mixture (its variance is at most the binomial one). Unbalanced clusters: the
      Bonferroni combination of the clustered TPR and FPR intervals.

    Adds ``deff_tpr``, ``deff_fpr``, ``deff_accuracy`` (of the correct decisions; NaN for unbalanced clusters) —
    estimated with either method — and ``ci_method``."""
    alpha = _check_alpha(alpha)
    tp, n_pos = _cluster_counts(tp, n_pos)
    fp, n_neg = _cluster_counts(fp, n_neg)
    tpr, fpr = tp.sum() / n_pos.sum(), fp.sum() / n_neg.sum()
    tlo, thi, dt = rate_interval(tp, n_pos, alpha / 2, method)
    flo, fhi, df = rate_interval(fp, n_neg, alpha / 2, method)
    acc = (tpr + 1 - fpr) / 2
    balanced = bool(np.array_equal(n_pos, n_neg))
    da = design_effect(tp + n_neg - fp, n_pos + n_neg) if balanced else float("nan")
    if method == "design_effect" and balanced:
        alo, ahi, da = clustered_clopper_pearson(tp + n_neg - fp, n_pos + n_neg, alpha)
    else:
        alo, ahi = (tlo + 1 - fhi) / 2, (thi + 1 - flo) / 2
    return {"tpr": tpr, "tpr_lo": tlo, "tpr_hi": thi, "fpr": fpr, "fpr_lo": flo, "fpr_hi": fhi,
            "accuracy": acc, "accuracy_lo": alo, "accuracy_hi": ahi,
            "advantage": tpr - fpr, "advantage_lo": 2 * alo - 1, "advantage_hi": 2 * ahi - 1,
            "deff_tpr": dt, "deff_fpr": df, "deff_accuracy": da, "ci_method": method}


def pooled_epsilon_lower_bound(tp, n_pos, fp, n_neg, delta: float = 0.0, alpha: float = 0.05,
                               method: str = "design_effect") -> dict:
    """:func:`epsilon_lower_bound` for trials pooled over clusters (per-cluster counts): TPR at the lower and FPR
    at the upper limit of their :func:`rate_interval` (α/2 each). Returns ``eps_point``, ``eps_lower``,
    ``deff_tpr``, ``deff_fpr``."""
    alpha = _check_alpha(alpha)
    tp, n_pos = _cluster_counts(tp, n_pos)
    fp, n_neg = _cluster_counts(fp, n_neg)
    tlo, _, dt = rate_interval(tp, n_pos, alpha / 2, method)
    _, fhi, df = rate_interval(fp, n_neg, alpha / 2, method)
    point, lower = _epsilon_from_limits(tp.sum() / n_pos.sum(), fp.sum() / n_neg.sum(), tlo, fhi, delta)
    return {"eps_point": point, "eps_lower": lower, "deff_tpr": dt, "deff_fpr": df}


def cluster_mean_interval(values, alpha: float = 0.05) -> tuple[float, float, float]:
    """(mean, half-width, standard error) of a per-cluster statistic (one value per trained model, e.g. its AUC
    or its TPR at a low FPR): the t interval mean ± t_{K−1, 1−α/2}·s/√K over the K independent models. Every
    model is one observation, so the interval respects the clustering by construction; it assumes the
    per-model values are roughly normal, which is crude for K ≤ 3 and for rates stuck at 0. K = 1: NaN."""
    from scipy import stats

    alpha = _check_alpha(alpha)
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1 or v.size < 1:
        raise ValueError("values must be a non-empty 1-d array")
    K = v.size
    if K < 2:
        return float(v.mean()), float("nan"), float("nan")
    se = float(v.std(ddof=1) / math.sqrt(K))
    return float(v.mean()), float(stats.t.ppf(1 - alpha / 2, K - 1) * se), se
