"""membership — the data pools, the private training methods (the project's own training code) and the cached
target and shadow/reference models; one attack cell per (dataset, method, ε, repetition) is in :mod:`.cells`.

Experiment per dataset (docs/studies/membership.md#experiment): a pool of 4n records, drawn once from the dataset
(real or labelled substitute), split into a TARGET pool of 2n and a disjoint SHADOW pool of 2n.

* Repetition r: the target pool is split at random into n members (the target's training set) and n
  non-members: the balanced evaluation set (member label 1, :data:`dpbench.attacks.membership.MEMBER`).
* k shadow models per (dataset, method, ε): trained exactly like the target (same method, ε, δ, settings) on a
  random half of the shadow pool (the halves are shared by every method and ε, and by every repetition). They
  are the Shokri et al. shadow models, the calibration data of the calibrated loss threshold and — since no
  shadow model ever trains on a target-pool record — the OUT reference models of the offline LiRA.

Unit of caching: every trained model is an artefact (its (d, C) score matrix), keyed by the data, method
settings, ε, δ, role and the code of the training functions; every cell (all attacks on one target model with
their metrics) is a JSON record keyed by the same plus the attack code. Models are shared by every attack and
every figure; a figure that needs an already computed cell reads it.

Features: per-row transforms only (optional Gaussian random projection with a fixed seed, rows to the unit
sphere, the bias feature [x, 1]/√2), so no record influences another's features and ‖x‖ ≤ 1 holds for every
sensitivity bound. Binary datasets use labels {0, 1} (class 1 = the ±1 datasets' +1).
"""

from __future__ import annotations

import math

import numpy as np

from dpbench.data import load_dataset
from dpbench.data import transforms as T
from dpbench.privacy import attack_bounds as B
from dpbench.rng import generator, stream_key
from dpbench.store import Store, content_key

STUDY = "membership"
DATA_VERSION = "v1"
DATASETS = ("mnist", "covertype", "diabetes")
DATASET_LABELS = {"mnist": "MNIST", "covertype": "Covertype", "diabetes": "diabetes (Pima)"}
METHODS = ("non_private", "output_perturbation", "loss_perturbation", "dpsgd", "bolt_on", "scs13", "bst14",
           "output_perturbation_erm", "objective_perturbation", "functional_mechanism", "output_perturbation_erm_tight",
           "loss_perturbation_tight")
BINARY_ONLY = ("output_perturbation_erm", "objective_perturbation", "functional_mechanism",
               "output_perturbation_erm_tight")
APPROX = ("dpsgd", "bst14")  # (ε, δ)-DP methods; the others are pure ε-DP (δ = 0)
LABELS = {"non_private": "non-private (L-BFGS softmax)", "output_perturbation": "output perturbation (vdm2020)",
          "loss_perturbation": "loss/objective perturbation (vdm2020)", "dpsgd": "DP-SGD",
          "bolt_on": "bolt-on PSGD (wu2016)", "scs13": "SCS13 noisy SGD", "bst14": "BST14 noisy SGD",
          "output_perturbation_erm": "output perturbation, ERM on ball (wu2016 ch. 4)",
          "objective_perturbation": "objective perturbation (CMS11)",
          "functional_mechanism": "functional mechanism",
          "output_perturbation_erm_tight": "output perturbation, ERM on ball (wu2016 ch. 4, tight calibration)",
          "loss_perturbation_tight": "loss/objective perturbation (vdm2020, tight calibration)"}
ROC_GRID = np.logspace(-4, 0, 41)


def methods_for(dataset: str, n_classes: int | None = None, plugins=()) -> list[str]:
    """Methods applicable to a dataset: the wu2016 ch. 4 mechanisms are binary logistic regression only; then the
    ``plugins`` named (:func:`plugin_methods`) that apply (a binary-only plugin on binary data only)."""
    from dpbench.methods import training_method

    binary = dataset != "mnist" if n_classes is None else n_classes == 2
    return ([m for m in METHODS if binary or m not in BINARY_ONLY]
            + [m for m in plugins if binary or not training_method(m).binary_only])


# ---------------------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------------------


def dataset_payload(config: dict, name: str) -> dict:
    cfg = config["studies"][STUDY]
    d = cfg["datasets"][name]
    return {"dataset": name, "v": DATA_VERSION, "n_members": d["n_members"],
            "projection_dim": d.get("projection_dim"), "source": config["data"].get(f"{name}_source", "auto"),
            "mirror": config["data"]["mirror"], "substitute_seed": config["data"]["substitute_seed"],
            "seed": config["seed"]}


