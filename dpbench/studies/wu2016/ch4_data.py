"""wu2016 chapter 4 — the data (Wu 2016, §4.4 "Experimental Methodology"; docs/studies/wu2016.md#diabetes,
docs/studies/wu2016.md#warfarin): Pima diabetes (logistic regression, Fig. 4.1) and the IWPC Warfarin table
(linear regression and model inversion, Figs. 4.2–4.8), the scaling of their features and targets, and the
train/test split of a repetition. Part of the chapter's compute code (imported by
:mod:`dpbench.studies.wu2016.ch4_compute`, so inside its code hash)."""

from __future__ import annotations

import functools
import json

import numpy as np

from dpbench.attacks import model_inversion as mi
from dpbench.data import diabetes as diabetes_data
from dpbench.data import warfarin as wf
from dpbench.rng import generator

STUDY = "wu2016"
WARFARIN_FIGURES = ("fig4_2", "fig4_3", "fig4_5", "fig4_6", "fig4_7", "fig4_8")


def study_cfg(config: dict) -> dict:
    """The study's block of the configuration."""
    return config["studies"][STUDY]


def ch4_cfg(config: dict) -> dict:
    """The chapter-4 block (``studies.wu2016.ch4``) of the configuration."""
    return study_cfg(config)["ch4"]


def datasets_in_use(config: dict) -> list[str]:
    figs = study_cfg(config).get("figures") or {}
    out = []
    if figs.get("fig4_1"):
        out.append("diabetes")
    if any(figs.get(f) for f in WARFARIN_FIGURES):
        out.append("warfarin")
    return out


def preprocessing_variant(config: dict) -> str:
    """``data_independent`` (default: every scaling bound from the feature/target domain) or ``source`` (the
    thesis's scalings by statistics of the data: non-private preprocessing)."""
    return ch4_cfg(config).get("preprocessing", "data_independent")


def dataset_payload(config: dict, name: str) -> dict:
    c4 = ch4_cfg(config)
    pre = preprocessing_variant(config)
    if name == "warfarin":
        return {"dataset": "warfarin", "version": wf.VARIANT, **{k: c4["warfarin"][k] for k in
                                                                  ("target", "target_scaling", "feature_scaling")},
                **({"preprocessing": pre} if pre != "source" else {})}
    if name == "diabetes":
        return {"dataset": "diabetes", "source": config["data"].get("diabetes_source", "auto"),
                "mirror": config["data"].get("mirror"), "seed": config["seed"],
                "scaling": "libsvm-unit-sphere" if pre == "source" else "domain-unit-sphere"}
    raise ValueError(f"unknown chapter-4 dataset {name!r}")


def diabetes_features(X: np.ndarray, is_substitute: bool, preprocessing: str = "data_independent") -> np.ndarray:
    """Unit-sphere rows of the diabetes features. ``data_independent``: the real data's columns scaled to [−1, 1]
    by the FIXED bounds of :data:`dpbench.data.diabetes.DOMAIN`; the synthetic stand-in (no documented domain)
    goes straight to the row scaling. ``source``: LIBSVM's [−1, 1] column scaling by the minimum and maximum of
    all the rows (the ``diabetes_scale`` recipe; non-private: one raw row moves every other row)."""
    X = np.asarray(X, dtype=np.float64)
    if preprocessing == "source":
        Xs = diabetes_data.libsvm_scale(X)
    elif preprocessing == "data_independent":
        Xs = X if is_substitute else diabetes_data.domain_scale(X)
    else:
        raise ValueError(f"preprocessing must be 'data_independent' or 'source', got {preprocessing!r}")
    nrm = np.linalg.norm(Xs, axis=1, keepdims=True)
    return np.where(nrm > 0, Xs / np.where(nrm > 0, nrm, 1.0), 0.0)


