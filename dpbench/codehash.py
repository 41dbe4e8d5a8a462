"""One cache-invalidation policy: the code hash of a computation is the hash of the source of every dpbench module
it can run — the modules it names and, transitively, every dpbench module those import (at the top or inside a
function). Editing any of them recomputes the cells; editing a module outside the closure (a caption, a plot, an
anchor check kept in its own module) does not. The random streams never depend on it
(:func:`dpbench.rng.stream_key`), so a recompute after a pure refactoring gives identical values.

Imports are read from the source (``ast``), not executed. A package's ``__init__`` is part of the closure only when
a name it defines is imported (``from dpbench.learn import fit_softmax`` reads ``dpbench/learn/__init__.py``;
``from dpbench.methods import estimation`` and ``import dpbench.studies.x`` do not pull in the package's
``__init__``, although Python runs it): that keeps a study's compute module apart from its siblings (captions,
plots) and from the other studies.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent
PACKAGE = ROOT.name


def module_file(name: str, root: Path = ROOT) -> Path | None:
    """The source file of module ``name`` (``package.a.b``) under ``root``, or None if there is none."""
    parts = name.split(".")[1:]
    base = root.joinpath(*parts)
    if (base / "__init__.py").exists():
        return base / "__init__.py"
    return base.with_suffix(".py") if base.with_suffix(".py").exists() else None


def imported_modules(name: str, root: Path = ROOT) -> set[str]:
    """The package's modules that module ``name`` imports anywhere in its source (absolute or relative)."""
    path = module_file(name, root)
    if path is None:
        raise ValueError(f"no source for module {name!r} under {root}")
    return _imports(path, name if path.name == "__init__.py" else name.rpartition(".")[0], root)


def _imports(path: Path, here: str, root: Path) -> set[str]:
    """Modules of the package under ``root`` imported in file ``path``; ``here``: the package relative imports
    start from."""
    package = root.name
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == package)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != package:
                continue
            subs = {a.name for a in node.names if module_file(f"{mod}.{a.name}", root)}
            found.update(f"{mod}.{n}" for n in subs)
            if len(subs) < len(node.names):     # a name defined by the module (or package __init__) itself
                found.add(mod)
    return {m for m in found if module_file(m, root) is not None}


def closure(names, root: Path = ROOT) -> list[str]:
    """Every module of the package reachable from ``names`` through imports, sorted."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo.extend(imported_modules(m, root) - seen)
    return sorted(seen)


@functools.lru_cache(maxsize=None)
def code_hash(*names: str) -> str:
    """SHA-256 prefix over the sources of :func:`closure` of ``names`` (module names of this package)."""
    return hash_closure(names, ROOT)


def hash_closure(names, root: Path) -> str:
    h = hashlib.sha256()
    for m in closure(names, root):
        h.update(m.encode() + b"\0" + module_file(m, root).read_bytes() + b"\0")
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=None)
def file_code_hash(path: str) -> str:
    """The code hash of a module outside the package (e.g. a user's method registered from the config): its own
    source and the closure of the package modules it imports."""
    p = Path(path)
    h = hashlib.sha256(p.read_bytes())
    h.update(hash_closure(_imports(p, "", ROOT), ROOT).encode())
    return h.hexdigest()[:16]
