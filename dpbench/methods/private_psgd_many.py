"""The private PSGD algorithms of wu2016 chapter 3 for many binary linear models at once: SCS13, BST14 and bolt-on
output perturbation for every ε of a grid and every label column of a one-vs-all problem (Wu 2016, §3.2–3.3;
docs/studies/wu2016.md), on the non-private many-model engine :func:`dpbench.learn.psgd_many.psgd_many`, and the
:class:`~dpbench.methods.base.Method` objects of the three algorithms (:data:`~dpbench.methods.base.TRAINING`).

With M = 1 and the same generator state these functions return the same model as the one-model algorithms of
:mod:`dpbench.methods.private_psgd` up to floating-point summation order (tested): the random draws are made in
the same order (permutation per pass or indices per step, then one noise draw per update). The models of one
call share their batches (data-independent randomness: sharing it between separately released models does not
change any model's guarantee).
"""

from __future__ import annotations

import math

import numpy as np

from dpbench.learn.psgd import StepSchedule, get_loss
from dpbench.learn.psgd_many import one_vs_all_labels, psgd_many
from dpbench.methods.base import TRAINING, Method, Setting, linear_scores
from dpbench.methods.private_psgd import bolt_on_setup, bst14_schedule
from dpbench.privacy import _validate as V
from dpbench.privacy.mechanisms import output_noise
from dpbench.privacy.noisy_sgd import bst14_calibrator, gradient_sum_noise_hook, scs13_calibration

__all__ = ["l2_laplace_noise_many", "gaussian_noise_many", "scs13_many", "bst14_many", "bolt_on_many",
           "perturb_outputs", "BoltOn", "SCS13", "BST14"]

def l2_laplace_noise_many(epsilons, batch_size: int | None = None):
    """Per-model SCS13 noise: model m gets Z_m / b with density of Z_m ∝ exp(−(ε_m/2)‖z‖) (the gradient-SUM
    noise of :func:`~dpbench.methods.private_psgd.l2_laplace_batch_noise`; ‖Z_m‖ ~ Gamma(d, 2/ε_m), uniform direction).
    Divisor: the actual batch size m, or min(batch_size, m). Returns ``(rng, M, d, m) -> (M, d)``."""
    eps = np.asarray(epsilons, dtype=np.float64).ravel()
    if eps.size < 1 or not np.all(np.isfinite(eps) & (eps > 0)):
        raise ValueError(f"epsilons must be finite and > 0, got {epsilons!r}")
    return gradient_sum_noise_hook("l2_laplace", 2.0 / eps, batch_size)


def gaussian_noise_many(sigmas, batch_size: int | None = None):
    """Per-model N(0, σ_m² I) on the gradient SUM, i.e. / b on the average (same divisor convention as
    :func:`l2_laplace_noise_many`). Returns ``(rng, M, d, m) -> (M, d)``."""
    return gradient_sum_noise_hook("gaussian", sigmas, batch_size)


def _budget_vectors(epsilons, n_models_per_eps):
    eps = np.asarray(epsilons, dtype=np.float64).ravel()
    if eps.size < 1 or not np.all(np.isfinite(eps) & (eps > 0)):
        raise ValueError(f"epsilons must be finite and > 0, got {epsilons!r}")
    K = V.count("n_models_per_eps", n_models_per_eps)
    return eps, K


