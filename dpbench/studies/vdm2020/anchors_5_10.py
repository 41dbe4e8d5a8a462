"""vdm2020 — anchor checks of claims 5–10 (docs/studies/vdm2020.md#claims)."""

from __future__ import annotations

import math

import numpy as np

from dpbench import verdicts as V
from dpbench.studies.vdm2020.checks import (CHANCE_MARGIN, PRIVATE, PRIVATE_MLP, _BEYOND, _chance, _crossing,
                                            _est, _first, _fmt, _hump, _hump_verdict, _means, _minus, _stats,
                                            _too_few)
from dpbench.studies.vdm2020.claims import CLAIMS
from dpbench.studies.vdm2020.data import STUDY


def _informative(m, chance):
    return m.max(axis=1) >= chance + CHANCE_MARGIN


def _concordance(pi, se) -> tuple[float, float]:
    """(lowest, highest) mean over the rows of ``pi`` (x × method means, standard errors ``se``) of the concordance
    (concordant − discordant pairs)/pairs between the row's ranking and the overall ranking (mean over the rows),
    counting a pair only where both orders are decided beyond V.Z standard errors; an undecided pair counts as
    discordant for the lowest and as concordant for the highest."""
    from itertools import combinations

    cols = list(pi.columns)
    k = len(pi)
    ov = pi.mean(axis=0)
    ov_se = np.sqrt((se.reindex_like(pi).fillna(0.0) ** 2).sum(axis=0)) / k
    pairs = list(combinations(cols, 2))
    o = {(a, b): V.compare(ov[a] - ov[b], math.hypot(ov_se[a], ov_se[b])) for a, b in pairs}
    lo, hi = [], []
    for x in pi.index:
        conc = disc = und = 0
        for a, b in pairs:
            sx = V.compare(pi.loc[x, a] - pi.loc[x, b], math.hypot(se.loc[x, a], se.loc[x, b]))
            if sx == 0 or o[(a, b)] == 0:
                und += 1
            elif sx == o[(a, b)]:
                conc += 1
            else:
                disc += 1
        lo.append((conc - disc - und) / len(pairs))
        hi.append((conc - disc + und) / len(pairs))
    return float(np.mean(lo)), float(np.mean(hi))


def _optimal_set(agg) -> set:
    """The grid values whose mean is within V.Z standard errors of the curve's maximum (the maximum included)."""
    m, s = agg.mean(), (agg.std() / np.sqrt(agg.count())).fillna(0.0)
    arg = m.idxmax()
    return {x for x in m.index if x == arg or V.compare(m[arg] - m[x], math.hypot(s[arg], s[x])) == 0}


