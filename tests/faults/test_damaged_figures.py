"""A damaged figure is noticed at start-up (fast: no workflow run)."""


def test_a_truncated_figure_is_noticed_and_redrawn(tmp_path):
    """A PNG cut short (a killed writer, a full disk) is removed at start-up with a warning naming it, so it is a
    missing target and redrawn; a complete one is kept (it was never noticed)."""
    from dpbench.results import png_is_intact, remove_damaged_figures

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    (tmp_path / "figures" / "s").mkdir(parents=True)
    good, cut = tmp_path / "figures" / "s" / "a.png", tmp_path / "figures" / "s" / "b.png"
    plt.plot([0, 1]); plt.savefig(good); plt.close("all")  # noqa: E702
    cut.write_bytes(good.read_bytes()[:-40])
    assert png_is_intact(good) and not png_is_intact(cut)
    assert remove_damaged_figures(tmp_path / "figures") == [cut]
    assert good.exists() and not cut.exists()
