"""Reference results and ``dpbench compare``: what a run should give, and whether a run gives it.

A **reference** is a small folder of documentation (``docs/reference/<name>/``), written from a finished run by
``dpbench reference RESULTS OUT``:

- ``summary/<study>__<figure>.csv`` (``.csv.gz`` when large) — one row per figure point: the columns that identify the point (series,
  metric, x and every other column that separates points of the figure, found from the rows themselves, see
  :func:`point_columns`), ``n`` (repetitions), ``mean``, ``std`` and ``se`` (= std/√n) of ``value``;
- ``claims.csv`` — every checked claim of the run (study, figure, claim, statement, measured, verdict, reason);
- ``meta.json`` — provenance (config hash, git revision, packages, dataset variants) of the run;
- optionally ``figures/<study>/<figure>.png`` — the figures, downscaled.

``dpbench compare RUN [REFERENCE]`` summarises RUN (a results folder, or another reference) the same way and
reports, per figure point, the difference from the reference in standard errors, and per claim whether the
verdict changed. It exits 1 when a point differs beyond the threshold, a claim's verdict changed, or a point or
claim of the reference is missing from RUN (:func:`compare`).

**The threshold.** A point differs when |z| > z*, with

    z = (mean_run − mean_ref) / sqrt(se_run² + se_ref² + floor²),   z* = Φ⁻¹(1 − α / (2 m)),

m the number of compared points and α = 0.01 (Bonferroni): two runs that differ only in their random draws
(another seed, another machine's libraries) flag a point with probability at most α *in the whole comparison*,
about 1 in 100 comparisons, while a change that moves a point by more than ~z* standard errors is caught. A run
of the same code and config is bit-identical to its reference (every stream is keyed by the cell), so all its
differences are 0. ``floor = rtol × max(range of the metric's reference means in that figure, |mean_ref|)``
(rtol = 1e-6)
absorbs floating-point noise on points whose standard error is 0 (one repetition, or a deterministic
quantity): on such points any difference larger than a millionth of the plotted range counts — there is no
repetition to tell a change from noise, so the comparison is exact. Metrics that measure elapsed time
(:data:`TIMING`) are listed but never compared, and neither are claims about them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dpbench.results import TIMING, point_columns, read_metadata
from dpbench.store import atomic_write_bytes

#: figures whose claims are about elapsed time (their verdicts depend on the machine's load)
TIMING_FIGURES = {("wu2016", "fig3_4"), ("song2018", "table7_2")}
ALPHA = 0.01
#: significant digits of the numbers written to a reference (key values are matched at these digits)
KEY_DIGITS = 12
RTOL = 1e-6
SUMMARY_STATS = ("n", "mean", "std", "se")
#: summaries larger than this (bytes of CSV) are written gzip-compressed (``<study>__<figure>.csv.gz``)
GZIP_ABOVE = 200_000


def _hashable(df: pd.DataFrame) -> pd.DataFrame:
    """Object columns holding lists/arrays/dicts as text (so they can be grouped and written to CSV)."""
    out = df.copy()
    for c in out.columns:
        if out[c].dtype == object and out[c].map(lambda v: isinstance(v, (list, tuple, dict, np.ndarray))).any():
            out[c] = out[c].map(lambda v: json.dumps(v.tolist() if isinstance(v, np.ndarray) else v, default=str)
                                if isinstance(v, (list, tuple, dict, np.ndarray)) else v)
    return out


def summarise_points(df: pd.DataFrame, key: list[str] | None = None) -> pd.DataFrame:
    """One row per point of one figure's result rows: ``key`` (default :func:`point_columns`) and ``n``,
    ``mean``, ``std`` (ddof 1; 0 for one repetition) and ``se`` of ``value``."""
    df = _hashable(df)
    key = point_columns(df) if key is None else key
    missing = [c for c in key if c not in df]
    if missing:
        raise ValueError(f"the rows of {_where(df)} lack the point columns {missing} of the reference")
    g = df.groupby(key, dropna=False, sort=True)["value"]
    out = g.agg(n="count", mean="mean", std="std").reset_index()
    out["std"] = out["std"].fillna(0.0)
    out["se"] = out["std"] / np.sqrt(out["n"].clip(lower=1))
    return out


def _where(df: pd.DataFrame) -> str:
    if len(df) and "study" in df and "figure" in df:
        return f"{df['study'].iloc[0]}/{df['figure'].iloc[0]}"
    return "the result rows"


# -- reading a run ------------------------------------------------------------------------------------------------


def result_files(results_dir: Path) -> dict[tuple[str, str], list[Path]]:
    """{(study, figure): [Parquet files]} of a results folder: the series files of every figure (not the shards,
    the cache, anchors or claims)."""
    out: dict[tuple[str, str], list[Path]] = {}
    for p in sorted(results_dir.glob("*/*/*.parquet")):
        study, figure = p.parts[-3], p.parts[-2]
        if study in ("cache", "logs", ".jobs") or figure in ("shards",):
            continue
        out.setdefault((study, figure), []).append(p)
    return out


@dataclass
class Run:
    """A run as compare sees it: per (study, figure) its point summary, the claims, and provenance."""

    points: dict[tuple[str, str], pd.DataFrame]
    claims: pd.DataFrame
    meta: dict = field(default_factory=dict)
    where: str = ""


def read_run(path: str | Path, keys: dict[tuple[str, str], list[str]] | None = None) -> Run:
    """A results folder (``results/``: series Parquets, ``claims.parquet``) or a reference folder (``summary/``,
    ``claims.csv``). ``keys``: the point columns per figure to summarise a results folder by (the reference's),
    so both sides group alike."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"{path} is not a folder: give a results folder (results/) or a reference folder "
                                f"(docs/reference/<name>/)")
    if (path / "summary").is_dir():
        points = {}
        for f in sorted([*(path / "summary").glob("*.csv"), *(path / "summary").glob("*.csv.gz")]):
            study, _, figure = f.name.removesuffix(".gz").removesuffix(".csv").partition("__")
            points[(study, figure)] = pd.read_csv(f, keep_default_na=True)
        claims = pd.read_csv(path / "claims.csv") if (path / "claims.csv").exists() else _empty_claims()
        meta = json.loads((path / "meta.json").read_text()) if (path / "meta.json").exists() else {}
        return Run(points, claims, meta, str(path))
    files = result_files(path)
    if not files:
        raise FileNotFoundError(f"no result files under {path} (expected {path}/<study>/<figure>/<series>.parquet)")
    points = {}
    variants: set[str] = set()
    meta: dict = {}
    fig_configs: dict[str, str | None] = {}   # per figure: the config hash its result files were written with
    for (study, figure), fs in files.items():
        try:
            df = pd.concat([pd.read_parquet(f) for f in fs], ignore_index=True)
        except Exception as exc:  # noqa: BLE001 - pyarrow's own error types
            raise ValueError(f"a result file of {study}/{figure} is unreadable ({type(exc).__name__}: {exc}); "
                             "rerun the workflow: it is rebuilt from the cell cache") from None
        if "value" not in df or not len(df):
            continue
        key = None if keys is None else keys.get((study, figure))
        if key is not None:
            key = [c for c in key if c in df.columns] if set(key) - set(df.columns) else key
        points[(study, figure)] = summarise_points(df, key)
        fig_configs[f"{study}/{figure}"] = read_metadata(fs[0]).get("config_hash")
        if "dataset_variant" in df:
            variants.update(map(str, df["dataset_variant"].dropna().unique()))
        if not meta:
            m = read_metadata(fs[0])
            meta = {k: m.get(k) for k in ("config_hash", "git_revision", "packages", "created", "host")}
    claims_path = path / "claims.parquet"
    anchors = sorted(path.glob("*/anchors.parquet"))
    if claims_path.exists():
        claims = _claims_of(pd.read_parquet(claims_path))
    elif anchors:   # a run of some studies only: their anchor checks (what the claims page would gather)
        from dpbench.report import claims_frame

        claims = _claims_of(claims_frame(anchors))
    else:
        claims = _empty_claims()
    meta["dataset_variants"] = sorted(variants)
    meta["figure_grid_hashes"] = run_figure_grid_hashes(path, fig_configs)
    return Run(points, claims, meta, str(path))


