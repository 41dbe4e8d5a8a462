"""Lint the workflow (`snakemake --lint`) and fail on every lint but one, printed and explained here.

Snakemake recommends a conda environment or container for each rule that is not a `run:` block. dpbench's rules
are shell commands that run the project's own package (`python -m dpbench.jobs ...`) with the interpreter that
runs Snakemake, whose software is the installed package and its pinned dependencies (pyproject.toml): a per-rule
environment would be a second, untested copy of that list. Every other lint fails CI.
"""

import re
import subprocess
import sys

ACCEPTED = ("Specify a conda environment or container for each rule.",)

out = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], capture_output=True, text=True)
text = out.stdout + out.stderr
lints = re.findall(r"^\s+\* (.+?):\s*$", text, flags=re.M)
other = [t for t in lints if t not in ACCEPTED]
print(f"snakemake --lint: {len(lints)} lints, {len(lints) - len(other)} of them the accepted one "
      f"({ACCEPTED[0]!r}: see .ci/lint_workflow.py)")
if other or (out.returncode != 0 and not lints):
    print(text)
    print(f"FAILED: lints other than the accepted one: {sorted(set(other))}")
    sys.exit(1)
