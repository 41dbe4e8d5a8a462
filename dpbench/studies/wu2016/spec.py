"""wu2016 — the figures (titles, axes, captions) of both chapters and the configuration hooks.

Light to import (no compute is run here): the workflow reads it to build the DAG.
"""

from __future__ import annotations

import json

from dpbench.config import ConfigError
from dpbench.studies.base import FigureSpec, lookup_figure
from dpbench.studies.wu2016 import ch3_compute as ch3
from dpbench.studies.wu2016 import ch3_data
from dpbench.studies.wu2016 import ch4_compute as ch4
from dpbench.studies.wu2016 import ch4_data
from dpbench.studies.wu2016.ch3_compute import TESTS
from dpbench.studies.wu2016.ch4_compute import DIABETES_METHODS, METHODS

STUDY = "wu2016"
DATA_NOTE = ("Data: MNIST (50-d Gaussian random projection, one-vs-all), KDD Cup 2004 Protein and UCI Covertype "
             "(class 2 vs rest), every row scaled to the unit sphere. When a file cannot be obtained the registry's "
             "labelled substitute is used and named on every panel, in every row and in the anchor table.")

FIGURES: dict[str, FigureSpec] = {
    "fig3_2": FigureSpec(STUDY, "fig3_2", "Test accuracy", "epsilon", "ε", "test accuracy", ch3.METHODS,
                         "Fig. 3.2: test accuracy vs ε of the noiseless PSGD, our bolt-on private PSGD, SCS13 and "
                         "BST14 ((ε,δ)-DP tests only) for the four tests (convex / strongly convex × ε-DP / "
                         "(ε,δ)-DP) on MNIST, Protein and Forest Covertype; mini-batch size 50, 10 passes, δ = 1/m, "
                         "λ = 1e-4 in the strongly convex tests.", anchors=("A1", "A2", "A3", "A4")),
    "fig3_3": FigureSpec(STUDY, "fig3_3", "The effect of the number of passes and the mini-batch size", "epsilon",
                         "ε", "test accuracy", ("panel_a", "panel_b", "panel_c"),
                         "Fig. 3.3 (MNIST, bolt-on): (a) Test 1 (convex, ε-DP), b = 1, passes k ∈ {1, 10, 20}; "
                         "(b) Test 3 (strongly convex, ε-DP), b = 50, k ∈ {1, 10, 20}; (c) Test 1, 20 passes, "
                         "b ∈ {1, 10, 50}. Dashed: the same PSGD runs without the output noise.",
                         anchors=("A5", "A6", "A7")),
    "fig3_4": FigureSpec(STUDY, "fig3_4", "Runtimes (ratio to noiseless)", "passes", "epochs / mini-batch size",
                         "runtime / noiseless runtime", ch3_data.DATASETS,
                         "Fig. 3.4: runtime of strongly convex (ε,δ)-DP training at ε = 0.1 as a ratio to noiseless "
                         "PSGD on the same engine; top: epochs at mini-batch size 10; bottom: mini-batch size at one "
                         "epoch; mean of warm runs with 90% confidence intervals.", xscale="linear",
                         anchors=("A8",)),
    "fig4_1": FigureSpec(STUDY, "fig4_1", "Classification accuracy on the diabetes dataset", "epsilon", "ε",
                         "test accuracy", DIABETES_METHODS,
                         "Fig. 4.1: logistic regression on Pima diabetes (768 × 8, unit-sphere rows): Data-Independent "
                         "Output Perturbation (R = 1, λ = √(d/(nε))) against the Functional Mechanism and the "
                         "non-private baseline, ε ∈ {0.1, 0.2, 0.5, 1, 2, 4}.", anchors=("B1",)),
    "fig4_2": FigureSpec(STUDY, "fig4_2", "Model accuracy: compare with the functional mechanism", "epsilon", "ε",
                         "test MSE", METHODS,
                         "Fig. 4.2: Warfarin (IWPC, 14 features) linear regression, test MSE vs ε: Functional "
                         "Mechanism, privately tuned output perturbation (radius sets R₁ = {.25, .5, 1}, "
                         "R₂ = {.5, 1, 2}), Data-Independent, Oracle and Non-Private.", anchors=("B2", "B7")),
    "fig4_3": FigureSpec(STUDY, "fig4_3", "Model accuracy: further comparison", "epsilon", "ε", "test MSE", METHODS,
                         "Fig. 4.3: Data-Independent vs Oracle Output Perturbation, Warfarin test MSE vs ε.",
                         anchors=("B3",)),
    "fig4_5": FigureSpec(STUDY, "fig4_5", "Model accuracy of objective perturbation", "epsilon", "ε", "test MSE",
                         METHODS, "Fig. 4.5: privately tuned Objective Perturbation (R₁, R₂) against Data-Independent "
                         "and Oracle Output Perturbation, Warfarin test MSE vs ε.", anchors=("B4",)),
    "fig4_6": FigureSpec(STUDY, "fig4_6", "MI attack: output perturbation vs functional mechanism", "epsilon", "ε",
                         "model-inversion accuracy (VKORC1)", METHODS,
                         "Fig. 4.6: accuracy of the model-inversion attack on VKORC1 over the training set vs ε for "
                         "the output-perturbation variants and the Functional Mechanism; dotted: the prior-only "
                         "baseline (guess the most frequent genotype).", anchors=("B5",)),
    "fig4_7": FigureSpec(STUDY, "fig4_7", "Model invertibility: data-independent and oracle methods", "epsilon", "ε",
                         "model-inversion accuracy (VKORC1)", METHODS,
                         "Fig. 4.7: model-inversion accuracy of Data-Independent vs Oracle Output Perturbation (and, "
                         "as in the text of Wu 2016, §4.4 'Model Inversion', objective perturbation); dotted: the "
                         "prior-only baseline."),
    "fig4_8": FigureSpec(STUDY, "fig4_8", "Tuned output perturbation with increasingly larger training sets",
                         "fraction", "training-chunk sampling rate r", "test MSE / MI accuracy", METHODS,
                         "Fig. 4.8: privately tuned output perturbation (Alg 7 over 25 chunks: 24 training, 1 "
                         "validation) when every training chunk is subsampled at rate r = 10%…100%; left: test MSE, "
                         "right: model-inversion accuracy over the training portion.", xscale="linear",
                         anchors=("B6",)),
}



