"""Audit a mechanism you wrote: ``audit_mechanism(release, epsilon, domain=Domain(...))`` or
``dpbench audit --mechanism my_module:release --epsilon 1`` (docs/studies/audit.md, "Auditing your own mechanism").

The researcher supplies ``release(dataset, rng) -> output`` — the dataset an ``(n, d)`` array of records, ``rng`` a
``numpy.random.Generator`` from which the mechanism must draw all its randomness, the output a number, an integer
(a category, an index) or a 1-D array — and the record domain (:class:`Domain`: n records of d values in
[lo, hi], optionally integers; ``clips=True`` if the mechanism promises to accept any record and clip or project it
into the domain). dpbench then

1. builds **neighbouring pairs** under replace-one (:func:`candidate_pairs`): datasets filled with the domain's
   low, middle or high value whose last record is replaced by another corner of the domain (the pairs where
   sensitivities are reached), with out-of-domain replacements when ``clips`` (a clip applied too late is then
   visible), plus random pairs;
2. runs a **pilot** of ``pilot`` releases per side on every pair and keeps the pair (and statistic) with the
   largest estimated ε;
3. on that pair, ``trials`` **fresh** releases per side, each a separate call of ``release`` with its own
   generator (never a vectorised shortcut: a fixed seed inside the mechanism is then visible);
4. the **statistic**: the exact log-likelihood ratio where the researcher also gives ``log_density(dataset,
   output)``; otherwise a score learned on the first third of the trials (for a scalar or discrete output the
   binned log-likelihood ratio of the two sides' outputs; for a vector, its projection on the difference of the
   two sides' means, then binned);
5. the **bound**: the split-half Clopper–Pearson lower bound on ε (:func:`dpbench.audit.stats.epsilon_lower_bound_split`)
   from the remaining trials, at confidence 1 − α. The pilot only chooses the pair, on trials the bound never
   sees, so no multiple-testing correction is needed. ``fires``: the bound exceeds the claimed ε — the
   mechanism is not ε-DP (up to δ) on that pair, with confidence 1 − α.

What it cannot show: a violation only on pairs outside the candidates, or one too small for the trials (the
bound's power is about ln of the trials); a mechanism that passes is not thereby proved private.
"""

from __future__ import annotations

import importlib
import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from dpbench.audit import stats as S


@dataclass(frozen=True)
class Domain:
    """The records a dataset may hold: ``n`` records of ``d`` values, each in [lo, hi] (integers if ``integer``).
    ``clips``: the mechanism accepts any record and clips or projects it into the domain, so the audit also
    replaces a record by one far outside (10 ranges beyond each end)."""

    n: int = 8
    d: int = 1
    lo: float = 0.0
    hi: float = 1.0
    integer: bool = False
    clips: bool = False

    def __post_init__(self):
        if self.n < 1 or self.d < 1:
            raise ValueError(f"the domain needs n >= 1 records of d >= 1 values, got n={self.n}, d={self.d}")
        if not (math.isfinite(self.lo) and math.isfinite(self.hi) and self.lo < self.hi):
            raise ValueError(f"the domain needs finite lo < hi, got [{self.lo}, {self.hi}]")


@dataclass
class Pair:
    name: str
    D: np.ndarray
    Dp: np.ndarray


@dataclass
class UserAuditResult:
    epsilon: float
    delta: float
    eps_lower: float
    eps_point: float
    fires: bool
    pair: str
    statistic: str
    trials: int
    alpha: float
    pilot: dict = field(default_factory=dict)     # pair name -> (pilot ε lower bound, point estimate)
    runtime_s: float = 0.0

    def line(self) -> str:
        verdict = "PRIVACY BUG" if self.fires else "no violation found"
        return (f"claimed ε {self.epsilon:g} (δ {self.delta:g}): ε̂ {self.eps_lower:.3f} (95 % lower bound; point "
                f"{self.eps_point:.3f}) on pair '{self.pair}', statistic {self.statistic}, {self.trials} releases "
                f"per side: {verdict}")


