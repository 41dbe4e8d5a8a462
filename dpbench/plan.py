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
from dpbench.progress import _h, _wall, cpu_text
from dpbench.studies import STUDIES


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
    shared: dict = field(default_factory=dict)  # identity of a cell / model / fit -> CPU-s (shards.Shard.shared)
    shared_saved_s: float = 0.0  # CPU-s of the repeats of those identities within the figure (not in cpu_s)


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
            for s in sp.all:   # what another series or shard of this figure already computes is not paid again
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


@dataclass
class Job:
    name: str
    cpu_s: float
    threads: int = 1
    after: tuple = ()     # names of the jobs it waits for
    output: str | None = None   # the file it writes (its first output in the Snakefile's rules); None for ``all``


def dag(config: dict, pays=None) -> list[Job]:
    """The run's jobs as Snakemake will schedule them, with projected CPU-seconds and threads: per study its
    dataset job; per series its tuning shards, final shards (after every tuning shard) and gather (sharded), or
    one series job (or one job per figure with ``group_series``); per figure the plot; per study the anchor
    checks after its figures; the claims page after every study.

    Work shared by several jobs (a model, a cell) is charged to the first of them in the config's order;
    ``pays(output)`` (default: every job) says whether a job's work is done at all — in the run or before it, its
    cells then in the cache. A job that does not pay (a figure the run neither asks for nor has) leaves the shared
    work to the next job that needs it."""
    jobs: list[Job] = []
    res, fig_dir = config["results_dir"], config["figures_dir"]
    studies = {s for s, _ in W.figures(config)}
    for st in sorted(studies):
        jobs.append(Job(f"{st}/dataset", costs.dataset_cpu_s(config, st), output=f"{res}/{st}/dataset.json"))
    figs_of: dict = {}
    extra: set = set()
    paid: set = set()   # identities (shards.Shard.shared) an earlier shard of the study computes: read from the cache

    def unpaid(st, shard, output):
        cost = shard.cpu_s - sum(c for k, c in shard.shared.items() if (st, k) in paid)
        if pays is None or pays(output):
            paid.update((st, k) for k in shard.shared)
        return max(cost, 1.0)

    for st, fig in W.figures(config):
        named = tuple(f"{st}/data/{n}" for n in STUDIES[st].figure_data(config, fig))
        for n, path in zip(STUDIES[st].figure_data(config, fig), W.figure_data_files(config, st, fig)):
            if (st, n) not in extra:
                extra.add((st, n))
                jobs.append(Job(f"{st}/data/{n}", costs.figure_data_cpu_s(config, st, n), W.FIGURE_DATA_THREADS,
                                (f"{st}/dataset",), path))   # the schedule caps its threads at the cores
        data = (f"{st}/dataset",) + named
        names = W.series_names(config, st, fig)
        files = W.series_files(config, st, fig)
        outs = []
        if config.get("group_series"):
            fp = figure_plan(config, st, fig)   # its series together, what an earlier figure computed not again
            cpu = fp.cpu_s - sum(c for k, c in fp.shared.items() if (st, k) in paid)
            if pays is None or pays(files[0]):
                paid.update((st, k) for k in fp.shared)
            jobs.append(Job(f"{st}/{fig}/all-series", max(cpu, 1.0), W.figure_threads(config, st, fig), data,
                            files[0]))
            outs.append(jobs[-1].name)
        else:
            for m, path in zip(names, files):
                if shards.enabled(config, st):
                    sp = shards.plan(config, st, fig, m)
                    where = shards.shard_dir(config, st, fig, m)
                    def shard_job(s, after, m=m, where=where):
                        out = f"{where}/{s.name}.parquet"
                        return Job(f"{st}/{fig}/{m}/{s.name}", unpaid(st, s, out),
                                   W.shard_threads(config, st, fig, m, s.name), after, out)

                    tun = [shard_job(s, data) for s in sp.tuning]
                    fin = [shard_job(s, data + tuple(j.name for j in tun)) for s in sp.final]
                    jobs += tun + fin
                    jobs.append(Job(f"{st}/{fig}/{m}", 1.0, 1, tuple(j.name for j in fin) or data, path))
                else:
                    jobs.append(Job(f"{st}/{fig}/{m}", W.series_cpu_s(config, st, fig, m),
                                    W.series_threads(config, st, fig, m), data, path))
                outs.append(jobs[-1].name)
        jobs.append(Job(f"{st}/{fig}.png", costs.PLOT_CPU_S, 1, tuple(outs), f"{fig_dir}/{st}/{fig}.png"))
        figs_of.setdefault(st, []).append(jobs[-1].name)
    for (st, figs), anchors in zip(figs_of.items(), W.claims_inputs(config)):
        jobs.append(Job(f"{st}/anchors", costs.PLOT_CPU_S, 1, tuple(figs), anchors))
        jobs.append(Job(f"{st}/gallery", costs.PLOT_CPU_S, 1, (f"{st}/anchors",) + tuple(figs),
                        f"{fig_dir}/{st}/index.html"))
        if W.tight_gain_figures(config, st):   # reads the series files of its figures (here: after the figures)
            jobs.append(Job(f"{st}/tight_gain", costs.PLOT_CPU_S, 1, tuple(figs), f"{fig_dir}/{st}/tight_gain.png"))
    jobs.append(Job("privacy_table", costs.PLOT_CPU_S, 1, (), f"{fig_dir}/privacy_as_labelled.html"))
    jobs.append(Job("claims", costs.PLOT_CPU_S, 1, tuple(f"{st}/anchors" for st in figs_of), f"{res}/claims.parquet"))
    # Snakemake's target rule (a local rule: no work, counted in its job total)
    jobs.append(Job("all", 0.0, 1, tuple(j.name for j in jobs if j.name == "claims" or j.name == "privacy_table"
                                         or j.name.endswith(("/gallery", "/tight_gain")))))
    return jobs


