"""Private learners and private-prediction methods, one module per family (see ``base``)."""

from dpbench.methods.base import REGISTRY, Cell, Context, Method, Problem, Setting
from dpbench.methods import dpsgd, loss_perturbation, mlp, non_private, sensitivity, subsample_aggregate  # noqa: F401

__all__ = ["REGISTRY", "Cell", "Context", "Method", "Problem", "Setting"]
