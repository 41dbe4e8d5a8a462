"""Figures from Parquet only: mean ± std over repetitions per series, the paper's axes and labels,
a visible "substitute data" label when a substitute was used, caption notes beside the PNG."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dpbench.methods import REGISTRY
from dpbench.store import atomic_write_bytes


def _pyplot():
    """matplotlib.pyplot with the file-only Agg backend, imported on first use (not when a study imports the
    drawing helpers below, which every Snakemake job does while parsing the Snakefile)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


CURVE_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink")


def _curve_order(curve: str):
    """Curves named like "ε = 0.1" sort by their number."""
    try:
        return (0, float(curve.split("=")[-1]))
    except ValueError:
        return (1, curve)


def caption_text(spec, deviations: list[str], df: pd.DataFrame) -> str:
    variants = sorted(df["dataset_variant"].unique())
    per_point = df.groupby(["series", "x", "curve"] if "curve" in df else ["series", "x"])["rep"].nunique()
    lo, hi = (int(per_point.min()), int(per_point.max())) if len(per_point) else (0, 0)
    reps = f"{hi}" if lo == hi else f"{lo}–{hi}"
    lines = [spec.caption, f"Data: {', '.join(variants)}; mean ± std over {reps} repetitions."]
    if spec.substitute_note:
        lines.append(spec.substitute_note)
    if df["is_substitute"].any():
        lines.append("SUBSTITUTE DATA: real MNIST was not available; an InfiMNIST-style generator of deformed "
                     "scikit-learn digits (28×28) was used. Absolute accuracies are not the paper's.")
    if user_variants(df):
        lines.append(f"USER DATA: {', '.join(user_variants(df))} (a dataset added in the configuration, not the "
                     "source's). Absolute accuracies are not the paper's.")
    lines += [f"Note: {d}" for d in deviations]
    return "\n".join(lines)


def actual_epsilon_note(rows: pd.DataFrame, tol: float = 1e-6) -> str:
    """A legend suffix when a series is less private than its axis says: the rows' ``epsilon_achieved``
    (the true ε of the release, under the study's neighbouring relation) exceeds ``epsilon``. Empty
    otherwise — the correct calibrations never get one."""
    if not {"epsilon", "epsilon_achieved"} <= set(rows.columns) or rows.empty:
        return ""
    eps = rows["epsilon"].to_numpy(float)
    ach = rows["epsilon_achieved"].to_numpy(float)
    ok = np.isfinite(eps) & np.isfinite(ach) & (eps > 0)
    if not ok.any():
        return ""
    ratio = ach[ok] / eps[ok]
    lo, hi = float(ratio.min()), float(ratio.max())
    if hi <= 1 + tol:
        return ""
    span = f"{hi:.2g}" if hi - lo < 0.01 else f"{lo:.2g}–{hi:.2g}"
    return f" [actual ε = {span} × axis]"


def user_variants(df: pd.DataFrame) -> list[str]:
    """The user datasets (variant ``user:<name>:<hash>``, :mod:`dpbench.data.user`) the rows were computed on."""
    return sorted(v for v in df["dataset_variant"].astype(str).unique() if v.startswith("user:"))


