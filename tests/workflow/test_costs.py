"""The vdm2020 cost model reproduces its measured points and scales sensibly between them."""

import pytest

from dpbench import costs


def test_measured_points_are_reproduced_and_costs_grow_with_n():
    for unit, pts in costs.VDM2020_N_UNITS.items():
        for n, v in pts.items():
            assert costs._by_n(unit, n) == pytest.approx(v)
        ns = [1e3, 5e3, 2e4, 8e4, 3e5, 2e6]
        vals = [costs._by_n(unit, n) for n in ns]
        assert all(a < b for a, b in zip(vals, vals[1:])), unit


def test_subsample_aggregate_t_dependence_and_solver_regimes():
    # T = 256 is the measured repetition at every N: the benchmark unit below the workflow-measured points, those
    # from the first on
    wf = costs.WORKFLOW_N_UNITS["subsagg_T256"]
    for n, v in costs.VDM2020_N_UNITS["subsagg_T256"].items():
        assert costs.subsagg_rep_cpu_s(n, 256) == pytest.approx(wf.get(n, v) if n >= min(wf) else v)
    # every measured T of Fig. 6b: the T = 256 unit times the measured ratio of the repetition at T to T = 256
    u = costs.SUBSAGG_T_60K
    for t, v in u.items():
        assert costs.subsagg_rep_cpu_s(6e4, t) / costs.subsagg_rep_cpu_s(6e4, 256) == pytest.approx(v / u[256])
    between = costs.subsagg_rep_cpu_s(6e4, 48)   # log-log between T = 32 and 64
    assert costs.subsagg_rep_cpu_s(6e4, 32) < between < costs.subsagg_rep_cpu_s(6e4, 64)


def test_cell_costs_of_the_series():
    cfg = {"n_train": 60_000, "cross_validation": {"validation_fraction": 0.1}, "subsagg_models": 256}
    g, c = costs.vdm2020_cell_cpu_s(cfg, "loss_perturbation", {}, {}, "test")
    q = costs.QUIET_FACTOR   # the measured units (under load) projected to a quiet machine
    assert g == 0 and c == pytest.approx(costs.VDM2020_N_UNITS["lp_cell"][6e4] * q["lp_cell"])
    g, c = costs.vdm2020_cell_cpu_s(cfg, "model_sensitivity", {}, {}, "test")
    assert g == pytest.approx(costs.VDM2020_N_UNITS["np_fit"][6e4] * q["np_fit"]) and c < 0.01 * g
    g, _ = costs.vdm2020_cell_cpu_s(cfg, "subsample_aggregate", {"pca_dim": 50}, {}, "test")
    assert g < costs.VDM2020_N_UNITS["subsagg_T256"][6e4]   # fewer dimensions: cheaper


def test_subsample_aggregate_keeps_a_dimension_free_part_and_the_others_scale_with_d():
    # measured on Fig. 5a: a repetition at D = 100 costs ~0.3 of one at 785, not 0.13 (the member fits' fixed steps
    # and the votes do not shrink with D); loss perturbation stays linear in D with its floor of 0.1
    cfg = {"n_train": 60_000, "cross_validation": {"validation_fraction": 0.1}, "subsagg_models": 256}
    rep = {d: costs.vdm2020_cell_cpu_s(cfg, "subsample_aggregate", {"pca_dim": d}, {}, "test")[0]
           for d in (10, 100, 400, 785)}
    f = costs.SUBSAGG_D_FIXED
    assert rep[10] / rep[785] == pytest.approx(f + (1 - f) * 10 / 785)
    assert 0.25 < rep[100] / rep[785] < 0.4 and rep[10] < rep[100] < rep[400] < rep[785]
    tight = costs.vdm2020_cell_cpu_s(cfg, "subsample_aggregate_tight", {"pca_dim": 100}, {}, "test")[0]
    assert tight == pytest.approx(rep[100])   # a tight series costs as its source
    lp = {d: costs.vdm2020_cell_cpu_s(cfg, "loss_perturbation", {"pca_dim": d}, {}, "test")[1] for d in (10, 400, 785)}
    assert lp[400] / lp[785] == pytest.approx(400 / 785) and lp[10] / lp[785] == pytest.approx(0.1)


def test_workflow_measured_units_take_over_at_large_n():
    """Fig. 4's large-N units as measured in the default grid's own run (two jobs on two cores): reproduced at
    their points, with the quiet-factored benchmark units below, log-log between, growing with N throughout."""
    q = costs.QUIET_FACTOR
    for unit, pts in costs.WORKFLOW_N_UNITS.items():
        qq = q["subsagg" if unit.startswith("subsagg") else unit]
        for n, v in pts.items():
            assert costs.unit_cpu_s(unit, n, qq) == pytest.approx(v)
        below = [n for n in costs.VDM2020_N_UNITS[unit] if n < min(pts)]
        for n in below:
            assert costs.unit_cpu_s(unit, n, qq) == pytest.approx(costs.VDM2020_N_UNITS[unit][n] * qq)
        ns = [1e3, 5e3, 2e4, 6e4, 8e4, 1.5e5, 3e5, 7e5, 1e6, 2e6]
        vals = [costs.unit_cpu_s(unit, n, qq) for n in ns]
        assert all(a < b for a, b in zip(vals, vals[1:])), unit
    assert costs.unit_cpu_s("np_fit", 1e6, 0.5) == pytest.approx(costs.VDM2020_N_UNITS["np_fit"][1e6] * 0.5)


def test_memory_of_a_job_over_several_problems_adds_their_matrices():
    """A Fig. 4 shard keeps every N it prepares: the matrices add up, the work arrays are the largest problem's
    (measured: 13.3 GB for the non-private shard over every N up to 10⁶; one-problem estimate 8.1)."""
    cfg = {"n_train": None, "cross_validation": {"validation_fraction": 0.1}}
    ns = [1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6]
    probs = [{"n_train": int(n)} for n in ns]
    one = costs.vdm2020_mem_mb(cfg, probs[-1], 1)
    many = costs.vdm2020_jobs_mem_mb(cfg, probs, 1)
    assert 7_500 < one < 8_500 and 13_000 < many < 14_000
    assert costs.vdm2020_jobs_mem_mb(cfg, probs[-1:] * 3, 1) == one       # the same problem counted once
    assert costs.vdm2020_jobs_mem_mb(cfg, probs, 2) > many                 # a second worker: more work arrays