def _prepare(config: dict, name: str) -> dict[str, np.ndarray]:
    p = dataset_payload(config, name)
    need = 4 * p["n_members"]
    ds = load_dataset(name, cache_dir=config["data"]["cache_dir"], mirror=config["data"]["mirror"],
                      source=p["source"], seed=p["substitute_seed"] if name == "mnist" else config["seed"])
    X = np.concatenate([np.asarray(ds.X_train, np.float64), np.asarray(ds.X_test, np.float64)])
    y = np.concatenate([np.asarray(ds.y_train), np.asarray(ds.y_test)])
    if X.shape[0] < need:
        raise ValueError(f"{name}: the study needs 4·n_members = {need} records, the dataset "
                         f"({ds.variant}) has {X.shape[0]}; lower studies.{STUDY}.datasets.{name}.n_members")
    idx = generator(config["seed"], f"{STUDY}/{DATA_VERSION}/{name}/pool").permutation(X.shape[0])[:need]
    X, y = X[idx], y[idx]
    if p["projection_dim"]:
        X, _ = T.gaussian_random_projection(X, X[:1], int(p["projection_dim"]), config["seed"])
    X = T.add_bias_feature(T.unit_sphere_rows(X))
    if ds.n_classes == 2:
        y = (y > 0).astype(np.int64)  # ±1 → {0, 1}
    return {"X": X, "y": y.astype(np.int64), "variant": np.array(ds.variant),
            "is_substitute": np.array(bool(ds.is_substitute)), "n_classes": np.array(int(ds.n_classes))}


def preprocessing_label(config: dict, name: str) -> tuple[str, bool]:
    """(``preprocessing`` column, ``preprocessing_data_dependent`` column) of dataset ``name``: every step of
    :func:`_prepare` is data-independent -- the raw features (MNIST pixels / 255), a Gaussian projection matrix
    from a fixed seed (if ``projection_dim``), each row divided by its own norm, the bias feature [x, 1]/√2;
    no statistic of the member (training) records is used."""
    dim = config["studies"][STUDY]["datasets"][name].get("projection_dim")
    proj = f"fixed Gaussian random projection to {int(dim)} dimensions; " if dim else ""
    return f"{proj}per-row unit-norm scaling; bias feature [x, 1]/√2", False


def load_prepared(config: dict, name: str) -> dict:
    key = content_key({"kind": "membership-data", **dataset_payload(config, name)})
    a = Store(config["cache_dir"]).artefact(key, lambda: _prepare(config, name))
    n = int(dataset_payload(config, name)["n_members"])
    return {"X": a["X"], "y": a["y"], "variant": str(a["variant"]), "is_substitute": bool(a["is_substitute"]),
            "n_classes": int(a["n_classes"]), "n": n}


def member_split(config: dict, dataset: str, n: int, rep: int) -> np.ndarray:
    """Boolean mask over the target pool (first 2n pool records): True = member of repetition ``rep``."""
    perm = generator(config["seed"], f"{STUDY}/{DATA_VERSION}/{dataset}/members/{rep}").permutation(2 * n)
    mask = np.zeros(2 * n, dtype=bool)
    mask[perm[:n]] = True
    return mask


def shadow_halves(config: dict, dataset: str, n: int, k: int) -> np.ndarray:
    """(k, 2n) boolean: row j = the training half of shadow model j over the shadow pool (last 2n records)."""
    rng = generator(config["seed"], f"{STUDY}/{DATA_VERSION}/{dataset}/shadow-halves/{n}")
    out = np.zeros((k, 2 * n), dtype=bool)
    for j in range(k):
        out[j, rng.permutation(2 * n)[:n]] = True
    return out


# ---------------------------------------------------------------------------------------------------------
# training: each method through its Method object (dpbench.methods); every model is a (d, C) score matrix
# ---------------------------------------------------------------------------------------------------------

#: the Method (:func:`dpbench.methods.training_method`) that trains each of the study's methods: the vdm2020 grid
#: methods (output perturbation is vdm2020's model sensitivity) and the TRAINING methods of wu2016 ch. 3 and 4
METHOD_CLASS = {m: ("model_sensitivity" if m == "output_perturbation" else m) for m in METHODS}


def plugin_methods() -> list[str]:
    """Methods added by plugins (registered from a module outside dpbench) that train single models — they
    implement :meth:`~dpbench.methods.Method.train`, e.g. a linear estimator registered with
    :func:`dpbench.methods.estimator.register_estimator`. Named in ``studies.membership.methods`` they join the
    study, with their settings' defaults (docs/extending.md)."""
    from dpbench.methods import REGISTRY, TRAINING, Method

    out: list[str] = []
    for reg in (TRAINING, REGISTRY):
        for name, cls in reg.methods.items():
            if name in METHODS or name in out or cls.__module__.split(".")[0] == "dpbench":
                continue
            if any("train" in vars(c) for c in cls.__mro__ if c not in (Method, object)):
                out.append(name)
    return out


