"""Markov-chain data for song2018 ch. 7 (Song 2018, §7.6): synthetic binary chains and two SIMULATED stand-ins.

* :func:`binary_class_trials` — the synthetic experiment (Fig. 7.4): per trial p₀, p₁ ~ U[α, 1−α], an initial
  distribution uniform on the simplex (q₀ ~ U[0, 1]) and a binary chain of length T (Song 2018, §7.6.2).
* :func:`simulate_activity` — SIMULATED stand-in for the private physical-activity data of Ellis et al.
  (Table 7.1, Fig. 7.5): 3 groups of 40 cyclists / 16 older women / 36 overweight women, 4 states (active,
  standing still, standing moving, sedentary), 9,000–10,000 observations per person split into independent
  chains at gaps (the thesis starts a new chain at every gap > 10 minutes, §7.6.3.1).
* :func:`simulate_electricity` — SIMULATED stand-in for the AMPds whole-house power data (Table 7.3): one
  51-state chain (200 W bins) of about 10⁶ one-minute readings (§7.6.3.2).

Simulator choices and their reasons: docs/studies/song2018.md#markov-chain-data.

Neither original is available offline (the activity data are private, AMPds is download-only), so every
row, figure and caption made from these arrays says "simulated". Generators draw from
``dpbench.rng.generator(seed, key)`` streams keyed by content, so the data depend on (seed, parameters) only.
Simulated data are cached under ``<cache_dir>/song2018/``, one :mod:`dpbench.data.cache` entry (folder of ``.npy``
files plus a validated manifest, written under a lock) per generator and parameters.

All chains are sampled by inverse-CDF lookups on precomputed cumulative transition rows, vectorised across
chains (one numpy step per time index); a single long chain uses a tight scalar loop (about 1 s per 10⁶ steps).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpbench.data.cache import open_entry, save_arrays
from dpbench.rng import generator
from dpbench.store import content_key

VERSION = "v1"  # bump when a generator changes: it is part of every cache key and dataset variant

ACTIVITY_STATES = ("active", "standing still", "standing moving", "sedentary")
ACTIVITY_GROUPS = ("cyclist", "older_woman", "overweight_woman")
ACTIVITY_LABELS = {"cyclist": "cyclist", "older_woman": "older woman", "overweight_woman": "overweight woman"}

# Group-level behaviour of the activity simulator [INFERRED: the real data are private; values chosen by us].
# ``pi``: long-run share of each state (cyclists most active, overweight women most sedentary, as Fig. 7.5
# reports); ``leave``: the per-epoch (12 s) probability of leaving each state (mean bout = 12 s / leave);
# ``segments``: mean number of independent chains per person (gaps > 10 min), which sets the longest chain M of
# GroupDP.
ACTIVITY_PARAMS = {
    "cyclist": dict(pi=(0.30, 0.16, 0.20, 0.34), leave=(0.025, 0.09, 0.06, 0.015), segments=9.0),
    "older_woman": dict(pi=(0.13, 0.22, 0.25, 0.40), leave=(0.06, 0.18, 0.12, 0.03), segments=11.0),
    "overweight_woman": dict(pi=(0.07, 0.15, 0.17, 0.61), leave=(0.08, 0.22, 0.16, 0.03), segments=18.0),
}

ELECTRICITY_STATES = 51      # 200 W bins: [0, 200), [200, 400), ..., [10000, 10200) W (Song 2018, §7.6.3.2)
ELECTRICITY_BIN_W = 200


@dataclass(frozen=True)
class ChainData:
    """A set of independent chains over states 0..k−1, concatenated.

    ``lengths[j]`` is the length of chain j, ``owner[j]`` the person it belongs to (0 for a single series).
    """

    name: str
    variant: str
    is_substitute: bool
    k: int
    states: np.ndarray
    lengths: np.ndarray
    owner: np.ndarray
    state_names: tuple

    @property
    def T(self) -> int:
        return int(self.states.size)

    @property
    def n_owners(self) -> int:
        return int(self.owner.max()) + 1 if self.owner.size else 0

    def owner_of_states(self) -> np.ndarray:
        return np.repeat(self.owner, self.lengths)

    def histogram(self, relative: bool = True) -> np.ndarray:
        h = np.bincount(self.states, minlength=self.k).astype(float)
        return h / h.sum() if relative else h

    def owner_histograms(self, relative: bool = True) -> np.ndarray:
        """(n_owners, k) histograms, one per person."""
        h = np.zeros((self.n_owners, self.k))
        np.add.at(h, (self.owner_of_states(), self.states), 1.0)
        return h / h.sum(axis=1, keepdims=True) if relative else h


# ---------------------------------------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------------------------------------


def sample_chains(rng: np.random.Generator, P, init, lengths, model=None) -> np.ndarray:
    """Sample independent chains and return them concatenated (int8 if k ≤ 127).

    ``P``: one (k, k) transition matrix or a stack (m, k, k) with ``model[j]`` choosing chain j's matrix;
    ``init``: the initial state of every chain; ``lengths``: their lengths. One uniform draw per step,
    vectorised across the chains that are still running.
    """
    P = np.asarray(P, float)
    if P.ndim == 2:
        P = P[None]
    lengths = np.asarray(lengths, int)
    init = np.asarray(init, int)
    n = lengths.size
    model = np.zeros(n, int) if model is None else np.asarray(model, int)
    cum = np.cumsum(P, axis=2)
    cum[..., -1] = 1.0
    k = P.shape[1]
    dtype = np.int8 if k <= 127 else np.int16
    tmax = int(lengths.max()) if n else 0
    out = np.zeros((n, tmax), dtype)
    x = init.copy()
    u = rng.random((n, max(tmax - 1, 0)))
    out[:, 0] = x
    for t in range(1, tmax):
        x = (u[:, t - 1, None] > cum[model, x]).sum(axis=1)
        out[:, t] = x
    mask = np.arange(tmax)[None, :] < lengths[:, None]
    return out[mask]


def sample_long_chain(rng: np.random.Generator, P, T: int, x0: int) -> np.ndarray:
    """One chain of length T (a scalar loop with bisection on cumulative rows; ~1 s per 10⁶ steps)."""
    P = np.asarray(P, float)
    cum = np.cumsum(P, axis=1)
    cum[:, -1] = 1.0
    rows = [list(r) for r in cum]
    u = rng.random(T).tolist()
    out = [0] * T
    x = int(x0)
    for t in range(T):
        out[t] = x
        x = bisect.bisect_right(rows[x], u[t])
    return np.asarray(out, dtype=np.int8 if P.shape[0] <= 127 else np.int16)


def empirical_transition_matrix(states, lengths, k: int) -> np.ndarray:
    """Maximum-likelihood transition matrix from transitions inside each chain (never across chains).

    Rows of states that are never left stay all-zero: callers must check (see :func:`require_ergodic`).
    """
    states = np.asarray(states, int)
    ends = np.cumsum(lengths)
    keep = np.ones(states.size, bool)
    keep[ends - 1] = False                    # the last state of a chain has no successor
    src = states[keep]
    dst = states[np.nonzero(keep)[0] + 1]
    C = np.zeros((k, k))
    np.add.at(C, (src, dst), 1.0)
    rows = C.sum(axis=1, keepdims=True)
    return np.divide(C, rows, out=np.zeros_like(C), where=rows > 0)


def require_ergodic(P, name: str) -> None:
    """Raise if P is not irreducible and aperiodic (MQM's Lemmas 7.4.6/7.4.7 need both)."""
    P = np.asarray(P, float)
    k = P.shape[0]
    if not np.allclose(P.sum(axis=1), 1.0):
        raise ValueError(f"{name}: some state is never left in the data; the empirical chain is not ergodic")
    reach = ((np.eye(k) + P) > 0).astype(float)
    for _ in range(int(np.ceil(np.log2(max(k, 2))))):   # path lengths double every step
        reach = ((reach + reach @ reach) > 0).astype(float)
    if not (reach > 0).all():
        raise ValueError(f"{name}: the empirical transition matrix is not irreducible")
    if not (np.diag(P) > 0).any():
        raise ValueError(f"{name}: the empirical chain has no self-loop; aperiodicity is not guaranteed")


# ---------------------------------------------------------------------------------------------------------
# synthetic binary chains (Fig. 7.4)
# ---------------------------------------------------------------------------------------------------------


def binary_transition(p0: float, p1: float) -> np.ndarray:
    """The binary chain with p₀ = P(X_{t+1}=0 | X_t=0) and p₁ = P(X_{t+1}=1 | X_t=1)."""
    return np.array([[p0, 1 - p0], [1 - p1, p1]])


def binary_class_trials(seed: int, alpha: float, T: int, n: int, key: str = "") -> dict:
    """``n`` trials of the synthetic experiment for Θ = [α, 1−α] (Song 2018, §7.6.2): p₀, p₁ ~ U[α, 1−α],
    q₀ = P(X₁ = 0) ~ U[0, 1] (uniform on the 2-simplex), then a chain of length T. Returns arrays
    p0, p1, q0 (n,) and X (n, T) int8, drawn from the stream ``generator(seed, key)``."""
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha!r}")
    rng = generator(seed, key or f"song2018/markov-binary/{VERSION}/T={T}/alpha={alpha!r}/n={n}")
    p0 = rng.uniform(alpha, 1 - alpha, n)
    p1 = rng.uniform(alpha, 1 - alpha, n)
    q0 = rng.uniform(0.0, 1.0, n)
    x1 = (rng.random(n) >= q0).astype(int)
    P = np.stack([np.array([[a, 1 - a], [1 - b, b]]) for a, b in zip(p0, p1)])
    X = sample_chains(rng, P, x1, np.full(n, T), model=np.arange(n)).reshape(n, T)
    return {"p0": p0, "p1": p1, "q0": q0, "X": X}


