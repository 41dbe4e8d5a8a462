"""Report pages: figure labels carry the title and the reduced-grid mark; the study overview shows every figure
as a titled thumbnail with its caption beside it."""

import pandas as pd

from dpbench import verdicts as V
from dpbench.config import DEFAULT_CONFIG_PATH
from dpbench.studies import load_config
from dpbench.report import anchors_label, figure_label, gallery_html
from dpbench.results import provenance, write_parquet
from dpbench.workflow import caption_rst


def _smoke():
    return load_config(DEFAULT_CONFIG_PATH, DEFAULT_CONFIG_PATH.parent / "config" / "smoke.yaml")


def test_figure_label_and_caption_mark_reduced_grids():
    smoke, full = _smoke(), load_config()
    assert figure_label(smoke, "vdm2020", "fig1a").startswith("fig1a — ")
    assert V.REDUCED_LABEL in figure_label(smoke, "vdm2020", "fig1a")
    assert V.REDUCED_LABEL not in figure_label(full, "vdm2020", "fig1a")
    assert caption_rst(smoke, "vdm2020", "fig1a").startswith("**Reduced grid: indicative only**")
    assert "Reduced grid" not in caption_rst(full, "vdm2020", "fig1a")


def test_gallery_has_titles_thumbnails_captions_and_verdicts(tmp_path):
    png = tmp_path / "fig1a.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\nfake")
    png.with_suffix(".txt").write_text("Accuracy vs epsilon (van der Maaten & Hannun 2020, Fig. 1a).\nNote: a deviation.")
    anchors = tmp_path / "anchors.parquet"
    rows = [V.row("vdm2020", "claim1a", "fig1a", "s", "m", 1.0, True),
            V.row("vdm2020", "claim1b", "fig1a", "s", "m", float("nan"), True)]
    write_parquet(pd.DataFrame(rows), anchors, provenance({}, kind="anchor_checks"))
    page = gallery_html(_smoke(), "vdm2020", [str(png)], anchors)
    assert "fig1a: " in page and "data:image/png;base64," in page
    assert "Note: a deviation." in page and "display:flex" in page
    assert "2 checks: 1 hold, 0 do not hold, 1 undecided" in page and V.REDUCED_LABEL in page
    assert anchors_label(anchors).endswith("1 undecided")
    assert anchors_label(tmp_path / "missing.parquet") == "anchor checks"


def test_gallery_embeds_thumbnails_not_full_size_images(tmp_path):
    """The report shows a page as a data URI (browsers cap those near 2 MB): the overview embeds thumbnails."""
    import io

    from PIL import Image

    from dpbench.report import THUMB_WIDTH, thumbnail_png

    rng = __import__("numpy").random.default_rng(0)
    big = tmp_path / "fig1a.png"
    Image.fromarray(rng.integers(0, 255, (1000, 1600, 3), dtype="uint8")).save(big)  # noise: incompressible
    thumb = Image.open(io.BytesIO(thumbnail_png(big)))
    assert thumb.width == THUMB_WIDTH and thumb.height == round(1000 * THUMB_WIDTH / 1600)
    page = gallery_html(_smoke(), "vdm2020", [str(big)])
    assert len(page) < big.stat().st_size  # far smaller than the full-size image alone
