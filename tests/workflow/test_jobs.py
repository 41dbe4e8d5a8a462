"""The jobs' command line (dpbench.jobs) and the config file the jobs read (workflow.job_config)."""

import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from dpbench import jobs, workflow as W
from dpbench.config import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_parse_fixed_arguments_threads_and_inputs():
    path, fn, kw = jobs.parse(["c.json", "series", "vdm2020", "fig1a", "dpsgd", "out.parquet", "2", "x.log"])
    assert (path, fn) == ("c.json", "job_series")
    assert kw == {"study": "vdm2020", "figure": "fig1a", "series": "dpsgd", "out": "out.parquet", "threads": 2,
                  "log": "x.log"}
    _, fn, kw = jobs.parse(["c.json", "figure", "wu2016", "fig3_2", "f.png", "f.log", "a.parquet", "b.parquet"])
    assert fn == "job_figure" and kw["inputs"] == ["a.parquet", "b.parquet"] and kw["out"] == "f.png"
    _, _, kw = jobs.parse(["c.json", "claims", "p", "h", "f", "m", "l"])  # no anchors: an empty list
    assert kw["anchors"] == []


@pytest.mark.parametrize("argv, match", [
    (["c.json"], "usage"),
    (["c.json", "nope"], "KIND one of"),
    (["c.json", "dataset", "vdm2020", "out"], "expected arguments"),
    (["c.json", "dataset", "vdm2020", "out", "log", "extra"], "expected arguments"),
])
def test_parse_rejects_wrong_commands(argv, match):
    with pytest.raises(ValueError, match=match):
        jobs.parse(argv)


def test_every_kind_names_a_workflow_function_with_those_arguments():
    import inspect

    for kind, (fn, names) in jobs.KINDS.items():
        params = list(inspect.signature(getattr(W, fn)).parameters)
        assert params[0] == "config", kind
        assert sorted(params[1:]) == sorted(n.lstrip("*") for n in names), kind


def test_job_config_written_by_the_main_process_kept_by_a_job_process(tmp_path):
    raw = {"results_dir": str(tmp_path / "res"), "x": "1e-5"}
    path = Path(W.job_config(raw, {**raw, "x": 1e-5}))
    assert path.parent == tmp_path / "res" / ".jobs"
    assert json.loads(path.read_text())["x"] == 1e-5
    # a job's process (cluster) parses the Snakefile again with the unvalidated config: it must not overwrite
    assert W.job_config(raw, raw, main_process=False) == str(path)
    assert json.loads(path.read_text())["x"] == 1e-5
    # another config, another file
    other = W.job_config({**raw, "y": 1}, {**raw, "y": 1})
    assert other != str(path)


def test_a_garbage_job_config_is_rewritten(tmp_path):
    """A damaged results/.jobs/config-*.json (binary garbage) is rewritten by the main process (it was a
    UnicodeDecodeError at the Snakefile's start on every run)."""
    raw = {"results_dir": str(tmp_path / "res"), "x": 1}
    path = Path(W.job_config(raw, raw))
    path.write_bytes(b"\xff\xfe\x00garbage")
    assert W.job_config(raw, raw) == str(path)
    assert json.loads(path.read_text()) == raw


def test_job_config_refuses_what_json_cannot_carry(tmp_path):
    raw = {"results_dir": str(tmp_path), "grid": {1: "a"}}  # an integer key would come back as "1"
    with pytest.raises(ConfigError, match="JSON"):
        W.job_config(raw, raw)


def test_job_shell_quotes_the_literal_part_and_keeps_placeholders(tmp_path):
    cfg = str(tmp_path / "odd {dir}" / "c.json")
    cmd = W.job_shell(cfg, "dataset", "{wildcards.study}", "{output:q}", "{log:q}")
    assert cmd.endswith(" dataset {wildcards.study} {output:q} {log:q}")
    literal = cmd.split(" dataset ")[0].replace("{{", "{").replace("}}", "}")
    assert shlex.split(literal) == [sys.executable, "-m", "dpbench.jobs", cfg]
    with pytest.raises(ValueError, match="unknown job kind"):
        W.job_shell(cfg, "nope")


def test_no_rule_runs_python_inside_snakemake():
    """A ``run:`` block costs a second Snakemake process per job (the Snakefile parsed and the DAG built again):
    every rule is a shell command of dpbench.jobs."""
    for f in [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").glob("*.smk"))]:
        assert not re.search(r"^\s+run:\s*$", f.read_text(), re.M), f