def plot_figure(spec, df: pd.DataFrame, out: str | Path, deviations: list[str]) -> str:
    """Draw ``spec`` from the rows in ``df``; write ``out`` (PNG) and ``out`` with .txt (caption)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.6), dpi=120)
    df = df.assign(curve=df["curve"].fillna("")) if "curve" in df else df.assign(curve="")
    agg = df.groupby(["series", "curve", "x"])["value"].agg(["mean", "std"]).reset_index()
    curves = sorted(set(agg["curve"]), key=_curve_order)
    present = list(dict.fromkeys(df["series"]))  # the source's series in its order, then the added ones
    for series in [m for m in spec.methods if m in present] + [m for m in present if m not in spec.methods]:
        for i, curve in enumerate(curves):
            s = agg[(agg["series"] == series) & (agg["curve"] == curve)].sort_values("x")
            if s.empty:
                continue
            style = REGISTRY.style(series)
            label = REGISTRY.get(series).label + actual_epsilon_note(df[df["series"] == series])
            if curve:  # several curves of one series (e.g. one per ε): colour by curve
                style["color"] = CURVE_COLORS[i % len(CURVE_COLORS)]
                label = f"{label}, {curve}"
            ax.plot(s["x"], s["mean"], label=label, markersize=4, **style)
            ax.fill_between(s["x"], s["mean"] - s["std"].fillna(0), s["mean"] + s["std"].fillna(0),
                            color=style.get("color"), alpha=0.15, linewidth=0)
    ax.set_xscale(spec.xscale)
    ax.set_xlabel(spec.x_label)
    ax.set_ylabel(spec.y_label)
    ax.set_ylim(0, 1.0)
    users = [v.split(":")[1] for v in user_variants(df)]  # the title names the source's data: say what was used
    ax.set_title(f"{spec.study} {spec.name}: {data_title(spec.title, users)}", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="best", framealpha=0.85)
    if df["is_substitute"].any() or spec.substitute_note or user_variants(df):
        what = ["SUBSTITUTE DATA (deformed sklearn digits, not MNIST)"] if df["is_substitute"].any() else []
        what += [f"USER DATA: {v}" for v in user_variants(df)]
        if spec.substitute_note:
            what.insert(0, "SUBSTITUTE EXPERIMENT (MLP on digits, not ResNet-20 on CIFAR-10)")
        ax.text(0.02, 0.98, "\n".join(what), transform=ax.transAxes,
                fontsize=7, va="top", color="darkred", gid=LABEL_GID, zorder=10,
                bbox=dict(boxstyle="round", facecolor="mistyrose", edgecolor="darkred"))
    fig.tight_layout()
    return save_figure(fig, out, caption_text(spec, deviations, df))


#: a line stamped on every figure :func:`save_figure` writes while set (:func:`figure_mark`), e.g. the reduced-grid
#: mark of a run whose grid is not the study's full one
_MARK: list[str] = []


class figure_mark:
    """Context manager: every figure saved inside carries ``text`` in its lower right corner (nothing if empty)."""

    def __init__(self, text: str):
        self.text = text

    def __enter__(self):
        _MARK.append(self.text)
        return self

    def __exit__(self, *exc):
        _MARK.pop()


def data_title(title: str, users: list[str]) -> str:
    """A figure title that names the data actually used: the source's dataset (the part before the first ": ",
    e.g. "MNIST") is replaced by the user datasets, and the source's named after it ("… (paper: MNIST)")."""
    if not users:
        return title
    head, sep, rest = title.partition(": ")
    names = ", ".join(users)
    return f"{names}: {rest} (paper: {head})" if sep else f"{title} — on {names}"


