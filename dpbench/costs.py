"""Projected cost of the work: CPU-seconds per cell from measured unit costs, and the resources of a job.

The vdm2020 unit costs below were measured with ``benchmarks/vdm2020_unit_costs.py`` (single core, BLAS limited
to one thread, CPU seconds via ``time.process_time``) on the MNIST substitute at the default settings; costs at
other sizes are scaled from them (log-log in N between the measured sizes, linear in T, D and C). Studies with
their own ``run_series`` (wu2016, song2018, membership, estimation) have no per-cell model: a series of theirs
is costed at ``resources.default_cpu_minutes`` of the config, stated as an assumption wherever it is printed.
"""

from __future__ import annotations

import math

#: CPU-seconds per unit (``benchmarks/vdm2020_unit_costs.py``; a DP-SGD unit is one block of 10 runs).
#: Measured at N = 54,000 (the validation-split training set) unless the name says otherwise.
VDM2020_UNIT_COSTS = {
    "lp_N1e4": 4.0,
    "lp_54k": 25.0,
    "lp_N1e5": 50.0,
    "np_fit_54k": 25.0,
    "subsagg_T256_54k": 12.0,
    "dpsgd_block10_54k": 120.0,
    "mlp_dpsgd_run": 60.0,
    "mlp_subsagg_rep": 60.0,
    "mlp_non_private": 20.0,
}
#: Seconds a Snakemake job spends starting (imports, DAG check) before its first cell.
JOB_OVERHEAD_S = 5.0
_N_REF = 54_000


def _loglog(x: float, pts: list[tuple[float, float]]) -> float:
    pts = sorted(pts)
    lx = math.log(x)
    if lx <= math.log(pts[0][0]):
        (x0, y0), (x1, y1) = pts[0], pts[1]
    elif lx >= math.log(pts[-1][0]):
        (x0, y0), (x1, y1) = pts[-2], pts[-1]
    else:
        i = next(i for i in range(1, len(pts)) if lx <= math.log(pts[i][0]))
        (x0, y0), (x1, y1) = pts[i - 1], pts[i]
    slope = (math.log(y1) - math.log(y0)) / (math.log(x1) - math.log(x0))
    return math.exp(math.log(y0) + slope * (lx - math.log(x0)))


def vdm2020_n(cfg: dict, problem: dict, split: str) -> float:
    """Training-set size of a vdm2020 problem (the validation split trains on 1 - validation_fraction)."""
    n = problem.get("n_train") or cfg.get("n_train") or 60_000
    if split == "validation":
        n = n * (1 - cfg["cross_validation"]["validation_fraction"])
    return float(n)


def vdm2020_cell_cpu_s(cfg: dict, series: str, problem: dict, method: dict, split: str) -> tuple[float, float]:
    """Projected (fixed, per-cell) CPU-seconds of vdm2020 cells: ``fixed`` is paid once per group of cells that
    share a trained model (the non-private fit behind model / prediction sensitivity), ``per cell`` for every
    cell (a DP-SGD cell: a tenth of its block of 10 runs)."""
    u = VDM2020_UNIT_COSTS
    n = vdm2020_n(cfg, problem, split)
    lp = _loglog(n, [(1e4, u["lp_N1e4"]), (_N_REF, u["lp_54k"]), (1e5, u["lp_N1e5"])])
    shape = 1.0
    if "pca_dim" in problem:
        shape *= max(0.1, problem["pca_dim"] / 785)
    if "n_classes" in problem:
        shape *= problem["n_classes"] / 10
    if series == "loss_perturbation":
        return 0.0, lp * shape
    if series in ("model_sensitivity", "prediction_sensitivity", "non_private"):
        fit = lp * u["np_fit_54k"] / u["lp_54k"] * shape
        return fit, 0.01 * fit
    if series == "subsample_aggregate":
        t = method.get("n_models", cfg["subsagg_models"])
        return 0.0, u["subsagg_T256_54k"] * (n / _N_REF) * (t / 256) ** 0.5 * shape
    if series == "dpsgd":
        return 0.0, u["dpsgd_block10_54k"] / 10 * (n / _N_REF) * shape
    if series == "dpsgd_mlp":
        return 0.0, u["mlp_dpsgd_run"] * (n / _N_REF)
    if series == "subsample_aggregate_mlp":
        return 0.0, u["mlp_subsagg_rep"] * (n / _N_REF)
    if series == "non_private_mlp":
        return u["mlp_non_private"] * (n / _N_REF), 0.0
    return 0.0, lp


def default_series_cpu_s(config: dict) -> float:
    return 60.0 * float(config.get("resources", {}).get("default_cpu_minutes", 10))


def job_resources(config: dict, cpu_s: float, threads: int, *, mem_mb: int, name: str) -> dict:
    """Snakemake resources of a job of ``cpu_s`` projected CPU-seconds on ``threads`` threads:
    ``runtime`` (minutes) = projected wall time × ``resources.runtime_factor``, at least
    ``resources.min_runtime``; ``mem_mb`` as given. ``resources.overrides`` (glob on
    ``study/figure/series[/shard]`` -> {mem_mb, runtime}) wins."""
    import fnmatch

    rc = config.get("resources", {})
    wall_min = (cpu_s / max(1, threads) + JOB_OVERHEAD_S) / 60
    out = {"mem_mb": int(mem_mb),
           "runtime": int(max(rc.get("min_runtime", 10), math.ceil(wall_min * rc.get("runtime_factor", 3.0))))}
    for pattern, values in (rc.get("overrides") or {}).items():
        if fnmatch.fnmatchcase(name, pattern):
            out.update({k: int(v) for k, v in values.items()})
    return out


def vdm2020_mem_mb(cfg: dict, problem: dict, threads: int) -> int:
    """Memory of a vdm2020 job: the memory-mapped float64 training matrix (counted once: the workers share
    the pages), one working copy per worker for the optimisers, plus the interpreter."""
    n = vdm2020_n(cfg, problem, "test")
    dim = problem.get("pca_dim", 784) + 1
    matrix_mb = n * dim * 8 / 2**20
    return int(800 + 300 * threads + matrix_mb * (1 + 0.5 * threads))
