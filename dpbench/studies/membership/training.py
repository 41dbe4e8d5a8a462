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

import functools
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
           "output_perturbation_erm", "objective_perturbation", "functional_mechanism")
BINARY_ONLY = ("output_perturbation_erm", "objective_perturbation", "functional_mechanism")
APPROX = ("dpsgd", "bst14")  # (ε, δ)-DP methods; the others are pure ε-DP (δ = 0)
LABELS = {"non_private": "non-private (L-BFGS softmax)", "output_perturbation": "output perturbation (vdm2020)",
          "loss_perturbation": "loss/objective perturbation (vdm2020)", "dpsgd": "DP-SGD",
          "bolt_on": "bolt-on PSGD (wu2016)", "scs13": "SCS13 noisy SGD", "bst14": "BST14 noisy SGD",
          "output_perturbation_erm": "output perturbation, ERM on ball (wu2016 ch. 4)",
          "objective_perturbation": "objective perturbation (CMS11)",
          "functional_mechanism": "functional mechanism"}
ROC_GRID = np.logspace(-4, 0, 41)


def methods_for(dataset: str, n_classes: int | None = None) -> list[str]:
    """Methods applicable to a dataset: the wu2016 ch. 4 mechanisms are binary logistic regression only."""
    binary = dataset != "mnist" if n_classes is None else n_classes == 2
    return [m for m in METHODS if binary or m not in BINARY_ONLY]


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
# training: each method through the project's own training code; every model is a (d, C) score matrix
# ---------------------------------------------------------------------------------------------------------


def _binary_scores(w: np.ndarray) -> np.ndarray:
    """A ±1 linear model w as a two-class score matrix: logits (0, ⟨w, x⟩), so p(class 1) = σ(⟨w, x⟩)."""
    return np.c_[np.zeros(w.shape[-1]), w]


def _ova_scores(W: np.ndarray, n_classes: int) -> np.ndarray:
    """K one-vs-all (or one binary) models (K, d) as a (d, C) score matrix (released scores ⟨w_k, x⟩; the
    black-box output is their softmax — post-processing of the released models)."""
    return _binary_scores(W[0]) if n_classes == 2 else np.ascontiguousarray(W.T)


def method_delta(cfg: dict, method: str) -> float:
    return float(cfg["delta"]) if method in APPROX else 0.0


def game_budget(cfg: dict, method: str, epsilon: float) -> tuple[float, float]:
    """(ε, δ) of the method under REPLACE-ONE neighbours, the relation of the membership game."""
    if not math.isfinite(epsilon):
        return math.inf, 0.0
    delta = method_delta(cfg, method)
    if method == "dpsgd" and cfg["training"]["dpsgd"]["replace_one"] == "double_bound":
        return B.replace_one_from_add_remove(epsilon, delta)
    return float(epsilon), delta


def train(cfg: dict, method: str, X: np.ndarray, y: np.ndarray, n_classes: int, epsilon: float,
          rng: np.random.Generator, noise_factor: float = 1.0) -> tuple[np.ndarray, dict]:
    """Train ``method`` on (X, y) at replace-one budget ε (and the configured δ for (ε, δ) methods), through
    the learners of the studies the attacks target: the vdm2020 methods (:mod:`dpbench.methods.sensitivity`,
    :mod:`~dpbench.methods.loss_perturbation`, :mod:`~dpbench.methods.dpsgd`), the wu2016 ch. 3 many-model
    PSGD algorithms (:mod:`dpbench.learn.psgd_many`) and the wu2016 ch. 4 mechanisms.

    ``noise_factor`` is FAULT INJECTION for testing the audit: the mechanism is calibrated as if the budget
    were ε/noise_factor (for the L2-Laplace output and loss perturbation exactly: noise scale × noise_factor).
    Returns (score matrix (d, C), info)."""
    if method not in _TRAINERS:
        raise ValueError(f"unknown method {method!r}; known: {list(METHODS)}")
    tc = cfg["training"]
    C = int(n_classes)
    if method == "non_private":
        from dpbench.learn import fit_softmax

        return fit_softmax(X, y, C, l2=tc["l2_non_private"], gtol=tc["gtol"], maxiter=tc["maxiter"]), {}
    if method in BINARY_ONLY and C != 2:
        raise ValueError(f"{method} is binary logistic regression only")
    eps = float(epsilon) / float(noise_factor)
    return _TRAINERS[method](tc, X, y, C, eps, method_delta(cfg, method), rng)


