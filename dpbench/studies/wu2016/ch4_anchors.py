"""wu2016 chapter 4 — the thesis's claims B1–B7 (docs/studies/wu2016.md#anchors) as data (:data:`CLAIMS`) and
their checks on the results (three-valued verdicts, :mod:`dpbench.verdicts`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpbench import verdicts as V
from dpbench.studies.wu2016.ch4_compute import LABELS, STUDY


def _means(df, metric):
    return df[df["metric"] == metric].groupby(["method", "x"])["value"].mean()


def _at(curve: pd.Series, x: float) -> tuple[float, float]:
    """(value at the grid point nearest to x, that grid point)."""
    xs = np.asarray(curve.index, dtype=float)
    k = int(np.argmin(np.abs(np.log(xs) - math.log(x)))) if (xs > 0).all() else int(np.argmin(np.abs(xs - x)))
    return float(curve.iloc[k]), float(xs[k])


# -- decisions beyond V.Z standard errors over the repetitions (dpbench.verdicts) ------------------------------
# A repetition is one random train/test split shared by every method (Fig. 4.8: one split and one set of chunks
# shared by every sampling rate), so two curves are compared by their per-repetition differences (V.paired) and
# ratios (V.ratio); a single repetition leaves the standard error undefined: undecided (TOO_FEW), never a pass.

_BEYOND = f"differences beyond {V.Z:g} standard errors (paired by split)"


def _reps(df: pd.DataFrame, metric: str, method: str, x: float) -> pd.Series:
    """The repetitions' values of ``method`` at grid point ``x``, indexed by ``rep`` (the split)."""
    g = df[(df["metric"] == metric) & (df["method"] == method) & np.isclose(df["x"].astype(float), x)]
    return (g.set_index("rep")["value"] if "rep" in g else g["value"]).astype(float)


def _diff(df, metric, a, b, x) -> V.Est:
    """mean(a) − mean(b) at ``x`` with its standard error over the splits (paired)."""
    return V.paired(_reps(df, metric, a, x), _reps(df, metric, b, x))


def _close_to(df, metric, a, b, xs, tol):
    """Per grid point: |mean(a) − mean(b)| below ``tol`` beyond V.Z standard errors ({x: verdict}) and the
    largest |difference of the means|."""
    d = {x: _diff(df, metric, a, b, x) for x in xs}
    return {x: V.within(e, tol) for x, e in d.items()}, max((abs(e.mean) for e in d.values()), default=math.nan)


def _statuses(per: dict) -> str:
    return ", ".join(f"{x:g}: {v.status}" for x, v in per.items())

#: The thesis's chapter-4 claims checked here (docs/studies/wu2016.md#anchors).
CLAIMS = V.claim_table(
    V.Claim("B1", "fig4_1", "Wu 2016, §4.1, §4.4, Fig. 4.1",
            "diabetes LR: baseline 80%, Data-Independent OP 60–80%, FM 40–60% over ε ∈ [0.1, 4]; OP > FM for all ε "
            "(Wu 2016, §4.1, §4.4, Fig. 4.1); checked as: Data-Independent OP more accurate than FM at every ε, "
            + _BEYOND + "; the accuracy ranges are reported, not checked"),
    V.Claim("B2", "fig4_2", "Wu 2016, §4.1, §4.4, Fig. 4.2",
            "Warfarin: OP up to 20× smaller MSE than FM; Data-Independent/Oracle accurate at ε = 0.1; Tuned OP "
            "accurate at ε = 0.3; FM comparable only at ε ≥ 5 (Wu 2016, §4.1, §4.4, Fig. 4.2); checked as: every OP "
            "variant's mean test MSE below FM's at every ε < 5, and the ratio of the mean MSEs FM/Data-Independent "
            "above 2 at some ε (delta-method standard error), " + _BEYOND + "; the accuracy at ε = 0.1 / 0.3 and "
            "where FM comes close are reported, not checked"),
    V.Claim("B3", "fig4_3", "Wu 2016, §4.4, Fig. 4.3",
            "max MSE gap Data-Independent vs Oracle = 0.1 (Wu 2016, §4.4, Fig. 4.3); checked as: at every ε the "
            "difference of the mean test MSEs within ±0.1 (target units), " + _BEYOND),
    V.Claim("B4", "fig4_5", "Wu 2016, §4.4, Fig. 4.5",
            "max MSE gap objective perturbation vs Data-Independent/Oracle OP = 0.1 (Wu 2016, §4.4, Fig. 4.5); "
            "checked as: some tuned objective perturbation (R₁ or R₂) within ±0.1 of Data-Independent OP's mean test "
            "MSE at every ε, " + _BEYOND),
    V.Claim("B5", "fig4_6", "Wu 2016, §4.4, Fig. 4.6",
            "ε = 0.2: MI accuracy 45% (Oracle OP) vs 35% (FM); MSE 1.82 vs 22.57 (Wu 2016, §4.4, Fig. 4.6); checked "
            "as: at ε = 0.2 the Oracle's mean MI accuracy above FM's and its mean test MSE below FM's, " + _BEYOND
            + "; the levels are reported, not checked"),
    V.Claim("B6", "fig4_8", "Wu 2016, §4.4, Fig. 4.8",
            "Tuned OP, ε_p = 0.5: MSE 5.05 (r = 10%) → 2.9 (r = 90%); MI 36% → 40% (Wu 2016, §4.4, Fig. 4.8); "
            "checked as: from the smallest r to r ≈ 0.9 the mean test MSE falls and the mean MI accuracy rises, "
            + _BEYOND),
    V.Claim("B7", "fig4_2", "Wu 2016, §4.1",
            "Fredrikson et al.: FM accuracy unacceptable even at ε = 5 (Wu 2016, §4.1); checked as: FM's mean test "
            "MSE at ε = 5 above 1.2× the non-private one (delta-method standard error of the ratio, paired by "
            f"split), beyond {V.Z:g} standard errors"),
)


