"""Reference results and ``dpbench compare``: point keys found from the rows, the threshold, claims, missing
points, timing metrics, the default reference chosen by the run's grid, and an injected change (Laplace noise
× 1.5 in one estimation series) flagged on exactly the points it moves."""

from __future__ import annotations

import copy
import json

import numpy as np
import pandas as pd
import pytest

from dpbench import reference as R
from dpbench.cli import main
from dpbench.results import provenance, write_parquet


def rows(shift=0.0, reps=20, seed=0, series=("a", "b"), timing=False):
    """Result rows of one figure: two series over x, a per-repetition column (``noise_scale`` drawn per rep) and
    an axis column (``panel``) that separates points at one repetition."""
    rng = np.random.default_rng(seed)
    out = []
    for s in series:
        for panel in ("left", "right"):
            for x in (1.0, 2.0, 4.0):
                for rep in range(reps):
                    v = x + (panel == "right") + rng.normal(0, 0.1) + (shift if s == "b" and x == 4.0 else 0.0)
                    out.append({"study": "toy", "figure": "f1", "series": s, "method": s, "dataset_variant": "real",
                                "metric": "accuracy", "x_name": "epsilon", "x": x, "panel": panel, "rep": rep,
                                "noise_scale": rng.uniform(), "value": v, "seed": 1, "runtime_s": rng.uniform()})
                    if timing:
                        out.append({**out[-1], "metric": "runtime_s_fit", "value": rng.uniform()})
    return pd.DataFrame(out)


def write_run(root, df, claims=None, config=None):
    (root / "toy" / "f1").mkdir(parents=True, exist_ok=True)
    for s, g in df.groupby("series"):
        write_parquet(g, root / "toy" / "f1" / f"{s}.parquet", provenance({"seed": 1}))
    if claims is not None:
        write_parquet(pd.DataFrame(claims), root / "claims.parquet", provenance({"seed": 1}, kind="claims"))
    if config is not None:
        (root / ".jobs").mkdir(exist_ok=True)
        (root / ".jobs" / "config-0.json").write_text(json.dumps(config))
    return root


CLAIMS = [{"study": "toy", "figure": "f1", "claim": "c1", "statement": "b beats a", "measured": "0.1",
           "verdict": "holds", "reason": "", "reduced_grid": False}]


def test_point_columns_keep_axes_and_drop_per_repetition_columns():
    key = R.point_columns(rows())
    assert "panel" in key and "x" in key and "series" in key
    assert "noise_scale" not in key and "rep" not in key and "value" not in key
    pts = R.summarise_points(rows())
    assert len(pts) == 2 * 2 * 3 and (pts["n"] == 20).all()
    assert np.allclose(pts["se"], pts["std"] / np.sqrt(20))


def test_identical_run_passes_and_a_shift_is_flagged_on_exactly_its_points(tmp_path):
    ref = tmp_path / "ref"
    write_run(tmp_path / "run0", rows(), CLAIMS)
    R.write_reference(tmp_path / "run0", ref)
    same = R.compare(write_run(tmp_path / "run1", rows(), CLAIMS), ref)
    assert not same.failed and (same.points["z"] == 0).all() and (same.points["status"] == "ok").all()
    moved = R.compare(write_run(tmp_path / "run2", rows(shift=0.5), CLAIMS), ref)
    assert moved.failed
    flagged = moved.points[moved.points["status"] == "differs"]
    assert set(zip(flagged["series"], flagged["point"].str.contains("x=4"))) == {("b", True)}
    assert len(flagged) == 2  # b at x = 4 in both panels; nothing else
    # another seed: every point moves a little, none beyond the family-wise threshold
    other = R.compare(write_run(tmp_path / "run3", rows(seed=7), CLAIMS), ref)
    assert not other.failed and (other.points["z"] != 0).any()