def _replaced_claims(old: pd.DataFrame, new: pd.DataFrame, run_figures) -> pd.Series:
    """Which of a reference's claims a merged run replaces: of every study the run has claims of, the claims the
    run checked again (same claim id) and the claims about the run's figures only (``figure``, comma-separated
    where a claim names several). A run of some of a study's figures (its anchor checks run on those figures)
    thus keeps the claims of the study's other figures; a run of the whole study replaces them all."""
    if not len(new):
        return pd.Series(False, index=old.index)
    figs: dict[str, set] = {}
    for study, figure in run_figures:
        figs.setdefault(study, set()).add(figure)
    ids = set(zip(new["study"].astype(str), new["claim"].astype(str)))
    studies = set(new["study"].astype(str))

    def replaced(r) -> bool:
        if str(r.study) not in studies:
            return False
        named = {f.strip() for f in str(r.figure).split(",") if f.strip()}
        return (str(r.study), str(r.claim)) in ids or bool(named) and named <= figs.get(str(r.study), set())
    return pd.Series([replaced(r) for r in old.itertuples()], index=old.index, dtype=bool)


def run_figure_grid_hashes(results_dir: str | Path, fig_configs: dict[str, str | None]) -> dict[str, str]:
    """:func:`figure_grid_hashes` of the figures of a results folder, each from the config its result files were
    written with (their ``config_hash`` among the folder's ``.jobs`` configs; else the newest config): a folder
    that gathers figures of several runs documents each figure's own grid."""
    from dpbench.config import config_hash

    configs = run_configs(results_dir)
    if not configs:
        return {}
    by_config = {config_hash(c): c for c in reversed(configs)}   # the newest config wins a tie
    cache: dict[int, dict[str, str]] = {}
    out = {}
    for fig, ch in fig_configs.items():
        c = by_config.get(ch, configs[0])
        hashes = cache.setdefault(id(c), figure_grid_hashes(c))
        if fig in hashes:
            out[fig] = hashes[fig]
    return out


