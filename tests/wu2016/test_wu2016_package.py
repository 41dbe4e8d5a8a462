"""wu2016 as a package: the claims are data that match the figures, and each chapter's code hash covers its own
computation only (a caption, plot or anchor edit reruns nothing; a chapter-4 edit never reruns chapter 3)."""

import shutil
from pathlib import Path

import dpbench
from dpbench.codehash import closure, hash_closure
from dpbench.studies import wu2016
from dpbench.studies.wu2016 import ch3_anchors, ch3_compute, ch4_anchors, ch4_compute

CH3, CH4 = "dpbench.studies.wu2016.ch3_compute", "dpbench.studies.wu2016.ch4_compute"
NOT_COMPUTE = ("captions", "plots", "anchors", "ch3_anchors", "ch4_anchors", "spec", "summaries", "compute")


def test_claims_are_data_and_match_the_figures():
    claims = wu2016.CLAIMS
    assert set(claims) == set(ch3_anchors.CLAIMS) | set(ch4_anchors.CLAIMS)
    for c in claims.values():
        assert c.figure in wu2016.FIGURES and c.section.startswith("Wu 2016"), c
        assert c.id.split("-")[0] in wu2016.FIGURES[c.figure].anchors, c   # A1-scs13 is one of fig3_2's A1 checks
    for name, spec in wu2016.FIGURES.items():
        ids = {c.id.split("-")[0] for c in claims.values() if c.figure == name}
        assert set(spec.anchors) == ids, name
    # a statement with a value derived by the check is a template; the others are the statement itself
    assert claims["A6"].statement.format(more="k = 20", fewer="k = 1").startswith(
        "MNIST Test 3, b = 50: more passes improve the accuracy (Wu 2016, §3.3, Fig. 3.3(b)); checked as: the mean "
        "test accuracy with k = 20 above the one with k = 1 at ≥ 80 % of the ε (at least 2 ε), differences beyond 2")
    assert all(c.statement.format() == c.statement for k, c in claims.items() if k != "A6")


def test_each_chapter_hashes_its_own_computation_only():
    for name, other in ((CH3, CH4), (CH4, CH3)):
        mods = closure([name])
        assert other not in mods and other.replace("compute", "data") not in mods
        assert not [m for m in mods if m.split(".")[-1] in NOT_COMPUTE
                    or m in ("dpbench.plot", "dpbench.verdicts", "dpbench.studies.base")], name
    assert {"dpbench.methods.private_psgd", "dpbench.learn.psgd", "dpbench.learn.psgd_many",
            "dpbench.privacy.mechanisms", "dpbench.studies.wu2016.ch3_data"} <= set(closure([CH3]))
    assert {"dpbench.methods.output_perturbation", "dpbench.methods.objective_perturbation",
            "dpbench.methods.functional_mechanism", "dpbench.attacks.model_inversion", "dpbench.data.warfarin",
            "dpbench.studies.wu2016.ch4_data"} <= set(closure([CH4]))
    assert wu2016.series_code_hash("ch4_fm") == ch4_compute.code_hash()
    assert wu2016.series_code_hash("mnist_bolt_on") == wu2016.series_code_hash("panel_a") == ch3_compute.code_hash()
    assert ch3_compute.code_hash() != ch4_compute.code_hash()


def test_a_caption_or_plot_edit_does_not_change_the_code_hash_a_compute_edit_does(tmp_path):
    root = Path(shutil.copytree(Path(dpbench.__file__).parent, tmp_path / "dpbench",
                                ignore=shutil.ignore_patterns("__pycache__")))
    study = root / "studies" / "wu2016"

    def hashes():
        return hash_closure([CH3], root), hash_closure([CH4], root)

    h3, h4 = hashes()
    for f in ("captions.py", "plots.py", "ch3_anchors.py", "ch4_anchors.py", "spec.py", "summaries.py"):
        (study / f).write_text((study / f).read_text() + "\n# an edit\n")
    assert hashes() == (h3, h4)                                   # nothing reruns
    (study / "ch4_data.py").write_text((study / "ch4_data.py").read_text() + "\n# an edit\n")
    assert hashes()[0] == h3 and hashes()[1] != h4                # chapter 4 reruns, chapter 3 does not
    h4 = hashes()[1]
    (root / "learn" / "psgd.py").write_text((root / "learn" / "psgd.py").read_text() + "\n# an edit\n")
    assert hashes()[0] != h3 and hashes()[1] == h4                # the PSGD engine: chapter 3 only
