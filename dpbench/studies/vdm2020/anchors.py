"""vdm2020 — the paper's qualitative claims (§4.2–4.3, listed in docs/studies/vdm2020.md#claims) checked on the
results, and the paper's table of effects regenerated (§5)."""

from __future__ import annotations

import numpy as np

from dpbench.studies.vdm2020.anchors_1_4 import _anchor_checks_1_4
from dpbench.studies.vdm2020.anchors_5_10 import _anchor_checks_5_10
from dpbench.studies.vdm2020.checks import PRIVATE, _hump

def anchor_checks(frames: dict):
    """One row per checked claim (docs/studies/vdm2020.md#claims, claims 1–10): what the paper says, what was
    measured, whether it holds."""
    import pandas as pd

    # the claims are about MNIST: rows on a user dataset (docs/extending.md) are not evidence for or against them
    frames = {f: df[~df["dataset_variant"].astype(str).str.startswith("user:")] if "dataset_variant" in df else df
              for f, df in frames.items()}
    rows = _anchor_checks_1_4(frames)
    rows += _anchor_checks_5_10(frames)
    return pd.DataFrame(rows)



# ---------------------------------------------------------------------------------------------------
# the paper's table ("Table 4.3", §5): effect of N, C, D, B, T, λ, regenerated from the measurements

PAPER_TABLE = {  # property -> {hyper-parameter: arrow}; ↗ up, ↘ down, ↷ up then down, ⋯ unchanged
    "privacy loss ε": dict(N="↘", C="↗", D="↗", B="↗", T="↘", λ="↘"),
    "privacy failure probability δ": dict(N="↘", C="⋯", D="⋯", B="↗", T="⋯", λ="↘"),
    "accuracy": dict(N="↗", C="↘", D="↗", B="↘", T="↷", λ="↷"),
    "training time": dict(N="↗", C="↗", D="↗", B="⋯", T="↗", λ="⋯"),
    "inference time": dict(N="⋯", C="↗", D="↗", B="⋯", T="↗", λ="⋯"),
}
# hyper-parameter -> (figure, methods whose accuracy curve is classified, methods whose cell runtime is)
EFFECT_SOURCES = {
    "N": ("fig4", PRIVATE, ("loss_perturbation",)),
    "C": ("fig5b", PRIVATE, ("loss_perturbation",)),
    "D": ("fig5a", PRIVATE, ("loss_perturbation",)),
    "B": ("fig2a", ("prediction_sensitivity", "subsample_aggregate"), ()),
    "T": ("fig6b", ("subsample_aggregate",), ("subsample_aggregate",)),
    "λ": ("fig6a", ("loss_perturbation",), ("loss_perturbation",)),
}


def trend(curve, se=None, flat_tol: float = 0.01) -> str:
    """Arrow of a measured curve (indexed by x): ↷ if hump-shaped (interior max above both ends by 2 s.e.),
    ⋯ if its range is below ``flat_tol`` (relative to its mean for runtimes) or 2 s.e., else the sign of
    Spearman's ρ(x, y)."""
    from scipy import stats

    c = curve.dropna().sort_index()
    if len(c) < 2:
        return "?"
    s = (se if se is not None else c * 0).reindex(c.index).fillna(0.0)
    if c.max() - c.min() <= max(flat_tol, 2 * float(s.max())):
        return "⋯"
    if len(c) >= 3 and _hump(c, s)[0]:
        return "↷"
    rho = stats.spearmanr(c.index, c.to_numpy()).statistic
    return "↗" if rho > 0 else "↘"