def test_changed_or_missing_claims_and_missing_points_fail(tmp_path):
    ref = tmp_path / "ref"
    write_run(tmp_path / "run0", rows(), CLAIMS)
    R.write_reference(tmp_path / "run0", ref)
    changed = [{**CLAIMS[0], "verdict": "does not hold", "measured": "-0.1"}]
    c = R.compare(write_run(tmp_path / "run1", rows(), changed), ref)
    assert c.failed and list(c.claims["status"]) == ["changed"]
    assert "CHANGED  claim toy/f1 c1: holds -> does not hold" in R.report_text(c, ref, tmp_path / "run1")
    c = R.compare(write_run(tmp_path / "run2", rows(), []), ref)
    assert c.failed and list(c.claims["status"]) == ["missing"]
    c = R.compare(write_run(tmp_path / "run3", rows(series=("a",)), CLAIMS), ref)
    assert c.failed and set(c.points.loc[c.points["status"] == "missing", "series"]) == {"b"}


def test_timing_metrics_are_listed_not_compared(tmp_path):
    ref = tmp_path / "ref"
    write_run(tmp_path / "run0", rows(timing=True), CLAIMS)
    R.write_reference(tmp_path / "run0", ref)
    c = R.compare(write_run(tmp_path / "run1", rows(timing=True, seed=3).assign(
        value=lambda d: np.where(d["metric"] == "accuracy", rows(timing=True)["value"], d["value"] * 100)), CLAIMS), ref)
    assert not c.failed
    assert (c.points.loc[c.points["metric"] == "runtime_s_fit", "status"] == "timing").all()


def test_one_repetition_points_are_compared_exactly(tmp_path):
    ref = tmp_path / "ref"
    write_run(tmp_path / "run0", rows(reps=1), CLAIMS)
    R.write_reference(tmp_path / "run0", ref)
    assert not R.compare(write_run(tmp_path / "run1", rows(reps=1), CLAIMS), ref).failed
    c = R.compare(write_run(tmp_path / "run2", rows(reps=1, shift=1e-3), CLAIMS), ref)
    assert set(c.points.loc[c.points["status"] == "differs", "series"]) == {"b"}


def test_default_reference_is_chosen_by_the_grid_and_the_cli_exit_codes(tmp_path, capsys):
    cfg = {"seed": 1, "studies": {"toy": {"n": 3}}, "data": {"cache_dir": "data"}, "results_dir": "x"}
    other = {**cfg, "studies": {"toy": {"n": 4}}}
    write_run(tmp_path / "run0", rows(), CLAIMS, cfg)
    root = tmp_path / "refs"
    R.write_reference(tmp_path / "run0", root / "mine")
    write_run(tmp_path / "run_b", rows(), CLAIMS, other)
    R.write_reference(tmp_path / "run_b", root / "theirs")
    # paths and parallelism do not change the grid; the studies do
    run = write_run(tmp_path / "run1", rows(), CLAIMS, {**cfg, "results_dir": "elsewhere", "n_jobs": 4})
    assert R.default_reference(run, root) == str(root / "mine")
    with pytest.raises(ValueError, match="no reference matches"):
        R.default_reference(write_run(tmp_path / "run2", rows(), CLAIMS, {**cfg, "seed": 2}), root)
    assert main(["compare", str(run), str(root / "mine")]) == 0
    out = capsys.readouterr().out
    assert "OK:" in out and "(largest |z| 0.00, all identical)" in out     # the same rows: every z exactly 0
    assert main(["compare", str(write_run(tmp_path / "run3", rows(shift=1.0), CLAIMS)), str(root / "mine")]) == 1
    out = capsys.readouterr().out
    assert "DIFFERS  toy/f1 b accuracy" in out and out.strip().splitlines()[-1].startswith("FAIL")
    assert main(["compare", str(tmp_path / "nothing"), str(root / "mine")]) == 2
    assert "not a folder" in capsys.readouterr().err


def _estimation_run(config, root, monkeypatch=None):
    """The estimation study's mean_vs_d figure computed in-process into ``root`` as a results folder."""
    from dpbench.runner import run_series
    from dpbench.studies import STUDIES

    cfg = copy.deepcopy(config)
    cfg["results_dir"], cfg["cache_dir"] = str(root), str(root / "cache")
    for s in STUDIES["estimation"].series(cfg["studies"]["estimation"], "mean_vs_d"):
        run_series(cfg, "estimation", "mean_vs_d", s, root / "estimation" / "mean_vs_d" / f"{s}.parquet")
    return root


