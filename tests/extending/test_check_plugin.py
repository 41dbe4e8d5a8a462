"""`dpbench check-plugin`: the docs' worked example passes every check; each broken plugin fails exactly the check
that names its fault, in one line, and the command exits 1."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from dpbench.cli import main

HEAD = """
import numpy as np
from dpbench.methods import REGISTRY, TRAINING, Method, Setting
from dpbench.privacy import sample_l2_laplace
"""

GOOD = """
@REGISTRY.register
class {cls}(Method):
    name = "{name}"
    label = "check-plugin toy"
    kind = "training"
    depends_on = ("epsilon", "rep")
    settings_spec = ({setting})

    def cell_params(self, problem, tuned, epsilon, delta):
        return {{"clip": 1.0}}

    def group_key(self, cell):
        {group_key}

    def run_group(self, problem, cells, ctx):
        sums = np.zeros((problem.n_classes, problem.dim))
        np.add.at(sums, problem.y_train, problem.X_train)
        out = []
        for cell in cells:
            {draw}
            acc = float(np.mean(np.argmax(problem.X_eval @ (sums + noise).T, axis=1) == problem.y_eval))
            out.append({{"accuracy": {accuracy}, "noise_scale": 2.0 / cell.epsilon}})
        return out{cut}
"""

RIGHT = dict(setting="", group_key="return cell.key",
             draw="noise = sample_l2_laplace(ctx.rng(cell.stream_key), cell.epsilon / 2, sums.size).reshape(sums.shape)",
             accuracy="acc", cut="")

BROKEN = {   # fault -> (replacements of the right plugin, the check that must fail, words its line must hold)
    "group_key reads a parameter": (dict(group_key='return (cell.param["clip"], cell.rep)'),
                                    "group_key on planning cells", ["KeyError", "params == ()"]),
    "one record too few": (dict(cut="[:-1]"), "run_group", ["records for"]),
    "global numpy random state": (dict(draw="noise = np.random.laplace(size=sums.shape) * 2 / cell.epsilon"),
                                  "reproducibility", ["ctx.rng(cell.stream_key)"]),
    "accuracy out of range": (dict(accuracy="acc * 100"), "run_group", ["'accuracy' must be a finite number"]),
    "required setting missing": (dict(setting='Setting("clip", "{name}_block"),'), "settings",
                                 ["{name}_block.clip", "required"]),
}


def _plugin(tmp_path: Path, name: str, **changes) -> Path:
    fields = {**RIGHT, **changes}
    fields = {k: v.format(name=name) for k, v in fields.items()}
    path = tmp_path / f"{name}.py"
    path.write_text(HEAD + textwrap.dedent(GOOD).format(cls=name.title().replace("_", ""), name=name, **fields))
    return path


@pytest.fixture(autouse=True)
def _registrations_stay_in_the_test(isolated_registries):
    """`check-plugin` imports the plugin into this process: its registrations must not leak into the tests that
    later run in the same pytest worker (e.g. the exact set of built-in training methods)."""


def _run(capsys, path) -> tuple[int, list[str]]:
    rc = main(["check-plugin", str(path)])
    return rc, capsys.readouterr().out.strip().splitlines()


def test_a_correct_plugin_passes_every_check(tmp_path, capsys):
    rc, lines = _run(capsys, _plugin(tmp_path, "cp_right"))
    assert rc == 0, lines
    checks = [re.sub(r"^ok +cp_right: ", "", ln) for ln in lines if ln.startswith("ok   cp_right")]
    assert checks == ["settings", "depends_on", "group_key on planning cells", "cell_params", "run_group",
                      "reproducibility"]
    assert lines[-1] == "7 checks passed, 0 failed"


@pytest.mark.parametrize("fault", list(BROKEN))
def test_each_broken_plugin_fails_the_check_that_names_its_fault(tmp_path, capsys, fault):
    changes, check, words = BROKEN[fault]
    name = "cp_" + re.sub(r"\W+", "_", fault)
    rc, lines = _run(capsys, _plugin(tmp_path, name, **changes))
    assert rc == 1, lines
    fails = [ln for ln in lines if ln.startswith("FAIL")]
    assert len(fails) == 1, lines
    assert fails[0].startswith(f"FAIL {name}: {check}: "), fails
    for w in words:
        assert w.format(name=name) in fails[0], fails[0]


def test_import_errors_and_empty_modules_are_named(tmp_path, capsys):
    bad = tmp_path / "cp_syntax.py"
    bad.write_text("def broken(:\n")
    rc, lines = _run(capsys, bad)
    assert rc == 1 and lines[0].startswith("FAIL -: import: cannot import") and "SyntaxError" in lines[0]
    empty = tmp_path / "cp_empty.py"
    empty.write_text("X = 1\n")
    rc, lines = _run(capsys, empty)
    assert rc == 1 and lines[0].startswith("FAIL -: registration: the module registered no method")


def test_train_hook_is_checked(tmp_path, capsys):
    src = HEAD + textwrap.dedent("""
    @TRAINING.register
    class CpTrain(Method):
        name = "cp_train"
        label = "check-plugin train-only toy"
        kind = "training"

        def train(self, X, y, n_classes, epsilon, delta, rng):
            return np.random.normal(size=(X.shape[1], n_classes)), {"noise_scale": 1.0}   # ignores rng
    """)
    path = tmp_path / "cp_train.py"
    path.write_text(src)
    rc, lines = _run(capsys, path)
    assert rc == 1, lines
    assert [ln.split(":")[1].strip() for ln in lines if ln.startswith("FAIL")] == ["train reproducibility"], lines
    assert any(ln.startswith("ok   cp_train: train input check") for ln in lines), lines


def test_the_plan_names_a_group_key_that_reads_parameters():
    from dpbench.methods import Cell
    from dpbench.shards import _planning_group_key

    class Reads:
        name = "reads_params"

        def group_key(self, cell):
            return cell.param["l2"]

    cell = Cell(method="reads_params", problem="p", params=(), epsilon=1.0, delta=0.0, budget=1, rep=0)
    with pytest.raises(ValueError, match=r"'reads_params': group_key\(cell\) raised KeyError.*dpbench check-plugin"):
        _planning_group_key(Reads(), cell)
