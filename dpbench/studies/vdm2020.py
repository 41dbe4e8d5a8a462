"""vdm2020 — "The Trade-Offs of Private Prediction" (van der Maaten & Hannun): figure specs and anchors.

Source: van der Maaten & Hannun (2020), arXiv:2007.05089 (documented in docs/studies/vdm2020.md). Fig. 1a/1b:
test accuracy vs ε at B = 100 (δ = 0 / 1e-5); Fig. 2a/2b: accuracy vs inference budget B at ε = 1 (δ = 0 / 1e-5);
MNIST, linear softmax models, mean ± std over repetitions on one train/test split.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
from pathlib import Path

import numpy as np

from dpbench import verdicts as V
from dpbench.config import ConfigError
from dpbench.methods import REGISTRY, Problem
from dpbench.store import content_key
from dpbench.studies.base import FigureSpec, Point, lookup_figure

log = logging.getLogger(__name__)

STUDY = "vdm2020"
DELTA0_METHODS = ("loss_perturbation", "model_sensitivity", "prediction_sensitivity", "subsample_aggregate",
                  "non_private")
ALL_METHODS = DELTA0_METHODS[:-1] + ("dpsgd", "non_private")
MLP_METHODS = ("dpsgd_mlp", "subsample_aggregate_mlp", "non_private_mlp")
_D01 = "(ε, δ) = (1, 0), B = 100"

FIGURES: dict[str, FigureSpec] = {
    "fig1a": FigureSpec(STUDY, "fig1a", "MNIST: accuracy vs ε (δ = 0, B = 100)", "epsilon", "privacy loss ε",
                        "test accuracy", DELTA0_METHODS,
                        "Fig. 1a: test accuracy of linear models on MNIST as a function of the privacy loss ε "
                        "at inference budget B = 100 and δ = 0 (Laplace-type noise; DP-SGD does not support δ = 0).",
                        anchors=("claim1",)),
    "fig1b": FigureSpec(STUDY, "fig1b", "MNIST: accuracy vs ε (δ = 1e-5, B = 100)", "epsilon", "privacy loss ε",
                        "test accuracy", ALL_METHODS,
                        "Fig. 1b: test accuracy of linear models on MNIST as a function of ε ∈ (0, 1] at B = 100 "
                        "and δ = 1e-5 (Gaussian / analytic-Gaussian noise, advanced composition for prediction "
                        "methods, DP-SGD with an RDP accountant).", xscale="linear", anchors=("claim2",)),
    "fig2a": FigureSpec(STUDY, "fig2a", "MNIST: accuracy vs inference budget B (ε = 1, δ = 0)", "budget",
                        "inference budget B", "test accuracy", DELTA0_METHODS,
                        "Fig. 2a: test accuracy on MNIST as a function of the inference budget B at ε = 1, δ = 0; "
                        "private-training methods do not depend on B (horizontal lines).", anchors=("claim3",)),
    "fig2b": FigureSpec(STUDY, "fig2b", "MNIST: accuracy vs inference budget B (ε = 1, δ = 1e-5)", "budget",
                        "inference budget B", "test accuracy", ALL_METHODS,
                        "Fig. 2b: test accuracy on MNIST as a function of the inference budget B at ε = 1, "
                        "δ = 1e-5; private-training methods do not depend on B.", anchors=("claim4",)),
    "fig3": FigureSpec(STUDY, "fig3", "MNIST: accuracy vs δ (ε = 1, B = 100)", "delta",
                       "privacy failure probability δ", "test accuracy", ALL_METHODS,
                       "Fig. 3: test accuracy on MNIST as a function of the privacy failure probability δ at ε = 1 "
                       "and B = 100 (the text of §4.2 calls it Fig. 4, a typo).", anchors=("claim5",)),
    "fig4": FigureSpec(STUDY, "fig4", "MNIST-1M: accuracy vs training-set size N (ε = 1, δ = 0, B = 100)",
                       "n_train", "number of training examples N", "test accuracy", DELTA0_METHODS,
                       "Fig. 4: test accuracy as a function of the training-set size N (first N examples of "
                       f"MNIST-1M, InfiMNIST-style deformations) at {_D01}, T = 256 fixed; DP-SGD is absent "
                       "(δ = 0).", anchors=("claim6",)),
    "fig5a": FigureSpec(STUDY, "fig5a", f"MNIST: accuracy vs dimension D via PCA ({_D01})", "dim",
                        "number of PCA dimensions D", "test accuracy", DELTA0_METHODS,
                        f"Fig. 5a: test accuracy on MNIST as a function of the input dimension D at {_D01}; D is "
                        "varied by PCA of the unit-ball-normalised digits.", anchors=("claim7",)),
    "fig5b": FigureSpec(STUDY, "fig5b", f"MNIST: accuracy vs number of classes C ({_D01})", "n_classes",
                        "number of classes C (digits 0…C−1)", "test accuracy", DELTA0_METHODS,
                        f"Fig. 5b: test accuracy on MNIST as a function of the number of classes C at {_D01}; a "
                        "C-class problem keeps the digits 0…C−1 of both splits.", xscale="linear",
                        anchors=("claim8",)),
    "fig6a": FigureSpec(STUDY, "fig6a", "Loss perturbation: accuracy vs λ (δ = 0, B = 100)", "lambda",
                        "L2 regularisation λ", "test accuracy", ("loss_perturbation",),
                        "Fig. 6a: test accuracy of loss perturbation on MNIST as a function of the L2 parameter λ "
                        "(δ = 0, B = 100), one curve per ε: too small a λ overfits the perturbation, too large "
                        "a λ underfits.", anchors=("claim9",)),
    "fig6b": FigureSpec(STUDY, "fig6b", "Subsample-and-aggregate: accuracy vs number of models T (δ = 0, B = 100)",
                        "n_models", "number of models T", "test accuracy", ("subsample_aggregate",),
                        "Fig. 6b: test accuracy of subsample-and-aggregate on MNIST as a function of the number "
                        "of models T (δ = 0, B = 100); cost grows as O(T).", anchors=("claim9",)),
    "fig7a": FigureSpec(STUDY, "fig7a", "Non-convex substitute (MLP): accuracy vs ε (B = 10, δ = 1e-5)", "epsilon",
                        "privacy loss ε", "test accuracy", MLP_METHODS,
                        "Fig. 7a structure: DP-SGD vs subsample-and-aggregate with T = 16 models, δ = 1e-5, "
                        "B = 10, and the non-private reference, as a function of ε.", anchors=("claim10",),
                        substitute_note="SUBSTITUTE EXPERIMENT: the paper trains ResNet-20 on CIFAR-10; here a "
                        "one-hidden-layer MLP on the MNIST data of this study (non-convex, per-example "
                        "gradients, global clipping)."),
    "fig7b": FigureSpec(STUDY, "fig7b", "Non-convex substitute (MLP): accuracy vs B (ε = 1, δ = 1e-5)", "budget",
                        "inference budget B", "test accuracy", MLP_METHODS,
                        "Fig. 7b structure: DP-SGD vs subsample-and-aggregate with T = 16 models, δ = 1e-5, "
                        "ε = 1, and the non-private reference, as a function of the inference budget B.",
                        anchors=("claim10",),
                        substitute_note="SUBSTITUTE EXPERIMENT: the paper trains ResNet-20 on CIFAR-10; here a "
                        "one-hidden-layer MLP on the MNIST data of this study (non-convex, per-example "
                        "gradients, global clipping)."),
}

# x axis -> (the figure config's list key, where the value goes: budgets, problem or method overrides)
X_AXES = {
    "epsilon": ("epsilons", "budget"), "budget": ("budgets", "budget"), "delta": ("deltas", "budget"),
    "n_train": ("n_trains", "problem"), "dim": ("dims", "problem"), "n_classes": ("n_classes", "problem"),
    "lambda": ("lambdas", "method"), "n_models": ("n_models", "method"),
}
_OVERRIDE_NAME = {"n_train": "n_train", "dim": "pca_dim", "n_classes": "n_classes", "lambda": "l2",
                  "n_models": "n_models"}


# ---------------------------------------------------------------------------------------------------
# configuration


def validate(cfg: dict, prefix: str = "studies.vdm2020") -> None:
    """Cross-field rules the JSON schema cannot express; raise ConfigError naming the key."""
    vf = cfg["cross_validation"]["validation_fraction"]
    n_train, t = cfg.get("n_train"), cfg["subsagg_models"]
    if n_train is not None and n_train < t:
        raise ConfigError(f"invalid config: {prefix}.subsagg_models: T={t} exceeds n_train={n_train} "
                          "(each of the T models needs at least one example)")
    for name, fig in cfg.get("figures", {}).items():
        if fig is None:  # disabled
            continue
        key = X_AXES[figure(name).x_name][0]
        values = fig.get(key) or []
        if len(set(values)) != len(values):
            raise ConfigError(f"invalid config: {prefix}.figures.{name}.{key}: duplicate values in {values}")
        for i, m in enumerate(fig.get("methods", [])):
            if m not in figure(name).methods and (why := fits(name, m)) is not None:
                raise ConfigError(f"invalid config: {prefix}.figures.{name}.methods[{i}]: {m!r} is not a series of "
                                  f"{name} ({why}); its series are {list(figure(name).methods)}")
            reasons = {make_method(cfg, m, **dict(p.method)).supports(p.epsilon, p.delta, p.budget)
                       for p in points(cfg, name)}
            if None not in reasons:
                raise ConfigError(f"invalid config: {prefix}.figures.{name}.methods[{i}]: {m!r} supports no point of "
                                  f"{name} ({'; '.join(sorted(reasons))})")
        user = fig.get("dataset", cfg.get("dataset")) not in (None, "mnist")
        if user and name in MNIST_ONLY:
            where = f"{prefix}.figures.{name}" + (".dataset" if "dataset" in fig else "")
            raise ConfigError(f"invalid config: {where}: {name} cannot take a user dataset ({MNIST_ONLY[name]}); "
                              f"set {prefix}.figures.{name} to null, or name the dataset per figure")
        if key == "n_trains":
            t = cfg["subsagg_models"]
            for i, n in enumerate(values):
                if n * (1 - vf) < t:
                    raise ConfigError(f"invalid config: {prefix}.figures.{name}.n_trains[{i}]: N={n} leaves "
                                      f"{int(n * (1 - vf))} examples after the validation split, fewer than T={t} "
                                      "(subsample-and-aggregate needs one example per model)")
        if key == "n_models" and cfg.get("n_train") is not None:
            for i, t in enumerate(values):
                if t > cfg["n_train"] * (1 - vf):
                    raise ConfigError(f"invalid config: {prefix}.figures.{name}.n_models[{i}]: T={t} exceeds the "
                                      f"{int(cfg['n_train'] * (1 - vf))} training examples left after validation")
        if key == "dims" and not user:
            for i, dim in enumerate(values):
                if dim > 784:
                    raise ConfigError(f"invalid config: {prefix}.figures.{name}.dims[{i}]: D={dim} exceeds the 784 "
                                      "pixels of the digits")
    cv = cfg["cross_validation"]
    if not cv.get("enabled", True):
        for tuned in ("l2", "clip"):
            if tuned not in cv.get("fixed", {}):
                raise ConfigError(f"invalid config: {prefix}.cross_validation.fixed.{tuned}: required when "
                                  "cross_validation.enabled is false (the value used instead of tuning)")


def figure_names(cfg: dict) -> list[str]:
    """Figures enabled in the config (a figure set to null is disabled)."""
    return [f for f in FIGURES if cfg.get("figures", {}).get(f) is not None]


def figure(name: str) -> FigureSpec:
    return lookup_figure(FIGURES, STUDY, name)


def points(cfg: dict, name: str) -> list[Point]:
    """The x positions (and curves) of a figure, read from the config (the one place grids are expanded)."""
    fig = cfg["figures"][name]
    spec = figure(name)
    key, where = X_AXES[spec.x_name]
    data = (("dataset", fig["dataset"]),) if fig.get("dataset") else ()  # a figure's own dataset
    out = []
    curves = [None] if spec.x_name == "epsilon" or "epsilons" not in fig else fig["epsilons"]
    for eps_curve in curves:
        for v in fig[key]:
            eps = float(v) if spec.x_name == "epsilon" else float(eps_curve if eps_curve is not None else fig["epsilon"])
            delta = float(v) if spec.x_name == "delta" else float(fig["delta"])
            budget = int(v) if spec.x_name == "budget" else int(fig["budget"])
            over = (((_OVERRIDE_NAME[spec.x_name], float(v) if spec.x_name == "lambda" else int(v)),)
                    if where != "budget" else ())
            out.append(Point(float(v), eps, delta, budget,
                             problem=tuple(sorted((over if where == "problem" else ()) + data)),
                             method=over if where == "method" else (),
                             curve=f"ε = {eps_curve:g}" if eps_curve is not None else ""))
    return out


def fits(name: str, method: str) -> str | None:
    """None if the registered ``method`` can be a series of figure ``name``, else why not. Every method of the
    registry learns a classifier on a :class:`~dpbench.methods.Problem`; a figure whose x axis is a method
    setting (λ, T) needs a method that has it (the tuned ``l2``; a declared setting ``n_models``)."""
    if method not in REGISTRY.methods:
        return "not a registered method"
    x = figure(name).x_name
    if X_AXES[x][1] != "method":
        return None
    cls, setting = REGISTRY.get(method), _OVERRIDE_NAME[x]
    if setting == cls.tuned or any(s.name == setting for s in cls.settings_spec):
        return None
    return f"its x axis sets {setting!r}, which {method} does not have"


def candidates(cfg: dict, name: str) -> list[str]:
    """The figure's series before the support check: the source's, then the added methods its ``methods`` names."""
    wanted = cfg["figures"][name].get("methods") or []
    return list(figure(name).methods) + [m for m in wanted if m not in figure(name).methods]


def series(cfg: dict, name: str) -> list[str]:
    """Methods drawn in a figure; a method that supports no point of it is left out (reason in the caption)."""
    out = []
    wanted = cfg["figures"][name].get("methods")
    for m in candidates(cfg, name):
        if wanted is not None and m not in wanted:
            continue
        if any(make_method(cfg, m, **dict(p.method)).supports(p.epsilon, p.delta, p.budget) is None
               for p in points(cfg, name)):
            out.append(m)
    return out


def make_method(cfg: dict, name: str, **overrides):
    """The registered method ``name`` with its declared settings read from this study's config
    (:meth:`dpbench.methods.Method.from_config`); ``overrides`` come from a figure point (``n_models`` sets T;
    a fixed tuned value such as ``l2`` is used by the runner, not here)."""
    return REGISTRY.get(name).from_config(cfg, prefix=f"studies.{STUDY}", **overrides)


#: figures that cannot take another dataset than MNIST, and why
MNIST_ONLY = {"fig4": "its x axis is the training-set size of MNIST-1M, the InfiMNIST-style generator"}


def extend_schema(schema: dict, config: dict) -> None:
    """The registry's part of the schema: the method names a figure's ``methods`` may hold, the classification
    datasets ``dataset`` may name (MNIST and the user datasets of ``config``), and for each method's settings
    the key of its config block, unless the schema file declares it (:meth:`dpbench.methods.Registry.schema_blocks`)."""
    from dpbench.data.registry import datasets_for

    defs = schema["$defs"]
    defs["methods"]["items"] = {"enum": REGISTRY.names()}
    user = config.get("datasets") if isinstance(config.get("datasets"), dict) else {}
    names = datasets_for("classification") + [n for n, d in user.items()
                                             if isinstance(d, dict) and d.get("task") == "classification"]
    defs["vdm2020_dataset"] = {"enum": list(dict.fromkeys(names))}
    for path, keys in REGISTRY.schema_blocks().items():
        node = defs[STUDY]
        for part in path:
            props = node.setdefault("properties", {})
            node = props.setdefault(part, {"type": "object", "additionalProperties": False, "properties": {}})
            while "$ref" in node:  # "#/$defs/sgd"
                node = defs[node["$ref"].rsplit("/", 1)[-1]]
        for key, sub in keys.items():
            node.setdefault("properties", {}).setdefault(key, sub)


def tuning_grid(cfg: dict, method) -> list[float] | None:
    cv = cfg["cross_validation"]
    return {"l2": cv["lambda_grid"], "clip": cv["clip_grid"], None: None}[method.tuned]


def fixed_hyperparameter(cfg: dict, method) -> float:
    """The value of the method's tuned parameter when ``cross_validation.enabled`` is false."""
    return float(cfg["cross_validation"]["fixed"][method.tuned])


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
    folder = _prepared_path(results_cache, content_key({"prepared": [content, where, transform]}))
    if (got := read_entry(folder, mmap={"X_train"}, what="prepared problem")) is not None:  # prepared before
        return Problem(key=got.meta["key"], variant=got.meta["variant"], n_classes=got.meta["n_classes"], **got.arrays)

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
    return Problem(key=meta["key"], variant=meta["variant"], n_classes=meta["n_classes"], **a)


