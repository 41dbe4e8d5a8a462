"""CPU a job spends re-opening a prepared cache entry (e.g. the memory-mapped training matrix of a vdm2020
problem) before its first cell: with the verification record (``.verified.json``: the hash of each file version
checked once, by the first job) against without it (every process hashes every file), alternated A B A B in
fresh processes.

    python benchmarks/cache_reopen.py [--mb 377] [--rounds 5]

377 MB is the float64 training matrix of the 60,000-digit problem (60,000 x 785); Fig. 4's N = 10^6 matrix is
6.3 GB.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import sys, time
from dpbench.data import cache
t = time.process_time()
assert cache.read_entry(sys.argv[1]) is not None
print(time.process_time() - t)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=377.0)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import numpy as np

    from dpbench.data import cache

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "entry"
        n = int(args.mb * 2**20 / 8)
        cache.open_entry(folder, lambda t, prev: np.save(t / "X_train.npy", np.arange(n, dtype=np.float64)) or {})

        def child() -> float:
            out = subprocess.run([sys.executable, "-c", CHILD, str(folder)], capture_output=True, text=True,
                                 check=True)
            return float(out.stdout.strip())

        child()  # the first job: hashes and records
        with_record, without = [], []
        for _ in range(args.rounds):
            with_record.append(child())
            (folder / cache.VERIFIED).unlink()
            without.append(child())   # hashes again (and records again)
        ratio = [a / b for a, b in zip(without, with_record)]
        print(f"entry of {args.mb:g} MB, {args.rounds} alternating rounds, load {os.getloadavg()[0]:.1f}")
        print(f"  with the record:    median {statistics.median(with_record) * 1e3:.1f} ms CPU "
              f"[{min(with_record) * 1e3:.1f}-{max(with_record) * 1e3:.1f}]")
        print(f"  without (re-hash):  median {statistics.median(without) * 1e3:.1f} ms CPU "
              f"[{min(without) * 1e3:.1f}-{max(without) * 1e3:.1f}]")
        print(f"  ratio without / with: median {statistics.median(ratio):.0f}x [{min(ratio):.0f}-{max(ratio):.0f}]")


if __name__ == "__main__":
    main()
