"""vdm2020 — anchor checks of claims 1–4 (docs/studies/vdm2020.md#claims)."""

from __future__ import annotations

import numpy as np

from dpbench import verdicts as V
from dpbench.studies.vdm2020.checks import (CHANCE_MARGIN, N_CLASSES, PAPER_CROSSOVER_B, _BEYOND, _est,
                                            _first, _means, _minus, _stats, _too_few, crossover_budget)
from dpbench.studies.vdm2020.claims import CLAIMS
from dpbench.studies.vdm2020.data import STUDY


def _anchor_checks_1_4(frames: dict) -> list[dict]:
    rows = []

    add = V.claim_adder(rows, STUDY, CLAIMS)  # three-valued verdicts (dpbench.verdicts)

    if "fig1a" in frames:
        df = frames["fig1a"]
        m, se = _means(df)
        tf = _too_few(df)
        # where every method is within CHANCE_MARGIN of chance, "best" and "worst" are noise: such ε are left out
        informative = m.max(axis=1) >= 1 / N_CLASSES + CHANCE_MARGIN
        mi = m[informative]
        best = mi.idxmax(axis=1)
        left_out = f"; {int((~informative).sum())} ε at chance level left out" if (~informative).any() else ""
        # best/worst at an ε count only beyond 2 standard errors of the runner-up (else that ε is undecided)
        sa = [V.is_best("subsample_aggregate", mi.loc[x], se.loc[x]) for x in mi.index]
        frac = float(np.mean([v.holds for v in sa])) if sa else float("nan")
        add("claim1a",
            f"subsagg best (beyond 2 s.e.) at {frac:.0%} of ε values ({', '.join(f'{x:g}:{b}' for x, b in best.items())})"
            + left_out, frac, _first(tf, V.fraction(sa, 0.5, min_points=2)))
        if len(best):
            lo = best.index.min()
            add("claim1b",
                f"best at the smallest informative ε={lo:g}: {best[lo]} ({m.loc[lo].max():.3f})" + left_out,
                float(m.loc[lo].get("loss_perturbation", np.nan)),
                _first(tf, V.is_best("loss_perturbation", mi.loc[lo], se.loc[lo])))
        else:
            add("claim1b", "no ε of the grid has a method above chance" + left_out, np.nan, V.undecided(V.TOO_FEW))
        ps = [V.is_best("prediction_sensitivity", -mi.loc[x], se.loc[x]) for x in mi.index]
        fw = float(np.mean([v.holds for v in ps])) if ps else float("nan")
        add("claim1c", f"prediction sensitivity worst (beyond 2 s.e.) at {fw:.0%} of ε values" + left_out, fw,
            _first(tf, V.fraction(ps, 0.5, min_points=2)))
    if "fig1b" in frames:
        m, se = _means(frames["fig1b"])
        best = m.idxmax(axis=1)
        dp = [V.is_best("dpsgd", m.loc[x], se.loc[x]) for x in m.index]
        frac = float(np.mean([v.holds for v in dp])) if dp else float("nan")
        add("claim2",
            f"DP-SGD best (beyond 2 s.e.) at {frac:.0%} of ε values ({', '.join(f'{x:g}:{b}' for x, b in best.items())})",
            frac, _first(_too_few(frames["fig1b"]), V.fraction(dp, 0.5, min_points=2)))
    if "fig2a" in frames:
        df = frames["fig2a"]
        st = _stats(df)
        m = st[0]
        tf = _too_few(df)
        s = m.get("subsample_aggregate")
        if s is not None:
            s = s.dropna().sort_index()
            first, last = _est(st, s.index[0], "subsample_aggregate"), _est(st, s.index[-1], "subsample_aggregate")
            dec = float(s.iloc[-1] - s.iloc[0])
            add("claim3a",
                f"accuracy change from B={s.index.min():g} to B={s.index.max():g}: {dec:+.3f} (decided beyond 2 s.e.)",
                dec, _first(tf, V.exceeds(first, last)) if len(s) >= 2 else V.undecided(V.TOO_FEW))
        b = crossover_budget(df)
        lo_b, hi_b = PAPER_CROSSOVER_B / 2, PAPER_CROSSOVER_B * 2
        if {"subsample_aggregate", "loss_perturbation"} <= set(m):
            # subsagg − loss perturbation per B: +, − or undecided beyond 2 standard errors
            d = {x: _minus(_est(st, x, "subsample_aggregate"), _est(st, x, "loss_perturbation")) for x in m.index}
            below, above = [x for x in d if x <= lo_b], [x for x in d if x >= hi_b]
            parts = {f"subsagg better at every B ≤ {lo_b:g}": V.all_of([V.exceeds(d[x], 0.0) for x in below]),
                     f"loss perturbation better at every B ≥ {hi_b:g}": V.all_of([V.exceeds(0.0, d[x]) for x in above])}
            if not below or not above:  # the grid does not reach both sides of the claimed crossover
                v3b = V.undecided(f"{V.TOO_FEW}: the grid does not cover both B ≤ {lo_b:g} and B ≥ {hi_b:g}")
            else:
                v3b = _first(tf, V.all_parts(parts))
            detail = f"; {V.parts_text(parts)}" if below and above else ""
        else:
            v3b, detail = V.undecided(f"{V.EMPTY} (subsample-and-aggregate or loss perturbation missing)"), ""
        add("claim3b",
            (f"measured crossover of the means B ≈ {b:.1f}" if np.isfinite(b) else "no crossover of the means")
            + detail, b, v3b, paper_crossover_b=PAPER_CROSSOVER_B, lo_b=lo_b, hi_b=hi_b, beyond=_BEYOND)
    if "fig2b" in frames:
        df = frames["fig2b"]
        st = _stats(df)
        m = st[0]
        parts, oks, per_all = [], [], []
        for meth in ("loss_perturbation", "dpsgd"):
            if meth in m and "subsample_aggregate" in m:
                per = [V.exceeds(_est(st, x, meth), _est(st, x, "subsample_aggregate")) for x in m.index]
                oks.append(V.all_of(per))
                per_all += per
                parts.append(f"{meth} > subsagg (beyond 2 s.e.) at {np.mean([v.holds for v in per]):.0%} of B, "
                             f"worse beyond them at {sum(v.status == V.FAILS for v in per)}")
        add("claim4", "; ".join(parts) or "series missing",
            float(np.mean([v.holds for v in per_all])) if per_all else float("nan"),
            _first(_too_few(df), V.all_of(oks, "series missing")), beyond=_BEYOND)
    return rows