# ---------------------------------------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------------------------------------


def validate(cfg: dict, prefix: str = "studies.wu2016") -> None:
    """Cross-field rules the JSON schema cannot express; raise ConfigError naming the key."""
    def bad(key, msg):
        raise ConfigError(f"invalid config: {prefix}.{key}: {msg}")

    _validate_ch4(cfg, prefix, bad)
    figs = {k: v for k, v in cfg.get("figures", {}).items() if k not in ch4.FIGURE_NAMES}
    f2 = figs.get("fig3_2")
    if f2:
        for d in f2["datasets"]:
            if d not in f2["epsilons"]:
                bad("figures.fig3_2.epsilons", f"no ε grid for dataset {d!r} (listed in figures.fig3_2.datasets)")
        if cfg.get("choices", {}).get("gaussian_noise") == "gaussian" and any(TESTS[t][1] for t in f2["tests"]):
            for d in f2["datasets"]:
                per_model = [e / (10 if d == "mnist" else 1) for e in f2["epsilons"].get(d, [])]
                if per_model and max(per_model) >= 1:
                    bad(f"figures.fig3_2.epsilons.{d}", f"the (ε,δ)-DP tests calibrate classic Gaussian noise, "
                        f"proven only for ε < 1 per model (MNIST: ε/10), got {max(per_model):g}; use smaller ε or "
                        "choices.gaussian_noise: analytic_gaussian")
        for i, m in enumerate(f2.get("methods") or []):
            if m not in ch3.METHODS:
                bad(f"figures.fig3_2.methods[{i}]", f"{m!r} is not a method; known: {list(ch3.METHODS)}")
    for name, fc in figs.items():
        if not fc:
            continue
        for key in ("epsilons", "passes", "batch_sizes", "epochs", "datasets", "tests"):
            v = fc.get(key)
            if isinstance(v, list) and len(set(v)) != len(v):
                bad(f"figures.{name}.{key}", f"duplicate values in {v}")
        if isinstance(fc.get("epsilons"), dict):
            for d, v in fc["epsilons"].items():
                if len(set(v)) != len(v):
                    bad(f"figures.{name}.epsilons.{d}", f"duplicate values in {v}")
    for d, dc in cfg.get("datasets", {}).items():
        if dc.get("n_train") is not None and dc["n_train"] < 2:
            bad(f"datasets.{d}.n_train", "needs at least 2 training examples")
    f4 = figs.get("fig3_4")
    if f4 and cfg.get("l2", 1) <= 0:
        bad("l2", "Fig. 3.4 times the strongly convex tests: λ must be > 0")
    eta = cfg.get("choices", {}).get("convex_eta")
    if eta is not None and eta > 8.0:
        bad("choices.convex_eta", f"the convex bolt-on needs η ≤ 2/β = 8 for logistic loss, got {eta}")


