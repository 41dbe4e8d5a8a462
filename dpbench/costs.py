"""Projected cost of the work: CPU-seconds per cell from measured unit costs, and the resources of a job.

The vdm2020 unit costs below were measured with ``benchmarks/vdm2020_unit_costs.py`` (single core, BLAS limited
to one thread, CPU seconds via ``time.process_time``) on the MNIST substitute at the default settings; costs at
other sizes are scaled from them (log-log in N between the measured sizes, linear in T, D and C). Studies with
their own ``run_series`` (wu2016, song2018, membership, estimation) have no per-cell model: a series of theirs
is costed at ``resources.default_cpu_minutes`` of the config, stated as an assumption wherever it is printed.
"""

from __future__ import annotations

import math

#: Per-cell cost of the lockstep loss-perturbation solve (groups of 10 repetitions, float32 iterations with a
#: float64 certificate, the default) relative to the one-cell scipy solve: median of the alternating rounds of
#: ``benchmarks/lockstep_lbfgs.py`` at N = 60,000 (3.13x, range 3.09-3.67, 1-min load 2.6-3.2 on the shared 2
#: cores; float64 lockstep 2.08x in the same run); applied at every N (an assumption: the GEMM share of the work
#: grows with N, so the ratio should not fall).
LP_LOCKSTEP_SPEEDUP = 3.13
#: Per-repetition cost of subsample-and-aggregate's member fits in θ-space relative to the fits in the row space
#: of each part (``fit_softmax_many(method="row_space")``): median of the alternating rounds of
#: ``benchmarks/lockstep_lbfgs.py`` (T = 256 parts of 234 rows: 2.07x, range 2.07-2.08, load 3.0). Applied where the parts have at most
#: SA_ROW_SPACE_MAX_ROWS rows (measured at 234; smaller parts are assumed to gain at least as much); parts with
#: more rows — Fig. 4 at N ≥ 10⁵, T = 8 — keep the θ-space cost (the row-space solve is only used up to D/2
#: rows, and its gain shrinks as the parts grow).
SA_ROW_SPACE_SPEEDUP = 2.07
SA_ROW_SPACE_MAX_ROWS = 256

