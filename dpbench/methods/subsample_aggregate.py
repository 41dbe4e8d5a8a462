"""Subsample-and-aggregate (Dwork & Feldman; private prediction) — van der Maaten & Hannun 2020, §3.2, App. C.2,
Alg. 8.

T non-private softmax models on disjoint random parts of ⌊N/T⌋ examples (remainder dropped, a new partition
each repetition, no L2: paper §4.1 — a bounded number of L-BFGS iterations is the implicit regulariser);
each query returns a label sampled with probability ∝ exp(β · votes). One record moves one vote, so two
counts change and each query is 2β-DP. ``beta_rule: standard`` (default, correct): β = ε*/2 with the
per-query ε* = ε/B (δ = 0) or max(ε/B, √(2/B)(√(ln(1/δ)+ε) − √(ln(1/δ)))) (δ > 0, Eq. 61).
``beta_rule: paper``: β = ε* as in Thm 7, whose proof omits the normaliser — its rows record the true
ε (``epsilon_achieved``: 2ε for δ = 0) and the legend says so.

The T models are trained once per repetition; every (ε, δ, B) cell of that repetition is evaluated from
the same vote-count matrix.
"""

from __future__ import annotations

import numpy as np

from dpbench.learn import fit_softmax_many, predict_many
from dpbench.methods.base import REGISTRY, Cell, Context, Method, Problem, Setting
from dpbench.privacy import (exponential_mechanism, vote_exponential_mechanism_beta,
                              vote_exponential_mechanism_epsilon)
from dpbench.privacy.composition import optimal_pure_composition_epsilon, optimal_pure_step_epsilon
from dpbench.store import content_key


def disjoint_parts(n: int, n_models: int, rng: np.random.Generator) -> np.ndarray:
    """(T, ⌊N/T⌋) indices of T disjoint random parts of range(N) (the remainder is dropped)."""
    per = n // n_models
    if per < 1:
        raise ValueError(f"subsample-and-aggregate needs N >= T, got N={n}, T={n_models}")
    return rng.permutation(n)[: per * n_models].reshape(n_models, per)


def add_votes(counts: np.ndarray, votes: np.ndarray) -> np.ndarray:
    """Add the labels ``votes`` (models, n_eval) of some models to ``counts`` (n_eval, C), in place."""
    rows = np.arange(counts.shape[0])
    for v in votes:
        counts[rows, v] += 1
    return counts


MODEL_BLOCK_BYTES = 1 << 28  # gather at most ~256 MiB of member training parts at a time