def _validate_ch4(cfg: dict, prefix: str, bad) -> None:
    """Cross-field rules of the chapter-4 keys."""
    figs = {k: v for k, v in (cfg.get("figures") or {}).items() if k in ch4.FIGURE_NAMES and v}
    if not figs:
        return
    c4 = cfg.get("ch4")
    if not c4:
        bad("ch4", f"figures {sorted(figs)} need the ch4 block")
    rs = c4["tuning"]["radius_sets"]
    for name, fc in figs.items():
        for key in ("epsilons", "methods", "fractions"):
            v = fc.get(key)
            if isinstance(v, list) and len(set(v)) != len(v):
                bad(f"figures.{name}.{key}", f"duplicate values in {v}")
        known = DIABETES_METHODS if name == "fig4_1" else METHODS
        for i, m in enumerate(fc.get("methods") or []):
            if m not in known:
                bad(f"figures.{name}.methods[{i}]", f"{m!r} is not a method of {name}; known: {list(known)}")
    f8 = figs.get("fig4_8")
    if f8:
        for i, m in enumerate(f8["methods"]):
            if "tuned" not in m:
                bad(f"figures.fig4_8.methods[{i}]", f"Fig. 4.8 studies privately tuned methods, got {m!r}")
            m_pairs = len(rs[m[-2:]]) * int(c4["tuning"]["lambda_count"])
            if int(f8["chunks"]) != m_pairs + 1:
                bad("figures.fig4_8.chunks", f"Alg 7 uses |R|·|Λ| + 1 = {m_pairs + 1} chunks for {m}, got {f8['chunks']}")
        if any(not 0 < r <= 1 for r in f8["fractions"]):
            bad("figures.fig4_8.fractions", f"sampling rates must be in (0, 1], got {f8['fractions']}")
    o = c4["oracle"]
    if o["eps_start"] <= o["eps_end"]:
        bad("ch4.oracle.eps_start", "the oracle λ grid runs from √(d/(nε′)) to √(d/(nε*)): need ε′ > ε*")


def figure_names(cfg: dict) -> list[str]:
    return [f for f in FIGURES if cfg.get("figures", {}).get(f)]


def figure(name: str) -> FigureSpec:
    return lookup_figure(FIGURES, STUDY, name)


def series(cfg: dict, name: str) -> list[str]:
    """The figure's series (``cfg``: the study's block): chapter 3's ``<dataset>_<method>``, panels or datasets,
    chapter 4's ``ch4_<method>``."""
    return (ch4 if name in ch4.FIGURE_NAMES else ch3).series(cfg, name)


def series_threads(cfg: dict, figure_name: str, series_name: str) -> int:
    """Every series asks for all cores: fig3_4 so that nothing runs beside its timings, the training series to
    spread their units (repetition × convexity) over joblib workers."""
    return 1 << 10


def dataset_signature(config: dict) -> str:
    sig = {d: ch3_data.dataset_payload(config, d) for d in ch3_data.datasets_in_use(config)}
    sig.update({f"ch4/{d}": ch4_data.dataset_payload(config, d) for d in ch4_data.datasets_in_use(config)})
    return json.dumps(sig, sort_keys=True)