def test_noise_x1_5_in_one_method_is_flagged_on_exactly_the_points_it_moves(tiny_config, tmp_path, monkeypatch):
    from dpbench.methods import estimation as est

    config = copy.deepcopy(tiny_config)
    config["studies"]["estimation"]["figures"]["mean_vs_d"].update(repetitions=40, dims=[2, 8, 32])
    _estimation_run(config, tmp_path / "base")
    ref = tmp_path / "ref"
    R.write_reference(tmp_path / "base", ref)
    assert not R.compare(_estimation_run(config, tmp_path / "again"), ref).failed  # bit-identical rerun

    calibrate = est.calibrate

    def louder(mechanism, *a, **kw):
        c = calibrate(mechanism, *a, **kw)
        return est.Calibration(**{**c.__dict__, "scale": c.scale * 1.5}) if mechanism == "laplace" else c

    monkeypatch.setattr(est, "calibrate", louder)
    c = R.compare(_estimation_run(config, tmp_path / "louder"), ref)
    flagged = c.points[c.points["status"] == "differs"]
    moved = c.points[c.points["z"] != 0]
    assert c.failed
    assert set(moved["series"]) == {"laplace"} and set(flagged["series"]) == {"laplace"}
    # the noise moves the private error (and the total error it is part of), never the clipping error
    assert "clipped_error" not in set(flagged["metric"]) and "privacy_error" in set(flagged["metric"])
    assert (flagged.loc[flagged["metric"] == "privacy_error", "point"].str.len() > 0).all()
    # the errors at d = 8 and 32 move by ~5-7 standard errors and are flagged; at d = 2 the shift (0.19 on 0.38)
    # is ~2.5 standard errors of 40 repetitions: within the family-wise threshold (3.6), as it should be
    got = sorted(zip(flagged["metric"], flagged["point"].str.extract(r"x=(\d+)")[0]))
    assert got == [("l2_error", "32"), ("l2_error", "8"), ("privacy_error", "32"), ("privacy_error", "8")]


def test_timing_columns_never_identify_points():
    """A per-row CPU measurement (the audit's ``cpu_s``) differs between runs: it is not part of a point's key."""
    df = rows()
    df["cpu_s"] = np.random.default_rng(1).uniform(size=len(df))
    key = R.point_columns(df)
    assert "cpu_s" not in key and "panel" in key


def test_grid_hash_ignores_solver_settings_only():
    """A solver's precision (``float32``) or preconditioning does not change the grid a run is compared on; the
    seed, a grid value or a data source does."""
    import copy

    from dpbench.config import DEFAULT_CONFIG_PATH
    from dpbench.reference import grid_hash
    from dpbench.studies import load_config

    cfg = load_config(DEFAULT_CONFIG_PATH)
    h = grid_hash(cfg)
    alt = copy.deepcopy(cfg)
    alt["studies"]["vdm2020"]["dpsgd"]["float32"] = False
    alt["studies"]["vdm2020"]["lbfgs"]["precondition"] = False
    assert grid_hash(alt) == h
    for change in (lambda c: c.update(seed=1), lambda c: c["studies"]["vdm2020"].update(repetitions=99),
                   lambda c: c["data"].update(mnist_source="real")):
        other = copy.deepcopy(cfg)
        change(other)
        assert grid_hash(other) != h


def test_point_columns_prefer_an_axis_to_a_measured_number():
    """The audit's rows at one (method, ε) differ by their variant and by their measured threshold, either of which
    separates them: the variant (an axis) identifies the point, the threshold (a measurement) does not — or a run
    whose thresholds moved within noise would miss every point of the reference."""
    import pandas as pd

    rows = [{"study": "audit", "figure": "fig_audit", "series": m, "method": m, "metric": "eps_hat", "x": e,
             "variant": v, "threshold": 0.1 * i + e + (m == "b"), "rep": 0, "value": 1.0}
            for m in ("a", "b") for e in (1.0, 4.0) for i, v in enumerate(("correct", "noise_x0.5", "noise_x0.1"))]
    key = R.point_columns(pd.DataFrame(rows))
    assert "variant" in key and "threshold" not in key