def effects_table(frames: dict):
    """The paper's table ("Table 4.3", §5) with the arrows the measurements give next to the paper's. Accuracy: the
    mean test-accuracy curve of each listed method (majority arrow over methods); training time: the mean cell
    runtime of methods that train per cell (loss perturbation re-fits for every cell; subsample-and-aggregate
    trains its T models per repetition). Privacy rows are analytical (the noise calibrations), not measured."""
    import pandas as pd

    rows = []
    for hyper, (fig, acc_methods, time_methods) in EFFECT_SOURCES.items():
        df = frames.get(fig)
        for prop in PAPER_TABLE:
            paper = PAPER_TABLE[prop][hyper]
            measured, detail = "", ""
            if df is not None and prop == "accuracy":
                arrows = {}
                for meth in acc_methods:
                    g = df[df["series"] == meth]
                    if g.empty:
                        continue
                    if hyper == "λ":  # one curve per ε: classify each
                        for curve, gc in g.groupby("curve"):
                            a = gc.groupby("x")["value"]
                            arrows[f"{meth} {curve}"] = trend(a.mean(), a.std() / np.sqrt(a.count()))
                    else:
                        a = g.groupby("x")["value"]
                        arrows[meth] = trend(a.mean(), a.std() / np.sqrt(a.count()))
                if arrows:
                    counts = pd.Series(list(arrows.values())).value_counts()
                    measured = counts.index[0]
                    detail = ", ".join(f"{k}: {v}" for k, v in arrows.items())
            elif df is not None and prop == "training time":
                if hyper == "B":
                    measured, detail = "⋯", "by construction: one trained model serves every B"
                else:
                    parts = {}
                    for meth in time_methods:
                        g = df[df["series"] == meth]
                        if len(g):
                            t = g.groupby("x")["runtime_s"].mean()
                            parts[meth] = (trend(t / t.mean(), flat_tol=0.25), t)
                    if parts:
                        measured = next(iter(parts.values()))[0]
                        detail = "; ".join(f"{k}: {a} ({t.min():.2g}–{t.max():.2g} s per cell)"
                                           for k, (a, t) in parts.items())
            elif prop in ("privacy loss ε", "privacy failure probability δ", "inference time"):
                detail = "analytical (noise calibration), not measured" if prop != "inference time" \
                    else "not measured separately"
            if df is None and not detail:
                detail = f"{fig} not in this run"
            rows.append({"property": prop, "hyperparameter": hyper, "paper": paper, "measured": measured,
                         "agrees": (measured == paper) if measured else None, "source": fig, "detail": detail})
    return pd.DataFrame(rows)


def report_html(config: dict, frames: dict) -> str:
    """The regenerated table of the paper ("Table 4.3", §5) (HTML fragment appended to the anchor report)."""
    import html

    t = effects_table(frames)
    hypers = list(EFFECT_SOURCES)
    body = []
    for prop in PAPER_TABLE:
        cells = []
        for h in hypers:
            r = t[(t["property"] == prop) & (t["hyperparameter"] == h)].iloc[0]
            if r["measured"]:
                color = "green" if r["agrees"] else "darkred"
                txt = f"paper {r['paper']} · measured <b style='color:{color}'>{r['measured']}</b>"
            else:
                txt = f"paper {r['paper']} · <i>{html.escape(r['detail'])}</i>"
            cells.append(f"<td title='{html.escape(r['detail'])}'>{txt}</td>")
        body.append(f"<tr><th>{html.escape(prop)}</th>{''.join(cells)}</tr>")
    details = "".join(f"<li>{html.escape(r.property)} vs {r.hyperparameter} ({r.source}): "
                      f"{html.escape(r.detail)}</li>" for r in t.itertuples() if r.measured)
    head = "".join(f"<th>{h} ({EFFECT_SOURCES[h][0]})</th>" for h in hypers)
    return ("<h3>Table 4.3 of the paper (§5): effect of N, C, D, B, T, λ — the paper's arrows and the measured "
            "ones</h3>"
            "<p>↗ up with the hyper-parameter, ↘ down, ↷ up then down, ⋯ unchanged. Accuracy: majority arrow over "
            "the methods' mean curves (a hump needs an interior maximum above both ends by 2 s.e.); training "
            "time: mean runtime of cells that train. Privacy rows follow from the noise calibrations and are "
            "not measured.</p><table border='1' cellpadding='4' style='border-collapse:collapse;"
            f"font-family:sans-serif;font-size:13px'><tr><th></th>{head}</tr>{''.join(body)}</table>"
            f"<ul style='font-size:12px'>{details}</ul>")