def resolved_source(config: dict) -> str:
    """``auto`` is decided once per run by the dataset job (its manifest records the variant it obtained),
    so the series jobs neither retry a failed download nor mix variants."""
    source = config["data"]["mnist_source"]
    manifest = Path(config["results_dir"]) / STUDY / "dataset.json"
    if source == "auto" and manifest.exists():
        with open(manifest) as fh:
            source = "substitute" if json.load(fh)["is_substitute"] else "real"
    return source


def prepare_more(config: dict) -> dict:
    """Generate the MNIST-1M examples Fig. 4 needs once, in the dataset job (in parallel chunks), so the
    series jobs that run concurrently only read the cache; read (and check) the user datasets that figures name."""
    from dpbench.data.substitute import ensure_substitute

    cfg = config["studies"][STUDY]
    own = sorted({f["dataset"] for f in cfg.get("figures", {}).values() if f and f.get("dataset")})
    out = {"figure_datasets": {d: problem(config, cfg, "test", dataset=d).variant for d in own}} if own else {}
    fig4 = cfg.get("figures", {}).get("fig4")
    if not fig4:
        return out
    n = max(fig4["n_trains"])
    ensure_substitute(config["data"]["cache_dir"], n_train=n, n_test=cfg.get("n_test") or 10_000,
                    seed=config["data"].get("substitute_seed", 0), n_jobs=min(4, os.cpu_count() or 1))
    return {**out, "mnist1m_n_train": n, "mnist1m_variant": "substitute:deformed-digits-28x28"}


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