def test_figures_of_another_grid_are_matched_and_skipped_per_figure(tmp_path, capsys):
    """A reference documents each figure's own grid (figure_grid_hashes): a run whose config differs only in
    another figure still finds it and compares every shared figure; a figure whose own grid differs is listed as
    not compared (its points computed something else), which neither fails nor passes it silently."""
    cfg = {"seed": 1, "studies": {"toy": {"n": 3, "figures": {"f1": {"eps": [1, 2]}, "f2": {"eps": [1]}}}},
           "data": {"cache_dir": "data"}, "results_dir": "x"}
    write_run(tmp_path / "run0", rows(), CLAIMS, cfg)
    root = tmp_path / "refs"
    R.write_reference(tmp_path / "run0", root / "mine")
    meta = json.loads((root / "mine" / "meta.json").read_text())
    assert set(meta["figure_grid_hashes"]) == {"toy/f1"}
    other_fig = copy.deepcopy(cfg)
    other_fig["studies"]["toy"]["figures"]["f2"]["eps"] = [1, 5]        # another figure's grid: f1 unchanged
    run = write_run(tmp_path / "run1", rows(), CLAIMS, other_fig)
    assert R.default_reference(run, root) == str(root / "mine")
    c = R.compare(run, root / "mine")
    assert not c.failed and set(c.points["status"]) == {"ok"}
    same_fig = copy.deepcopy(cfg)
    same_fig["studies"]["toy"]["figures"]["f1"]["eps"] = [1, 2, 3]    # f1's own grid changed: not compared
    run2 = write_run(tmp_path / "run2", rows(shift=1.0), CLAIMS, same_fig)
    with pytest.raises(ValueError, match="no reference matches"):
        R.default_reference(run2, root)
    c2 = R.compare(run2, root / "mine")
    assert set(c2.points["status"]) == {"other_grid"} and set(c2.claims["status"]) == {"other_grid"}
    assert not c2.failed
    assert "figures whose grid differs from the reference's not compared" in R.report_text(c2, "ref", "run")
    assert R.compare(write_run(tmp_path / "run3", rows(shift=1.0), CLAIMS, cfg), root / "mine").failed


def _write_fig(root, df, figure, study="toy"):
    (root / study / figure).mkdir(parents=True, exist_ok=True)
    for s, g in df.groupby("series"):
        write_parquet(g.assign(figure=figure, study=study), root / study / figure / f"{s}.parquet",
                      provenance({"seed": 1}))


