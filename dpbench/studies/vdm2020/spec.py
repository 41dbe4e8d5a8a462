"""vdm2020 — figures (titles, axes, captions, x axes), configuration hooks, points, series and methods."""

from __future__ import annotations

from dpbench.config import ConfigError
from dpbench.methods import REGISTRY
from dpbench.results import TIGHT_SUFFIX, tight_source
from dpbench.studies.base import FigureSpec, Point, lookup_figure
from dpbench.studies.vdm2020.data import STUDY

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
        tight = fig.get("tight")
        if isinstance(tight, list):
            base = [m for m in candidates(cfg, name) if tight_source(m) is None]
            for i, m in enumerate(tight):
                where = f"{prefix}.figures.{name}.tight[{i}]"
                if m not in base:
                    raise ConfigError(f"invalid config: {where}: {m!r} is not a series of {name} (its series: {base})")
                reasons = {make_method(cfg, m + TIGHT_SUFFIX, **dict(p.method)).supports(p.epsilon, p.delta, p.budget)
                           for p in points(cfg, name)}
                if None not in reasons:
                    raise ConfigError(f"invalid config: {where}: {m + TIGHT_SUFFIX} supports no point of {name} "
                                      f"({'; '.join(sorted(reasons))})")
        user = fig.get("dataset", cfg.get("dataset")) not in (None, "mnist")
        if user and name in MNIST_ONLY:
            where = f"{prefix}.figures.{name}" + (".dataset" if "dataset" in fig else "")
            raise ConfigError(f"invalid config: {where}: {name} cannot take a user dataset ({MNIST_ONLY[name]}); "
                              f"set {prefix}.figures.{name} to null, or name the dataset per figure")
        if "large_n_repetitions" in fig and key != "n_trains":
            raise ConfigError(f"invalid config: {prefix}.figures.{name}.large_n_repetitions: only a figure whose x "
                              f"axis is the training-set size (n_trains) can have it; {name}'s is {key}")
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


def repetitions(cfg: dict, name: str, point: Point) -> int:
    """Repetitions of ``point``: the study's ``repetitions``, or at most ``large_n_repetitions.repetitions`` where
    the figure sets ``large_n_repetitions`` and the point trains on N ≥ ``large_n_repetitions.from_n_train`` (Fig. 4:
    a cost choice, documented in the caption; repetition r is the same cell whatever the count)."""
    base = int(cfg["repetitions"])
    rule = (cfg["figures"].get(name) or {}).get("large_n_repetitions")
    n = dict(point.problem).get("n_train")
    if rule and n is not None and n >= int(rule["from_n_train"]):
        return min(base, int(rule["repetitions"]))
    return base


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
    """The figure's series before the support check: the source's, then the added methods its ``methods`` names,
    then the tight calibrations its ``tight`` asks for (:func:`tight_series`)."""
    wanted = cfg["figures"][name].get("methods") or []
    base = list(figure(name).methods) + [m for m in wanted if m not in figure(name).methods]
    return base + [t for t in tight_series(cfg, name, base) if t not in base]


def tight_series(cfg: dict, name: str, methods: list[str]) -> list[str]:
    """``<m>_tight`` for each of ``methods`` that has a registered tight calibration and that the figure's ``tight``
    names (``true``: every one): drawn dashed beside ``m``. Where a tight calibration supports no point of the
    figure (e.g. loss perturbation's at δ > 0), :func:`series` leaves it out."""
    want = cfg["figures"][name].get("tight")
    if not want:
        return []
    return [m + TIGHT_SUFFIX for m in methods if (want is True or m in want) and m + TIGHT_SUFFIX in REGISTRY.methods]


def series(cfg: dict, name: str) -> list[str]:
    """Methods drawn in a figure; a method that supports no point of it is left out (reason in the caption)."""
    out = []
    wanted = cfg["figures"][name].get("methods")
    cands = candidates(cfg, name)
    tight = set(tight_series(cfg, name, [m for m in cands if wanted is None or m in wanted]))
    for m in cands:
        if wanted is not None and m not in wanted and m not in tight:
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
    defs["tight"]["anyOf"][1]["items"] = {"enum": sorted(tight_source(n) for n in REGISTRY.names()
                                                         if tight_source(n) is not None)}
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