@dataclass
class Schedule:
    cores: int
    wall_s: float
    cpu_s: float
    critical_path: list[str]
    critical_s: float

    @property
    def utilisation(self) -> float:
        """CPU-seconds ÷ (cores × wall): the share of the machine the run keeps busy."""
        return self.cpu_s / (self.cores * self.wall_s) if self.wall_s else 0.0


def schedule(jobs: list[Job], cores: int) -> Schedule:
    """Simulate Snakemake on ``cores`` cores: whenever cores are free, start the ready job (all it waits for
    done) with the longest chain of work after it (critical path first), capping its threads at ``cores``; a
    job holds its threads for ``cpu_s / threads`` plus the start-up. Returns the wall time, the utilisation and
    the critical path (the longest chain of dependent jobs, in wall seconds)."""
    import heapq

    by = {j.name: j for j in jobs}
    kids: dict = {j.name: [] for j in jobs}
    for j in jobs:
        for a in j.after:
            kids[a].append(j.name)
    wall = {n: by[n].cpu_s / min(by[n].threads, cores) + costs.JOB_OVERHEAD_S for n in by}
    tail: dict = {}
    for n in reversed(_topo(jobs)):   # longest chain from n to the end
        tail[n] = wall[n] + max((tail[k] for k in kids[n]), default=0.0)
    waiting = {n: len(by[n].after) for n in by}
    ready = [(-tail[n], n) for n in by if waiting[n] == 0]
    heapq.heapify(ready)
    running: list = []   # (end time, name)
    free, now, done = cores, 0.0, 0
    while done < len(jobs):
        while ready and min(by[ready[0][1]].threads, cores) <= free:   # the longest chain first, while it fits
            _, n = heapq.heappop(ready)
            free -= min(by[n].threads, cores)
            heapq.heappush(running, (now + wall[n], n))
        end, n = heapq.heappop(running)
        now = end
        free += min(by[n].threads, cores)
        done += 1
        for k in kids[n]:
            waiting[k] -= 1
            if waiting[k] == 0:
                heapq.heappush(ready, (-tail[k], k))
    start = max((n for n in by if not by[n].after), key=lambda n: tail[n], default=None)
    path = []
    while start is not None:
        path.append(start)
        start = max(kids[start], key=lambda k: tail[k], default=None)
    cpu = sum(j.cpu_s + costs.JOB_OVERHEAD_S * min(j.threads, cores) for j in jobs)
    return Schedule(cores, now, cpu, path, tail[path[0]] if path else 0.0)


