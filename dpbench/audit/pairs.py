"""Neighbouring pairs shared by the audits and the study settings they read: the saturation helpers (a canary
whose loss gradient stays near the Lipschitz bound on both sides, through a bias feature; :mod:`dpbench.audit.methods`),
the softmax and logistic pairs, the calibration readers of vdm2020 and wu2016 ch. 4."""

from __future__ import annotations

import math

import numpy as np


def sigmoid(z):
    """σ(z) = 1/(1 + e^{−z}), without overflow for large |z|."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=np.float64)))


def push_margin(gain: float) -> float:
    """The margin s > 0 with s = gain·σ(−s): where a regularised bias weight settles when records x = e_bias
    push it with a saturating logistic gradient σ(−s) against the regulariser (``gain`` = pushing fraction over
    the regularisation, e.g. (k/n)/λ for k of n logistic records; 2(N − 1)/(Nλ) for the two-class softmax,
    whose bias row is (−s/2, s/2))."""
    from scipy.optimize import brentq

    g = float(gain)
    return float(brentq(lambda s: s - g * float(sigmoid(-s)), 0.0, g, xtol=1e-12))


def saturated_canary(margin: float) -> tuple[float, float]:
    """Canary features (a, b), a² + b² = 1, for the saturation pairs: the fitted bias weight turns b into the
    margin −margin·b (the canary misclassified with probability σ(margin·b)), and ±a is the coordinate that
    differs between D and D′. The gradient difference of the pair is 2a·σ(margin·b) (logistic; ×√2 for the
    two-class softmax) of the Lipschitz bound 2; (a, b) maximises a·σ(margin·b) on a grid of b."""
    b = np.linspace(0.0, 1.0, 20001)
    i = int(np.argmax(np.sqrt(1.0 - b * b) * sigmoid(margin * b)))
    return float(math.sqrt(1.0 - b[i] ** 2)), float(b[i])


def bias_pair(n: int, a: float, b: float, pushers: int | None = None):
    """Two features (a-coordinate, bias): ``pushers`` records (default n − 1) x = (0, 1), the rest but the
    last x = 0; the last record, the canary, is (+a, b) in D and (−a, b) in D′. The other records have no
    a-coordinate, so their gradients and curvature act on the bias weight only; labels are the caller's."""
    k = n - 1 if pushers is None else int(pushers)
    if not 0 <= k <= n - 1:
        raise ValueError(f"pushers must lie in [0, n − 1], got {k}")
    X = np.zeros((n, 2))
    X[:k, 1] = 1.0
    Xd, Xp = X.copy(), X.copy()
    Xd[-1], Xp[-1] = (a, b), (-a, b)
    return Xd, Xp


BOLT_ON_M = 72876       # wu2016 Fig. 3.2, Protein training split (the bolt-on sensitivity depends on m)
CH4_N, CH4_D = 614, 8   # wu2016 Fig. 4.1, diabetes (Pima): 80 % of 768 records, 8 features


def figure_config(config: dict, study: str, figure: str) -> dict:
    """The settings of ``study``'s ``figure`` whose calibration the audit uses; when that figure is disabled in
    ``config`` (``null``), the repository's default settings of it (config.yaml) — the calibration is the
    study's either way."""
    fc = ((config["studies"].get(study) or {}).get("figures") or {}).get(figure)
    if fc is None:
        from dpbench.config import DEFAULT_CONFIG_PATH, read_config

        fc = read_config(DEFAULT_CONFIG_PATH)["studies"][study]["figures"][figure]
    return fc


def ch3_settings(config: dict) -> dict:
    """wu2016 ch. 3 settings of Fig. 3.2 the PSGD audits read: batch size ``b``, ``passes``, ``lam`` (λ) and the
    study's ``choices``."""
    w = config["studies"]["wu2016"]
    f32 = figure_config(config, "wu2016", "fig3_2")
    return {"b": int(f32["batch_size"]), "passes": int(f32["passes"]), "lam": float(w["l2"]), "choices": w["choices"]}


