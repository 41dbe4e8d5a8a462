"""song2018 chapters 3-4 — estimates over repetitions (permutations, runs) and their decisions for the anchor
checks: differences of means beyond ``V.Z`` standard errors, ratios of standard deviations by the matching F
interval (:mod:`dpbench.verdicts`, shared by every study)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpbench import verdicts as V

#: two-sided level of the intervals that match Z standard errors of a normal estimate (≈ 4.55 % for Z = 2)
ALPHA = math.erfc(V.Z / math.sqrt(2.0))


# estimates over repetitions and their decisions: dpbench.verdicts (shared by every study)
Est = V.Est
_est = V.estimate
_too_few = V.too_few
_pm = V.pm


def ests(df: pd.DataFrame, by) -> dict:
    """{group key: Est of ``value``} (keys sorted)."""
    return {k: _est(g["value"]) for k, g in sorted(df.groupby(by), key=lambda kg: kg[0])}


def fmt_or_dash(x, fmt: str = ".4g") -> str:
    return "–" if x is None else f"{x:{fmt}}"


def below(a: Est, b: Est) -> V.Verdict:
    """Is the mean ``a`` below the mean ``b`` beyond Z standard errors of the difference (independent estimates)?"""
    return V.exceeds(b, a)


def is_lowest(name, ests: dict) -> V.Verdict:
    """Is ``name`` the lowest mean of ``ests`` ({label: Est}), below every other beyond Z standard errors of the
    difference (:func:`V.is_best` on the negated means)?"""
    if name not in ests:
        return V.undecided(V.NAN)
    tf = _too_few(*ests.values())
    if tf is not None:
        return tf
    return V.is_best(name, pd.Series({k: -e.mean for k, e in ests.items()}),
                     pd.Series({k: e.se for k, e in ests.items()}))


def lowest(ests: dict):
    """The label of the lowest mean (NaN means ignored; None if none)."""
    finite = {k: e.mean for k, e in ests.items() if not math.isnan(e.mean)}
    return min(finite, key=finite.get) if finite else None


def sd_ratio_at_least(a, b, k: float):
    """σ_a/σ_b ≥ ``k``? (verdict, s_a/s_b, lower, upper): the two-sided 1 − ALPHA interval for the ratio of standard
    deviations of two independent normal samples, (s_a/s_b)/√F quantiles with (n_a − 1, n_b − 1) degrees of
    freedom; lower bound ≥ k holds, upper bound < k does not hold, else undecided (WIDE)."""
    from scipy import stats

    a, b = pd.Series(a, dtype=float).dropna(), pd.Series(b, dtype=float).dropna()
    na, nb = len(a), len(b)
    tf = _too_few(Est(0.0, n=na), Est(0.0, n=nb))
    if tf is not None:
        return tf, math.nan, math.nan, math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        F = np.float64(a.std(ddof=1)) ** 2 / np.float64(b.std(ddof=1)) ** 2
    if np.isnan(F):
        return V.undecided(V.NAN), math.nan, math.nan, math.nan
    lo = math.sqrt(F / stats.f.ppf(1 - ALPHA / 2, na - 1, nb - 1))
    hi = math.sqrt(F / stats.f.ppf(ALPHA / 2, na - 1, nb - 1))
    v = V.holds() if lo >= k else V.fails() if hi < k else V.undecided(V.WIDE)
    return v, math.sqrt(F), lo, hi


def rel_gap(g: pd.DataFrame) -> Est:
    """Relative gap mean(private)/mean(non-private) − 1 of one batch size over the repetitions, with its
    delta-method standard error SE(P̄ − r·N̄)/|N̄|, r = P̄/N̄. Private and non-private model r share permutation r
    (:func:`~dpbench.studies.song2018.ch34_compute.run_ch3`), so the residuals P_r − r·N_r are paired by ``rep``
    when both methods have the same repetitions; otherwise the two means are taken as independent."""
    P = g[g["method"] == "private"].set_index("rep")["value"].astype(float)
    N = g[g["method"] == "non_private"].set_index("rep")["value"].astype(float)
    n = min(len(P), len(N))
    if n == 0:
        return Est(math.nan, math.nan, 0)
    r = P.mean() / N.mean()
    if n < 2:
        return Est(float(r - 1), math.nan, n)
    if P.index.is_unique and N.index.is_unique and set(P.index) == set(N.index):
        se = (P - r * N.reindex(P.index)).std(ddof=1) / math.sqrt(len(P)) / abs(N.mean())
    else:
        se = math.hypot(P.sem(), r * N.sem()) / abs(N.mean())
    return Est(float(r - 1), float(se), n)

def degradation(p: dict) -> Est:
    """Mean final objective at the largest b minus the one at the best (lowest) b; exactly 0 if the largest is best."""
    bl, best = max(p), lowest(p)
    if best is None:
        return Est(math.nan, math.nan, 0)
    if best == bl:
        return Est(0.0, 0.0, p[bl].n)
    return Est(p[bl].mean - p[best].mean, math.hypot(p[bl].se, p[best].se), min(p[bl].n, p[best].n))


#: the level of :data:`ALPHA` as shown in claim statements and measurements
LEVEL = f"{1 - ALPHA:.1%}"
