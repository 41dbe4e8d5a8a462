"""dpbench.codehash: the code hash of a computation covers every module it can run, and nothing else."""

from pathlib import Path

from dpbench import codehash as C


def _package(tmp_path: Path) -> Path:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "import pkg.b\nfrom . import d\n\ndef f():\n    from pkg.sub import c\n    return c\n",
        "b.py": "import numpy\n",
        "d.py": "from .sub.e import g\n",
        "captions.py": "import pkg.a\nTEXT = 'a caption'\n",
        "sub/__init__.py": "Y = 1\n",
        "f.py": "from pkg.sub import Y\n",
        "sub/c.py": "X = 1\n",
        "sub/e.py": "from ..b import *\n\ndef g():\n    return 1\n",
    }
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def test_closure_follows_top_level_function_level_and_relative_imports(tmp_path):
    root = _package(tmp_path)
    # importing submodules does not pull in their package's __init__; importing a name it defines does
    assert C.closure(["pkg.a"], root) == ["pkg.a", "pkg.b", "pkg.d", "pkg.sub.c", "pkg.sub.e"]
    assert C.closure(["pkg.f"], root) == ["pkg.f", "pkg.sub"]
    assert "pkg.captions" not in C.closure(["pkg.a"], root)
    assert "pkg.a" in C.closure(["pkg.captions"], root)


def test_hash_changes_with_any_module_of_the_closure_only(tmp_path):
    root = _package(tmp_path)
    h0 = C.hash_closure(["pkg.a"], root)
    (root / "captions.py").write_text("import pkg.a\nTEXT = 'another caption'\n")
    assert C.hash_closure(["pkg.a"], root) == h0                 # a caption edit: no recompute
    (root / "sub" / "c.py").write_text("X = 2\n")                  # imported inside a function: recompute
    h1 = C.hash_closure(["pkg.a"], root)
    assert h1 != h0
    (root / "sub" / "e.py").write_text("from ..b import *\n\ndef g():\n    return 2\n")  # two relative hops away
    assert C.hash_closure(["pkg.a"], root) != h1


def test_a_private_method_closure_reaches_the_shared_layers_but_not_studies_or_plots():
    mods = C.closure(["dpbench.methods.sensitivity"])
    assert {"dpbench.learn.softmax", "dpbench.privacy.mechanisms", "dpbench.rng"} <= set(mods)
    assert not [m for m in mods if m.startswith("dpbench.studies") or m == "dpbench.plot"]


def test_file_outside_the_package_hashes_its_source_and_its_dpbench_imports(tmp_path):
    f = tmp_path / "plugin.py"
    f.write_text("from dpbench.privacy import sample_laplace\n")
    h = C.file_code_hash(str(f))
    g = tmp_path / "plugin2.py"
    g.write_text("from dpbench.privacy import sample_laplace\n# edited\n")
    assert C.file_code_hash(str(g)) != h