# ---------------------------------------------------------------------------------------------------
# captions: every choice the sources leave open, stated where the figure is shown


_GRID_NOTE = {
    "epsilon": "Grid of the x axis not given in the paper [INFERRED].",
    "budget": "B grid from INFERENCE_BUDGETS of the authors' released code [CODE].",
    "delta": "δ grid not given in the paper [INFERRED]: 1e-10…1e-2, extended to 1e-1 to show where "
             "prediction sensitivity recovers.",
    "n_train": "N grid not given in the paper, only 'up to one million' (§4.2) [INFERRED]; the first N examples "
               "([CODE] random=False), 10% of them held out for validation.",
    "dim": "D grid not given in the paper [INFERRED]. The model has D + 1 inputs (bias feature).",
    "n_classes": "C ∈ {2, …, 10}: digits 0…C−1 of both splits ([CODE] asserts C ≥ 2).",
    "lambda": "λ grid = the cross-validation grid [INFERRED]; λ is fixed on the x axis (no tuning); one curve per ε.",
    "n_models": "T grid: powers of two around 256 [INFERRED]; subsample-and-aggregate is not tuned.",
}


#: The key to the source tags of the notes above, appended to every caption that uses one.
TAG_NOTE = ("Tags: [CODE] = not stated in the paper, taken from the authors' released code "
            "(github.com/facebookresearch/private_prediction); [INFERRED] = stated in neither, our choice "
            "(reasons in docs/studies/vdm2020.md).")


def lb_fraction(cfg: dict) -> float:
    return float(cfg.get("lbfgs", {}).get("error_fraction", 0.01))


def deviations(cfg: dict, name: str) -> list[str]:
    spec = figure(name)
    dp = cfg["dpsgd"]
    cv = cfg["cross_validation"]
    tuning = (f"λ / ν chosen per (method, ε, δ{', x' if X_AXES[spec.x_name][1] == 'problem' else ''}) by "
              f"validation on {cv['validation_fraction']:.0%} of the training set, {cv['repetitions']} "
              f"repetitions, B = {cv['budget']} [CODE]; the privacy cost of tuning is ignored, as in the paper "
              "(§4.1); the chosen value is in every result row." if cv.get("enabled", True) else
              f"Cross-validation DISABLED: fixed λ = {cv['fixed']['l2']:g}, clip = {cv['fixed']['clip']:g}.")
    out = [
        _GRID_NOTE[spec.x_name],
        f"{cfg['repetitions']} repetitions (paper: 100); " + tuning,
        "Bias folded in as a constant feature, x → [x, 1]/√2, so ‖x‖ ≤ 1 (assumption 5) holds exactly; the paper's "
        "analysis has no bias (assumption 3)."
        if cfg.get("bias", "augment") == "augment" else "No bias term.",
    ]
    pca = {"pca_dim": 1} if spec.x_name == "dim" else {}
    text, dependent = preprocessing(cfg, Point(0.0, 0.0, 0.0, 0, problem=tuple(pca.items())))
    out.append("Preprocessing: " + text + (
        ". Every row is scaled by its own norm, so replacing one raw training row changes no other row: the "
        "sensitivity bounds hold from the raw data on (the paper's code divides by the largest training-row "
        "norm and fits PCA on the training set, which breaks them; `preprocessing: source` reproduces it, "
        "labelled)." if not dependent else
        ". NON-PRIVATE PREPROCESSING, AS IN THE SOURCE: replacing one training row rescales every other row "
        "(and moves the PCA basis), so the plotted ε does not hold end to end."))
    out.append("Neighbouring datasets replace one training example (Eq. 1) for every method: loss perturbation "
               "and DP-SGD are calibrated for it (their proofs/accountants are for add/remove; see their notes).")
    shown = series(cfg, name)
    if spec.substitute_note:
        out.insert(0, spec.substitute_note)
    if spec.x_name == "n_train":
        out.append("MNIST-1M: every N uses the InfiMNIST-style deformation generator (deterministic per index, "
                   "float32 chunks; labelled substitute) — real MNIST has only 60,000 training digits. Training "
                   "sets above 512 MiB are prepared once into the cache and memory-mapped by every worker.")
    if "loss_perturbation" in shown:
        lp_rel = cfg["loss_perturbation"].get("neighbouring", "replace_one")
        out.append("Loss perturbation: ρ/(2N)‖θ‖² form of Alg. 4 (Eq. 3 in §3.1 prints ½ρ‖θ‖²), combined with λ "
                   "as "
                   + ("max(ρ/N, λ) [CODE]. " if cfg["loss_perturbation"]["regularizer"] == "code_max"
                      else "ρ/N + λ. ")
                   + ("Noise calibrated for a REPLACED example (gradient difference 2K: β = ε/(4K), or "
                      "σ = (2K/ε)√(8 ln(2/δ) + 4ε)); the paper's β = ε/(2K) covers add/remove only (Thm 3's "
                      "proof) and would be 1.5ε-DP for replace-one."
                      if lp_rel == "replace_one" else
                      "PAPER'S CALIBRATION (add/remove, β = ε/(2K)) — ACTUAL replace-one ε = 1.5 × AXIS at δ = 0 "
                      "(epsilon_achieved in the rows).")
                   + f" L-BFGS stops at ‖∇J‖₂ ≤ {lb_fraction(cfg):g}·K/N: within {lb_fraction(cfg) / 2:.1%} of "
                   "the record-level sensitivity of the exact minimiser (the bound is in every row).")
    if "subsample_aggregate" in shown or "subsample_aggregate_mlp" in shown:
        t = (cfg["mlp"]["subsample_aggregate"]["n_models"] if "subsample_aggregate_mlp" in shown
             else "the x axis" if spec.x_name == "n_models" else cfg["subsagg_models"])
        out.append(f"Subsample-and-aggregate: T = {t}, β = "
                   + ("ε/B as in the paper (Thm 7). PAPER'S β — ACTUAL ε = 2 × AXIS at δ = 0 (about 2× for "
                      "δ > 0): one record moves one vote, so two counts change and each query is 2β-DP; the proof "
                      "omits the normaliser. The rows' epsilon_achieved holds the true ε."
                      if cfg["subsample_aggregate"]["beta_rule"] == "paper"
                      else "ε*/2 with ε* = ε/B (or Eq. 61's advanced-composition rule for δ > 0): one record moves "
                      "one vote, so two counts change and each query is 2β-DP (the paper's β = ε/B, Thm 7, omits "
                      "the normaliser and would give 2ε; `beta_rule: paper` reproduces it, labelled)."))
    if "dpsgd_mlp" in shown:
        m, md = cfg["mlp"], cfg["mlp"]["dpsgd"]
        out.append(f"MLP: one hidden ReLU layer of {m['hidden']} units, softmax output, {m['schedule']} learning-rate "
                   f"schedule; DP-SGD batch {md['batch_size']}, {md['epochs']} epochs, learning rate "
                   f"{md['learning_rate']}, {md['sampling']} sampling, global clipping, clip on the "
                   f"{md['clip_scale'].replace('_', '-')} scale; non-private reference and the T models of "
                   "subsample-and-aggregate trained with plain mini-batch SGD [INFERRED: the CIFAR-10 settings of §4.3 "
                   "scaled down].")
    if "dpsgd" in shown:
        sampling = ("Poisson sampling" if dp["sampling"] == "poisson" else
                    "SHUFFLED fixed-size batches (the accountant assumes Poisson sampling: the ε is not exact)")
        scale = ("ν = clip·batch: the [CODE] grid clips the gradient of the batch-mean loss"
                 if dp.get("clip_scale") == "batch_mean" else "clip on the per-example gradient")
        out.append(f"DP-SGD: global clipping (Eq. 4; {scale}), {sampling}, batch {dp['batch_size']}, "
                   f"{dp['epochs']} epochs, learning rate {dp['learning_rate']} [INFERRED: not in the paper]; "
                   f"accountant {dp['accountant']}" + (f" with the {dp['conversion']} RDP→DP conversion."
                                                        if dp["accountant"] == "rdp" else ".")
                   + (" Replace-one (Eq. 1): calibrated at the add/remove budget (ε/2, δ/(1 + e^{ε/2})), which is "
                      "exactly (ε, δ) for a replaced example." if dp.get("neighbouring", "replace_one") == "replace_one"
                      else " PAPER'S ACCOUNTING (add/remove at (ε, δ)) — the replace-one ε at the same δ (PLD, "
                      "up to 2 × axis) is in the rows' epsilon_achieved and the legend."))
    if {"model_sensitivity", "prediction_sensitivity"} & set(shown):
        out.append(f"Model / prediction sensitivity: L-BFGS stops at ‖∇J‖₂ ≤ η·K/N (η = {lb_fraction(cfg):g}), so "
                   "the fit is within (η/2)·Δ of the exact minimiser and the noise is calibrated to Δ(1 + η), "
                   "Δ = 2K/(Nλ): the guarantee covers the solver's error (η is raised to 2e-8·N/K where "
                   "float64 cannot resolve a smaller gradient: 1.4% at N = 10⁶; the η used is in every row).")
    if "prediction_sensitivity" in shown and any(p.delta > 0 for p in points(cfg, name)):
        out.append("Prediction-sensitivity Gaussian σ in the appendix form 2Kα/(Nλ√(2ε*)) (Alg. 7, Eq. 53; §3.2 "
                   "drops the √2); δ′ searched over linspace(0, δ, 1000)[1:-1] (Alg. 7's range (0, δ − Bδ*) is "
                   "circular; the authors' code searches (0, δ)).")
    for m in shown:
        if m not in spec.methods:
            cls = REGISTRY.get(m)
            out.append(f"{cls.label} ({m}): an added method ({cls.__module__}.{cls.__qualname__}), not in the source; "
                       f"settings {make_method(cfg, m).settings}.")
    own = cfg["figures"][name].get("dataset") or cfg["dataset"]
    if own != "mnist":
        out.append(f"Data: the user dataset {own!r} instead of MNIST (variant in the rows and on the figure); "
                   "the source's claims are not checked on it.")
    wanted = cfg["figures"][name].get("methods")
    skipped = [m for m in spec.methods if m not in shown and (wanted is None or m in wanted)]
    for m in skipped:
        reason = make_method(cfg, m).supports(points(cfg, name)[0].epsilon, points(cfg, name)[0].delta, 1)
        out.append(f"{REGISTRY.get(m).label} not shown: {reason}.")
    if any("[CODE" in d or "[INFERRED" in d for d in out):
        out.append(TAG_NOTE)
    return out