def vdm_settings(config: dict) -> dict:
    v = config["studies"]["vdm2020"]
    n = int(v["n_train"] or 60000)
    lam = float(v["cross_validation"]["fixed"]["l2"])
    return {"n": n, "lam": lam, "error_fraction": float(v["lbfgs"]["error_fraction"]), "C": 10}


def softmax_pair(n: int, C: int, d: int = 1):
    """Other n−1 records have x = 0 (zero loss gradient and curvature); the canary is x = +e₁ (D) or −e₁ (D′)
    with label 0: at θ ≈ 0 the minimisers differ by ≈ 2·(1/C·𝟙 − e₀)/(Nλ), 2√(1 − 1/C) of the 2K = 2√2 that
    Lemma 1 allows (the pair of gradients at a common θ of the softmax loss differs by at most that much
    when the fit is near-uniform, which the study's Nλ ≫ 1 makes it)."""
    X = np.zeros((n, d))
    y = np.zeros(n, dtype=np.int64)
    Xd, Xp = X.copy(), X.copy()
    Xd[-1, 0], Xp[-1, 0] = 1.0, -1.0
    return (Xd, y), (Xp, y)


def softmax_saturation_pair(n: int, lam: float):
    """Model-sensitivity pair (two features, two classes): the other n − 1 records are x = (0, 1) (a bias
    feature) of class 1, so the fitted bias row is (−m/2, m/2) with m = (2(n − 1)/(nλ))·σ(−m) (≈ 5.8 at the
    study's Nλ = 60); the canary is x = (±a, b) of class 0, misclassified with probability p₁ = σ(m·b). Its
    gradient rows ±a·(p − e₀) = ±a·p₁·(e₁ − e₀) differ by 2√2·a·p₁ of Lemma 1's 2K = 2√2; the other records
    have no a-coordinate (their curvature acts on the bias row only) and the canary's own curvature is
    O(1/N) ≪ λ, so the minimisers differ by ≈ that gradient difference/(Nλ): ε_pair ≈ a·σ(m·b)/(1 + η)·ε
    (0.83ε; the previous pair, other records 0 and canary ±e₁ in one feature and C = 10 classes, reached
    √(1 − 1/C)/√2·ε ≈ 0.66ε, in 10 noise dimensions instead of 4)."""
    a, b = saturated_canary(push_margin(2.0 * (n - 1) / (n * lam)))
    Xd, Xp = bias_pair(n, a, b)
    y = np.ones(n, dtype=np.int64)
    y[-1] = 0
    return (Xd, y), (Xp, y)


def softmax_label_flip_pair(n: int, lam: float):
    """Model-sensitivity label-flip pair (two features, two classes): the other n − 1 records as in
    :func:`softmax_saturation_pair` (x = (0, 1) of class 1), the canary x = (1, 0) on the boundary of the unit
    ball, of class 0 in D and class 1 in D′. Its gradient rows differ by ‖e₁ − e₀‖ = √2 = K, half of Lemma 1's
    2K, along the a-coordinate (ε_pair ≈ ε/2), with the canary's features fixed: the label-flip neighbour."""
    X = np.zeros((n, 2))
    X[:-1, 1] = 1.0
    X[-1] = (1.0, 0.0)
    y = np.ones(n, dtype=np.int64)
    yd = y.copy()
    yd[-1] = 0
    return (X, yd), (X.copy(), y)


def ch4_settings(config: dict, epsilon: float) -> dict:
    n, d = CH4_N, CH4_D
    R = float(config["studies"]["wu2016"]["ch4"]["data_independent_radius"])
    lam = math.sqrt(d / (n * epsilon))                        # data-independent λ (Fig. 4.1)
    return {"n": n, "d": d, "R": R, "lam": lam}


def logistic_pair(n: int):
    X = np.zeros((n, 1))
    y = np.ones(n)
    Xd, Xp = X.copy(), X.copy()
    Xd[-1, 0], Xp[-1, 0] = 1.0, -1.0
    return (Xd, y), (Xp, y)
