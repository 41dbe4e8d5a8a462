"""vdm2020 — the prepared problems (MNIST or its labelled substitute, MNIST-1M, user datasets): splits, per-row
normalisation, PCA on a public split, the bias feature; memory-mapped and cached by content."""

from __future__ import annotations

import functools
import json
import logging
from pathlib import Path

import numpy as np

from dpbench.methods import Problem
from dpbench.store import content_key

log = logging.getLogger(__name__)

STUDY = "vdm2020"  # the config key; this module imports no figure declarations (its code hash is its closure)

# ---------------------------------------------------------------------------------------------------
# data


LARGE_SOURCE_BYTES = 1 << 29  # after preparing a training set above 512 MiB, drop its float32 source


def row_scale(X_train, train_rows, preprocessing: str) -> float | None:
    """The divisor of the rows before the bias feature (:func:`dpbench.data.unit_ball_rows_into`): None —
    every row by its own norm — for ``data_independent``; the largest training-row norm for ``source`` (the
    paper's code: replacing one training row can rescale every other row)."""
    from dpbench.data import max_row_norm

    if preprocessing == "data_independent":
        return None
    if preprocessing == "source":
        return max_row_norm(X_train, train_rows)
    raise ValueError(f"preprocessing must be 'data_independent' or 'source', got {preprocessing!r}")


def _public_rows(n: int, seed: int, fraction: float) -> np.ndarray:
    """Rows of the training set set aside as a PUBLIC split (never trained on) for fitting PCA (Fig. 5a)."""
    perm = np.random.default_rng(np.random.SeedSequence([seed, 11])).permutation(n)
    return np.sort(perm[: max(2, int(round(fraction * n)))])


def _select_rows(y: np.ndarray, n_classes: int | None, seed: int, split: str, validation_fraction: float,
                 exclude: np.ndarray | None = None):
    """(train rows, validation rows or None) of the training set: first ``n_classes`` digits only (Fig. 5b),
    without the rows in ``exclude`` (a public split), and for the validation split the protocol of the authors'
    released code (facebookresearch/private_prediction): the first 10% of the shuffled training set validates,
    the model trains on the rest."""
    rows = np.arange(len(y)) if n_classes is None else np.flatnonzero(y < n_classes)
    if exclude is not None:
        rows = np.setdiff1d(rows, exclude)
    if split == "test":
        return rows, None
    if split != "validation":
        raise ValueError(f"split must be 'test' or 'validation', got {split!r}")
    perm = rows[np.random.default_rng(np.random.SeedSequence([seed, 10])).permutation(len(rows))]
    n_val = int(round(validation_fraction * len(rows)))
    return perm[n_val:], perm[:n_val]


def _prepared_path(cache_dir: str, key: str) -> Path:
    return Path(cache_dir) / "problems" / key