# ---------------------------------------------------------------------------------------------------
# anchor checks: the paper's qualitative claims (§4.2–4.3, listed in docs/studies/vdm2020.md#claims), computed
# from the results

PRIVATE = ("loss_perturbation", "model_sensitivity", "prediction_sensitivity", "subsample_aggregate", "dpsgd")
PAPER_CROSSOVER_B = 80.0
N_CLASSES = 10
CHANCE_MARGIN = 0.05  # a point is informative when some method beats chance (1/C) by at least this much


PRIVATE_MLP = ("dpsgd_mlp", "subsample_aggregate_mlp")


def _means(df, methods=PRIVATE):
    g = df[df["series"].isin(methods)].groupby(["x", "series"])["value"]
    return g.mean().unstack("series"), (g.std() / np.sqrt(g.count())).unstack("series")


def _stats(df, methods=PRIVATE):
    """(mean, standard error, count) tables (x × series) of ``value`` over the repetitions."""
    g = df[df["series"].isin(methods)].groupby(["x", "series"])["value"]
    return (g.mean().unstack("series"), (g.std() / np.sqrt(g.count())).unstack("series"),
            g.count().unstack("series"))


def _est(st, x, s) -> V.Est:
    """V.Est of series ``s`` at ``x`` from :func:`_stats` tables (n = 0 when the cell is missing)."""
    m, se, n = st
    if s not in m or x not in m.index or np.isnan(m.loc[x, s]):
        return V.Est(math.nan, math.nan, 0)
    return V.Est(float(m.loc[x, s]), float(se.loc[x, s]), float(n.loc[x, s]))


def _minus(a: V.Est, b: V.Est) -> V.Est:
    """a − b of two independent estimates."""
    return V.Est(a.mean - b.mean, math.hypot(a.se, b.se), min(a.n, b.n))


def _too_few(df, methods=PRIVATE):
    """Undecided (TOO_FEW) when a (x, series) cell of ``methods`` has fewer than 2 repetitions (standard error
    undefined: never a pass), else None."""
    keys = ["x", "series"] + (["curve"] if "curve" in df else [])  # fig6a: one curve per ε at the same x
    c = df[df["series"].isin(methods)].groupby(keys, dropna=False)["value"].count()
    return V.too_few(V.Est(math.nan, math.nan, int(c.min()))) if len(c) else None


def _first(tf, v):
    """The TOO_FEW verdict when there is one, else ``v``."""
    return tf if tf is not None else v


_BEYOND = f"differences beyond {V.Z:g} standard errors over the repetitions"


def _chance(df) -> float:
    return 1.0 / float(df["n_classes"].max()) if "n_classes" in df else 1.0 / N_CLASSES


def _fmt(series) -> str:
    return ", ".join(f"{x:g}: {v:.3f}" if not isinstance(x, str) else f"{x}: {v:.3f}" for x, v in series.items())


def _crossing(diff) -> float:
    """First x (log-interpolated) where ``diff`` (indexed by x, sorted) changes sign from < 0 to ≥ 0; the first
    x if it is ≥ 0 there already; nan if never."""
    d = diff.dropna().sort_index()
    if d.empty:
        return float("nan")
    xs, ys = np.log(d.index.to_numpy(float)), d.to_numpy()
    if ys[0] >= 0:
        return float(np.exp(xs[0]))
    for i in range(1, len(ys)):
        if ys[i] >= 0 > ys[i - 1]:
            return float(np.exp(xs[i - 1] + (xs[i] - xs[i - 1]) * -ys[i - 1] / (ys[i] - ys[i - 1])))
    return float("nan")


def _hump(curve, se) -> tuple[bool, float, str]:
    """Is a curve (indexed by x) hump-shaped: its maximum strictly inside the grid and above both ends by more
    than two standard errors? Returns (hump, argmax, description)."""
    c = curve.dropna().sort_index()
    if len(c) < 3:
        return False, float("nan"), "fewer than 3 points"
    arg = c.idxmax()
    s = se.reindex(c.index).fillna(0.0)
    margin_lo = c[arg] - c.iloc[0] - 2 * np.hypot(s[arg], s.iloc[0])
    margin_hi = c[arg] - c.iloc[-1] - 2 * np.hypot(s[arg], s.iloc[-1])
    inside = c.index[0] < arg < c.index[-1]
    return bool(inside and margin_lo > 0 and margin_hi > 0), float(arg), \
        f"max {c[arg]:.3f} at {arg:g}; ends {c.iloc[0]:.3f} ({c.index[0]:g}), {c.iloc[-1]:.3f} ({c.index[-1]:g})"


def _hump_verdict(curve, se):
    """Three-valued :func:`_hump`: holds for a hump beyond 2 s.e.; fails when the maximum is at an end of the
    grid; undecided with fewer than 3 points, or an interior maximum within 2 s.e. of an end."""
    c = curve.dropna().sort_index()
    if len(c) < 3:
        return V.undecided(f"{V.TOO_FEW} ({len(c)} < 3)")
    h, arg, _ = _hump(curve, se)
    if h:
        return V.holds()
    if not (c.index[0] < arg < c.index[-1]):
        return V.fails()
    return V.undecided(V.WIDE)


def crossover_budget(df) -> float:
    """First B (log-interpolated) at which subsagg's mean accuracy falls below loss perturbation's; nan if none."""
    m, _ = _means(df)
    if "subsample_aggregate" not in m or "loss_perturbation" not in m:
        return float("nan")
    d = (m["subsample_aggregate"] - m["loss_perturbation"]).sort_index()
    xs, ys = np.log(d.index.to_numpy(float)), d.to_numpy()
    if ys[0] < 0:
        return float(np.exp(xs[0]))
    for i in range(1, len(ys)):
        if ys[i] < 0 <= ys[i - 1]:
            return float(np.exp(xs[i - 1] + (xs[i] - xs[i - 1]) * ys[i - 1] / (ys[i - 1] - ys[i])))
    return float("nan")


