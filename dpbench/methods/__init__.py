"""Private learners and private-prediction methods, one module per family (see ``base``)."""

from dpbench.methods.base import REGISTRY, TRAINING, Cell, Context, Method, Problem, Setting, training_method
from dpbench.methods import dpsgd, loss_perturbation, mlp, non_private, sensitivity, subsample_aggregate  # noqa: F401
# the private training methods that only train single models (TRAINING): wu2016 ch. 3 PSGD and ch. 4 ERM
from dpbench.methods import functional_mechanism, objective_perturbation, private_psgd_many  # noqa: F401

__all__ = ["REGISTRY", "TRAINING", "Cell", "Context", "Method", "Problem", "Setting", "training_method"]
