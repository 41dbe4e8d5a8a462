"""Result files: long-format rows in Parquet, written atomically, with provenance in the file metadata.

Every row identifies its cell (study, figure, series, method, dataset variant, every parameter as a column,
repetition) and holds one ``metric``/``value`` pair plus how the value was obtained (noise kind and scale,
composition, accountant, achieved ε, runtime). The Parquet key-value metadata ``dpbench`` holds a JSON
document: config hash, git revision, package versions, host, creation time.
"""

from __future__ import annotations

import io
import json
import re
import platform
import socket
import subprocess
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dpbench.config import config_hash
from dpbench.store import atomic_write_bytes

PACKAGES = ("dpbench", "numpy", "scipy", "pandas", "scikit-learn", "pyarrow", "dp-accounting", "joblib",
            "matplotlib", "snakemake")
REPO_ROOT = Path(__file__).resolve().parent.parent


def git_revision() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    out["python"] = platform.python_version()
    return out


def process_cost() -> dict:
    """CPU-seconds (user + system, this process and its children: joblib's workers are shut down and reaped
    first) and peak resident memory (MB; the largest of the process and of one child) of the process so far: a job's measured cost, stored with its result file (``dpbench plan --measured``
    compares it with the projection)."""
    import resource
    import sys

    from dpbench.parallel import release_workers

    release_workers()   # joblib's workers, reaped: their CPU joins RUSAGE_CHILDREN
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    rss_unit = 1 if sys.platform == "darwin" else 1024   # ru_maxrss: bytes on macOS, KiB on Linux
    return {"job_cpu_s": round(me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime, 3),
            "job_peak_rss_mb": round(max(me.ru_maxrss, kids.ru_maxrss) * rss_unit / 2**20, 1)}


