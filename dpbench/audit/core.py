"""Run one audit cell: (method, claimed ε, variant = "correct" or a twin, seed) → ε lower bound.

A cell's randomness comes from ``numpy.random.SeedSequence(config seed, cell key)`` (:mod:`dpbench.rng`): the
noise of the releases and the random split of the trials are independent streams of the same key.

Before the releases, every cell runs the **generator probe** (:func:`generator_probe`): the method's release on
the pair, :data:`PROBE_TRIALS` trials per side, twice, with two independent generators. A release that ignores
the generator it is given (noise from a fixed seed) gives the same outputs both times. The audits call
vectorised releases — ``n_runs`` trainings or ``size`` noise draws in one call, each such function a public API
of the package — and inside one call a fixed-seed release still draws independent values, so the likelihood-ratio
statistic alone would not see it (an independent review found such a twin passing in 1 of 4 cells). Two calls
whose outputs coincide while D and D′ give different outputs make the release a deterministic function of the
dataset on this pair: ε = ∞ (an event of probability 0 for a release with a continuous output; for a discrete
one, 2 × :data:`PROBE_TRIALS` values coinciding). The cell then records ``eps_hat = inf`` and skips the
releases. The twin :data:`FIXED_SEED` of every method is the method given a generator seeded by a constant at
every call — exactly what a release that seeds its own generator does.

**Several pairs.** A method whose audit builds more than one neighbouring pair (:attr:`MethodAudit.pairs`: the
calibration's worst case first, then e.g. a label flip, a record on the boundary of the domain, a pair that
attains the sensitivity in many coordinates) runs a **pilot** first (:func:`choose_pair`): ``pilot_fraction`` of
the cell's trials per side on every pair, each with its own random streams, and the pair whose releases the
statistic separates most (the mean of the statistic on D minus its mean on D′: for the exact log-likelihood ratio
these audits compute, an estimate of the pair's symmetrised KL divergence; ties: the earlier pair) is the one the
cell audits with its full trials. The mean uses every pilot trial, so it ranks pairs reliably from a few hundred
trials, where a tail bound would not (a Clopper–Pearson pilot of 500 trials picked the weaker pair of bolt-on's
×0.5 twin, which then went uncaught). The pilot only chooses, on
releases the bound never sees, so the bound needs no multiple-testing correction (the pilot-then-test design of
:mod:`dpbench.audit.user`); the chosen pair's releases use the cell's own noise stream, so a cell that keeps the
worst-case pair gives exactly the ε̂ of a one-pair audit. The same procedure runs for the correct
implementation and every twin: the audit does not know which one it is given."""

from __future__ import annotations

import math
import time

import numpy as np

from dpbench.audit import stats as S
from dpbench.audit.methods import REGISTRY, MethodAudit
from dpbench.rng import generator

CORRECT = "correct"
FIXED_SEED = "bug_fixed_seed"
"""The twin of every registered method: each call of its release draws from a generator seeded with the
constant :data:`FIXED_SEED_VALUE` instead of the one it is given (the textbook bug ``rng =
np.random.default_rng(0)`` inside a release)."""
FIXED_SEED_VALUE = 0
GENERIC_TWINS = (FIXED_SEED,)
PROBE_TRIALS = 32
"""Trials per side of each of the two runs of :func:`generator_probe`."""
PILOT_MIN_TRIALS = 100
"""The fewest pilot trials per side and pair (:func:`choose_pair`)."""


def method(name: str) -> MethodAudit:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown audit method {name!r}; known: {sorted(REGISTRY)}") from None


def twins(name: str) -> tuple[str, ...]:
    """The broken twins audited beside ``name``: its own (:attr:`MethodAudit.twins`) and :data:`GENERIC_TWINS`."""
    return method(name).twins + tuple(t for t in GENERIC_TWINS if t not in method(name).twins)


def variants(name: str) -> tuple[str, ...]:
    return (CORRECT,) + twins(name)


