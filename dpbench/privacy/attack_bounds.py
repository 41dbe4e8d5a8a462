"""Upper bounds on membership-inference success implied by (ε, δ)-DP (from the literature, not the slides).

Hypothesis-testing view (Wasserman–Zhou 2010; Kairouz–Oh–Viswanath 2015): if a mechanism A is (ε, δ)-DP,
then for every pair of NEIGHBOURING datasets D, D′ and every test (rejection region S) for "A(D) vs A(D′)",

    TPR ≤ e^ε · FPR + δ      and      TPR ≤ 1 − e^{−ε}(1 − δ − FPR),

where TPR = Pr[A(D) ∈ S] and FPR = Pr[A(D′) ∈ S]. With a balanced prior this gives

    advantage = TPR − FPR ≤ (e^ε − 1 + 2δ)/(e^ε + 1),      accuracy ≤ (e^ε + δ)/(1 + e^ε).

Neighbouring relation — the bounds hold for the relation under which the mechanism is DP:

* The membership game of the study (members = the n training records, non-members = fresh records from the
  same distribution, one released model) is a **replace-one** game: by exchangeability, (model, member x_i)
  has the law of (model trained on D with x_i replaced by a fresh z, evaluated on x_i), so a member trial and a
  non-member trial are the two hypotheses of a replace-one neighbouring pair, averaged over pairs. The bounds
  therefore apply with the replace-one (ε, δ) of the training method, averaged over trials (both sides of the
  inequality are linear in the trial distribution).
* Output perturbation / loss perturbation (vdm2020), bolt-on PSGD, SCS13, BST14 (wu2016 ch. 3), and the
  wu2016 ch. 4 mechanisms are analysed for replace-one neighbours: their ε is used as is.
* DP-SGD's accountant is add/remove (dpbench.privacy.accounting). An add/remove (ε, δ) guarantee implies
  replace-one (2ε, (1 + e^ε)δ) by group privacy over the two steps remove-then-add
  (:func:`replace_one_from_add_remove`); the study calibrates DP-SGD so that its replace-one guarantee is the
  plotted ε (or draws the bound at the converted value, a configuration choice).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["NEIGHBOURING", "tpr_bound", "accuracy_bound", "advantage_bound", "yeom_advantage_bound",
           "replace_one_from_add_remove", "add_remove_budget_for_replace_one", "epsilon_from_rates"]

NEIGHBOURING = "replace-one"


def _eps_delta(epsilon, delta):
    eps = np.asarray(epsilon, dtype=np.float64)
    if np.any(eps < 0) or np.any(np.isnan(eps)):
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    d = float(delta)
    if not 0.0 <= d <= 1.0:
        raise ValueError(f"delta must be in [0, 1], got {delta!r}")
    return eps, d


def tpr_bound(fpr, epsilon, delta: float = 0.0):
    """Largest TPR any test can have at false-positive rate ``fpr`` against an (ε, δ)-DP mechanism:
    min(1, e^ε·FPR + δ, 1 − e^{−ε}(1 − δ − FPR)). ε = inf gives 1."""
    eps, d = _eps_delta(epsilon, delta)
    f = np.asarray(fpr, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        a = np.exp(eps) * f + d
        b = 1.0 - np.exp(-eps) * (1.0 - d - f)
    out = np.minimum(1.0, np.minimum(np.where(np.isnan(a), 1.0, a), b))
    out = np.where(np.isinf(eps), 1.0, out)
    return float(out) if out.ndim == 0 else out


def accuracy_bound(epsilon, delta: float = 0.0):
    """Balanced-prior accuracy bound (e^ε + δ)/(1 + e^ε), capped at 1 (ε = inf gives 1)."""
    eps, d = _eps_delta(epsilon, delta)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.where(np.isinf(eps), 1.0, np.minimum(1.0, (1.0 + d * np.exp(-eps)) / (1.0 + np.exp(-eps))))
    return float(out) if out.ndim == 0 else out


def advantage_bound(epsilon, delta: float = 0.0):
    """Advantage bound TPR − FPR ≤ (e^ε − 1 + 2δ)/(e^ε + 1) (= 2·accuracy bound − 1; tanh(ε/2) for δ = 0)."""
    return 2 * accuracy_bound(epsilon, delta) - 1


def yeom_advantage_bound(epsilon):
    """Yeom et al.'s looser bound e^ε − 1 for ε-DP (vacuous for ε ≥ ln 2), for comparison only."""
    return np.expm1(np.asarray(epsilon, dtype=np.float64))


def replace_one_from_add_remove(epsilon: float, delta: float) -> tuple[float, float]:
    """(ε, δ)-DP under add/remove ⇒ (2ε, (1 + e^ε)δ)-DP under replace-one (group privacy, two steps)."""
    return 2.0 * float(epsilon), (1.0 + math.exp(float(epsilon))) * float(delta)


def add_remove_budget_for_replace_one(epsilon: float, delta: float) -> tuple[float, float]:
    """The add/remove budget (ε/2, δ/(1 + e^{ε/2})) whose replace-one conversion is exactly (ε, δ); ε > 0,
    0 ≤ δ < 1 (a δ ≥ 1 promises nothing and would still map to a δ below 1)."""
    from dpbench.privacy import _validate as V

    V.positive("epsilon", epsilon)
    V.delta_halfopen("delta", delta)
    e = float(epsilon) / 2.0
    return e, float(delta) / (1.0 + math.exp(e))


def epsilon_from_rates(tpr: float, fpr: float, delta: float = 0.0) -> float:
    """ln((TPR − δ)/FPR), and the complementary ln((1 − FPR − δ)/(1 − TPR)); the larger, floored at 0."""
    def lr(a, b):
        return math.log(a / b) if a > 0 and b > 0 else (math.inf if a > 0 else 0.0)
    return max(lr(tpr - delta, fpr), lr(1 - fpr - delta, 1 - tpr), 0.0)
