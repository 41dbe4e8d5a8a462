"""Per-method white-box audits: the worst-case neighbouring pair, the release (the project's own implementation,
called, never copied), the likelihood-ratio statistic, and the broken twins.

Every audit function ``f(config, epsilon, twin, trials, rng) -> dict`` returns the statistics of ``trials``
releases on D (``s_d``) and on D′ (``s_dp``), the claimed replace-one (ε, δ), the exact ε of the noiseless pair
where it is known in closed form (``eps_pair``: how much of the claimed ε the sensitivity bound lets ANY test
reach on this pair) and notes. Neighbouring relation: replace one record (every analysed method's).

Why fresh noise draws on one trained model are valid (Jagielski et al. 2020 §4; Nasr et al. 2021 §3): when the
release is θ = f(D) + Z with f deterministic given the data (an exact convex solver, or a PSGD run with a sampling
order fixed from a seed shared by both sides — the guarantees of those methods hold for EVERY fixed order, their
sensitivity analysis being uniform over it) and Z independent of D, then T releases are T i.i.d. draws of A(D)
(conditionally on the order), so one solve per side and T noise draws give the same distribution as T trainings.
Methods whose noise enters the training (objective/loss perturbation, DP-SGD) are trained once per trial.

The auditor may choose every record and the dataset's size, number of features and (where the analysis does not
use it) number of classes, provided the quantities the privacy analysis depends on are the study's; per method
the notes say which ones and why the analysis is unchanged.

Saturation pairs (model sensitivity, bolt-on PSGD, objective perturbation): a canary at x = ±e₁ next to other
records at 0 is audited near θ ≈ 0, where its loss gradient is far below the Lipschitz bound the sensitivity
uses (logistic |ℓ′(0)| = 1/2; softmax ‖p − e_y‖ = √(1 − 1/C) of √2). Instead the other records are
x = (0, 1) (a bias feature) with the label that drives the fitted bias weight to −s (the canary's label loses),
and the canary is x = (±a, b), a² + b² = 1: its margin −s·b is negative on both sides, so its gradients on D
and D′ differ by 2a·σ(s·b) (logistic; softmax ×√2) along the a-coordinate, on which no other record has
curvature; (a, b) maximises a·σ(s·b) (:func:`_saturated_canary`), s is the regularised equilibrium
(:func:`_push_margin`). The pair costs one noise dimension per class (the bias row), which is why the
two-class softmax is audited and wu2016's output perturbation keeps its one-feature pair (docs/studies/audit.md).

Twins: ``noise_x0.5`` multiplies the noise by 0.5 through a parameter of the real method (or by
scaling the draw of the real sampler); ``bug_*`` twins reproduce a known implementation bug by calling the real
calibration with the wrong argument.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from dpbench.audit import stats as S

CHUNK = 50_000  # noise draws per block (memory bound)


@dataclass(frozen=True)
class MethodAudit:
    name: str
    label: str
    study: str
    run: Callable
    twins: tuple[str, ...] = ("noise_x0.5",)
    post_training_noise: bool = True     # noise added after a deterministic training (power target 0.5·ε)
    pure: bool = True                    # ε-DP (δ = 0) at the study's default
    notes: str = ""
    twin_labels: dict = field(default_factory=dict)


REGISTRY: dict[str, MethodAudit] = {}


def register(**kw):
    def deco(fn):
        REGISTRY[kw["name"]] = MethodAudit(run=fn, **kw)
        return fn
    return deco


def _factor(twin: str) -> float:
    """Noise multiplier of a twin: ``noise_x<f>`` → f; 1 for the correct method and the bug twins."""
    return float(twin[len("noise_x"):]) if twin.startswith("noise_x") else 1.0


def _chunked(trials: int, draw: Callable[[int], np.ndarray], chunk: int = CHUNK) -> np.ndarray:
    """``draw(k)`` for blocks of at most ``chunk`` trials, concatenated (``trials`` values in all)."""
    out, left = [], int(trials)
    while left > 0:
        k = min(chunk, left)
        out.append(np.asarray(draw(k), dtype=np.float64))
        left -= k
    return np.concatenate(out)


def _sigmoid(z):
    """σ(z) = 1/(1 + e^{−z}), without overflow for large |z|."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=np.float64)))


def _push_margin(gain: float) -> float:
    """The margin s > 0 with s = gain·σ(−s): where a regularised bias weight settles when records x = e_bias
    push it with a saturating logistic gradient σ(−s) against the regulariser (``gain`` = pushing fraction over
    the regularisation, e.g. (k/n)/λ for k of n logistic records; 2(N − 1)/(Nλ) for the two-class softmax,
    whose bias row is (−s/2, s/2))."""
    from scipy.optimize import brentq

    g = float(gain)
    return float(brentq(lambda s: s - g * float(_sigmoid(-s)), 0.0, g, xtol=1e-12))


def _saturated_canary(margin: float) -> tuple[float, float]:
    """Canary features (a, b), a² + b² = 1, for the saturation pairs: the fitted bias weight turns b into the
    margin −margin·b (the canary misclassified with probability σ(margin·b)), and ±a is the coordinate that
    differs between D and D′. The gradient difference of the pair is 2a·σ(margin·b) (logistic; ×√2 for the
    two-class softmax) of the Lipschitz bound 2; (a, b) maximises a·σ(margin·b) on a grid of b."""
    b = np.linspace(0.0, 1.0, 20001)
    i = int(np.argmax(np.sqrt(1.0 - b * b) * _sigmoid(margin * b)))
    return float(math.sqrt(1.0 - b[i] ** 2)), float(b[i])


def _bias_pair(n: int, a: float, b: float, pushers: int | None = None):
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


# ---------------------------------------------------------------------------------------------------------
# vdm2020: model sensitivity (output perturbation, Alg. 1) and loss perturbation (Alg. 4)
# ---------------------------------------------------------------------------------------------------------

def _figure_config(config: dict, study: str, figure: str) -> dict:
    """The settings of ``study``'s ``figure`` whose calibration the audit uses; when that figure is disabled in
    ``config`` (``null``), the repository's default settings of it (config.yaml) — the calibration is the
    study's either way."""
    fc = ((config["studies"].get(study) or {}).get("figures") or {}).get(figure)
    if fc is None:
        from dpbench.config import DEFAULT_CONFIG_PATH, read_config

        fc = read_config(DEFAULT_CONFIG_PATH)["studies"][study]["figures"][figure]
    return fc


