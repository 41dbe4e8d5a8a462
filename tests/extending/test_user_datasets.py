"""User datasets (dpbench/data/user.py): every file format on tiny files written here in the real formats, the
seeded split, checksums, and the config errors that name the key before any compute."""

from __future__ import annotations

import copy
import gzip

import numpy as np
import pandas as pd
import pytest

from dpbench.config import ConfigError, DEFAULT_CONFIG_PATH
from dpbench.data import load_dataset, write_idx
from dpbench.data.user import UserDataset, UserDatasetError, register
from dpbench.studies import load_config
from tests.conftest import TINY

RNG = np.random.default_rng(3)
X_TR, Y_TR = RNG.integers(0, 9, size=(30, 4)).astype(float), RNG.integers(0, 3, 30)
X_TE, Y_TE = RNG.integers(0, 9, size=(12, 4)).astype(float), RNG.integers(0, 3, 12)


def write(folder, fmt: str, with_test: bool = True) -> dict:
    """Write the arrays above in ``fmt``; return the dataset's config entry."""
    folder.mkdir(parents=True, exist_ok=True)
    parts = [("train", X_TR, Y_TR)] + ([("test", X_TE, Y_TE)] if with_test else [])
    for part, X, y in parts:
        df = pd.DataFrame(X, columns=list("abcd")).assign(cls=np.array(["x", "y", "z"])[y])
        if fmt == "csv":
            df.to_csv(folder / f"{part}.csv", index=False)
        elif fmt == "parquet":
            df.to_parquet(folder / f"{part}.parquet")
        elif fmt == "libsvm":
            lines = [" ".join([str(int(lab))] + [f"{j + 1}:{v:g}" for j, v in enumerate(row) if v]) for row, lab in zip(X, y)]
            (folder / f"{part}.libsvm.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
        elif fmt == "idx":
            write_idx(folder / f"{part}-images.idx", X.reshape(len(X), 2, 2).astype(np.uint8))
            write_idx(folder / f"{part}-labels.idx.gz", y.astype(np.uint8))
        elif fmt == "npz":
            np.savez(folder / f"{part}.npz", X=X, y=y)
    return {"path": str(folder), "format": fmt, "task": "classification",
            **({"label": "cls"} if fmt in ("csv", "parquet") else {})}


@pytest.mark.parametrize("fmt", ["csv", "parquet", "libsvm", "idx", "npz"])
def test_every_format_reads_the_same_data(tmp_path, fmt):
    ds = UserDataset.from_config(f"toy_{fmt}", write(tmp_path / fmt, fmt))
    register(ds)
    got = load_dataset(f"toy_{fmt}", cache_dir=tmp_path / "cache")
    assert got.variant == ds.variant and got.variant.startswith(f"user:toy_{fmt}:") and not got.is_substitute
    assert got.n_classes == 3
    np.testing.assert_array_equal(got.X_train, X_TR)
    np.testing.assert_array_equal(got.X_test, X_TE)
    np.testing.assert_array_equal(got.y_train, Y_TR)  # 0, 1, 2 or "x", "y", "z": the sorted classes
    np.testing.assert_array_equal(got.y_test, Y_TE)
    assert load_dataset(f"toy_{fmt}", cache_dir=tmp_path / "cache", n_train=10, n_test=1000).n_train == 10


def test_seeded_split_without_a_test_part(tmp_path):
    spec = {**write(tmp_path / "d", "npz", with_test=False), "test_fraction": 0.25}
    raw, classes = UserDataset.from_config("toy_split", spec).read()
    assert (len(raw.y_train), len(raw.y_test)) == (22, 8) and classes.tolist() == [0, 1, 2]
    again, _ = UserDataset.from_config("toy_split", spec).read()
    np.testing.assert_array_equal(raw.X_test, again.X_test)  # deterministic
    rows = np.sort(np.concatenate([raw.X_train, raw.X_test]) @ [1, 10, 100, 1000])
    np.testing.assert_array_equal(rows, np.sort(X_TR @ [1, 10, 100, 1000]))  # a partition of the rows
    with pytest.raises(UserDatasetError, match=r"datasets\.toy_split\.test_fraction: .* no test part"):
        UserDataset.from_config("toy_split", {k: v for k, v in spec.items() if k != "test_fraction"})


def test_checksums_pin_the_files_and_the_variant_follows_the_content(tmp_path):
    from dpbench.data import file_digest

    spec = write(tmp_path / "d", "csv")
    good = file_digest(tmp_path / "d" / "train.csv", "sha256")
    ds = UserDataset.from_config("toy_sum", {**spec, "sha256": {"train.csv": good}})
    before = ds.variant
    ds.read()
    df = pd.read_csv(tmp_path / "d" / "train.csv")
    df.loc[0, "a"] += 1
    df.to_csv(tmp_path / "d" / "train.csv", index=False)
    with pytest.raises(UserDatasetError, match=r"datasets\.toy_sum\.sha256\.train\.csv: checksum mismatch for .*train\.csv"):
        ds.read()
    assert UserDataset.from_config("toy_sum", spec).variant != before
    with pytest.raises(UserDatasetError, match=r"datasets\.toy_sum\.sha256\.nope\.csv: not a file of the dataset"):
        UserDataset.from_config("toy_sum", {**spec, "sha256": {"nope.csv": good}})


def test_bad_files_name_the_file_or_key(tmp_path):
    spec = write(tmp_path / "d", "csv")
    with pytest.raises(UserDatasetError, match=r"datasets\.toy_bad\.label: no column 'colour' in .*train\.csv"):
        UserDataset.from_config("toy_bad", {**spec, "label": "colour"}).read()
    pd.DataFrame({"a": ["p", "q"], "cls": [0, 1]}).to_csv(tmp_path / "d" / "test.csv", index=False)
    with pytest.raises(UserDatasetError, match=r"non-numeric feature column\(s\) \['a'\] in .*test\.csv"):
        UserDataset.from_config("toy_bad", spec).read()
    with pytest.raises(UserDatasetError, match=r"datasets\.toy_bad\.path: no training part"):
        UserDataset.from_config("toy_bad", {**spec, "format": "parquet"})


def _config(tmp_path, data_dir, **top):
    over = copy.deepcopy(TINY)
    over.update({"results_dir": str(tmp_path / "results"), "figures_dir": str(tmp_path / "figures"),
                 "cache_dir": str(tmp_path / "results" / "cache"),
                 "data": {"cache_dir": str(data_dir), "mnist_source": "substitute"}, **top})
    return over


@pytest.mark.parametrize("change, key", [
    (lambda c, d: c["datasets"]["toy"].update(format="xlsx"), "datasets.toy.format"),
    (lambda c, d: c["datasets"]["toy"].update(path=str(d / "missing")), "datasets.toy.path"),
    (lambda c, d: c["datasets"]["toy"].update(sha256={"train.csv": "abc"}), "datasets.toy.sha256.train.csv"),
    (lambda c, d: c["datasets"]["toy"].pop("task"), "datasets.toy"),
    (lambda c, d: c["datasets"].update(mnist=c["datasets"]["toy"]), "datasets.mnist"),
    (lambda c, d: c["studies"]["vdm2020"]["figures"]["fig1a"].update(dataset="nodata"),
     "studies.vdm2020.figures.fig1a.dataset"),
    (lambda c, d: c["studies"]["vdm2020"]["figures"]["fig4"].update(dataset="toy"),
     "studies.vdm2020.figures.fig4.dataset"),
    (lambda c, d: c["studies"]["vdm2020"]["figures"]["fig1a"].update(methods=["nomethod"]),
     "studies.vdm2020.figures.fig1a.methods[0]"),
    (lambda c, d: c["studies"]["vdm2020"]["figures"]["fig6b"].update(methods=["model_sensitivity"]),
     "studies.vdm2020.figures.fig6b.methods[0]"),
    (lambda c, d: c.update(plugins=["no_such_module_here"]), "plugins[0]"),
    (lambda c, d: c["studies"]["vdm2020"].update(no_such_block={"x": 1}), "studies.vdm2020"),
])
def test_bad_config_names_the_key(tmp_path, data_dir, change, key):
    over = _config(tmp_path, data_dir, datasets={"toy": write(tmp_path / "d", "csv")})
    change(over, tmp_path)
    with pytest.raises(ConfigError) as err:
        load_config(DEFAULT_CONFIG_PATH, overrides=over)
    assert f"invalid config: {key}" in str(err.value)


def test_a_plugin_method_and_its_config_block(tmp_path, data_dir, monkeypatch):
    """A plugin file registers its method; the schema then takes the method's block, with the declared types."""
    (tmp_path / "plug.py").write_text(
        "from dpbench.methods import REGISTRY, Method, Setting\n\n"
        "@REGISTRY.register\nclass Plug(Method):\n"
        "    name, label, kind = 'plug_method', 'plug', 'training'\n"
        "    settings_spec = (Setting('scale', 'plug_method', default=1.0),)\n")
    monkeypatch.chdir(tmp_path)  # .py plugins are relative to the working folder
    over = _config(tmp_path, data_dir, plugins=["plug.py"], datasets={"toy": write(tmp_path / "d", "csv")})
    over["studies"]["vdm2020"]["plug_method"] = {"scale": 2.5}
    over["studies"]["vdm2020"]["figures"]["fig1a"].update(dataset="toy", methods=["plug_method", "non_private"])
    from dpbench.studies import vdm2020

    cfg = load_config(DEFAULT_CONFIG_PATH, overrides=over)["studies"]["vdm2020"]
    assert vdm2020.series(cfg, "fig1a") == ["non_private", "plug_method"]
    assert vdm2020.make_method(cfg, "plug_method").settings == {"scale": 2.5}
    assert {dict(p.problem)["dataset"] for p in vdm2020.points(cfg, "fig1a")} == {"toy"}
    over["studies"]["vdm2020"]["plug_method"] = {"scale": "big"}
    with pytest.raises(ConfigError, match=r"invalid config: studies\.vdm2020\.plug_method\.scale: 'big' is not of type"):
        load_config(DEFAULT_CONFIG_PATH, overrides=over)