def test_merge_updates_the_rerun_figure_and_its_studys_claims_and_keeps_the_rest(tmp_path, capsys):
    """``dpbench reference RUN OUT --merge``: a rerun of one study's figure replaces that figure's points and that
    study's claims in an existing reference; the other study's figure, claims and PNG stay byte for byte; meta.json
    lists the pieces; a run of the whole grid compares clean against the merged reference."""
    cfg = {"seed": 1, "studies": {"toy": {"n": 3}, "other": {"k": 1}}, "data": {"cache_dir": "data"},
           "results_dir": "x"}
    run0 = tmp_path / "run0"
    _write_fig(run0, rows(), "f1")
    _write_fig(run0, rows(seed=5), "g1", study="other")
    claims = [*CLAIMS, {**CLAIMS[0], "study": "other", "figure": "g1", "claim": "c2", "verdict": "fails"}]
    write_parquet(pd.DataFrame(claims), run0 / "claims.parquet", provenance({"seed": 1}, kind="claims"))
    (run0 / ".jobs").mkdir()
    (run0 / ".jobs" / "config-0.json").write_text(json.dumps(cfg))
    figs = tmp_path / "figs"
    for st, f in (("toy", "f1"), ("other", "g1")):
        (figs / st).mkdir(parents=True, exist_ok=True)
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        plt.figure(figsize=(2, 2))
        plt.plot([0, 1], [0, 1 if f == "f1" else 2])
        plt.savefig(figs / st / f"{f}.png")
        plt.close()
    ref = tmp_path / "ref"
    R.write_reference(run0, ref, figs, note="first")
    other_csv = (ref / "summary" / "other__g1.csv").read_bytes()
    other_png = (ref / "figures" / "other" / "g1.png").read_bytes()
    # the rerun: toy/f1 moved (shift), its claim now fails; a new config of toy only
    cfg2 = {**cfg, "studies": {**cfg["studies"], "toy": {"n": 3, "pilot": 0.1}}}
    run1 = tmp_path / "run1"
    _write_fig(run1, rows(shift=1.0), "f1")
    write_parquet(pd.DataFrame([{**CLAIMS[0], "verdict": "fails"}]), run1 / "claims.parquet",
                  provenance({"seed": 1}, kind="claims"))
    (run1 / ".jobs").mkdir()
    (run1 / ".jobs" / "config-0.json").write_text(json.dumps(cfg2))
    with pytest.raises(FileNotFoundError, match="no reference to update"):
        R.write_reference(run1, tmp_path / "nothing", merge=True)
    assert main(["reference", str(run1), str(ref), "--figures", str(figs), "--merge", "--note", "toy rerun"]) == 0
    assert (ref / "summary" / "other__g1.csv").read_bytes() == other_csv
    assert (ref / "figures" / "other" / "g1.png").read_bytes() == other_png
    merged = pd.read_csv(ref / "claims.csv")
    assert dict(zip(merged["study"], merged["verdict"])) == {"toy": "fails", "other": "fails"}
    meta = json.loads((ref / "meta.json").read_text())
    assert meta["grid_hash"] == R.grid_hash(cfg2) and meta["figures"] == 2
    assert [p["note"] for p in meta["pieces"]] == ["first", "toy rerun"]
    assert meta["pieces"][1]["figures"] == ["toy/f1"]
    # a whole run at the new grid: identical to the merged reference
    run2 = tmp_path / "run2"
    _write_fig(run2, rows(shift=1.0), "f1")
    _write_fig(run2, rows(seed=5), "g1", study="other")
    write_parquet(pd.DataFrame([{**CLAIMS[0], "verdict": "fails"}, claims[1]]), run2 / "claims.parquet",
                  provenance({"seed": 1}, kind="claims"))
    c = R.compare(run2, ref)
    assert not c.failed and set(c.points["status"]) == {"ok"}, c.points["status"].value_counts()


def test_merge_of_some_figures_of_a_study_keeps_the_claims_of_its_other_figures(tmp_path):
    """A rerun of one figure of a study whose anchor checks ran on that figure only: the claims about it are
    replaced, the claims about the study's other figures (and a claim naming both) are kept."""
    run0 = tmp_path / "run0"
    _write_fig(run0, rows(), "f1")
    _write_fig(run0, rows(seed=5), "f2")
    claims = [CLAIMS[0], {**CLAIMS[0], "figure": "f2", "claim": "c2"},
              {**CLAIMS[0], "figure": "f1, f2", "claim": "c3"}]
    write_parquet(pd.DataFrame(claims), run0 / "claims.parquet", provenance({"seed": 1}, kind="claims"))
    ref = tmp_path / "ref"
    R.write_reference(run0, ref)
    run1 = tmp_path / "run1"
    _write_fig(run1, rows(shift=1.0), "f1")
    write_parquet(pd.DataFrame([{**CLAIMS[0], "verdict": "fails", "measured": "0.9"}]), run1 / "claims.parquet",
                  provenance({"seed": 1}, kind="claims"))
    R.write_reference(run1, ref, merge=True)
    merged = pd.read_csv(ref / "claims.csv")
    assert sorted(zip(merged["claim"], merged["verdict"])) == [("c1", "fails"), ("c2", "holds"), ("c3", "holds")]
    assert len(merged) == 3