@functools.lru_cache(maxsize=16)  # cheap: training sets are memory-mapped
def _problem(data_json: str, split: str, validation_fraction: float, bias: str, n_classes: int | None,
             pca_dim: int | None, results_cache: str, preprocessing: str = "data_independent",
             pca_public_fraction: float = 0.1) -> Problem:
    from dpbench.data import add_bias_feature, load_dataset, pca_apply, pca_basis, pca_project
    from dpbench.data import unit_ball_normalise, unit_ball_rows_into, unit_sphere_rows
    from dpbench.data.cache import open_entry, read_entry
    from dpbench.store import atomic_write_bytes

    d = json.loads(data_json)
    source_prep = preprocessing == "source"
    # the key names the content, not where it came from (cache folder, mirror, requested source)
    content = {k: d[k] for k in ("dataset", "n_train", "n_test", "seed")}
    if "fingerprint" in d:  # a user dataset: its files' content hash
        content["fingerprint"] = d["fingerprint"]
    transform = {"split": split, "validation_fraction": validation_fraction, "bias": bias,
                 "normalise": "unit-ball-by-max-train-norm-v1" if source_prep else "row-unit-norm-v1"}
    if n_classes is not None:
        transform["n_classes"] = n_classes
    if pca_dim is not None:
        transform["pca_dim"] = pca_dim
        if not source_prep:
            transform["pca_fit"] = ["public-split-v1", pca_public_fraction]
    where = {k: d[k] for k in ("source", "substitute_seed")}
    code = preparation_code_hash()  # an edit of the preparation re-prepares and recomputes the cells (same streams)
    folder = _prepared_path(results_cache, content_key({"prepared": [content, where, transform], "code": code}))
    if (got := read_entry(folder, mmap={"X_train"}, what="prepared problem")) is not None:  # prepared before
        return Problem(key=got.meta["key"], variant=got.meta["variant"], n_classes=got.meta["n_classes"], code=code,
                       **got.arrays)

    ds = load_dataset(d["dataset"], cache_dir=d["cache_dir"], mirror=d["mirror"], source=d["source"],
                      seed=d["substitute_seed"], n_train=d["n_train"], n_test=d["n_test"])
    y_all = np.asarray(ds.y_train, dtype=np.int64)
    if n_classes is not None and not 2 <= n_classes <= ds.n_classes:
        raise ValueError(f"n_classes must lie in 2..{ds.n_classes}, got {n_classes}")
    public = (_public_rows(len(y_all), d["seed"], pca_public_fraction)
              if pca_dim is not None and not source_prep else None)
    train_rows, val_rows = _select_rows(y_all, n_classes, d["seed"], split, validation_fraction, exclude=public)
    if val_rows is None:
        X_eval_src = ds.X_test
        eval_rows = np.arange(len(ds.y_test)) if n_classes is None else np.flatnonzero(ds.y_test < n_classes)
        y_eval = np.asarray(ds.y_test, dtype=np.int64)[eval_rows]
    else:
        X_eval_src, eval_rows, y_eval = ds.X_train, val_rows, y_all[val_rows]
    y_train = y_all[train_rows]
    n_cls = int(ds.n_classes if n_classes is None else n_classes)
    if ds.is_substitute:
        content["substitute_seed"] = d["substitute_seed"]
    key = content_key({"data": content, "variant": ds.variant, **transform})

    with_bias = bias == "augment"

    def build(tmp: Path, previous) -> dict:  # under the entry's lock, into a folder renamed into place
        if pca_dim is not None and source_prep:  # the source: PCA fitted on the (normalised) private training set
            Xtr, Xev = unit_ball_normalise(np.asarray(ds.X_train[train_rows], np.float64),
                                           np.asarray(X_eval_src[eval_rows], np.float64))
            X_train, X_eval = pca_project(Xtr, Xev, pca_dim)
            del Xtr, Xev
        elif pca_dim is not None:  # Fig. 5a: PCA on the public split, per-row re-normalised (vdm2020 erratum 12)
            mean, W = pca_basis(unit_sphere_rows(np.asarray(ds.X_train[public], np.float64)), pca_dim)
            X_train = unit_sphere_rows(pca_apply(unit_sphere_rows(np.asarray(ds.X_train[train_rows], np.float64)),
                                                 mean, W))
            X_eval = unit_sphere_rows(pca_apply(unit_sphere_rows(np.asarray(X_eval_src[eval_rows], np.float64)),
                                                mean, W))
        if pca_dim is not None:
            if with_bias:
                X_train, X_eval = add_bias_feature(X_train), add_bias_feature(X_eval)
            np.save(tmp / "X_train.npy", X_train)
            del X_train
        else:  # chunk by chunk into a memory-mapped .npy: one float64 copy, on disk, shared by every worker
            scale = row_scale(ds.X_train, train_rows, preprocessing)
            width = ds.X_train.shape[1] + (1 if with_bias else 0)
            X_eval = unit_ball_rows_into(np.empty((len(eval_rows), width)), X_eval_src, eval_rows, scale, with_bias)
            mm = np.lib.format.open_memmap(tmp / "X_train.npy", mode="w+", dtype=np.float64,
                                           shape=(len(train_rows), width))
            unit_ball_rows_into(mm, ds.X_train, train_rows, scale, with_bias)
            mm.flush()
            del mm
        for name, arr in (("y_train", y_train), ("X_eval", X_eval), ("y_eval", y_eval)):
            np.save(tmp / f"{name}.npy", arr)
        atomic_write_bytes(tmp / "meta.json", json.dumps({"key": key, "variant": ds.variant,
                                                          "n_classes": n_cls}).encode())
        return {"key": key, "variant": ds.variant, "n_classes": n_cls}

    entry = open_entry(folder, build, mmap={"X_train"}, what="prepared problem")
    large = len(train_rows) * ds.X_train.shape[1] * 8 > LARGE_SOURCE_BYTES
    del ds
    if large:
        from dpbench.data.registry import clear_cache

        clear_cache()  # do not keep the float32 source of a large training set alive next to its memmap
    meta, a = entry.meta, entry.arrays
    log.info("prepared problem %s (%d x %d), memory-mapped from %s", key[:12], *a["X_train"].shape, folder)
    return Problem(key=meta["key"], variant=meta["variant"], n_classes=meta["n_classes"], code=code, **a)


