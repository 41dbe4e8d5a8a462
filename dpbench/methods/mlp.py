"""The non-convex substitute of vdm2020 Fig. 7: one-hidden-layer ReLU MLPs (``dpbench.learn.mlp``).

CIFAR-10 / ResNet-20 cannot run here; the figure's structure is kept: DP-SGD (Eq. 4, GLOBAL clipping of the
full per-example gradient, Poisson sampling, RDP accountant) vs subsample-and-aggregate with T = 16 MLPs
(no L2, exponential mechanism on the votes), and the non-private MLP as reference. The other methods need
a convex, Lipschitz, smooth loss (assumptions 1 and 3, §4.3 footnote 1) and are not applicable.

Training runs are keyed by content (problem, settings, repetition), so results do not depend on how
repetitions are grouped or on the number of workers.
"""

from __future__ import annotations

import numpy as np

from dpbench.learn.mlp import dpsgd_mlp, fit_mlp, fit_mlp_many, mlp_accuracy, mlp_accuracy_many, mlp_predict_many
from dpbench.methods.base import REGISTRY, Cell, Context, Method, Problem, Setting
from dpbench.methods.dpsgd import DPSGD, clip_norm, dpsgd_settings
from dpbench.methods.subsample_aggregate import add_votes, disjoint_parts, private_vote_accuracy
from dpbench.store import content_key

_SGD = ("hidden", "schedule", "epochs", "batch_size", "learning_rate")

#: the network and learning-rate schedule shared by the three MLP methods (config block ``mlp``)
MLP_SETTINGS = (Setting("hidden", "mlp", schema={"type": "integer", "minimum": 1}),
                Setting("schedule", "mlp", schema={"enum": ["step", "constant"]}))


def sgd_settings(block: str) -> tuple[Setting, ...]:
    """Plain mini-batch SGD settings read from config ``block``."""
    return (Setting("epochs", block, schema={"type": "number", "exclusiveMinimum": 0}),
            Setting("batch_size", block, schema={"type": "integer", "minimum": 1}),
            Setting("learning_rate", block, schema={"type": "number", "exclusiveMinimum": 0}))


@REGISTRY.register
class NonPrivateMLP(Method):
    name = "non_private_mlp"
    label = "non-private MLP"
    kind = "baseline"
    depends_on = ()
    settings_spec = MLP_SETTINGS + sgd_settings("mlp.non_private")
    style = dict(color="black", linestyle="--", marker=None)

    def cell_params(self, problem, tuned, epsilon, delta):
        return {k: self.settings[k] for k in _SGD}

    def run_group(self, problem: Problem, cells: list[Cell], ctx: Context) -> list[dict]:
        out = []
        for cell in cells:
            p = cell.param
            params = fit_mlp(problem.X_train, problem.y_train, problem.n_classes, p["hidden"], int(p["epochs"]),
                             p["batch_size"], p["learning_rate"], ctx.rng(cell.stream_key), schedule=p["schedule"])
            out.append({"accuracy": float(mlp_accuracy(params, problem.X_eval, problem.y_eval)),
                        "noise_kind": "none", "noise_scale": 0.0})
        return out


def mlp_vote_counts(problem: Problem, p: dict, rep: int, ctx: Context) -> np.ndarray:
    """Vote counts (n_eval, C) of T MLPs trained on a fresh random partition of repetition ``rep``."""
    key = content_key({"artefact": "subsagg-mlp-votes", "problem": problem.key,
                       "settings": {k: p[k] for k in (*_SGD, "n_models")}, "rep": rep})

    def compute():
        rng = ctx.rng(key)
        perm = disjoint_parts(problem.n_train, p["n_models"], rng)
        models = fit_mlp_many(problem.X_train[perm], problem.y_train[perm], problem.n_classes, p["hidden"],
                              int(p["epochs"]), p["batch_size"], p["learning_rate"], rng, schedule=p["schedule"])
        counts = np.zeros((problem.X_eval.shape[0], problem.n_classes), dtype=np.int32)
        return {"counts": add_votes(counts, mlp_predict_many(models, problem.X_eval))}

    return ctx.store.artefact(key, compute)["counts"]


@REGISTRY.register
class SubsampleAggregateMLP(Method):
    name = "subsample_aggregate_mlp"
    label = "subsample-and-aggregate (T MLPs)"
    kind = "prediction"
    settings_spec = MLP_SETTINGS + (
        Setting("n_models", "mlp.subsample_aggregate", schema={"type": "integer", "minimum": 1}),
        *sgd_settings("mlp.subsample_aggregate"),
        Setting("beta_rule", "subsample_aggregate", schema={"enum": ["paper", "standard"]}),
    )
    style = dict(color="tab:red", marker="D")

    def cell_params(self, problem, tuned, epsilon, delta):
        return {**{k: self.settings[k] for k in (*_SGD, "n_models")}, "beta_rule": self.settings["beta_rule"]}

    def group_key(self, cell: Cell):
        return (cell.problem, cell.params, cell.rep)

    def run_group(self, problem: Problem, cells: list[Cell], ctx: Context) -> list[dict]:
        p = cells[0].param
        counts = mlp_vote_counts(problem, p, cells[0].rep, ctx)
        return private_vote_accuracy(counts, problem.y_eval, cells, p["beta_rule"], ctx)


@REGISTRY.register
class DPSGDMLP(DPSGD):
    """DP-SGD on the MLP: the linear DP-SGD's support rule, grouping, calibration and record; only the
    learner differs."""

    name = "dpsgd_mlp"
    label = "DP-SGD (MLP)"
    settings_spec = MLP_SETTINGS + dpsgd_settings("mlp.dpsgd")

    def cell_params(self, problem, tuned, epsilon, delta):
        s = self.settings
        return {"clip": clip_norm(float(tuned), s["batch_size"], s["clip_scale"]),
                **{k: s[k] for k in (*_SGD, "sampling", "accountant", "conversion")},
                "neighbouring": s.get("neighbouring", "replace_one")}

    def run_group(self, problem: Problem, cells: list[Cell], ctx: Context) -> list[dict]:
        p = cells[0].param
        calibration = self.calibration(problem, cells[0])
        cal = calibration[0]
        # one stream per repetition, keyed by the cell: a run does not depend on which runs share the call
        params = dpsgd_mlp(problem.X_train, problem.y_train, problem.n_classes, p["hidden"],
                           noise_multiplier=cal.noise_multiplier, clip=p["clip"], batch_size=p["batch_size"],
                           epochs=p["epochs"], learning_rate=p["learning_rate"],
                           rng=[ctx.rng(c.stream_key) for c in cells], n_runs=len(cells), sampling=p["sampling"],
                           schedule=p["schedule"])
        accs = mlp_accuracy_many(params, problem.X_eval, problem.y_eval)
        return [self.record(a, calibration, p) for a in accs]