# ---------------------------------------------------------------------------------------------------------
# simulated physical-activity data (Table 7.1, Fig. 7.5)
# ---------------------------------------------------------------------------------------------------------


def _jump_chain(pi, leave) -> np.ndarray:
    """P = diag(1 − r) + r wᵀ with w ∝ π·r: leave state s w.p. r_s, land in t w.p. w_t; stationary π, reversible."""
    pi, r = np.asarray(pi, float), np.asarray(leave, float)
    w = pi * r
    w /= w.sum()
    return np.diag(1 - r) + r[:, None] * w[None, :]


def simulate_activity(seed: int, persons=(40, 16, 36), observations=(9000, 10000)) -> dict[str, ChainData]:
    """SIMULATED activity chains for the three groups (``persons`` per group, in :data:`ACTIVITY_GROUPS` order).

    Each person gets a transition matrix around the group's (:data:`ACTIVITY_PARAMS`: long-run shares
    Dirichlet(200·π), leave rates × e^{N(0, 0.15²)}), a number of observations uniform in ``observations``,
    split into max(3, Poisson(segments)) independent chains with Dirichlet(2) shares (gaps), each started
    from the person's stationary distribution. Returns {group: ChainData} with ``owner`` = person index.
    """
    lo, hi = int(observations[0]), int(observations[1])
    if not 1 <= lo <= hi:
        raise ValueError(f"observations must be a range [lo, hi] with 1 <= lo <= hi, got {observations!r}")
    out = {}
    for g, n_people in zip(ACTIVITY_GROUPS, persons):
        prm = ACTIVITY_PARAMS[g]
        rng = generator(seed, f"song2018/activity/{VERSION}/{g}/persons={n_people}/obs={lo}-{hi}")
        Ps, lengths, owner, init = [], [], [], []
        for p in range(int(n_people)):
            pi = rng.dirichlet(200 * np.asarray(prm["pi"]))
            r = np.clip(np.asarray(prm["leave"]) * np.exp(rng.normal(0, 0.15, 4)), 1e-3, 0.9)
            P = _jump_chain(pi, r)
            n_obs = int(rng.integers(lo, hi + 1))
            n_seg = int(min(n_obs, max(3, rng.poisson(prm["segments"]))))
            seg = 1 + rng.multinomial(n_obs - n_seg, rng.dirichlet(np.full(n_seg, 2.0)))
            Ps.append(P)
            lengths.extend(seg.tolist())
            owner.extend([p] * seg.size)
            init.extend(rng.choice(4, size=seg.size, p=pi).tolist())
        lengths, owner = np.asarray(lengths), np.asarray(owner)
        states = sample_chains(rng, np.stack(Ps), init, lengths, model=owner)
        out[g] = ChainData(name=f"activity/{g}", variant=f"simulated:activity-{VERSION}", is_substitute=True,
                           k=4, states=states, lengths=lengths, owner=owner, state_names=ACTIVITY_STATES)
    return out