def candidate_pairs(domain: Domain, rng: np.random.Generator, n_random: int = 4) -> list[Pair]:
    """Replace-one pairs: base datasets filled with lo, the middle or hi, or spread evenly over the domain (every
    category present); the last record replaced by each other corner of the domain (both directions), by far-out
    records when ``domain.clips``, and ``n_random`` random pairs."""
    lo, hi, d, n = float(domain.lo), float(domain.hi), int(domain.d), int(domain.n)
    mid = (lo + hi) / 2
    if domain.integer:
        mid = float(math.floor(mid))
    values = {"lo": lo, "mid": mid, "hi": hi}
    far = {"far below": lo - 10 * (hi - lo), "far above": hi + 10 * (hi - lo)} if domain.clips else {}
    spread = np.linspace(lo, hi, n)
    if domain.integer:
        spread = lo + np.arange(n) % int(hi - lo + 1)
    bases = {**{k: np.full((n, d), v) for k, v in values.items()},
             "spread": np.repeat(spread[:, None], d, axis=1)}   # every value present: balanced histograms
    out: list[Pair] = []
    for base_name, D0 in bases.items():
        base = values.get(base_name, mid)
        for a_name, a in values.items():
            for b_name, b in {**values, **far}.items():
                if a_name == b_name or (b_name in far and a_name != base_name and base_name != "spread"):
                    continue
                D, Dp = D0.copy(), D0.copy()
                D[-1], Dp[-1] = a, b
                out.append(Pair(f"records = {base_name}, last {a_name} vs {b_name}", D, Dp))
        if d > 1:   # the last record differs in one coordinate only (per-coordinate sensitivities)
            D, Dp = D0.copy(), D0.copy()
            D[-1, 0] = hi if base != hi else lo
            out.append(Pair(f"records = {base_name}, last one coordinate moved", D, Dp))
    for k in range(n_random):
        D = rng.uniform(lo, hi, size=(n, d))
        if domain.integer:
            D = np.floor(rng.uniform(lo, hi + 1, size=(n, d))).clip(lo, hi)
        Dp = D.copy()
        Dp[-1] = rng.choice([lo, hi], size=d)
        out.append(Pair(f"random #{k}", D, Dp))
    return out


def _releases(release: Callable, data: np.ndarray, trials: int, seed: int, key: tuple) -> list:
    """``trials`` separate calls of ``release`` on a fresh copy of ``data``, each with its own generator."""
    out = []
    for t in range(int(trials)):
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(*key, t)))
        out.append(release(data.copy(), rng))
    return out


def _as_matrix(outputs: list) -> np.ndarray:
    a = np.asarray([np.asarray(o, dtype=np.float64).ravel() for o in outputs])
    if a.ndim != 2 or not np.isfinite(a).all():
        raise ValueError("the mechanism's outputs must be finite numbers or 1-D arrays of one length")
    return a


def learned_score(learn_d: np.ndarray, learn_dp: np.ndarray, bins: int = 40) -> tuple[Callable, str]:
    """A statistic learned from outputs of the two sides (rows = releases): vectors are projected on the
    difference of the sides' means; then the binned log-likelihood ratio (each distinct value its own bin when
    there are few, else quantile bins), larger = "D"."""
    if learn_d.shape[1] > 1:
        w = learn_d.mean(axis=0) - learn_dp.mean(axis=0)
        if not np.any(w):
            w = np.ones(learn_d.shape[1])
        project, what = (lambda a, w=w: a @ w), "binned likelihood ratio of the projection on the mean difference"
    else:
        project, what = (lambda a: a[:, 0]), "binned likelihood ratio of the output"
    pd_, pdp = project(learn_d), project(learn_dp)
    pooled = np.r_[pd_, pdp]
    distinct = np.unique(pooled)
    if distinct.size <= 64:
        edges = (distinct[:-1] + distinct[1:]) / 2
    else:
        edges = np.unique(np.quantile(pooled, np.linspace(0, 1, bins + 1)[1:-1]))
    cd = np.bincount(np.searchsorted(edges, pd_), minlength=edges.size + 1) + 0.5
    cdp = np.bincount(np.searchsorted(edges, pdp), minlength=edges.size + 1) + 0.5
    llr = np.log(cd / cd.sum()) - np.log(cdp / cdp.sum())
    return (lambda a: llr[np.searchsorted(edges, project(a))]), what


