"""What a figure says about its own data: a reduced grid's mark on the image and at the head of its caption (a
full-grid figure carries neither); a title that names the user data actually drawn."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpbench import figures
from dpbench.plot import figure_mark, save_figure


def _png(path, mark):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2), dpi=60)
    ax.plot([0, 1], [0, 1])
    with figure_mark(mark):
        save_figure(fig, path, "caption")
    return plt.imread(path)


def test_mark_on_image_and_caption(tmp_path):
    marked = _png(tmp_path / "a.png", "REDUCED GRID: INDICATIVE ONLY")
    plain = _png(tmp_path / "b.png", "")
    assert (tmp_path / "a.txt").read_text() == "[REDUCED GRID: INDICATIVE ONLY] caption"
    assert (tmp_path / "b.txt").read_text() == "caption"
    assert marked.shape == plain.shape and not np.array_equal(marked, plain)
    orange = (marked[..., 0] > 0.9) & (marked[..., 1] > 0.4) & (marked[..., 1] < 0.7) & (marked[..., 2] < 0.2)
    assert orange[int(0.8 * marked.shape[0]):, int(0.5 * marked.shape[1]):].any()   # lower right corner


def test_plot_from_files_marks_only_reduced_grids(tmp_path, monkeypatch):
    seen = []

    class FakeStudy:
        shape = "units"

        def plot(self, config, figure, df, out):
            from dpbench.plot import _MARK

            seen.append(_MARK[-1])
            return ""

    monkeypatch.setattr("dpbench.studies.study", lambda name: FakeStudy())
    monkeypatch.setattr(figures, "read_results", lambda *paths: pd.DataFrame())
    for reduced in (True, False):
        monkeypatch.setattr("dpbench.verdicts.reduced_grid", lambda *a, r=reduced, **k: r)
        figures.plot_from_files({}, "toy", "fig", [], tmp_path / "x.png")
    assert seen == ["REDUCED GRID: INDICATIVE ONLY", ""]


def test_titles_name_the_user_data():
    from dpbench.plot import data_title

    assert data_title("MNIST: accuracy vs ε (δ = 0, B = 100)", []) == "MNIST: accuracy vs ε (δ = 0, B = 100)"
    assert data_title("MNIST: accuracy vs ε (δ = 0, B = 100)", ["blobs"]) == \
        "blobs: accuracy vs ε (δ = 0, B = 100) (paper: MNIST)"
    assert data_title("accuracy vs ε", ["blobs"]) == "accuracy vs ε — on blobs"
