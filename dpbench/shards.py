"""Shards: one series split into separate Snakemake jobs sized for a cluster, gathered into the series' Parquet.

A vdm2020-style series (the runner's ``tune`` then cells) is cut into

* **tuning shards** ``t000, t001, …`` — blocks of (tuning point, grid value, CV-repetition block) units, the
  validation cells of one λ / clip value at one (setting, ε, δ); a tuning shard writes the accuracy of its cells;
* **final shards** ``f000, f001, …`` — blocks of (setting, distinct cell, repetition block) units — a setting is
  one x of Fig. 4/5/6, a distinct cell one (ε, δ, B) the method depends on (every B of a training method is one
  cell) — with repetition blocks aligned to the method's groups (a DP-SGD block of 10 runs is never split; a
  fitted model of the sensitivity methods is shared through the cache); a final shard reads every tuning shard of its
  series (the chosen value is the same function of the same validation accuracies as without shards), computes
  its cells and writes its rows with their position in the unsharded series.

Every shard is costed with :mod:`dpbench.costs` and blocks are filled up to ``sharding.max_cpu_minutes``
(a unit bigger than that is a shard of its own). Results are a pure function of the cell key, so the gathered
series equals the unsharded one row for row (``runtime_s``, a measurement, aside).

Studies with their own ``run_series`` (wu2016, song2018, membership, estimation) are not sharded: one job per
series (or per figure with ``group_series``). ``group_series: true`` turns sharding off.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from dpbench.costs import SHARED_NP_FIT_SERIES, cost_series, vdm2020_cell_cpu_s
from dpbench.studies import STUDIES

ORDER = "_order"  # column of a final shard's rows: the row's position in the unsharded series
#: The identities of what a shard computes (:attr:`Shard.shared`): a cell, a trained model or ensemble behind a
#: group of cells, and the non-private L2 fit at one (problem, split, λ) that several series of a study share. The
#: cache is content-keyed (a cell, group or fit is computed once, under a process lock, whichever job asks first,
#: and read from the cache by every later one), so ``dpbench plan`` counts each identity once per study: e.g. the
#: DP-SGD cells at (ε, δ) = (1, 10⁻⁵) of Fig. 1b are those of Fig. 2b and of Fig. 3's δ = 10⁻⁵, and the
#: subsample-and-aggregate ensembles of Figs. 1a-3 are one set of 100.
CELL, GROUP = "cell", "group"
SHARED_FIT = "shared_fit"


@dataclass
class Shard:
    name: str                     # t000 (tuning) | f000 (final cells)
    cpu_s: float                  # projected CPU-seconds
    units: list = field(default_factory=list)   # tuning: (key, value index, r0, r1); final: (setting, cell, r0, r1)
    cells: int = 0                # cells computed (distinct cell keys)
    shared: dict = field(default_factory=dict)  # identity -> CPU-s of everything it computes (cells, models, fits)


@dataclass
class SeriesShards:
    tuning_keys: list             # (setting, ε, δ) in the runner's order
    tuning_values: list           # the grid of each key
    settings: list                # settings of the final cells, in point order
    idents: list                  # per setting: classes of the distinct cells of one repetition (_ident) that
                                  # share a trained model (the method's group_key); a class is never split
    tuning: list[Shard]
    final: list[Shard]

    @property
    def all(self) -> list[Shard]:
        return self.tuning + self.final

    def get(self, name: str) -> Shard:
        for s in self.all:
            if s.name == name:
                return s
        raise ValueError(f"no shard {name!r}; known: {[s.name for s in self.all]}")


def shardable(config: dict, study: str) -> bool:
    """Series of this study can be split (the runner's tune-then-cells protocol)."""
    return STUDIES[study].shape == "cells"


def enabled(config: dict, study: str) -> bool:
    sh = config.get("sharding") or {}
    return bool(sh.get("enabled")) and not config.get("group_series") and shardable(config, study)


def _max_s(config: dict) -> float:
    return 60.0 * float((config.get("sharding") or {}).get("max_cpu_minutes", 20))


def _planning_group_key(method, cell) -> str:
    """``repr(method.group_key(cell))`` for a planning cell (no parameters yet: ``params == ()``); a plugin whose
    group_key reads a parameter gets an error that says so instead of a bare KeyError."""
    try:
        return repr(method.group_key(cell))
    except Exception as exc:  # noqa: BLE001 - a plugin's group_key may raise anything
        raise ValueError(f"method {method.name!r}: group_key(cell) raised {type(exc).__name__}: {exc} on a planning "
                         f"cell (cell.params == (): the plan groups cells before their parameters exist); use only "
                         f"cell.epsilon, delta, budget and rep there (`dpbench check-plugin` checks every hook)") from exc


def _rep_block(method, reps: int) -> int:
    """Repetitions that share one group (one trained artefact): shards never split them."""
    from dpbench.methods import Cell

    def gk(r):
        return _planning_group_key(method, Cell(method=method.name, problem="p", params=(), epsilon=1.0, delta=0.0,
                                                budget=1, rep=r if "rep" in method.depends_on else None))
    first = gk(0)
    b = 1
    while b < reps and gk(b) == first:
        b += 1
    return b


def _ident(method, p) -> tuple:
    """What a point's cell depends on besides the setting and the repetition: points with equal identities
    share their cells (e.g. every B of a private-training method) and go to the same shard."""
    dep = method.depends_on
    return (p.epsilon if "epsilon" in dep else None, p.delta if "delta" in dep else None,
            p.budget if "budget" in dep else None)


def _classes(method, idents: list) -> dict[str, list]:
    """``idents`` partitioned by the method's group key (at repetition 0), {key: idents}: cells of one class share
    a trained model, so they stay in one unit; the key (without problem and parameters: the setting stands for
    them) identifies the model across figures."""
    from dpbench.methods import Cell

    out: dict = {}
    for e, d, b in idents:
        cell = Cell(method=method.name, problem="p", params=(), epsilon=e, delta=d, budget=b,
                    rep=0 if "rep" in method.depends_on else None)
        out.setdefault(_planning_group_key(method, cell), []).append((e, d, b))
    return out


def _pack(units: list, parts: list[dict], limit: float) -> list[tuple[list, float, dict]]:
    """Consecutive units into blocks of at most ``limit`` CPU-s. A unit's cost is its ``parts`` ({identity: CPU-s}:
    its cells, the trained models and fits they use); a block pays each distinct identity once (a unit above the
    limit is a block alone). Returns (units, cost, {identity: CPU-s paid})."""
    out, cur, cur_s, seen = [], [], 0.0, {}
    for u, pt in zip(units, parts):
        add = sum(c for k, c in pt.items() if k not in seen)
        if cur and cur_s + add > limit:
            out.append((cur, cur_s, seen))
            cur, cur_s, seen = [], 0.0, {}
            add = sum(pt.values())
        cur.append(u)
        cur_s += add
        for k, c in pt.items():
            seen.setdefault(k, c)
    if cur:
        out.append((cur, cur_s, seen))
    return out


def fixed_key(series: str, method, setting, split: str, value) -> tuple | None:
    """The study-wide key of a unit's fixed cost when it is the non-private L2 fit that several series share
    (:data:`dpbench.costs.SHARED_NP_FIT_SERIES`; one artefact per problem, split, λ and stopping rule), else None."""
    if cost_series(series) not in SHARED_NP_FIT_SERIES:
        return None
    rule = tuple((k, method.settings.get(k)) for k in ("error_fraction", "maxiter", "precondition"))
    return (SHARED_FIT, setting[0], split, float(value), rule)


def _model_identity(series: str, method, setting, gkey) -> tuple:
    """The identity of the trained model a final unit's cells share (a repetition block is appended): the
    subsample-and-aggregate family's vote counts are one artefact per problem, T, solver and repetition
    (:func:`dpbench.methods.subsample_aggregate.vote_counts`), whichever series or figure asks — e.g. Fig. 6b's
    T = 256 is Figs. 1a-3's ensemble, and ``subsample_aggregate_tight`` votes with ``subsample_aggregate``'s
    teachers; any other model is its series' own."""
    from dpbench.methods.subsample_aggregate import SubsampleAggregate

    if isinstance(method, SubsampleAggregate):
        st = method.settings
        return (GROUP, "subsagg-votes", setting[0], "test", int(st["n_models"]), int(st["maxiter"]),
                bool(st.get("float32", True)))
    return (GROUP, series, setting, "test", gkey)


_MEMO: dict = {}


def plan(config: dict, study: str, figure: str, series: str) -> SeriesShards:
    """The shards of one series (deterministic from the config; memoised per config content): blocks of at most
    ``sharding.max_cpu_minutes``, and smaller for a small series — at most its projected total over
    ``sharding.min_shards``, but not below ``sharding.min_cpu_minutes`` — so that even a small figure's jobs
    are short next to the figure and ``--cores N`` keeps N cores busy to its end (measured on vdm2020 Fig. 2a,
    2 cores: one subsample-and-aggregate shard of 5 of the figure's 9.5 CPU-min ran alone for its last 50 s)."""
    memo_key = (json.dumps(config, sort_keys=True, default=str), study, figure, series)
    if memo_key in _MEMO:
        return _MEMO[memo_key]
    sh = config.get("sharding") or {}
    out = _plan(config, study, figure, series, _max_s(config))
    total = sum(s.cpu_s for s in out.all)
    small = max(60.0 * float(sh.get("min_cpu_minutes", 1)), total / max(1, int(sh.get("min_shards", 4))))
    if small < _max_s(config):
        out = _plan(config, study, figure, series, small)
    _MEMO[memo_key] = out
    return out


def _plan(config: dict, study: str, figure: str, series: str, limit: float) -> SeriesShards:
    st = STUDIES[study]
    cfg = config["studies"][study]
    cvc = cfg["cross_validation"]
    keys, grids, tunits, tparts = [], [], [], []
    methods = {}
    settings, per_setting, set_reps = [], {}, {}
    for p in st.points(cfg, figure):
        if p.setting not in methods:
            methods[p.setting] = st.make_method(cfg, series, **dict(p.method))
        m = methods[p.setting]
        prob, meth = dict(p.problem), dict(p.method)
        if m.tuned is not None and m.supports(p.epsilon, p.delta, cvc["budget"]) is None \
                and m.tuned not in meth and cvc.get("enabled", True):
            key = (p.setting, p.epsilon, p.delta)
            if key not in keys:
                keys.append(key)
                grid = list(st.tuning_grid(cfg, m))
                grids.append(grid)
                group_s, cell_s = vdm2020_cell_cpu_s(cfg, series, prob, meth, "validation")
                cv_reps = cvc["repetitions"]
                block = _rep_block(m, cv_reps)
                fixed_s = group_s if block >= cv_reps else 0.0
                k = block * max(1, math.floor(max(0.0, limit - fixed_s)
                                              / max((cell_s + (0.0 if fixed_s else group_s / block)) * block, 1e-9)))
                for vi in range(len(grid)):
                    cell = (CELL, series, p.setting, "validation", p.epsilon, p.delta, grid[vi])
                    fixed = fixed_key(series, m, p.setting, "validation", grid[vi]) or (GROUP,) + cell
                    for r0 in range(0, cv_reps, k):
                        r1 = min(cv_reps, r0 + k)
                        tunits.append((len(keys) - 1, vi, r0, r1))
                        parts = {cell + (r,): cell_s for r in range(r0, r1)}
                        if fixed_s:
                            parts[fixed] = fixed_s
                        elif group_s:
                            parts.update({fixed + (r // block,): group_s for r in range(r0, r1)})
                        tparts.append(parts)
        if m.supports(p.epsilon, p.delta, p.budget) is not None:
            continue
        if p.setting not in per_setting:
            settings.append(p.setting)
            per_setting[p.setting] = []
        set_reps[p.setting] = max(set_reps.get(p.setting, 0), st.repetitions(cfg, figure, p))
        if _ident(m, p) not in per_setting[p.setting]:
            per_setting[p.setting].append(_ident(m, p))
    class_keys = {st_: _classes(methods[st_], idents) for st_, idents in per_setting.items()}
    classes = {st_: list(c.values()) for st_, c in class_keys.items()}
    tuning = [Shard(f"t{i:03d}", s, u, sum(r1 - r0 for *_, r0, r1 in u), paid)
              for i, (u, s, paid) in enumerate(_pack(tunits, tparts, limit))]
    funits, fparts = [], []
    for si, setting in enumerate(settings):
        m = methods[setting]
        reps = set_reps[setting]
        group_s, cell_s = vdm2020_cell_cpu_s(cfg, series, dict(setting[0]), dict(setting[1]), "test")
        block = _rep_block(m, reps)
        per_rep_group = block < reps      # the trained model changes with the repetition (block)
        by_rep = "rep" in m.depends_on
        for ci, (gkey, members) in enumerate(class_keys[setting].items()):
            per_rep = len(members) * cell_s + (group_s / block if per_rep_group else 0.0)
            k = block * max(1, math.floor(max(0.0, limit - (0.0 if per_rep_group else group_s))
                                          / max(per_rep * block, 1e-9)))
            group = _model_identity(series, m, setting, gkey)
            for r0 in range(0, reps, k):
                r1 = min(reps, r0 + k)
                funits.append((si, ci, r0, r1))
                parts = {(CELL, series, setting, "test", ident, r): cell_s
                         for ident in members for r in (range(r0, r1) if by_rep else (None,))}
                if per_rep_group:
                    parts.update({group + (r // block,): group_s for r in range(r0, r1)})
                elif group_s:
                    parts[group] = group_s
                fparts.append(parts)
    final = [Shard(f"f{i:03d}", s_, u, sum(len(classes[settings[si]][ci]) * (r1 - r0 if "rep" in
                                                                              methods[settings[si]].depends_on else 1)
                                            for si, ci, r0, r1 in u), paid)
             for i, (u, s_, paid) in enumerate(_pack(funits, fparts, limit))]
    return SeriesShards(keys, grids, settings, [classes[st_] for st_ in settings], tuning, final)


def shard_dir(config: dict, study: str, figure: str, series: str) -> str:
    return f"{config['results_dir']}/{study}/{figure}/shards/{series}"


def shard_files(config: dict, study: str, figure: str, series: str, kind: str = "") -> list[str]:
    """The shard Parquet files a series is gathered from (``kind`` "t" / "f" selects tuning / final);
    empty when the series is not sharded."""
    if not enabled(config, study):
        return []
    d = shard_dir(config, study, figure, series)
    return [f"{d}/{s.name}.parquet" for s in plan(config, study, figure, series).all if s.name.startswith(kind)]


def shard_inputs(config: dict, study: str, figure: str, series: str, shard: str) -> list[str]:
    """What a shard job needs besides the dataset: a final shard, every tuning shard of its series."""
    return shard_files(config, study, figure, series, "t") if shard.startswith("f") else []


def shard_signature(config: dict, study: str, figure: str, series: str, shard: str) -> str:
    from dpbench.workflow import series_signature

    s = plan(config, study, figure, series).get(shard)
    return json.dumps([series_signature(config, study, figure, series), s.name, repr(s.units)])


def tuning_results(paths: list[str]) -> dict[str, dict]:
    """{cell key: record} of the validation cells written by tuning shards."""
    import pandas as pd

    out: dict[str, dict] = {}
    for p in paths:
        df = pd.read_parquet(p)
        out.update({k: {"accuracy": a} for k, a in zip(df["cell_key"], df["accuracy"])})
    return out


def run_shard(config: dict, study: str, figure: str, series: str, shard: str, n_jobs: int = 1,
              tuning_paths: list[str] | None = None):
    """Compute one shard: a frame of (cell_key, accuracy) for a tuning shard, the series' rows of its
    repetitions (with their unsharded position in ``_order``) for a final shard."""
    import pandas as pd

    from dpbench.runner import compute_cells, run_series

    sp = plan(config, study, figure, series)
    s = sp.get(shard)
    st = STUDIES[study]
    cfg = config["studies"][study]
    label = f"{study}/{figure}/{series} shard {shard}"
    if shard.startswith("t"):
        cvc = cfg["cross_validation"]
        cells, problems, methods = [], {}, {}
        for ki, vi, r0, r1 in s.units:
            setting, eps, delta = sp.tuning_keys[ki]
            if setting not in problems:
                problems[setting] = st.problem(config, cfg, "validation", **dict(setting[0]))
                methods[setting] = st.make_method(cfg, series, **dict(setting[1]))
            v = sp.tuning_values[ki][vi]
            cells += [(setting, methods[setting].make_cell(problems[setting], v, eps, delta, cvc["budget"], r))
                      for r in range(r0, r1)]
        res = compute_cells(config, study, "validation", series, cells, n_jobs, label=label)
        keys = list(dict.fromkeys(c.key for _, c in cells))
        return pd.DataFrame({"cell_key": keys, "accuracy": [float(res[k]["accuracy"]) for k in keys]})
    known = tuning_results(tuning_paths or [])
    wanted = {(sp.settings[si], ident, r) for si, ci, r0, r1 in s.units for ident in sp.idents[si][ci]
              for r in range(r0, r1)}
    methods = {}

    def select(p, r):
        if p.setting not in methods:
            methods[p.setting] = st.make_method(cfg, series, **dict(p.method))
        return (p.setting, _ident(methods[p.setting], p), r) in wanted

    return run_series(config, study, figure, series, None, n_jobs=n_jobs, select=select, tuning_results=known)


def gather(paths: list[str]):
    """The series frame from its final shards, rows in the unsharded order."""
    import pandas as pd

    df = pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)
    return df.sort_values(ORDER, kind="stable").drop(columns=ORDER).reset_index(drop=True)


def assert_same_results(a, b) -> None:
    """Two series results (frames or Parquet paths) are identical, value for value and row for row, except
    ``runtime_s`` (a measured time, not a result)."""
    import pandas as pd

    fa = pd.read_parquet(a) if isinstance(a, (str, Path)) else a
    fb = pd.read_parquet(b) if isinstance(b, (str, Path)) else b
    drop = [c for c in ("runtime_s",) if c in fa.columns]
    pd.testing.assert_frame_equal(fa.drop(columns=drop).reset_index(drop=True),
                                  fb.drop(columns=drop).reset_index(drop=True), check_exact=True)