def save_figure(fig, out: str | Path, caption: str) -> str:
    """Write ``fig`` as PNG to ``out`` and ``caption`` beside it (``.txt``), both atomically; close ``fig``.
    Inside :class:`figure_mark` the figure carries the mark (and the caption starts with it)."""
    import io

    out = Path(out)
    if _MARK and _MARK[-1]:
        fig.text(0.995, 0.003, _MARK[-1], ha="right", va="bottom", fontsize=7, color="darkorange", weight="bold",
                 gid=LABEL_GID)
        caption = f"[{_MARK[-1]}] {caption}"
    declutter(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", **({"bbox_inches": "tight"} if getattr(fig, "_dpbench_tight", False) else {}))
    _pyplot().close(fig)
    atomic_write_bytes(out, buf.getvalue())
    atomic_write_bytes(out.with_suffix(".txt"), caption.encode())
    return caption


# -- small drawing helpers shared by the study plotters -------------------------------------------------


def substitute_box(ax, variants, fontsize: float = 6.5) -> None:
    """The red "SUBSTITUTE DATA" label in the lower left of a panel (``variants``: one name or several)."""
    names = [variants] if isinstance(variants, str) else list(variants)
    if names:
        ax.text(0.02, 0.02, "SUBSTITUTE DATA: " + ", ".join(names), transform=ax.transAxes, fontsize=fontsize,
                color="darkred", va="bottom", zorder=10, gid=LABEL_GID,
                bbox=dict(boxstyle="round", facecolor="mistyrose", edgecolor="darkred"))


def log_axis_at(ax, xs) -> None:
    """Log x axis labelled at the grid values only (no overlapping minor labels)."""
    from matplotlib.ticker import NullFormatter

    ax.set_xscale("log")
    xs = sorted(set(float(x) for x in xs))
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{x:g}" for x in xs], fontsize=7)
    ax.xaxis.set_minor_formatter(NullFormatter())


def mean_std_band(ax, g: pd.DataFrame, label: str, xcol: str = "x", alpha: float = 0.15, **style) -> None:
    """Mean of ``g["value"]`` per ``xcol`` as a line, ± one standard deviation as a band."""
    s = g.groupby(xcol)["value"].agg(["mean", "std"]).sort_index()
    x, m, sd = s.index.to_numpy(), s["mean"].to_numpy(), s["std"].fillna(0).to_numpy()
    ax.plot(x, m, label=label, **style)
    ax.fill_between(x, m - sd, m + sd, color=style.get("color"), alpha=alpha, linewidth=0)


# -- text over data: labels and legends are moved where they cover no data ---------------------------------------

#: gid of the labels (e.g. "SUBSTITUTE DATA") that :func:`declutter` may move to a free corner of their axes
LABEL_GID = "dpbench-label"
_CORNERS = ((0.02, 0.98, "left", "top"), (0.98, 0.98, "right", "top"), (0.02, 0.02, "left", "bottom"),
            (0.98, 0.02, "right", "bottom"), (0.5, 0.98, "center", "top"), (0.5, 0.02, "center", "bottom"),
            (0.02, 0.5, "left", "center"), (0.98, 0.5, "right", "center")) + tuple(
    (x, y, ha, "center") for y in (0.8, 0.65, 0.35, 0.2) for x, ha in ((0.02, "left"), (0.98, "right"), (0.5, "center"))
) + tuple((x, y, "center", va) for x in (0.3, 0.7) for y, va in ((0.98, "top"), (0.02, "bottom")))
_LEGEND_LOCS = ("upper right", "upper left", "lower left", "lower right", "center right", "center left",
                "upper center", "lower center", "center")


def data_points(ax, per_segment: int = 40) -> np.ndarray:
    """Display coordinates (pixels) of the data drawn in ``ax`` — every line (densified between vertices),
    marker and error bar — inside the axes; shape (n, 2)."""
    pts = []

    def add(xy, transform, dense):
        xy = np.asarray(xy, dtype=float)
        if xy.ndim != 2 or len(xy) == 0:
            return
        with np.errstate(all="ignore"):
            d = transform.transform(xy)
        d = d[np.isfinite(d).all(axis=1)]
        if dense and len(d) > 1:
            t = np.linspace(0, 1, per_segment)[None, :, None]
            d = (d[:-1, None, :] * (1 - t) + d[1:, None, :] * t).reshape(-1, 2)
        pts.append(d)

    from matplotlib.collections import LineCollection

    for line in ax.get_lines():
        if not line.get_visible():
            continue
        add(line.get_xydata(), line.get_transform(), line.get_linestyle() not in ("None", "", " "))
    for c in ax.collections:
        if isinstance(c, LineCollection) and c.get_visible():  # error bars
            for seg in c.get_segments():
                add(seg, c.get_transform(), True)
    if not pts:
        return np.zeros((0, 2))
    p = np.vstack(pts)
    bb = ax.get_window_extent()
    inside = (p[:, 0] >= bb.x0) & (p[:, 0] <= bb.x1) & (p[:, 1] >= bb.y0) & (p[:, 1] <= bb.y1)
    return p[inside]


def _bands(ax) -> list:
    """Display-coordinate paths of the filled bands (± std) of ``ax``."""
    from matplotlib.collections import PolyCollection

    out = []
    for c in ax.collections:
        if isinstance(c, PolyCollection) and c.get_visible():
            t = c.get_transform()
            out += [t.transform_path(p) for p in c.get_paths()]
    return out


def _band_cover(bbox, bands, n: int = 6) -> float:
    """Fraction of an n×n grid of points in ``bbox`` that lies inside some band."""
    if bbox is None or not bands:
        return 0.0
    gx, gy = np.meshgrid(np.linspace(bbox.x0, bbox.x1, n), np.linspace(bbox.y0, bbox.y1, n))
    grid = np.column_stack([gx.ravel(), gy.ravel()])
    inside = np.zeros(len(grid), dtype=bool)
    for path in bands:
        inside |= path.contains_points(grid)
    return float(inside.mean())


def _covered(bbox, pts: np.ndarray, pad: float = 1.0) -> int:
    if bbox is None or not len(pts):
        return 0
    return int(((pts[:, 0] >= bbox.x0 - pad) & (pts[:, 0] <= bbox.x1 + pad)
                & (pts[:, 1] >= bbox.y0 - pad) & (pts[:, 1] <= bbox.y1 + pad)).sum())


def _labels(ax) -> list:
    return [t for t in ax.texts if t.get_gid() == LABEL_GID and t.get_visible()]


def _bbox(artist, renderer):
    try:
        return artist.get_window_extent(renderer)
    except (RuntimeError, ValueError):
        return None


def overlaps(fig) -> list[str]:
    """Text over data in ``fig``: every label (``LABEL_GID``) or legend whose box covers data points of its axes,
    and every label that overlaps a legend — as descriptions (empty when the figure is clean). Figure-level
    legends are checked against the data of every axes."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    out = []
    for i, ax in enumerate(fig.axes):
        pts = data_points(ax)
        leg = ax.get_legend()
        boxes = [("label " + repr(t.get_text()[:40]), _bbox(t, r)) for t in _labels(ax)]
        if leg is not None and leg.get_visible():
            boxes.append(("legend", _bbox(leg, r)))
        for name, bb in boxes:
            if (n := _covered(bb, pts)):
                out.append(f"axes {i} ({ax.get_title()[:30]!r}): {name} covers {n} data points")
        lb = _bbox(leg, r) if leg is not None and leg.get_visible() else None
        for t in _labels(ax):
            tb = _bbox(t, r)
            if lb is not None and tb is not None and tb.overlaps(lb):
                out.append(f"axes {i}: label {t.get_text()[:40]!r} overlaps the legend")
        for fl in fig.legends:
            if (n := _covered(_bbox(fl, r), pts)):
                out.append(f"axes {i}: figure legend covers {n} data points")
    return out


def declutter(fig) -> None:
    """Move every label (``LABEL_GID``) and axes legend of ``fig`` to where it covers no data: each legend
    location (its own first, then the usual nine) is tried with the labels placed greedily in the first free
    corner of their axes (their own position first), avoiding the legend and each other; the combination
    covering the fewest data points wins (lines, markers and error bars count fully, the ± std bands half).
    A single panel whose legend finds no free place gets it beside the panel, on the right. Called by :func:`save_figure` on every figure."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    for ax in fig.axes:
        labels = _labels(ax)
        leg = ax.get_legend()
        if leg is not None and not leg.get_visible():
            leg = None
        if not labels and leg is None:
            continue
        pts, bands = data_points(ax), _bands(ax)
        home = [(t.get_position()[0], t.get_position()[1], t.get_ha(), t.get_va()) for t in labels]

        frame = ax.get_window_extent(r)

        def cost_of(bb, avoid, inside=True):
            if bb is None:
                return 0.0
            out = inside and (bb.x0 < frame.x0 - 1 or bb.x1 > frame.x1 + 1 or bb.y0 < frame.y0 - 1
                              or bb.y1 > frame.y1 + 1)  # a label spilling over the ticks or a neighbour
            return (_covered(bb, pts) + 0.5 * _band_cover(bb, bands) + 1000 * out
                    + 1000 * sum(bool(o is not None and bb.overlaps(o)) for o in avoid))

        texts = [t.get_text() for t in labels]

        def place_labels(avoid):
            total, spots = 0.0, []
            for t, h, text in zip(labels, home, texts):
                best = None
                # the text as it is, then wrapped after its first ": " (narrower), at each candidate position
                variants = [text] + ([text.replace(": ", ":\n", 1)] if ": " in text and "\n" not in text else [])
                for txt in variants:
                    t.set_text(txt)
                    for cand in [h] + [c for c in _CORNERS if c[:2] != h[:2]]:
                        t.set_position(cand[:2])
                        t.set_ha(cand[2])
                        t.set_va(cand[3])
                        c = cost_of(_bbox(t, r), avoid)
                        if best is None or c < best[0]:
                            best = (c, cand, txt)
                        if c == 0:
                            break
                    if best[0] == 0:
                        break
                t.set_text(best[2])
                t.set_position(best[1][:2])
                t.set_ha(best[1][2])
                t.set_va(best[1][3])
                avoid = avoid + [_bbox(t, r)]
                total += best[0]
                spots.append(best[1])
            return total, spots

        if leg is None:
            place_labels([])
            continue
        own = [] if leg._loc == 0 else [leg._loc]  # noqa: SLF001 - "best" is decided at draw time: not measurable
        best = None
        for loc in own + list(_LEGEND_LOCS):
            leg.set_loc(loc)
            lb = _bbox(leg, r)
            c = cost_of(lb, [], inside=False)
            lab, _ = place_labels([lb])
            if best is None or c + lab < best[0]:
                best = (c + lab, loc)
            if c + lab == 0:
                break
        if best[0] >= 1 and len(fig.axes) == 1:  # no free place inside a single panel: beside it, on the right
            leg.set_loc("upper left")
            leg.set_bbox_to_anchor((1.02, 1.0), transform=ax.transAxes)
            fig._dpbench_tight = True  # save_figure widens the image to hold it
            place_labels([])
            continue
        leg.set_loc(best[1])
        place_labels([_bbox(leg, r)])