def vote_counts(problem: Problem, n_models: int, maxiter: int, rep: int, ctx: Context, float32: bool = False
                ) -> np.ndarray:
    """The (n_eval, C) vote counts of the T members of repetition ``rep`` (cached). ``float32``: members fitted
    in θ-space (parts of more than D/2 rows) use single-precision evaluations (``fit_softmax_many``); it only
    enters the cache key where it changes the computation."""
    per_part = problem.n_train // n_models
    float32 = bool(float32) and 2 * per_part > problem.dim
    spec = {"artefact": "subsagg-votes-v2", "problem": problem.key, "T": n_models, "maxiter": maxiter, "rep": rep}
    key = content_key({**spec, "float32": True} if float32 else spec)

    def compute():
        perm = disjoint_parts(problem.n_train, n_models, ctx.rng(key))
        per = perm.shape[1]
        counts = np.zeros((problem.X_eval.shape[0], problem.n_classes), dtype=np.int32)
        # members are fitted independently (one scipy L-BFGS-B run each, in the row space of their part when
        # it has fewer rows than features: the same iterates, ~2x cheaper — fit_softmax_many "row_space"), so
        # fitting them in blocks gives the same models while only one block's parts are ever gathered: at
        # N = 10⁶ the T parts together would be a second float64 copy of the training set
        block = max(1, MODEL_BLOCK_BYTES // max(1, per * problem.dim * 8))
        for a in range(0, n_models, block):
            rows = perm[a : a + block]
            thetas = fit_softmax_many(problem.X_train[rows], problem.y_train[rows], problem.n_classes,
                                      l2=0.0, maxiter=maxiter, method="row_space", float32=float32)
            add_votes(counts, predict_many(thetas, problem.X_eval))  # (block, n_eval) labels
        return {"counts": counts}

    return ctx.store.artefact(key, compute)["counts"]


@REGISTRY.register
class SubsampleAggregate(Method):
    name = "subsample_aggregate"
    label = "subsample-and-aggregate"
    kind = "prediction"
    depends_on = ("epsilon", "delta", "budget", "rep")
    tuned = None
    settings_spec = (
        Setting("n_models", "", key="subsagg_models", cast=int, schema={"type": "integer", "minimum": 1}),
        Setting("maxiter", "lbfgs", key="subsagg_maxiter", default=100, schema={"type": "integer", "minimum": 1}),
        Setting("beta_rule", "subsample_aggregate", schema={"enum": ["paper", "standard"]}),
        Setting("float32", "lbfgs", key="subsagg_float32", default=True, type="boolean"),
    )
    style = dict(color="tab:red", marker="D")

    def cell_params(self, problem, tuned, epsilon, delta):
        return {"n_models": self.settings["n_models"], "maxiter": self.settings["maxiter"],
                "beta_rule": self.settings["beta_rule"], "float32": bool(self.settings.get("float32", True))}

    def group_key(self, cell: Cell):
        return (cell.problem, cell.params, cell.rep)

    def run_group(self, problem: Problem, cells: list[Cell], ctx: Context) -> list[dict]:
        p = cells[0].param
        counts = vote_counts(problem, p["n_models"], p["maxiter"], cells[0].rep, ctx, p.get("float32", False))
        return private_vote_accuracy(counts, problem.y_eval, cells, p["beta_rule"], ctx, self.calibration_kind)


@REGISTRY.register
class SubsampleAggregateTight(SubsampleAggregate):
    """Subsample-and-aggregate with the tight calibration for δ > 0: the B exponential-mechanism queries (each
    2β-DP) composed by the optimal composition theorem (Kairouz, Oh & Viswanath 2015, Thm 3.3; exact for
    pure-DP mechanisms: :func:`dpbench.privacy.composition.optimal_pure_step_epsilon`) instead of the advanced
    composition of vdm2020 Eq. 61: β × 1.33 at ε = 1, δ = 10⁻⁵, B = 100 or 1,000. The same teachers (the vote
    counts are shared with ``subsample_aggregate``). δ = 0 points are left out (pure composition is already
    tight). Rows carry ``calibration: tight`` and the exact ε as ``epsilon_achieved``. Add
    ``subsample_aggregate_tight`` to a figure's ``methods`` to draw it beside ``subsample_aggregate`` (dashed)."""

    name = "subsample_aggregate_tight"
    label = "subsample-and-aggregate (tight calibration)"
    style = dict(color="tab:red", marker="D", linestyle="--")
    calibration_kind = "tight"

    def supports(self, epsilon, delta, budget):
        if delta == 0:
            return "δ = 0: pure composition of the B queries is already tight (no tight variant)"
        if self.settings["beta_rule"] != "standard":
            return "the tight calibration replaces the standard rule (subsample_aggregate.beta_rule: standard)"
        return None


def private_vote_accuracy(counts: np.ndarray, y_eval: np.ndarray, cells: list[Cell], beta_rule: str,
                          ctx: Context, calibration: str = "source") -> list[dict]:
    """Each cell's accuracy when every query answers with the exponential mechanism on its vote counts
    (β from (ε, δ, B) by :func:`dpbench.privacy.vote_exponential_mechanism_beta`); ``epsilon_achieved`` is
    the true ε of the B queries (equal to the cell's ε for the standard rule, 2ε for the paper's at δ = 0).
    ``calibration="tight"``: β = ε*/2 with ε* the optimal-composition step (:class:`SubsampleAggregateTight`)."""
    out = []
    for cell in cells:
        if calibration == "tight":
            beta, comp = optimal_pure_step_epsilon(cell.epsilon, cell.budget, cell.delta) / 2.0, "optimal"
            achieved = optimal_pure_composition_epsilon(2.0 * beta, cell.budget, cell.delta)
        else:
            beta, comp = vote_exponential_mechanism_beta(cell.epsilon, cell.delta, cell.budget, beta_rule)
            achieved = vote_exponential_mechanism_epsilon(beta, cell.delta, cell.budget)
        labels = exponential_mechanism(ctx.rng(cell.stream_key), counts.astype(float), beta)
        out.append({"accuracy": float(np.mean(labels == y_eval)), "noise_kind": "exponential",
                    "noise_scale": beta, "composition": comp, "epsilon_achieved": achieved})
    return out