def anchor_checks(frames: dict):
    """One row per checked claim (docs/studies/vdm2020.md#claims, claims 1–10): what the paper says, what was
    measured, whether it holds."""
    import pandas as pd

    # the claims are about MNIST: rows on a user dataset (docs/extending.md) are not evidence for or against them
    frames = {f: df[~df["dataset_variant"].astype(str).str.startswith("user:")] if "dataset_variant" in df else df
              for f, df in frames.items()}
    rows = _anchor_checks_1_4(frames)
    rows += _anchor_checks_5_10(frames)
    return pd.DataFrame(rows)


def _adder(rows: list):
    """``add(claim, figure, statement, measured, value, passed)`` appends one anchor-check row to ``rows``
    (``passed``: bool, None or a three-valued :class:`dpbench.verdicts.Verdict`)."""
    return V.adder(rows, STUDY)


def _anchor_checks_1_4(frames: dict) -> list[dict]:
    rows = []

    add = _adder(rows)

    if "fig1a" in frames:
        df = frames["fig1a"]
        m, se = _means(df)
        tf = _too_few(df)
        # where every method is within CHANCE_MARGIN of chance, "best" and "worst" are noise: such ε are left out
        informative = m.max(axis=1) >= 1 / N_CLASSES + CHANCE_MARGIN
        mi = m[informative]
        best = mi.idxmax(axis=1)
        worst = mi.idxmin(axis=1)
        left_out = f"; {int((~informative).sum())} ε at chance level left out" if (~informative).any() else ""
        # best/worst at an ε count only beyond 2 standard errors of the runner-up (else that ε is undecided)
        sa = [V.is_best("subsample_aggregate", mi.loc[x], se.loc[x]) for x in mi.index]
        frac = float(np.mean([v.holds for v in sa])) if sa else float("nan")
        add("claim1a", "fig1a", "δ=0, B=100: subsample-and-aggregate is best for most values of ε (§4.2)",
            f"subsagg best (beyond 2 s.e.) at {frac:.0%} of ε values ({', '.join(f'{x:g}:{b}' for x, b in best.items())})"
            + left_out, frac, _first(tf, V.fraction(sa, 0.5, min_points=2)))
        if len(best):
            lo = best.index.min()
            add("claim1b", "fig1a", "δ=0: loss perturbation is best for small ε (§4.2)",
                f"best at the smallest informative ε={lo:g}: {best[lo]} ({m.loc[lo].max():.3f})" + left_out,
                float(m.loc[lo].get("loss_perturbation", np.nan)),
                _first(tf, V.is_best("loss_perturbation", mi.loc[lo], se.loc[lo])))
        else:
            add("claim1b", "fig1a", "δ=0: loss perturbation is best for small ε (§4.2)",
                "no ε of the grid has a method above chance" + left_out, np.nan, V.undecided(V.TOO_FEW))
        ps = [V.is_best("prediction_sensitivity", -mi.loc[x], se.loc[x]) for x in mi.index]
        fw = float(np.mean([v.holds for v in ps])) if ps else float("nan")
        add("claim1c", "fig1a", "prediction sensitivity performs poorly across the board (§4.2)",
            f"prediction sensitivity worst (beyond 2 s.e.) at {fw:.0%} of ε values" + left_out, fw,
            _first(tf, V.fraction(ps, 0.5, min_points=2)))
    if "fig1b" in frames:
        m, se = _means(frames["fig1b"])
        best = m.idxmax(axis=1)
        dp = [V.is_best("dpsgd", m.loc[x], se.loc[x]) for x in m.index]
        frac = float(np.mean([v.holds for v in dp])) if dp else float("nan")
        add("claim2", "fig1b", "δ=1e-5: DP-SGD outperforms all other methods (§4.2)",
            f"DP-SGD best (beyond 2 s.e.) at {frac:.0%} of ε values ({', '.join(f'{x:g}:{b}' for x, b in best.items())})",
            frac, _first(_too_few(frames["fig1b"]), V.fraction(dp, 0.5, min_points=2)))
    if "fig2a" in frames:
        df = frames["fig2a"]
        st = _stats(df)
        m = st[0]
        tf = _too_few(df)
        s = m.get("subsample_aggregate")
        if s is not None:
            s = s.dropna().sort_index()
            first, last = _est(st, s.index[0], "subsample_aggregate"), _est(st, s.index[-1], "subsample_aggregate")
            dec = float(s.iloc[-1] - s.iloc[0])
            add("claim3a", "fig2a", "ε=1, δ=0: subsample-and-aggregate accuracy decreases with B",
                f"accuracy change from B={s.index.min():g} to B={s.index.max():g}: {dec:+.3f} (decided beyond 2 s.e.)",
                dec, _first(tf, V.exceeds(first, last)) if len(s) >= 2 else V.undecided(V.TOO_FEW))
        b = crossover_budget(df)
        lo_b, hi_b = PAPER_CROSSOVER_B / 2, PAPER_CROSSOVER_B * 2
        if {"subsample_aggregate", "loss_perturbation"} <= set(m):
            # subsagg − loss perturbation per B: +, − or undecided beyond 2 standard errors
            d = {x: _minus(_est(st, x, "subsample_aggregate"), _est(st, x, "loss_perturbation")) for x in m.index}
            below, above = [x for x in d if x <= lo_b], [x for x in d if x >= hi_b]
            parts = {f"subsagg better at every B ≤ {lo_b:g}": V.all_of([V.exceeds(d[x], 0.0) for x in below]),
                     f"loss perturbation better at every B ≥ {hi_b:g}": V.all_of([V.exceeds(0.0, d[x]) for x in above])}
            if not below or not above:  # the grid does not reach both sides of the claimed crossover
                v3b = V.undecided(f"{V.TOO_FEW}: the grid does not cover both B ≤ {lo_b:g} and B ≥ {hi_b:g}")
            else:
                v3b = _first(tf, V.all_parts(parts))
            detail = f"; {V.parts_text(parts)}" if below and above else ""
        else:
            v3b, detail = V.undecided(f"{V.EMPTY} (subsample-and-aggregate or loss perturbation missing)"), ""
        add("claim3b", "fig2a", f"ε=1, δ=0: loss perturbation outperforms subsample-and-aggregate at B ⪆ "
            f"{PAPER_CROSSOVER_B:g} (§4.2); checked as: subsample-and-aggregate more accurate at every B ≤ {lo_b:g} "
            f"and loss perturbation at every B ≥ {hi_b:g} (the crossover within [{lo_b:g}, {hi_b:g}]), {_BEYOND}",
            (f"measured crossover of the means B ≈ {b:.1f}" if np.isfinite(b) else "no crossover of the means")
            + detail, b, v3b)
    if "fig2b" in frames:
        df = frames["fig2b"]
        st = _stats(df)
        m = st[0]
        parts, oks, per_all = [], [], []
        for meth in ("loss_perturbation", "dpsgd"):
            if meth in m and "subsample_aggregate" in m:
                per = [V.exceeds(_est(st, x, meth), _est(st, x, "subsample_aggregate")) for x in m.index]
                oks.append(V.all_of(per))
                per_all += per
                parts.append(f"{meth} > subsagg (beyond 2 s.e.) at {np.mean([v.holds for v in per]):.0%} of B, "
                             f"worse beyond them at {sum(v.status == V.FAILS for v in per)}")
        add("claim4", "fig2b", "ε=1, δ=1e-5: loss perturbation and DP-SGD perform at least as well as "
            "subsample-and-aggregate for all B (§4.2); checked as: each more accurate than subsample-and-aggregate "
            f"at every B, {_BEYOND} (a tie within them is undecided, never a pass: 'at least as well' cannot be "
            "told from a tie)", "; ".join(parts) or "series missing",
            float(np.mean([v.holds for v in per_all])) if per_all else float("nan"),
            _first(_too_few(df), V.all_of(oks, "series missing")))
    return rows


def _informative(m, chance):
    return m.max(axis=1) >= chance + CHANCE_MARGIN


