"""Projected cost of the work: CPU-seconds per cell from measured unit costs, and the resources of a job.

The vdm2020 unit costs below were measured with ``benchmarks/fig4_scaling.py`` and ``benchmarks/vdm2020_unit_costs.py``
(single core, BLAS limited to one thread, CPU seconds via ``time.process_time``) on the MNIST substitute at the
default settings; costs at other sizes are scaled from them (log-log in N and T between the measured sizes,
linear in D and C) and projected to a quiet machine (:data:`QUIET_FACTOR`). Studies with their own
``run_series`` (wu2016, song2018, membership, estimation) have no per-cell model: a figure of theirs is costed
from its CPU measured on the default grid (:data:`MEASURED_FIGURE_CPU_S`), scaled by the grid's size, and
shared evenly by its series; a figure not measured yet falls back to a measured group total
(:data:`STUDY_SERIES_CPU_MIN`) or ``resources.default_cpu_minutes``, flagged wherever it is printed. The audit
is costed from its trials (:data:`AUDIT_CPU_S_PER_TRIAL`). Plot, anchor and data jobs: :data:`PLOT_CPU_S`,
:data:`DATASET_CPU_S`, :data:`FIGURE_DATA_CPU_S`.
"""

from __future__ import annotations

import functools
import json
import math

#: Measured single-core CPU-seconds by training-set size N (``benchmarks/fig4_scaling.py`` with the default
#: solvers — loss perturbation in lockstep groups of 10, float32 with a float64 certificate, preconditioned by the
#: Kronecker-factored curvature at its warm start; non-private fits from 0 whitened by the curvature at 0;
#: subsample-and-aggregate members in the row space of their part or, for parts of more than D/2 rows, with
#: float32 evaluations — one BLAS thread, the MNIST-1M generator's digits, (ε, δ) = (1, 0)), on the shared 2-core
#: machine (load 2-3). ``lp_cell``: the mean over the cross-validation λ grid of a loss-perturbation cell (a
#: lockstep group of 10 cells / 10); ``np_fit``: the mean over the grid of a non-private fit plus the curvature
#: at it that loss perturbation's solves of that λ use (both one cached artefact per problem, split and λ; the
#: curvature is 0.4 / 1.9 / 3.3 / 30 s of it at N = 10⁴ / 6·10⁴ / 10⁵ / 10⁶); ``subsagg_T256``: one
#: subsample-and-aggregate repetition (T = 256). At N = 10⁶ only λ = 10⁻⁴ was measured (a group of 10 cells
#: 282.9 s, a fit 87.4 s) and the grid mean is that times the ratio grid mean / λ = 10⁻⁴ measured at smaller N
#: (loss perturbation 0.561-0.578 at N = 10⁴-10⁵: 0.57; non-private fit 0.615-0.62 at N = 10⁴, 6·10⁴: 0.62).
#: Between the points: log-log interpolation; beyond: the nearest segment's slope.
VDM2020_N_UNITS = {
    "lp_cell": {1e4: 0.266, 6e4: 0.922, 1e5: 1.435, 1e6: 28.29 * 0.57},
    "np_fit": {1e4: 0.562 + 0.41, 6e4: 2.829 + 1.95, 1e5: 4.504 + 3.4, 1e6: 87.4 * 0.62 + 30.1},
    "subsagg_T256": {1e4: 2.49, 6e4: 6.83, 1e5: 9.38, 1e6: 131.2},
}
#: Subsample-and-aggregate's dependence on T: CPU-seconds of one repetition (T members fitted, the votes of 10,000
#: test rows) at N = 60,000 with the current solvers (``benchmarks/vdm2020_unit_costs.py``, every T of Fig. 6b,
#: 2026-11-27, revision 4b0a5b4, load ~2). Not monotone in T: parts of 7,500-1,875 rows (T = 8-32) use float32
#: θ-space evaluations in row blocks; 937 and 468 rows (T = 64, 128) the same solver, but the unregularised members
#: run all 100 iterations on products too narrow to be efficient; from 234 rows (T ≥ 256) the row-space solver,
#: and at large T predicting the T members on the test rows dominates. A repetition at another (N, T) is the
#: T = 256 unit at that N times the ratio of this table at T to T = 256 (log-log in T between the points).
SUBSAGG_T_60K = {8: 4.44, 16: 4.84, 32: 5.78, 64: 8.42, 128: 6.14, 256: 3.90, 512: 4.42, 1024: 6.00, 2048: 9.70}

