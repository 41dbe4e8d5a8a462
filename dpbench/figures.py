"""The figure job: read a figure's result files and draw it — with the study's own plotter (a unit study) or the
generic accuracy-versus-budget plot of :mod:`dpbench.plot` (a cell study). Above the studies in the layers: the
drawing helpers in :mod:`dpbench.plot` stay below them, so studies can use them.
"""

from __future__ import annotations

from pathlib import Path

from dpbench.plot import plot_figure
from dpbench.results import read_results


def plot_from_files(config: dict, study_name: str, figure_name: str, inputs: list[str], out: str | Path) -> str:
    from dpbench.studies import study

    from dpbench.plot import figure_mark
    from dpbench.verdicts import REDUCED_LABEL, reduced_grid

    st = study(study_name)
    df = read_results(*inputs)
    # a figure of a reduced grid says so on the image itself (its rows and claims already do)
    mark = f"{REDUCED_LABEL.upper()}" if reduced_grid(config, study_name, figure_name) else ""
    with figure_mark(mark):
        if st.shape == "units":  # a study with its own figure kinds (panels, tables rendered as images)
            return st.plot(config, figure_name, df, out)
        return plot_figure(st.figure(figure_name), df, out, st.deviations(config["studies"][study_name],
                                                                          figure_name))
