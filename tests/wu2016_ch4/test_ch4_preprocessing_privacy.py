"""Privacy of the chapter-4 pipeline end to end (wu2016 ch. 4, Alg 6 data-independent output perturbation): raw
neighbouring data sets (one raw training row replaced by a worst-case row) → the study's preprocessing
(:func:`diabetes_features`, :func:`dpbench.data.warfarin.scale_warfarin`) → the study's training
(:func:`train_models`, the same random stream for both data sets, so the released models differ exactly by the
difference of the exact minimisers) → ‖w(D) − w(D′)‖ against the sensitivity Δ the noise is calibrated for.

The data-independent default keeps it; the source's scalings by statistics of the rows (LIBSVM min-max, column
maxima, target mean and range) exceed it on the same pair."""

import numpy as np
import pytest

from dpbench.config import DEFAULT_CONFIG_PATH
from dpbench.studies import load_config
from dpbench.data import diabetes as dia
from dpbench.data import warfarin as wf
from dpbench.methods import output_perturbation as op
from dpbench.rng import generator
from dpbench.studies.wu2016 import ch4_compute as ch4
from dpbench.studies.wu2016 import ch4_data
from dpbench.studies.wu2016.captions import deviations


def _config(variant):
    cfg = load_config(DEFAULT_CONFIG_PATH)
    cfg["studies"]["wu2016"]["ch4"]["preprocessing"] = variant
    return cfg


def _released_difference(cfg, dataset, loss, X, Xp, y, yp, eps):
    """(‖w(D) − w(D′)‖, claimed Δ) of op_data_independent, trained by the study on repetition 0's split."""
    ch = ch4._choices(cfg)
    tr, _ = ch4_data.split_indices(cfg, dataset, X.shape[0], 0)
    W, info = ch4.train_models("op_data_independent", loss, X[tr], y[tr], [eps], generator(1, "t"), ch)
    Wp, _ = ch4.train_models("op_data_independent", loss, Xp[tr], yp[tr], [eps], generator(1, "t"), ch)
    claimed = op.op_sensitivity(loss, info["lam"][0], info["R"][0], len(tr), ch["op_sensitivity"])
    return float(np.linalg.norm(W[0] - Wp[0])), claimed, tr


def _raw_diabetes(n, seed):
    rng = np.random.default_rng(seed)
    lo = np.array([a for _, a, _ in dia.DOMAIN])
    hi = np.array([b for _, _, b in dia.DOMAIN])
    X = lo + rng.uniform(0.1, 0.5, (n, 8)) * (hi - lo)
    y = np.where(X[:, 1] + 40 * rng.standard_normal(n) > 0.3 * hi[1] + lo[1], 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("eps", [1.0])
def test_diabetes_whole_pipeline_neighbours(eps):
    X, y = _raw_diabetes(768, 0)
    cfg = _config("data_independent")
    tr, _ = ch4_data.split_indices(cfg, "diabetes", 768, 0)
    i = tr[0]
    Xp = X.copy()
    Xp[i] = [a for _, a, _ in dia.DOMAIN]             # worst case: every feature at a domain end
    Xp[i, [1, 4]] = [b for _, _, b in dia.DOMAIN][1], [b for _, _, b in dia.DOMAIN][4]
    out = {}
    for variant in ("data_independent", "source"):
        cfg = _config(variant)
        Z, Zp = ch4_data.diabetes_features(X, False, variant), ch4_data.diabetes_features(Xp, False, variant)
        out[variant] = _released_difference(cfg, "diabetes", "logistic", Z, Zp, y, y, eps)[:2]
        if variant == "data_independent":
            assert np.flatnonzero(np.any(Z != Zp, axis=1)).tolist() == [i]
    diff, claimed = out["data_independent"]
    assert diff <= claimed
    diff_src, claimed_src = out["source"]
    assert diff_src > claimed_src                      # the old behaviour: LIBSVM min-max over all rows


def _raw_warfarin(n, seed):
    rng = np.random.default_rng(seed)
    F = np.zeros((n, wf.N_FEATURES))
    F[:, 0] = rng.integers(2, 9, n)
    F[:, 1] = rng.normal(168, 10, n)
    F[:, 2] = rng.normal(78, 15, n)
    g = rng.choice(3, n, p=[0.2, 0.38, 0.42])
    F[:, 6], F[:, 7] = g == 1, g == 2
    F[np.arange(n), 3 + rng.integers(0, 3, n)] = 1.0
    F[:, 13] = rng.random(n) < 0.05
    dose = np.clip((7.5 - 1.2 * g + 0.02 * (F[:, 2] - 78) + rng.normal(0, 1.2, n)) ** 2, 5, 150)
    return {"F": F, "dose": dose, "vkorc1": g.astype(np.int64)}


def test_warfarin_whole_pipeline_neighbours():
    raw = _raw_warfarin(1000, 3)
    cfg = _config("data_independent")
    tr, _ = ch4_data.split_indices(cfg, "warfarin", 1000, 0)
    i = tr[0]
    rawp = {k: v.copy() for k, v in raw.items()}
    rawp["F"][i, :3] = [9, 220, 250]                  # worst case: oldest, tallest, heaviest, highest dose
    rawp["dose"][i] = 350.0
    out = {}
    w = cfg["studies"]["wu2016"]["ch4"]["warfarin"]
    for variant in ("data_independent", "source"):
        cfg = _config(variant)
        a = wf.scale_warfarin(raw, w["feature_scaling"], w["target"], w["target_scaling"], preprocessing=variant)
        b = wf.scale_warfarin(rawp, w["feature_scaling"], w["target"], w["target_scaling"], preprocessing=variant)
        out[variant] = _released_difference(cfg, "warfarin", "squared", a.X, b.X, a.y, b.y, 1.0)[:2]
        if variant == "data_independent":
            assert np.flatnonzero(np.any(a.X != b.X, axis=1) | (a.y != b.y)).tolist() == [i]
    diff, claimed = out["data_independent"]
    assert diff <= claimed
    diff_src, claimed_src = out["source"]
    assert diff_src > claimed_src                      # the old behaviour: column maxima, target mean and range


def test_rows_say_what_preprocessing_was_used():
    txt, dep = ch4_data.preprocessing_label(_config("data_independent"), "warfarin", False)
    assert not dep and "fixed domain bounds" in txt
    txt, dep = ch4_data.preprocessing_label(_config("source"), "diabetes", False)
    assert dep and txt.startswith("non-private preprocessing, as in the source")
    cfg = _config("source")["studies"]["wu2016"]
    assert "the ε does not cover it" in " ".join(deviations(cfg, "fig4_1"))
    assert "the ε does not cover it" in " ".join(deviations(cfg, "fig4_2"))
    assert "does not cover" not in " ".join(deviations(_config("data_independent")["studies"]["wu2016"], "fig4_2"))
