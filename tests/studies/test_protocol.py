"""The study protocol (dpbench.studies.protocol): every registered study implements it, a misspelt or missing
hook is an error when the class is made, and nothing outside the studies dispatches on hook names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dpbench.sources import SOURCES
from dpbench.studies import STUDIES
from dpbench.studies.protocol import CellStudy, Study, UnitStudy, from_module, hooks
from dpbench.workflow import FIGURE_NAME

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_every_registered_study_implements_the_protocol(name):
    st = STUDIES[name]
    assert isinstance(st, Study) and st.name == name and st.shape in ("cells", "units")
    assert isinstance(st, CellStudy if st.shape == "cells" else UnitStudy)
    assert st.source in SOURCES
    public = {k for cls in type(st).__mro__ if cls is not object for k in vars(cls) if not k.startswith("_")}
    assert public <= set(hooks(st.shape))
    assert not getattr(type(st), "__abstractmethods__", None)
    for fig, spec in st.figures.items():  # every figure can be built by the figure rule, and is its own spec
        assert re.fullmatch(FIGURE_NAME, fig) and st.figure(fig) is spec and spec.name == fig


def test_a_misspelt_hook_is_an_error_not_a_silent_default():
    with pytest.raises(TypeError, match="series_thread"):
        class Typo(UnitStudy):  # noqa: F841 - the class statement itself must fail
            name = "typo"

            def series_thread(self, cfg, figure, series):  # the hook is series_threads
                return 1


def test_a_near_miss_module_function_is_an_error():
    """A study written as module functions (from_module): a function named one letter off a hook is rejected."""
    def series_thread(cfg, figure, series):  # the hook is series_threads
        return 1

    namespace = {"__name__": "toy", "series_thread": series_thread}
    series_thread.__module__ = "toy"
    with pytest.raises(TypeError, match="series_thread.*series_threads"):
        from_module(UnitStudy, namespace, name="toy", figures={})


def test_a_missing_hook_is_an_error_when_the_study_is_made():
    class Partial(CellStudy):
        name = "partial"

        def validate(self, cfg, prefix):
            pass

    with pytest.raises(TypeError, match="abstract"):
        Partial()


def test_no_dispatch_on_hook_names_outside_the_studies():
    """The workflow, runner, plotter, report and shard planner call the protocol; none looks a hook up by name."""
    for mod in ("workflow", "runner", "plot", "report", "shards", "cli", "costs", "plan"):
        src = (ROOT / "dpbench" / f"{mod}.py").read_text()
        assert not re.search(r"hasattr\((st|STUDIES\[|study\()", src), mod
        assert not re.search(r"getattr\((st|STUDIES\[|study\()", src), mod
