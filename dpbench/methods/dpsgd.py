"""DP-SGD for softmax regression (private training; δ > 0 only) — vdm2020 §2.3, Eq. 4.

Global clipping of each full per-example gradient to ν, Gaussian noise N(0, σ²ν²I) on the clipped sum,
Poisson sampling with q = batch/N for ceil(epochs·N/batch) steps (what the accountant assumes; shuffling
is available and labelled). σ is calibrated to (ε, δ) by ``dpbench.privacy.calibrate_dpsgd_noise`` with
the configured accountant and RDP→DP conversion. No L2 regularisation (paper L162).

Repetitions are trained in fixed blocks of ``REP_BLOCK`` runs vectorised together; the block's random
stream is keyed by its content (method, parameters, ε, δ, block index), so results do not depend on the
number of workers.
"""

from __future__ import annotations


from dpbench.learn import accuracy_many, dpsgd_softmax, dpsgd_steps
from dpbench.methods.base import REGISTRY, Cell, Context, Method, Problem
from dpbench.privacy import calibrate_dpsgd_noise
from dpbench.store import content_key

REP_BLOCK = 10


def clip_norm(value: float, batch_size: int, scale: str) -> float:
    """The clip ν of Eq. 4 (on the full per-example gradient) from a configured/tuned value.

    ``per_example``: the value is ν. ``batch_mean``: the value clips the per-example gradient of the
    batch-MEAN loss, g_n/|𝓑| — the [CODE] scale of the CV grid 5e-4…5e-1 (spec §2.3) — so ν = value·|𝓑|
    (exact for Eq. 4: clipping g_n/|𝓑| to c is clipping g_n to c|𝓑|, and the noise σc on the mean is σc|𝓑|
    on the sum)."""
    if scale == "per_example":
        return value
    if scale == "batch_mean":
        return value * batch_size
    raise ValueError(f"clip_scale must be 'per_example' or 'batch_mean', got {scale!r}")



@REGISTRY.register
class DPSGD(Method):
    name = "dpsgd"
    label = "DP-SGD"
    kind = "training"
    depends_on = ("epsilon", "delta", "rep")
    tuned = "clip"

    def supports(self, epsilon, delta, budget):
        return None if delta > 0 else "DP-SGD does not support delta = 0 (paper L170)"

    def cell_params(self, problem, tuned, epsilon, delta):
        s = self.settings
        return {"clip": clip_norm(float(tuned), s["batch_size"], s.get("clip_scale", "per_example")),
                "batch_size": s["batch_size"], "epochs": s["epochs"],
                "learning_rate": s["learning_rate"], "sampling": s["sampling"],
                "accountant": s["accountant"], "conversion": s["conversion"]}

    def group_key(self, cell: Cell):
        return (cell.problem, cell.params, cell.epsilon, cell.delta, cell.rep // REP_BLOCK)

    def calibration(self, problem: Problem, cell: Cell):
        """σ for (ε, δ) with the configured accountant, q = batch/N and the learner's own step count."""
        p = cell.param
        n = problem.n_train
        steps = dpsgd_steps(n, p["batch_size"], p["epochs"], p["sampling"])
        return calibrate_dpsgd_noise(cell.epsilon, cell.delta, min(1.0, p["batch_size"] / n), steps,
                                     accountant=p["accountant"],
                                     conversion=p["conversion"] if p["accountant"] == "rdp" else None)

    @staticmethod
    def record(accuracy: float, cal, p: dict) -> dict:
        return {"accuracy": float(accuracy), "noise_kind": "gaussian", "noise_scale": cal.noise_multiplier,
                "composition": "rdp" if p["accountant"] == "rdp" else "pld",
                "accountant": f"{p['accountant']}/{p['conversion'] if p['accountant'] == 'rdp' else 'pld'}",
                "epsilon_achieved": cal.epsilon, "sampling": p["sampling"]}

    def run_group(self, problem: Problem, cells: list[Cell], ctx: Context) -> list[dict]:
        c0 = cells[0]
        p = c0.param
        cal = self.calibration(problem, c0)
        block = c0.rep // REP_BLOCK
        block_key = content_key({"dpsgd-block": [c0.problem, list(map(list, c0.params)), c0.epsilon, c0.delta, block]})
        reps = list(range(block * REP_BLOCK, (block + 1) * REP_BLOCK))
        thetas = dpsgd_softmax(problem.X_train, problem.y_train, problem.n_classes,
                               noise_multiplier=cal.noise_multiplier, clip=p["clip"], batch_size=p["batch_size"],
                               epochs=p["epochs"], learning_rate=p["learning_rate"], rng=ctx.rng(block_key),
                               n_runs=len(reps), sampling=p["sampling"])
        accs = accuracy_many(thetas, problem.X_eval, problem.y_eval)
        return [self.record(accs[reps.index(cell.rep)], cal, p) for cell in cells]
