"""``dpbench plan``: what a run will cost before it starts — jobs, cells, projected CPU-hours and wall time.

Costs come from the measured unit costs in :mod:`dpbench.costs` (vdm2020) or, for studies without a cell cost
model, ``resources.default_cpu_minutes`` per series (an assumption, flagged ``*``). The wall time on ``cores``
cores is the larger of the total CPU time over the cores and the longest chain of dependent jobs (a series'
largest tuning shard, then its largest final shard), plus a start-up of a few seconds per job.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dpbench import costs, shards
from dpbench import workflow as W


@dataclass
class FigurePlan:
    study: str
    figure: str
    jobs: int             # compute jobs (series / shards / grouped figure) plus the gather and plot jobs
    cells: int | None     # None: not modelled (study with its own run_series)
    cpu_s: float
    largest_job_s: float
    unsharded_largest_s: float
    chain_s: float
    modelled: bool        # cells costed from unit costs
    measured: bool        # else: from a measured study total (False: resources.default_cpu_minutes)
    shared: dict = field(default_factory=dict)  # artefacts shared across series (key -> CPU-s), counted once here
    shared_saved_s: float = 0.0  # CPU-s of the repeats of those artefacts within the figure (not in cpu_s)


def figure_plan(config: dict, study: str, figure: str) -> FigurePlan:
    names = W.series_names(config, study, figure)
    modelled = shards.shardable(config, study)
    measured = modelled
    jobs = 1  # the plot
    cells, cpu, largest, unsharded, chain = 0, 0.0, 0.0, 0.0, 0.0
    shared: dict = {}
    saved = 0.0
    for m in names:
        if modelled:
            sp = shards.plan(config, study, figure, m)
            s_cpu = sum(s.cpu_s for s in sp.all)
            for s in sp.all:   # a fit another series of this figure already paid for is not paid again
                for key, cost in s.shared.items():
                    saved += cost if key in shared else 0.0
                    shared.setdefault(key, cost)
            cells += sum(s.cells for s in sp.all)
            if shards.enabled(config, study):
                jobs += len(sp.all) + 1
                largest = max([largest] + [s.cpu_s for s in sp.all])
                chain = max(chain, max([0.0] + [s.cpu_s for s in sp.tuning]) + max([0.0] + [s.cpu_s for s in sp.final]))
            else:
                jobs += 0 if config.get("group_series") else 1
                largest = max(largest, s_cpu)
        else:
            s_cpu, measured = costs.study_series_cpu_s(config, study, figure, m)
            jobs += 0 if config.get("group_series") else 1
            largest = max(largest, s_cpu)
        cpu += s_cpu
        unsharded = max(unsharded, s_cpu)
    if config.get("group_series"):
        jobs += 1
        largest = unsharded = cpu
    threads = W.series_threads(config, study, figure, names[0]) if names else 1
    if not chain:
        chain = largest / threads
    return FigurePlan(study, figure, jobs, cells if modelled else None, cpu - saved, largest, unsharded, chain, modelled,
                      measured, shared, saved)


def plan(config: dict) -> list[FigurePlan]:
    return [figure_plan(config, s, f) for s, f in W.figures(config)]


def _h(s: float) -> str:
    return f"{s / 3600:.2f}"


def report(config: dict, cores: int) -> str:
    rows = plan(config)
    n_studies = len(config["studies"])
    other_jobs = 2 * n_studies + 1  # dataset + anchors per study, the privacy table
    lines = [f"{'study/figure':34s} {'jobs':>6s} {'cells':>9s} {'CPU-h':>8s} {'largest job':>12s} "
             f"{'unsharded':>10s}", "-" * 84]
    by_study: dict = {}
    seen: dict = {}
    saved = 0.0   # repeats across figures of a study
    for r in rows:
        cells = f"{r.cells:9d}" if r.cells is not None else f"{'-':>9s}"
        flag = "" if r.modelled else " +" if r.measured else " *"
        lines.append(f"{r.study + '/' + r.figure:34s} {r.jobs:6d} {cells} {_h(r.cpu_s):>8s} "
                     f"{r.largest_job_s / 60:9.1f} min {r.unsharded_largest_s / 60:6.1f} min{flag}")
        agg = by_study.setdefault(r.study, [0, 0, 0.0, 0.0])
        agg[0] += r.jobs
        agg[1] += r.cells or 0
        agg[2] += r.cpu_s
        for key, cost in r.shared.items():   # paid by an earlier figure of the study (the cache is shared)
            if (r.study, key) in seen:
                agg[2] -= cost
                saved += cost
            seen[(r.study, key)] = cost
        agg[3] = max(agg[3], r.largest_job_s)
    lines.append("-" * 84)
    for st, (j, c, cpu, big) in by_study.items():
        lines.append(f"{st:34s} {j:6d} {c if c else '-':>9} {_h(cpu):>8s} {big / 60:9.1f} min")
    jobs = sum(r.jobs for r in rows) + other_jobs
    cpu = sum(r.cpu_s for r in rows) - saved
    chain = max(r.chain_s for r in rows) if rows else 0.0
    wall = max(cpu / cores, chain) + jobs * costs.JOB_OVERHEAD_S / cores
    largest = max(r.largest_job_s for r in rows) if rows else 0.0
    unsharded = max(r.unsharded_largest_s for r in rows) if rows else 0.0
    sh = config.get("sharding") or {}
    mode = ("one job per figure (group_series)" if config.get("group_series") else
            f"sharded, at most ~{sh.get('max_cpu_minutes', 20):g} CPU-min per shard" if sh.get("enabled")
            else "one job per series (unsharded)")
    lines += ["", f"total: {jobs} jobs ({mode}), {_h(cpu)} CPU-hours; largest job {largest / 60:.1f} CPU-min "
                  f"(unsharded {unsharded / 60:.1f} CPU-min)",
              f"projected wall time on {cores} cores: {wall / 3600:.1f} h "
              f"(max of CPU-hours / cores and the longest dependent chain, {chain / 3600:.2f} h)"]
    if seen:
        lines.append(f"shared non-private fits (tuning phase) counted once per study: {len(seen)} fits; figure rows "
                     f"count a fit once per figure, the study and total rows once "
                     f"({_h(saved + sum(r.shared_saved_s for r in rows))} CPU-h less than once per series)")
    if any(not r.modelled and r.measured for r in rows):
        lines.append("+ no cell cost model for this study: series costed from a measured study total "
                     "(dpbench/costs.py STUDY_SERIES_CPU_MIN; the audit: its trials times the measured CPU per "
                     "trial of each method, AUDIT_CPU_S_PER_TRIAL)")
    if any(not r.modelled and not r.measured for r in rows):
        lines.append(f"* no cell cost model for this study: each series counted as "
                     f"{costs.default_series_cpu_s(config) / 60:g} CPU-min (resources.default_cpu_minutes)")
    lines.append("Unit costs: dpbench/costs.py (measured single-core CPU seconds; scaled in N, T, D, C).")
    return "\n".join(lines)