def _concordance(pi, se) -> tuple[float, float]:
    """(lowest, highest) mean over the rows of ``pi`` (x × method means, standard errors ``se``) of the concordance
    (concordant − discordant pairs)/pairs between the row's ranking and the overall ranking (mean over the rows),
    counting a pair only where both orders are decided beyond V.Z standard errors; an undecided pair counts as
    discordant for the lowest and as concordant for the highest."""
    from itertools import combinations

    cols = list(pi.columns)
    k = len(pi)
    ov = pi.mean(axis=0)
    ov_se = np.sqrt((se.reindex_like(pi).fillna(0.0) ** 2).sum(axis=0)) / k
    pairs = list(combinations(cols, 2))
    o = {(a, b): V.compare(ov[a] - ov[b], math.hypot(ov_se[a], ov_se[b])) for a, b in pairs}
    lo, hi = [], []
    for x in pi.index:
        conc = disc = und = 0
        for a, b in pairs:
            sx = V.compare(pi.loc[x, a] - pi.loc[x, b], math.hypot(se.loc[x, a], se.loc[x, b]))
            if sx == 0 or o[(a, b)] == 0:
                und += 1
            elif sx == o[(a, b)]:
                conc += 1
            else:
                disc += 1
        lo.append((conc - disc - und) / len(pairs))
        hi.append((conc - disc + und) / len(pairs))
    return float(np.mean(lo)), float(np.mean(hi))


def _optimal_set(agg) -> set:
    """The grid values whose mean is within V.Z standard errors of the curve's maximum (the maximum included)."""
    m, s = agg.mean(), (agg.std() / np.sqrt(agg.count())).fillna(0.0)
    arg = m.idxmax()
    return {x for x in m.index if x == arg or V.compare(m[arg] - m[x], math.hypot(s[arg], s[x])) == 0}