def _train_output_perturbation(tc, X, y, C, eps, delta, rng):
    """vdm2020 model sensitivity (Alg. 1): the solver-aware fit, then the L2-Laplace release (pure ε)."""
    from dpbench.methods.non_private import fit_minimiser
    from dpbench.methods.sensitivity import model_sensitivity_release

    theta = fit_minimiser(X, y, C, tc["l2"], tc["maxiter"])
    released, _, beta = model_sensitivity_release(theta, X.shape[0], tc["l2"], eps, 0.0, rng)
    return released, {"noise_scale": 1 / beta}


def _train_loss_perturbation(tc, X, y, C, eps, delta, rng):
    """vdm2020 loss perturbation (Alg. 4, replace-one calibration, pure ε), warm-started at the non-private fit."""
    from dpbench.learn import SOLVER_ERROR_FRACTION
    from dpbench.methods.loss_perturbation import loss_perturbation_fit, loss_perturbation_l2, loss_perturbation_noise
    from dpbench.methods.non_private import fit_minimiser

    l2 = loss_perturbation_l2(tc["loss_perturbation_regularizer"], loss_perturbation_noise(eps, 0.0, C)[2],
                              X.shape[0], tc["l2"])
    theta0 = fit_minimiser(X, y, C, l2, tc["maxiter"])
    theta, _, beta = loss_perturbation_fit(X, y, C, l2, eps, 0.0, rng, theta0, error_fraction=SOLVER_ERROR_FRACTION,
                                           maxiter=tc["maxiter"])
    return theta, {"noise_scale": 1 / beta, "l2_effective": l2}


def _train_dpsgd(tc, X, y, C, eps, delta, rng):
    """vdm2020 DP-SGD (Eq. 4, Poisson sampling, RDP accountant): ``replace_one: half_budget`` calibrates the
    add/remove budget whose replace-one guarantee is (ε, δ) (the method's ``neighbouring: replace_one``),
    ``double_bound`` calibrates (ε, δ) add/remove (``neighbouring: add_remove``)."""
    from dpbench.learn import dpsgd_softmax
    from dpbench.methods.dpsgd import dpsgd_noise_calibration

    dc = tc["dpsgd"]
    relation = "add_remove" if dc["replace_one"] == "double_bound" else "replace_one"
    n = X.shape[0]
    b = min(int(dc["batch_size"]), n)
    cal = dpsgd_noise_calibration(n, b, dc["epochs"], "poisson", eps, delta, relation, "rdp", dc["conversion"])
    theta = dpsgd_softmax(X, y, C, noise_multiplier=cal.noise_multiplier, clip=dc["clip"], batch_size=b,
                          epochs=dc["epochs"], learning_rate=dc["learning_rate"], rng=rng, n_runs=1)[0]
    return theta, {"noise_scale": cal.noise_multiplier, "epsilon_add_remove": cal.epsilon,
                   "delta_add_remove": cal.delta}


def _psgd_labels(tc, X, y, C):
    """±1 label columns (one binary model, or K one-vs-all models) and the batch size of the PSGD methods."""
    from dpbench.learn import psgd_many as many

    Yk = np.where(y == 1, 1.0, -1.0)[:, None] if C == 2 else many.one_vs_all_labels(y, C)
    return Yk, min(int(tc["psgd"]["batch_size"]), X.shape[0])


def _train_psgd(tc, X, y, C, eps, delta, rng, *, method):
    """wu2016 ch. 3 bolt-on / SCS13 / BST14 (the study's many-model functions); one-vs-all: K binary models with
    ε/K (and δ/K) each, basic composition."""
    from dpbench.learn import psgd_many as many

    pc = tc["psgd"]
    Yk, b = _psgd_labels(tc, X, y, C)
    K = Yk.shape[1]
    if method == "bolt_on":
        W, info = many.bolt_on_many(X, Yk, "logistic", pc["passes"], b, [eps / K], 0.0, rng, l2=pc["l2"])
    elif method == "scs13":
        W, info = many.scs13_many(X, Yk, "logistic", pc["passes"], b, [eps / K], rng, l2=pc["l2"],
                                  radius=1.0 / pc["l2"])
    else:
        W, info = many.bst14_many(X, Yk, "logistic", [eps / K], delta / K, rng, batch_size=b,
                                  passes=pc["passes"], l2=pc["l2"], radius=1.0 / pc["l2"])
    return _ova_scores(W[0], C), {"noise_scale": float(np.ravel(info.get("noise_scale", info.get("sigma")))[0])}


