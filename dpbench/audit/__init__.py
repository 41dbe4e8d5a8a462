"""White-box privacy audit with power (Jagielski et al. 2020; Nasr et al. 2021, 2023): for every private training
method, at its study's default calibration, a worst-case neighbouring pair, the likelihood-ratio test of the
release and a split-half Clopper–Pearson ε lower bound, plus broken twins the audit must catch.

``stats`` — likelihood-ratio statistics and the ε lower bound; ``methods`` — one audit per method (pair, release,
statistic, twins); ``core`` — one audit cell (method, ε, variant, seed)."""

from dpbench.audit import core, methods, stats  # noqa: F401
from dpbench.audit.core import CORRECT, audited_variants, run_cell, variants  # noqa: F401
from dpbench.audit.methods import REGISTRY  # noqa: F401

__all__ = ["core", "methods", "stats", "run_cell", "variants", "audited_variants", "REGISTRY", "CORRECT"]