def scs13_many(X, Yk, loss, passes, batch_size, epsilons, rng, *, delta=0.0, l2=0.0, radius=None,
               schedule="inv_sqrt", observe=None):
    """SCS13 (see :func:`~dpbench.methods.private_psgd.scs13_psgd`) for every ε of ``epsilons`` (E values) and
    every label column of ``Yk`` (n, K) at once: model e·K + k is column k trained at budget ε_e (δ; δ = 0
    → L2-Laplace noise, δ > 0 → classic Gaussian), each pass getting ε_e/k (δ/k). Returns ``(W (E, K, d),
    info)``, ``info["noise_scale"]`` (E,) as in the one-model function. ``observe(t, W)``: called after every
    update with the iterates (E·K, d) (:func:`~dpbench.learn.psgd_many.psgd_many`), e.g. by the transcript
    audit; it does not change the result."""
    Yk = np.asarray(Yk, dtype=np.float64)
    eps, K = _budget_vectors(epsilons, Yk.shape[1])
    loss = get_loss(loss)
    cal = scs13_calibration(eps, delta, passes, loss.lipschitz)
    hook = gradient_sum_noise_hook(cal["noise_kind"], np.repeat(cal["noise_scale"], K))
    W = psgd_many(X, np.tile(Yk, (1, eps.size)), loss, passes, batch_size, schedule, rng, l2=l2, radius=radius,
                  batch_noise=hook, observe=observe)
    return W.reshape(eps.size, K, -1), {k: cal[k] for k in ("noise_kind", "noise_scale", "epsilon_per_pass",
                                                            "delta_per_pass")}


