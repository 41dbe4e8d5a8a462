"""The result-row schema (dpbench.results.RESULT_COLUMNS), enforced in one place: the runner checks every series
of every study before it is written (the study tests run series through it)."""

import math

import pandas as pd
import pytest

from dpbench.results import RESULT_COLUMNS, check_result_rows


def _row(**kw):
    row = {"study": "s", "figure": "f", "series": "m", "method": "m", "dataset_variant": "real", "epsilon": 1.0,
           "delta": 0.0, "budget": math.nan, "rep": 0, "metric": "test_accuracy", "value": 0.9, "seed": 1,
           "runtime_s": 0.5}
    row.update(kw)
    return row


def test_a_complete_row_passes_and_empty_series_pass():
    df = pd.DataFrame([_row(), _row(rep=1, epsilon=math.inf)])
    assert check_result_rows(df, "s/f/m") is df
    assert set(RESULT_COLUMNS) <= set(df)
    check_result_rows(pd.DataFrame(), "s/f/m")


@pytest.mark.parametrize("change, message", [
    (lambda r: r.pop("budget"), "missing ['budget']"),
    (lambda r: r.update(unit_seconds=r.pop("runtime_s")), "old names ['unit_seconds (write runtime_s)']"),
    (lambda r: r.update(rep="0"), "wrong kind ['rep ("),
    (lambda r: r.update(epsilon="1"), "wrong kind ['epsilon ("),
])
def test_a_broken_row_is_rejected_naming_the_series_and_column(change, message):
    row = _row()
    change(row)
    with pytest.raises(ValueError, match="s/f/m") as err:
        check_result_rows(pd.DataFrame([row]), "s/f/m")
    assert message in str(err.value)