def anchor_checks(frames: dict) -> list[dict]:
    """The chapter-4 anchor rows B1–B7 (:data:`CLAIMS`); every difference of means, ratio and threshold is decided beyond V.Z
    standard errors over the splits (dpbench.verdicts): a clear effect holds, the reversed effect does not hold,
    one within the standard errors (a tie included) is undecided, and a single split is undecided (TOO_FEW)."""
    rows: list[dict] = []

    add = V.claim_adder(rows, STUDY, CLAIMS)  # three-valued verdicts (dpbench.verdicts)

    have = lambda f, ms: f in frames and set(ms) <= set(frames[f]["method"])  # noqa: E731
    if have("fig4_1", ("non_private", "op_data_independent", "fm")):
        df = frames["fig4_1"]
        m = _means(df, "accuracy")
        base, ours, fmc = m.loc["non_private"], m.loc["op_data_independent"], m.loc["fm"]
        op_fm = {x: V.exceeds(_diff(df, "accuracy", "op_data_independent", "fm", x), 0.0)
                 for x in ours.index if x in fmc.index}
        sub = " [SUBSTITUTE DATA]" if bool(df["is_substitute"].any()) else ""
        add("B1", f"baseline {base.mean():.3f}; OP {ours.min():.3f}–{ours.max():.3f}; FM {fmc.min():.3f}–{fmc.max():.3f}; "
            f"OP > FM (beyond 2 s.e.) at {int(sum(v.holds for v in op_fm.values()))}/{len(op_fm)} ε "
            f"({_statuses(op_fm)}){sub}", float(base.mean()), V.all_of(op_fm.values(), "no ε with both methods"))
    if have("fig4_2", ("fm", "op_data_independent", "op_oracle", "non_private")):
        df = frames["fig4_2"]
        m = _means(df, "mse")
        np_mse = float(m.loc["non_private"].mean())
        ops = [k for k in ("op_data_independent", "op_oracle", "op_tuned_r1", "op_tuned_r2") if k in m.index.get_level_values(0)]
        xs = [x for x in m.loc["fm"].index if x in m.loc["op_data_independent"].index]
        ratios = {x: V.ratio(_reps(df, "mse", "fm", x), _reps(df, "mse", "op_data_independent", x)) for x in xs}
        lo_eps = [x for x in m.loc["fm"].index if x < 5]
        below = [V.exceeds(_diff(df, "mse", "fm", o, x), 0.0) for o in ops for x in lo_eps if x in m.loc[o].index]
        parts = {"every OP variant below FM at every ε < 5": V.all_of(below, "no ε < 5"),
                 "FM/Data-Indep. MSE ratio above 2 at some ε": V.any_of([V.exceeds(r, 2.0) for r in ratios.values()],
                                                                       "no ε with both methods")}
        rmax = max(ratios, key=lambda x: ratios[x].mean) if ratios else None
        di01, x01 = _at(m.loc["op_data_independent"], 0.1)
        fm_close = [x for x in m.loc["fm"].index if m.loc["fm"].loc[x] <= 1.2 * np_mse]
        tuned = ""
        if "op_tuned_r1" in m.index.get_level_values(0):
            t03, x03 = _at(m.loc["op_tuned_r1"], 0.3)
            tuned = f"; tuned OP (R₁) at ε = {x03:g}: {t03:.2f}"
        add("B2", (f"FM/Data-Indep. MSE ratio up to {V.pm(ratios[rmax], '.3g')}× (at ε = {rmax:g}); " if rmax is not None
             else "") + f"non-private {np_mse:.2f}, Data-Indep. at ε = {x01:g}: {di01:.2f}{tuned}; FM within 20% of "
            f"non-private from ε = {min(fm_close) if fm_close else float('nan'):g}; OP variants below FM beyond 2 s.e. "
            f"at {sum(v.holds for v in below)}/{len(below)} (variant, ε < 5); {V.parts_text(parts)}",
            ratios[rmax].mean if rmax is not None else math.nan, V.all_parts(parts))
        fm5, x5 = _at(m.loc["fm"], 5.0)
        r5 = V.ratio(_reps(df, "mse", "fm", x5), _reps(df, "mse", "non_private", x5))
        add("B7", f"FM MSE at ε = {x5:g}: {fm5:.2f} vs non-private {np_mse:.2f} ({V.pm(r5, '.3g')}×)", r5.mean,
            V.exceeds(r5, 1.2))
    if have("fig4_3", ("op_data_independent", "op_oracle")):
        df = frames["fig4_3"]
        m = _means(df, "mse")
        xs = sorted(set(m.loc["op_data_independent"].index) & set(m.loc["op_oracle"].index))
        per, gmax = _close_to(df, "mse", "op_data_independent", "op_oracle", xs, 0.1)
        _, gs = _close_to(df, "mse_scaled", "op_data_independent", "op_oracle", xs, 0.1)
        add("B3", f"max |gap| {gmax:.3f} in target units ({gs:.4f} on the [−1, 1] target); within 0.1 per ε: "
            f"{_statuses(per)}", gmax, V.all_of(per.values(), "no ε with both methods"))
    if have("fig4_5", ("op_data_independent", "op_oracle")):
        df = frames["fig4_5"]
        m = _means(df, "mse")
        objs = [k for k in ("objp_tuned_r1", "objp_tuned_r2") if k in m.index.get_level_values(0)]
        if objs:
            res = {o: _close_to(df, "mse", o, "op_data_independent",
                                sorted(set(m.loc[o].index) & set(m.loc["op_data_independent"].index)), 0.1)
                   for o in objs}
            each = {o: V.all_of(per.values(), "no ε with both methods") for o, (per, _) in res.items()}
            best = min(res, key=lambda o: res[o][1])
            add("B4", "; ".join(f"{LABELS[o]} vs Data-Indep.: max |gap| {g:.3f}, within 0.1 per ε: {_statuses(per)}"
                          for o, (per, g) in res.items()), float(res[best][1]), V.any_of(each.values()))
    if have("fig4_6", ("op_oracle", "fm")):
        df = frames["fig4_6"]
        a, s = _means(df, "mi_accuracy"), _means(df, "mse")
        mo, x = _at(a.loc["op_oracle"], 0.2)
        mf, _ = _at(a.loc["fm"], 0.2)
        so, _ = _at(s.loc["op_oracle"], 0.2)
        sf, _ = _at(s.loc["fm"], 0.2)
        prior = float(df["prior_baseline"].mean())
        dmi, dmse = _diff(df, "mi_accuracy", "op_oracle", "fm", x), _diff(df, "mse", "fm", "op_oracle", x)
        parts = {"MI accuracy Oracle > FM": V.exceeds(dmi, 0.0), "MSE FM > Oracle": V.exceeds(dmse, 0.0)}
        add("B5", f"ε = {x:g}: MI {mo:.3f} (Oracle) vs {mf:.3f} (FM), difference {V.pm(dmi, '.3f')}, prior-only {prior:.3f}; "
            f"MSE {so:.2f} vs {sf:.2f} (ratio {sf / so:.1f}×, thesis 12.4×); {V.parts_text(parts)}", dmi.mean,
            V.all_parts(parts))
    if "fig4_8" in frames:
        df = frames["fig4_8"]
        for meth, g in df.groupby("method"):
            for e, ge in g.groupby("epsilon"):
                s = ge[ge["metric"] == "mse"].groupby("x")["value"].mean().sort_index()
                a = ge[ge["metric"] == "mi_accuracy"].groupby("x")["value"].mean().sort_index()
                if len(s) < 2:
                    continue
                lo, hi = float(s.index[0]), _at(s, 0.9)[1]
                rho_s = float(pd.Series(s.index).corr(pd.Series(s.to_numpy()), method="spearman"))
                rho_a = float(pd.Series(a.index).corr(pd.Series(a.to_numpy()), method="spearman"))
                dmse = V.paired(_reps(ge, "mse", meth, lo), _reps(ge, "mse", meth, hi))
                dmi = V.paired(_reps(ge, "mi_accuracy", meth, hi), _reps(ge, "mi_accuracy", meth, lo))
                parts = {f"MSE lower at r = {hi:g} than at r = {lo:g}": V.exceeds(dmse, 0.0),
                         f"MI accuracy higher at r = {hi:g} than at r = {lo:g}": V.exceeds(dmi, 0.0)}
                add("B6", f"{LABELS[meth]}, ε = {e:g}: MSE {s.loc[lo]:.2f} (r = {lo:g}) → {s.loc[hi]:.2f} (r = {hi:g}), "
                    f"fall {V.pm(dmse, '.3g')}; MI {a.loc[lo]:.3f} → {a.loc[hi]:.3f}, rise {V.pm(dmi, '.3f')}; Spearman "
                    f"ρ(r, MSE) = {rho_s:.2f}, ρ(r, MI) = {rho_a:.2f}; {V.parts_text(parts)}",
                    dmse.mean, V.all_parts(parts))
    return rows