#: CPU-seconds per unit of the DP-SGD and MLP series (``benchmarks/vdm2020_unit_costs.py``; a DP-SGD unit is one
#: block of 10 runs), measured at N = 60,000 (re-measured with the current code, load 2-3). The DP-SGD block in
#: float32 with its products in row blocks, revision 4b0a5b4 (2026-11-27, load ~2): 20.03 s; in float64 (the
#: ``dpsgd.float32: false`` option) :data:`DPSGD_FLOAT64_FACTOR` times that.
VDM2020_UNIT_COSTS = {
    "dpsgd_block10_54k": 20.03,  # one DP-SGD block of 10 runs (vectorised, float32)
    "mlp_dpsgd_run": 9.92 * 0.78,  # Fig. 7 MLP: one DP-SGD run (measured 9.92 in float64, x the float32 ratio)
    "mlp_subsagg_rep": 23.97,   # Fig. 7 MLP: one subsample-and-aggregate repetition (T = 16 members)
    "mlp_non_private": 9.44,    # Fig. 7 MLP: the non-private model
}
#: DP-SGD in double precision (``dpsgd.float32: false`` / ``mlp.dpsgd.float32: false``) over the float32 units
#: above: the inverse of the CPU of one epoch float32 / float64, alternated in one process
#: (``benchmarks/dpsgd_precision.py``, 2026-11-26, load 1.3-1.4): softmax block of 10 runs 0.78 [0.78-0.83], MLP run
#: 0.78 [0.76-1.32] (before the softmax products' row blocks, which both precisions use).
DPSGD_FLOAT64_FACTOR = {"dpsgd": 1 / 0.78, "mlp": 1 / 0.78}
#: Series whose per-group cost is the non-private L2 fit of :func:`dpbench.methods.non_private.trained_softmax`
#: (one cached artefact per problem, split and λ, computed once under a process lock whichever series asks
#: first): ``dpbench plan`` counts each such fit of the tuning phase once per study. (Final fits are at the λ
#: each series chose, so they are counted per series; loss perturbation's warm start is not charged to it.)
SHARED_NP_FIT_SERIES = ("model_sensitivity", "prediction_sensitivity", "non_private")


def cost_series(series: str) -> str:
    """The series whose unit costs ``series`` has: a tight calibration (``<source>_tight``,
    :func:`dpbench.results.tight_source`) runs its source series' computation — the same trained models, solves or
    runs — with another noise scale."""
    from dpbench.results import tight_source

    return tight_source(series) or series


#: CPU-seconds of a plot, anchor-check or claims job (reads Parquet, draws; measured 2-6 s with start-up)
PLOT_CPU_S = 3.0
#: CPU-seconds of a study's dataset job at the default config (download or substitute generation, parsing),
#: measured on the full-grid run (2026-11-26, no network: the labelled substitutes are generated)
DATASET_CPU_S = {"vdm2020": 1.0, "membership": 16.0, "wu2016": 8.0, "song2018": 7.0, "estimation": 1.0,
                 "audit": 1.0}   # vdm2020: user datasets only; MNIST is its figure data "default" (30 s)


#: CPU-seconds of a figure-data job (:meth:`Study.figure_data`) at the default config: vdm2020's MNIST-1M, 940,000
#: generated digits beyond the 60,000 of the dataset job (12.1 s per 60,000 measured: ~190 CPU-s).
FIGURE_DATA_CPU_S = {("vdm2020", "mnist1m"): 190.0, ("vdm2020", "default"): 30.0}


def figure_data_cpu_s(config: dict, study: str, name: str) -> float:
    return FIGURE_DATA_CPU_S.get((study, name), 60.0)


def dataset_cpu_s(config: dict, study: str) -> float:
    """Projected CPU-seconds of ``study``'s dataset job (:data:`DATASET_CPU_S`; 10 s for a study not listed)."""
    return DATASET_CPU_S.get(study, 10.0)


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


def _by_n(unit: str, n: float) -> float:
    return _loglog(n, list(VDM2020_N_UNITS[unit].items()))