def audited_variants(config: dict, name: str) -> tuple[str, ...]:
    """The variants the audit study runs for ``name``: the correct implementation and the twins listed in
    ``studies.audit.methods.<name>.twins`` (default: every twin, :func:`twins`), in :func:`twins`' order."""
    chosen = ((config["studies"]["audit"].get("methods") or {}).get(name) or {}).get("twins")
    return (CORRECT,) + (twins(name) if chosen is None else tuple(t for t in twins(name) if t in chosen))


def _release(m: MethodAudit, config: dict, epsilon: float, variant: str, trials: int, rng,
             pair: str | None = None) -> dict:
    """``m``'s audit run of ``variant`` with ``rng`` on ``pair`` (default: its first, the calibration's worst
    case); the fixed-seed twin (:data:`FIXED_SEED`) is the correct release drawing from
    ``default_rng(FIXED_SEED_VALUE)`` whatever generator it is given, as the bug does."""
    kw = {} if len(m.pairs) == 1 else {"pair": pair or m.pairs[0]}
    if variant == FIXED_SEED:
        return m.run(config, float(epsilon), CORRECT, trials, np.random.default_rng(FIXED_SEED_VALUE), **kw)
    return m.run(config, float(epsilon), variant, trials, rng, **kw)


def pilot_trials(config: dict, trials: int) -> int:
    """Pilot trials per side and pair: ``studies.audit.pilot_fraction`` (default 0.1) of the cell's ``trials``,
    at least :data:`PILOT_MIN_TRIALS`."""
    frac = float(config["studies"]["audit"].get("pilot_fraction", 0.1))
    return max(PILOT_MIN_TRIALS, int(math.ceil(frac * int(trials))))


def choose_pair(config: dict, name: str, epsilon: float, variant: str, trials: int, key: str
                ) -> tuple[str, dict]:
    """The pair a cell of ``name`` audits (module docstring, "Several pairs"): the pilot separation (mean of the
    statistic on D minus on D′ over :func:`pilot_trials` releases per side, its own stream ``key +
    "/pilot/<pair>"``) of every pair of :attr:`MethodAudit.pairs`; the largest wins, ties go to the earlier pair.
    Returns the pair and ``{pair: pilot separation}`` (empty for a one-pair method)."""
    m = method(name)
    if len(m.pairs) == 1:
        return m.pairs[0], {}
    k, seed = pilot_trials(config, trials), int(config["seed"])
    scores = {}
    for p in m.pairs:
        out = _release(m, config, epsilon, variant, k, generator(seed, f"{key}/pilot/{p}"), pair=p)
        scores[p] = float(np.mean(out["s_d"]) - np.mean(out["s_dp"]))
    best = max(scores.values())
    return next(p for p in m.pairs if scores[p] == best), scores


def generator_probe(config: dict, name: str, epsilon: float, variant: str, key: str) -> dict:
    """Does the release of ``name`` (``variant``) depend on the generator it is given? Two runs of
    :data:`PROBE_TRIALS` trials per side with the independent generators ``key + "/probe1"`` and ``"/probe2"``
    (for :data:`FIXED_SEED`, each run gets ``default_rng(FIXED_SEED_VALUE)``, as the bug does). Returns
    ``generator_independent`` (both sides' outputs identical in the two runs while D's differ from D′'s: the
    release is a deterministic function of the dataset on this pair, ε = ∞) and the probe's ``cpu_s``."""
    m = method(name)
    c0 = time.process_time()
    a, b = (_release(m, config, epsilon, variant, PROBE_TRIALS, generator(int(config["seed"]), f"{key}/probe{i}"))
            for i in (1, 2))
    same = np.array_equal(a["s_d"], b["s_d"]) and np.array_equal(a["s_dp"], b["s_dp"])
    separates = not np.array_equal(a["s_d"], a["s_dp"])
    return {"generator_independent": bool(same and separates), "delta": float(a["delta"]),
            "cpu_s": time.process_time() - c0}