def calibration_of(method: str) -> str:
    """``"tight"`` for a method's tight calibration (its Method's ``calibration_kind``), else ``"source"``."""
    from dpbench.methods import training_method

    return training_method(METHOD_CLASS.get(method, method)).calibration_kind


def label_of(method: str) -> str:
    """The legend of a method: the study's own name for a built-in one, the class's label for a plugin."""
    from dpbench.methods import training_method

    return LABELS.get(method) or training_method(method).label


def method_delta(cfg: dict, method: str) -> float:
    """δ of the method's guarantee in the game: the configured δ for the (ε, δ) methods (a plugin whose cells
    depend on δ included), 0 for the pure ε-DP ones."""
    if method in APPROX:
        return float(cfg["delta"])
    if method not in METHOD_CLASS:
        from dpbench.methods import training_method

        return float(cfg["delta"]) if "delta" in training_method(method).depends_on else 0.0
    return 0.0


def game_budget(cfg: dict, method: str, epsilon: float) -> tuple[float, float]:
    """(ε, δ) of the method under REPLACE-ONE neighbours, the relation of the membership game."""
    if not math.isfinite(epsilon):
        return math.inf, 0.0
    delta = method_delta(cfg, method)
    if method == "dpsgd" and cfg["training"]["dpsgd"]["replace_one"] == "double_bound":
        return B.replace_one_from_add_remove(epsilon, delta)
    return float(epsilon), delta


def method_settings(cfg: dict, method: str) -> dict | None:
    """The settings of the vdm2020 method that trains ``method``, from the keys of the study's ``training`` block
    (named this study's own way); None for the TRAINING methods, which read their declared settings from that
    block themselves (:meth:`~dpbench.methods.Method.from_config`, blocks ``psgd`` and ``erm``)."""
    from dpbench.learn import SOLVER_ERROR_FRACTION

    tc = cfg["training"]
    dc = tc["dpsgd"]
    lbfgs = {"l2": tc["l2"], "maxiter": tc["maxiter"], "error_fraction": SOLVER_ERROR_FRACTION}
    loss_perturbation = {**lbfgs, "regularizer": tc["loss_perturbation_regularizer"]}   # both calibrations
    vdm2020 = {
        "non_private": {"l2": tc["l2_non_private"], "gtol": tc["gtol"], "maxiter": tc["maxiter"]},
        "output_perturbation": lbfgs,
        "loss_perturbation": loss_perturbation,
        "loss_perturbation_tight": loss_perturbation,
        # ``replace_one: half_budget`` calibrates the add/remove budget whose replace-one guarantee is (ε, δ) (the
        # method's ``neighbouring: replace_one``), ``double_bound`` calibrates (ε, δ) add/remove
        "dpsgd": {"clip": dc["clip"], "clip_scale": "per_example", "batch_size": dc["batch_size"],
                  "epochs": dc["epochs"], "learning_rate": dc["learning_rate"], "sampling": "poisson",
                  "accountant": "rdp", "conversion": dc["conversion"],
                  "neighbouring": "add_remove" if dc["replace_one"] == "double_bound" else "replace_one",
                  "float32": False},    # small models: double precision (the speed of single does not matter here)
    }
    return vdm2020.get(method)


def method_object(cfg: dict, method: str, n_classes: int):
    """The Method object that trains ``method`` with the study's settings (ValueError for an unknown method or a
    binary-only method on more than two classes)."""
    from dpbench.methods import training_method

    if method not in METHOD_CLASS:
        if method not in plugin_methods():
            raise ValueError(f"unknown method {method!r}; known: {list(METHODS) + plugin_methods()}")
        cls = training_method(method)
        if cls.binary_only and int(n_classes) != 2:
            raise ValueError(f"{method} is a binary-only method")
        return cls.from_config({}, prefix=f"studies.{STUDY}")   # a plugin's settings at their defaults
    cls = training_method(METHOD_CLASS[method])
    if cls.binary_only and int(n_classes) != 2:
        raise ValueError(f"{method} is binary logistic regression only")
    settings = method_settings(cfg, method)
    if settings is None:
        return cls.from_config(cfg["training"], prefix=f"studies.{STUDY}.training")
    return cls(**settings)


def train(cfg: dict, method: str, X: np.ndarray, y: np.ndarray, n_classes: int, epsilon: float,
          rng: np.random.Generator, noise_factor: float = 1.0) -> tuple[np.ndarray, dict]:
    """Train ``method`` on (X, y) at replace-one budget ε (and the configured δ for (ε, δ) methods) through
    :meth:`~dpbench.methods.Method.train` of the Method objects the attacked studies use: the vdm2020 methods
    (:mod:`dpbench.methods.sensitivity`, :mod:`~dpbench.methods.loss_perturbation`, :mod:`~dpbench.methods.dpsgd`),
    the wu2016 ch. 3 PSGD algorithms (:mod:`dpbench.methods.private_psgd_many`) and the wu2016 ch. 4 mechanisms.

    ``noise_factor`` is FAULT INJECTION for testing the audit: the mechanism is calibrated as if the budget
    were ε/noise_factor (for the L2-Laplace output and loss perturbation exactly: noise scale × noise_factor).
    Returns (score matrix (d, C), info)."""
    m = method_object(cfg, method, n_classes)
    eps = float(epsilon) / float(noise_factor)
    return m.train(X, y, int(n_classes), eps, method_delta(cfg, method), rng)