#: Units measured in the default grid's own run, where the quiet-machine factor does not hold: CPU-seconds per
#: cell of vdm2020 Fig. 4 (``job_cpu_s`` of its complete shards over their cells; revision 6848e8b, 2026-11-27,
#: ``snakemake --cores 2``, two single-threaded jobs sharing the two cores — the condition of a user's run). At
#: N ≥ 2·10⁵ the subsample-and-aggregate members (≥ 781 rows, the float32 θ-space solver) cost 2.0-2.1× the
#: quiet-factored projection and loss perturbation 1.3-1.5× at N ≥ 5·10⁵: these memory-bound units do not get
#: cheaper on a quiet machine the way the 60,000-row units do. ``subsagg_T256``: one repetition (T = 256);
#: ``lp_cell``: one cell (a lockstep group's share). The subsample-and-aggregate values at N ≥ 2·10⁵ are
#: re-measured at revision 4b0a5b4 (2026-11-27, the float32 members' products in row blocks; two shards of each N
#: side by side on the 2 cores, ``job_cpu_s`` over repetitions, start-up and the memory-mapped problem included):
#: 2·10⁵ 25.08 and 24.67 s per repetition (25 each), 5·10⁵ 45.9 and 48.4 (8 each), 10⁶ 81.0 and 94.1 (3 each) — at
#: 2·10⁵ the blocks gain nothing (parts of 781 rows; 23.56 before), at 10⁶ 0.59× the 6848e8b value (149.33).
#: N = 10⁵ (parts of 390 rows, the row-space solver) is the 6848e8b measurement.
WORKFLOW_N_UNITS = {
    "subsagg_T256": {1e5: 7.23, 2e5: 24.9, 5e5: 47.1, 1e6: 87.6},
    "lp_cell": {5e5: 6.08, 1e6: 14.82},
}


def unit_cpu_s(unit: str, n: float, quiet: float) -> float:
    """CPU-seconds of a vdm2020 N-scaled ``unit`` at training-set size ``n``: the quiet-factored benchmark unit
    (:data:`VDM2020_N_UNITS` × ``quiet``) up to the largest N below the first point of :data:`WORKFLOW_N_UNITS`,
    the workflow-measured values from that point on, log-log interpolation between the two."""
    wf = WORKFLOW_N_UNITS.get(unit)
    if not wf:
        return _by_n(unit, n) * quiet
    first = min(wf)
    base = [(x, v * quiet) for x, v in VDM2020_N_UNITS[unit].items() if x < first]
    return _loglog(n, base + sorted(wf.items()))


def subsagg_rep_cpu_s(n: float, t: int, quiet: float = 1.0) -> float:
    """CPU-seconds of one subsample-and-aggregate repetition (T = ``t`` members on N = ``n`` rows, D = 785);
    ``quiet``: the quiet-machine factor of the benchmark units (:func:`unit_cpu_s`). Other D: scaled by
    :func:`vdm2020_cell_cpu_s`."""
    per_t = _loglog(t, list(SUBSAGG_T_60K.items())) / SUBSAGG_T_60K[256]
    return unit_cpu_s("subsagg_T256", n, quiet) * per_t


#: The unit costs above were measured on the shared 2-core machine under load 2-3; on a quiet machine the same
#: units cost less (CPU time inflates when two processes share the caches and memory bandwidth of 2 cores). The
#: projection is for a quiet machine: measured / projected per unit family, quiet, one job at a time per core —
#: vdm2020 Fig. 2a at full size on 2 idle cores, 2026-11-26 (loss perturbation shards 0.45 and 0.80,
#: subsample-and-aggregate 0.50 and 0.51, the non-private fits of one figure 0.44) and an outside review's
#: alternated measurements (loss perturbation <= 0.65, subsample-and-aggregate T = 2048 0.60, DP-SGD block 0.86,
#: MLP DP-SGD 1.00). On a loaded machine expect up to 1 / factor more. The MLP's: its units against the default
#: grid's own run of Fig. 7a (revision 6848e8b, two jobs on two cores): DP-SGD 6,212 CPU-s for 8,821 projected at
#: factor 1 (0.70), subsample-and-aggregate 1,879 for 2,541 (0.74): 0.72.
#: DP-SGD: 1.0 since its unit was re-measured at load ~2 (revision 4b0a5b4, :data:`VDM2020_UNIT_COSTS`) — the
#: condition of the workflow's two jobs on two cores: Fig. 3's tuning shards at 4b0a5b4 measured 1.90-2.17
#: CPU-s per cell (5 shards, 1,000 cells, mean 2.04) against 1.80 projected at factor 1 (1.55 at the former 0.86).
#: The part of a subsample-and-aggregate repetition that does not scale with the dimension D (the T member fits'
#: fixed steps, the T x N_test votes): its cost at D is (f + (1 - f) D/785) times its cost at 785. From vdm2020
#: Fig. 5a at full size on a 16-core Xeon (2026-11-28, `benchmarks/schedule_check.sh`), CPU-s per repetition
#: against D: 4.2 at 784, 3.6 at 400, 1.8 at 200, 1.3 at 100 and at 10-50 (linear in D with a floor of 0.1 had put
#: the shard of D = 10-50 at 114 CPU-s where it took ~380).
SUBSAGG_D_FIXED = 0.25
QUIET_FACTOR = {"lp_cell": 0.62, "np_fit": 0.45, "subsagg": 0.55, "dpsgd": 1.0, "mlp": 0.72}


