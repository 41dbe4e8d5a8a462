"""The user-mechanism audit (dpbench.audit.user): every correct textbook mechanism passes, at least 7 of the 8
classic bugs are caught (all but the exponential mechanism's missing factor 2 at this size), the docs' worked
example runs through the CLI with the exit status it promises."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dpbench.audit.user import Domain, audit_mechanism
from dpbench.cli import main
from tests.audit.textbook_mechanisms import MECHANISMS

DOC = Path(__file__).resolve().parents[2] / "docs" / "studies" / "audit.md"
TRIALS = 10_000


@pytest.fixture(scope="module")
def results():
    out = {}
    for name, (good, bad, dom, delta) in MECHANISMS.items():
        for which, f in (("correct", good), ("bug", bad)):
            out[name, which] = audit_mechanism(f, 1.0, delta, domain=Domain(**dom), trials=TRIALS, seed=1)
    return out


def test_correct_textbook_mechanisms_pass(results):
    fired = {n: r.eps_lower for (n, w), r in results.items() if w == "correct" and r.fires}
    assert not fired, fired


def test_textbook_bugs_are_caught(results):
    caught = {n for (n, w), r in results.items() if w == "bug" and r.fires}
    assert len(caught) >= 7, {n: results[n, "bug"].eps_lower for n in MECHANISMS}
    assert caught >= set(MECHANISMS) - {"exponential"}, caught


def test_docs_example_through_the_cli(tmp_path, capsys):
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
                if b.startswith("# user/my_mechanism.py")]
    (tmp_path / "my_mechanism.py").write_text(block)
    base = ["audit", "--epsilon", "1", "--clips", "--trials", str(TRIALS)]
    assert main([*base, "--mechanism", f"{tmp_path}/my_mechanism.py:noisy_sum"]) == 0
    assert "no violation found" in capsys.readouterr().out
    assert main([*base, "--mechanism", f"{tmp_path}/my_mechanism.py:noisy_sum_clip_late"]) == 1
    out = capsys.readouterr().out
    assert "PRIVACY BUG" in out and "far" in out, out


def test_bad_input_is_named(capsys):
    with pytest.raises(ValueError, match="lo < hi"):
        Domain(lo=1.0, hi=0.0)
    with pytest.raises(ValueError, match="epsilon"):
        audit_mechanism(lambda D, rng: 0.0, 0.0)
    assert main(["audit", "--mechanism", "nocolon", "--epsilon", "1"]) == 2
    assert "MODULE:FUNCTION" in capsys.readouterr().err
