"""The architecture in the tree: every module of dpbench imports only its own layer or layers below it (every
import, also those inside functions), read from the source with ``ast``. Data flows one way:
foundation → data → privacy → learn → methods → attacks → audit → drawing helpers → studies → orchestration
(runner, shards, costs, plan, figures, report, reference, workflow, jobs, plugincheck) → command line."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "dpbench"

LAYERS = [
    {"fsmode", "rng", "config", "sources", "parallel", "store", "results", "verdicts", "codehash"},  # foundation
    {"data"}, {"privacy"}, {"learn"}, {"methods"}, {"attacks"}, {"audit"},
    {"plot"},                                                                  # drawing helpers
    {"studies"},
    {"runner", "shards", "costs", "plan", "progress", "figures", "report", "tight_gain", "reference", "workflow", "jobs",
     "plugincheck", "slurm_compat"},  # orchestration
    {"cli"},
]


def layer_of(name: str) -> int:
    for i, members in enumerate(LAYERS):
        if name in members:
            return i
    raise AssertionError(f"dpbench.{name} is in no layer: add it to LAYERS in {Path(__file__).name}")


def imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "dpbench":
                yield from (a.name for a in node.names)
            elif node.module.startswith("dpbench."):
                yield node.module.split(".")[1]
        elif isinstance(node, ast.Import):
            yield from (a.name.split(".")[1] for a in node.names if a.name.startswith("dpbench."))


def test_layers_import_only_downwards():
    bad = []
    for f in sorted(ROOT.rglob("*.py")):
        top = f.relative_to(ROOT).parts[0].removesuffix(".py")
        if top == "__init__":
            continue
        mine = layer_of(top)
        for other in imports(f):
            if other != "__init__" and layer_of(other) > mine:
                bad.append(f"{f.relative_to(ROOT.parent)} (layer {mine}) imports dpbench.{other} "
                           f"(layer {layer_of(other)})")
    assert not bad, "\n".join(bad)
