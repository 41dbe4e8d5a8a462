"""The dpbench command line."""

import pandas as pd

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
