"""wu2016 chapter 3 — the data (Wu 2016, §3.3 "Experimental Method and Datasets", Table 3.2): MNIST (50-d
Gaussian random projection), Protein and Covertype from the registry, every row scaled to the unit sphere; prepared
once per content key and shared by every job. Part of the chapter's compute code (imported by
:mod:`dpbench.studies.wu2016.ch3_compute`, so inside its code hash)."""

from __future__ import annotations

import numpy as np

from dpbench.data import load_dataset
from dpbench.data import transforms as T
from dpbench.learn import psgd_many as many
from dpbench.store import Store, content_key

STUDY = "wu2016"
DATASETS = ("mnist", "protein", "covertype")
DATASET_LABELS = {"mnist": "MNIST", "protein": "Protein", "covertype": "Forest Covertype"}


def study_cfg(config: dict) -> dict:
    """The study's block of the configuration."""
    return config["studies"][STUDY]


# ---------------------------------------------------------------------------------------------------------
# data: unit-sphere rows (MNIST: 50-d Gaussian random projection first), prepared once, shared by every job
# ---------------------------------------------------------------------------------------------------------


def _source(config: dict, name: str) -> str:
    return config["data"].get(f"{name}_source", "auto")


def dataset_payload(config: dict, name: str) -> dict:
    cfg = study_cfg(config)
    d = cfg["datasets"][name]
    p = {"dataset": name, "n_train": d["n_train"], "n_test": d["n_test"], "source": _source(config, name),
         "mirror": config["data"]["mirror"], "substitute_seed": config["data"]["substitute_seed"],
         "split_seed": config["seed"]}
    if name == "mnist":
        p["projection"] = {"dim": cfg["projection"]["dim"], "seed": cfg["projection"]["seed"]}
    return p


def _prepare(config: dict, name: str) -> dict[str, np.ndarray]:
    p = dataset_payload(config, name)
    ds = load_dataset(name, cache_dir=config["data"]["cache_dir"], mirror=config["data"]["mirror"],
                      source=p["source"], seed=p["substitute_seed"] if name == "mnist" else config["seed"],
                      n_train=p["n_train"], n_test=p["n_test"])
    Xtr, Xte = np.asarray(ds.X_train, dtype=np.float64), np.asarray(ds.X_test, dtype=np.float64)
    if name == "mnist":
        Xtr, Xte = T.gaussian_random_projection(Xtr, Xte, p["projection"]["dim"], p["projection"]["seed"])
    out = {"X_train": T.unit_sphere_rows(Xtr), "X_test": T.unit_sphere_rows(Xte),
           "y_train": np.asarray(ds.y_train), "y_test": np.asarray(ds.y_test),
           "variant": np.array(ds.variant), "is_substitute": np.array(ds.is_substitute),
           "n_classes": np.array(ds.n_classes), "description": np.array(ds.description)}
    return out


def preprocessing_label(dataset: str) -> tuple[str, bool]:
    """(``preprocessing`` column, ``preprocessing_data_dependent`` column): every step is data-independent — MNIST
    pixels divided by 255 (the registry), a Gaussian projection matrix drawn from a fixed seed, each row divided by
    its own norm (Wu 2016, Table 3.2 caption: "normalized to the unit sphere"); no statistic of the training data."""
    proj = "fixed Gaussian random projection; " if dataset == "mnist" else ""
    return f"{proj}per-row unit-norm scaling", False


def load_prepared(config: dict, name: str) -> dict:
    """The prepared arrays of dataset ``name`` (computed once per content key, then read from the cache)."""
    key = content_key({"kind": "wu2016-ch3-data", "v": 1, **dataset_payload(config, name)})
    a = Store(config["cache_dir"]).artefact(key, lambda: _prepare(config, name))
    return {**a, "variant": str(a["variant"]), "is_substitute": bool(a["is_substitute"]),
            "n_classes": int(a["n_classes"]), "description": str(a["description"])}


def datasets_in_use(config: dict) -> list[str]:
    figs = study_cfg(config).get("figures", {})
    used = set()
    if figs.get("fig3_2"):
        used |= set(figs["fig3_2"]["datasets"])
    if figs.get("fig3_3"):
        used.add("mnist")
    if figs.get("fig3_4"):
        used |= set(figs["fig3_4"]["datasets"])
    return [d for d in DATASETS if d in used]


def prepare_dataset(config: dict) -> dict:
    out = {"study": STUDY, "datasets": {}}
    for name in datasets_in_use(config):
        a = load_prepared(config, name)
        out["datasets"][name] = {"variant": a["variant"], "is_substitute": a["is_substitute"],
                                 "n_train": int(a["X_train"].shape[0]), "n_test": int(a["X_test"].shape[0]),
                                 "dim": int(a["X_train"].shape[1]), "description": a["description"]}
    out["is_substitute"] = any(v["is_substitute"] for v in out["datasets"].values())
    out["dataset_variant"] = ", ".join(v["variant"] for v in out["datasets"].values())
    return out


def label_matrix(a: dict) -> np.ndarray:
    """(n, K) ±1 labels: K = 10 one-vs-all columns for MNIST, the single ±1 column of a binary dataset."""
    if a["n_classes"] > 2:
        return many.one_vs_all_labels(a["y_train"], a["n_classes"])
    return np.asarray(a["y_train"], dtype=np.float64)[:, None]


def test_accuracy(W: np.ndarray, a: dict) -> np.ndarray:
    """Test accuracy of every model set in ``W`` (..., K, d): argmax over the K one-vs-all scores (MNIST) or
    sign(⟨w, x⟩) (binary, labels ±1, a score of 0 predicts +1)."""
    scores = np.einsum("...kd,nd->...nk", W, a["X_test"])
    if a["n_classes"] > 2:
        return np.mean(np.argmax(scores, axis=-1) == a["y_test"], axis=-1)
    pred = np.where(scores[..., 0] >= 0, 1.0, -1.0)
    return np.mean(pred == a["y_test"], axis=-1)
