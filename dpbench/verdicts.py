"""Three-valued verdicts of anchor checks (a source's claim tested on the results): *holds*, *does not hold*
or *undecided* — with the reason for "undecided" — shared by every study, so a reader can trust a green row.

Rules, the same in every study:

- **never a vacuous pass**: a claim about "every point" or "some point" checked on an empty set is undecided
  (:data:`EMPTY`); a claim that needs several informative points (e.g. a trend) gets :data:`TOO_FEW` when the
  grid has fewer;
- **NaN is never a verdict**: a check whose measured value is NaN is undecided (:data:`NAN`), unless the check
  returned an explicit :class:`Verdict` that says why a NaN is decisive (e.g. "no crossover on a grid that spans
  the claimed crossover");
- **differences are decided beyond two standard errors** (:data:`Z`): a difference of means counts only when it
  is beyond ``Z`` standard errors of that difference; one within them is undecided (:data:`WIDE`), see
  :func:`compare`, :func:`all_of`, :func:`best_of`; estimates over repetitions (:class:`Est`, :func:`estimate`,
  :func:`paired`, :func:`ratio`) are decided by :func:`exceeds` (above a value or another estimate) and
  :func:`within` (inside a tolerance), and a single repetition (standard error undefined) is undecided
  (:data:`TOO_FEW`), never a pass; a tie within ``Z`` standard errors is undecided, never counted as a pass;
- **reduced grids are marked**: results computed on a configuration that is not the study's full configuration
  (the repository's ``config.yaml``) are "reduced grid: indicative only" on every row and page
  (:func:`reduced_grid`).

A study builds its rows with :func:`adder` (``add(claim, figure, statement, measured, value, passed)``, where
``passed`` is a bool, ``None`` (undecided) or a :class:`Verdict`); each row carries ``verdict`` (one of
:data:`STATUSES`), ``reason`` and, for older readers, ``passed`` (True only when the verdict is "holds").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, NamedTuple

HOLDS = "holds"
FAILS = "does not hold"
UNDECIDED = "undecided"
STATUSES = (HOLDS, FAILS, UNDECIDED)

# reasons for "undecided"
TOO_FEW = "too few informative points"
EMPTY = "empty set"
NAN = "NaN measurement"
WIDE = "interval too wide"

#: a difference counts when it is beyond Z standard errors
Z = 2.0

REDUCED_LABEL = "reduced grid: indicative only"

COLUMNS = ["study", "claim", "figure", "statement", "measured", "value", "verdict", "reason", "passed"]


@dataclass(frozen=True)
class Verdict:
    """One verdict: ``status`` in :data:`STATUSES`; ``reason`` says why it is undecided (or adds detail)."""

    status: str
    reason: str = ""

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"verdict status must be one of {STATUSES}, got {self.status!r}")
        if self.status == UNDECIDED and not self.reason:
            raise ValueError("an undecided verdict needs a reason")

    def __bool__(self):  # a Verdict used as a bool is a bug: "undecided" is neither True nor False
        raise TypeError("a Verdict has three values; compare .status with HOLDS/FAILS/UNDECIDED")

    @property
    def holds(self) -> bool:
        return self.status == HOLDS

    @property
    def decided(self) -> bool:
        return self.status != UNDECIDED


def holds(reason: str = "") -> Verdict:
    return Verdict(HOLDS, reason)


def fails(reason: str = "") -> Verdict:
    return Verdict(FAILS, reason)


def undecided(reason: str) -> Verdict:
    return Verdict(UNDECIDED, reason)


def _isnan(x) -> bool:
    try:
        return x is None or math.isnan(float(x))
    except (TypeError, ValueError):
        return False


def verdict_of(passed, value=float("nan")) -> Verdict:
    """The verdict of a check that returned ``passed`` (bool, None or :class:`Verdict`) for measured ``value``.
    An explicit Verdict is kept; None is undecided; a bool computed from a NaN value is undecided (:data:`NAN`)."""
    if isinstance(passed, Verdict):
        return passed
    if passed is None or _isnan(passed):
        return undecided(NAN)
    if _isnan(value):
        return undecided(NAN)
    return holds() if bool(passed) else fails()


def row(study: str, claim: str, figure: str, statement: str, measured: str, value, passed) -> dict:
    """One anchor-check row (see :data:`COLUMNS`)."""
    v = verdict_of(passed, value)
    val = float("nan") if _isnan(value) else float(value)
    return {"study": study, "claim": claim, "figure": figure, "statement": statement, "measured": measured,
            "value": val, "verdict": v.status, "reason": v.reason, "passed": v.holds}


@dataclass(frozen=True)
class Claim:
    """A source's claim, as data: its ``id``, the ``figure`` it is checked on, the ``section`` of the source that
    makes it, and the ``statement`` — a format string whose fields the check fills in with what it derived (a
    tolerance, a threshold, the mechanism compared)."""

    id: str
    figure: str
    section: str
    statement: str


def claim_table(*claims: Claim) -> dict[str, Claim]:
    """``{id: claim}``; ValueError on a duplicated id."""
    table = {c.id: c for c in claims}
    if len(table) != len(claims):
        raise ValueError(f"duplicated claim ids in {[c.id for c in claims]}")
    return table


def claim_adder(rows: list, study: str, claims: dict[str, Claim]):
    """``add(id, measured, value, passed, instance=None, **fields)`` appending the :func:`row` of claim ``id``:
    its figure and statement (both formatted with ``fields``) come from ``claims``; a claim checked once per
    dataset, method, ... is reported as ``id/instance``."""
    def add(claim_id, measured, value, passed, instance: str | None = None, **fields):
        c = claims[claim_id]
        rid = c.id if instance is None else f"{c.id}/{instance}"
        rows.append(row(study, rid, c.figure.format(**fields), c.statement.format(**fields), measured, value,
                        passed))
    return add


# -- decision helpers ---------------------------------------------------------------------------------------


def compare(diff: float, se: float, z: float = Z) -> int:
    """+1 if ``diff`` > z·se, −1 if ``diff`` < −z·se, 0 (within the interval, or NaN) otherwise. A missing or
    NaN ``se`` counts as 0 (an exact difference)."""
    if _isnan(diff):
        return 0
    s = 0.0 if _isnan(se) else float(se)
    if diff > z * s:
        return 1
    if diff < -z * s:
        return -1
    return 0


def greater(a: float, se_a: float, b: float, se_b: float, z: float = Z) -> Verdict:
    """Is ``a`` > ``b`` beyond z standard errors of the difference? Within them: undecided (:data:`WIDE`)."""
    if _isnan(a) or _isnan(b):
        return undecided(NAN)
    c = compare(a - b, math.hypot(0.0 if _isnan(se_a) else se_a, 0.0 if _isnan(se_b) else se_b), z)
    return holds() if c > 0 else fails() if c < 0 else undecided(WIDE)


def all_of(verdicts: Iterable, what: str = "") -> Verdict:
    """Conjunction: fails if any fails; undecided if the set is empty (:data:`EMPTY`, never a vacuous pass) or any
    is undecided; holds otherwise. Items may be bools or Verdicts."""
    vs = [v if isinstance(v, Verdict) else verdict_of(v, 0.0) for v in verdicts]
    if not vs:
        return undecided(EMPTY + (f" ({what})" if what else ""))
    if any(v.status == FAILS for v in vs):
        return fails()
    und = [v for v in vs if v.status == UNDECIDED]
    if und:
        return undecided(und[0].reason)
    return holds()


def any_of(verdicts: Iterable, what: str = "") -> Verdict:
    """Disjunction: holds if any holds; undecided on an empty set or when the rest are undecided; else fails."""
    vs = [v if isinstance(v, Verdict) else verdict_of(v, 0.0) for v in verdicts]
    if not vs:
        return undecided(EMPTY + (f" ({what})" if what else ""))
    if any(v.holds for v in vs):
        return holds()
    und = [v for v in vs if v.status == UNDECIDED]
    return undecided(und[0].reason) if und else fails()


def fraction(flags: Iterable, threshold: float, min_points: int = 1) -> Verdict:
    """Does the fraction of decided points that hold reach ``threshold``? ``flags`` are bools, None (an
    undecided point) or Verdicts. Fewer than ``min_points`` points: undecided (:data:`TOO_FEW`, or
    :data:`EMPTY` for none). If the undecided points could change the answer, the verdict is undecided
    (:data:`WIDE`)."""
    vs = [v if isinstance(v, Verdict) else verdict_of(v, 0.0) for v in flags]
    n = len(vs)
    if n == 0:
        return undecided(EMPTY)
    if n < min_points:
        return undecided(f"{TOO_FEW} ({n} < {min_points})")
    yes = sum(v.holds for v in vs)
    und = sum(not v.decided for v in vs)
    lo, hi = yes / n, (yes + und) / n
    if lo >= threshold:
        return holds()
    if hi < threshold:
        return fails()
    return undecided(f"{WIDE} ({und} of {n} points within {Z:g} standard errors)")


def best_of(means, ses, z: float = Z):
    """The index label of the largest of ``means`` (pandas Series) if it exceeds the runner-up beyond ``z``
    standard errors of the difference; None when the two are tied within them (or fewer than one finite mean)."""
    m = means.dropna()
    if len(m) == 0:
        return None
    order = m.sort_values(ascending=False)
    if len(order) == 1:
        return order.index[0]
    a, b = order.index[0], order.index[1]
    s = math.hypot(float(ses.get(a, 0.0) or 0.0) if not _isnan(ses.get(a)) else 0.0,
                   float(ses.get(b, 0.0) or 0.0) if not _isnan(ses.get(b)) else 0.0)
    return a if compare(order.iloc[0] - order.iloc[1], s, z) > 0 else None


class Est(NamedTuple):
    """A mean over repetitions with its standard error (std/√n; NaN for n < 2) and n (inf: an exact value)."""

    mean: float
    se: float = 0.0
    n: float = math.inf


def estimate(values) -> Est:
    """:class:`Est` of the finite-or-inf values (NaN dropped): mean, sample std (ddof = 1)/√n, n."""
    v = [float(x) for x in values if not _isnan(x)]
    n = len(v)
    if n == 0:
        return Est(math.nan, math.nan, 0)
    m = math.fsum(v) / n
    if n < 2:
        return Est(m, math.nan, n)
    return Est(m, math.sqrt(math.fsum((x - m) ** 2 for x in v) / (n - 1) / n), n)


def too_few(*ests: Est):
    """Undecided (:data:`TOO_FEW`) when an estimate has fewer than 2 repetitions (standard error undefined), else
    None."""
    n = min(e.n for e in ests) if ests else 0
    if n < 2:
        return undecided(f"{TOO_FEW} ({n:g} repetition{'' if n == 1 else 's'}: standard error undefined)")
    return None


def _est_of(x) -> Est:
    return x if isinstance(x, Est) else Est(float(x))


def exceeds(a, b, z: float = Z) -> Verdict:
    """Is ``a`` above ``b`` beyond z standard errors of the difference? ``a`` and ``b`` are independent
    :class:`Est` or exact numbers; a difference estimated directly (e.g. :func:`paired`) is ``exceeds(d, 0.0)``.
    Fewer than 2 repetitions: undecided (:data:`TOO_FEW`); within z standard errors: undecided (:data:`WIDE`)."""
    a, b = _est_of(a), _est_of(b)
    tf = too_few(a, b)
    return tf if tf is not None else greater(a.mean, a.se, b.mean, b.se, z)


def within(d, tol: float, z: float = Z) -> Verdict:
    """Is the difference ``d`` (an :class:`Est`) inside (−tol, tol) beyond z standard errors? holds: both bounds
    clear by z standard errors; does not hold: |d| above tol beyond them; else undecided (:data:`WIDE`)."""
    d = _est_of(d)
    tf = too_few(d)
    if tf is not None:
        return tf
    if _isnan(d.mean):
        return undecided(NAN)
    if compare(tol - d.mean, d.se, z) > 0 and compare(d.mean + tol, d.se, z) > 0:
        return holds()
    if compare(d.mean - tol, d.se, z) > 0 or compare(-tol - d.mean, d.se, z) > 0:
        return fails()
    return undecided(WIDE)


def _by_key(a, b):
    """Both pandas Series keyed by repetition, unique keys, the same set of keys (a paired design)?"""
    ia, ib = getattr(a, "index", None), getattr(b, "index", None)
    return (ia is not None and ib is not None and ia.is_unique and ib.is_unique and len(ia) == len(ib)
            and set(ia) == set(ib))


def paired(a, b) -> Est:
    """The difference mean(a) − mean(b) of two sets of repetitions (pandas Series). When both are keyed by the
    same repetitions (the same split, permutation, seed: a paired design), its standard error is that of the
    per-repetition differences; otherwise the two means are taken as independent."""
    if _by_key(a, b):
        d = a.astype(float) - b.reindex(a.index).astype(float)
        return estimate(d.to_numpy())
    ea, eb = estimate(list(a)), estimate(list(b))
    return Est(ea.mean - eb.mean, math.hypot(ea.se, eb.se), min(ea.n, eb.n))


def ratio(a, b) -> Est:
    """The ratio r = mean(a)/mean(b) of two sets of repetitions with its delta-method standard error
    SE(ā − r·b̄)/|b̄|: from the per-repetition residuals a_i − r·b_i when both are keyed by the same repetitions
    (paired), else from the two independent means."""
    ea, eb = estimate(list(a)), estimate(list(b))
    n = min(ea.n, eb.n)
    if n == 0 or eb.mean == 0 or _isnan(eb.mean):
        return Est(math.nan, math.nan, n)
    r = ea.mean / eb.mean
    if n < 2:
        return Est(r, math.nan, n)
    if _by_key(a, b):
        res = estimate((a.astype(float) - r * b.reindex(a.index).astype(float)).to_numpy())
        return Est(r, res.se / abs(eb.mean), n)
    return Est(r, math.hypot(ea.se, r * eb.se) / abs(eb.mean), n)


def all_parts(parts: dict) -> Verdict:
    """:func:`all_of` over named parts ({name: Verdict}); the reason names the parts that do not hold or are
    undecided."""
    v = all_of(parts.values())
    if v.status == FAILS:
        return fails("; ".join(k for k, p in parts.items() if p.status == FAILS))
    if v.status == UNDECIDED:
        return undecided("; ".join(f"{p.reason} ({k})" for k, p in parts.items() if p.status == UNDECIDED)
                         if parts else v.reason)
    return v


def parts_text(parts: dict) -> str:
    """"name: status; ..." of named parts."""
    return "; ".join(f"{k}: {p.status}" for k, p in parts.items())


def pm(e: Est, fmt: str = ".4g") -> str:
    """"mean ± se" of an :class:`Est` (or "mean (n = 1)" when the standard error is undefined)."""
    return f"{e.mean:{fmt}} ± {e.se:.2g}" if e.n >= 2 else f"{e.mean:{fmt}} (n = {e.n:g})"


def is_best(name, means, ses, z: float = Z) -> Verdict:
    """Is ``name`` the best of ``means`` beyond z standard errors? holds: it beats every other beyond them;
    fails: another beats it beyond them; undecided (:data:`WIDE`): tied with the best within them."""
    m = means.dropna()
    if name not in m.index:
        return undecided(NAN)
    if len(m) == 1:
        return holds()
    others = m.drop(index=name)
    se = lambda k: 0.0 if _isnan(ses.get(k)) else float(ses.get(k))  # noqa: E731
    cmp = [compare(m[name] - m[o], math.hypot(se(name), se(o)), z) for o in others.index]
    if all(c > 0 for c in cmp):
        return holds()
    if any(c < 0 for c in cmp):
        return fails()
    return undecided(WIDE)


# -- reduced grids ----------------------------------------------------------------------------------------------


def full_config() -> dict:
    """The repository's ``config.yaml``: the studies' full (paper) grids."""
    from dpbench.config import DEFAULT_CONFIG_PATH, load_yaml

    return load_yaml(DEFAULT_CONFIG_PATH)


def _as_json(block):
    """A config block as a job sees it: through JSON, as Snakemake hands every job its config (the keys of a
    per-ε map such as ``twin_trials: {noise_x0.5: {4.0: 500}}`` become the strings "4.0"), so a config and its
    JSON copy compare equal."""
    import json

    return None if block is None else json.loads(json.dumps(block, sort_keys=True, default=str))


def reduced_grid(config: dict, study: str, figure: str | None = None, full: dict | None = None) -> bool:
    """Was ``study`` (or one ``figure`` of it) run on a reduced grid? Decided from the configuration actually
    run against the study's full configuration (``full``; default: the repository's ``config.yaml``): the
    study's settings other than ``figures`` (data sizes, repetitions, solver budgets, ...) and, for one figure,
    that figure's entry must be equal; for the whole study, every figure entry must be equal. Any difference
    (a shorter grid, fewer repetitions, smaller data) marks the results "reduced grid: indicative only" — a run
    on a larger grid is also marked, since the verdicts are calibrated for the full configuration. A study the
    full configuration does not know is never reduced."""
    full = full_config() if full is None else full
    want = _as_json((full.get("studies") or {}).get(study))
    have = _as_json((config.get("studies") or {}).get(study))
    if want is None or have is None:
        return False
    strip = lambda c: {k: v for k, v in c.items() if k != "figures"}  # noqa: E731
    if strip(want) != strip(have):
        return True
    wf, hf = want.get("figures") or {}, have.get("figures") or {}
    if figure is not None:
        return wf.get(figure) != hf.get(figure)
    return any(wf.get(f) != hf.get(f) for f in hf)


def counts(checks) -> dict:
    """{status: count} of an anchor-check table (every status present, 0 if none)."""
    col = checks["verdict"] if "verdict" in checks else checks["passed"].map({True: HOLDS, False: FAILS})
    return {s: int((col == s).sum()) for s in STATUSES}
