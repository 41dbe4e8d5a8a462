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
curvature; (a, b) maximises a·σ(s·b) (:func:`~dpbench.audit.pairs.saturated_canary`), s is the regularised equilibrium
(:func:`~dpbench.audit.pairs.push_margin`). The pair costs one noise dimension per class (the bias row), which is why the
two-class softmax is audited and wu2016's output perturbation keeps its one-feature pair (docs/studies/audit.md).

Twins: ``noise_x0.5`` multiplies the noise by 0.5 through a parameter of the real method (or by
scaling the draw of the real sampler); ``bug_*`` twins reproduce a known implementation bug by calling the real
calibration with the wrong argument.
"""

from dpbench.audit import erm, estimators, sgd  # noqa: F401 - the families register their audits
from dpbench.audit.registry import REGISTRY, MethodAudit, register

__all__ = ["REGISTRY", "MethodAudit", "register", "erm", "sgd", "estimators"]
