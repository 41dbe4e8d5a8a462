"""membership — figures (titles, axes, captions) and the configuration hooks."""

from __future__ import annotations

import json
import math

from dpbench.attacks.membership import ATTACKS
from dpbench.attacks.metrics import CI_METHODS
from dpbench.config import ConfigError
from dpbench.studies.base import FigureSpec
from dpbench.studies.membership import training as mc

STUDY = "membership"
LABELS = mc.LABELS
ATTACK_LABELS = {"gap": "gap (0-1)", "loss_threshold": "loss threshold (Yeom τ)",
                 "loss_calibrated": "loss threshold (shadow-calibrated τ)", "shadow": "shadow models (Shokri)",
                 "lira_offline": "offline LiRA"}
DATA_NOTE = ("Data: MNIST (10 classes), UCI Covertype (class 2 vs rest) and Pima diabetes, rows normalised to the "
             "unit sphere (MNIST optionally randomly projected) plus a bias feature. When a file cannot be obtained "
             "the registry's labelled substitute is used; its variant is printed on every panel, stored in every row "
             "and listed in the anchor table.")
ATTACK_CAPTION = (
    "Membership inference vs ε on {ds}: for every private training method (one colour each), the strongest of the "
    "five black-box attacks (gap, loss threshold, shadow-calibrated loss threshold, Shokri shadow models, offline "
    "LiRA) at each ε: balanced attack accuracy, advantage TPR − FPR, AUC and TPR at FPR = 1e-3, with confidence "
    "intervals; dashed black: the non-private model (ε = ∞); thick grey: the ε-DP bound (accuracy ≤ (e^ε + δ)/"
    "(1 + e^ε), advantage ≤ (e^ε − 1 + 2δ)/(e^ε + 1), AUC ≤ ∫ min(1, e^ε·f + δ, 1 − e^−ε(1 − δ − f)) df, "
    "TPR ≤ e^ε·1e-3 + δ; replace-one neighbours).")
FIGURES: dict[str, FigureSpec] = {
    f"fig_attack_{d}": FigureSpec(STUDY, f"fig_attack_{d}", f"Membership inference vs ε, {mc.DATASET_LABELS[d]}",
                                  "epsilon", "ε", "attack metric", tuple(mc.methods_for(d)),
                                  ATTACK_CAPTION.format(ds=mc.DATASET_LABELS[d]), anchors=("AUDIT", "Q1", "Q2"))
    for d in mc.DATASETS}
FIGURES.update({
    "fig_roc": FigureSpec(STUDY, "fig_roc", "Attack ROC curves (log-log) at a few ε", "fpr", "false-positive rate",
                          "true-positive rate", mc.DATASETS,
                          "ROC curves of one attack (configured; offline LiRA by default) on log-log axes, one panel "
                          "per (dataset, ε), one curve per method, averaged over repetitions on a fixed FPR grid; "
                          "dotted: chance (TPR = FPR); thick grey: the ε-DP trade-off bound TPR ≤ min(e^ε·FPR + δ, "
                          "1 − e^−ε(1 − δ − FPR)).", anchors=("AUDIT",)),
    "fig_eps_lower_bound": FigureSpec(STUDY, "fig_eps_lower_bound", "Empirical ε lower bound vs theoretical ε",
                                      "epsilon", "theoretical ε (replace-one)", "empirical ε lower bound",
                                      mc.DATASETS,
                                      "Empirical ε lower bound ln((TPR − δ)/FPR) (or the complementary test) of the "
                                      "strongest attack per method, TPR at its lower and FPR at its upper confidence "
                                      "limit (trials clustered by target model, see the note on intervals), on "
                                      "held-out trials (the threshold is chosen on a disjoint random "
                                      "half); dashed: ε̂ = ε — a point above it beyond its interval is a privacy bug.",
                                      anchors=("AUDIT",)),
    "table_generalisation": FigureSpec(STUDY, "table_generalisation", "Privacy and generalisation", "epsilon", "",
                                       "", mc.DATASETS,
                                       "Privacy vs generalisation in the spirit of the slides' table (Mondal 2024, "
                                       "slide 'Privacy and Generalization'): "
                                       "train accuracy, test accuracy and attack accuracy (strongest attack and the "
                                       "gap attack) of the non-private model and of every private model at the "
                                       "configured ε.", xscale="linear", anchors=("Q3", "Q4")),
})


# ---------------------------------------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------------------------------------


