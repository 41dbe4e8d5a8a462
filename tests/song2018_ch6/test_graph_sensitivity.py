"""Song 2018 ch. 6: the sensitivity formulas of Table 6.1 and Lemmas 6.5.1-6.5.4 against brute force on small
D-bounded graph sequences (add/remove one node with its edges, over every release): the measured maximum never
exceeds the formula and reaches 2D + 1 for high-degree nodes (Lemma 6.4.1, tight for 1 ≤ τ < D)."""

from math import comb

import numpy as np
import pytest

from dpbench.privacy import graph_sensitivity as S


def test_formulas():
    assert [S.high_degree_diff(D) for D in (1, 2, 5)] == [3, 5, 11]
    assert S.histogram_diff(3) == 43 and S.out_histogram_diff(2, 3) == 4 * 6 + 6 + 1
    assert S.high_out_degree_diff(4) == 9
    assert S.subgraph_diff("kstar", D=5, k=3) == 5 * comb(4, 2) + comb(5, 3)
    assert S.subgraph_diff("triangle2", D_in=2, D_out=3) == comb(5, 2)
    assert S.subgraph_diff("in_kstar", D_in=3, D_out=2, k=2) == 2 * 2 + 3
    with pytest.raises(ValueError):
        S.high_degree_diff(-1)


def _formulas_undirected(D):
    return {"high_degree": S.high_degree_diff(D), "histogram": S.histogram_diff(D),
            "edge": S.subgraph_diff("edge", D=D), "triangle": S.subgraph_diff("triangle", D=D),
            "kstar": S.subgraph_diff("kstar", D=D, k=2)}


def _formulas_directed(di, do):
    f = {s: S.subgraph_diff(s, D_in=di, D_out=do, k=2)
         for s in ("edge_d", "triangle1", "triangle2", "out_kstar", "in_kstar")}
    return {"high_out_degree": S.high_out_degree_diff(di), "out_histogram": S.out_histogram_diff(di, do), **f}


@pytest.mark.parametrize("D,T", [(2, 3), (3, 2), (4, 2)])
def test_exhaustive_undirected(D, T):
    """Every graph on 5 nodes × every time stamp in 1..T (node 0 added/removed), τ = 1."""
    got = S.search(5, T, False, D=D, tau=1)
    assert got["_searched"] > 1000
    for s, bound in _formulas_undirected(D).items():
        assert got[s]["diff"] <= bound, (s, got[s], bound)
    assert got["high_degree"]["single"] <= S.high_degree_single(D)
    assert got["edge"]["single"] <= S.edges_single(D=D)
    if D <= 3:                        # enough nodes for the Lemma 6.4.1 example and a full k-star: reached
        assert got["high_degree"]["diff"] == 2 * D + 1
        assert got["kstar"]["diff"] == S.subgraph_diff("kstar", D=D, k=2)
    assert got["triangle"]["diff"] == comb(D, 2)      # a node in a clique reaches C(D, 2)


@pytest.mark.parametrize("di,do,mutual", [(1, 2, False), (2, 2, False), (2, 3, False), (2, 2, True)])
def test_exhaustive_directed(di, do, mutual):
    """Every directed graph on 4 nodes (with or without reciprocal pairs) × every time stamp in 1..3."""
    got = S.search(4, 3, True, D_in=di, D_out=do, tau=1, mutual=mutual)
    for s, bound in _formulas_directed(di, do).items():
        assert got[s]["diff"] <= bound, (s, got[s], bound)
    assert got["high_out_degree"]["single"] <= S.high_out_degree_single(di)
    assert got["edge_d"]["single"] <= S.edges_single(D_in=di, D_out=do)


@pytest.mark.parametrize("D", [2, 3, 5, 8])
def test_lemma_6_4_1_tight(D):
    """The bound 2D + 1 is reached for every 1 ≤ τ < D (Lemma 6.4.1) by the constructed sequence."""
    for tau in range(1, D):
        adj, times = S.tight_high_degree(D, tau)
        assert adj.sum(axis=2).max() <= D
        diff, single = S.measure(adj, times, 2, False, tau, D, triangles=False)["high_degree"]
        assert diff[0] == 2 * D + 1 and single[0] <= D + 1


def test_random_search_never_exceeds():
    """Adversarial random search on larger sequences (9 nodes, 4 releases; 7 directed)."""
    got = S.search(9, 4, False, D=3, tau=2, random=6000, seed=1)
    for s, bound in _formulas_undirected(3).items():
        assert got[s]["diff"] <= bound, (s, got[s], bound)
    got = S.search(7, 4, True, D_in=2, D_out=3, tau=2, random=6000, seed=2)
    for s, bound in _formulas_directed(2, 3).items():
        assert got[s]["diff"] <= bound, (s, got[s], bound)


def test_measure_matches_direct_count():
    """The batched measurement agrees with a direct count on one hand-made sequence."""
    adj = np.zeros((1, 4, 4), bool)
    for a, b in ((0, 1), (1, 2), (2, 3)):
        adj[0, a, b] = adj[0, b, a] = True
    times = np.array([[2, 1, 1, 3]])
    m = S.measure(adj, times, 3, False, 2, 3)
    # with node 0: highDeg_2 = (1, 2, 3)... node 1 degree ≥ 2 from t = 2, node 2 from t = 3
    # G: t1 {1,2} edge 1-2 -> degs 1,1 -> 0 high; t2 +0 -> node1 deg 2 -> 1; t3 +3 -> node2 deg 2 -> 2
    # G': t1 0; t2 0; t3 node2 deg 2 -> 1.  Δ = (0,1,1), Δ' = (0,0,1): L1 = 1
    assert m["high_degree"][0][0] == 1
    assert m["edge"][0][0] == 1 and m["edge"][1][0] == 1