def bst14_many(X, Yk, loss, epsilons, delta, rng, *, batch_size=1, passes=1, l2=0.0, radius=None, iota=4.0,
               algorithm=None, observe=None, own_batches=False, calibration="source"):
    """BST14 (see :func:`~dpbench.methods.private_psgd.bst14_psgd`: with-replacement sampling, T = ⌈k n/b⌉
    Gaussian steps, calibration of :func:`~dpbench.methods.private_psgd.bst14_calibration`, ι = 4 by default)
    for every ε of ``epsilons`` and every label column of ``Yk`` at once. Returns ``(W (E, K, d), info)``
    with per-ε ``sigma``, ``epsilon1``, ``epsilon2``, the step multipliers ``step_c`` (convex: 2R/G) and the
    engine's step-size ``schedule`` (η_t = step_c · schedule(t)). ``observe(t, W)``: called after every update
    with the iterates (E·K, d) (model e·K + k; :func:`~dpbench.learn.psgd_many.psgd_many`), e.g. by the
    transcript audit; it does not change the result. ``own_batches=True``: every model draws its own batches,
    so the E·K models are independent runs of BST14 (repeated trials of an audit); the default shares the
    batches among the columns (one training per column, as the study). ``calibration="tight"``: the noise of
    :func:`~dpbench.privacy.noisy_sgd.bst14_tight_calibration` (PLD of the mixture-of-Gaussians updates, needs
    ι = 4) instead of the thesis' composition; everything else unchanged; a callable: see
    :func:`~dpbench.privacy.noisy_sgd.bst14_calibrator` (``info["calibration"]`` is then ``"custom"``)."""
    Yk = np.asarray(Yk, dtype=np.float64)
    eps, K = _budget_vectors(epsilons, Yk.shape[1])
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    loss = get_loss(loss)
    batch_size = V.count("batch_size", batch_size)
    passes = V.count("passes", passes)
    l2 = V.nonnegative("l2", l2)
    iota = V.positive("iota", iota)
    steps = -(-passes * n // batch_size)
    calibrate = bst14_calibrator(calibration, iota)
    cals = [calibrate(e, delta, n, steps, batch_size) for e in eps]
    sigma = np.array([c["sigma"] for c in cals])
    algorithm = ("strongly_convex" if l2 > 0 else "convex") if algorithm is None else algorithm
    scheds = [bst14_schedule(algorithm, l2, radius, d, sg, iota, batch_size, loss.lipschitz) for sg in sigma]
    radius = scheds[0][0]
    if algorithm == "convex":      # η_t = c_e/√t with c_e = 2R/G_e: a per-model multiplier of 1/√t
        step_c = np.array([sch.c for _, sch, _ in scheds])
        schedule = StepSchedule.inv_sqrt(1.0)
    else:
        step_c = np.ones(eps.size)
        schedule = scheds[0][1]
    hook = gaussian_noise_many(np.repeat(sigma * math.sqrt(iota), K), batch_size)
    W = psgd_many(X, np.tile(Yk, (1, eps.size)), loss, passes, batch_size, schedule, rng, l2=l2, radius=radius,
                  step_scale=np.repeat(step_c, K), batch_noise=hook, sampling="replacement", steps=steps,
                  observe=observe, own_batches=own_batches)
    info = {"sigma": sigma, "epsilon1": np.array([c["epsilon1"] for c in cals]),
            "epsilon2": np.array([c["epsilon2"] for c in cals]), "step_c": step_c, "steps": steps,
            "algorithm": algorithm, "radius": radius, "iota": iota, "schedule": schedule,
            "calibration": "custom" if callable(calibration) else calibration,
            "epsilon_achieved": np.array([c.get("epsilon_achieved", e) for c, e in zip(cals, eps)])}
    return W.reshape(eps.size, K, -1), info


def bolt_on_many(X, Yk, loss, passes, batch_size, epsilons, delta, rng, *, l2=0.0, eta=None, algorithm=None,
                 sc_sensitivity="rigorous", noise="auto", radius=None):
    """Bolt-on output perturbation (see :func:`~dpbench.methods.private_psgd.bolt_on_psgd`) for every ε: the
    noiseless PSGD run (``last_batch="drop"``) does not depend on ε, so it is trained ONCE for the K label
    columns and every ε of ``epsilons`` only draws its own output noise (E·K independent draws). Returns
    ``(W (E, K, d), info)`` with ``sensitivity``, per-ε ``noise_scale`` and the noiseless ``W0`` (K, d)."""
    Yk = np.asarray(Yk, dtype=np.float64)
    eps, K = _budget_vectors(epsilons, Yk.shape[1])
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    loss = get_loss(loss)
    passes = V.count("passes", passes)
    batch_size = V.count("batch_size", batch_size)
    l2 = V.nonnegative("l2", l2)
    delta = V.delta_halfopen("delta", delta)
    setup = bolt_on_setup(n, loss, passes, batch_size, l2, eta, algorithm, sc_sensitivity, loss.lipschitz)
    algorithm, schedule, sensitivity, eta = setup["algorithm"], setup["schedule"], setup["sensitivity"], setup["eta"]
    W0 = psgd_many(X, Yk, loss, passes, batch_size, schedule, rng, l2=l2, radius=radius, last_batch="drop")
    out, scales, kind = perturb_outputs(rng, W0, sensitivity, eps, delta, noise)
    return out, {"sensitivity": sensitivity, "noise_kind": kind, "noise_scale": scales, "W0": W0,
                 "algorithm": algorithm, "eta": eta}


def perturb_outputs(rng, W0, sensitivity, epsilons, delta, noise="auto"):
    """Output perturbation of the K noiseless models ``W0`` (K, d) for every ε of ``epsilons``: one
    :func:`~dpbench.methods.private_psgd.output_noise` draw of K vectors per ε, in the order of ``epsilons``.
    Returns ``(W (E, K, d), noise scale per ε (E,), noise kind)``."""
    W0 = np.asarray(W0, dtype=np.float64)
    eps = np.asarray(epsilons, dtype=np.float64).ravel()
    out = np.empty((eps.size,) + W0.shape)
    scales = np.empty(eps.size)
    kind = None
    for i, e in enumerate(eps):
        z, kind, scales[i] = output_noise(rng, W0.shape[1], sensitivity, e, delta, noise, size=W0.shape[0])
        out[i] = W0 + z
    return out, scales, kind


# ----------------------------------------------------------------------------------------------------------
# the three algorithms as Method objects: one binary model, or one-vs-all, at one budget (Method.train)


class _OneVsAllPSGD(Method):
    """One binary logistic model (labels: class 1 = +1) or C one-vs-all models, each trained at (ε/K, δ/K) —
    basic composition over the K released models — by the many-model function of the algorithm, batch size
    capped at n. Settings (config block ``psgd``): ``passes``, ``batch_size``, ``l2`` (λ) and, for the noisy
    SGD algorithms, ``radius`` (the projection ball; default 1/λ)."""

    kind = "training"
    depends_on = ("epsilon", "delta", "rep")
    settings_spec = (Setting("passes", "psgd", type="integer"), Setting("batch_size", "psgd", type="integer"),
                     Setting("l2", "psgd"))

    def train(self, X, y, n_classes, epsilon, delta, rng):
        Yk, b = self._labels(X, y, n_classes)
        K = Yk.shape[1]
        W, scale = self._many(X, Yk, b, float(epsilon) / K, float(delta) / K, rng)
        return linear_scores(W[0], n_classes), {"noise_scale": float(np.ravel(scale)[0])}

    def _labels(self, X, y, n_classes):
        """The ±1 label columns (one binary model, or one-vs-all) and the batch size capped at n."""
        C = int(n_classes)
        Yk = np.where(np.asarray(y) == 1, 1.0, -1.0)[:, None] if C == 2 else one_vs_all_labels(y, C)
        return Yk, min(int(self.settings["batch_size"]), X.shape[0])


@TRAINING.register
class BoltOn(_OneVsAllPSGD):
    """Bolt-on output perturbation (Wu 2016, §3.2, Alg. 1/2; :func:`bolt_on_many`), pure ε (δ = 0)."""

    name = "bolt_on"
    label = "bolt-on PSGD (wu2016)"

    def _many(self, X, Yk, b, eps, delta, rng):
        s = self.settings
        W, info = bolt_on_many(X, Yk, "logistic", s["passes"], b, [eps], delta, rng, l2=s["l2"])
        return W, info["noise_scale"]

    def releases(self, X, y, n_classes, epsilon, delta, rng, trials, shared_rng):
        """``trials`` releases (trials, d, C) from ONE noiseless PSGD run whose sampling order comes from
        ``shared_rng`` (data-independent randomness: the guarantee holds for every fixed order), each with its own
        output noise from ``rng`` (:func:`output_noise`, one draw of (trials, K) vectors)."""
        Yk, b = self._labels(X, y, n_classes)
        K, d = Yk.shape[1], X.shape[1]
        _, info = bolt_on_many(X, Yk, "logistic", self.settings["passes"], b, [epsilon / K], delta / K, shared_rng,
                               l2=self.settings["l2"])
        z, _, _ = output_noise(rng, d, info["sensitivity"], epsilon / K, delta / K, size=(int(trials), K))
        W = info["W0"][None] + z                                          # (trials, K, d)
        if int(n_classes) == 2:
            return np.stack([np.zeros((int(trials), d)), W[:, 0]], axis=2)  # score matrices [0, w]
        return np.ascontiguousarray(np.transpose(W, (0, 2, 1)))


class _NoisyPSGD(_OneVsAllPSGD):
    settings_spec = _OneVsAllPSGD.settings_spec + (Setting("radius", "psgd", default=None),)

    def _radius(self):
        r = self.settings.get("radius")
        return 1.0 / self.settings["l2"] if r is None else r


@TRAINING.register
class SCS13(_NoisyPSGD):
    """SCS13 noisy mini-batch SGD (Song, Chaudhuri & Sarwate 2013; :func:`scs13_many`), projected on the ball."""

    name = "scs13"
    label = "SCS13 noisy SGD"

    def _many(self, X, Yk, b, eps, delta, rng):
        s = self.settings
        W, info = scs13_many(X, Yk, "logistic", s["passes"], b, [eps], rng, delta=delta, l2=s["l2"],
                             radius=self._radius())
        return W, info["noise_scale"]


@TRAINING.register
class BST14(_NoisyPSGD):
    """BST14 with constant epochs (Wu 2016, §3.3, Alg. 3/4; :func:`bst14_many`), (ε, δ)-DP."""

    name = "bst14"
    label = "BST14 noisy SGD"

    def _many(self, X, Yk, b, eps, delta, rng):
        s = self.settings
        W, info = bst14_many(X, Yk, "logistic", [eps], delta, rng, batch_size=b, passes=s["passes"], l2=s["l2"],
                             radius=self._radius())
        return W, info["sigma"]