def trials_for(config: dict, name: str, variant: str = CORRECT, epsilon: float | None = None) -> int:
    """Trials per side of ``name``'s audit at claimed ``epsilon``: ``studies.audit.methods.<name>.twin_trials.
    <variant>`` (a number, or a map claimed ε → number where the twin needs more trials at some ε only: a map
    without this ε, or no ε given, falls through), else ``….<name>.trials``, else ``studies.audit.trials``."""
    a = config["studies"]["audit"]
    m = (a.get("methods") or {}).get(name, {})
    base = int(m.get("trials", a["trials"]))
    t = (m.get("twin_trials") or {}).get(variant)
    if isinstance(t, dict):
        t = next((v for k, v in t.items() if epsilon is not None and same_epsilon(k, epsilon)), None)
    return base if t is None else int(t)


def same_epsilon(key, epsilon) -> bool:
    """Is ``key`` of a per-ε map (a string once the config is read: ``"1.0"``) the claimed ``epsilon``?"""
    try:
        return float(key) == float(epsilon)
    except (TypeError, ValueError):
        return False


def correct_family_size(config: dict) -> int:
    """The number of audits of correct implementations in the audit study of ``config``: methods (``series``,
    default every registered one) × claimed ε × ``seeds_correct``."""
    a = config["studies"]["audit"]
    methods = a.get("series") or list(REGISTRY)
    return len(methods) * len(a["epsilons"]) * int(a.get("seeds_correct", a["seeds"]))


def alpha_for(config: dict, variant: str) -> float:
    """Confidence level of one cell's bound. A twin is caught at ``alpha`` (its bound exceeds ε with confidence
    1 − α). A correct implementation is tested at α/m, m = :func:`correct_family_size` (Bonferroni): the whole
    audit raises no false PRIVACY BUG with probability ≥ 1 − α even where the pair is tight (ε_pair = ε, e.g. the
    clipped mean, whose 95 % bound would exceed ε in up to 5 % of audits: 1 of 20 seeds at ε = 4, measured)."""
    alpha = float(config["studies"]["audit"]["alpha"])
    return alpha if variant != CORRECT else alpha / correct_family_size(config)


def cell_key(name: str, epsilon: float, variant: str, seed_index: int, trials: int) -> str:
    return f"audit/{name}/eps={float(epsilon)!r}/{variant}/trials={int(trials)}/seed={int(seed_index)}"