def vdm2020_cell_cpu_s(cfg: dict, series: str, problem: dict, method: dict, split: str) -> tuple[float, float]:
    """Projected (per group, per cell) CPU-seconds of vdm2020 cells: ``per group`` is paid once per group of
    cells that share a trained model (the method's ``group_key``: the non-private fit behind model / prediction
    sensitivity, the ensemble of one repetition of subsample-and-aggregate), ``per cell`` for every cell (a
    DP-SGD cell: a tenth of its block of 10 runs). D and C scale the cost linearly."""
    u = VDM2020_UNIT_COSTS
    series = cost_series(series)
    n = vdm2020_n(cfg, problem, split)
    shape = 1.0
    if "pca_dim" in problem:
        d = problem["pca_dim"] / 785
        shape *= SUBSAGG_D_FIXED + (1 - SUBSAGG_D_FIXED) * d if cost_series(series) == "subsample_aggregate" \
            else max(0.1, d)
    if "n_classes" in problem:
        shape *= problem["n_classes"] / 10
    q = QUIET_FACTOR
    if series == "loss_perturbation":
        return 0.0, unit_cpu_s("lp_cell", n, q["lp_cell"]) * shape
    if series in SHARED_NP_FIT_SERIES:
        fit = _by_n("np_fit", n) * shape * q["np_fit"]
        return fit, 0.002 * fit
    if series == "subsample_aggregate":
        rep = subsagg_rep_cpu_s(n, method.get("n_models", cfg["subsagg_models"]), q["subsagg"]) * shape
        return rep, 0.01 * rep
    if series == "dpsgd":
        f64 = 1.0 if (cfg.get("dpsgd") or {}).get("float32", True) else DPSGD_FLOAT64_FACTOR["dpsgd"]
        return 0.0, u["dpsgd_block10_54k"] / 10 * (n / _N_REF) * shape * q["dpsgd"] * f64
    mlp = (n / _N_REF) * q["mlp"]
    if series == "dpsgd_mlp":
        f64 = 1.0 if ((cfg.get("mlp") or {}).get("dpsgd") or {}).get("float32", True) else DPSGD_FLOAT64_FACTOR["mlp"]
        return 0.0, u["mlp_dpsgd_run"] * mlp * f64
    if series == "subsample_aggregate_mlp":
        return u["mlp_subsagg_rep"] * mlp, 0.01 * u["mlp_subsagg_rep"] * mlp
    if series == "non_private_mlp":
        return u["mlp_non_private"] * mlp, 0.001 * u["mlp_non_private"] * q["mlp"]
    return 0.0, unit_cpu_s("lp_cell", n, q["lp_cell"])