def _vdm(config: dict) -> dict:
    v = config["studies"]["vdm2020"]
    n = int(v["n_train"] or 60000)
    lam = float(v["cross_validation"]["fixed"]["l2"])
    return {"n": n, "lam": lam, "error_fraction": float(v["lbfgs"]["error_fraction"]), "C": 10}


def _softmax_pair(n: int, C: int, d: int = 1):
    """Other n−1 records have x = 0 (zero loss gradient and curvature); the canary is x = +e₁ (D) or −e₁ (D′)
    with label 0: at θ ≈ 0 the minimisers differ by ≈ 2·(1/C·𝟙 − e₀)/(Nλ), 2√(1 − 1/C) of the 2K = 2√2 that
    Lemma 1 allows (the pair of gradients at a common θ of the softmax loss differs by at most that much
    when the fit is near-uniform, which the study's Nλ ≫ 1 makes it)."""
    X = np.zeros((n, d))
    y = np.zeros(n, dtype=np.int64)
    Xd, Xp = X.copy(), X.copy()
    Xd[-1, 0], Xp[-1, 0] = 1.0, -1.0
    return (Xd, y), (Xp, y)


def _softmax_saturation_pair(n: int, lam: float):
    """Model-sensitivity pair (two features, two classes): the other n − 1 records are x = (0, 1) (a bias
    feature) of class 1, so the fitted bias row is (−m/2, m/2) with m = (2(n − 1)/(nλ))·σ(−m) (≈ 5.8 at the
    study's Nλ = 60); the canary is x = (±a, b) of class 0, misclassified with probability p₁ = σ(m·b). Its
    gradient rows ±a·(p − e₀) = ±a·p₁·(e₁ − e₀) differ by 2√2·a·p₁ of Lemma 1's 2K = 2√2; the other records
    have no a-coordinate (their curvature acts on the bias row only) and the canary's own curvature is
    O(1/N) ≪ λ, so the minimisers differ by ≈ that gradient difference/(Nλ): ε_pair ≈ a·σ(m·b)/(1 + η)·ε
    (0.83ε; the previous pair, other records 0 and canary ±e₁ in one feature and C = 10 classes, reached
    √(1 − 1/C)/√2·ε ≈ 0.66ε, in 10 noise dimensions instead of 4)."""
    a, b = _saturated_canary(_push_margin(2.0 * (n - 1) / (n * lam)))
    Xd, Xp = _bias_pair(n, a, b)
    y = np.ones(n, dtype=np.int64)
    y[-1] = 0
    return (Xd, y), (Xp, y)


@register(name="model_sensitivity", label="model sensitivity (vdm2020 Alg. 1, output perturbation)", study="vdm2020",
          twins=("noise_x0.5", "bug_addremove_sensitivity", "noise_x0.1"),
          notes="δ = 0 (Fig. 1a); N, λ (the untuned default) and the solver rule η of the study. Lemma 1's "
                "Δ = 2K(1+η)/(Nλ), K = √2 for ‖x‖ ≤ 1, depends on neither the number of features nor the number "
                "of classes, so the audit uses two features and two classes (4 noise dimensions: the L2-Laplace "
                "privacy loss concentrates as the dimension grows). Saturation pair: the other N − 1 records "
                "are x = (0, 1) of class 1 (a bias feature: the fitted margin m ≈ 5.8), the canary x = (±a, b) "
                "of class 0 with a² + b² = 1 chosen to maximise a·σ(m·b); the canary is misclassified with "
                "probability ≈ 0.91, so its gradients on D and D′ differ by ≈ 0.83 of 2K, and the other "
                "records' curvature lies along the bias only.")
def audit_model_sensitivity(config, epsilon, twin, trials, rng):
    from dpbench.learn import fit_softmax, sensitivity_grad_norm_tol
    from dpbench.methods.sensitivity import model_sensitivity_noise
    from dpbench.privacy import sample_l2_laplace

    p = _vdm(config)
    n, lam = p["n"], p["lam"]
    (Xd, y), (Xp, _) = _softmax_saturation_pair(n, lam)
    tol = sensitivity_grad_norm_tol(n, p["error_fraction"])
    fD = fit_softmax(Xd, y, 2, l2=lam, grad_norm_tol=tol)
    fP = fit_softmax(Xp, y, 2, l2=lam, grad_norm_tol=tol)
    # the bug twin: replace-one calibrated with the add/remove sensitivity K/(Nλ) (= Lemma 1 at 2N)
    _, beta = model_sensitivity_noise(2 * n if twin == "bug_addremove_sensitivity" else n, lam, epsilon, 0.0,
                                      p["error_fraction"])
    _, beta_claim = model_sensitivity_noise(n, lam, epsilon, 0.0, p["error_fraction"])
    f = _factor(twin)

    def side(center):
        return _chunked(trials, lambda k: S.l2_laplace_llr(
            center[None] + f * sample_l2_laplace(rng, beta, center.size, (k,)).reshape((k,) + center.shape),
            fD, fP, beta_claim))

    return {"s_d": side(fD), "s_dp": side(fP), "delta": 0.0, "eps_pair": float(beta_claim * np.linalg.norm(fD - fP)),
            "noise_scale": 1.0 / beta_claim}


@register(name="loss_perturbation", label="loss perturbation (vdm2020 Alg. 4)", study="vdm2020",
          post_training_noise=False, twins=("noise_x0.5", "noise_x0.1", "noise_x0.01"),
          notes="δ = 0; λ (untuned default), C = 10, ρ = 2LC/ε and the code_max rule of the study; N = the smallest "
                "size with ρ/N ≤ λ, so the effective regulariser max(ρ/N, λ) = λ is the study's (N = 60,000); "
                "one feature (N_study itself when its ρ/N > λ). Trained once per trial; statistic = the exact noise-density ratio of the noise "
                "vectors b(θ) that produce the released θ on D and on D′ (first-order condition).")