def provenance(config: dict, **extra) -> dict:
    return {"config_hash": config_hash(config), "git_revision": git_revision(), "packages": package_versions(),
            "host": socket.gethostname(), "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            **process_cost(), **extra}


#: The columns every result row carries, in every study (docs/results.md): name -> (kind, meaning). Other columns
#: describe a study's own settings (batch size, panel, test, ...) and are documented with its figures.
RESULT_COLUMNS: dict[str, tuple[str, str]] = {
    "study": ("text", "the study (config key)"),
    "figure": ("text", "the figure or table the row belongs to"),
    "series": ("text", "the result file within the figure (a method, a dataset or a panel, as the study declares)"),
    "method": ("text", "the algorithm that produced the row"),
    "dataset_variant": ("text", "the data actually used: real, or the name of a labelled substitute"),
    "epsilon": ("number", "the ε the row is plotted at (inf: non-private)"),
    "delta": ("number", "the δ of that guarantee (0: pure ε-DP)"),
    "budget": ("number", "the inference budget B (vdm2020: predictions answered); NaN: the method has none"),
    "rep": ("integer", "the repetition (independent data split, training or noise draw) of the cell"),
    "metric": ("text", "what value measures (test_accuracy, mse, l1_error, eps_lower, ...)"),
    "value": ("number", "the measurement"),
    "seed": ("integer", "the root seed of the run (config seed); every stream derives from it and the cell"),
    "runtime_s": ("number", "CPU seconds of the computation behind the row (shared by the rows of one unit)"),
}
#: the series (and method) name of a tight calibration: ``<source>_tight``, drawn dashed beside its source series;
#: the one home of this convention (the plan's costs, the figures' ``tight`` key, the tight-gain figure, the claims
#: under tight calibration)
TIGHT_SUFFIX = "_tight"


def tight_source(name: str) -> str | None:
    """The source series of a tight calibration's ``name`` (``<source>_tight``), else None."""
    return name[: -len(TIGHT_SUFFIX)] if name.endswith(TIGHT_SUFFIX) else None


def calibration_of(name: str) -> str:
    """The ``calibration`` column of a row of series or method ``name``: ``"tight"`` for ``<source>_tight``, else
    ``"source"``."""
    return "tight" if tight_source(name) is not None else "source"


#: old names of core columns, rejected so that two names never mean one thing
RENAMED = {"unit_seconds": "runtime_s", "repetition": "rep"}


def check_result_rows(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """``df`` if it carries every column of :data:`RESULT_COLUMNS` with the declared kind; a ValueError naming
    ``where`` (study/figure/series) and the offending columns otherwise. An empty frame passes (a series may have
    no applicable cell)."""
    from pandas.api import types as T

    if len(df) == 0:
        return df
    missing = [c for c in RESULT_COLUMNS if c not in df]
    renamed = [f"{c} (write {RENAMED[c]})" for c in RENAMED if c in df]
    check = {"number": T.is_numeric_dtype, "integer": T.is_integer_dtype,
             "text": lambda s: T.is_string_dtype(s) or T.is_object_dtype(s)}
    wrong = [f"{c} ({df[c].dtype}, want {kind})" for c, (kind, _) in RESULT_COLUMNS.items()
             if c in df and not check[kind](df[c])]
    if missing or renamed or wrong:
        raise ValueError(f"result rows of {where} break the result schema (dpbench.results.RESULT_COLUMNS): "
                         + "; ".join(part for part in (f"missing {missing}" if missing else "",
                                                       f"old names {renamed}" if renamed else "",
                                                       f"wrong kind {wrong}" if wrong else "") if part))
    return df


#: the metadata field of a result file that holds the digest of its rows (:func:`content_digest`)
DIGEST_KEY = "content_sha256"


def content_digest(df: pd.DataFrame) -> str:
    """SHA-256 of a frame's column names and values (row by row, pandas' value hash): what a result file holds,
    independent of how Parquet encodes it."""
    import hashlib

    h = hashlib.sha256(json.dumps([str(c) for c in df.columns]).encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()


def write_parquet(df: pd.DataFrame, path: str | Path, meta: dict) -> None:
    """Write ``df`` to ``path`` atomically with ``meta`` stored under the ``dpbench`` metadata key, together with
    the digest of its rows (``content_sha256``), which :func:`altered_result` checks."""
    table = pa.Table.from_pandas(df, preserve_index=False)
    existing = table.schema.metadata or {}
    # the digest of the rows as a reader gets them back, not of ``df``: Parquet does not keep every pandas detail
    # (a NaN in an object column of booleans reads back as None), and a digest of ``df`` would then fail on read
    # and get a correct file removed as "altered" at the next workflow start-up
    buf = io.BytesIO()
    pq.write_table(table, buf)
    meta = {**meta, DIGEST_KEY: content_digest(pd.read_parquet(io.BytesIO(buf.getvalue())))}
    table = table.replace_schema_metadata({**existing, b"dpbench": json.dumps(meta, default=str).encode()})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    atomic_write_bytes(Path(path), buf.getvalue())


def read_metadata(path: str | Path) -> dict:
    md = pq.read_schema(path).metadata or {}
    return json.loads(md.get(b"dpbench", b"{}"))


def parquet_is_intact(path: str | Path) -> bool:
    """Whether ``path`` has the structure of a complete Parquet file: the ``PAR1`` magic at both ends and a
    footer length that fits the file (a truncated or overwritten file fails; cheap: reads 12 bytes)."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            if size < 12:
                return False
            fh.seek(0)
            head = fh.read(4)
            fh.seek(size - 8)
            tail = fh.read(8)
    except OSError:
        return False
    footer = int.from_bytes(tail[:4], "little")
    return head == b"PAR1" and tail[4:] == b"PAR1" and footer + 12 <= size


def png_is_intact(path: str | Path) -> bool:
    """A complete PNG file: the signature at the start, the IEND chunk at the end (a truncated drawing lacks it)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - 12))
            tail = fh.read(12)
    except OSError:
        return False
    return head == b"\x89PNG\r\n\x1a\n" and tail[4:8] == b"IEND"


def remove_damaged_figures(figures_dir: str | Path) -> list[Path]:
    """Delete every ``*.png`` under ``figures_dir`` that is not :func:`png_is_intact`, with a warning naming it, so
    that the figure is a missing target and redrawn (run at workflow start-up, like the Parquet check)."""
    import logging

    removed = []
    for f in Path(figures_dir).rglob("*.png") if Path(figures_dir).is_dir() else []:
        if not f.name.startswith(".") and not png_is_intact(f):
            logging.getLogger("dpbench").warning("figure %s is damaged (not a complete PNG file); removing it so "
                                                 "that it is redrawn", f)
            f.unlink(missing_ok=True)
            removed.append(f)
    return removed


def altered_result(path: str | Path) -> str | None:
    """Why the rows of result file ``path`` no longer match the digest written with them, or None (they match,
    or the file predates digests). An unreadable file is reported too."""
    try:
        meta = read_metadata(path)
        if DIGEST_KEY not in meta:
            return None
        got = content_digest(pd.read_parquet(path))
    except Exception as exc:  # noqa: BLE001 - pyarrow raises its own error types for damaged files
        return f"unreadable ({type(exc).__name__}: {exc})"
    return None if got == meta[DIGEST_KEY] else "its rows fail their content digest (altered after it was written)"


#: the file (in the results folder) that remembers which result files were verified, by size and mtime, so that a
#: start-up reads only the files written or touched since
VERIFIED_STAMPS = ".verified-results.json"


def remove_damaged_results(results_dir: str | Path, skip: str | Path | None = None) -> list[Path]:
    """Delete every ``*.parquet`` under ``results_dir`` (but under ``skip``, e.g. the cache) that is not
    :func:`parquet_is_intact` or whose rows fail their content digest (:func:`altered_result`; checked once per
    size and mtime of the file), logging a warning naming it; returns them. Run at workflow start-up, so a
    damaged or altered result file is a missing target that Snakemake rebuilds (from the cell cache) instead of
    an error or a wrong figure later. Result files are written atomically, so a file another job is writing is
    never seen half-written here."""
    import logging

    import os

    root = Path(results_dir)
    skip = Path(skip).resolve() if skip else None
    stamps_path = root / VERIFIED_STAMPS
    try:
        stamps = json.loads(stamps_path.read_text())
        stamps = stamps if isinstance(stamps, dict) else {}
    except (OSError, ValueError):
        stamps = {}
    fresh: dict = {}
    removed = []
    for folder, subdirs, names in os.walk(root):
        if skip is not None:  # do not walk the (large) cache
            subdirs[:] = [d for d in subdirs if Path(folder, d).resolve() != skip]
        for name in names:
            f = Path(folder, name)
            if not name.endswith(".parquet") or name.startswith("."):
                continue
            why = None if parquet_is_intact(f) else "damaged (not a complete Parquet file)"
            if why is None:
                st = f.stat()
                stamp = [st.st_size, st.st_mtime_ns]
                rel = str(f.relative_to(root))
                if stamps.get(rel) != stamp:
                    reason = altered_result(f)
                    why = None if reason is None else f"altered: {reason}"
                if why is None:
                    fresh[rel] = stamp
            if why is not None:
                logging.getLogger("dpbench").warning("result file %s is %s; removing it so that it is rebuilt", f, why)
                f.unlink(missing_ok=True)
                removed.append(f)
    if fresh != stamps and root.is_dir():
        try:
            atomic_write_bytes(stamps_path, json.dumps(fresh, sort_keys=True).encode())
        except OSError:
            pass   # a read-only results folder: verify again next time
    return removed


def read_results(*paths: str | Path) -> pd.DataFrame:
    """Concatenate result files (or every ``*.parquet`` under a folder) into one frame."""
    files: list[Path] = []
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise FileNotFoundError(f"no result files at {p}")
        files.extend(sorted(p.rglob("*.parquet")) if p.is_dir() else [p])
    if not files:
        raise FileNotFoundError(f"no result files under {', '.join(map(str, paths))}")
    frames = []
    for f in files:
        try:
            frames.append(pd.read_parquet(f))
        except Exception as exc:  # pyarrow raises its own error types for damaged files
            raise ValueError(f"result file {f} is unreadable ({type(exc).__name__}: {exc}); delete it and rerun "
                             f"the workflow: it is rebuilt from the cell cache") from None
    return pd.concat(frames, ignore_index=True)


#: columns that never identify a figure point: the measurement, its repetition, seed and cost, and what an audit
#: cell's pilot chose (``pair``, ``pilot``: outcomes of the measurement, dpbench.audit.core.choose_pair)
MEASUREMENT = ("value", "rep", "seed", "runtime_s", "pair", "pilot")
#: names of columns and metrics that measure elapsed time or CPU (``cpu_s``, ``runtime_ratio``, ...): they vary
#: from run to run, so a timing column never identifies a figure point and a timing metric is never compared
TIMING = re.compile(r"(runtime|seconds|time|_s$|^cpu)", re.IGNORECASE)
#: columns that identify a point whenever a figure has them (the rest are found from the rows)
BASE_KEY = ("study", "figure", "series", "method", "dataset_variant", "metric", "x_name", "x")
def _max_rows_per_rep(df: pd.DataFrame, key: list[str]) -> int:
    if "rep" not in df:
        return int(df.groupby(key, dropna=False).size().max())
    return int(df.groupby([*key, "rep"], dropna=False).size().max())


def point_columns(df: pd.DataFrame) -> list[str]:
    """The columns that identify a point of one figure's rows: :data:`BASE_KEY` plus every other column that
    separates rows of one repetition (an axis: panel, attack, dataset, curve, …), but not the columns that only
    vary from repetition to repetition (a data-dependent noise scale, a tuned value): with those the points would
    split into single repetitions. Decided from the rows: a candidate column is kept when, without it, some
    repetition would hold two rows of one point."""
    base = [c for c in BASE_KEY if c in df]
    cands = [c for c in df.columns if c not in base and c not in MEASUREMENT and not TIMING.search(str(c))]
    key = list(base)
    # grow: add every column that varies inside a (key, rep) group — the rows at one repetition it separates
    while True:
        if not len(df) or _max_rows_per_rep(df, key) <= 1:
            break
        by = [*key, "rep"] if "rep" in df else key
        nun = df.groupby(by, dropna=False)[[c for c in cands if c not in key]].nunique(dropna=False).max()
        add = [c for c in nun.index if nun[c] > 1]
        if not add:
            break
        key += add
    # prune: among the columns whose removal still leaves one row per (point, rep), remove first the one that
    # splits points most (a per-repetition value makes every row its own point; an axis never can be removed);
    # on a tie the one with more distinct values in the figure (a measured number — the audit's threshold — next
    # to the few levels of an axis — its variant — that separate the same rows)
    def n_points(k):
        return int(df.groupby(k, dropna=False).ngroups)

    while True:
        extra = [c for c in key if c not in base]
        removable = [c for c in extra if _max_rows_per_rep(df, [k for k in key if k != c]) <= 1]
        if not removable:
            break
        now = n_points(key)
        c = max(removable, key=lambda c: (now - n_points([k for k in key if k != c]), df[c].nunique(dropna=False)))
        key = [k for k in key if k != c]
    return key


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Mean, std and count of ``value`` per figure point: per (study, figure), grouped by every column that
    separates the figure's points (:func:`point_columns`: series, metric, x, and e.g. ε, panel, attack), never
    pooling two curves of one figure."""
    by = [c for c in ("study", "figure") if c in df]
    groups = df.groupby(by, sort=False, dropna=False) if by else [((), df)]
    parts = [g.groupby(point_columns(g), dropna=False, sort=True)["value"].agg(["mean", "std", "count"]).reset_index()
             for _, g in groups]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["mean", "std", "count"])
