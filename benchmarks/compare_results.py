"""Are two runs' results the same? Compare every result Parquet of two results folders value for value.

    python benchmarks/compare_results.py RESULTS_A RESULTS_B

For each ``<study>/<figure>/*.parquet`` present in either folder: the rows are compared on the columns both files
have, except what legitimately differs between two runs of the same computation — wall-clock columns
(``runtime_s``, ``cpu_s``) and content keys that contain a code hash (``cell_key`` and ``*_hash`` columns change when code
moves, while the random streams do not: ``dpbench.rng.stream_key``). Rows whose metric is itself a time (the
runtime figures) are compared on everything but the value. Rows are matched after sorting on all compared
columns; values must be equal bit for bit (NaN equals NaN). Exit status 1 if any file differs or is missing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

SKIP_COLUMNS = {"runtime_s", "cpu_s", "cell_key"}
TIME_WORDS = ("second", "runtime", "time")


def _comparable(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    out = df[columns].copy()
    if "metric" in out and "value" in out:
        timed = out["metric"].astype(str).str.lower().str.contains("|".join(TIME_WORDS))
        out.loc[timed, "value"] = np.nan
    key = np.array(["\x1f".join(map(repr, t)) for t in out.itertuples(index=False)], dtype=object)
    return out.iloc[np.argsort(key, kind="stable")].reset_index(drop=True)


def compare_file(a: Path, b: Path) -> str | None:
    """None if equal, else a one-line reason."""
    da, db = pd.read_parquet(a), pd.read_parquet(b)
    cols = [c for c in da.columns if c in db.columns and c not in SKIP_COLUMNS and not c.endswith("_hash")]
    if len(da) != len(db):
        return f"{len(da)} vs {len(db)} rows"
    ca, cb = _comparable(da, cols), _comparable(db, cols)
    bad = []
    for c in cols:
        x, y = ca[c].to_numpy(), cb[c].to_numpy()
        if x.dtype.kind == "f" and y.dtype.kind == "f":
            same = (x == y) | (np.isnan(x) & np.isnan(y))
        else:
            same = np.array([(u == v) or (u != u and v != v) for u, v in zip(x.tolist(), y.tolist())])
        if not np.all(same):
            bad.append(f"{c} ({int((~same).sum())} rows)")
    return ", ".join(bad) or None


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    ra, rb = Path(argv[0]), Path(argv[1])
    files = sorted({p.relative_to(r) for r in (ra, rb) for p in r.glob("*/*/*.parquet")})
    differ = 0
    for rel in files:
        a, b = ra / rel, rb / rel
        if not (a.exists() and b.exists()):
            print(f"MISSING {rel}: only in {ra if a.exists() else rb}")
            differ += 1
            continue
        why = compare_file(a, b)
        print(f"{'same   ' if why is None else 'DIFFERS'} {rel}" + ("" if why is None else f": {why}"))
        differ += why is not None
    print(f"{len(files) - differ} of {len(files)} result files identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