def audit_loss_perturbation(config, epsilon, twin, trials, rng):
    from dpbench.learn import fit_softmax, sensitivity_grad_norm_tol
    from dpbench.methods.loss_perturbation import loss_perturbation_l2, loss_perturbation_noise
    from dpbench.privacy import sample_l2_laplace

    v = config["studies"]["vdm2020"]
    p = _vdm(config)
    C, lam = p["C"], p["lam"]
    kind, beta, rho = loss_perturbation_noise(epsilon, 0.0, C, v["loss_perturbation"]["neighbouring"])
    # the smallest N whose effective regulariser equals the study's (N_study itself when ρ/N_study > λ)
    n = max(int(math.ceil(rho / lam)), 2) if rho / p["n"] <= lam else p["n"]
    l2 = loss_perturbation_l2(v["loss_perturbation"]["regularizer"], rho, n, lam)
    l2_study = loss_perturbation_l2(v["loss_perturbation"]["regularizer"], rho, p["n"], lam)
    if not math.isclose(l2, l2_study):
        raise ValueError("loss perturbation audit: the effective regulariser differs from the study's")
    (Xd, y), (Xp, _) = _softmax_pair(n, C)
    tol = sensitivity_grad_norm_tol(n)
    f = _factor(twin)

    def b_of(theta, X):   # the noise that makes θ stationary for data X: b = −n(∇L_X(θ) + l2·θ)
        x = X[-1]
        z = x @ theta
        pr = np.exp(z - z.max())
        pr /= pr.sum()
        pr[0] -= 1.0
        return -(np.outer(x, pr) + n * l2 * theta)

    def side(X):
        th0 = fit_softmax(X, y, C, l2=l2, grad_norm_tol=tol)
        out = np.empty(trials)
        for t in range(trials):
            noise = f * sample_l2_laplace(rng, beta, th0.size).reshape(th0.shape)
            th = fit_softmax(X, y, C, l2=l2, linear=noise / n, theta0=th0, grad_norm_tol=tol)
            out[t] = beta * (np.linalg.norm(b_of(th, Xp)) - np.linalg.norm(b_of(th, Xd)))
        return out

    return {"s_d": side(Xd), "s_dp": side(Xp), "delta": 0.0, "eps_pair": float("nan"), "noise_scale": 1.0 / beta,
            "n_audit": n}


# ---------------------------------------------------------------------------------------------------------
# DP-SGD (vdm2020 Fig. 1b, Eq. 4)
# ---------------------------------------------------------------------------------------------------------

def _dpsgd_setup(config: dict, block: dict, epsilon: float, twin: str) -> dict:
    """The DP-SGD calibration of a vdm2020 DP-SGD configuration ``block`` (``dpsgd`` or ``mlp.dpsgd``) at claimed
    replace-one ε and the audit's batch-1 schedule: σ (× the twin's factor; the ``bug_steps_accounted`` twin is
    calibrated for one epoch of steps but runs all of them), the claimed calibration, the study's q and T, the
    clip ν, the audit's N = ⌈1/q⌉ and epochs giving exactly T steps at batch 1."""
    from dpbench.learn import dpsgd_steps
    from dpbench.methods.dpsgd import clip_norm
    from dpbench.privacy import calibrate_dpsgd_noise
    from dpbench.privacy.attack_bounds import add_remove_budget_for_replace_one

    v = config["studies"]["vdm2020"]
    delta = float(_figure_config(config, "vdm2020", "fig1b")["delta"])
    n_study = int(v["n_train"] or 60000)
    b = int(block["batch_size"])
    q = b / n_study
    T = dpsgd_steps(n_study, b, block["epochs"], "poisson")
    nu = clip_norm(float(v["cross_validation"]["fixed"]["clip"]), b, block["clip_scale"])
    e_ar, d_ar = add_remove_budget_for_replace_one(epsilon, delta)
    T_acc = T if twin != "bug_steps_accounted" else dpsgd_steps(n_study, b, 1, "poisson")  # 1 epoch accounted
    cal = calibrate_dpsgd_noise(e_ar, d_ar, q, T_acc, accountant=block["accountant"], conversion=block["conversion"])
    cal_claim = (cal if twin != "bug_steps_accounted" else
                 calibrate_dpsgd_noise(e_ar, d_ar, q, T, accountant=block["accountant"],
                                       conversion=block["conversion"]))
    N = int(math.ceil(1.0 / q))
    epochs_a = (T - 0.5) / N                               # ceil(epochs_a·N/1) = T steps
    assert dpsgd_steps(N, 1, epochs_a, "poisson") == T
    return {"delta": delta, "q": q, "T": T, "nu": nu, "cal": cal, "cal_claim": cal_claim,
            "sigma": cal.noise_multiplier * _factor(twin), "N": N, "epochs_a": epochs_a,
            "lr": float(block["learning_rate"])}


def _dpsgd_result(s_d, s_dp, p: dict) -> dict:
    return {"s_d": s_d, "s_dp": s_dp, "delta": p["delta"],
            "eps_pair": last_iterate_epsilon(p["T"], 1.0 / p["N"], p["cal_claim"].noise_multiplier, p["delta"]),
            "noise_scale": p["cal"].noise_multiplier, "steps": p["T"], "q_audit": 1.0 / p["N"], "q_study": p["q"]}


@register(name="dpsgd_softmax", label="DP-SGD, softmax (vdm2020 Eq. 4)", study="vdm2020", pure=False,
          post_training_noise=False, twins=("noise_x0.5", "bug_steps_accounted", "noise_x0.1"),
          notes="δ = 1e-5 (Fig. 1b); σ from the study's accountant for its q = 256/60,000 and T = 20 epochs of "
                "steps, replace-one calibrated at the add/remove budget (ε/2, δ/(1+e^{ε/2})); the audit runs "
                "T steps at q_a = 1/⌈1/q⌉ ≤ q (batch 1), which only makes the run more private (the analysis "
                "depends on q, σ, T only). Pair: the other records are 0 (zero gradient); the canary is "
                "x = (M, 1) vs (−M, 1), label 0, with a data-independent start θ₀ that saturates both canaries "
                "towards class 1 through the bias feature, so every sampled canary gradient is clipped to "
                "exactly ν in directions ±u (difference 2ν, the replace-one maximum). Statistic: the final model "
                "projected on u (the last-iterate audit; DP-SGD's iterates are not released).")