#: CPU-seconds per unit (``benchmarks/vdm2020_unit_costs.py``; a DP-SGD unit is one block of 10 runs).
#: Measured on this machine (2 shared cores, under load) at N = 60,000 unless the name says otherwise.
VDM2020_UNIT_COSTS = {
    # loss perturbation, one cell (marginal: after the shared warm start): the one-cell scipy costs measured by
    # benchmarks/vdm2020_unit_costs.py (1.49 s at N = 10,000; 16.81 s at 60,000; 34.4 s at 100,000) divided by
    # LP_LOCKSTEP_SPEEDUP; N = 10^6 is extrapolated log-log
    "lp_N1e4": 1.49 / LP_LOCKSTEP_SPEEDUP,
    "lp_54k": 16.81 / LP_LOCKSTEP_SPEEDUP,   # N = 60,000 (the test split of the default problem)
    "lp_N1e5": 34.4 / LP_LOCKSTEP_SPEEDUP,   # N = 100,000 (MNIST-1M generator)
    "np_fit_54k": 28.68,        # the non-private L2 fit behind model / prediction sensitivity (once per model)
    "subsagg_T8_54k": 20.3,     # subsample-and-aggregate, T = 8 / 256 / 2048 models (θ-space member fits)
    "subsagg_T256_54k": 15.16,
    "subsagg_T2048_54k": 42.7,
    "dpsgd_block10_54k": 60.04,  # one DP-SGD block of 10 runs (vectorised)
    "mlp_dpsgd_run": 16.29,     # Fig. 7 MLP: one DP-SGD run
    "mlp_subsagg_rep": 60.0,    # not measured (assumed)
    "mlp_non_private": 20.0,    # not measured (assumed)
}
#: Series whose per-group cost is the non-private L2 fit of :func:`dpbench.methods.non_private.trained_softmax`
#: (one cached artefact per problem, split and λ, computed once under a process lock whichever series asks
#: first): ``dpbench plan`` counts each such fit of the tuning phase once per study. (Final fits are at the λ
#: each series chose, so they are counted per series; loss perturbation's warm start is not charged to it.)
SHARED_NP_FIT_SERIES = ("model_sensitivity", "prediction_sensitivity", "non_private")
#: Seconds a Snakemake job spends starting (imports, DAG check) before its first cell.
JOB_OVERHEAD_S = 5.0
_N_REF = 60_000


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
    """Projected (per group, per cell) CPU-seconds of vdm2020 cells: ``per group`` is paid once per group of
    cells that share a trained model (the method's ``group_key``: the non-private fit behind model / prediction
    sensitivity, the ensemble of one repetition of subsample-and-aggregate), ``per cell`` for every cell (a
    DP-SGD cell: a tenth of its block of 10 runs)."""
    u = VDM2020_UNIT_COSTS
    n = vdm2020_n(cfg, problem, split)
    lp = _loglog(n, [(1e4, u["lp_N1e4"]), (_N_REF, u["lp_54k"])] + ([(1e5, u["lp_N1e5"])] if "lp_N1e5" in u else []))
    shape = 1.0
    if "pca_dim" in problem:
        shape *= max(0.1, problem["pca_dim"] / 785)
    if "n_classes" in problem:
        shape *= problem["n_classes"] / 10
    if series == "loss_perturbation":
        return 0.0, lp * shape
    if series in SHARED_NP_FIT_SERIES:
        fit = lp * u["np_fit_54k"] / u["lp_54k"] * shape
        return fit, 0.002 * fit
    if series == "subsample_aggregate":
        t = method.get("n_models", cfg["subsagg_models"])
        per_t = _loglog(t, [(8, u["subsagg_T8_54k"]), (256, u["subsagg_T256_54k"]), (2048, u["subsagg_T2048_54k"])])
        if n / t <= SA_ROW_SPACE_MAX_ROWS:
            per_t /= SA_ROW_SPACE_SPEEDUP
        return per_t * (n / _N_REF) * shape, 0.01 * per_t * (n / _N_REF) * shape
    if series == "dpsgd":
        return 0.0, u["dpsgd_block10_54k"] / 10 * (n / _N_REF) * shape
    if series == "dpsgd_mlp":
        return 0.0, u["mlp_dpsgd_run"] * (n / _N_REF)
    if series == "subsample_aggregate_mlp":
        return u["mlp_subsagg_rep"] * (n / _N_REF), 0.01 * u["mlp_subsagg_rep"] * (n / _N_REF)
    if series == "non_private_mlp":
        return u["mlp_non_private"] * (n / _N_REF), 0.001 * u["mlp_non_private"]
    return 0.0, lp


#: CPU-minutes per series of the studies without a cell cost model, from measured wall times of whole studies at
#: the default config on 2 cores (both busy): wu2016 ch. 3 (fig3_2-3_4, 18 series) 34 min; wu2016 ch. 4 plus the
#: membership study (64 series) 6 min; the estimation study (11 series) about 1 min. song2018: chapter 5's figures
#: fig5_1-5_6 (5 series) 21 CPU-s in all; chapter 6's fig6_1 / fig6_2 (10 series, 27 CPU-s in one process; the
#: largest, the patent surrogate, 14 s: 0.5 min per series is an upper bound); the rest not measured.
STUDY_SERIES_CPU_MIN = {"wu2016/fig3": 68 / 18, "wu2016/fig4": 12 / 64, "membership": 12 / 64, "estimation": 2 / 11,
                        "audit": 0.2, "song2018/fig5": 0.1, "song2018/fig6": 0.5}


def default_series_cpu_s(config: dict) -> float:
    return 60.0 * float(config.get("resources", {}).get("default_cpu_minutes", 10))


def study_series_cpu_s(config: dict, study: str, figure: str) -> tuple[float, bool]:
    """(CPU-seconds of one series, measured?) for a study without a cell cost model."""
    for key in (f"{study}/{figure[:4]}", study):
        if key in STUDY_SERIES_CPU_MIN:
            return 60.0 * STUDY_SERIES_CPU_MIN[key], True
    return default_series_cpu_s(config), False


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
    """Memory of a vdm2020 job: the memory-mapped float64 training matrix (counted once: the workers share its
    pages), and per worker the interpreter plus about ten N x C float64 work arrays (scores, gradients,
    L-BFGS history)."""
    n = vdm2020_n(cfg, problem, "test")
    dim = problem.get("pca_dim", 784) + 1
    classes = problem.get("n_classes", 10)
    matrix_mb = n * dim * 8 / 2**20
    per_worker_mb = 300 + 10 * n * classes * 8 / 2**20
    return int(1000 + matrix_mb + threads * per_worker_mb)