def _anchor_checks_5_10(frames: dict) -> list[dict]:
    import pandas as pd
    from scipy import stats

    rows = []

    add = _adder(rows)

    if "fig3" in frames:
        df = frames["fig3"]
        st = _stats(df)
        m = st[0]
        chance = _chance(df)
        low = m[m.index <= 1e-2]  # the usual δ range; 1e-1 only shows where PS recovers (see #grids in the docs)
        tf = _too_few(df[df["x"] <= 1e-2])
        if len(low) >= 2 and "subsample_aggregate" in m:
            x0, x1 = low.index[0], low.index[-1]
            gains = (low.iloc[-1] - low.iloc[0]).drop("prediction_sensitivity", errors="ignore")
            gse = pd.Series({c: math.hypot(_est(st, x1, c).se, _est(st, x0, c).se) for c in gains.index})
            add("claim5a", "fig3", "subsample-and-aggregate benefits the most from increasing δ (§4.2); checked as: its "
                f"accuracy gain from the smallest δ to δ = {x1:g} above every other method's (prediction sensitivity "
                f"excluded: claim 5b), {_BEYOND}",
                f"accuracy gain from δ={x0:g} to δ={x1:g} (prediction sensitivity "
                f"excluded: claim 5b): " + ", ".join(f"{c}: {g:.3f} ± {gse[c]:.2g}" for c, g in gains.items()),
                gains.get("subsample_aggregate", np.nan),
                _first(tf, V.is_best("subsample_aggregate", gains, gse)))
        if "prediction_sensitivity" in m:
            n_train = float(df["n_train"].max())
            usual = m[m.index <= 1.0 / n_train]
            if len(usual):
                ps = usual["prediction_sensitivity"]
                best = usual.drop(columns="prediction_sensitivity").max(axis=1)
                near_chance, half = [], []
                for x in usual.index:
                    p = _est(st, x, "prediction_sensitivity")
                    bo = _est(st, x, usual.loc[x].drop("prediction_sensitivity").idxmax())
                    near_chance.append(V.exceeds(chance + CHANCE_MARGIN, p))
                    half.append(V.exceeds(V.Est(bo.mean / 2, bo.se / 2, bo.n), p))
                ok_delta = m.index[(m["prediction_sensitivity"] > chance + CHANCE_MARGIN)]
                tf_u = _too_few(df[df["x"] <= 1.0 / n_train])
                add("claim5b", "fig3", "prediction sensitivity appears to require unacceptably high values of δ "
                    f"(§4.2); checked as: at every δ ≤ 1/N its accuracy below chance + {CHANCE_MARGIN:g}, or at every "
                    f"such δ below half the best other method's, {_BEYOND}",
                    f"at every δ ≤ 1/N = {1 / n_train:.1e}: PS ≤ {ps.max():.3f} vs best other "
                    f"≥ {best.min():.3f}; PS first beats chance + {CHANCE_MARGIN:g} at δ = "
                    + (f"{ok_delta.min():g}" if len(ok_delta) else "never")
                    + f"; near chance: {V.all_of(near_chance).status}, below half the best: {V.all_of(half).status}",
                    ps.max(), _first(tf_u, V.any_of([V.all_of(near_chance), V.all_of(half)])))
        if len(low) >= 2:
            parts, losses, per = [], [], []
            for meth in ("loss_perturbation", "dpsgd", "model_sensitivity"):
                if meth in low:
                    loss = _minus(_est(st, low.index[-1], meth), _est(st, low.index[0], meth))
                    losses.append(loss.mean)
                    v = V.exceeds(0.1, loss)  # loses less than 0.1, beyond 2 standard errors
                    per.append(v)
                    parts.append(f"{meth}: {low[meth].iloc[0]:.3f} at δ={low.index[0]:g} "
                                 f"({-loss.mean:+.3f} ± {loss.se:.2g}; {v.status})")
            add("claim5c", "fig3", "loss perturbation, DP-SGD and model sensitivity work well even at very small "
                f"δ (§4.2); checked as: each loses less than 0.1 accuracy from δ = {low.index[-1]:g} to the smallest "
                f"δ, {_BEYOND}", "; ".join(parts),
                max(losses) if losses else float("nan"),
                _first(tf, V.all_of(per)) if parts else V.undecided(V.EMPTY + " (no such series)"))
    if "fig4" in frames:
        m, se = _means(frames["fig4"])
        tf = _too_few(frames["fig4"])
        inf = _informative(m, _chance(frames["fig4"]))
        mi = m[inf]
        if len(mi) < 2:  # keep the claim visible in the report
            for claim, statement in (("claim6a", "subsample-and-aggregate is best at small N (§4.2)"),
                                     ("claim6b", "loss perturbation and model sensitivity do well at large N (§4.2)")):
                add(claim, "fig4", statement, f"only {len(mi)} of {len(m)} N values have a method at "
                    f"least {CHANCE_MARGIN:g} above chance (grid too small or ε too low)", np.nan,
                    V.undecided(f"{V.TOO_FEW} ({len(mi)} of {len(m)} N above chance)"))
        if len(mi) >= 2:
            lo, hi = mi.index.min(), mi.index.max()
            add("claim6a", "fig4", "subsample-and-aggregate is best at small N (§4.2)",
                f"best at the smallest informative N={lo:g}: {mi.loc[lo].idxmax()} ({mi.loc[lo].max():.3f})",
                mi.loc[lo].get("subsample_aggregate", np.nan),
                _first(tf, V.is_best("subsample_aggregate", mi.loc[lo], se.loc[lo])))
            add("claim6b", "fig4", "loss perturbation and model sensitivity do well at large N (§4.2)",
                f"best at N={hi:g}: {mi.loc[hi].idxmax()} ({mi.loc[hi].max():.3f}); ranking "
                + " > ".join(mi.loc[hi].sort_values(ascending=False).index),
                mi.loc[hi].max(), _first(tf, V.any_of([V.is_best(k, mi.loc[hi], se.loc[hi])
                                                       for k in ("loss_perturbation", "model_sensitivity") if k in mi],
                                                      "no such series")))
    if "fig5a" in frames:
        df = frames["fig5a"]
        st = _stats(df)
        m = st[0]
        if len(m) >= 2 and {"loss_perturbation", "model_sensitivity"} <= set(m):
            others = m.drop(columns=["loss_perturbation", "model_sensitivity"])
            d0, d1 = m.index.min(), m.index.max()
            parts, changes, per = [], [], []
            for meth in ("loss_perturbation", "model_sensitivity"):
                # advantage over the best other method at D: meth − that method (its standard error)
                adv = {x: _minus(_est(st, x, meth), _est(st, x, others.loc[x].idxmax())) for x in (d0, d1)}
                ch = _minus(adv[d0], adv[d1])
                v = V.exceeds(ch, 0.0)
                per.append(v)
                changes.append(ch.mean)
                parts.append(f"{meth} − best other: {adv[d0].mean:+.3f} at D={d0:g}, {adv[d1].mean:+.3f} at D={d1:g} "
                             f"(change {V.pm(ch, '+.3f')}; {v.status})")
            add("claim7", "fig5a", "loss perturbation and model sensitivity are more competitive when D is small "
                "(§4.2); checked as: for each, its accuracy minus the best other method's larger at the smallest D "
                f"than at the largest, {_BEYOND}", "; ".join(parts), min(changes),
                _first(_too_few(df), V.all_of(per)))
    if "fig5b" in frames:
        df = frames["fig5b"]
        st = _stats(df, PRIVATE + ("non_private",))
        m = st[0]
        tf = _too_few(df, PRIVATE + ("non_private",))
        rhos = {c: stats.spearmanr(m.index, m[c]).statistic for c in m if m[c].notna().sum() >= 3}
        per, drops = {}, {}
        for c in rhos:
            xs = m[c].dropna().index
            d = _minus(_est(st, xs[0], c), _est(st, xs[-1], c))
            drops[c] = d
            # a constant curve has no Spearman ρ (NaN): that method is undecided, never "falling"
            per[c] = V.undecided(V.NAN) if not np.isfinite(rhos[c]) else V.all_of([V.exceeds(d, 0.0), rhos[c] < 0])
        add("claim8a", "fig5b", "all methods lose accuracy as the number of classes C grows (§4.2); checked as: for "
            f"every method the mean accuracy at the smallest C above the one at the largest C, {_BEYOND}, and the "
            "curve of the means falling with C (Spearman ρ < 0)",
            ("Spearman ρ(C, accuracy): " + ", ".join(f"{c}: {r:+.2f}" for c, r in rhos.items())
             + "; accuracy(C min) − accuracy(C max): " + ", ".join(f"{c}: {V.pm(d, '+.3f')}" for c, d in drops.items()))
            if rhos else "fewer than 3 values of C per method",
            sum(v.holds for v in per.values()) / max(1, len(per)),
            _first(tf, V.all_of(per.values())) if rhos else V.undecided(f"{V.TOO_FEW} (fewer than 3 values of C)"))
        priv = m.drop(columns="non_private", errors="ignore")
        chance_c = 1.0 / priv.index.to_numpy(float)
        informative = priv.max(axis=1).to_numpy() >= chance_c + CHANCE_MARGIN
        pi = priv[informative]
        if len(pi) >= 2 and pi.shape[1] >= 3:
            overall = pi.mean(axis=0)
            taus = [stats.kendalltau(pi.loc[c], overall).statistic for c in pi.index]
            tau = float(np.nanmean(taus))
            lo, hi = _concordance(pi, st[1][pi.columns].loc[pi.index])
            v = V.holds() if lo >= 0.5 else V.fails() if hi < 0.5 else V.undecided(V.WIDE)
            add("claim8b", "fig5b", "the ranking of the methods appears largely independent of C (§4.2); checked as: "
                "the mean over the informative C of the concordance (concordant − discordant pairs of methods)/pairs "
                "between that C's ranking and the overall ranking ≥ 0.5, a pair's order counting only where it is "
                f"decided beyond {V.Z:g} standard errors (an undecided pair can go either way: holds when even the "
                "lowest concordance reaches 0.5, does not hold when even the highest stays below)",
                f"mean Kendall τ between each C's ranking and the overall ranking of the means: {tau:.2f} over "
                f"{len(pi)} informative C; concordance of the decided orders between {lo:.2f} and {hi:.2f}", tau,
                _first(tf, v))
    if "fig6a" in frames:
        df = frames["fig6a"]
        lp = df[df["series"] == "loss_perturbation"]
        tf = _too_few(lp, ("loss_perturbation",)) if len(lp) else None
        humps, args, parts, optimal = [], {}, [], {}
        for curve, g in lp.groupby("curve"):
            agg = g.groupby("x")["value"]
            h, arg, desc = _hump(agg.mean(), agg.std() / np.sqrt(agg.count()))
            humps.append(_hump_verdict(agg.mean(), agg.std() / np.sqrt(agg.count())))
            args[curve] = arg
            optimal[curve] = _optimal_set(agg)
            parts.append(f"{curve}: {desc}{' (hump)' if h else ''}")
        frac = float(np.mean([v.holds for v in humps])) if humps else float("nan")
        add("claim9a", "fig6a", "loss perturbation: accuracy is hump-shaped in λ — overfits the noise for small λ, "
            "underfits for large λ (§4.2)", "; ".join(parts) or "no loss-perturbation curve", frac,
            _first(tf, V.fraction(humps, 0.5)))
        if len(args) >= 2:
            sets = list(optimal.values())
            disjoint = any(not (a & b) for i, a in enumerate(sets) for b in sets[i + 1:])
            same = all(len(a) == 1 for a in sets) and len(set.union(*sets)) == 1
            v9b = V.holds() if disjoint else V.fails() if same else V.undecided(V.WIDE)
            add("claim9b", "fig6a", "the optimal λ depends on ε (§4.2); checked as: for two ε curves the sets of λ "
                f"whose mean accuracy is within {V.Z:g} standard errors of the curve's best are disjoint (does not "
                "hold when every curve has the same single best λ beyond them)",
                "best λ per curve: " + ", ".join(f"{c}: {a:g}" for c, a in sorted(args.items(), key=lambda t: t[0]))
                + "; λ within 2 s.e. of the best: " + ", ".join(
                    f"{c}: {{{', '.join(f'{x:g}' for x in sorted(o))}}}" for c, o in sorted(optimal.items())),
                float(len(set(args.values()))), _first(tf, v9b))
    if "fig6b" in frames:
        g = frames["fig6b"]
        sub = g[g["series"] == "subsample_aggregate"]
        agg = sub.groupby("x")["value"]
        h, arg, desc = _hump(agg.mean(), agg.std() / np.sqrt(agg.count()))
        add("claim9c", "fig6b", "subsample-and-aggregate: larger T helps, but accuracy deteriorates for very large "
            "T (§4.2)", desc, arg, _first(_too_few(sub, ("subsample_aggregate",)) if len(sub) else None,
                                          _hump_verdict(agg.mean(), agg.std() / np.sqrt(agg.count()))))
    if "fig7b" in frames:
        df = frames["fig7b"]
        st = _stats(df, PRIVATE_MLP)
        m = st[0]
        if set(PRIVATE_MLP) <= set(m):
            b = _crossing(m["dpsgd_mlp"] - m["subsample_aggregate_mlp"])
            after = [x for x in m.index if x >= 20]
            per = {x: V.exceeds(_est(st, x, "dpsgd_mlp"), _est(st, x, "subsample_aggregate_mlp")) for x in after}
            if not after:  # decisive only when the grid goes beyond the threshold B = 20
                v10a = V.undecided(f"{V.TOO_FEW}: the grid stops at B = {m.index.max():g} < 20")
            else:
                v10a = _first(_too_few(df, PRIVATE_MLP), V.all_of(per.values()))
            add("claim10a", "fig7b", "ε = 1: DP-SGD surpasses subsample-and-aggregate for B ⪆ 5 (§4.3); checked as: "
                f"DP-SGD more accurate than subsample-and-aggregate at every B ≥ 20, {_BEYOND}",
                (f"DP-SGD ≥ subsagg (means) from B ≈ {b:.1f}" if np.isfinite(b) else "DP-SGD never reaches subsagg")
                + f" (DP-SGD − subsagg: {_fmt((m['dpsgd_mlp'] - m['subsample_aggregate_mlp']).round(3))}); "
                "DP-SGD better beyond 2 s.e. at B ≥ 20: " + (", ".join(f"{x:g}: {v.status}" for x, v in per.items())
                                                            or "no such B"), b, v10a)
    if "fig7a" in frames:
        df = frames["fig7a"]
        m, se = _means(df, PRIVATE_MLP)
        tf = _too_few(df, PRIVATE_MLP)
        if set(PRIVATE_MLP) <= set(m):
            # per ε: +1 subsagg better beyond 2 s.e., −1 DP-SGD better, 0 within the interval
            cmp = pd.Series([V.compare(m.loc[x, "subsample_aggregate_mlp"] - m.loc[x, "dpsgd_mlp"],
                                       np.hypot(se.loc[x, "subsample_aggregate_mlp"], se.loc[x, "dpsgd_mlp"]))
                             for x in m.index], index=m.index).sort_index()
            sa_wins = cmp > 0
            if not sa_wins.any():  # "only when ε is large" on a grid where it never wins: nothing to check
                v10b = V.undecided(f"{V.EMPTY}: subsagg better (beyond 2 s.e.) at no ε of the grid")
            else:
                after = cmp[cmp.index >= sa_wins.idxmax()]
                before = cmp[cmp.index < sa_wins.idxmax()]
                v10b = (V.fails() if (after < 0).any() else
                        V.undecided(V.WIDE) if (after == 0).any() or not (before < 0).any() else V.holds())
            add("claim10b", "fig7a", "B = 10: subsample-and-aggregate beats DP-SGD only when ε is large (§4.3)",
                "subsagg better (beyond 2 s.e.) at ε ∈ {" + ", ".join(f"{x:g}" for x in sa_wins.index[sa_wins])
                + "}; DP-SGD better at ε ∈ {" + ", ".join(f"{x:g}" for x in cmp.index[cmp < 0]) + "}",
                float(sa_wins.mean()), _first(tf, v10b))
        npr = df[df["series"] == "non_private_mlp"]
        # the non-private model does not depend on ε: one estimate over the repetitions (per repetition, the mean
        # over the ε at which it is written)
        ref = V.estimate((npr.groupby("rep")["value"].mean() if "rep" in npr else npr["value"]).to_numpy())
        at5 = m.loc[m.index == 5.0]
        if len(at5) and np.isfinite(ref.mean):
            best = float(at5.max(axis=1).iloc[0])
            gap = ref.mean - best
            st = _stats(df, PRIVATE_MLP)
            below = {s: V.exceeds(V.Est(0.7 * ref.mean, 0.7 * ref.se, ref.n), _est(st, 5.0, s))
                     for s in PRIVATE_MLP if s in m and np.isfinite(m.loc[5.0, s])}
            add("claim10c", "fig7a", "even at ε = 5 the best private model underperforms the non-private one by "
                "≥ 30% (§4.3; paper: 86.6% non-private on CIFAR-10); checked as: at ε = 5 every private method's mean "
                f"accuracy below 70 % of the non-private mean, {_BEYOND}",
                f"non-private {V.pm(ref, '.3f')}, best private at ε=5 {best:.3f}: {gap:.3f} absolute, {gap / ref.mean:.0%} "
                "relative; below 70 % of non-private: " + ", ".join(f"{s}: {v.status}" for s, v in below.items()),
                gap / ref.mean, V.all_of(below.values(), "no private method at ε = 5"))
    return rows


