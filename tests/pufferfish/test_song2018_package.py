"""song2018 as a package: one code hash per chapter (the import closure of its compute module), untouched by a
caption, plot, table or anchor-check edit; the claims are data that match the figures."""

import shutil
from pathlib import Path

from dpbench import codehash
from dpbench.studies import song2018
from dpbench.studies.song2018 import ch5_anchors, ch6_anchors, ch7_anchors, ch34_anchors

PKG = "dpbench.studies.song2018"
CH7, CH34 = f"{PKG}.ch7_compute", f"{PKG}.ch34_compute"
VIEWS = ("captions", "plots", "tables", "anchors", "ch7_anchors", "ch34_anchors", "ch34_stats", "spec", "compute")


def test_each_chapter_hashes_its_own_compute_closure_only():
    ch7, ch34 = codehash.closure([CH7]), codehash.closure([CH34])
    assert {"dpbench.methods.pufferfish", "dpbench.data.markov", f"{PKG}.ch7_scales"} <= set(ch7)
    assert {"dpbench.methods.ldp_sgd", "dpbench.privacy.mechanisms", f"{PKG}.ch34_data"} <= set(ch34)
    for mods, other in ((ch7, "ch34_"), (ch34, "ch7_")):
        assert not [m for m in mods if m.split(".")[-1] in VIEWS or m.split(".")[-1].startswith(other)
                    or m in (PKG, "dpbench.plot", "dpbench.verdicts", "dpbench.studies.base")], mods
    assert song2018.series_code_hash("mqm_exact") == codehash.code_hash(CH7)
    assert song2018.series_code_hash("ch4_mnist_order") == song2018.series_code_hash("ch3_synthetic") \
        == codehash.code_hash(CH34) != codehash.code_hash(CH7)


def test_a_caption_or_plot_edit_does_not_change_the_code_hash_a_compute_edit_does(tmp_path):
    root = tmp_path / "dpbench"
    shutil.copytree(Path(codehash.ROOT), root, ignore=shutil.ignore_patterns("__pycache__"))
    here = root / "studies" / "song2018"

    def hashes():
        return codehash.hash_closure([CH7], root), codehash.hash_closure([CH34], root)

    before = hashes()
    for view in VIEWS:
        with open(here / f"{view}.py", "a") as f:
            f.write("\n# an edit of the presentation\n")
    assert hashes() == before
    with open(here / "ch7_scales.py", "a") as f:
        f.write("\n# an edit of the chapter-7 computation\n")
    after7 = hashes()
    assert after7[0] != before[0] and after7[1] == before[1]
    with open(here / "ch34_data.py", "a") as f:
        f.write("\n# an edit of the chapter-3/4 computation\n")
    assert hashes()[0] == after7[0] and hashes()[1] != after7[1]


def test_claims_are_data_and_match_the_figures():
    claims = song2018.CLAIMS
    for c in claims.values():
        assert c.figure in song2018.FIGURES or c.figure == ch7_anchors.EXAMPLES, c
        assert c.section and c.statement, c
    for name, spec in song2018.FIGURES.items():
        assert set(spec.anchors) <= set(claims), name
    assert set(claims) == (set(ch7_anchors.CLAIMS) | set(ch34_anchors.CLAIMS) | set(ch5_anchors.CLAIMS)
                           | set(ch6_anchors.CLAIMS))
    for mod in (ch7_anchors, ch34_anchors, ch5_anchors, ch6_anchors):  # the checks pass measurements, never a statement
        src = Path(mod.__file__).read_text()
        assert "V.adder(" not in src and "V.row(" not in src and "V.as_row(" not in src
    # a statement without fields reads as printed (its literal braces are escaped in the template)
    assert claims["R1"].statement.format().endswith("with quilt {X₃, X₁₃} (§7.4.3.1)")