#: Measured CPU-seconds of every figure of the studies without a cell cost model at the default config
#: (``config.yaml``), one ``snakemake FIGURE --cores 1`` per figure in this order, on a persistent cache (a cell
#: computed by an earlier figure is not paid again), 2026-11-26, 2-core machine, no network (labelled substitutes):
#: user + system of the whole invocation less Snakemake's own process (2.3 s, measured on an up-to-date target),
#: the study's dataset job (in its first figure) and the plot job (:data:`PLOT_CPU_S`).
MEASURED_FIGURE_CPU_S = {
    ("estimation", "mean_vs_d"): 19.8 - 2.3 - 1 - 3, ("estimation", "cov_vs_d"): 10.0 - 2.3 - 3,
    ("estimation", "ldp_vs_n"): 11.0 - 2.3 - 3,
    ("membership", "fig_attack_diabetes"): 61.0 - 2.3 - 16 - 3, ("membership", "fig_attack_covertype"): 57.9 - 2.3 - 3,
    ("membership", "fig_attack_mnist"): 71.6 - 2.3 - 3, ("membership", "fig_roc"): 13.7 - 2.3 - 3,
    ("membership", "fig_eps_lower_bound"): 13.6 - 2.3 - 3, ("membership", "table_generalisation"): 11.4 - 2.3 - 3,
    ("wu2016", "fig4_1"): 16.2 - 2.3 - 8 - 3, ("wu2016", "fig4_2"): 13.4 - 2.3 - 3, ("wu2016", "fig4_3"): 7.4 - 2.3 - 3,
    ("wu2016", "fig4_5"): 12.2 - 2.3 - 3, ("wu2016", "fig4_6"): 10.1 - 2.3 - 3, ("wu2016", "fig4_7"): 8.4 - 2.3 - 3,
    ("wu2016", "fig4_8"): 19.4 - 2.3 - 3,
    ("song2018", "fig5_1"): 14.5 - 2.3 - 7 - 3, ("song2018", "fig5_4"): 15.1 - 2.3 - 3, ("song2018", "fig5_5"): 6.6 - 2.3 - 3,
    ("song2018", "fig5_6"): 8.6 - 2.3 - 3, ("song2018", "table5_1"): 12.8 - 2.3 - 3, ("song2018", "fig6_1"): 26.0 - 2.3 - 3,
    ("song2018", "fig6_2"): 21.8 - 2.3 - 3, ("song2018", "table6_1"): 6.2 - 2.3 - 3, ("song2018", "table6_4"): 6.1 - 2.3 - 3,
    ("song2018", "fig7_4"): 53.0 - 2.3 - 3, ("song2018", "table7_1"): 14.5 - 2.3 - 3, ("song2018", "table7_2"): 139.4 - 2.3 - 3,
    ("song2018", "table7_3"): 11.8 - 2.3 - 3, ("song2018", "fig7_5"): 8.4 - 2.3 - 3, ("song2018", "fig3_3"): 5.7 - 2.3 - 3,
    ("song2018", "fig3_1"): 17.9 - 2.3 - 3, ("song2018", "fig3_2"): 49.5 - 2.3 - 3,
    ("song2018", "fig4_1"): 2156.5 - 2.3 - 3,   # ch4_covertype_epsn ~1,800 of it (100 runs x 10 ε_N)
    # wu2016 ch. 3 under load 3-4 (three processes on the 2 cores): fig3_2 from scratch in a fresh cache (its grid
    # invocation was interrupted), fig3_3 after it on the grid's cache
    # fig3_2 with bst14_tight (2026-11-28, revision 6cbae29, --cores 1 beside two other jobs): its series jobs'
    # job_cpu_s, 1,010 CPU-s (BST14 tight 383 of them: its PLD calibrations; before it 577 - 13)
    ("wu2016", "fig3_2"): 1010.0, ("wu2016", "fig3_3"): 258.9 - 2.3 - 3,
    ("wu2016", "fig3_4"): 1096.4 - 2.3 - 3,     # its runtime sweeps (a timing figure)
}
#: keys of a figure's or study's settings that scale its work linearly (a list scales it by its length)
SIZE_KEYS = ("repetitions", "runs", "trials", "queries", "teachers", "n", "n_train", "n_members", "permutations",
             "shadow_models", "repeats", "chain_length", "passes", "epochs", "chunks")


