"""song2018 chapters 3-4 — the claims of Song (2018) §3.4.3-3.4.4 and §4.5 checked on the results
(docs/studies/song2018.md#anchor-checks). The claims are data (:data:`CLAIMS`: statement templates whose fields
the checks fill in); every difference of means is decided beyond ``V.Z`` standard errors over the repetitions
(permutations, runs) and every variance ratio by the matching F interval (:mod:`~dpbench.studies.song2018.ch34_stats`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpbench import verdicts as V
from dpbench.methods import ldp_sgd as L
from dpbench.studies.song2018.ch34_compute import CH4_DATASETS, LABELS, STUDY
from dpbench.studies.song2018.ch34_stats import LEVEL as _LEVEL
from dpbench.studies.song2018.ch34_stats import Est
from dpbench.studies.song2018.ch34_stats import below as _below
from dpbench.studies.song2018.ch34_stats import degradation as _degradation
from dpbench.studies.song2018.ch34_stats import ests as _ests
from dpbench.studies.song2018.ch34_stats import fmt_or_dash as _g
from dpbench.studies.song2018.ch34_stats import is_lowest as _is_lowest
from dpbench.studies.song2018.ch34_stats import lowest as _lowest
from dpbench.studies.song2018.ch34_stats import rel_gap as _rel_gap
from dpbench.studies.song2018.ch34_stats import sd_ratio_at_least as _sd_ratio_at_least
from dpbench.studies.song2018.spec import DATASET_LABELS

_est = V.estimate
_too_few = V.too_few
_pm = V.pm
_all_parts = V.all_parts
_parts_text = V.parts_text

_BEYOND = "differences beyond {z:g} standard errors"   # in the statements below; z = V.Z

CLAIMS = V.claim_table(
    V.Claim("A3.1", "fig3_1", "§3.4.3",
            "{dataset}: b = {b1} private SGD is far from non-private with high variance, b = {bl} matches it "
            "(§3.4.3); checked as: relative gap of the final objective (mean private / mean non-private − 1 over the "
            "permutations, delta-method standard error) below 5 % at b = {bl}, above 5 % and above 5× the b = {bl} "
            "gap at b = {b1}, " + _BEYOND + "; std of the private final objective larger at b = {b1} ({level} F "
            "interval for the ratio of standard deviations above 1)"),
    V.Claim("A3.2a", "fig3_2", "§3.4.4",
            "{dataset}, η_t = 1/√t: increasing b helps private SGD up to a limit; very large b degrades it (§3.4.4); "
            "checked as: some b strictly between the smallest and the largest has a lower mean final objective than "
            "both, each difference beyond {z:g} standard errors (does not hold when every such b is above one of the "
            "two beyond them)"),
    V.Claim("A3.2b", "fig3_2", "§3.4.4",
            "{dataset}: with the larger rate the degradation at large b is smaller and the end value closer to "
            "centralized (§3.4.4); checked as: degradation (mean final objective at the largest b − at the best b) "
            "smaller with the larger rate, and the mean at the largest b closer to the centralized value "
            "(deterministic, exact), " + _BEYOND),
    V.Claim("A3.3", "fig3_3", "§3.4.4",
            "1/(λt) dramatically increases the variance of private SGD compared with 1/√t (§3.4.4); checked as: std "
            "of the final private objective ≥ 10×, decided by the two-sided {level} F interval for the ratio of "
            "standard deviations (the level of {z:g} standard errors): lower bound ≥ 10 holds, upper bound < 10 "
            "does not hold"),
    V.Claim("A4.alg2", "fig4_1", "Thm 4.2.1, §4.4.1",
            "Algorithm 2 reproduces values derived from Thm 4.2.1 and §4.4.1 (MNIST d = 25: c_CN ≈ 29.5/118/262, "
            "c_NC ≈ 17218/10326/6606, orders CN/NC/NC; Covertype d = 54: ε_N = 1 CN, ε_N = 2 NC)"),
    V.Claim("A4.1a", "fig4_1", "Thm 4.3.1, §4.5",
            "{dataset}: CleanFirst best for c < 1/λ, NoisyFirst best for c > 1/λ (Thm 4.3.1, §4.5); checked as: at "
            "every c of the grid (c = 1/λ left out) that order has the lowest mean |f(w_T+1) − f(v_T+1)| over the "
            "runs, below each other order beyond {z:g} standard errors of the difference"),
    V.Claim("A4.1b", "fig4_1", "§4.5",
            "{dataset}: Algorithm2 beats SameClean and SameNoisy; the gap shrinks as ε_N grows (§4.5); checked as: "
            "Algorithm2's mean final objective below both SameClean and SameNoisy at ≥ 80 % of the ε_N (a tie within "
            "the standard errors is undecided, never a pass), and the gap min(SameClean, SameNoisy) − Algorithm2 "
            "larger at the smallest ε_N than at the largest, " + _BEYOND),
    V.Claim("A4.1b2", "fig4_1", "§4.5",
            "{dataset}: Algorithm2 best for moderate/high ε_N, CleanOnly slightly better for low ε_N (§4.5); checked "
            "as: at every ε_N ≥ the median {median:g} Algorithm2's mean final objective below CleanOnly, SameClean "
            "and SameNoisy (Optimal, noiseless, left out), and at the smallest ε_N CleanOnly's below Algorithm2's, "
            + _BEYOND + " (a tie within them is undecided, never a pass)"),
    V.Claim("A4.1c", "fig4_1", "§4.5",
            "{dataset}: the best c₂ lies between c₂(L) and c₂(U), and some c₂ beats CleanOnly (§4.5); checked as: "
            "the lowest mean objective inside [c₂(L), c₂(U)] is below every grid c₂ outside it (does not hold when "
            "the lowest outside is below every c₂ inside), and some c₂ has a mean below CleanOnly, " + _BEYOND),
)

# (d, ε_N, expected order, c_CN or None, c_NC or None) at λ = 1e-3, β_C = 0.1, ε_C = 10: DERIVED by us from
# Thm 4.2.1 and H_CN / H_NC of §4.4.1 (not printed in the thesis; docs/studies/song2018.md#algorithm-2-derived-values)
ALG2_ANCHORS = [
    (25, 1.0, "CN", 29.5, 17218.0), (25, 2.0, "NC", 118.0, 10326.0), (25, 3.0, "NC", 262.0, 6606.0),
    (25, 10.0, None, 1000.0, 1000.0), (54, 1.0, "CN", 26.4, 17750.0), (54, 2.0, "NC", None, None)]


def alg2_anchor_check(add) -> None:
    """Algorithm 2 on the derived values of ALG2_ANCHORS (relative tolerance 1 %; the values are rounded)."""
    bad, parts = [], []
    for d, en, order, ccn, cnc in ALG2_ANCHORS:
        ch = L.algorithm2(L.gamma_sq_upper(d, 10.0), L.gamma_sq_upper(d, en), 0.1, 1e-3)
        ok = (order is None or ch.order == order) and (ccn is None or abs(ch.c_CN / ccn - 1) < 0.01) and (
            cnc is None or abs(ch.c_NC / cnc - 1) < 0.01)
        parts.append(f"d={d}, ε_N={en:g}: {ch.order}, c_CN={ch.c_CN:.1f}, c_NC={ch.c_NC:.0f}")
        if not ok:
            bad.append((d, en))
    add("A4.alg2", "; ".join(parts), float(len(bad)), not bad)


def _check_a3_1(df: pd.DataFrame, add) -> None:
    for d in df["dataset"].unique():
        g = df[df["dataset"] == d]
        bs = sorted(g["batch_size"].unique())
        if len(bs) < 2:
            continue
        fin = g[g["iteration"] == g.groupby("batch_size")["iteration"].transform("max")]
        b1, bl = bs[0], bs[-1]
        g1, gl = (_rel_gap(fin[fin["batch_size"] == b]) for b in (b1, bl))
        priv = {b: fin[(fin["batch_size"] == b) & (fin["method"] == "private")]["value"] for b in (b1, bl)}
        sd_v, ratio, lo, hi = _sd_ratio_at_least(priv[b1], priv[bl], 1.0)
        five = Est(0.05)
        parts = {f"gap at b = {bl} < 5 %": _below(gl, five),
                 f"gap at b = {b1} > 5 %": _below(five, g1),
                 f"gap at b = {b1} > 5 × gap at b = {bl}": _below(Est(5 * gl.mean, 5 * gl.se, gl.n), g1),
                 f"std at b = {b1} > std at b = {bl}": sd_v}
        add("A3.1", f"final objective private/non-private − 1: b = {b1}: {g1.mean:+.1%} ± {g1.se:.1%}, b = {bl}: "
            f"{gl.mean:+.1%} ± {gl.se:.1%} (n = {g1.n:g}, {gl.n:g}); private std {priv[b1].std():.3g} vs "
            f"{priv[bl].std():.3g} (ratio {ratio:.3g}, {_LEVEL} interval [{lo:.3g}, {hi:.3g}]); {_parts_text(parts)}",
            gl.mean, _all_parts(parts), dataset=DATASET_LABELS[d], b1=b1, bl=bl, z=V.Z, level=_LEVEL)

def _check_fig3_2(df: pd.DataFrame, add) -> None:
    for d in df["dataset"].unique():
        g = df[df["dataset"] == d]
        priv = g[g["method"] == "private"]
        est = {s: _ests(priv[priv["schedule"] == s], "x") for s in priv["schedule"].unique()}
        central = g[g["method"] == "centralized"]["value"].mean()  # deterministic solver: an exact value
        if "inv_sqrt" in est:
            p = est["inv_sqrt"]
            bs = list(p)
            b1, bl, best = bs[0], bs[-1], _lowest(p)
            inner = [V.all_of([_below(p[b], p[b1]), _below(p[b], p[bl])]) for b in bs[1:-1]]
            v = V.any_of(inner) if inner else V.undecided(
                f"{V.TOO_FEW} ({len(bs)} batch sizes: none between the smallest and the largest)")
            add("A3.2a", "mean ± standard error of the private final objective by b: " + ", ".join(
                    f"{b:g}: {_pm(e)}" for b, e in p.items()) + f"; best b = {_g(best, 'g')}",
                math.nan if best is None else best, v, dataset=DATASET_LABELS[d], z=V.Z)
        if {"inv_sqrt", "large"} <= set(est):
            p1, p2 = est["inv_sqrt"], est["large"]
            deg1, deg2 = _degradation(p1), _degradation(p2)
            e1, e2 = p1[max(p1)], p2[max(p2)]
            dist = lambda e: Est(abs(e.mean - central), e.se, e.n)  # noqa: E731
            parts = {"smaller degradation with the larger rate": _below(deg2, deg1),
                     "end value closer to centralized": _below(dist(e2), dist(e1))}
            add("A3.2b", f"b = {max(p1):g}: degradation from the best b {_pm(deg1, '.3g')} (1/√t) vs "
                f"{_pm(deg2, '.3g')} "
                f"(larger); distance to centralized ({central:.4g}) {_pm(dist(e1), '.3g')} vs {_pm(dist(e2), '.3g')}; "
                f"{_parts_text(parts)}", deg2.mean - deg1.mean, _all_parts(parts), dataset=DATASET_LABELS[d], z=V.Z)


def _check_a3_3(df: pd.DataFrame, add) -> None:
    fin = df[(df["iteration"] == df["updates"]) & (df["method"] == "private")]
    vals = {s: g["value"] for s, g in fin.groupby("schedule")}
    if {"inv_sqrt", "inv_lambda_t"} <= set(vals):
        a, b = vals["inv_lambda_t"], vals["inv_sqrt"]
        v, ratio, lo, hi = _sd_ratio_at_least(a, b, 10.0)
        add("A3.3", f"std {a.std():.3g} vs {b.std():.3g} (×{ratio:.3g}, {_LEVEL} interval [{lo:.3g}, {hi:.3g}], "
            f"n = {len(a)}, {len(b)})", ratio, v, level=_LEVEL, z=V.Z)


def _check_a4_1a(g: pd.DataFrame, d: str, add) -> None:
    o = g[g["panel"] == "order"]
    if o.empty:
        return
    lam = float(o["l2"].iloc[0])
    est = _ests(o, ["x", "method"])
    per = {}                                            # c -> (expected best order, verdict, lowest mean)
    for c in sorted({x for x, _ in est}):
        if c == 1 / lam:
            continue
        want = "clean_first" if c < 1 / lam else "noisy_first"
        ms = {m: e for (x, m), e in est.items() if x == c}
        per[c] = (want, _is_lowest(want, ms), _lowest(ms))
    below = [v for c, (_, v, _) in per.items() if c < 1 / lam]
    above = [v for c, (_, v, _) in per.items() if c > 1 / lam]
    nb, na = sum(v.holds for v in below), sum(v.holds for v in above)
    add("A4.1a", f"CleanFirst best beyond {V.Z:g} SE at {nb}/{len(below)} c < 1/λ, NoisyFirst at {na}/{len(above)} "
        "c > 1/λ; "
        "per c (lowest mean, verdict): " + ", ".join(f"{c:g}: {LABELS[lo] if lo else '–'} ({v.status})"
                                                      for c, (_, v, lo) in per.items()),
        (nb + na) / len(per) if per else math.nan, V.all_of(below + above, "no c on either side of 1/λ"),
        dataset=DATASET_LABELS[d], z=V.Z)


def _check_a4_1b(g: pd.DataFrame, d: str, add) -> None:
    e = g[g["panel"] == "epsn"]
    if e.empty or not {"alg2", "same_clean", "same_noisy"} <= set(e["method"]):
        return
    est = _ests(e, ["x", "method"])                     # CleanOnly / Optimal: the same runs at every ε_N
    xs = sorted({x for x, m in est if m == "alg2"})
    per, gaps = {}, {}
    for x in xs:
        a2, same = est[(x, "alg2")], [est[(x, m)] for m in ("same_clean", "same_noisy") if (x, m) in est]
        if not same:
            continue
        per[x] = V.all_of([_below(a2, s) for s in same])
        lo = min(same, key=lambda s: s.mean)            # the better of SameClean / SameNoisy at this ε_N
        gaps[x] = Est(lo.mean - a2.mean, math.hypot(lo.se, a2.se), min(lo.n, a2.n))
    if not per:
        return
    used = [v for (x, m), v in est.items() if m in ("alg2", "same_clean", "same_noisy")]
    tf = _too_few(*used)
    nb = sum(v.holds for v in per.values())
    gx = sorted(gaps)
    shrink = (_below(gaps[gx[-1]], gaps[gx[0]]) if len(gx) >= 2 else
              V.undecided(f"{V.TOO_FEW} (one ε_N: no trend)"))
    parts = {"Algorithm2 below both at ≥ 80 % of ε_N": tf if tf is not None else V.fraction(per.values(), 0.8),
             "gap larger at the smallest ε_N than at the largest": shrink}
    add("A4.1b", f"Algorithm2 below both beyond {V.Z:g} SE at {nb}/{len(per)} ε_N ("
        + ", ".join(f"{x:g}: {v.status}" for x, v in per.items()) + "); gap "
        + ", ".join(f"ε_N={x:g}: {_pm(gaps[x], '.3g')}" for x in gx) + f"; {_parts_text(parts)}",
        nb / len(per), _all_parts(parts), dataset=DATASET_LABELS[d], z=V.Z)
    if not any(m == "clean_only" for _, m in est):
        return
    med = float(np.median(xs))
    lowest, hi = xs[0], [x for x in xs if x >= med]
    rivals = ("clean_only", "same_clean", "same_noisy")        # Optimal (noiseless) left out
    best = {x: _is_lowest("alg2", {m: est[(x, m)] for m in ("alg2",) + rivals if (x, m) in est}) for x in hi}
    parts = {f"Algorithm2 lowest at every ε_N ≥ {med:g}": V.all_of(best.values(), "no ε_N"),
             f"CleanOnly below Algorithm2 at ε_N = {lowest:g}":
                 _below(est[(lowest, "clean_only")], est[(lowest, "alg2")]) if (lowest, "clean_only") in est
                 else V.undecided(f"{V.EMPTY} (no CleanOnly at ε_N = {lowest:g})")}
    a2, co = est[(lowest, "alg2")], est.get((lowest, "clean_only"), Est(math.nan, math.nan, 0))
    add("A4.1b2", f"at ε_N = {lowest:g}: Algorithm2 {_pm(a2)} vs CleanOnly {_pm(co)}; Algorithm2 lowest per "
        f"ε_N ≥ {med:g}: "
        + ", ".join(f"{x:g}: {v.status}" for x, v in best.items()) + f"; {_parts_text(parts)}",
        a2.mean - co.mean, _all_parts(parts), dataset=DATASET_LABELS[d], median=med, z=V.Z)


def _check_a4_1c(g: pd.DataFrame, d: str, add) -> None:
    c = g[g["panel"] == "c2"]
    if c.empty:
        return
    a1 = _ests(c[c["method"] == "alg1"], "x")
    co_rows = c[c["method"] == "clean_only"]              # one CleanOnly run is repeated at every grid c₂
    co = _est(co_rows.groupby("rep")["value"].first() if "rep" in co_rows else co_rows["value"])
    lo, hi = sorted((float(c["c2_lower"].iloc[0]), float(c["c2_upper"].iloc[0])))
    inside = {x: e for x, e in a1.items() if lo * (1 - 1e-9) <= x <= hi * (1 + 1e-9)}
    outside = {x: e for x, e in a1.items() if x not in inside}
    best, bi, bo = _lowest(a1), _lowest(inside), _lowest(outside)
    if bi is None or bo is None:
        v_in = V.undecided(f"{V.EMPTY} (no grid c₂ {'inside' if bi is None else 'outside'} the bracket)")
    else:
        v_hold = V.all_of([_below(inside[bi], e) for e in outside.values()])
        v_fail = V.all_of([_below(outside[bo], e) for e in inside.values()])
        if v_hold.holds:
            v_in = V.holds()
        elif v_fail.holds:
            v_in = V.fails()
        else:
            v_in = V.undecided(next((x.reason for x in (v_hold, v_fail) if not x.decided), V.WIDE))
    parts = {"best c₂ inside the bracket": v_in,
             "some c₂ beats CleanOnly": V.any_of([_below(e, co) for e in a1.values()], "no c₂")}
    add("A4.1c", f"best grid c₂ = {_g(best)}, bracket [{lo:.4g}, {hi:.4g}]; best inside {_g(bi)}: "
        f"{_pm(inside[bi]) if bi is not None else '–'}, best outside {_g(bo)}: "
        f"{_pm(outside[bo]) if bo is not None else '–'}; CleanOnly {_pm(co)}; {_parts_text(parts)}",
        math.nan if best is None else best, _all_parts(parts), dataset=DATASET_LABELS[d], z=V.Z)


def anchor_rows(frames: dict) -> list[dict]:
    """The chapter-3/4 anchor rows, in the order of the figures."""
    rows: list[dict] = []
    add = V.claim_adder(rows, STUDY, CLAIMS)  # three-valued verdicts (dpbench.verdicts)
    if "fig3_1" in frames:
        _check_a3_1(frames["fig3_1"], add)
    if "fig3_2" in frames:
        _check_fig3_2(frames["fig3_2"], add)
    if "fig3_3" in frames:
        _check_a3_3(frames["fig3_3"], add)
    if "fig4_1" in frames:
        df = frames["fig4_1"]
        alg2_anchor_check(add)
        for d in [x for x in CH4_DATASETS if x in set(df["dataset"])]:
            g = df[df["dataset"] == d]
            _check_a4_1a(g, d, add)
            _check_a4_1b(g, d, add)
            _check_a4_1c(g, d, add)
    return rows
