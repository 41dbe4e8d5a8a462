"""The repository explains itself: no citation of the development notes (their folder outside the repository,
``spec §`` sections,
``Lnnn`` line numbers of the source documents) and no absolute path of a development machine in the product —
code, workflow, configuration, documentation, benchmarks and tests. Sources are cited by section, equation,
algorithm or figure (docs/sources.md)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARTS = ["dpbench", "workflow", "docs", "benchmarks", "tests", "config", "profiles", "README.md", "config.yaml",
         "Snakefile", "pyproject.toml", ".ci"]
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".smk", ".rst", ".toml", ".sh", ".txt", ""}
FORBIDDEN = {
    "the notes folder": re.compile(r"\bshared(?=/)"),
    "a section of the notes": re.compile(r"\bspec §|\bspec/|\bspec [a-z0-9]+\.md\b"),
    "a line number of a source document": re.compile(r"\b(?:thesis |paper |00[0-4]:)?L\d{3,4}\b"),
    "a path of a development machine": re.compile(r"(?<![\w.])/(?:work|home/[a-z]+)/"),
}


def product_files():
    for part in PARTS:
        p = ROOT / part
        files = [p] if p.is_file() else sorted(p.rglob("*")) if p.is_dir() else []
        for f in files:
            if f.is_file() and f.suffix in SUFFIXES and "__pycache__" not in f.parts and f.name != Path(__file__).name:
                yield f


def test_the_product_cites_papers_not_the_development_notes():
    found = []
    for f in product_files():
        for i, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            for what, pattern in FORBIDDEN.items():
                if pattern.search(line):
                    found.append(f"{f.relative_to(ROOT)}:{i}: {what}: {line.strip()[:100]}")
    assert not found, "\n".join(found)