def _size_ratio(have, want) -> float:
    """How much more work the settings ``have`` describe than ``want`` (the default): the product over the
    settings both have of the ratio of list lengths and of :data:`SIZE_KEYS` values (a coarse model: the work of
    these studies is a product of grid sizes and repetitions)."""
    if isinstance(have, dict) and isinstance(want, dict):
        r = 1.0
        for k in have.keys() & want.keys():
            if isinstance(have[k], (dict, list)):
                r *= _size_ratio(have[k], want[k])
            elif k in SIZE_KEYS and isinstance(have[k], (int, float)) and isinstance(want[k], (int, float)) \
                    and want[k] > 0 and not isinstance(have[k], bool):
                r *= float(have[k]) / float(want[k])
        return r
    if isinstance(have, list) and isinstance(want, list) and want:
        if all(isinstance(v, dict) for v in have + want):
            return max(1e-6, len(have) / len(want))
        return len(have) / len(want)
    return 1.0


def measured_figure_cpu_s(config: dict, study: str, figure: str) -> float | None:
    """Projected CPU-seconds of a figure of a study without a cell cost model: :data:`MEASURED_FIGURE_CPU_S` at the
    default config, scaled by :func:`_size_ratio` of the figure's settings and the study's top-level scalar and
    list settings against ``config.yaml``'s; None when the figure was not measured."""
    base = MEASURED_FIGURE_CPU_S.get((study, figure))
    if base is None:
        return None
    return max(0.0, base) * size_ratio(config, study, figure)


@functools.lru_cache(maxsize=1)
def _default_studies() -> dict:
    """``config.yaml``'s studies (read once per process: the plan and the Snakefile ask for every series)."""
    from dpbench.config import DEFAULT_CONFIG_PATH, load_yaml

    return load_yaml(DEFAULT_CONFIG_PATH).get("studies") or {}


def size_ratio(config: dict, study: str, figure: str) -> float:
    """:func:`_size_ratio` of a figure's settings and of its study's top-level scalar and list settings (e.g.
    ``repetitions``) in ``config`` against ``config.yaml``'s (the grid the costs were measured on); 1 for a
    study ``config.yaml`` does not have."""
    default = (_default_studies().get(study) or {})
    have = config["studies"].get(study) or {}
    top = lambda c: {k: v for k, v in c.items() if k != "figures" and not isinstance(v, dict)}  # noqa: E731
    return (_size_ratio((have.get("figures") or {}).get(figure) or {}, (default.get("figures") or {}).get(figure) or {})
            * _size_ratio(top(have), top(default)))


#: CPU-minutes per series of a study figure group not in :data:`MEASURED_FIGURE_CPU_S` (none left: every figure of
#: the default config is measured; a study added later may give its measured group total here, e.g.
#: ``{"study/fig3": minutes}``).
STUDY_SERIES_CPU_MIN: dict = {}


def default_series_cpu_s(config: dict) -> float:
    return 60.0 * float(config.get("resources", {}).get("default_cpu_minutes", 10))


#: The audit study: CPU-seconds per trial of each audited method at the default calibration, and per cell on top
#: of it. A method's series = its cells (ε × audited variants × seeds), each ``trials`` of the config plus the
#: generator probe's (the fixed-seed twin: the probe only). Per-trial costs of the SGD methods scale with their steps (T), which the smoke
#: calibrations shrink: there the projection is an upper bound.
AUDIT_CPU_S_PER_TRIAL = {   # per trial (one release on each side of the pair), measured 2026-11-27: the whole
    # default audit through Snakemake on an idle 2-core machine (revision 8de6630), median over a method's cells
    # of (cell CPU - overhead) / (trials + the generator probe's)
    "model_sensitivity": 6.5e-7, "mean_laplace": 3.0e-7, "mean_gaussian": 3.0e-7, "ldp_mean": 3.0e-7,
    "ldp_sgd_report": 5.5e-7, "bolt_on": 1.35e-6, "functional_mechanism": 3.8e-6,
    "functional_mechanism_tight": 4.1e-6, "objective_perturbation": 4.5e-6,
    "output_perturbation_erm": 6.6e-5, "output_perturbation_erm_tight": 6.8e-5,
    "scs13": 5.3e-5,                     # SCS13: the transcript of 10 updates per trial
    "loss_perturbation": 2.3e-3, "loss_perturbation_tight": 2.6e-3,   # one training per trial
    "dpsgd_softmax": 9.9e-3, "dpsgd_softmax_tight": 1.03e-2,           # one DP-SGD run per side per trial
    "dpsgd_mlp": 1.31e-2, "dpsgd_mlp_tensors": 1.49e-2,
    "bst14": 0.104,                      # one BST14 run of T = 14,576 steps per side per trial
    "bst14_tight": 0.17,                 # the same runs, plus the PLD calibration (~25 s, once per process) and the
                                         # pair bounds (1-15 s per cell): 2026-11-28, `dpbench audit bst14_tight`
}
AUDIT_CELL_OVERHEAD_S = 0.5


