"""song2018 chapters 3 and 4 — the data sets of the private-SGD experiments (Song 2018, §3.4.1 and §4.5):
MNIST, KDDCup99 and Covertype (or labelled substitutes) and the synthetic sphere data, preprocessed in the thesis's
order (normalise each feature → unit ball → Gaussian random projection → unit ball again) and cached by content
key in ``config["cache_dir"]``.

Part of the chapters' compute code: :mod:`dpbench.studies.song2018.ch34_compute` imports it, so the chapters' code
hash covers it. The ``preprocessing`` columns of the result rows are written from :func:`preprocessing_label`.
"""

from __future__ import annotations

import numpy as np

from dpbench.data import covertype as cov
from dpbench.data import kddcup99 as kdd
from dpbench.data import load_dataset
from dpbench.data import transforms as T
from dpbench.rng import generator
from dpbench.store import Store, content_key

STUDY = "song2018"
DATA_VERSION = 1


def study_config(config: dict) -> dict:
    """The study's block of the configuration (``config["studies"]["song2018"]``)."""
    return config["studies"][STUDY]


# ---------------------------------------------------------------------------------------------------------
# data: normalise each feature -> rows into the unit ball -> Gaussian random projection -> unit ball again
# ---------------------------------------------------------------------------------------------------------

DATASET_KEYS = ("ch3_mnist", "ch3_kddcup99", "ch3_synthetic", "ch4_mnist", "ch4_covertype")


def datasets_in_use(config: dict) -> list[str]:
    figs = study_config(config).get("figures", {})
    used = set()
    for name in ("fig3_1", "fig3_2"):
        if figs.get(name):
            used |= {f"ch3_{d}" for d in figs[name]["datasets"]}
    if figs.get("fig3_3"):
        used.add("ch3_synthetic")
    if figs.get("fig4_1"):
        used |= {f"ch4_{d}" for d in figs["fig4_1"]["datasets"]}
    return [k for k in DATASET_KEYS if k in used]


def dataset_payload(config: dict, key: str) -> dict:
    cfg = study_config(config)
    chap, name = key.split("_", 1)
    p = {"key": key, "v": DATA_VERSION, **cfg[chap]["datasets"][name], "seed": config["seed"]}
    if name != "synthetic":
        pre = cfg["preprocessing"]
        p.update(normalisation=pre["feature_normalisation"], projection_seed=pre["projection_seed"],
                 preprocessing=pre.get("variant", "data_independent"),
                 source=config["data"].get(f"{name}_source", "auto"), mirror=config["data"]["mirror"])
        if name == "mnist":
            p["substitute_seed"] = config["data"]["substitute_seed"]
    return p


def to_unit_ball(X: np.ndarray) -> np.ndarray:
    """In place: x ← x / max(1, ‖x‖) ("projecting each row to the unit ball", §3.4.1), with a rounding guard."""
    nrm = np.sqrt(np.einsum("ij,ij->i", X, X))
    over = nrm > 1.0
    X[over] /= (nrm[over] * (1.0 + 4 * np.finfo(np.float64).eps))[:, None]
    return X


