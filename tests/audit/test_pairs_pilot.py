"""Audits on several neighbouring pairs (dpbench.audit.core.choose_pair): a pilot on every pair of a method picks
the pair its cell audits; a cell that keeps the first pair gives exactly the one-pair ε̂ (same streams, no
correction), the pilot finds a pair only another pair's fault shows, and every pair of a correct implementation
stays within its claim."""

import dataclasses
import math

import numpy as np
import pytest

from dpbench.audit import REGISTRY, run_cell
from dpbench.audit.core import choose_pair, pilot_trials
from dpbench.audit.registry import MethodAudit
from dpbench.config import DEFAULT_CONFIG_PATH, ConfigError
from dpbench.studies import load_config

MULTI = sorted(n for n, m in REGISTRY.items() if len(m.pairs) > 1)


@pytest.fixture(scope="module")
def config():
    return load_config(DEFAULT_CONFIG_PATH, "config/smoke.yaml")


def _laplace_pairs(shift_b: float):
    """A counting query with Laplace(1/ε) noise whose pair "a" moves the count by 1 (correct) and whose pair "b"
    moves it by ``shift_b`` (a fault only that pair shows when shift_b > 1)."""
    def release(config, epsilon, twin, trials, rng, pair="a"):
        shift = 1.0 if pair == "a" else shift_b
        s_d = shift + rng.laplace(0.0, 1.0 / epsilon, trials)
        s_dp = rng.laplace(0.0, 1.0 / epsilon, trials)
        return {"s_d": s_d, "s_dp": s_dp, "delta": 0.0, "eps_pair": shift * epsilon}
    return release


def test_several_pair_methods_are_the_cheap_ones():
    """The pilot runs where a pair costs little (noise redrawn on one fit, or a batched solve); the methods that
    train per trial keep their one worst-case pair (docs/studies/audit.md: why)."""
    assert set(MULTI) == {"model_sensitivity", "bolt_on", "objective_perturbation", "functional_mechanism",
                          "functional_mechanism_tight", "mean_laplace", "mean_gaussian", "ldp_mean",
                          "ldp_sgd_report"}
    for n in MULTI:
        m = REGISTRY[n]
        assert len(set(m.pairs)) == len(m.pairs) and set(m.pair_notes) == set(m.pairs), n


def test_the_pilot_finds_the_pair_where_the_fault_is(config, monkeypatch):
    """Pair "b" of a faulty release moves the count by 3 (ε on it: 3ε); the worst case of the calibration, pair
    "a", shows nothing. The pilot picks "b" and the cell fires; the correct release keeps "a" and passes."""
    for shift_b, fires in ((3.0, True), (1.0, False)):
        monkeypatch.setitem(REGISTRY, "_two_pairs", MethodAudit(
            name="_two_pairs", label="two pairs", study="audit", run=_laplace_pairs(shift_b), twins=(),
            pairs=("a", "b"), pair_notes={"a": "", "b": ""}))
        r = run_cell(config, "_two_pairs", 1.0, "correct", 0, 20000)
        assert r["fires"] is fires and r["pairs"] == 2
        if fires:
            assert r["pair"] == "b" and r["eps_hat"] > 2.0
            assert r["pilot"].startswith("a=") and " b=" in r["pilot"]
        else:
            assert r["eps_hat"] <= 1.0


def test_a_cell_that_keeps_the_first_pair_is_the_one_pair_audit(config, monkeypatch):
    """Same noise stream, same level: the chosen first pair gives bit for bit the ε̂ of the method audited on that
    pair alone (the pilot's releases have their own streams and never enter the bound)."""
    name = "model_sensitivity"
    multi = run_cell(config, name, 1.0, "correct", 0, 4000)
    assert multi["pair"] == REGISTRY[name].pairs[0]
    monkeypatch.setitem(REGISTRY, name, dataclasses.replace(REGISTRY[name], pairs=REGISTRY[name].pairs[:1]))
    single = run_cell(config, name, 1.0, "correct", 0, 4000)
    assert single["pilot"] == "" and single["pairs"] == 1
    for k in ("eps_hat", "eps_lower", "threshold", "tp", "fp", "eps_pair"):
        assert multi[k] == single[k], k


@pytest.mark.parametrize("name", MULTI)
def test_every_pair_is_within_the_claim_of_the_correct_release(config, name):
    """On every pair of a correct implementation the exact ε of the noiseless pair (where known) is at most the
    claim, and the releases are real neighbours (the two sides differ)."""
    m = REGISTRY[name]
    for p in m.pairs:
        out = m.run(config, 1.0, "correct", 200, np.random.default_rng(0), pair=p)
        if math.isfinite(out.get("eps_pair", math.nan)):
            assert out["eps_pair"] <= 1.0 + 1e-6, (name, p, out["eps_pair"])
        assert not np.array_equal(out["s_d"], out["s_dp"]), (name, p)


def test_pilot_size_and_its_config_key(config):
    assert pilot_trials(config, 20000) == 2000
    assert pilot_trials(config, 50) == 100                       # at least PILOT_MIN_TRIALS
    bad = {"studies": {"audit": {"pilot_fraction": 0}}}
    import yaml
    from pathlib import Path
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "bad.yaml"
        f.write_text(yaml.safe_dump(bad))
        with pytest.raises(ConfigError, match="pilot_fraction"):
            load_config(DEFAULT_CONFIG_PATH, str(f))


def test_choose_pair_of_a_one_pair_method_runs_no_pilot(config):
    assert choose_pair(config, "dpsgd_softmax", 1.0, "correct", 4000, "test/one") == ("worst_case", {})


def test_the_plan_counts_the_pilot(config):
    from dpbench.costs import audit_series_cpu_s

    more = {**config, "studies": {**config["studies"], "audit": {**config["studies"]["audit"], "pilot_fraction": 0.5}}}
    assert audit_series_cpu_s(more, "mean_laplace") > audit_series_cpu_s(config, "mean_laplace")
    assert audit_series_cpu_s(more, "dpsgd_softmax") == audit_series_cpu_s(config, "dpsgd_softmax")