def validate(cfg: dict, prefix: str = "studies.membership") -> None:
    """Cross-field rules the JSON schema cannot express; raise ConfigError naming the key."""
    def bad(key, msg):
        raise ConfigError(f"invalid config: {prefix}.{key}: {msg}")

    eps = cfg.get("epsilons") or []
    if len(set(eps)) != len(eps):
        bad("epsilons", f"duplicate values in {eps}")
    if any(not (isinstance(e, (int, float)) and 0 < e < math.inf) for e in eps):
        bad("epsilons", "every ε must be finite and > 0 (the non-private reference is the ε = ∞ series)")
    for i, m in enumerate(cfg.get("methods") or []):
        if m not in mc.METHODS and m not in mc.plugin_methods():
            bad(f"methods[{i}]", f"unknown method {m!r}; known: {list(mc.METHODS) + mc.plugin_methods()} (a "
                                 f"plugin's method needs a train hook)")
    if cfg.get("methods") is not None and "non_private" not in cfg["methods"]:
        bad("methods", "must include 'non_private' (the reference model of every figure)")
    if int(cfg.get("shadow_models", 2)) < 2:
        bad("shadow_models", "needs at least 2 (the LiRA decision threshold is calibrated leave-one-out)")
    if not 0 < float(cfg.get("delta", 1e-5)) < 1:
        bad("delta", "must be in (0, 1)")
    if not 0.5 < float(cfg.get("ci_level", 0.95)) < 1:
        bad("ci_level", "must be in (0.5, 1)")
    if cfg.get("ci_method", "design_effect") not in CI_METHODS:
        bad("ci_method", f"unknown interval {cfg.get('ci_method')!r}; known: {list(CI_METHODS)}")
    for d, dc in (cfg.get("datasets") or {}).items():
        if d not in mc.DATASETS:
            bad(f"datasets.{d}", f"unknown dataset; known: {list(mc.DATASETS)}")
        if dc.get("n_members", 0) < 20:
            bad(f"datasets.{d}.n_members", "needs at least 20 members (and as many non-members)")
    nf = float((cfg.get("fault_injection") or {}).get("noise_factor", 1.0))
    if not nf > 0:
        bad("fault_injection.noise_factor", "must be > 0 (1 = the correct mechanisms)")
    tc = cfg.get("training") or {}
    ca = cfg.get("canary_audit") or {}
    for i, cm in enumerate(ca.get("methods") or []):
        if cm not in mc.METHODS or cm == "non_private":
            bad(f"canary_audit.methods[{i}]", f"unknown or non-private method {cm!r}; known: {list(mc.METHODS[1:])}")
    if int(ca.get("trials", 100)) < 10:
        bad("canary_audit.trials", "needs at least 10 trials per side (half choose the threshold, half evaluate)")
    if (tc.get("psgd") or {}).get("l2", 1.0) <= 0:
        bad("training.psgd.l2", "the strongly convex bolt-on PSGD needs λ > 0")
    figs = cfg.get("figures") or {}
    for name, fc in figs.items():
        if fc is None:
            continue
        figure(name)
        if name.startswith("fig_attack_") and name[len("fig_attack_"):] not in (cfg.get("datasets") or {}):
            bad(f"figures.{name}", f"dataset {name[len('fig_attack_'):]!r} has no entry in {prefix}.datasets")
        if name == "fig_roc":
            for e in fc.get("epsilons", []):
                if e not in eps:
                    bad("figures.fig_roc.epsilons", f"{e} is not in {prefix}.epsilons")
            if fc.get("attack", "lira_offline") not in ATTACKS:
                bad("figures.fig_roc.attack", f"unknown attack; known: {list(ATTACKS)}")
        if name == "table_generalisation" and fc.get("epsilon") not in eps:
            bad("figures.table_generalisation.epsilon", f"{fc.get('epsilon')} is not in {prefix}.epsilons")


def figure_names(cfg: dict) -> list[str]:
    return [f for f in FIGURES if (cfg.get("figures") or {}).get(f) is not None]


def figure(name: str) -> FigureSpec:
    try:
        return FIGURES[name]
    except KeyError:
        raise ValueError(f"unknown figure {name!r} for study {STUDY}; known: {sorted(FIGURES)}") from None


def datasets_in_use(cfg: dict) -> list[str]:
    names = figure_names(cfg)
    if any(not n.startswith("fig_attack_") for n in names):
        return [d for d in mc.DATASETS if d in cfg["datasets"]]
    return [d for d in mc.DATASETS if f"fig_attack_{d}" in names]


def methods(cfg: dict, dataset: str) -> list[str]:
    """The methods of a dataset's attack figure: the built-in ones that apply (all, or those named in ``methods``),
    then the plugin methods named there."""
    wanted = cfg.get("methods")
    plugins = [m for m in (wanted or []) if m not in mc.METHODS]
    return [m for m in mc.methods_for(dataset, plugins=plugins) if wanted is None or m in wanted]


def extend_schema(schema: dict, config: dict) -> None:
    """A plugin's method that trains single models may be named in ``methods`` (:func:`training.plugin_methods`)."""
    extra = mc.plugin_methods()
    if extra:
        items = schema["$defs"][STUDY]["properties"]["methods"]["anyOf"][1]["items"]
        items["enum"] = list(items["enum"]) + [m for m in extra if m not in items["enum"]]


def series(cfg: dict, name: str) -> list[str]:
    figure(name)
    if name.startswith("fig_attack_"):
        return methods(cfg, name[len("fig_attack_"):])
    return [d for d in mc.DATASETS if d in cfg["datasets"]]


def series_threads(cfg: dict, figure_name: str, series_name: str) -> int:
    """Cells of a series run side by side in joblib workers."""
    return 1 << 10


def dataset_signature(config: dict) -> str:
    cfg = config["studies"][STUDY]
    return json.dumps({d: mc.dataset_payload(config, d) for d in datasets_in_use(cfg)}, sort_keys=True)


def prepare_dataset(config: dict) -> dict:
    cfg = config["studies"][STUDY]
    out = {"study": STUDY, "datasets": {}}
    for d in datasets_in_use(cfg):
        a = mc.load_prepared(config, d)
        out["datasets"][d] = {"variant": a["variant"], "is_substitute": a["is_substitute"], "pool": int(a["X"].shape[0]),
                              "n_members": a["n"], "dim": int(a["X"].shape[1]), "n_classes": a["n_classes"]}
    out["is_substitute"] = any(v["is_substitute"] for v in out["datasets"].values())
    out["dataset_variant"] = ", ".join(v["variant"] for v in out["datasets"].values())
    return out