def run_cell(config: dict, name: str, epsilon: float, variant: str = CORRECT, seed_index: int = 0,
             trials: int | None = None) -> dict:
    """Audit ``name`` at claimed replace-one ε: statistics of the releases on its worst-case pair (for a method
    with several pairs, the one the pilot of :func:`choose_pair` picks: column ``pair``, the pilot separations in
    ``pilot``), then the
    split-half Clopper–Pearson bound (:func:`dpbench.audit.stats.epsilon_lower_bound_split`, ``eps_lower``) and,
    where the method declares its release a composition of Gaussian steps (``gaussian_composition``; its run
    then returns ``gdp``; asking for it otherwise is a ValueError), the μ-GDP bound
    from the AUC (:func:`dpbench.audit.stats.gdp_epsilon_lower_bound`, ``eps_lower_gdp``; NaN elsewhere).
    ``eps_hat`` = the larger of the two; ``fires``: ``eps_hat`` exceeds the claimed ε. For the correct
    implementation a firing audit is a PRIVACY BUG; for a twin, firing = caught. Confidence: :func:`alpha_for`.
    First the generator probe (module docstring): a release that ignores its generator gets ``eps_hat = inf``
    (``generator_independent``) without the releases."""
    m = method(name)
    if variant != CORRECT and variant not in twins(name):
        raise ValueError(f"{name} has no twin {variant!r}; twins: {list(twins(name))}")
    trials = int(trials if trials is not None else trials_for(config, name, variant, epsilon))
    alpha = alpha_for(config, variant)
    key = cell_key(name, epsilon, variant, seed_index, trials)
    t0, c0 = time.perf_counter(), time.process_time()
    probe = generator_probe(config, name, epsilon, variant, key)
    if probe["generator_independent"]:
        return _deterministic_row(m, name, float(epsilon), variant, seed_index, alpha, probe["delta"], t0, c0)
    pair, pilot = choose_pair(config, name, float(epsilon), variant, trials, key)
    out = _release(m, config, epsilon, variant, trials, generator(int(config["seed"]), key + "/noise"), pair=pair)
    b = S.epsilon_lower_bound_split(out["s_d"], out["s_dp"], out["delta"], generator(int(config["seed"]), key + "/split"),
                                    alpha)
    if out.get("gdp") and not m.gaussian_composition:
        raise ValueError(f"audit {name}: its run asks for the μ-GDP bound (gdp=True), but the method does not declare "
                         f"gaussian_composition=True. That bound (from the AUC, Dong, Roth & Su 2022) holds only "
                         f"for a composition of (subsampled) Gaussian steps; on a pure-ε mechanism it overstates ε "
                         f"(the Laplace mechanism gets ε̂ ≈ 3.4 at ε = 1, 14.6 at ε = 4: a false privacy bug). Declare it only for "
                         f"such a mechanism, else leave gdp out (the Clopper–Pearson bound needs no model)")
    g = (S.gdp_epsilon_lower_bound(out["s_d"], out["s_dp"], out["delta"], alpha) if out.get("gdp")
         else {"eps_lower": math.nan, "auc": math.nan, "mu_lower": math.nan})
    eps = float(epsilon)
    eps_hat = float(np.nanmax([b["eps_lower"], g["eps_lower"]]))
    return {"method": name, "label": m.label, "study": m.study, "variant": variant, "claimed_epsilon": eps,
            "delta": float(out["delta"]), "trials": trials, "seed_index": int(seed_index), "alpha": alpha,
            "eps_lower": float(b["eps_lower"]), "eps_point": float(b["eps_point"]),
            "eps_pair": float(out.get("eps_pair", math.nan)),
            "eps_pair_variant": float(out.get("eps_pair_variant", math.nan)), "fraction": eps_hat / eps,
            "eps_lower_gdp": float(g["eps_lower"]), "auc": float(g["auc"]), "mu_lower": float(g["mu_lower"]),
            "eps_hat": eps_hat, "fires": bool(eps_hat > eps + 1e-12), "generator_independent": False, "tp": b["tp"], "n_pos": b["n_pos"], "fp": b["fp"],
            "n_neg": b["n_neg"], "threshold": b["threshold"], "noise_scale": float(out.get("noise_scale", math.nan)),
            "post_training_noise": m.post_training_noise, "pair": pair, "pairs": len(m.pairs),
            "pilot": format_pilot(pilot), "runtime_s": time.perf_counter() - t0,
            "cpu_s": time.process_time() - c0}


def format_pilot(scores: dict) -> str:
    """The pilot separations of a cell as one string, ``"saturation=0.173 label_flip=0.0631"`` ("" for one pair)."""
    return " ".join(f"{p}={v:.4g}" for p, v in scores.items())


def _deterministic_row(m: MethodAudit, name: str, eps: float, variant: str, seed_index: int, alpha: float,
                       delta: float, t0: float, c0: float) -> dict:
    """The row of a cell whose release ignores its generator (:func:`generator_probe`): ε̂ = ∞, no releases."""
    nan = math.nan
    return {"method": name, "label": m.label, "study": m.study, "variant": variant, "claimed_epsilon": eps,
            "delta": delta, "trials": 2 * PROBE_TRIALS, "seed_index": int(seed_index),
            "alpha": alpha, "eps_lower": math.inf, "eps_point": math.inf, "eps_pair": nan, "eps_pair_variant": nan,
            "fraction": math.inf, "eps_lower_gdp": nan, "auc": nan, "mu_lower": nan, "eps_hat": math.inf,
            "fires": True, "generator_independent": True, "tp": 0, "n_pos": 0, "fp": 0, "n_neg": 0,
            "threshold": nan, "noise_scale": nan, "post_training_noise": m.post_training_noise,
            "pair": m.pairs[0], "pairs": len(m.pairs), "pilot": "",
            "runtime_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}
