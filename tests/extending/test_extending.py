"""docs/extending.md, performed: its files are written from the page's code blocks (each starts with a
``# myext/<file>`` line), the data script is run, and Snakemake runs vdm2020 Fig. 1a with the added method on
the added dataset, as the page says. One test-only config file under the page's keeps it offline and small (the
study's own data, MNIST, from the substitute generator in the session's data folder, and the other figures, not
run here, at the tiny grids of the suite)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

from tests.conftest import TINY

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "extending.md"


def doc_files() -> dict[str, str]:
    """{path: text} of the page's code blocks whose first line is ``# myext/<file>``."""
    out = {}
    for body in re.findall(r"```[a-z]*\n(.*?)```", DOC.read_text(), flags=re.S):
        first, _, rest = body.partition("\n")
        if m := re.fullmatch(r"# (myext/\S+)", first.strip()):
            out[m.group(1)] = body
    return out


def doc_command() -> list[str]:
    """The page's snakemake command line."""
    (line,) = [ln for ln in DOC.read_text().splitlines() if ln.startswith("snakemake ")]
    return line.split()[1:]


def test_the_page_has_the_example():
    assert set(doc_files()) == {"myext/noisy_centroid.py", "myext/make_data.py", "myext/config.yaml",
                                "myext/estimators.py"}
    assert "figures/vdm2020/fig1a.png" in doc_command()


def test_worked_example_runs_through_snakemake(tmp_path, data_dir):
    for rel, text in doc_files().items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    subprocess.run([sys.executable, "myext/make_data.py"], cwd=tmp_path, check=True)
    fast = {"data": {"cache_dir": str(data_dir), "mnist_source": "substitute"}, "sharding": {"enabled": False},
            "studies": {"vdm2020": TINY["studies"]["vdm2020"]}}
    (tmp_path / "fast.yaml").write_text(yaml.safe_dump(fast))
    args = doc_command()
    i = args.index("--configfile")
    args[i + 1:i + 2] = ["fast.yaml", args[i + 1]]  # the test's config, then the page's (which wins)
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    out = tmp_path / "myext"
    df = pd.read_parquet(out / "results" / "vdm2020" / "fig1a" / "noisy_centroid.parquet")
    assert set(df["method"]) == {"noisy_centroid"} and set(df["dataset"]) == {"blobs"}
    (variant,) = set(df["dataset_variant"])
    assert re.fullmatch(r"user:blobs:[0-9a-f]{12}", variant)
    assert sorted(set(df["epsilon"])) == [0.1, 1.0, 10.0] and set(df["rep"]) == set(range(5))
    assert set(df["param_clip"]) == {0.5} and (df["n_train"] == 400).all() and (df["n_classes"] == 3).all()
    assert df.groupby("epsilon")["value"].mean().loc[10.0] > 0.6  # the blobs are easy at large ε
    for baseline in ("model_sensitivity", "non_private"):  # the paper's methods on the same data
        other = pd.read_parquet(out / "results" / "vdm2020" / "fig1a" / f"{baseline}.parquet")
        assert set(other["dataset_variant"]) == {variant}
    png = out / "figures" / "vdm2020" / "fig1a.png"
    assert png.read_bytes()[:4] == b"\x89PNG"
    caption = (out / "figures" / "vdm2020" / "fig1a.txt").read_text()
    assert "USER DATA: " + variant in caption and "noisy_centroid" in caption
