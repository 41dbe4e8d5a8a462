"""No label or legend over data: dpbench.plot.overlaps compares their bounding boxes with the drawn data, and
save_figure's declutter moves them to free places."""

import numpy as np
import pandas as pd
import pytest

import dpbench.plot as P


def _fig():
    plt = P._pyplot()
    fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
    x = np.linspace(0, 1, 20)
    ax.plot(x, 0.95 + 0.0 * x, label="a line across the top")    # data where the label and legend start
    ax.plot(x, 0.1 + 0.8 * x ** 8, label="rising at the right")
    ax.set_ylim(0, 1)
    ax.text(0.02, 0.98, "SUBSTITUTE DATA: x", transform=ax.transAxes, va="top", gid=P.LABEL_GID)
    ax.legend(loc="upper left")
    return plt, fig


def test_overlaps_detects_label_and_legend_over_data_and_declutter_removes_them():
    plt, fig = _fig()
    found = P.overlaps(fig)
    assert any("label" in f and "covers" in f for f in found) and any("legend" in f for f in found)
    P.declutter(fig)
    assert P.overlaps(fig) == []
    plt.close(fig)


def test_label_avoids_the_legend():
    plt = P._pyplot()
    fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
    ax.plot([0, 1], [0, 0.05], label="low")  # data only at the bottom: both want the top left
    ax.set_ylim(0, 1)
    ax.text(0.02, 0.98, "SUBSTITUTE DATA: x", transform=ax.transAxes, va="top", gid=P.LABEL_GID)
    ax.legend(loc="upper left")
    assert any("overlaps the legend" in f for f in P.overlaps(fig))
    P.declutter(fig)
    assert P.overlaps(fig) == []
    plt.close(fig)


def test_plot_figure_with_substitute_label_and_legend_is_clean(tmp_path, monkeypatch):
    """The generic plotter (e.g. vdm2020 fig1b: legend and SUBSTITUTE label both near the top left)."""
    from dpbench.studies import vdm2020

    spec = vdm2020.figure("fig1b")
    rows = [{"series": s, "x": e, "value": v + 0.01 * r, "rep": r, "curve": "", "dataset_variant": "substitute:x",
             "is_substitute": True, "epsilon": e, "epsilon_achieved": e}
            for s, base in (("dpsgd", 0.85), ("loss_perturbation", 0.8), ("subsample_aggregate", 0.75),
                            ("model_sensitivity", 0.7), ("non_private", 0.9))
            for e, v in ((0.2, base - 0.1), (0.5, base - 0.05), (1.0, base)) for r in range(3)]
    seen = []
    orig = P.save_figure

    def spy(fig, out, caption):
        P.declutter(fig)
        seen.append(P.overlaps(fig))
        return orig(fig, out, caption)

    monkeypatch.setattr(P, "save_figure", spy)
    P.plot_figure(spec, pd.DataFrame(rows), tmp_path / "f.png", [])
    assert seen == [[]] and (tmp_path / "f.png").stat().st_size > 0


@pytest.mark.parametrize("tpr", [0.0, 0.02, 0.9])
def test_membership_rate_error_bars_clipped_and_floored(tpr):
    """The TPR at FPR = 1e-3 panel (log axis): zero drawn at the floor, error bars inside [floor, 1]."""
    from dpbench.studies import membership as M

    v, err = M._rate_errorbars(np.array([tpr]), np.array([0.5]), M.TPR_FLOOR)
    assert v[0] == max(tpr, M.TPR_FLOOR)
    assert v[0] - err[0, 0] == pytest.approx(max(tpr - 0.5, M.TPR_FLOOR))
    assert v[0] + err[1, 0] == pytest.approx(min(tpr + 0.5, 1))
    v, err = M._rate_errorbars(np.array([tpr]), np.array([0.5]))  # linear panels (AUC): clipped to [0, 1]
    assert v[0] - err[0, 0] == pytest.approx(max(tpr - 0.5, 0)) and v[0] + err[1, 0] <= 1


def test_crowded_single_panel_gets_its_legend_beside_it():
    plt = P._pyplot()
    fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
    x = np.linspace(0, 1, 30)
    for k in range(12):  # lines everywhere: no inside location is free
        ax.plot(x, (k / 12 + 0.3 * x) % 1.0, label=f"series {k}")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper left", fontsize=7)
    assert P.overlaps(fig)
    P.declutter(fig)
    assert P.overlaps(fig) == [] and getattr(fig, "_dpbench_tight", False)
    plt.close(fig)