def preprocess(X, normalisation: str, dim: int | None, seed: int, chunk: int = 32768, domain=None) -> np.ndarray:
    """The thesis's order (§3.4.1): normalise each feature, project each row into the unit ball, then (``dim``) a
    data-independent Gaussian random projection (N(0, 1/dim) entries,
    :func:`~dpbench.data.transforms.gaussian_projection_matrix`), then into the unit ball again so that ‖x‖ ≤ 1
    holds for the privacy analysis. float64 (n, dim or D).

    ``normalisation``: data-independent maps (each output row depends on its own input row only) --
    ``domain``: min-max scaling to [0, 1] with the FIXED bounds ``domain = (lo, hi[, log])`` of the feature domain
    (:func:`feature_domain`, :func:`~dpbench.data.transforms.domain_minmax`); ``row``: each row divided by its own
    norm (no per-feature map; for synthetic stand-ins without a documented domain). The source's readings
    [INFERRED: the thesis says only "normalizing each feature"], computed on the training rows and therefore NOT
    covered by the privacy guarantee (replacing one raw row moves every other row): ``minmax`` to [0, 1] by the
    data's minimum and maximum, ``standardise`` to zero mean, unit variance; constant features → 0."""
    X = np.asarray(X)
    n, D = X.shape
    if normalisation in ("domain", "row"):
        if normalisation == "domain" and domain is None:
            raise ValueError("normalisation 'domain' needs the feature domain bounds (domain=(lo, hi[, log]))")
        R = T.gaussian_projection_matrix(D, dim, seed) if dim else None
        out = np.empty((n, dim or D))
        for a in range(0, n, chunk):
            B = np.asarray(X[a:a + chunk], dtype=np.float64)
            B = T.domain_minmax(B, *domain) if normalisation == "domain" else T.unit_sphere_rows(B)
            B = to_unit_ball(B)
            if R is not None:
                B = to_unit_ball(B @ R)
            out[a:a + B.shape[0]] = B
        return out
    if normalisation == "minmax":
        lo = X.min(axis=0).astype(np.float64)
        span = X.max(axis=0).astype(np.float64) - lo
    elif normalisation == "standardise":
        lo = np.zeros(D)
        sq = np.zeros(D)
        for a in range(0, n, chunk):
            B = np.asarray(X[a:a + chunk], dtype=np.float64)
            lo += B.sum(axis=0)
            sq += (B * B).sum(axis=0)
        lo /= n
        span = np.sqrt(np.maximum(sq / n - lo * lo, 0.0))
    else:
        raise ValueError(f"unknown feature normalisation {normalisation!r}")
    const = span <= 1e-12 * np.maximum(1.0, np.abs(lo))
    span = np.where(const, 1.0, span)
    R = T.gaussian_projection_matrix(D, dim, seed) if dim else None
    out = np.empty((n, dim or D))
    for a in range(0, n, chunk):
        B = (np.asarray(X[a:a + chunk], dtype=np.float64) - lo) / span
        B[:, const] = 0.0
        B = to_unit_ball(B)
        if R is not None:
            B = to_unit_ball(B @ R)
        out[a:a + B.shape[0]] = B
    return out


PREPROCESSING_VARIANTS = ("data_independent", "source")


def feature_domain(name: str, is_substitute: bool, n_features: int):
    """The data-independent per-feature map of dataset ``name``: ``("domain", (lo, hi[, log]))`` with bounds from
    the feature domain (MNIST: pixel intensities in [0, 1]; Covertype: :data:`dpbench.data.covertype.QUANTITATIVE_DOMAIN`
    and binary indicators; KDDCup99: :data:`dpbench.data.kddcup99.NUMERIC_DOMAIN` and one-hot columns), or
    ``("row", None)`` for a synthetic stand-in, whose features have no documented domain (each row is divided by
    its own norm instead)."""
    if name == "mnist":                      # the real images and the deformed-digits stand-in: pixels in [0, 1]
        return "domain", (np.zeros(n_features), np.ones(n_features))
    if is_substitute:
        return "row", None
    if name == "covertype":
        return "domain", cov.domain_bounds(n_features)
    if name == "kddcup99":
        return "domain", kdd.domain_bounds(n_features)
    raise ValueError(f"no feature domain for dataset {name!r}")


def preprocessing_label(config: dict, name: str, is_substitute: bool) -> tuple[str, bool]:
    """(``preprocessing`` column, ``preprocessing_data_dependent`` column) of the rows of dataset ``name``: the map
    actually used, and whether some step used statistics of the private training data."""
    if name == "synthetic":
        return "none (generated on the unit sphere)", False
    pre = study_config(config)["preprocessing"]
    proj = "" if name == "covertype" else "; fixed Gaussian random projection; rows into the unit ball again"
    if pre.get("variant", "data_independent") == "source":
        how = {"minmax": "per-feature min-max scaling", "standardise": "per-feature standardisation (z-score)"}[
            pre["feature_normalisation"]]
        return (f"non-private preprocessing, as in the source: {how} with statistics of the training data; rows "
                f"into the unit ball{proj}"), True
    if is_substitute and name != "mnist":     # as feature_domain: a synthetic stand-in has no documented domain
        first = "per-row unit-norm scaling (synthetic stand-in: no documented feature domain)"
    else:
        first = "per-feature min-max scaling with fixed domain bounds (clipped)"
    return f"{first}; rows into the unit ball{proj}", False