CLAIM_KEY = ("study", "figure", "claim", "statement")
CLAIM_OUT = (*CLAIM_KEY, "measured", "verdict", "reason", "reduced_grid")


def _empty_claims() -> pd.DataFrame:
    return pd.DataFrame(columns=[*CLAIM_OUT, "occurrence"])


def _claims_of(df: pd.DataFrame) -> pd.DataFrame:
    """Claims with an ``occurrence`` number among rows of the same (study, figure, claim, statement)."""
    df = df.copy()
    for c in CLAIM_OUT:
        if c not in df:
            df[c] = ""
    df = df[list(CLAIM_OUT)].copy()
    df["occurrence"] = df.groupby(list(CLAIM_KEY), dropna=False).cumcount()
    return df


#: settings that choose how a solver computes, not what the grid is (e.g. vdm2020's ``lbfgs.float32``,
#: ``dpsgd.float32``): a run that changes them is compared with the same reference — whether its figures stay
#: within noise is exactly what ``dpbench compare`` answers
SOLVER_KEYS = frozenset({"float32", "subsagg_float32", "precondition"})


def _without_solver_keys(obj):
    if isinstance(obj, dict):
        return {k: _without_solver_keys(v) for k, v in obj.items() if k not in SOLVER_KEYS}
    if isinstance(obj, list):
        return [_without_solver_keys(v) for v in obj]
    return obj


def grid_hash(config: dict) -> str:
    """A hash of what decides a run's numbers: the seed, the studies' settings and the data sources (not paths,
    parallelism, sharding or resources, which do not change results, nor the solver settings of
    :data:`SOLVER_KEYS`)."""
    from dpbench.store import content_key

    seed, data, studies = _grid_inputs(config)
    return content_key({"seed": seed, "studies": studies, "data": data})[:16]


def _grid_inputs(config: dict) -> tuple:
    """(seed, data sources, studies) as the grid hashes see them: the data settings without the cache folder and
    mirror, the studies without :data:`SOLVER_KEYS`."""
    data = {k: v for k, v in (config.get("data") or {}).items() if k not in ("cache_dir", "mirror")}
    return config.get("seed"), data, _without_solver_keys(config.get("studies"))


#: studies whose figures read other studies' settings (the audit calibrates every audited method as its study
#: does): their figures' grid is the whole grid
CROSS_STUDY = ("audit",)