# ---------------------------------------------------------------------------------------------------------
# simulated household electricity (Table 7.3)
# ---------------------------------------------------------------------------------------------------------


def electricity_chain() -> tuple[np.ndarray, np.ndarray]:
    """The 51-state transition matrix of the simulator and its stationary distribution [INFERRED: AMPds is not
    shipped; a plausible household load profile chosen by us].

    Long-run power profile: most minutes at a base load of 200–800 W (a bump around state 2), an exponential
    tail of appliance use and a thin power-law tail up to 10 kW. Dynamics: a Metropolis chain with a symmetric
    proposal — ±1 bin w.p. 0.5 (load drift) or a jump to any bin w.p. 0.2 (appliances switching) — so it is
    reversible, irreducible and aperiodic, with 35–70 % self-transitions per minute.
    """
    k = ELECTRICITY_STATES
    s = np.arange(k)
    target = 0.55 * np.exp(-0.5 * ((s - 2) / 1.3) ** 2) + 0.30 * np.exp(-s / 5.0) / 5 + 0.15 * (1.0 + s) ** -2.0
    target /= target.sum()
    K = np.full((k, k), 0.2 / k)
    i = np.arange(k - 1)
    K[i, i + 1] += 0.25
    K[i + 1, i] += 0.25
    np.fill_diagonal(K, 0.0)
    P = K * np.minimum(1.0, target[None, :] / target[:, None])
    np.fill_diagonal(P, 1.0 - P.sum(axis=1))
    return P, target