def _topo(jobs: list[Job]) -> list[str]:
    seen, order = set(), []
    by = {j.name: j for j in jobs}

    def visit(n):
        if n in seen:
            return
        seen.add(n)
        for a in by[n].after:
            visit(a)
        order.append(n)

    for j in jobs:
        visit(j.name)
    return order


def plan(config: dict) -> list[FigurePlan]:
    return [figure_plan(config, s, f) for s, f in W.figures(config)]


def measured_cpu_s(results_dir, study: str, figure: str) -> tuple[float, int, int]:
    """(CPU-seconds, files with a cost, files without) of the jobs that wrote a figure's result files (series,
    shards, grouped figure) under ``results_dir``: the ``job_cpu_s`` each job stores in its Parquet metadata
    (:func:`dpbench.results.process_cost`; the job process and the workers it has reaped — a multi-threaded
    job's loky workers are not counted, so run with ``n_jobs: 1`` to measure)."""
    from pathlib import Path

    from dpbench.results import read_metadata

    cpu, have, lack = 0.0, 0, 0
    for f in sorted((Path(results_dir) / study / figure).rglob("*.parquet")):
        try:
            c = read_metadata(f).get("job_cpu_s")
        except Exception:  # noqa: BLE001 - a damaged file is rebuilt by the workflow; not counted here
            c = None
        if c is None:
            lack += 1
        else:
            cpu, have = cpu + float(c), have + 1
    return cpu, have, lack


def report(config: dict, cores: int, measured: str | None = None) -> str:
    rows = plan(config)
    lines = [f"{'study/figure':34s} {'jobs':>6s} {'cells':>9s} {'CPU-h':>8s} {'+CPU-h':>7s} {'largest job':>12s} "
             f"{'unsharded':>10s}" + ("   measured CPU-h (ratio to +CPU-h)" if measured else ""), "-" * 92]
    by_study: dict = {}
    seen: dict = {}
    saved = 0.0   # repeats across figures of a study
    for r in rows:
        # +CPU-h: what the figure adds after the study's earlier figures (config order), whose cells, models and
        # fits it reads from the cache; CPU-h: the figure alone
        repeat = sum(cost for key, cost in r.shared.items() if (r.study, key) in seen)
        seen.update({(r.study, key): cost for key, cost in r.shared.items()})
        saved += repeat
        inc = r.cpu_s - repeat
        cells = f"{r.cells:9d}" if r.cells is not None else f"{'-':>9s}"
        flag = "" if r.modelled else " +" if r.measured else " *"
        line = (f"{r.study + '/' + r.figure:34s} {r.jobs:6d} {cells} {_h(r.cpu_s):>8s} {_h(inc):>7s} "
                f"{r.largest_job_s / 60:9.1f} min {r.unsharded_largest_s / 60:6.1f} min{flag}")
        if measured:
            m_cpu, have, lack = measured_cpu_s(measured, r.study, r.figure)
            line += (f"   {'-' if not have else _h(m_cpu)}" + (f" ({m_cpu / inc:.2f}x)" if have and inc else "")
                     + (f" [{lack} file(s) without a cost]" if lack else ""))
        lines.append(line)
        agg = by_study.setdefault(r.study, [0, 0, 0.0, 0.0])
        agg[0] += r.jobs
        agg[1] += r.cells or 0
        agg[2] += inc
        agg[3] = max(agg[3], r.largest_job_s)
    lines.append("-" * 92)
    for st, (j, c, cpu, big) in by_study.items():
        lines.append(f"{st:34s} {j:6d} {c if c else '-':>9} {'':>8s} {_h(cpu):>7s} {big / 60:9.1f} min")
    graph = dag(config)
    jobs = len(graph)   # as Snakemake counts them (its "total")
    series_cpu = sum(r.cpu_s for r in rows) - saved
    cpu = sum(j.cpu_s for j in graph)   # every job: the series and the data preparation, plots and checks
    largest = max(r.largest_job_s for r in rows) if rows else 0.0
    unsharded = max(r.unsharded_largest_s for r in rows) if rows else 0.0
    sh = config.get("sharding") or {}
    mode = ("one job per figure (group_series)" if config.get("group_series") else
            f"sharded, at most ~{sh.get('max_cpu_minutes', 20):g} CPU-min per shard" if sh.get("enabled")
            else "one job per series (unsharded)")
    sched = {n: schedule(graph, n) for n in sorted({cores, 2, 16, 64})}
    here = sched[cores]
    lines += ["", f"total: {jobs} jobs ({mode}), {_h(cpu)} CPU-hours ({_h(series_cpu)} in the series above, the "
                  f"rest data preparation, plots and checks); largest job {largest / 60:.1f} CPU-min "
                  f"(unsharded {unsharded / 60:.1f} CPU-min)",
              f"projected wall time on {cores} cores: {_wall(here.wall_s)}, utilisation {here.utilisation:.0%} "
              f"(CPU-seconds / (cores x wall), Snakemake's scheduling simulated job by job)",
              "  on " + ", ".join(f"{n} cores: {_wall(s.wall_s)} at {s.utilisation:.0%}" for n, s in sched.items()
                                  if n != cores),
              f"critical path ({_wall(here.critical_s)}, no number of cores finishes sooner; smaller shards, "
              f"sharding.max_cpu_minutes, shorten it): " + " -> ".join(here.critical_path)]
    if seen:
        lines.append(f"cells, models and fits shared by several series or figures (the cache is content-keyed: computed "
                     f"once, read by the others) counted once: figure rows once per figure, the study and total rows "
                     f"once per study, in the config's figure order "
                     f"({_h(saved + sum(r.shared_saved_s for r in rows))} CPU-h less than once per series and figure)")
    if any(not r.modelled and r.measured for r in rows):
        lines.append("+ no cell cost model for this study: the figure's CPU measured on the default grid "
                     "(dpbench/costs.py MEASURED_FIGURE_CPU_S), scaled by its grid size against config.yaml and "
                     "shared evenly by its series (the audit: its trials times the measured CPU per trial of each "
                     "method, AUDIT_CPU_S_PER_TRIAL; older study totals: STUDY_SERIES_CPU_MIN)")
    if any(not r.modelled and not r.measured for r in rows):
        lines.append(f"* no cell cost model for this study: each series counted as "
                     f"{costs.default_series_cpu_s(config) / 60:g} CPU-min (resources.default_cpu_minutes)")
    lines.append("Unit costs: dpbench/costs.py (measured single-core CPU seconds; scaled in N, T, D, C).")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------
