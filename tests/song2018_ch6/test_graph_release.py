"""Song 2018 ch. 6: SENSDIFF (Algorithm 5) and the composition baselines; the neighbour test of SENSDIFF's
released sequence; graph-sequence helpers (degrees per release, the online projection); the generators against
their Table 6.4 rows on a fixed seed."""

import numpy as np
import pytest

from dpbench.data import graphs as G
from dpbench.methods import graph_release as R
from dpbench.privacy import graph_sensitivity as S
from dpbench.rng import generator


def _laplace_logpdf(x, b):
    return -np.abs(x) / b - np.log(2 * b)


def _log_density(y, f, gs, eps):
    """Log density of SENSDIFF's released sequence y (runs, T) for the true sequence f: the partial sums are a
    bijection (unit Jacobian) of the noisy differences, each Δ_t + Lap(gs/ε)."""
    d = np.diff(y, axis=1, prepend=0.0) - np.diff(np.asarray(f, float), prepend=0.0)[None, :]
    return _laplace_logpdf(d, gs / eps).sum(axis=1)


@pytest.mark.parametrize("D,tau", [(2, 1), (4, 2), (6, 5)])
def test_sensdiff_neighbour_ratio(D, tau):
    """Neighbouring sequences G (with node 0) and G' (without): on the worst-case pair of Lemma 6.4.1 every
    output of SENSDIFF has log-density ratio ≤ ε (attained at its bound), and is > ε with the noise calibrated to
    the single-release sensitivity D + 1 (the test has power)."""
    adj, times = S.tight_high_degree(D, tau)
    f_with = S._sequences(adj, times, 2, False, tau, D, 2)["high_degree"][0]
    adj2 = adj.copy()
    adj2[:, 0, :] = adj2[:, :, 0] = False
    t2 = times.copy()
    t2[:, 0] = 3
    f_without = S._sequences(adj2, t2, 2, False, tau, D, 2)["high_degree"][0]
    eps, gs = 0.7, S.high_degree_diff(D)
    y = np.concatenate([R.sensdiff(f_with, gs, eps, generator(1, "t/a"), 20000),
                        R.sensdiff(f_without, gs, eps, generator(1, "t/b"), 20000)])
    llr = _log_density(y, f_with, gs, eps) - _log_density(y, f_without, gs, eps)
    assert np.abs(llr).max() <= eps + 1e-9
    assert np.abs(llr).max() > eps - 0.05                     # the bound is reached (tight pair)
    small = S.high_degree_single(D)
    llr2 = _log_density(y, f_with, small, eps) - _log_density(y, f_without, small, eps)
    assert np.abs(llr2).max() > eps + 0.1


def test_sensdiff_noise_scale_and_sums():
    f = np.array([3.0, 5.0, 5.0, 9.0])
    y = R.sensdiff(f, 3.0, 1.5, generator(2, "t/s"), 40000)
    noise = np.diff(y, axis=1, prepend=0.0) - np.diff(f, prepend=0.0)
    assert abs(np.abs(noise).mean() - 2.0) < 0.03            # E|Lap(b)| = b = GS/ε
    assert abs(y.mean(axis=0) - f).max() < 0.1
    # variance of the t-th partial sum grows like t (the O(T^{3/2}) error of §6.3)
    v = y.var(axis=0)
    assert np.allclose(v / v[0], [1, 2, 3, 4], rtol=0.08)


def test_compose_scale_and_projection_choice():
    f = np.array([10.0, 20.0, 30.0])
    y = R.compose(f, 2.0, 1.0, generator(3, "t/c"), 40000)
    assert abs(np.abs(y - f).mean() - 6.0) < 0.1               # GS·T/ε
    proj = {1: np.array([1.0, 2.0, 3.0]), 3: np.array([9.0, 19.0, 29.0]), 30: f}
    err, best, means = R.compose_projection(f, proj, {1: 1, 3: 3, 30: 30}, 1.0, generator(3, "t/p"), 500)
    assert best == 3 and err.shape == (500,) and means[3] == min(means.values())


def _toy():
    #      0(t0) 1(t1) 2(t1) 3(t2) 4(t3)
    time = np.array([0, 1, 1, 2, 3])
    src = np.array([0, 0, 1, 2, 3, 0])
    dst = np.array([1, 2, 2, 3, 4, 4])
    return G.GraphSequence("toy", "toy", False, time, src, dst, 1, 3)