def preprocessing_label(config: dict, dataset: str, is_substitute: bool) -> tuple[str, bool]:
    """(``preprocessing`` column, ``preprocessing_data_dependent`` column) of the rows of ``dataset``."""
    pre = preprocessing_variant(config)
    if dataset == "diabetes":
        if pre == "source":
            return ("non-private preprocessing, as in the source: per-feature min-max scaling to [−1, 1] on all rows "
                    "(LIBSVM diabetes_scale); per-row unit-norm scaling"), True
        return (("per-row unit-norm scaling (synthetic stand-in: no documented feature domain)" if is_substitute else
                 "per-feature scaling to [−1, 1] with fixed domain bounds (clipped); per-row unit-norm scaling"),
                False)
    w = ch4_cfg(config)["warfarin"]
    if pre == "source":
        return (f"non-private preprocessing, as in the source: {w['feature_scaling']} column scaling and "
                f"{w['target_scaling']} target scaling with statistics of all rows; per-row unit-norm scaling"), True
    return (f"{w['feature_scaling']} column scaling and {w['target_scaling']} target scaling with fixed domain bounds "
            "(clipped); per-row unit-norm scaling"), False


@functools.lru_cache(maxsize=4)
def _warfarin(payload_json: str) -> wf.Warfarin:
    p = json.loads(payload_json)
    return wf.load_warfarin(p["feature_scaling"], p["target"], p["target_scaling"],
                            preprocessing=p.get("preprocessing", "source"))


def load_warfarin(config: dict) -> wf.Warfarin:
    return _warfarin(json.dumps(dataset_payload(config, "warfarin"), sort_keys=True))


@functools.lru_cache(maxsize=4)
def _diabetes(payload_json: str, cache_dir: str) -> dict:
    from dpbench.data import load_dataset

    p = json.loads(payload_json)
    ds = load_dataset("diabetes", cache_dir=cache_dir, mirror=p["mirror"], source=p["source"], seed=p["seed"])
    X = np.vstack([ds.X_train, ds.X_test]).astype(np.float64)
    y = np.concatenate([ds.y_train, ds.y_test]).astype(np.float64)
    pre = "source" if p["scaling"] == "libsvm-unit-sphere" else "data_independent"
    Xs = diabetes_features(X, ds.is_substitute, pre)
    return {"X": Xs, "y": y, "variant": ds.variant, "is_substitute": ds.is_substitute, "description": ds.description}


def load_diabetes(config: dict) -> dict:
    """Pima diabetes (or its labelled substitute): all 768 rows, [−1, 1] column scaling (:func:`diabetes_features`),
    unit-sphere rows, labels ±1."""
    return _diabetes(json.dumps(dataset_payload(config, "diabetes"), sort_keys=True), str(config["data"]["cache_dir"]))


def prepare_dataset(config: dict) -> dict:
    out = {"study": STUDY, "datasets": {}}
    for name in datasets_in_use(config):
        if name == "warfarin":
            w = load_warfarin(config)
            freq = mi.empirical_marginal(w.vkorc1, 3)
            out["datasets"]["warfarin"] = {
                "variant": w.variant, "is_substitute": False, "n": w.n, "dim": int(w.X.shape[1]),
                "target": w.target, "target_center": w.target_center, "target_scale": w.target_scale,
                "vkorc1_frequencies": dict(zip(wf.VKORC1_LEVELS, map(float, freq))),
                "description": f"IWPC from {wf.PACKAGE_PIN} (iwpc.pkl sha256 {wf.IWPC_SHA256[:12]}…)"}
        else:
            d = load_diabetes(config)
            out["datasets"]["diabetes"] = {"variant": d["variant"], "is_substitute": bool(d["is_substitute"]),
                                           "n": int(d["X"].shape[0]), "dim": int(d["X"].shape[1]),
                                           "description": d["description"]}
    out["is_substitute"] = any(v["is_substitute"] for v in out["datasets"].values())
    out["dataset_variant"] = ", ".join(v["variant"] for v in out["datasets"].values())
    return out


def split_indices(config: dict, dataset: str, n: int, rep: int) -> tuple[np.ndarray, np.ndarray]:
    """Repetition ``rep``'s (train, test) indices: a data-independent permutation, the first ⌊test_fraction·n⌉
    rows for testing (the thesis gives no protocol; docs/studies/wu2016.md#open-choices item 11)."""
    perm = generator(config["seed"], f"wu2016/ch4/split/{dataset}/{int(rep)}").permutation(n)
    n_test = int(round(float(ch4_cfg(config)["test_fraction"]) * n))
    return perm[n_test:], perm[:n_test]