def _train_erm(tc, X, y, C, eps, delta, rng, *, method):
    """wu2016 ch. 4 mechanisms on binary logistic regression (labels ±1, or {0, 1} for the functional mechanism)."""
    ec = tc["erm"]
    ypm = np.where(y == 1, 1.0, -1.0)
    if method == "output_perturbation_erm":
        from dpbench.methods.output_perturbation import output_perturbation

        r = output_perturbation("logistic", X, ypm, ec["lam"], ec["radius"], eps, rng)
        return _binary_scores(r.w), {"noise_scale": r.sensitivity / eps}
    if method == "objective_perturbation":
        from dpbench.methods.objective_perturbation import objective_perturbation

        r = objective_perturbation("logistic", X, ypm, ec["lam"], ec["radius"], eps, rng)
        return _binary_scores(r.w), {"noise_scale": r.noise_scale}
    from dpbench.methods.functional_mechanism import functional_mechanism_logistic

    r = functional_mechanism_logistic(X, (y == 1).astype(float), eps, rng, domain="sphere")
    return _binary_scores(r.w), {"noise_scale": r.sensitivity / eps}


_TRAINERS = {"non_private": None, "output_perturbation": _train_output_perturbation,
             "loss_perturbation": _train_loss_perturbation, "dpsgd": _train_dpsgd,
             **{m: functools.partial(_train_psgd, method=m) for m in ("bolt_on", "scs13", "bst14")},
             **{m: functools.partial(_train_erm, method=m) for m in BINARY_ONLY}}
assert set(_TRAINERS) == set(METHODS)


def release_many(cfg: dict, method: str, X: np.ndarray, y: np.ndarray, n_classes: int, epsilon: float,
                 trials: int, rng: np.random.Generator, shared_seed: int = 0,
                 noise_factor: float = 1.0) -> np.ndarray:
    """``trials`` independent releases (trials, d, C) of ``method`` on (X, y): the canary audit's
    :data:`dpbench.attacks.canary.Release`.

    Batched where the mechanism allows it: output perturbation solves the (deterministic) non-private problem
    ONCE and adds ``trials`` independent L2-Laplace draws; bolt-on PSGD runs the noiseless PSGD once, with its
    sampling order drawn from ``shared_seed`` (data-independent randomness, the same on both sides of the
    audit; the guarantee holds for every fixed order), and adds ``trials`` output-noise draws. Every other
    method is trained ``trials`` times through :func:`train` with independent randomness (slow).
    ``noise_factor``: the fault-injection hook of :func:`train`."""
    tc = cfg["training"]
    n, d = X.shape
    C = int(n_classes)
    T = int(trials)
    eps = float(epsilon) / float(noise_factor)
    if method == "output_perturbation":
        from dpbench.methods.non_private import fit_minimiser
        from dpbench.methods.sensitivity import model_sensitivity_release

        theta = fit_minimiser(X, y, C, tc["l2"], tc["maxiter"])
        return model_sensitivity_release(theta, n, tc["l2"], eps, 0.0, rng, size=T)[0]
    if method == "bolt_on":
        from dpbench.learn import psgd_many as many
        from dpbench.privacy.mechanisms import output_noise

        pc = tc["psgd"]
        Yk, b = _psgd_labels(tc, X, y, C)
        K = Yk.shape[1]
        _, info = many.bolt_on_many(X, Yk, "logistic", pc["passes"], b, [eps / K], 0.0,
                                    np.random.default_rng(int(shared_seed)), l2=pc["l2"])
        z, _, _ = output_noise(rng, d, info["sensitivity"], eps / K, 0.0, size=(T, K))
        W = info["W0"][None] + z                                    # (T, K, d)
        if C == 2:
            return np.stack([np.zeros((T, d)), W[:, 0]], axis=2)    # score matrices [0, w]
        return np.ascontiguousarray(np.transpose(W, (0, 2, 1)))
    return np.stack([train(cfg, method, X, y, C, epsilon, rng, noise_factor)[0] for _ in range(T)])


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
    if method == "loss_perturbation":
        return {k: tc[k] for k in ("l2", "gtol", "maxiter", "loss_perturbation_regularizer")}
    if method == "dpsgd":
        return {"dpsgd": tc["dpsgd"], "delta": cfg["delta"]}
    if method in ("bolt_on", "scs13", "bst14"):
        return {"psgd": tc["psgd"], "delta": method_delta(cfg, method)}
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