def figure_grid_hashes(config: dict) -> dict[str, str]:
    """Per enabled figure (``"study/figure"``): a hash of what decides its numbers — the seed, the data sources,
    its study's settings other than the figures, and its own figure settings (:func:`grid_hash`'s exclusions
    apply). A change of one figure's grid (e.g. a series added to it) leaves the other figures' hashes as they
    were, so a reference still serves them."""
    from dpbench.store import content_key

    seed, data, studies = _grid_inputs(config)
    out = {}
    for study, cfg in (studies or {}).items():
        if not isinstance(cfg, dict):
            continue
        base = studies if study in CROSS_STUDY else {k: v for k, v in cfg.items() if k != "figures"}
        for figure, fc in (cfg.get("figures") or {}).items():
            if fc is not None:
                out[f"{study}/{figure}"] = content_key({"seed": seed, "data": data, "study": base, "figure": fc})[:16]
    return out


def run_configs(results_dir: str | Path) -> list[dict]:
    """The validated configs of the runs that wrote ``results_dir`` (``.jobs/config-*.json``), newest first."""
    files = sorted(Path(results_dir).glob(".jobs/config-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    out = []
    for f in files:
        try:
            out.append(json.loads(f.read_text()))
        except (OSError, ValueError):
            continue
    return out


#: the references shipped with the repository
REFERENCE_ROOT = Path(__file__).resolve().parent.parent / "docs" / "reference"


def default_reference(run_path: str | Path, root: str | Path = REFERENCE_ROOT) -> str:
    """The reference folder under ``root`` whose run had the same grid (:func:`grid_hash`) as the run at
    ``run_path`` (a results folder); a clear error when none has."""
    run_path, root = Path(run_path), Path(root)
    if (run_path / "summary").is_dir():
        raise ValueError(f"{run_path} is a reference: name the reference to compare it with")
    configs = run_configs(run_path)
    hashes = [grid_hash(c) for c in configs]
    refs, best = {}, (0, None)
    figs = figure_grid_hashes(configs[0]) if configs else {}
    for meta in sorted(root.glob("*/meta.json")):
        try:
            m = json.loads(meta.read_text())
        except (OSError, ValueError):
            continue
        refs[m.get("grid_hash")] = meta.parent
        theirs = m.get("figure_grid_hashes") or {}
        same = sum(1 for k, h in figs.items() if theirs.get(k) == h)   # figures of the run's grid it documents
        if same > best[0]:
            best = (same, meta.parent)
    for h in hashes:
        if h in refs:
            return str(refs[h])
    if best[1] is not None:
        return str(best[1])
    known = ", ".join(str(p) for p in refs.values()) or f"none under {root}"
    raise ValueError(f"no reference matches the grid of the run in {run_path} "
                     f"({'its config is unknown: no .jobs/config-*.json' if not hashes else 'grid ' + hashes[0]}); "
                     f"name one: dpbench compare {run_path} REFERENCE (references: {known})")


# -- writing a reference ------------------------------------------------------------------------------------------


def write_reference(results_dir: str | Path, out_dir: str | Path, figures_dir: str | Path | None = None,
                    png_width: int = 640, note: str = "", merge: bool = False) -> dict:
    """Write the reference of the run in ``results_dir`` to ``out_dir`` (see the module docstring); with
    ``figures_dir`` also the run's figures downscaled to ``png_width`` pixels, and only the figures drawn there
    (a figure without its PNG is unfinished: listed in ``meta.json`` as such, not summarised). Returns counts.

    ``merge``: update the reference already in ``out_dir`` with a run of some of its figures (a rerun of one
    study after a change): the run's figures replace theirs, the run's claims replace the ones they check again
    and those about the run's figures (:func:`_replaced_claims`), every other figure, claim and PNG is kept; ``meta.json`` merges the figures' grid
    hashes, takes the run's config (``grid_hash``) and lists each piece's revision and figures (``pieces``)."""
    results_dir, out_dir = Path(results_dir), Path(out_dir)
    run = read_run(results_dir)
    skipped = []
    if figures_dir is not None:   # a figure not drawn yet is unfinished (a run in pieces): not documented
        for key in sorted(run.points):
            if not (Path(figures_dir) / key[0] / f"{key[1]}.png").exists():
                skipped.append("/".join(key))
                del run.points[key]
    new_figures = sorted(run.points)
    old_meta: dict = {}
    if merge:
        if not (out_dir / "summary").is_dir():
            raise FileNotFoundError(f"--merge: {out_dir} holds no reference to update (no summary/ folder)")
        old = read_run(out_dir)
        old_meta = old.meta
        run.points = {**old.points, **run.points}
        kept = old.claims[~_replaced_claims(old.claims, run.claims, new_figures)] if len(old.claims) else old.claims
        run.claims = pd.concat([kept, run.claims], ignore_index=True) if len(run.claims) else kept
        run.meta["figure_grid_hashes"] = {**(old_meta.get("figure_grid_hashes") or {}),
                                          **(run.meta.get("figure_grid_hashes") or {})}
        run.meta["dataset_variants"] = sorted(set(old_meta.get("dataset_variants") or [])
                                              | set(run.meta.get("dataset_variants") or []))
    (out_dir / "summary").mkdir(parents=True, exist_ok=True)
    for old in [*(out_dir / "summary").glob("*.csv"), *(out_dir / "summary").glob("*.csv.gz")]:
        old.unlink()
    n_points = 0
    for (study, figure), pts in sorted(run.points.items()):
        text = pts.to_csv(index=False, float_format=f"%.{KEY_DIGITS}g").encode()
        name = f"{study}__{figure}.csv"
        if len(text) > GZIP_ABOVE:   # e.g. ROC curves: thousands of points; mtime 0 keeps the bytes reproducible
            import gzip

            text, name = gzip.compress(text, compresslevel=9, mtime=0), name + ".gz"
        atomic_write_bytes(out_dir / "summary" / name, text)
        n_points += len(pts)
    claims = run.claims.drop(columns=["occurrence"], errors="ignore")
    atomic_write_bytes(out_dir / "claims.csv", claims.to_csv(index=False).encode())
    n_png = 0
    if figures_dir is not None:
        from dpbench.report import thumbnail_png

        for study, figure in new_figures:
            src = Path(figures_dir) / study / f"{figure}.png"
            if src.exists():
                dst = out_dir / "figures" / study / f"{figure}.png"
                dst.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_bytes(dst, thumbnail_png(src, png_width, colours=64))
                n_png += 1
    configs = run_configs(results_dir)
    fig_hashes = run.meta.get("figure_grid_hashes") or {}
    piece = {k: run.meta.get(k) for k in ("git_revision", "created")}
    piece.update(figures=["/".join(k) for k in new_figures], note=note)
    pieces = []
    if merge:   # the reference it updates was one piece unless it already lists its pieces
        first = {"git_revision": old_meta.get("git_revision"), "created": old_meta.get("created"),
                 "figures": "the others", "note": old_meta.get("note", "")}
        pieces = [*(old_meta.get("pieces") or [first]), piece]
    meta = {**run.meta, "grid_hash": grid_hash(configs[0]) if configs else None,
            "figure_grid_hashes": {f"{s}/{f}": fig_hashes[f"{s}/{f}"] for s, f in sorted(run.points)
                                   if f"{s}/{f}" in fig_hashes},
            "figures": len(run.points),
            "studies": sorted({k[0] for k in run.points}),
            "unfinished_figures": sorted(set(old_meta.get("unfinished_figures") or []) - set(piece["figures"])
                                         | set(skipped)) if merge else skipped,
            "claims_of": sorted(set(run.claims["study"])) if len(run.claims) else [], "points": n_points, "claims": len(claims), "note": note}
    if merge:
        meta["pieces"] = pieces
    atomic_write_bytes(out_dir / "meta.json", (json.dumps(meta, indent=1, default=str) + "\n").encode())
    return {"figures": len(run.points), "points": n_points, "claims": len(claims), "pngs": n_png,
            "skipped": skipped}


# -- comparing ----------------------------------------------------------------------------------------------------


@dataclass
class Comparison:
    points: pd.DataFrame       # one row per reference point: key, means, se, z, status
    claims: pd.DataFrame       # one row per reference claim: verdicts, status
    z_crit: float
    alpha: float

    @property
    def failed(self) -> bool:
        bad = {"differs", "missing"}
        return bool(self.points["status"].isin(bad).any() or self.claims["status"].isin({"changed", "missing"}).any())


def _is_timing(metric) -> bool:
    return isinstance(metric, str) and bool(TIMING.search(metric))


def _norm_key_value(v):
    """Key values compared across CSV and Parquet: numbers as floats, text as text, NaN as one token."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) or v == "":
        return "<NA>"   # a CSV reads an empty text back as NaN
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, float, np.integer, np.floating)):
        return f"{float(v):.{KEY_DIGITS}g}"
    s = str(v)
    try:
        return f"{float(s):.{KEY_DIGITS}g}"
    except ValueError:
        return "True" if s == "True" else "False" if s == "False" else s


def _keyed(pts: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    out = pts.copy()
    out["_k"] = ["\x1f".join(_norm_key_value(v) for v in row) for row in pts[key].itertuples(index=False)]
    return out


def _digits(x) -> float:
    return float(f"{float(x):.{KEY_DIGITS}g}")


def other_grid_figures(run: Run, ref: Run) -> set[tuple[str, str]]:
    """The reference's figures whose grid differs from the run's (:func:`figure_grid_hashes` of the reference's
    ``meta.json`` against the run's config; empty when either is unknown): their points and claims are not
    compared — the two runs computed different things."""
    theirs = ref.meta.get("figure_grid_hashes") or {}
    ours = run.meta.get("figure_grid_hashes") or {}
    if not theirs or not ours:
        return set()
    return {tuple(k.split("/", 1)) for k, h in theirs.items() if k in ours and ours[k] != h}


def compare_runs(run: Run, ref: Run, alpha: float = ALPHA, rtol: float = RTOL) -> Comparison:
    rows = []
    other = other_grid_figures(run, ref)
    for (study, figure), rp in sorted(ref.points.items()):
        key = [c for c in rp.columns if c not in SUMMARY_STATS]
        rng = rp.groupby("metric")["mean"].agg(lambda s: float(np.nanmax(s) - np.nanmin(s)) if s.notna().any()
                                               else 0.0) if "metric" in rp else pd.Series(dtype=float)
        have = run.points.get((study, figure))
        rk = _keyed(rp, key)
        if have is not None and all(c in have.columns for c in key):
            hk = _keyed(have, key).drop_duplicates("_k").set_index("_k")
        else:
            hk = None
        for d in rk.to_dict("records"):
            metric = d.get("metric", "")
            base = {"study": study, "figure": figure, "series": d.get("series", ""), "metric": metric,
                    "point": ", ".join(f"{c}={d[c]}" for c in key if c not in ("study", "figure", "series", "metric")),
                    "ref_mean": d["mean"], "ref_se": d["se"], "ref_n": d["n"]}
            if (study, figure) in other:
                rows.append({**base, "run_mean": np.nan, "run_se": np.nan, "run_n": 0, "z": np.nan,
                             "status": "other_grid"})
                continue
            if hk is None or d["_k"] not in hk.index:
                rows.append({**base, "run_mean": np.nan, "run_se": np.nan, "run_n": 0, "z": np.nan,
                             "status": "missing"})
                continue
            h = hk.loc[d["_k"]]
            diff = _digits(h["mean"]) - _digits(d["mean"])  # a reference holds KEY_DIGITS significant digits
            spread = float(rng.get(metric, 0.0) or 0.0) if len(rng) else 0.0
            floor = rtol * max(spread, abs(float(d["mean"])) if not math.isnan(float(d["mean"])) else 0.0) or 1e-12
            scale = math.sqrt(float(h["se"]) ** 2 + float(d["se"]) ** 2 + floor ** 2)
            a, b = _digits(h["mean"]), _digits(d["mean"])
            same = a == b or (math.isnan(a) and math.isnan(b))     # equal infinities too (inf - inf is NaN)
            z = 0.0 if same else (diff / scale if math.isfinite(diff) else math.inf)
            rows.append({**base, "run_mean": float(h["mean"]), "run_se": float(h["se"]), "run_n": int(h["n"]),
                         "z": z, "status": "timing" if _is_timing(metric) else "ok"})
    pts = pd.DataFrame(rows, columns=["study", "figure", "series", "metric", "point", "ref_mean", "ref_se", "ref_n",
                                      "run_mean", "run_se", "run_n", "z", "status"])
    compared = pts["status"] == "ok"
    m = max(int(compared.sum()), 1)
    from scipy.stats import norm

    z_crit = float(norm.isf(alpha / (2 * m)))
    pts.loc[compared & (pts["z"].abs() > z_crit), "status"] = "differs"
    # claims
    rc, hc = _claims_of(ref.claims), _claims_of(run.claims)
    ck = [*CLAIM_KEY, "occurrence"]
    merged = rc.merge(hc[[*ck, "verdict", "measured"]], on=ck, how="left", suffixes=("_ref", "_run"))
    timing = merged.apply(lambda r: (r["study"], r["figure"]) in TIMING_FIGURES, axis=1) if len(merged) else []
    status = np.where(merged["verdict_run"].isna(), "missing",
                      np.where(merged["verdict_run"] == merged["verdict_ref"], "same", "changed"))
    if len(merged):
        status = np.where(np.asarray(timing) & (status == "changed"), "timing", status)
        other_fig = [any((s, f.strip()) in other for f in str(fs).split(","))
                     for s, fs in zip(merged["study"], merged["figure"])]
        status = np.where(np.asarray(other_fig), "other_grid", status)
    merged["status"] = status
    claims = merged[["study", "figure", "claim", "statement", "verdict_ref", "verdict_run", "measured_ref",
                     "measured_run", "status"]]
    return Comparison(pts, claims, z_crit, alpha)


def compare(run_path: str | Path, ref_path: str | Path, alpha: float = ALPHA, rtol: float = RTOL) -> Comparison:
    """Compare the run at ``run_path`` with the reference at ``ref_path`` (see the module docstring)."""
    ref = read_run(ref_path)
    if not ref.points:
        raise FileNotFoundError(f"{ref_path} holds no reference summaries (summary/*.csv)")
    keys = {k: [c for c in v.columns if c not in SUMMARY_STATS] for k, v in ref.points.items()}
    return compare_runs(read_run(run_path, keys), ref, alpha, rtol)


def report_text(c: Comparison, ref_path, run_path, limit: int = 40) -> str:
    """The human summary: a line per failing figure point and changed claim (up to ``limit`` of each), then one
    summary line."""
    lines = []
    bad = c.points[c.points["status"].isin(["differs", "missing"])]
    bad = bad.reindex(bad["z"].abs().sort_values(ascending=False, na_position="first").index)
    for r in bad.head(limit).itertuples():
        if r.status == "missing":
            lines.append(f"MISSING  {r.study}/{r.figure} {r.series} {r.metric} [{r.point}]: not in the run")
        else:
            lines.append(f"DIFFERS  {r.study}/{r.figure} {r.series} {r.metric} [{r.point}]: "
                         f"{r.run_mean:.6g} ± {r.run_se:.2g} vs reference {r.ref_mean:.6g} ± {r.ref_se:.2g} "
                         f"(z = {r.z:+.1f})")
    if len(bad) > limit:
        lines.append(f"... and {len(bad) - limit} more points")
    cl = c.claims[c.claims["status"].isin(["changed", "missing"])]
    for r in cl.head(limit).itertuples():
        if r.status == "missing":
            lines.append(f"MISSING  claim {r.study}/{r.figure} {r.claim}: not checked in the run")
        else:
            lines.append(f"CHANGED  claim {r.study}/{r.figure} {r.claim}: {r.verdict_ref} -> {r.verdict_run} "
                         f"(measured {r.measured_run}; reference {r.measured_ref})")
    pc, cc = c.points["status"].value_counts(), c.claims["status"].value_counts()
    n_cmp = int(pc.get("ok", 0) + pc.get("differs", 0))
    z = c.points.loc[c.points["status"].isin(["ok", "differs"]), "z"].abs()
    zmax = float(z.max()) if len(z) else 0.0   # 0: every compared point equals the reference (an unchanged rerun)
    lines.append(
        f"{'FAIL' if c.failed else 'OK'}: {run_path} vs {ref_path}: {n_cmp} points compared "
        f"(largest |z| {zmax:.2f}{', all identical' if n_cmp and zmax == 0 else ''}), "
        f"{int(pc.get('differs', 0))} differ beyond |z| > {c.z_crit:.2f} (family-wise α = {c.alpha:g}), "
        f"{int(pc.get('missing', 0))} missing, {int(pc.get('timing', 0))} timing points not compared"
        + (f", {int(pc.get('other_grid', 0))} points of {len({(r.study, r.figure) for r in c.points.itertuples() if r.status == 'other_grid'})} "
           "figures whose grid differs from the reference's not compared" if pc.get("other_grid", 0) else "") + "; "
        f"{len(c.claims)} claims: {int(cc.get('changed', 0))} verdicts changed, {int(cc.get('missing', 0))} missing"
        + (f", {int(cc.get('timing', 0))} timing claims changed (not counted)" if cc.get("timing", 0) else ""))
    return "\n".join(lines)
