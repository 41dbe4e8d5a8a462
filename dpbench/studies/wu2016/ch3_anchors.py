"""wu2016 chapter 3 — the thesis's claims A1–A8 (docs/studies/wu2016.md#anchors) as data (:data:`CLAIMS`) and
their checks on the results (three-valued verdicts, :mod:`dpbench.verdicts`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpbench import verdicts as V
from dpbench.studies.wu2016.ch3_compute import LABELS, STUDY
from dpbench.studies.wu2016.summaries import ratio_summary


def _acc_means(df) -> pd.Series:
    return df[df["metric"] == "test_accuracy"].groupby(["dataset", "test", "method", "x"])["value"].mean()


def first_within(curve: pd.Series, ref: float, tol: float) -> float:
    """Smallest ε from which the curve stays within ``tol`` of ``ref`` (nan if it never does)."""
    ok = (ref - curve.sort_index()) <= tol
    for e in ok.index:
        if ok.loc[e:].all():
            return float(e)
    return float("nan")


# -- decisions beyond V.Z standard errors over the repetitions (dpbench.verdicts) ------------------------------
# Every (dataset, test, method, ε) point is a mean over the repetitions (seeds); two methods' points are compared as
# independent estimates. A single repetition leaves the standard error undefined: undecided (TOO_FEW), never a pass.

_BEYOND = f"differences beyond {V.Z:g} standard errors over the repetitions"
_NONE = V.Est(math.nan, math.nan, 0)


def _ests(df: pd.DataFrame, by, metric: str | None = "test_accuracy") -> dict:
    """{group key: V.Est of ``value``} of the rows of ``metric``."""
    g = df if metric is None else df[df["metric"] == metric]
    return {k: V.estimate(v.to_numpy()) for k, v in g.groupby(by)["value"]}


def _minus(a: V.Est, b: V.Est) -> V.Est:
    """a − b of two independent estimates."""
    return V.Est(a.mean - b.mean, math.hypot(a.se, b.se), min(a.n, b.n))


def _reach(per: dict) -> tuple[float, float]:
    """(earliest, latest) ε from which a curve is within the tolerance at every larger ε of the grid, from the
    per-ε verdicts {ε: Verdict}: the earliest counts an undecided ε as within, the latest as not; NaN: never."""
    xs = sorted(per)

    def first(ok):
        out = float("nan")
        for x in reversed(xs):
            if not ok(per[x]):
                break
            out = float(x)
        return out

    return first(lambda v: v.status != V.FAILS), first(lambda v: v.holds)


def _reach_text(lo: float, hi: float) -> str:
    if math.isnan(lo):
        return "never"
    if lo == hi:
        return f"ε ≥ {hi:g}"
    return f"ε ≥ {lo:g} to {'never' if math.isnan(hi) else f'{hi:g}'} (undecided between)"


def _no_later(lo_b: float, hi_b: float, lo_o: float, hi_o: float) -> V.Verdict:
    """Does curve b reach the tolerance no earlier than curve o, from their reach intervals (NaN: never)?"""
    inf = lambda x: math.inf if math.isnan(x) else x  # noqa: E731
    if inf(lo_b) >= inf(hi_o):
        return V.holds()
    if inf(hi_b) < inf(lo_o):
        return V.fails()
    return V.undecided(V.WIDE)

#: The thesis's chapter-3 claims checked here (docs/studies/wu2016.md#anchors); ``{...}`` fields are filled by the
#: check.
CLAIMS = V.claim_table(
    V.Claim("A1-scs13", "fig3_2", "Wu 2016, §3.3, Fig. 3.2",
            "ours is up to 4x more accurate than SCS13 (b = 50, 10 passes, all tests) (Wu 2016, §3.3, Fig. 3.2); "
            "checked as: ours' mean test accuracy above SCS13's at ≥ 75 % of the (dataset, test, ε) points, "
            + _BEYOND + " (the largest ratio of the means is reported)"),
    V.Claim("A1-bst14", "fig3_2", "Wu 2016, §3.3, Fig. 3.2",
            "ours is up to 3.5x more accurate than BST14 (b = 50, 10 passes, all tests) (Wu 2016, §3.3, Fig. 3.2); "
            "checked as: ours' mean test accuracy above BST14's at ≥ 75 % of the (dataset, test, ε) points, "
            + _BEYOND + " (the largest ratio of the means is reported)"),
    V.Claim("A2-bst14", "fig3_2", "Wu 2016, §3.3, Fig. 3.2",
            "Protein: BST14 very close to ours, ours consistently better (Wu 2016, §3.3, Fig. 3.2); checked as: at "
            "every (test, ε) ours' mean test accuracy above BST14's, and the difference within ±0.05 (very close), "
            + _BEYOND),
    V.Claim("A2-scs13", "fig3_2", "Wu 2016, §3.3, Fig. 3.2",
            "Protein: SCS13's accuracy decreases significantly with smaller ε (Wu 2016, §3.3, Fig. 3.2); checked "
            "as: in every test the mean test accuracy at the largest ε above the one at the smallest ε by more than "
            "0.02, " + _BEYOND + ", and the curve of the means rising with ε (Spearman ρ > 0)"),
    V.Claim("A3", "fig3_2", "Wu 2016, §3.3, Fig. 3.2",
            "Covertype: ours within 1 point of noiseless from ε ≈ 0.05, BST14 only after ε = 0.4 (Wu 2016, §3.3, "
            "Fig. 3.2); checked as: at each ε a curve is within 0.01 of noiseless when noiseless − its mean test "
            f"accuracy is below 0.01 beyond {V.Z:g} standard errors (not within when above it beyond them); ours "
            "within from some ε ≤ 0.1 on in every test, BST14 from no earlier ε than ours (an undecided ε leaves "
            "the ε from which a curve is within undecided)"),
    V.Claim("A4", "fig3_2", "Wu 2016, §3.3",
            "in some cases the private algorithms are more accurate than noiseless (Wu 2016, §3.3); checked as: "
            "some (method, dataset, test, ε) point's mean test accuracy above noiseless's, " + _BEYOND
            + " (does not hold when every point is below it beyond them)"),
    V.Claim("A5", "fig3_3", "Wu 2016, §3.3, Fig. 3.3(a)",
            "MNIST Test 1, b = 1, ε = 4: accuracy 0.71 at 1 pass → 0.45 at 20 passes (Wu 2016, §3.3, Fig. 3.3(a)); "
            "checked as: at the largest ε the mean test accuracy with the fewest passes above the one with the "
            "most, " + _BEYOND + " (the levels are reported)"),
    V.Claim("A6", "fig3_3", "Wu 2016, §3.3, Fig. 3.3(b)",
            "MNIST Test 3, b = 50: more passes improve the accuracy (Wu 2016, §3.3, Fig. 3.3(b)); checked as: the "
            "mean test accuracy with {more} above the one with {fewer} at ≥ 80 % of the ε (at least 2 ε), "
            + _BEYOND),
    V.Claim("A7", "fig3_3", "Wu 2016, §3.3, Fig. 3.3(c)",
            "MNIST Test 1, 20 passes: b = 1 → 0.45, b = 10 → 0.71 at ε = 4 (Wu 2016, §3.3, Fig. 3.3(c)); checked "
            "as: at the largest ε the mean test accuracy with b = 10 above the one with b = 1, " + _BEYOND
            + " (the levels are reported)"),
    V.Claim("A8", "fig3_4", "Wu 2016, §3.3 'Runtime Overhead', Fig. 3.4",
            "ours adds virtually no runtime over noiseless; SCS13/BST14 2–3× slower at 20 epochs, b = 10, up to 6× "
            "at b = 1, 1 epoch; the gap practically disappears at b = 500 (Wu 2016, §3.3 'Runtime Overhead', Fig. "
            "3.4); checked as: ours' runtime ratio to noiseless (mean over the points) below 1.10, some SCS13/BST14 "
            "ratio above 1.5 at the smallest b, and the largest SCS13/BST14 ratio smaller at the largest b than at "
            "the smallest, " + _BEYOND + " (timed runs)"),
)


def anchor_checks(frames: dict) -> list[dict]:
    """The chapter-3 anchor rows A1–A8 (:data:`CLAIMS`); every difference of means and every threshold is decided
    beyond V.Z standard errors over the repetitions (dpbench.verdicts)."""
    rows: list[dict] = []

    add = V.claim_adder(rows, STUDY, CLAIMS)  # three-valued verdicts (dpbench.verdicts)

    if "fig3_2" in frames:
        df = frames["fig3_2"]
        m = _acc_means(df)
        E = _ests(df, ["dataset", "test", "method", "x"])
        methods = set(df["method"])
        ours = m.xs("bolt_on", level="method") if "bolt_on" in methods else None
        for base in ("scs13", "bst14"):
            if ours is None or base not in methods:
                continue
            b = m.xs(base, level="method")
            both = pd.concat([ours, b], axis=1, keys=["o", "b"]).dropna()
            ratio = both["o"] / both["b"]
            pairs = [(E[(d, t, "bolt_on", x)], E[(d, t, base, x)]) for d, t, x in both.index]
            # per point: ours better beyond 2 standard errors (holds), worse beyond them (fails), else undecided
            per = [V.exceeds(o, bb) for o, bb in pairs]
            frac = float(np.mean([v.holds for v in per])) if per else float("nan")
            tf = V.too_few(*[e for p in pairs for e in p]) if pairs else None
            worst = ratio.idxmax()
            add(f"A1-{base}", f"max accuracy ratio {ratio.max():.2f} (at {worst[0]}, test {worst[1]}, "
                f"ε = {worst[2]:g}); ours > {LABELS[base]} beyond 2 s.e. at {frac:.0%} of {len(both)} (dataset, test, ε) "
                f"points, worse beyond 2 s.e. at {sum(v.status == V.FAILS for v in per)}", ratio.max(),
                tf if tf is not None else V.fraction(per, 0.75))
        if ours is not None and "protein" in set(df["dataset"]) and "bst14" in methods:
            o, b = ours.loc["protein"], m.xs("bst14", level="method").loc["protein"]
            both = pd.concat([o, b], axis=1, keys=["o", "b"]).dropna()
            gap = both["o"] - both["b"]
            pairs = [(E[("protein", t, "bolt_on", x)], E[("protein", t, "bst14", x)]) for t, x in both.index]
            diffs = [_minus(oo, bb) for oo, bb in pairs]
            parts = {"ours above BST14 at every (test, ε)": V.all_of([V.exceeds(d, 0.0) for d in diffs], "no point"),
                     "|ours − BST14| below 0.05 at every (test, ε)": V.all_of([V.within(d, 0.05) for d in diffs],
                                                                              "no point")}
            tf = V.too_few(*[e for p in pairs for e in p]) if pairs else None
            add("A2-bst14", f"ours − BST14 from {gap.min():+.3f} to {gap.max():+.3f} over {len(gap)} (test, ε) points; ours above "
                f"beyond 2 s.e. at {sum(V.exceeds(d, 0.0).holds for d in diffs)}/{len(diffs)}; "
                f"{V.parts_text(parts)}", gap.mean(), tf if tf is not None else V.all_parts(parts))
        if "protein" in set(df["dataset"]) and "scs13" in methods:
            s = m.xs("scs13", level="method").loc["protein"]
            rhos = [float(pd.Series(g.droplevel(0).index).corr(pd.Series(g.to_numpy()), method="spearman"))
                    for _, g in s.groupby(level=0) if len(g) > 2]
            drop = [float(g.iloc[-1] - g.iloc[0]) for _, g in s.groupby(level=0)]
            ends = [(E[("protein", t, "scs13", g.index.get_level_values(1)[-1])],
                     E[("protein", t, "scs13", g.index.get_level_values(1)[0])]) for t, g in s.groupby(level=0)]
            if not rhos:  # fewer than 3 ε per test: no trend to test (never a vacuous pass)
                v = V.undecided(f"{V.TOO_FEW} (fewer than 3 ε per test)")
            elif any(map(math.isnan, rhos)):
                v = V.undecided(f"{V.NAN} (Spearman ρ of a constant curve)")
            else:
                tf = V.too_few(*[e for p in ends for e in p])
                parts = {"accuracy(ε max) − accuracy(ε min) above 0.02 in every test":
                         V.all_of([V.exceeds(_minus(hi, lo), 0.02) for hi, lo in ends]),
                         "Spearman ρ(ε, mean accuracy) > 0 in every test": V.holds() if min(rhos) > 0 else V.fails()}
                v = tf if tf is not None else V.all_parts(parts)
            add("A2-scs13", "accuracy(ε max) − accuracy(ε min) per test: "
                + ", ".join(V.pm(_minus(hi, lo), "+.3f") for hi, lo in ends)
                + (f"; Spearman ρ(ε, accuracy) ≥ {min(rhos):.2f}" if rhos and not any(map(math.isnan, rhos))
                   else "; Spearman ρ undefined (fewer than 3 ε or a constant curve)"), min(drop), v)
        if ours is not None and "covertype" in set(df["dataset"]) and "noiseless" in methods:
            reach, used = {}, []
            for meth in ("bolt_on", "bst14"):
                if meth not in methods:
                    continue
                for (d, t, mm, x), e in E.items():
                    nl = E.get((d, t, "noiseless", x))
                    if d != "covertype" or mm != meth or nl is None:
                        continue
                    # within 0.01 of noiseless at this ε: noiseless − curve below 0.01 beyond 2 standard errors
                    reach.setdefault((meth, int(t)), {})[x] = V.exceeds(0.01, _minus(nl, e))
                    used += [nl, e]
            reach = {k: _reach(per) for k, per in reach.items()}
            ours_r = {t: r for (mm, t), r in reach.items() if mm == "bolt_on"}
            txt = "; ".join(f"{LABELS[mm]} test {t}: {_reach_text(*r)}" for (mm, t), r in sorted(reach.items()))
            by_01 = [V.holds() if hi <= 0.1 else V.fails() if math.isnan(lo) or lo > 0.1 else V.undecided(V.WIDE)
                     for lo, hi in ours_r.values()]
            later = [_no_later(*r, *ours_r[t]) for (mm, t), r in reach.items() if mm == "bst14" and t in ours_r]
            parts = {"ours within 0.01 from ε ≤ 0.1 in every test": V.all_of(by_01, "no test of ours"),
                     "BST14 within 0.01 no earlier than ours": V.all_of(later, "no test of BST14")}
            tf = V.too_few(*used) if used else None
            his = [hi for _, hi in ours_r.values()]
            add("A3", f"within 0.01 of noiseless (beyond 2 s.e.): {txt}; {V.parts_text(parts)}",
                max(his) if his and not any(map(math.isnan, his)) else float("nan"),
                tf if tf is not None else V.all_parts(parts))
        if "noiseless" in methods:
            above, per, used = [], [], []
            for (d, t, meth, x), e in E.items():
                ref = E.get((d, t, "noiseless", x))
                if meth == "noiseless" or ref is None:
                    continue
                v = V.exceeds(e, ref)  # beyond 2 standard errors of the difference
                per.append(v)
                used += [e, ref]
                if v.holds:
                    above.append(f"{LABELS[meth]} {d} test {t} ε={x:g} (+{e.mean - ref.mean:.3f})")
            tf = V.too_few(*used) if used else None
            add("A4", f"{len(above)} (method, dataset, test, ε) point(s) above noiseless by more than 2 standard errors"
                + (f", e.g. {'; '.join(above[:3])}" if above else "")
                + f"; {sum(not v.decided for v in per)} within them, {sum(v.status == V.FAILS for v in per)} below "
                f"beyond them (of {len(per)})", len(above),
                tf if tf is not None else V.any_of(per, "no point with a noiseless reference"))
    if "fig3_3" in frames:
        df = frames["fig3_3"]
        E = _ests(df[df["method"] == "bolt_on"], ["series", "curve", "x"], metric=None)
        emax = float(df["x"].max())

        def at(panel, curve, x=emax):
            return E.get((panel, curve, x), _NONE)

        if "panel_a" in set(df["series"]):
            ks = sorted({c for c in df[df["series"] == "panel_a"]["curve"]}, key=lambda c: float(c.split("=")[1]))
            lo, hi = at("panel_a", ks[0]), at("panel_a", ks[-1])
            add("A5", f"ε = {emax:g}: {V.pm(lo, '.3f')} at {ks[0]} → {V.pm(hi, '.3f')} at {ks[-1]} (decided beyond 2 s.e.)",
                lo.mean - hi.mean, V.exceeds(lo, hi))
        if "panel_b" in set(df["series"]):
            ks = sorted({c for (p, c, _) in E if p == "panel_b"}, key=lambda c: float(c.split("=")[1]))
            xs = sorted({x for (p, c, x) in E if p == "panel_b" and c == ks[0]}
                        & {x for (p, c, x) in E if p == "panel_b" and c == ks[-1]})
            pairs = [(at("panel_b", ks[-1], x), at("panel_b", ks[0], x)) for x in xs]
            # per ε: more passes better beyond 2 standard errors (holds), worse beyond them (fails), else undecided
            per = [V.exceeds(last, first) for last, first in pairs]
            frac = float(np.mean([v.holds for v in per])) if per else float("nan")
            tf = V.too_few(*[e for p in pairs for e in p]) if pairs else None
            add("A6", f"{ks[-1]} > {ks[0]} beyond 2 s.e. at {frac:.0%} of the ε grid (mean gain "
                f"{float(np.mean([a.mean - b.mean for a, b in pairs])) if pairs else float('nan'):+.3f})", frac,
                tf if tf is not None else V.fraction(per, 0.8, min_points=2), more=ks[-1], fewer=ks[0])
        if "panel_c" in set(df["series"]):
            lo, hi = at("panel_c", "b = 1"), at("panel_c", "b = 10")
            add("A7", f"ε = {emax:g}: b = 1 {V.pm(lo, '.3f')}, b = 10 {V.pm(hi, '.3f')} (decided beyond 2 s.e.)",
                hi.mean - lo.mean, V.exceeds(hi, lo))
    if "fig3_4" in frames:
        rs = ratio_summary(frames["fig3_4"])
        E = {(r["dataset"], r["sweep"], r["x"], r["method"]):
             V.Est(r["mean"], r["std"] / math.sqrt(r["count"]) if r["count"] >= 2 else math.nan, r["count"])
             for r in rs.to_dict("records")}
        s = rs.set_index(["dataset", "sweep", "x", "method"])["mean"]
        ours = s.xs("bolt_on", level="method")
        oe = [E[(*k, "bolt_on")] for k in ours.index]
        ours_e = V.Est(float(np.mean([e.mean for e in oe])), math.sqrt(sum(e.se ** 2 for e in oe)) / len(oe),
                       min(e.n for e in oe))
        parts = [f"ours/noiseless mean {ours.mean():.2f} (range {ours.min():.2f}–{ours.max():.2f})"]
        for sweep, x, what in (("epochs", None, "most epochs"), ("batch", None, "b min"), ("batch", "max", "b max")):
            sub = s.xs(sweep, level="sweep")
            xs = sorted(set(sub.index.get_level_values("x")))
            xv = xs[-1] if (sweep == "epochs" or x == "max") else xs[0]
            base = [float(sub.xs(xv, level="x").xs(m, level="method").max()) for m in ("scs13", "bst14")
                    if m in set(sub.index.get_level_values("method"))]
            parts.append(f"SCS13/BST14 at {what} ({sweep} {xv:g}): up to {max(base):.2f}×")
        xs = sorted({x for (d, sw, x, mm) in E if sw == "batch"})
        slow = lambda xv: {k: e for k, e in E.items() if k[1] == "batch" and k[2] == xv  # noqa: E731
                           and k[3] in ("scs13", "bst14")}
        small, large = slow(xs[0]), slow(xs[-1])
        gap_small = max((e.mean for e in small.values()), default=float("nan"))
        top = lambda d: max(d.values(), key=lambda e: e.mean) if d else _NONE  # noqa: E731
        checks = {"ours/noiseless mean below 1.10": V.exceeds(1.10, ours_e),
                  "SCS13/BST14 above 1.5× at the smallest b": V.any_of([V.exceeds(e, 1.5) for e in small.values()],
                                                                      "no SCS13/BST14 at the smallest b"),
                  "largest SCS13/BST14 ratio smaller at the largest b than at the smallest":
                      V.exceeds(top(small), top(large))}
        used = oe + list(small.values()) + list(large.values())
        tf = V.too_few(*used)
        add("A8", "; ".join(parts) + f"; {V.parts_text(checks)}", gap_small, tf if tf is not None else V.all_parts(checks))
    return rows
