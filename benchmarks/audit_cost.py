"""Cost of the whole default audit: every method's series of the audit study (all claimed ε, the correct
implementation and every twin, the seeds of the config) through ``dpbench.studies.audit.run_series`` with
``--jobs`` worker processes, as the workflow runs it. Prints per method the wall time, the summed wall time of its
cells (``runtime_s``) and their CPU seconds (``cpu_s``, one thread each), then the totals and the load average.

    python benchmarks/audit_cost.py [--config config.yaml ...] [--jobs 2] [--out rows.parquet]"""

from __future__ import annotations

import argparse
import os
import resource
import time


def main(argv=None) -> int:
    import pandas as pd

    from dpbench.config import DEFAULT_CONFIG_PATH
    from dpbench.studies import audit as A
    from dpbench.studies import load_config

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", nargs="+", default=[str(DEFAULT_CONFIG_PATH)])
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    config = load_config(*a.config)
    cfg = config["studies"]["audit"]
    frames = []
    t_all = time.perf_counter()
    for m in A.series(cfg, "fig_audit"):
        t0 = time.perf_counter()
        df = A.run_series(config, "fig_audit", m, n_jobs=a.jobs)
        frames.append(df)
        print(f"{m:26s} cells {len(df):3d}  wall {time.perf_counter() - t0:7.1f} s  cell wall "
              f"{df['runtime_s'].sum():7.1f} s  cell CPU {df['cpu_s'].sum():7.1f} s  load {os.getloadavg()[0]:.1f}",
              flush=True)
    wall = time.perf_counter() - t_all
    df = pd.concat(frames, ignore_index=True)
    ru = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum(r.ru_utime + r.ru_stime for r in ru)
    try:                                          # joblib's worker processes still alive (not yet reaped)
        import psutil

        cpu += sum(c.cpu_times().user + c.cpu_times().system for c in psutil.Process().children(recursive=True))
    except Exception:  # noqa: BLE001 - psutil missing or a worker gone: the reaped ones are counted above
        pass
    print(f"TOTAL cells {len(df)}  wall {wall:.0f} s  cell wall {df['runtime_s'].sum():.0f} s  cell CPU "
          f"{df['cpu_s'].sum():.0f} s  process CPU "
          f"(self + workers) {cpu:.0f} s  load {os.getloadavg()}", flush=True)
    if a.out:
        df.to_parquet(a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