def preparation_code_hash() -> str:
    """The import closure of this module (:mod:`dpbench.codehash`): loaders, transforms, the substitute generator.
    It keys the prepared-problem cache and joins every cell's code hash (:attr:`dpbench.methods.Problem.code`);
    the problem's content key, which seeds the random streams, does not include it."""
    from dpbench.codehash import code_hash

    return code_hash(__name__)


#: the figure data of the figures on the study's own dataset (``studies.vdm2020.dataset``, MNIST by default): its
#: job obtains it (download or labelled substitute) and prepares its problem; a figure that names its own
#: ``dataset`` does not wait for it, so a user dataset's figure never prepares MNIST
DEFAULT = "default"


def _default_manifest(config: dict) -> Path:
    return Path(config["results_dir"]) / STUDY / "data" / f"{DEFAULT}.json"


def resolved_source(config: dict) -> str:
    """``auto`` is decided once per run by the job of the study's dataset (its manifest ``data/default.json``
    records the variant it obtained), so the series jobs neither retry a failed download nor mix variants."""
    source = config["data"]["mnist_source"]
    manifest = _default_manifest(config)
    if source == "auto" and manifest.exists():
        with open(manifest) as fh:
            source = "substitute" if json.load(fh)["is_substitute"] else "real"
    return source


def prepare_more(config: dict) -> dict:
    """Read (and check) the user datasets that figures name, in the dataset job."""
    cfg = config["studies"][STUDY]
    own = sorted({f["dataset"] for f in cfg.get("figures", {}).values() if f and f.get("dataset")})
    return {"figure_datasets": {d: problem(config, cfg, "test", dataset=d).variant for d in own}} if own else {}


def prepare_dataset(config: dict) -> dict:
    """The study's dataset job: the user datasets its figures name (:func:`prepare_more`). The study's own
    dataset is figure data (:data:`DEFAULT`), prepared only for the figures that use it."""
    return {**prepare_more(config), "study": STUDY,
            "own_dataset": f"prepared by the figures that use it: data/{DEFAULT}.json"}


#: the figure data of Fig. 4: the MNIST-1M examples (InfiMNIST-style generator) up to its largest N
MNIST1M = "mnist1m"


def figure_data(config: dict, figure: str) -> list[str]:
    """The data a figure's jobs wait for: Fig. 4 MNIST-1M (generated by its own job, in parallel chunks, only
    when Fig. 4 is requested; its first 60,000 digits are the substitute's), a figure on the study's own dataset
    :data:`DEFAULT`, a figure that names its own ``dataset`` nothing more (the dataset job reads it)."""
    fig = (config["studies"][STUDY].get("figures") or {}).get(figure)
    if not fig:
        return []
    if figure == "fig4":
        return [MNIST1M]
    return [] if fig.get("dataset") else [DEFAULT]


def figure_data_signature(config: dict, name: str) -> str:
    """The study's own dataset depends on the data settings only (editing a figure does not re-prepare it, and
    so does not rerun the other figures); MNIST-1M also on Fig. 4's largest N."""
    from dpbench.studies import STUDIES

    cfg = config["studies"][STUDY]
    sig = {"dataset": STUDIES[STUDY].dataset_signature(config), "name": name}
    if name == MNIST1M:
        sig["n"] = max(((cfg.get("figures") or {}).get("fig4") or {}).get("n_trains") or [0])
    return json.dumps(sig, sort_keys=True, default=str)