def synthetic_sphere(n: int, d: int, margin: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n points uniform on the unit sphere of ℝ^d, labelled by sign(w*ᵀx) for a random unit w*, points with
    |w*ᵀx| < margin dropped and redrawn (separable with margin ``margin``; §3.4.1; the hyperplane is not given). Returns
    X, y, w*."""
    rng = generator(int(seed), f"song2018/ch3/synthetic/{n}/{d}/{margin!r}")
    w = rng.standard_normal(d)
    w /= np.linalg.norm(w)
    parts, have = [], 0
    while have < n:
        Z = rng.standard_normal((2 * n, d))
        Z /= np.linalg.norm(Z, axis=1, keepdims=True)
        Z = Z[np.abs(Z @ w) >= margin]
        parts.append(Z)
        have += Z.shape[0]
    X = to_unit_ball(np.concatenate(parts)[:n])
    return X, np.where(X @ w > 0, 1.0, -1.0), w


def _prepare(config: dict, key: str) -> dict:
    p = dataset_payload(config, key)
    chap, name = key.split("_", 1)
    dc = config["data"]
    if name == "synthetic":
        X, y, _ = synthetic_sphere(int(p["n"]), int(p["dim"]), float(p["margin"]), config["seed"])
        return {"X": X, "y": y, "variant": np.array("synthetic-sphere"), "is_substitute": np.array(False),
                "description": np.array(f"{p['n']} points uniform on the {p['dim']}-d unit sphere, margin "
                                        f"{p['margin']}"), "raw_dim": np.array(p["dim"])}
    common = dict(cache_dir=dc["cache_dir"], mirror=dc["mirror"], source=p["source"])
    if name == "mnist":
        ds = load_dataset("mnist", seed=dc["substitute_seed"], n_train=p["n"], n_test=1, **common)
        Xraw, y = ds.X_train, np.where(np.asarray(ds.y_train) == int(p["digit"]), 1.0, -1.0)
    elif name == "kddcup99":
        ds = load_dataset("kddcup99", seed=config["seed"], n_train=p["n"], n_test=1, **common)
        Xraw, y = ds.X_train, np.asarray(ds.y_train, dtype=np.float64)
    elif name == "covertype":
        ds = load_dataset("covertype", seed=config["seed"], **common)
        n = p["n"] or ds.n_train + ds.n_test
        if n > ds.n_train + ds.n_test:
            raise ValueError(f"{ds.variant} has {ds.n_train + ds.n_test} rows; ch4.datasets.covertype.n = {n}")
        # train + test of the seeded split = one uniformly random permutation of the file: its first n rows
        Xraw = np.concatenate([ds.X_train, ds.X_test[:max(0, n - ds.n_train)]])[:n]
        y = np.concatenate([ds.y_train, ds.y_test[:max(0, n - ds.n_train)]])[:n].astype(np.float64)
    else:
        raise ValueError(f"unknown dataset {name!r}")
    if p["preprocessing"] == "source":
        X = preprocess(Xraw, p["normalisation"], p.get("dim"), p["projection_seed"])
    else:
        kind, dom = feature_domain(name, bool(ds.is_substitute), Xraw.shape[1])
        X = preprocess(Xraw, kind, p.get("dim"), p["projection_seed"], domain=dom)
    return {"X": X, "y": np.asarray(y, dtype=np.float64), "variant": np.array(ds.variant),
            "is_substitute": np.array(ds.is_substitute), "description": np.array(ds.description),
            "raw_dim": np.array(Xraw.shape[1])}


def load_prepared(config: dict, key: str) -> dict:
    """The prepared (X, y) of dataset ``key`` (computed once per content key, then read from the cache)."""
    k = content_key({"kind": "song2018-ch34-data", **dataset_payload(config, key)})
    a = Store(config["cache_dir"]).artefact(k, lambda: _prepare(config, key))
    return {**a, "variant": str(a["variant"]), "is_substitute": bool(a["is_substitute"]),
            "description": str(a["description"]), "raw_dim": int(a["raw_dim"])}


def dataset_signature(config: dict) -> dict:
    return {k: dataset_payload(config, k) for k in datasets_in_use(config)}


def prepare_dataset(config: dict) -> dict:
    """Manifest part of the chapter 3/4 datasets (prepared and cached here)."""
    out = {}
    for key in datasets_in_use(config):
        a = load_prepared(config, key)
        out[key] = {"variant": a["variant"], "is_substitute": a["is_substitute"], "n": int(a["X"].shape[0]),
                    "dim": int(a["X"].shape[1]), "raw_dim": a["raw_dim"], "description": a["description"],
                    "positive_fraction": float(np.mean(a["y"] > 0)),
                    "preprocessing": preprocessing_label(config, key.split("_", 1)[1], a["is_substitute"])[0],
                    "preprocessing_data_dependent": preprocessing_label(config, key.split("_", 1)[1],
                                                                        a["is_substitute"])[1]}
    return out