def release_many(cfg: dict, method: str, X: np.ndarray, y: np.ndarray, n_classes: int, epsilon: float,
                 trials: int, rng: np.random.Generator, shared_seed: int = 0,
                 noise_factor: float = 1.0) -> np.ndarray:
    """``trials`` independent releases (trials, d, C) of ``method`` on (X, y): the canary audit's
    :data:`dpbench.attacks.canary.Release`, from :meth:`~dpbench.methods.Method.releases`.

    Batched where the mechanism allows it: output perturbation solves the (deterministic) non-private problem
    ONCE and adds ``trials`` independent L2-Laplace draws; bolt-on PSGD runs the noiseless PSGD once, with its
    sampling order drawn from ``shared_seed`` (data-independent randomness, the same on both sides of the
    audit; the guarantee holds for every fixed order), and adds ``trials`` output-noise draws. Every other
    method is trained ``trials`` times with independent randomness (slow). ``noise_factor``: the
    fault-injection hook of :func:`train`."""
    m = method_object(cfg, method, n_classes)
    eps = float(epsilon) / float(noise_factor)
    return m.releases(X, y, int(n_classes), eps, method_delta(cfg, method), rng, int(trials),
                      np.random.default_rng(int(shared_seed)))


def training_code_hash() -> str:
    """Hash of the training code a model depends on: this module and, transitively, the learners, mechanisms and
    calibrations it imports (:mod:`dpbench.codehash`); editing attacks, plots or captions does not retrain."""
    from dpbench.codehash import code_hash

    return code_hash(__name__)


def _training_settings(cfg: dict, method: str) -> dict:
    tc = cfg["training"]
    if method == "non_private":
        return {k: tc[k] for k in ("l2_non_private", "gtol", "maxiter")}
    if method == "output_perturbation":
        return {k: tc[k] for k in ("l2", "gtol", "maxiter")}
    if method in ("loss_perturbation", "loss_perturbation_tight"):   # the method's name is in the payload
        return {k: tc[k] for k in ("l2", "gtol", "maxiter", "loss_perturbation_regularizer")}
    if method == "dpsgd":
        return {"dpsgd": tc["dpsgd"], "delta": cfg["delta"]}
    if method in ("bolt_on", "scs13", "bst14"):
        return {"psgd": tc["psgd"], "delta": method_delta(cfg, method)}
    if method not in METHOD_CLASS:   # a plugin: its own code (file) decides its models
        from dpbench.methods import training_method

        return {"plugin_code": training_method(method).code_hash(), "delta": method_delta(cfg, method)}
    return {"erm": tc["erm"]}


def _eps_key(epsilon: float) -> str:
    return "inf" if not math.isfinite(epsilon) else repr(float(epsilon))


def model(config: dict, dataset: str, method: str, epsilon: float, role: str, index: int,
          data: dict | None = None) -> np.ndarray:
    """The cached score matrix of one trained model: ``role`` = "target" (repetition ``index``) or "shadow"
    (shadow model ``index``, shared by every repetition)."""
    cfg = config["studies"][STUDY]
    nf = float(cfg["fault_injection"]["noise_factor"])
    payload = {"kind": "membership-model", "data": dataset_payload(config, dataset), "method": method,
               "settings": _training_settings(cfg, method), "epsilon": _eps_key(epsilon), "role": role,
               "index": int(index), "noise_factor": nf, "code": training_code_hash()}
    if role == "shadow":
        payload["shadow_models"] = int(cfg["shadow_models"])

    def compute():
        a = data if data is not None else load_prepared(config, dataset)
        n = a["n"]
        if role == "target":
            rows = np.nonzero(member_split(config, dataset, n, index))[0]
        else:
            rows = 2 * n + np.nonzero(shadow_halves(config, dataset, n, int(cfg["shadow_models"]))[index])[0]
        rng = generator(config["seed"], stream_key({**payload, "purpose": "training"}))
        W, _ = train(cfg, method, a["X"][rows], a["y"][rows], a["n_classes"], epsilon, rng, nf)
        return {"W": np.asarray(W, dtype=np.float64)}

    return Store(config["cache_dir"]).artefact(content_key(payload), compute)["W"]

