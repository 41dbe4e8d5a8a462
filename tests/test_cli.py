"""The dpbench command line."""

import pandas as pd
import pytest

from dpbench.cli import main
from dpbench.results import provenance, write_parquet


def test_figures_lists_targets(capsys):
    assert main(["figures"]) == 0
    out = capsys.readouterr().out
    assert "vdm2020/fig2a\tfigures/vdm2020/fig2a.png" in out
    lines = {line.split("\t")[0]: line for line in out.splitlines()}
    assert "dpsgd" in lines["vdm2020/fig1b"]
    assert "dpsgd" not in lines["vdm2020/fig1a"]


def test_check_config_reports_the_bad_key(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("studies:\n  vdm2020:\n    figures:\n      fig2a:\n        budgets: [0, 10]\n")
    assert main(["check-config", "--configfile", str(bad)]) == 2
    assert "studies.vdm2020.figures.fig2a.budgets[0]" in capsys.readouterr().err
    assert main(["check-config"]) == 0


def test_summary_of_a_result_file(tmp_path, capsys):
    df = pd.DataFrame({"study": "vdm2020", "figure": "fig1a", "series": "dpsgd", "dataset_variant": "mnist",
                       "metric": "test_accuracy", "x_name": "epsilon", "x": [1.0, 1.0, 2.0], "value": [0.5, 0.7, 0.9]})
    path = tmp_path / "r.parquet"
    write_parquet(df, path, provenance({"seed": 1}))
    assert main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert "0.6" in out and "git" in out and "numpy" in out


def test_summary_of_missing_file_is_a_clear_error(tmp_path, capsys):
    assert main(["summary", str(tmp_path / "none")]) == 2
    assert "no result files" in capsys.readouterr().err


def test_run_rejects_unknown_figure(capsys):
    assert main(["run", "vdm2020", "fig42", "dpsgd"]) == 2
    assert "unknown figure 'fig42'" in capsys.readouterr().err


@pytest.mark.parametrize("text, needle", [
    ("seed: [1\n", "line 2"),
    ("seed: 1\nseed: 2\n", "duplicate key 'seed'"),
    ("- 1\n", "top level must be a mapping"),
    ("studies: {vdm2020: {figures: {fig1a: {epsilons: [.nan]}}}}\n", "epsilons[0]: nan is not a finite number"),
])
def test_check_config_bad_yaml_is_an_error_not_a_traceback(tmp_path, capsys, text, needle):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    assert main(["check-config", "--configfile", str(bad)]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_run_with_unwritable_cache_names_the_path_before_any_compute(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"cache_dir: {blocker / 'cache'}\nresults_dir: {tmp_path / 'results'}\n"
                   f"data: {{cache_dir: {tmp_path / 'data'}, mnist_source: substitute}}\n")  # never the network
    assert main(["run", "--configfile", str(cfg), "vdm2020", "fig1a", "non_private"]) == 2
    err = capsys.readouterr().err
    assert f"cannot write to {blocker / 'cache'}" in err and "Traceback" not in err
    assert not (tmp_path / "results").exists()


def test_help_lists_subcommands_with_descriptions(capsys):
    from dpbench.cli import COMMANDS

    with pytest.raises(SystemExit):
        main(["--help"])
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps long lines
    for cmd, desc in COMMANDS.items():
        assert cmd in out and desc in out, cmd


def test_summary_of_an_anchor_file_prints_the_verdicts(tmp_path, capsys):
    from dpbench import verdicts as V

    rows = [V.row("vdm2020", "claim2", "fig1b", "DP-SGD best", "best at 50%", 0.5, V.undecided(V.WIDE)),
            V.row("vdm2020", "claim3a", "fig2a", "decreases", "-0.1", -0.1, True)]
    path = tmp_path / "anchors.parquet"
    write_parquet(pd.DataFrame(rows).assign(reduced_grid=[True, False]), path,
                  provenance({"seed": 1}, study="vdm2020", kind="anchor_checks"))
    assert main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert "anchor checks of vdm2020" in out and "1 hold, 0 do not hold, 1 undecided" in out
    assert "undecided: interval too wide [reduced grid: indicative only]" in out and "claim3a" in out


def test_summary_of_a_parquet_without_result_rows_says_what_it_is(tmp_path, capsys):
    path = tmp_path / "other.parquet"
    pd.DataFrame({"a": [1], "b": [2]}).to_parquet(path)
    assert main(["summary", str(path)]) == 0
    assert "not result rows" in capsys.readouterr().out


def test_summary_groups_by_every_column_that_separates_curves(tmp_path, capsys):
    """Two metrics × three ε × 30 repetitions at each x: one line per (metric, ε, x), count 30 — never one line
    per x pooling the curves (the estimation study's ldp_vs_n draws one curve per ε)."""
    rows = [{"study": "estimation", "figure": "ldp_vs_n", "series": "local", "dataset_variant": "synthetic",
             "metric": m, "x_name": "n", "x": x, "epsilon": e, "rep": r, "value": float(e), "noise_scale": r * 0.1}
            for m in ("abs_error", "privacy_error") for e in (0.5, 1.0, 2.0) for x in (100.0, 1000.0)
            for r in range(30)]
    path = tmp_path / "r.parquet"
    write_parquet(pd.DataFrame(rows), path, provenance({"seed": 1}))
    assert main(["summary", str(path)]) == 0
    table = [line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("estimation")]
    assert len(table) == 2 * 3 * 2 and all(line.split()[-1] == "30" for line in table)
    assert all(float(line.split()[-2]) == 0.0 for line in table)  # one ε per line: no spread


def test_directory_option_resolves_the_config_from_there(tmp_path, monkeypatch, capsys):
    """``-d DIR`` as in Snakemake: a plugin file named relative to the workflow folder is found from anywhere;
    --configfile stays relative to where the command runs; a missing DIR is a usage error (exit 2)."""
    work = tmp_path / "wf"
    work.mkdir()
    (work / "myplug.py").write_text("X = 1\n")
    (tmp_path / "cfg.yaml").write_text("plugins: [myplug.py]\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["check-config", "--configfile", "../cfg.yaml"]) == 2          # myplug.py is not here
    assert "myplug.py" in capsys.readouterr().err
    assert main(["check-config", "-d", str(work), "--configfile", "../cfg.yaml"]) == 0
    assert "config OK" in capsys.readouterr().out
    assert main(["plan", "-d", str(tmp_path / "missing")]) == 2
    assert "not a folder" in capsys.readouterr().err
