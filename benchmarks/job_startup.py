"""CPU a vdm2020 shard job spends before its first cell: interpreter, imports (``dpbench.jobs``, the workflow,
its own study), reading the validated config, registering plugins, and opening both prepared problems (test and
validation split) from the cache — measured in fresh processes, median of ``--rounds``.

    python benchmarks/job_startup.py [--configfile FILE ...] [--rounds 5]

The first round prepares the problems if the cache lacks them (not counted).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time, resource
t0 = time.process_time()
import dpbench.jobs
from dpbench import workflow
from dpbench.studies.extensions import activate
config = json.load(open(sys.argv[1]))
activate(config)
st = workflow.STUDIES["vdm2020"]
t1 = time.process_time()
cfg = config["studies"]["vdm2020"]
st.problem(config, cfg, "test"); st.problem(config, cfg, "validation")
t2 = time.process_time()
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"imports": t1 - t0, "problems": t2 - t1, "total": ru.ru_utime + ru.ru_stime}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configfile", action="append", default=[])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    from dpbench.config import DEFAULT_CONFIG_PATH
    from dpbench.studies import load_config

    config = load_config(DEFAULT_CONFIG_PATH, *args.configfile)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(config, fh)
    run = lambda: json.loads(subprocess.run([sys.executable, "-c", CHILD, fh.name], capture_output=True,  # noqa: E731
                                            text=True, check=True).stdout.strip().splitlines()[-1])
    run()  # prepares the problems if needed
    got = [run() for _ in range(args.rounds)]
    os.unlink(fh.name)
    print(f"vdm2020 job start-up, {args.rounds} fresh processes, load {os.getloadavg()[0]:.1f} "
          f"(N = {config['studies']['vdm2020'].get('n_train') or 60000}):")
    for k in ("imports", "problems", "total"):
        v = [g[k] for g in got]
        print(f"  {k:9s} median {statistics.median(v):.2f} CPU-s [{min(v):.2f}-{max(v):.2f}]")


if __name__ == "__main__":
    main()