def test_degrees_edges_and_releases():
    g = _toy()
    c = G.release_times(g)
    assert list(c) == [1, 2, 3] and list(G.release_times(g, 1)) == [3] and list(G.release_times(g, 2)) == [2, 3]
    assert list(G.edge_counts(g.time, g.src, g.dst, c)) == [3, 4, 6]
    deg = G.degree_matrix(g.time, g.src, g.dst, c, "undirected")
    assert deg[0].tolist() == [2, 2, 2, 0, 0] and deg[2].tolist() == [3, 2, 3, 2, 2]
    out = G.degree_matrix(g.time, g.src, g.dst, c, "out")
    assert out[2].tolist() == [3, 1, 1, 1, 0]
    assert G.high_degree_counts(deg, 3).tolist() == [0, 1, 2]
    st = G.statistics(g)
    assert st == {"nodes": 5, "edges": 6, "timespan": 3, "max_degree": 3, "max_in_degree": 2, "max_out_degree": 3}


def test_projection_online_prefix():
    """The projection of G_t is the prefix of the projection of G_T (node order by time stamp), degrees ≤ D̃."""
    g = G.surrogate(7, "hiv", scale=0.5)
    u = G.undirected(g)
    keep = G.project(u.time, u.src, u.dst, 3)
    deg = np.bincount(np.concatenate([u.src[keep], u.dst[keep]]), minlength=g.n)
    assert deg.max() <= 3 and keep.sum() < u.m
    cut = 8
    sub = np.flatnonzero(G.edge_times(u.time, u.src, u.dst) <= cut)
    keep_t = G.project(u.time, u.src[sub], u.dst[sub], 3)
    assert np.array_equal(keep_t, keep[sub])
    kd = G.project(g.time, g.src, g.dst, 2, 1)
    assert np.bincount(g.src[kd], minlength=g.n).max() <= 2 and np.bincount(g.dst[kd], minlength=g.n).max() <= 1


#: stated tolerance of the generators against Table 6.4 on the fixed seed 20200710 (docs/studies/song2018.md):
#: surrogates — nodes and timespan exact, edges within 3 %, maxima within 2; Synthetic I — timespan and max
#: in-degree exact, nodes within 5 % (the thesis's 1990 ≠ 500 + 70·20), edges within 10 %, max degree within 5;
#: Synthetic II — timespan, max in-degree exact, nodes − edges = n₀, max degree within 2 (the SIR process as
#: described transmits more than the thesis's 588 edges: within 70 %)
@pytest.mark.parametrize("name", ["synthetic1", "synthetic2", "hiv", "paper"])
def test_generators_against_table_6_4(name):
    g = G.load(20200710, name)
    got, want = G.statistics(g), G.TABLE_6_4[name]
    assert got["timespan"] == want["timespan"]
    if name in G.SURROGATES:
        assert got["nodes"] == want["nodes"] and abs(got["edges"] / want["edges"] - 1) < 0.03
        for k in ("max_degree", "max_in_degree", "max_out_degree"):
            assert abs(got[k] - want[k]) <= 2, (k, got[k], want[k])
    elif name == "synthetic1":
        assert got["max_in_degree"] == 1 and abs(got["nodes"] / want["nodes"] - 1) < 0.05
        assert abs(got["edges"] / want["edges"] - 1) < 0.10 and abs(got["max_degree"] - want["max_degree"]) <= 5
    else:
        assert got["max_in_degree"] == 1 and got["nodes"] - got["edges"] == 500
        assert abs(got["max_degree"] - want["max_degree"]) <= 2 and abs(got["edges"] / want["edges"] - 1) < 0.7
    assert (g.time[g.src] <= g.time[g.dst]).all() or name in G.SURROGATES   # older → newer (synthetic)


def test_bounds_threshold():
    g = G.load(20200710, "synthetic1")
    b = R.bounds(g)
    assert b["D"] % 5 == 0 and b["D"] >= G.statistics(g)["max_degree"] and b["D_in"] == 5
    assert R.threshold(g, False) >= 1
    assert R.projection_grid(10, [0.1, 0.25, 0.5, 1.0]) == [1, 3, 5, 10]