def audit_series_cpu_s(config: dict, method: str) -> float:
    """Projected CPU-seconds of the audit study's series ``method`` (:data:`AUDIT_CPU_S_PER_TRIAL`; a method with
    several pairs adds its pilot, :func:`dpbench.audit.core.pilot_trials` per pair)."""
    from dpbench.audit.core import (CORRECT, FIXED_SEED, PROBE_TRIALS, audited_variants, method as audit_method,
                                    pilot_trials, trials_for)

    cfg = config["studies"]["audit"]
    unit = AUDIT_CPU_S_PER_TRIAL.get(method, max(AUDIT_CPU_S_PER_TRIAL.values()))
    n_pairs = len(audit_method(method).pairs)
    total = 0.0
    for v in audited_variants(config, method):
        seeds = int(cfg["seeds_correct"] if v == CORRECT else cfg["seeds"])
        for eps in cfg["epsilons"]:
            # every cell: the generator probe (2 runs of PROBE_TRIALS per side); the fixed-seed twin stops there
            t = trials_for(config, method, v, eps)
            pilot = n_pairs * pilot_trials(config, t) if n_pairs > 1 else 0
            trials = 2 * PROBE_TRIALS + (0 if v == FIXED_SEED else t + pilot)
            total += seeds * (AUDIT_CELL_OVERHEAD_S + trials * unit)
    return total


def study_series_cpu_s(config: dict, study: str, figure: str, series: str | None = None) -> tuple[float, bool]:
    """(CPU-seconds of one series, measured?) for a study without a cell cost model (the audit: per series,
    :func:`audit_series_cpu_s`)."""
    if study == "audit" and series is not None:
        return audit_series_cpu_s(config, series), True
    fig = measured_figure_cpu_s(config, study, figure)
    if fig is not None:
        from dpbench.studies import STUDIES

        n = max(1, len(STUDIES[study].series(config["studies"][study], figure)))
        return fig / n, True
    for key in (f"{study}/{figure[:4]}", study):
        if key in STUDY_SERIES_CPU_MIN:
            return 60.0 * STUDY_SERIES_CPU_MIN[key] * size_ratio(config, study, figure), True
    return default_series_cpu_s(config) * size_ratio(config, study, figure), False


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


def _vdm2020_problem_mb(cfg: dict, problem: dict) -> tuple[float, float]:
    """(the float64 training matrix, one worker's interpreter plus about ten N x C float64 work arrays — scores,
    gradients, L-BFGS history) of one vdm2020 problem, in MB."""
    n = vdm2020_n(cfg, problem, "test")
    dim = problem.get("pca_dim", 784) + 1
    classes = problem.get("n_classes", 10)
    return n * dim * 8 / 2**20, 300 + 10 * n * classes * 8 / 2**20


def vdm2020_mem_mb(cfg: dict, problem: dict, threads: int) -> int:
    """Memory of a vdm2020 job on one problem: the memory-mapped float64 training matrix (counted once: the
    workers share its pages), and per worker its work arrays (:func:`_vdm2020_problem_mb`)."""
    return vdm2020_jobs_mem_mb(cfg, [problem], threads)


def vdm2020_jobs_mem_mb(cfg: dict, problems: list[dict], threads: int) -> int:
    """Memory of a vdm2020 job whose cells span several problems (a shard of Fig. 4 holds every N): a job keeps
    the problems it has prepared, so their matrices add up; the work arrays are those of the largest. Measured
    on the default grid's Fig. 4 (revision 6848e8b): the non-private and model-sensitivity shards over every N up
    to 10⁶ peaked at 13.3 GB (this gives 13.4), loss perturbation's tuning at N = 5·10⁵ and 10⁶ at 10.8 GB
    (10.2; the one-problem estimate said 8.1 for both)."""
    parts = [_vdm2020_problem_mb(cfg, p) for p in {json.dumps(p, sort_keys=True): p for p in problems}.values()]
    return int(1000 + sum(m for m, _ in parts) + threads * max(w for _, w in parts))