# The projection of the jobs a Snakemake run is about to start, and the progress as they finish
# ---------------------------------------------------------------------------------------------------------

def projection_before_run(config: dict, to_run: set[str], cores: int) -> tuple[str, dict]:
    """The projection of the jobs of a run about to start: ``to_run`` the output files of the jobs Snakemake will
    run (paths as in the rules). Returns (one printed paragraph, the per-job record the jobs' progress lines
    read: output -> projected CPU-s, and the cores)."""
    import os

    norm = {os.path.normpath(p) for p in to_run}
    # shared work is charged to the first job that does it: one of this run or one whose output exists (its cells
    # are in the cache), not to a job of a figure this run does not ask for
    jobs = dag(config, pays=lambda out: os.path.normpath(out) in norm or os.path.exists(out))
    chosen = {j.name for j in jobs if j.output is not None and os.path.normpath(j.output) in norm}
    sub = [Job(j.name, j.cpu_s, j.threads, tuple(a for a in j.after if a in chosen), j.output)
           for j in jobs if j.name in chosen]
    cores = max(1, int(cores or os.cpu_count() or 1))
    record = {"cores": cores, "jobs": {os.path.normpath(j.output): j.cpu_s for j in sub}}
    if not sub:
        return "", record
    s = schedule(sub, cores)
    cpu = sum(j.cpu_s for j in sub)
    big = max(sub, key=lambda j: j.cpu_s)
    text = (f"dpbench plan for this run: {len(sub)} jobs, {cpu_text(cpu)} projected, about {_wall(s.wall_s)} on "
            f"{cores} core(s) ({s.utilisation:.0%} busy); largest job {big.name} {big.cpu_s / 60:.1f} CPU-min. "
            f"Progress lines with the projected time left follow as jobs finish (projected on a quiet machine: "
            f"`dpbench plan`; a loaded one takes longer).")
    return text, record