def audit_dpsgd_softmax(config, epsilon, twin, trials, rng):
    from dpbench.learn import dpsgd_softmax

    p = _dpsgd_setup(config, config["studies"]["vdm2020"]["dpsgd"], epsilon, twin)
    N, T, nu, sigma, lr = p["N"], p["T"], p["nu"], p["sigma"], p["lr"]
    M = 1e3
    X = np.zeros((N, 2))
    y = np.zeros(N, dtype=np.int64)
    drift = lr * nu * (sigma * math.sqrt(T) * 10 + T) * (M + 1)   # ≫ any logit movement of the run
    theta0 = np.zeros((2, 2))
    theta0[1, 1] = 100.0 + 10 * drift                     # bias feature → class 1 for both canaries
    u = np.array([[-1.0, 1.0], [0.0, 0.0]]) / math.sqrt(2)  # D's clipped canary gradient direction

    def side(sign):
        Xs = X.copy()
        Xs[-1] = (sign * M, 1.0)

        def draw(k):
            th = dpsgd_softmax(Xs, y, 2, noise_multiplier=sigma, clip=nu, batch_size=1, epochs=p["epochs_a"],
                               learning_rate=lr, rng=rng, n_runs=k, theta0=theta0, lr_schedule="constant")
            return -np.einsum("rdc,dc->r", th - theta0, u)
        return _chunked(trials, draw, chunk=2000)   # 2000 runs of T steps at a time

    return _dpsgd_result(side(1.0), side(-1.0), p)


@register(name="dpsgd_mlp", label="DP-SGD, MLP (vdm2020 Fig. 7 substitute, Eq. 4, global clip)", study="vdm2020",
          pure=False, post_training_noise=False, twins=("noise_x0.5", "bug_steps_accounted", "noise_x0.1"),
          notes="δ = 1e-5; σ from the study's accountant for the MLP's q = 256/60,000 and T = 15 epochs of steps "
                "(mlp.dpsgd), replace-one calibrated at the add/remove budget; ν = the fixed clip × batch "
                "(batch_mean). As for the softmax, T steps at q_a = 1/⌈1/q⌉ ≤ q (batch 1) and a constant "
                "learning rate (the accountant depends on q, σ, T only: the architecture, the data, the start "
                "and the learning-rate schedule are the auditor's). The network: two features, H = 2 hidden "
                "ReLU units, two classes (12 parameters instead of 50,890: noise in the other coordinates is "
                "independent of the statistic). Data-independent start θ₀: every hidden unit is dead for the "
                "other records (x = 0, label 1, whose output b₂ is saturated on class 1: p = e₁ exactly, so "
                "their gradient is exactly 0 — no bias path leaks); unit 1 is alive for the canary x = (±M, 1), "
                "label 0, through a large weight on the second feature, and its output weights keep the canary "
                "saturated on class 1, so its back-propagated error is fixed and its gradient is dominated by "
                "the first-layer weight W1[0, 1] = ±2wM: clipped to ν in directions ±u (difference 2ν). "
                "Margins ≫ any drift of the run. Statistic: the final W1[0, 1] (last iterate).")
def audit_dpsgd_mlp(config, epsilon, twin, trials, rng):
    from dpbench.learn.mlp import MLPParams, dpsgd_mlp

    p = _dpsgd_setup(config, config["studies"]["vdm2020"]["mlp"]["dpsgd"], epsilon, twin)
    N, T, nu, sigma, lr = p["N"], p["T"], p["nu"], p["sigma"], p["lr"]
    M = 1e3
    drift = lr * nu * (sigma * math.sqrt(T) * 10 + T)      # ≫ the movement of any parameter in the run
    w = 1e3 * drift                                        # output weights of the live unit: (−w, w)
    P = 20.0 * M * drift                                   # its weight on the second feature
    theta0 = MLPParams(W1=np.array([[0.0, 0.0], [P, 0.0]]), b1=np.array([-P / 2, -1e3 * P]),
                       W2=np.array([[-w, w], [0.0, 0.0]]), b2=np.array([0.0, 1e3 + 10 * drift]))
    X = np.zeros((N, 2))
    y = np.ones(N, dtype=np.int64)
    y[-1] = 0

    def side(sign):
        Xs = X.copy()
        Xs[-1] = (sign * M, 1.0)

        def draw(k):
            th = dpsgd_mlp(Xs, y, 2, 2, noise_multiplier=sigma, clip=nu, batch_size=1, epochs=p["epochs_a"],
                           learning_rate=lr, rng=rng, n_runs=k, schedule="constant", params0=theta0)
            return -th.W1[:, 0, 0]                           # D's canary gradient on W1[0, 0] is +ν
        return _chunked(trials, draw, chunk=2000)

    return _dpsgd_result(side(1.0), side(-1.0), p)


def last_iterate_epsilon(steps: int, q: float, sigma: float, delta: float, points: int = 200_001) -> float:
    """Exact ε(δ) of the last iterate on the DP-SGD audit pair: in units of lr·ν the projected final model is
    ±K + N(0, Tσ²) with K ~ Bin(T, q) (the canary's sampled steps), on D resp. D′. δ(ε) = ∫ (p − e^ε q)₊ (the
    hockey-stick divergence; Balle et al. 2018), evaluated on a fine grid; symmetric in the two orders."""
    from scipy import stats as st

    S = float(sigma) * math.sqrt(steps)
    mean = q * steps
    kmax = int(min(steps, math.ceil(mean + 12 * math.sqrt(mean + 1) + 12)))
    k = np.arange(kmax + 1)
    w = st.binom.pmf(k, steps, q)
    lim = kmax + 12 * S
    y = np.linspace(-lim, lim, points)
    dy = y[1] - y[0]
    p = np.zeros_like(y)
    for kk, ww in zip(k, w):
        if ww > 1e-16:
            p += ww * st.norm.pdf(y, kk, S)
    qd = p[::-1]

    def dlt(e):
        return float(np.maximum(p - math.exp(e) * qd, 0).sum() * dy)

    if dlt(0.0) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while dlt(hi) > delta and hi < 100:
        lo, hi = hi, 2 * hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if dlt(mid) > delta else (lo, mid)
    return hi


# ---------------------------------------------------------------------------------------------------------
# wu2016 ch. 3: bolt-on PSGD (output perturbation of PSGD)
# ---------------------------------------------------------------------------------------------------------

