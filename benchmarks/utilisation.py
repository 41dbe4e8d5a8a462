"""Run a command and measure how well it keeps the machine's cores busy.

    python benchmarks/utilisation.py --out DIR [--cores N] [--every S] -- snakemake TARGET --cores N ...

Writes ``DIR/utilisation.tsv`` (one row every ``--every`` seconds: elapsed wall, the fraction of all cores busy
since the last sample from ``/proc/stat``, the 1-minute load) and ``DIR/utilisation.json``:

* ``wall_s``, ``cpu_s`` (user + system CPU of the command and every child it waited for, from ``wait4``),
  ``peak_rss_kb`` (the largest child's, as ``getrusage`` reports it), the exit status;
* ``utilisation`` = ``cpu_s / (cores x wall_s)``, the measure ``dpbench plan --cores N`` projects;
* ``machine_busy`` = the whole machine's busy fraction over the run (``/proc/stat``, all processes: on a shared
  machine this includes the neighbours' load, which is why the command's own ``cpu_s`` is the headline).

The sampler is a thread of this process; the command runs in its own process group, so a ``timeout`` around
this script (or Ctrl-C) stops the whole tree, and the numbers measured so far are still written.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path


def _cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies over all CPUs since boot, from the first line of /proc/stat."""
    with open("/proc/stat") as fh:
        parts = [int(x) for x in fh.readline().split()[1:]]
    idle = parts[3] + (parts[4] if len(parts) > 4 else 0)   # idle + iowait
    return sum(parts) - idle, sum(parts)


def _load1() -> float:
    with open("/proc/loadavg") as fh:
        return float(fh.read().split()[0])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path, help="folder for utilisation.tsv and utilisation.json")
    ap.add_argument("--cores", type=int, default=os.cpu_count(), help="the cores the command was given")
    ap.add_argument("--every", type=float, default=2.0, help="sampling interval in seconds")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = ap.parse_args(argv)
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("no command given (put it after --)")
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[float, float, float]] = []
    stop = threading.Event()
    t0 = time.monotonic()
    b0, n0 = _cpu_times()

    def sample() -> None:
        last = _cpu_times()
        while not stop.wait(args.every):
            now = _cpu_times()
            busy = (now[0] - last[0]) / max(1, now[1] - last[1])
            rows.append((time.monotonic() - t0, busy, _load1()))
            last = now

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    proc = subprocess.Popen(cmd, start_new_session=True)

    def forward(signum, _frame):   # stop the command's whole process group, then report what was measured
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass

    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, forward)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    stop.set()
    sampler.join()
    b1, n1 = _cpu_times()
    # wait4's rusage covers the command and the children it waited for (Snakemake waits for every job)
    cpu = ru.ru_utime + ru.ru_stime
    rc = os.waitstatus_to_exitcode(status)
    summary = {
        "command": cmd, "cores": args.cores, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
        "utilisation": round(cpu / (args.cores * wall), 4) if wall > 0 else None,
        "machine_busy": round((b1 - b0) / max(1, n1 - n0), 4), "cpu_count": os.cpu_count(),
        "peak_rss_kb": ru.ru_maxrss, "exit_status": rc,
    }
    with open(args.out / "utilisation.tsv", "w") as fh:
        fh.write("elapsed_s\tmachine_busy\tload1\n")
        fh.writelines(f"{t:.1f}\t{b:.3f}\t{ld:.2f}\n" for t, b, ld in rows)
    (args.out / "utilisation.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary), file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