# ---------------------------------------------------------------------------------------------------
# the paper's table ("Table 4.3", §5): effect of N, C, D, B, T, λ, regenerated from the measurements

PAPER_TABLE = {  # property -> {hyper-parameter: arrow}; ↗ up, ↘ down, ↷ up then down, ⋯ unchanged
    "privacy loss ε": dict(N="↘", C="↗", D="↗", B="↗", T="↘", λ="↘"),
    "privacy failure probability δ": dict(N="↘", C="⋯", D="⋯", B="↗", T="⋯", λ="↘"),
    "accuracy": dict(N="↗", C="↘", D="↗", B="↘", T="↷", λ="↷"),
    "training time": dict(N="↗", C="↗", D="↗", B="⋯", T="↗", λ="⋯"),
    "inference time": dict(N="⋯", C="↗", D="↗", B="⋯", T="↗", λ="⋯"),
}
# hyper-parameter -> (figure, methods whose accuracy curve is classified, methods whose cell runtime is)
EFFECT_SOURCES = {
    "N": ("fig4", PRIVATE, ("loss_perturbation",)),
    "C": ("fig5b", PRIVATE, ("loss_perturbation",)),
    "D": ("fig5a", PRIVATE, ("loss_perturbation",)),
    "B": ("fig2a", ("prediction_sensitivity", "subsample_aggregate"), ()),
    "T": ("fig6b", ("subsample_aggregate",), ("subsample_aggregate",)),
    "λ": ("fig6a", ("loss_perturbation",), ("loss_perturbation",)),
}


def trend(curve, se=None, flat_tol: float = 0.01) -> str:
    """Arrow of a measured curve (indexed by x): ↷ if hump-shaped (interior max above both ends by 2 s.e.),
    ⋯ if its range is below ``flat_tol`` (relative to its mean for runtimes) or 2 s.e., else the sign of
    Spearman's ρ(x, y)."""
    from scipy import stats

    c = curve.dropna().sort_index()
    if len(c) < 2:
        return "?"
    s = (se if se is not None else c * 0).reindex(c.index).fillna(0.0)
    if c.max() - c.min() <= max(flat_tol, 2 * float(s.max())):
        return "⋯"
    if len(c) >= 3 and _hump(c, s)[0]:
        return "↷"
    rho = stats.spearmanr(c.index, c.to_numpy()).statistic
    return "↗" if rho > 0 else "↘"


def effects_table(frames: dict):
    """The paper's table ("Table 4.3", §5) with the arrows the measurements give next to the paper's. Accuracy: the
    mean test-accuracy curve of each listed method (majority arrow over methods); training time: the mean cell
    runtime of methods that train per cell (loss perturbation re-fits for every cell; subsample-and-aggregate
    trains its T models per repetition). Privacy rows are analytical (the noise calibrations), not measured."""
    import pandas as pd

    rows = []
    for hyper, (fig, acc_methods, time_methods) in EFFECT_SOURCES.items():
        df = frames.get(fig)
        for prop in PAPER_TABLE:
            paper = PAPER_TABLE[prop][hyper]
            measured, detail = "", ""
            if df is not None and prop == "accuracy":
                arrows = {}
                for meth in acc_methods:
                    g = df[df["series"] == meth]
                    if g.empty:
                        continue
                    if hyper == "λ":  # one curve per ε: classify each
                        for curve, gc in g.groupby("curve"):
                            a = gc.groupby("x")["value"]
                            arrows[f"{meth} {curve}"] = trend(a.mean(), a.std() / np.sqrt(a.count()))
                    else:
                        a = g.groupby("x")["value"]
                        arrows[meth] = trend(a.mean(), a.std() / np.sqrt(a.count()))
                if arrows:
                    counts = pd.Series(list(arrows.values())).value_counts()
                    measured = counts.index[0]
                    detail = ", ".join(f"{k}: {v}" for k, v in arrows.items())
            elif df is not None and prop == "training time":
                if hyper == "B":
                    measured, detail = "⋯", "by construction: one trained model serves every B"
                else:
                    parts = {}
                    for meth in time_methods:
                        g = df[df["series"] == meth]
                        if len(g):
                            t = g.groupby("x")["runtime_s"].mean()
                            parts[meth] = (trend(t / t.mean(), flat_tol=0.25), t)
                    if parts:
                        measured = next(iter(parts.values()))[0]
                        detail = "; ".join(f"{k}: {a} ({t.min():.2g}–{t.max():.2g} s per cell)"
                                           for k, (a, t) in parts.items())
            elif prop in ("privacy loss ε", "privacy failure probability δ", "inference time"):
                detail = "analytical (noise calibration), not measured" if prop != "inference time" \
                    else "not measured separately"
            if df is None and not detail:
                detail = f"{fig} not in this run"
            rows.append({"property": prop, "hyperparameter": hyper, "paper": paper, "measured": measured,
                         "agrees": (measured == paper) if measured else None, "source": fig, "detail": detail})
    return pd.DataFrame(rows)


def report_html(config: dict, frames: dict) -> str:
    """The regenerated table of the paper ("Table 4.3", §5) (HTML fragment appended to the anchor report)."""
    import html

    t = effects_table(frames)
    hypers = list(EFFECT_SOURCES)
    body = []
    for prop in PAPER_TABLE:
        cells = []
        for h in hypers:
            r = t[(t["property"] == prop) & (t["hyperparameter"] == h)].iloc[0]
            if r["measured"]:
                color = "green" if r["agrees"] else "darkred"
                txt = f"paper {r['paper']} · measured <b style='color:{color}'>{r['measured']}</b>"
            else:
                txt = f"paper {r['paper']} · <i>{html.escape(r['detail'])}</i>"
            cells.append(f"<td title='{html.escape(r['detail'])}'>{txt}</td>")
        body.append(f"<tr><th>{html.escape(prop)}</th>{''.join(cells)}</tr>")
    details = "".join(f"<li>{html.escape(r.property)} vs {r.hyperparameter} ({r.source}): "
                      f"{html.escape(r.detail)}</li>" for r in t.itertuples() if r.measured)
    head = "".join(f"<th>{h} ({EFFECT_SOURCES[h][0]})</th>" for h in hypers)
    return ("<h3>Table 4.3 of the paper (§5): effect of N, C, D, B, T, λ — the paper's arrows and the measured "
            "ones</h3>"
            "<p>↗ up with the hyper-parameter, ↘ down, ↷ up then down, ⋯ unchanged. Accuracy: majority arrow over "
            "the methods' mean curves (a hump needs an interior maximum above both ends by 2 s.e.); training "
            "time: mean runtime of cells that train. Privacy rows follow from the noise calibrations and are "
            "not measured.</p><table border='1' cellpadding='4' style='border-collapse:collapse;"
            f"font-family:sans-serif;font-size:13px'><tr><th></th>{head}</tr>{''.join(body)}</table>"
            f"<ul style='font-size:12px'>{details}</ul>")



# -- the study protocol (dpbench.studies.protocol): this module's functions as a grid of cells ------------------

from dpbench.studies.protocol import CellStudy, from_module  # noqa: E402 - wraps the functions above

STUDY_OBJECT = from_module(CellStudy, globals(), name=STUDY, figures=FIGURES, source="vdm2020", neighbouring=NEIGHBOURING)