@register(name="bolt_on", label="bolt-on PSGD (wu2016 Alg. 2, strongly convex)", study="wu2016",
          twins=("noise_x0.5", "noise_x0.1"),
          notes="ε-DP test (δ = 0) of Fig. 3.2 on a binary dataset: λ, b = 50, 10 passes and m of the study's "
                "Protein split (the sensitivity 2L/(γ b ⌊m/b⌋) depends on these only); two features (the "
                "L2-Laplace calibration does not depend on d). Saturation pair: the other m − 1 records are "
                "x = (0, 1) with y = −1, which drives the bias weight to ≈ −7.2 (λs = σ(−s)); the canary is "
                "x = (±a, b), y = +1, with a² + b² = 1 maximising a·σ(7.2·b), so its margin is ≪ 0 on both "
                "sides, |ℓ′| ≈ 0.95 and its gradients differ by ≈ 0.87 of 2L along the a-coordinate, where no "
                "other record has curvature (the previous pair, other records 0 and canary ±1 at w ≈ 0, had "
                "|ℓ′| = 1/2). The sampling order is drawn once from a seed shared by both sides (the "
                "sensitivity holds for every order); the capped early steps η = 1/β of the schedule keep "
                "ε_pair ≈ 0.8ε.")
def audit_bolt_on(config, epsilon, twin, trials, rng):
    from dpbench.learn import psgd_many as many
    from dpbench.privacy.mechanisms import output_noise

    w = config["studies"]["wu2016"]
    m = BOLT_ON_M
    f32 = _figure_config(config, "wu2016", "fig3_2")
    b = int(f32["batch_size"])
    passes = int(f32["passes"])
    lam = float(w["l2"])
    shared = int(rng.integers(2**62))
    W0, sens = [], None
    a, h = _saturated_canary(_push_margin(1.0 / lam))
    Yk = -np.ones((m, 1))
    Yk[-1, 0] = 1.0
    for X in _bias_pair(m, a, h):
        _, info = many.bolt_on_many(X, Yk, "logistic", passes, b, [epsilon], 0.0, np.random.default_rng(shared),
                                    l2=lam, sc_sensitivity=w["choices"]["sc_sensitivity"])
        W0.append(info["W0"][0])
        sens = info["sensitivity"]
    fD, fP = W0
    f = _factor(twin)
    beta = epsilon / sens

    def side(c):
        return _chunked(trials, lambda k: S.l2_laplace_llr(
            c[None] + f * output_noise(rng, c.size, sens, epsilon, 0.0, size=k)[0], fD, fP, beta))

    return {"s_d": side(fD), "s_dp": side(fP), "delta": 0.0, "eps_pair": float(beta * np.linalg.norm(fD - fP)),
            "noise_scale": sens / epsilon}


SCS13_PUSHERS = 200      # records x = (0, 1), y = −1 in the one batch of the SCS13 audit (drive the bias weight)
SCS13_TILT = 0.3         # the SCS13 canary's h/a: x = (±a, h), a² + h² = 1
SCS13_STEP = 1e6         # the auditor's constant step size (the SCS13 guarantee holds for every schedule)
SCS13_CHUNK = 5000       # models trained side by side per call (one trial each)


@register(name="scs13", label="SCS13 noisy PSGD (wu2016 ch. 3; Song et al. 2013)", study="wu2016",
          post_training_noise=False, twins=("noise_x0.5", "bug_passes_accounted"),
          notes="ε-DP (δ = 0, Tests 1/3 of Fig. 3.2) with the study's k = 10 passes: every update adds Z with "
                "density ∝ exp(−(ε/2k)‖z‖) to the mini-batch gradient SUM (replace-one sensitivity 2L, L = 1), the "
                "batches of a pass are disjoint (parallel composition), passes compose (ε/k each). That analysis "
                "depends on ε, k and L only — not on n, b, d, λ or the step sizes — so the audit uses one batch "
                "per pass (n = b = 201: the canary is in every one of the k updates), two features, λ = 0 "
                "(Test 1) and a constant step η = 10⁶ (the margins then dwarf every other scale). Saturation pair: "
                "200 records x = (0, 1), y = −1 push the bias weight to ≈ −η/4 in the first update and have no "
                "a-coordinate; the canary x = (±a, h), y = +1, h/a = 0.3, has a margin ≪ 0 on both sides from "
                "the second update on, so its gradients differ by ≈ 2a ≈ 1.9 of 2L there (½ of that in the "
                "first update, at w = 0). Models trained side by side share the (data-independent) batch order; "
                "each has its own noise. Statistic: the final model's a-coordinate (the last iterate; the "
                "updates are not released). The twins scale the noise through the real calibration: "
                "noise_x0.5 = calibrated at 2ε; bug_passes_accounted = the budget not split over the passes "
                "(calibrated at kε, i.e. noise × 1/k).")
def audit_scs13(config, epsilon, twin, trials, rng):
    from dpbench.learn import psgd_many as many

    passes = int(_figure_config(config, "wu2016", "fig3_2")["passes"])
    eps_cal = epsilon / _factor(twin) * (passes if twin == "bug_passes_accounted" else 1)
    n = SCS13_PUSHERS + 1
    a = 1.0 / math.sqrt(1.0 + SCS13_TILT ** 2)
    pair = _bias_pair(n, a, SCS13_TILT * a)

    def side(X):
        def draw(k):
            Yk = -np.ones((n, k))
            Yk[-1] = 1.0
            W, _ = many.scs13_many(X, Yk, "logistic", passes, n, [eps_cal], rng, schedule=lambda t: SCS13_STEP)
            return W[0, :, 0] * (n / SCS13_STEP)            # the a-coordinate, in units of the gradient sum
        return _chunked(trials, draw, chunk=SCS13_CHUNK)

    return {"s_d": side(pair[0]), "s_dp": side(pair[1]), "delta": 0.0, "eps_pair": float("nan"),
            "noise_scale": 2.0 * passes / eps_cal}


@register(name="bst14", label="BST14 noisy SGD (wu2016 ch. 3, Alg. 4)", study="wu2016", pure=False,
          post_training_noise=False, twins=("noise_x0.5", "noise_x0.001"),
          notes="(ε, δ)-DP Test 4 of Fig. 3.2 on the Protein split: δ = 1/m, λ of the study, ι of the study, b = 50, "
                "10 passes, T = ⌈10m/b⌉ steps of b indices drawn with replacement from the study's m (72,876; the "
                "calibration "
                "— advanced composition over T steps, amplification by b/m — depends on all of these, so all are "
                "the study's); one feature (σ does not depend on d). Pair: the other m − 1 records are 0 (zero "
                "gradient); the canary x = 1 has label +1 vs −1: at every common w its gradients differ by "
                "σ(w) + σ(−w) = 1 of 2L (a one-feature logistic pair cannot reach more; the noise is far too large "
                "for the bias saturation of the other audits). The sampling is random in every trial (the "
                "guarantee uses it), so each trial is one full training; D and D′ share one call (two label "
                "columns, same batches — trials stay independent across calls). Statistic: the final w (the "
                "average of all T iterates' updates: the canary's ~10 sampled steps against the noise of 14,576). "
                "The twins scale the noise standard deviation through ι (variance × f²).")