def prepare_figure_data(config: dict, name: str, n_jobs: int = 1) -> dict:
    """Generate the MNIST-1M examples Fig. 4 needs once, with ``n_jobs`` workers over chunks (each chunk is a pure
    function of the generator's seed and its index range: the same digits whatever the workers), so the series
    jobs that run concurrently only read the cache."""
    from dpbench.data.substitute import ensure_substitute

    if name == DEFAULT:
        _default_manifest(config).unlink(missing_ok=True)   # decide `auto` afresh: never from a previous manifest
        p = problem(config, config["studies"][STUDY], "test")
        return {"study": STUDY, "figure_data": name, "dataset_variant": p.variant,
                "is_substitute": p.variant.startswith("substitute"), "n_train": p.n_train,
                "n_test": int(p.X_eval.shape[0]), "dim": p.dim, "n_classes": p.n_classes}
    if name != MNIST1M:
        raise ValueError(f"vdm2020 declares no figure data {name!r}; known: [{DEFAULT!r}, {MNIST1M!r}]")
    cfg = config["studies"][STUDY]
    n = max(cfg["figures"]["fig4"]["n_trains"])
    ensure_substitute(config["data"]["cache_dir"], n_train=n, n_test=cfg.get("n_test") or 10_000,
                      seed=config["data"].get("substitute_seed", 0), n_jobs=max(1, int(n_jobs)))
    return {"study": STUDY, "figure_data": name, "n_train": n, "variant": "substitute:deformed-digits-28x28"}


def problem(config: dict, cfg: dict, split: str, n_train: int | None = None, n_classes: int | None = None,
            pca_dim: int | None = None, dataset: str | None = None) -> Problem:
    """The prepared problem of ``split`` ("test" or "validation"); the keyword overrides are the x axes of
    Figs. 4 (first ``n_train`` examples of MNIST-1M), 5b (first ``n_classes`` digits) and 5a (PCA to
    ``pca_dim``), and a figure's own ``dataset``. Fig. 4 always uses the InfiMNIST-style generator (real MNIST
    has 60,000 training digits; one figure never mixes data variants). A user dataset
    (:mod:`dpbench.data.user`) is read from its files; ``n_train`` / ``n_test`` then keep at most that many rows."""
    from dpbench.data.user import user_dataset

    data = config["data"]
    name = dataset or cfg["dataset"]
    user = user_dataset(name)
    source = "real" if user is not None else resolved_source(config) if n_train is None else "substitute"
    n = cfg.get("n_train") if n_train is None else int(n_train)
    d = {"dataset": name, "cache_dir": data["cache_dir"], "mirror": data.get("mirror"),
         "source": source, "substitute_seed": data.get("substitute_seed", 0),
         "n_train": n, "n_test": cfg.get("n_test"), "seed": config["seed"]}
    if user is not None:
        d["fingerprint"] = user.fingerprint()
    return _problem(json.dumps(d, sort_keys=True), split, cfg["cross_validation"]["validation_fraction"],
                    cfg.get("bias", "augment"), None if n_classes is None else int(n_classes),
                    None if pca_dim is None else int(pca_dim), str(config["cache_dir"]),
                    cfg.get("preprocessing", "data_independent"), float(cfg.get("pca_public_fraction", 0.1)))


NEIGHBOURING = "replace_one"  # vdm2020 Eq. 1: D and D' differ in one training example


def preprocessing(cfg: dict, point) -> tuple[str, bool]:
    """(description, uses statistics of the private training data?) of the map from raw pixels to model
    inputs at ``point`` (the rows' ``preprocessing`` columns)."""
    pca = dict(point.problem).get("pca_dim")
    bias = "; bias feature [x, 1]/√2" if cfg.get("bias", "augment") == "augment" else ""
    if cfg.get("preprocessing", "data_independent") == "source":
        return ("non-private preprocessing, as in the source: rows divided by the largest training-row norm"
                + ("; PCA fitted on the private training set, re-scaled by its largest projected norm" if pca else "")
                + bias + " — the ε does not cover it", True)
    frac = float(cfg.get("pca_public_fraction", 0.1))
    return ("per-row unit-norm scaling x/‖x‖ (data-independent)"
            + (f"; PCA to D = {pca} fitted on a public split ({frac:.0%} of the training images, never trained "
               "on), rows re-scaled to unit norm" if pca else "") + bias, False)