def _anchor_checks_5_10(frames: dict) -> list[dict]:
    import pandas as pd
    from scipy import stats

    rows = []

    add = V.claim_adder(rows, STUDY, CLAIMS)  # three-valued verdicts (dpbench.verdicts)

    if "fig3" in frames:
        df = frames["fig3"]
        st = _stats(df)
        m = st[0]
        chance = _chance(df)
        low = m[m.index <= 1e-2]  # the usual δ range; 1e-1 only shows where PS recovers (see #grids in the docs)
        tf = _too_few(df[df["x"] <= 1e-2])
        if len(low) >= 2 and "subsample_aggregate" in m:
            x0, x1 = low.index[0], low.index[-1]
            gains = (low.iloc[-1] - low.iloc[0]).drop("prediction_sensitivity", errors="ignore")
            gse = pd.Series({c: math.hypot(_est(st, x1, c).se, _est(st, x0, c).se) for c in gains.index})
            add("claim5a", f"accuracy gain from δ={x0:g} to δ={x1:g} (prediction sensitivity "
                f"excluded: claim 5b): " + ", ".join(f"{c}: {g:.3f} ± {gse[c]:.2g}" for c, g in gains.items()),
                gains.get("subsample_aggregate", np.nan),
                _first(tf, V.is_best("subsample_aggregate", gains, gse)), x1=x1, beyond=_BEYOND)
        if "prediction_sensitivity" in m:
            n_train = float(df["n_train"].max())
            usual = m[m.index <= 1.0 / n_train]
            if len(usual):
                ps = usual["prediction_sensitivity"]
                best = usual.drop(columns="prediction_sensitivity").max(axis=1)
                near_chance, half = [], []
                for x in usual.index:
                    p = _est(st, x, "prediction_sensitivity")
                    bo = _est(st, x, usual.loc[x].drop("prediction_sensitivity").idxmax())
                    near_chance.append(V.exceeds(chance + CHANCE_MARGIN, p))
                    half.append(V.exceeds(V.Est(bo.mean / 2, bo.se / 2, bo.n), p))
                ok_delta = m.index[(m["prediction_sensitivity"] > chance + CHANCE_MARGIN)]
                tf_u = _too_few(df[df["x"] <= 1.0 / n_train])
                add("claim5b", f"at every δ ≤ 1/N = {1 / n_train:.1e}: PS ≤ {ps.max():.3f} vs best other "
                    f"≥ {best.min():.3f}; PS first beats chance + {CHANCE_MARGIN:g} at δ = "
                    + (f"{ok_delta.min():g}" if len(ok_delta) else "never")
                    + f"; near chance: {V.all_of(near_chance).status}, below half the best: {V.all_of(half).status}",
                    ps.max(), _first(tf_u, V.any_of([V.all_of(near_chance), V.all_of(half)])),
                    chance_margin=CHANCE_MARGIN, beyond=_BEYOND)
        if len(low) >= 2:
            parts, losses, per = [], [], []
            for meth in ("loss_perturbation", "dpsgd", "model_sensitivity"):
                if meth in low:
                    loss = _minus(_est(st, low.index[-1], meth), _est(st, low.index[0], meth))
                    losses.append(loss.mean)
                    v = V.exceeds(0.1, loss)  # loses less than 0.1, beyond 2 standard errors
                    per.append(v)
                    parts.append(f"{meth}: {low[meth].iloc[0]:.3f} at δ={low.index[0]:g} "
                                 f"({-loss.mean:+.3f} ± {loss.se:.2g}; {v.status})")
            add("claim5c", "; ".join(parts), max(losses) if losses else float("nan"),
                _first(tf, V.all_of(per)) if parts else V.undecided(V.EMPTY + " (no such series)"),
                v0=low.index[-1], beyond=_BEYOND)
    if "fig4" in frames:
        m, se = _means(frames["fig4"])
        tf = _too_few(frames["fig4"])
        inf = _informative(m, _chance(frames["fig4"]))
        mi = m[inf]
        if len(mi) < 2:  # keep the claim visible in the report
            for claim in ("claim6a", "claim6b"):
                add(claim, f"only {len(mi)} of {len(m)} N values have a method at "
                         f"least {CHANCE_MARGIN:g} above chance (grid too small or ε too low)", np.nan,
                         V.undecided(f"{V.TOO_FEW} ({len(mi)} of {len(m)} N above chance)"))
        if len(mi) >= 2:
            lo, hi = mi.index.min(), mi.index.max()
            add("claim6a",
                f"best at the smallest informative N={lo:g}: {mi.loc[lo].idxmax()} ({mi.loc[lo].max():.3f})",
                mi.loc[lo].get("subsample_aggregate", np.nan),
                _first(tf, V.is_best("subsample_aggregate", mi.loc[lo], se.loc[lo])))
            add("claim6b", f"best at N={hi:g}: {mi.loc[hi].idxmax()} ({mi.loc[hi].max():.3f}); ranking "
                + " > ".join(mi.loc[hi].sort_values(ascending=False).index), mi.loc[hi].max(),
                _first(tf, V.any_of([V.is_best(k, mi.loc[hi], se.loc[hi])
                for k in ("loss_perturbation", "model_sensitivity") if k in mi],
                "no such series")))
    if "fig5a" in frames:
        df = frames["fig5a"]
        st = _stats(df)
        m = st[0]
        if len(m) >= 2 and {"loss_perturbation", "model_sensitivity"} <= set(m):
            others = m.drop(columns=["loss_perturbation", "model_sensitivity"])
            d0, d1 = m.index.min(), m.index.max()
            parts, changes, per = [], [], []
            for meth in ("loss_perturbation", "model_sensitivity"):
                # advantage over the best other method at D: meth − that method (its standard error)
                adv = {x: _minus(_est(st, x, meth), _est(st, x, others.loc[x].idxmax())) for x in (d0, d1)}
                ch = _minus(adv[d0], adv[d1])
                v = V.exceeds(ch, 0.0)
                per.append(v)
                changes.append(ch.mean)
                parts.append(f"{meth} − best other: {adv[d0].mean:+.3f} at D={d0:g}, {adv[d1].mean:+.3f} at D={d1:g} "
                             f"(change {V.pm(ch, '+.3f')}; {v.status})")
            add("claim7", "; ".join(parts), min(changes), _first(_too_few(df), V.all_of(per)), beyond=_BEYOND)
    if "fig5b" in frames:
        df = frames["fig5b"]
        st = _stats(df, PRIVATE + ("non_private",))
        m = st[0]
        tf = _too_few(df, PRIVATE + ("non_private",))
        rhos = {c: stats.spearmanr(m.index, m[c]).statistic for c in m if m[c].notna().sum() >= 3}
        per, drops = {}, {}
        for c in rhos:
            xs = m[c].dropna().index
            d = _minus(_est(st, xs[0], c), _est(st, xs[-1], c))
            drops[c] = d
            # a constant curve has no Spearman ρ (NaN): that method is undecided, never "falling"
            per[c] = V.undecided(V.NAN) if not np.isfinite(rhos[c]) else V.all_of([V.exceeds(d, 0.0), rhos[c] < 0])
        add("claim8a", ("Spearman ρ(C, accuracy): " + ", ".join(f"{c}: {r:+.2f}" for c, r in rhos.items())
            + "; accuracy(C min) − accuracy(C max): " + ", ".join(f"{c}: {V.pm(d, '+.3f')}" for c, d in drops.items()))
            if rhos else "fewer than 3 values of C per method",
            sum(v.holds for v in per.values()) / max(1, len(per)),
            _first(tf, V.all_of(per.values())) if rhos else V.undecided(f"{V.TOO_FEW} (fewer than 3 values of C)"),
            beyond=_BEYOND)
        priv = m.drop(columns="non_private", errors="ignore")
        chance_c = 1.0 / priv.index.to_numpy(float)
        informative = priv.max(axis=1).to_numpy() >= chance_c + CHANCE_MARGIN
        pi = priv[informative]
        if len(pi) >= 2 and pi.shape[1] >= 3:
            overall = pi.mean(axis=0)
            taus = [stats.kendalltau(pi.loc[c], overall).statistic for c in pi.index]
            tau = float(np.nanmean(taus))
            lo, hi = _concordance(pi, st[1][pi.columns].loc[pi.index])
            v = V.holds() if lo >= 0.5 else V.fails() if hi < 0.5 else V.undecided(V.WIDE)
            add("claim8b",
                f"mean Kendall τ between each C's ranking and the overall ranking of the means: {tau:.2f} over "
                f"{len(pi)} informative C; concordance of the decided orders between {lo:.2f} and {hi:.2f}",
                tau, _first(tf, v), v0=V.Z)
    if "fig6a" in frames:
        df = frames["fig6a"]
        lp = df[df["series"] == "loss_perturbation"]
        tf = _too_few(lp, ("loss_perturbation",)) if len(lp) else None
        humps, args, parts, optimal = [], {}, [], {}
        for curve, g in lp.groupby("curve"):
            agg = g.groupby("x")["value"]
            h, arg, desc = _hump(agg.mean(), agg.std() / np.sqrt(agg.count()))
            humps.append(_hump_verdict(agg.mean(), agg.std() / np.sqrt(agg.count())))
            args[curve] = arg
            optimal[curve] = _optimal_set(agg)
            parts.append(f"{curve}: {desc}{' (hump)' if h else ''}")
        frac = float(np.mean([v.holds for v in humps])) if humps else float("nan")
        add("claim9a", "; ".join(parts) or "no loss-perturbation curve", frac, _first(tf, V.fraction(humps, 0.5)))
        if len(args) >= 2:
            sets = list(optimal.values())
            disjoint = any(not (a & b) for i, a in enumerate(sets) for b in sets[i + 1:])
            same = all(len(a) == 1 for a in sets) and len(set.union(*sets)) == 1
            v9b = V.holds() if disjoint else V.fails() if same else V.undecided(V.WIDE)
            add("claim9b",
                "best λ per curve: " + ", ".join(f"{c}: {a:g}" for c, a in sorted(args.items(), key=lambda t: t[0]))
                + "; λ within 2 s.e. of the best: " + ", ".join(
                f"{c}: {{{', '.join(f'{x:g}' for x in sorted(o))}}}" for c, o in sorted(optimal.items())),
                float(len(set(args.values()))), _first(tf, v9b), v0=V.Z)
    if "fig6b" in frames:
        g = frames["fig6b"]
        sub = g[g["series"] == "subsample_aggregate"]
        agg = sub.groupby("x")["value"]
        h, arg, desc = _hump(agg.mean(), agg.std() / np.sqrt(agg.count()))
        add("claim9c", desc, arg, _first(_too_few(sub, ("subsample_aggregate",)) if len(sub) else None,
                                          _hump_verdict(agg.mean(), agg.std() / np.sqrt(agg.count()))))
    if "fig7b" in frames:
        df = frames["fig7b"]
        st = _stats(df, PRIVATE_MLP)
        m = st[0]
        if set(PRIVATE_MLP) <= set(m):
            b = _crossing(m["dpsgd_mlp"] - m["subsample_aggregate_mlp"])
            after = [x for x in m.index if x >= 20]
            per = {x: V.exceeds(_est(st, x, "dpsgd_mlp"), _est(st, x, "subsample_aggregate_mlp")) for x in after}
            if not after:  # decisive only when the grid goes beyond the threshold B = 20
                v10a = V.undecided(f"{V.TOO_FEW}: the grid stops at B = {m.index.max():g} < 20")
            else:
                v10a = _first(_too_few(df, PRIVATE_MLP), V.all_of(per.values()))
            add("claim10a",
                (f"DP-SGD ≥ subsagg (means) from B ≈ {b:.1f}" if np.isfinite(b) else "DP-SGD never reaches subsagg")
                + f" (DP-SGD − subsagg: {_fmt((m['dpsgd_mlp'] - m['subsample_aggregate_mlp']).round(3))}); "
                "DP-SGD better beyond 2 s.e. at B ≥ 20: " + (", ".join(f"{x:g}: {v.status}" for x, v in per.items())
                or "no such B"), b, v10a, beyond=_BEYOND)
    if "fig7a" in frames:
        df = frames["fig7a"]
        m, se = _means(df, PRIVATE_MLP)
        tf = _too_few(df, PRIVATE_MLP)
        if set(PRIVATE_MLP) <= set(m):
            # per ε: +1 subsagg better beyond 2 s.e., −1 DP-SGD better, 0 within the interval
            cmp = pd.Series([V.compare(m.loc[x, "subsample_aggregate_mlp"] - m.loc[x, "dpsgd_mlp"],
                                       np.hypot(se.loc[x, "subsample_aggregate_mlp"], se.loc[x, "dpsgd_mlp"]))
                             for x in m.index], index=m.index).sort_index()
            sa_wins = cmp > 0
            if not sa_wins.any():  # "only when ε is large" on a grid where it never wins: nothing to check
                v10b = V.undecided(f"{V.EMPTY}: subsagg better (beyond 2 s.e.) at no ε of the grid")
            else:
                after = cmp[cmp.index >= sa_wins.idxmax()]
                before = cmp[cmp.index < sa_wins.idxmax()]
                v10b = (V.fails() if (after < 0).any() else
                        V.undecided(V.WIDE) if (after == 0).any() or not (before < 0).any() else V.holds())
            add("claim10b",
                "subsagg better (beyond 2 s.e.) at ε ∈ {" + ", ".join(f"{x:g}" for x in sa_wins.index[sa_wins])
                + "}; DP-SGD better at ε ∈ {" + ", ".join(f"{x:g}" for x in cmp.index[cmp < 0]) + "}",
                float(sa_wins.mean()), _first(tf, v10b))
        npr = df[df["series"] == "non_private_mlp"]
        # the non-private model does not depend on ε: one estimate over the repetitions (per repetition, the mean
        # over the ε at which it is written)
        ref = V.estimate((npr.groupby("rep")["value"].mean() if "rep" in npr else npr["value"]).to_numpy())
        at5 = m.loc[m.index == 5.0]
        if len(at5) and np.isfinite(ref.mean):
            best = float(at5.max(axis=1).iloc[0])
            gap = ref.mean - best
            st = _stats(df, PRIVATE_MLP)
            below = {s: V.exceeds(V.Est(0.7 * ref.mean, 0.7 * ref.se, ref.n), _est(st, 5.0, s))
                     for s in PRIVATE_MLP if s in m and np.isfinite(m.loc[5.0, s])}
            add("claim10c",
                f"non-private {V.pm(ref, '.3f')}, best private at ε=5 {best:.3f}: {gap:.3f} absolute, {gap / ref.mean:.0%} "
                "relative; below 70 % of non-private: " + ", ".join(f"{s}: {v.status}" for s, v in below.items()),
                gap / ref.mean, V.all_of(below.values(), "no private method at ε = 5"), beyond=_BEYOND)
    return rows