def audit_bst14(config, epsilon, twin, trials, rng):
    from dpbench.learn import psgd_many as many

    w = config["studies"]["wu2016"]
    f32 = _figure_config(config, "wu2016", "fig3_2")
    m = int(w["datasets"]["protein"]["n_train"] or BOLT_ON_M)   # the study's Protein training split
    b, passes = int(f32["batch_size"]), int(f32["passes"])
    lam = float(w["l2"])
    iota = float(w["choices"]["bst14_iota"]) * _factor(twin) ** 2
    delta = 1.0 / m
    X = np.zeros((m, 1))
    X[-1, 0] = 1.0
    Yk = np.ones((m, 2))
    Yk[-1, 1] = -1.0                                       # column 0: D (canary y = +1), column 1: D′ (y = −1)
    s_d, s_dp = np.empty(trials), np.empty(trials)
    for t in range(trials):
        W, info = many.bst14_many(X, Yk, "logistic", [epsilon], delta, rng, batch_size=b, passes=passes, l2=lam,
                                  iota=iota)
        s_d[t], s_dp[t] = W[0, 0, 0], W[0, 1, 0]
    return {"s_d": s_d, "s_dp": s_dp, "delta": delta, "eps_pair": float("nan"),
            "noise_scale": float(info["sigma"][0] * math.sqrt(iota)), "steps": int(info["steps"])}


# ---------------------------------------------------------------------------------------------------------
# wu2016 ch. 4: output perturbation (Alg. 6), objective perturbation (CMS11 Alg. 2), functional mechanism
# ---------------------------------------------------------------------------------------------------------

def _ch4(config: dict, epsilon: float) -> dict:
    n, d = CH4_N, CH4_D
    R = float(config["studies"]["wu2016"]["ch4"]["data_independent_radius"])
    lam = math.sqrt(d / (n * epsilon))                        # data-independent λ (Fig. 4.1)
    return {"n": n, "d": d, "R": R, "lam": lam}


def _logistic_pair(n: int):
    X = np.zeros((n, 1))
    y = np.ones(n)
    Xd, Xp = X.copy(), X.copy()
    Xd[-1, 0], Xp[-1, 0] = 1.0, -1.0
    return (Xd, y), (Xp, y)


@register(name="output_perturbation_erm", label="output perturbation (wu2016 Alg. 6)", study="wu2016",
          twins=("noise_x0.5", "noise_x0.1"),
          notes="Data-independent OP of Fig. 4.1 (diabetes): R = 1, λ = √(d/(nε)) with the study's n = 614, d = 8, "
                "thesis sensitivity 4(ρ + λR)/(λn); one feature on the audit pair (Δ does not depend on it), "
                "other records 0, canary ±1. No pair can exceed ε·G/(4(1 + λR)) ≈ 0.247ε (ε = 1) / 0.260ε "
                "(ε = 4): the minimisers differ by at most G/(λn), G = 2·max_t √(1 − t²)σ(Rt) = 1.099 the largest "
                "logistic gradient difference on the ball (the margin is at most R), not 2ρ. This pair (G = 1 in "
                "one feature) reaches 91 % of that; a two-feature saturation pair reaches 99 % but its second "
                "noise dimension costs more power than it gains at ε = 1.")
def audit_output_perturbation_erm(config, epsilon, twin, trials, rng):
    from dpbench.methods.output_perturbation import erm_ball, output_perturbation

    p = _ch4(config, epsilon)
    (Xd, y), (Xp, _) = _logistic_pair(p["n"])
    fD = erm_ball("logistic", Xd, y, p["lam"], p["R"])
    fP = erm_ball("logistic", Xp, y, p["lam"], p["R"])
    r0 = output_perturbation("logistic", Xd, y, p["lam"], p["R"], epsilon, rng, w_bar=fD)
    beta = epsilon / r0.sensitivity
    f = _factor(twin)

    def side(Xs, wb):
        z = np.array([output_perturbation("logistic", Xs, y, p["lam"], p["R"], epsilon, rng, w_bar=wb).w
                      for _ in range(trials)])
        return S.l2_laplace_llr(wb[None] + f * (z - wb[None]), fD, fP, beta)

    return {"s_d": side(Xd, fD), "s_dp": side(Xp, fP), "delta": 0.0,
            "eps_pair": float(beta * np.linalg.norm(fD - fP)), "noise_scale": r0.sensitivity / epsilon}


def _objp_pair(config: dict, epsilon: float):
    """The objective-perturbation saturation pair: (Xd, Xp, y, R, Λ). λ = √(d/(nε)) and n of Fig. 4.1, Λ = λ +
    the extra ridge of CMS11 step 2; R = the largest radius of the study's tuning sets (objective perturbation
    is run on the ball ‖w‖ ≤ R, whose logistic calibration — ε′, the extra ridge, the noise 2ρ/ε′ with ρ = 1,
    c = 1/4 — does not depend on R). k records x = (0, 1) with y = −1 push the bias weight to −s with
    Λs = (k/n)σ(−s): all n − 1 of them unless that would put s beyond 0.9R (then k is cut so the solution stays
    inside the ball, where the likelihood-ratio statistic is exact); the canary is x = (±a, b), y = +1, with
    a·σ(s·b) maximal (see :func:`_saturated_canary`)."""
    from dpbench.methods.objective_perturbation import objective_perturbation_calibration
    from dpbench.methods.output_perturbation import curvature

    p = _ch4(config, epsilon)
    n = p["n"]
    R = float(max(max(r) for r in config["studies"]["wu2016"]["ch4"]["tuning"]["radius_sets"].values()))
    _, extra = objective_perturbation_calibration(epsilon, n, p["lam"], curvature("logistic"))
    lam_tot = p["lam"] + extra
    s_cap = 0.9 * R
    k = min(n - 1, int(n * lam_tot * s_cap / float(_sigmoid(-s_cap))))
    a, h = _saturated_canary(_push_margin(k / (n * lam_tot)))
    Xd, Xp = _bias_pair(n, a, h, pushers=k)
    y = -np.ones(n)
    y[-1] = 1.0
    return Xd, Xp, y, R, lam_tot