def _bound(out_d, out_dp, delta, rng, alpha, log_density, D, Dp):
    """(bound dict, statistic name) for the releases of one pair."""
    if log_density is not None:
        s_d = np.array([log_density(D, o) - log_density(Dp, o) for o in out_d], dtype=np.float64)
        s_dp = np.array([log_density(D, o) - log_density(Dp, o) for o in out_dp], dtype=np.float64)
        s_d, s_dp = np.nan_to_num(s_d, posinf=1e300, neginf=-1e300), np.nan_to_num(s_dp, posinf=1e300, neginf=-1e300)
        return S.epsilon_lower_bound_split(s_d, s_dp, delta, rng, alpha), "exact log-likelihood ratio"
    a_d, a_dp = _as_matrix(out_d), _as_matrix(out_dp)
    k = a_d.shape[0] // 3
    score, what = learned_score(a_d[:k], a_dp[:k])
    return S.epsilon_lower_bound_split(score(a_d[k:]), score(a_dp[k:]), delta, rng, alpha), what


def audit_mechanism(release: Callable, epsilon: float, delta: float = 0.0, *, domain: Domain = Domain(),
                    trials: int = 20_000, pilot: int = 1_000, log_density: Callable | None = None,
                    seed: int = 0, alpha: float = 0.05, pairs: list[Pair] | None = None) -> UserAuditResult:
    """Audit ``release`` at the claimed (ε, δ) (module docstring); ``pairs``: your own neighbouring pairs instead
    of :func:`candidate_pairs`."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}")
    if not 0 <= delta < 1:
        raise ValueError(f"delta must lie in [0, 1), got {delta!r}")
    if trials < 30 or pilot < 30:
        raise ValueError("trials and pilot need at least 30 releases per side")
    t0 = time.perf_counter()
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
    pairs = candidate_pairs(domain, rng) if pairs is None else list(pairs)
    if not pairs:
        raise ValueError("no neighbouring pairs to audit")
    scores = {}
    for i, p in enumerate(pairs):
        out_d = _releases(release, p.D, pilot, seed, (1, i, 0))
        out_dp = _releases(release, p.Dp, pilot, seed, (1, i, 1))
        b, _ = _bound(out_d, out_dp, delta, rng, alpha, log_density, p.D, p.Dp)
        scores[p.name] = (float(b["eps_lower"]), float(b["eps_point"]))   # the bound first: a point estimate
    best = max(range(len(pairs)), key=lambda i: scores[pairs[i].name])  # from a few counts can be infinite
    p = pairs[best]
    out_d = _releases(release, p.D, trials, seed, (2, best, 0))       # fresh releases: the pilot chose the pair
    out_dp = _releases(release, p.Dp, trials, seed, (2, best, 1))
    b, what = _bound(out_d, out_dp, delta, rng, alpha, log_density, p.D, p.Dp)
    eps_lower = float(b["eps_lower"])
    return UserAuditResult(epsilon=float(epsilon), delta=float(delta), eps_lower=eps_lower,
                           eps_point=float(b["eps_point"]), fires=bool(eps_lower > epsilon + 1e-12), pair=p.name,
                           statistic=what, trials=int(trials), alpha=alpha, pilot=scores,
                           runtime_s=time.perf_counter() - t0)


def load_function(spec: str) -> Callable:
    """``module:function`` or ``path/to/file.py:function`` → the function (for the CLI)."""
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name:
        raise ValueError(f"--mechanism/--density takes MODULE:FUNCTION or FILE.py:FUNCTION, got {spec!r}")
    if target.endswith(".py"):
        import importlib.util
        from pathlib import Path

        path = Path(target).expanduser().resolve()
        if not path.is_file():
            raise ValueError(f"no file {path}")
        mod_spec = importlib.util.spec_from_file_location(f"dpbench_user_mechanism_{path.stem}", path)
        module = importlib.util.module_from_spec(mod_spec)
        mod_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ValueError(f"{target} has no function {name!r}")
    return fn
