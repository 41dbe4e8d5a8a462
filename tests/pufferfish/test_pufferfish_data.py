"""Markov-chain data: synthetic trials of Fig. 7.4 and the labelled simulated stand-ins (shapes, determinism)."""

import numpy as np
import pytest

from dpbench.data import markov as mk
from dpbench.methods import pufferfish as pf
from dpbench.rng import generator


def test_binary_class_trials_shapes_ranges_and_determinism():
    a = mk.binary_class_trials(3, 0.2, 50, 400)
    b = mk.binary_class_trials(3, 0.2, 50, 400)
    c = mk.binary_class_trials(3, 0.3, 50, 400)
    assert a["X"].shape == (400, 50) and set(np.unique(a["X"])) <= {0, 1}
    for k in ("p0", "p1"):
        assert (a[k] >= 0.2).all() and (a[k] <= 0.8).all()
    assert ((a["q0"] >= 0) & (a["q0"] <= 1)).all()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    assert not np.array_equal(a["X"], c["X"])
    # the first state follows q0: P(X1 = 0) = q0
    assert abs(np.mean(a["X"][:, 0] == 0) - a["q0"].mean()) < 0.06
    with pytest.raises(ValueError, match="alpha"):
        mk.binary_class_trials(3, 0.5, 50, 10)


def test_sample_chains_follows_the_transition_matrix():
    P = np.array([[0.9, 0.1, 0.0], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]])
    rng = generator(1, "test/markov")
    lengths = np.array([3000, 1, 4000, 20])
    s = mk.sample_chains(rng, P, [0, 1, 2, 0], lengths)
    assert s.size == lengths.sum() and s.dtype == np.int8
    assert s[0] == 0 and s[3000] == 1 and s[3001] == 2
    np.testing.assert_allclose(mk.empirical_transition_matrix(s, lengths, 3), P, atol=0.03)
    long = mk.sample_long_chain(generator(1, "test/markov/long"), P, 20000, 2)
    np.testing.assert_allclose(mk.empirical_transition_matrix(long, [20000], 3), P, atol=0.03)


def test_empirical_matrix_never_counts_transitions_across_chains():
    s = np.array([0, 0, 1, 1])
    P = mk.empirical_transition_matrix(s, [2, 2], 2)
    np.testing.assert_array_equal(P, [[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="irreducible"):
        mk.require_ergodic(P, "split")


def test_simulated_activity_groups_and_labels():
    d = mk.simulate_activity(11, persons=(4, 2, 3), observations=(900, 1000))
    assert list(d) == list(mk.ACTIVITY_GROUPS)
    for g, n in zip(mk.ACTIVITY_GROUPS, (4, 2, 3)):
        x = d[g]
        assert x.is_substitute and x.variant.startswith("simulated:") and x.k == 4
        assert x.state_names == mk.ACTIVITY_STATES and x.n_owners == n
        per_person = np.bincount(x.owner, weights=x.lengths)
        assert ((per_person >= 900) & (per_person <= 1000)).all()
        assert (np.bincount(x.owner) >= 3).all() and x.states.max() < 4
        assert x.owner_histograms().shape == (n, 4)
    again = mk.simulate_activity(11, persons=(4, 2, 3), observations=(900, 1000))
    np.testing.assert_array_equal(again["cyclist"].states, d["cyclist"].states)
    # the simulator's long-run shares: cyclists most active, overweight women most sedentary (Fig. 7.5)
    big = mk.simulate_activity(2, persons=(6, 6, 6), observations=(9000, 9000))
    h = {g: big[g].histogram() for g in mk.ACTIVITY_GROUPS}
    assert max(h, key=lambda g: h[g][0]) == "cyclist" and max(h, key=lambda g: h[g][3]) == "overweight_woman"


def test_simulated_electricity_chain():
    P, pi = mk.electricity_chain()
    assert P.shape == (51, 51)
    np.testing.assert_allclose(P.sum(axis=1), 1)
    np.testing.assert_allclose(pf.stationary_distribution(P), pi, atol=1e-10)
    np.testing.assert_allclose(pi[:, None] * P, (pi[:, None] * P).T, atol=1e-15)   # reversible
    d = mk.simulate_electricity(5, 4000)
    assert d.T == 4000 and d.k == 51 and d.is_substitute and "electricity" in d.variant
    np.testing.assert_array_equal(d.states, mk.simulate_electricity(5, 4000).states)


def test_cache_roundtrip(tmp_path):
    a = mk.load_activity(tmp_path, 1, (2, 1, 2), (100, 120))
    files = list((tmp_path / "song2018").glob("activity-*/manifest.json"))
    assert len(files) == 1
    b = mk.load_activity(tmp_path, 1, (2, 1, 2), (100, 120))
    for g in a:
        np.testing.assert_array_equal(a[g].states, b[g].states)
        assert a[g].variant == b[g].variant and a[g].state_names == b[g].state_names
    e = mk.load_electricity(tmp_path, 1, 500)
    np.testing.assert_array_equal(e.states, mk.load_electricity(tmp_path, 1, 500).states)
    assert not list(tmp_path.rglob(".*.tmp"))