def _logistic_canary(w, x):
    """Gradient and Hessian of ℓ(w; x, y = +1) = log(1 + e^{−⟨w, x⟩})."""
    s = float(_sigmoid(-(x @ w)))
    return -s * x, s * (1.0 - s) * np.outer(x, x)


@register(name="objective_perturbation", label="objective perturbation (CMS11 Alg. 2, wu2016 ch. 4)",
          study="wu2016", post_training_noise=False, twins=("noise_x0.5", "noise_x0.1"),
          notes="λ = √(d/(nε)) with n = 614, d = 8 (as output perturbation); ε′ and the extra ridge depend on "
                "(ε, n, λ, c) only, and for the logistic loss neither they nor the noise (ρ = 1) depend on the "
                "radius, so the audit runs on the ball of the study's largest tuning radius R = 2 and in two "
                "features. Saturation pair: records x = (0, 1) with y = −1 drive the bias weight to ≈ −1.55 "
                "(ε = 1; −1.8 at ε = 4, capped at 0.9R), the canary x = (±a, b), y = +1 maximises a·σ(s·b): its "
                "gradients differ by ≈ 1.19 (ε = 1) / 1.24 (ε = 4) instead of 1 at w ≈ 0, of the bound 2. "
                "Solved once per trial; statistic = the exact log-likelihood ratio of the release (noise "
                "density ratio of b(w) = −(Σ∇ℓ(w) + nΛw) on D vs D′ times the Jacobian ratio "
                "det ∇²F_D/det ∇²F_D′, Chaudhuri et al. 2011 proof of Thm 9), exact for interior solutions.")
def audit_objective_perturbation(config, epsilon, twin, trials, rng):
    from dpbench.methods.objective_perturbation import objective_perturbation

    p = _ch4(config, epsilon)
    n = p["n"]
    Xd, Xp, y, R, _ = _objp_pair(config, epsilon)
    others, yo = Xd[:-1], y[:-1]
    f = _factor(twin)

    def llr(w, lam_tot, beta):
        so = _sigmoid(-yo * (others @ w))
        g0 = -(others.T @ (yo * so)) + n * lam_tot * w            # −b(w) without the canary
        H0 = (others.T * (so * (1.0 - so))) @ others + n * lam_tot * np.eye(w.size)
        gD, hD = _logistic_canary(w, Xd[-1])
        gP, hP = _logistic_canary(w, Xp[-1])
        jac = np.linalg.slogdet(H0 + hD)[1] - np.linalg.slogdet(H0 + hP)[1]
        return beta * (np.linalg.norm(g0 + gP) - np.linalg.norm(g0 + gD)) + jac

    out = {}
    for key, X in (("s_d", Xd), ("s_dp", Xp)):
        vals = np.empty(trials)
        for t in range(trials):
            r = objective_perturbation("logistic", X, y, p["lam"], R, epsilon, rng, noise_factor=f)
            vals[t] = llr(r.w, r.lam + r.extra_lam, 1.0 / r.noise_scale)
        out[key] = vals
    return {**out, "delta": 0.0, "eps_pair": float("nan"), "noise_scale": r.noise_scale}


@register(name="functional_mechanism", label="functional mechanism (Zhang et al. 2012; wu2016 ch. 4)",
          study="wu2016", twins=("noise_x0.5", "noise_x0.25"),
          notes="Logistic FM on the study's box domain with d = 8 (diabetes): Δ = d²/4 + d depends on d, so d is "
                "the study's. White-box: the noisy objective coefficients (M, c) are audited (the model is "
                "post-processing of them). Pair: other records 0, canary x = 𝟙 with y = 0 vs y = 1: M is "
                "unchanged and c moves by 𝟙 (L1 distance d = Δ/(d/4 + 1), ε_pair = ε/3 at d = 8). No pair of "
                "box records reaches Δ (at most ≈ d²/8 + d/2 = Δ/2, e.g. 𝟙 vs the zero record, spread over "
                "d² + d coordinates, where the Laplace privacy loss concentrates far below its maximum); the "
                "label pair puts its whole distance on d coordinates, which a finite audit can reach.")
def audit_functional_mechanism(config, epsilon, twin, trials, rng):
    from dpbench.methods.functional_mechanism import fm_logistic_objective, fm_logistic_sensitivity, fm_perturb

    p = _ch4(config, epsilon)
    n, d = p["n"], p["d"]
    domain = config["studies"]["wu2016"]["ch4"]["fm"]["domain"]
    X = np.zeros((n, d))
    X[-1] = 1.0
    y, yp = np.zeros(n), np.zeros(n)
    yp[-1] = 1.0
    sens = fm_logistic_sensitivity(d, domain)
    (MD, cD), (MP, cP) = fm_logistic_objective(X, y), fm_logistic_objective(X, yp)
    fD, fP = np.r_[MD.ravel(), cD], np.r_[MP.ravel(), cP]
    scale = sens / epsilon
    f = _factor(twin)

    def side(M, c):
        def draw(k):
            Mn, cn = fm_perturb(M, c, sens, epsilon, rng, size=k, noise_factor=f)
            return S.laplace_llr(np.concatenate([Mn.reshape(k, -1), cn], axis=1), fD, fP, scale)
        return _chunked(trials, draw)

    return {"s_d": side(MD, cD), "s_dp": side(MP, cP), "delta": 0.0,
            "eps_pair": float(np.abs(fD - fP).sum() / scale), "noise_scale": scale}


# ---------------------------------------------------------------------------------------------------------
# estimation study: clipped mean (Laplace ℓ1 / Gaussian ℓ2), local-DP 1-D mean
# ---------------------------------------------------------------------------------------------------------

def _mean_setup(config):
    fc = _figure_config(config, "estimation", "mean_vs_d")
    from dpbench.methods.estimation import mean_clip
    n = int(fc["n"])
    d = int(min(fc["dims"]))
    return fc, n, d, mean_clip(fc, n, d)