def simulate_electricity(seed: int, T: int = 1_051_200) -> ChainData:
    """SIMULATED 51-state household power chain of length T (default: two years of minutes, AMPds-like),
    started from the stationary distribution of :func:`electricity_chain`."""
    if T < 2:
        raise ValueError(f"T must be >= 2, got {T}")
    P, pi = electricity_chain()
    rng = generator(seed, f"song2018/electricity/{VERSION}/T={T}")
    x0 = int(rng.choice(P.shape[0], p=pi))
    states = sample_long_chain(rng, P, int(T), x0)
    names = tuple(f"{ELECTRICITY_BIN_W * j}-{ELECTRICITY_BIN_W * (j + 1)} W" for j in range(P.shape[0]))
    return ChainData(name="electricity", variant=f"simulated:electricity-51state-{VERSION}", is_substitute=True,
                     k=P.shape[0], states=states, lengths=np.array([int(T)]), owner=np.zeros(1, int),
                     state_names=names)


# ---------------------------------------------------------------------------------------------------------
# cache
# ---------------------------------------------------------------------------------------------------------


def _cache_path(cache_dir, name: str, params: dict) -> Path:
    return Path(cache_dir) / "song2018" / f"{name}-{content_key({'v': VERSION, **params})[:16]}"


def _builder(simulate):
    def build(tmp: Path, previous) -> dict:
        data = simulate()
        arrays, meta = {}, {}
        for i, (g, d) in enumerate(data.items()):
            arrays[f"g{i}.states"], arrays[f"g{i}.lengths"], arrays[f"g{i}.owner"] = d.states, d.lengths, d.owner
            meta[g] = {"file": f"g{i}", "name": d.name, "variant": d.variant, "is_substitute": d.is_substitute,
                       "k": d.k, "state_names": list(d.state_names)}
        save_arrays(tmp, arrays)
        return {"groups": meta}
    return build


def _cached(path: Path, simulate) -> dict[str, ChainData]:
    """The chains of entry ``path`` (a :mod:`dpbench.data.cache` entry), simulated once if missing or corrupt."""
    entry = open_entry(path, _builder(simulate), mmap=False, what="simulated chains")
    a = entry.arrays
    return {g: ChainData(name=m["name"], variant=m["variant"], is_substitute=m["is_substitute"], k=m["k"],
                         states=a[f"{m['file']}.states"], lengths=a[f"{m['file']}.lengths"],
                         owner=a[f"{m['file']}.owner"], state_names=tuple(m["state_names"]))
            for g, m in entry.meta["groups"].items()}


def load_activity(cache_dir, seed: int, persons=(40, 16, 36), observations=(9000, 10000)) -> dict[str, ChainData]:
    """:func:`simulate_activity`, cached under ``cache_dir/song2018``."""
    params = {"kind": "activity", "seed": int(seed), "persons": [int(p) for p in persons],
              "observations": [int(o) for o in observations]}
    path = _cache_path(cache_dir, "activity", params)
    return _cached(path, lambda: simulate_activity(seed, persons, observations))


def load_electricity(cache_dir, seed: int, T: int = 1_051_200) -> ChainData:
    """:func:`simulate_electricity`, cached under ``cache_dir/song2018``."""
    path = _cache_path(cache_dir, "electricity", {"kind": "electricity", "seed": int(seed), "T": int(T)})
    return _cached(path, lambda: {"electricity": simulate_electricity(seed, T)})["electricity"]