def _mean_pair(n, d, B):
    X = np.zeros((n, d))
    Xd, Xp = X.copy(), X.copy()
    Xd[-1], Xp[-1] = B, -B          # replace one row: all +B vs all −B (tight in ℓ1 and ℓ2)
    return Xd, Xp


@register(name="mean_laplace", label="clipped mean, Laplace ℓ1 (estimation)", study="estimation",
          twins=("noise_x0.5", "bug_l2_sensitivity"),
          notes="n = 2000 and the clip bound B of the study's mean_vs_d, its smallest d = 4 (the privacy loss of "
                "d-dimensional Laplace noise concentrates as d grows). Pair: one row +B·𝟙 vs −B·𝟙 (the ℓ1 "
                "sensitivity is attained). Bug twin: Laplace noise calibrated to the ℓ2 sensitivity (√d smaller).")
def audit_mean_laplace(config, epsilon, twin, trials, rng):
    from dpbench.methods import estimation as est

    fc, n, d, B = _mean_setup(config)
    l1, l2 = est.mean_sensitivity(n, d, B)
    cal = est.calibrate("laplace", l2 if twin == "bug_l2_sensitivity" else l1, l2, epsilon)
    cal_claim = est.calibrate("laplace", l1, l2, epsilon)
    Xd, Xp = _mean_pair(n, d, B)
    fD, fP = est.clipped_mean(Xd, B), est.clipped_mean(Xp, B)
    f = _factor(twin)

    def side(c):
        return _chunked(trials, lambda k: S.laplace_llr(c[None] + f * (est.release(c, cal, rng, size=k) - c[None]),
                                                        fD, fP, cal_claim.scale))

    return {"s_d": side(fD), "s_dp": side(fP), "delta": 0.0, "eps_pair": float(np.abs(fD - fP).sum() / cal_claim.scale),
            "noise_scale": cal_claim.scale}


@register(name="mean_gaussian", label="clipped mean, analytic Gaussian ℓ2 (estimation)", study="estimation",
          pure=False,
          notes="As mean_laplace with the analytic-Gaussian σ at the study's δ = 1e-5 (the classic σ is only "
                "defined for ε < 1, so at ε ≥ 1 the study's analytic calibration is audited). Statistic: the "
                "projection on f(D) − f(D′) (optimal for isotropic Gaussian noise).")
def audit_mean_gaussian(config, epsilon, twin, trials, rng):
    from dpbench.methods import estimation as est

    fc, n, d, B = _mean_setup(config)
    delta = float(fc["delta"])
    l1, l2 = est.mean_sensitivity(n, d, B)
    cal = est.calibrate("gaussian_analytic", l1, l2, epsilon, delta)
    Xd, Xp = _mean_pair(n, d, B)
    fD, fP = est.clipped_mean(Xd, B), est.clipped_mean(Xp, B)
    f = _factor(twin)

    def side(c):
        return _chunked(trials, lambda k: S.gaussian_llr(c[None] + f * (est.release(c, cal, rng, size=k) - c[None]),
                                                         fD, fP, cal.scale))

    mu = float(np.linalg.norm(fD - fP) / cal.scale)
    return {"s_d": side(fD), "s_dp": side(fP), "delta": delta, "eps_pair": S.gaussian_epsilon(mu, delta),
            "noise_scale": cal.scale}


@register(name="ldp_mean", label="local-DP report, clip + Lap(2B/ε) (estimation)", study="estimation",
          notes="One user's report (ε-LDP in that user's value): the study's ldp_vs_n clip bound at its largest "
                "n; pair: values +B vs −B (the range 2B is attained).")
def audit_ldp_mean(config, epsilon, twin, trials, rng):
    from dpbench.methods import estimation as est
    from dpbench.methods.estimation import ldp_clip

    fc = _figure_config(config, "estimation", "ldp_vs_n")
    B = ldp_clip(fc, int(max(fc["ns"])))
    scale = est.ldp_scale(B, epsilon)
    f = _factor(twin)
    fD, fP = np.array([B]), np.array([-B])

    def side(c):
        return _chunked(trials, lambda k: S.laplace_llr(
            c[None] + f * (est.ldp_release(c, B, epsilon, rng, size=k) - c[None]), fD, fP, scale))

    return {"s_d": side(fD), "s_dp": side(fP), "delta": 0.0, "eps_pair": 2 * B / scale, "noise_scale": scale}


# ---------------------------------------------------------------------------------------------------------
# song2018 ch. 4: local-DP SGD reports (oracle (4.5))
# ---------------------------------------------------------------------------------------------------------

@register(name="ldp_sgd_report", label="local-DP SGD report (song2018 oracle (4.5))", study="song2018",
          notes="One report λw + ∇ℓ(w; x, y) + Z, Z ∝ exp(−(ε/2)‖z‖) (the calibration, Δ = 2, does not depend "
                "on d; two features). λ of ch. 4. The auditor picks the public model w = (0, −W) and the records "
                "x = (±cos a, sin a), y = +1 with W·sin a ≫ 1: both gradients have norm ≈ 1 and are nearly "
                "opposite, so they differ by ≈ 2 = Δ.")
def audit_ldp_sgd_report(config, epsilon, twin, trials, rng):
    from dpbench.learn.ldp_sgd import gdp_reports

    lam = float(config["studies"]["song2018"]["ch4"]["l2"])
    a = 0.05
    w = np.array([0.0, -400.0])
    xD = np.array([[math.cos(a), math.sin(a)]])
    xP = np.array([[-math.cos(a), math.sin(a)]])
    y = np.array([1.0])
    f = _factor(twin)
    zero = np.random.default_rng(0)
    cD = gdp_reports(w, xD, y, 1e300, lam, zero)[0]     # ε → ∞: the noiseless report (noise ∝ 1/ε ≈ 0)
    cP = gdp_reports(w, xP, y, 1e300, lam, zero)[0]
    beta = epsilon / 2.0

    def side(x, c):
        def draw(k):
            z = gdp_reports(w, np.repeat(x, k, axis=0), np.repeat(y, k), epsilon, lam, rng)
            return S.l2_laplace_llr(c[None] + f * (z - c[None]), cD, cP, beta)
        return _chunked(trials, draw)

    return {"s_d": side(xD, cD), "s_dp": side(xP, cP), "delta": 0.0,
            "eps_pair": float(beta * np.linalg.norm(cD - cP)), "noise_scale": 2.0 / epsilon}
