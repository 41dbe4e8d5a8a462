"""vdm2020 protocol: figure points, cross-validation switch, clip scale, shared fits, large-N preparation."""

import copy

import numpy as np
import pytest

from dpbench.config import ConfigError
from dpbench.studies import validate_config
from dpbench.data import add_bias_feature, unit_ball_normalise, unit_ball_rows_into, unit_sphere_rows
from dpbench.runner import run_series
from dpbench.studies import vdm2020


def test_points_carry_problem_and_method_overrides(tiny_config):
    cfg = tiny_config["studies"]["vdm2020"]
    p4 = vdm2020.points(cfg, "fig4")
    assert [p.problem for p in p4] == [(("n_train", 200),), (("n_train", 640),)] and p4[0].method == ()
    p6a = vdm2020.points(cfg, "fig6a")
    assert p6a[0].method == (("l2", 1e-3),) and p6a[0].curve == "ε = 1" and p6a[0].epsilon == 1.0
    p6b = vdm2020.points(cfg, "fig6b")
    assert vdm2020.make_method(cfg, "subsample_aggregate", **dict(p6b[1].method)).settings["n_models"] == 16
    p3 = vdm2020.points(cfg, "fig3")
    assert [p.delta for p in p3] == [1e-5, 1e-1] and all(p.epsilon == 1.0 and p.budget == 100 for p in p3)


def test_problem_overrides(tiny_config):
    cfg = tiny_config["studies"]["vdm2020"]
    small = vdm2020.problem(tiny_config, cfg, "test", n_train=200)
    assert small.n_train == 200
    full = vdm2020.problem(tiny_config, cfg, "test")
    np.testing.assert_array_equal(small.y_train, full.y_train[:200])  # the first N examples
    two = vdm2020.problem(tiny_config, cfg, "test", n_classes=2)
    assert two.n_classes == 2 and set(np.unique(two.y_train)) == {0, 1} and set(np.unique(two.y_eval)) <= {0, 1}
    pca = vdm2020.problem(tiny_config, cfg, "validation", pca_dim=5)
    assert pca.dim == 6 and np.linalg.norm(pca.X_train, axis=1).max() <= 1 + 1e-12
    assert np.linalg.norm(pca.X_eval, axis=1).max() <= 1 + 1e-12
    assert len({small.key, full.key, two.key, pca.key}) == 4


def test_chunked_normalisation_equals_the_transforms_bitwise():
    rng = np.random.default_rng(3)
    X = rng.random((300, 7)).astype(np.float32) * 3
    rows = rng.permutation(300)[:250]
    tr, te = unit_ball_normalise(np.asarray(X[rows], np.float64), np.asarray(X[:40], np.float64))
    scale = float(np.linalg.norm(np.asarray(X[rows], np.float64), axis=1).max())
    out = unit_ball_rows_into(np.empty((250, 8)), X, rows, scale, bias=True, chunk=64)
    np.testing.assert_array_equal(out, add_bias_feature(tr))
    out_te = unit_ball_rows_into(np.empty((40, 8)), X, np.arange(40), scale, bias=True, chunk=7)
    np.testing.assert_array_equal(out_te, add_bias_feature(te))


def test_prepared_problems_are_memory_mapped_and_equal_the_transforms(tiny_config):
    from dpbench.data import load_dataset

    cfg = tiny_config["studies"]["vdm2020"]
    vdm2020._problem.cache_clear()
    p = vdm2020.problem(tiny_config, cfg, "validation", n_train=600)
    assert isinstance(p.X_train, np.memmap) and not p.X_train.flags.writeable
    d = tiny_config["data"]
    ds = load_dataset("mnist", cache_dir=d["cache_dir"], source="substitute", n_train=600, n_test=cfg["n_test"])
    tr, val = vdm2020._select_rows(np.asarray(ds.y_train), None, tiny_config["seed"], "validation", 0.1)
    # the default preprocessing is per row (data-independent): x / ||x||, then the bias feature
    X_tr, X_ev = unit_sphere_rows(np.asarray(ds.X_train[tr], np.float64)), unit_sphere_rows(np.asarray(ds.X_train[val], np.float64))
    np.testing.assert_array_equal(np.asarray(p.X_train), add_bias_feature(X_tr))
    np.testing.assert_array_equal(p.X_eval, add_bias_feature(X_ev))
    np.testing.assert_array_equal(p.y_eval, ds.y_train[val])
    vdm2020._problem.cache_clear()
    again = vdm2020.problem(tiny_config, cfg, "validation", n_train=600)  # reopened from the cache folder
    assert isinstance(again.X_train, np.memmap) and again.key == p.key
    vdm2020._problem.cache_clear()


def count_calls(monkeypatch, module, name):
    calls = []
    orig = getattr(module, name)

    def wrapped(*a, **k):
        calls.append(1)
        return orig(*a, **k)

    monkeypatch.setattr(module, name, wrapped)
    return calls


def test_cells_sharing_a_trained_model_never_retrain_it(tiny_config, monkeypatch):
    import dpbench.methods.non_private as npm
    import dpbench.methods.subsample_aggregate as sam

    fits = count_calls(monkeypatch, npm, "fit_softmax")
    ensembles = count_calls(monkeypatch, sam, "fit_softmax_many")
    cfg = tiny_config["studies"]["vdm2020"]
    n_lambda = len(cfg["cross_validation"]["lambda_grid"])
    for fig in ("fig1a", "fig2a", "fig1b", "fig2b"):
        for s in ("model_sensitivity", "prediction_sensitivity", "non_private"):
            run_series(tiny_config, "vdm2020", fig, s)
    # one fit per lambda on the validation split, at most one per lambda on the test split: every
    # (method, eps, delta, B, rep) cell and all four figures reuse them
    assert len(fits) <= 2 * n_lambda
    for fig in ("fig1a", "fig2a", "fig1b", "fig2b"):
        run_series(tiny_config, "vdm2020", fig, "subsample_aggregate")
    assert len(ensembles) == cfg["repetitions"]  # one ensemble per repetition serves every eps, delta and B


def test_cross_validation_switch_uses_the_fixed_values(tiny_config):
    cfg = copy.deepcopy(tiny_config)
    cfg["studies"]["vdm2020"]["cross_validation"]["enabled"] = False
    cfg["studies"]["vdm2020"]["cross_validation"]["fixed"] = {"l2": 0.02, "clip": 0.5}
    df = run_series(cfg, "vdm2020", "fig1a", "model_sensitivity")
    assert (df["tuned_value"] == 0.02).all() and df["validation_accuracy"].isna().all()
    assert "DISABLED" in " ".join(vdm2020.deviations(cfg["studies"]["vdm2020"], "fig1a"))
    tuned = run_series(tiny_config, "vdm2020", "fig1a", "model_sensitivity")
    assert tuned["validation_accuracy"].notna().all()
    assert set(tuned["tuned_value"]) <= set(tiny_config["studies"]["vdm2020"]["cross_validation"]["lambda_grid"])


def test_fixed_lambda_on_the_x_axis_is_not_tuned(tiny_config):
    df = run_series(tiny_config, "vdm2020", "fig6a", "loss_perturbation")
    assert list(df.groupby("x")["tuned_value"].first()) == [1e-3, 1e-1]
    assert df["validation_accuracy"].isna().all() and set(df["curve"]) == {"ε = 1"}


def test_batch_mean_clip_scale_multiplies_by_the_batch():
    from dpbench.methods.dpsgd import clip_norm

    assert clip_norm(0.01, 256, "batch_mean") == pytest.approx(2.56)
    assert clip_norm(0.01, 256, "per_example") == 0.01
    with pytest.raises(ValueError, match="clip_scale"):
        clip_norm(0.01, 256, "other")


@pytest.mark.parametrize("edit, key", [
    (lambda s: (s.update(subsagg_models=64), s["figures"]["fig4"].update(n_trains=[640, 50])),
     "studies.vdm2020.figures.fig4.n_trains[1]"),
    (lambda s: s["figures"]["fig5a"].update(dims=[10, 900]), "studies.vdm2020.figures.fig5a.dims[1]"),
    (lambda s: s["figures"]["fig6b"].update(n_models=[8, 8]), "studies.vdm2020.figures.fig6b.n_models"),
    (lambda s: s["figures"]["fig6b"].update(n_models=[8, 5000]), "studies.vdm2020.figures.fig6b.n_models[1]"),
    (lambda s: s["cross_validation"].update(enabled=False, fixed={"l2": 1e-3}), "studies.vdm2020.cross_validation.fixed.clip"),
    (lambda s: s["figures"]["fig3"].update(deltas=[0.0]), "studies.vdm2020.figures.fig3.deltas[0]"),
    (lambda s: s["mlp"].update(schedule="cosine"), "studies.vdm2020.mlp.schedule"),
])
def test_bad_new_figure_configs_name_the_key(tiny_config, edit, key):
    cfg = copy.deepcopy(tiny_config)
    edit(cfg["studies"]["vdm2020"])
    with pytest.raises(ConfigError) as e:
        validate_config(cfg)
    assert key in str(e.value)


def test_subsagg_members_fitted_in_blocks_give_the_same_votes(tmp_path, monkeypatch):
    import dpbench.methods.subsample_aggregate as sa
    from dpbench.methods.base import Context, Problem
    from dpbench.store import Store

    rng = np.random.default_rng(0)
    X = rng.standard_normal((900, 20))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
    y = rng.integers(0, 3, 900)
    p = Problem("k", "v", X, y, X[:100], y[:100], 3)
    out = []
    for i, block_bytes in enumerate((1 << 40, 3 * 90 * 20 * 8)):  # all 10 members at once vs blocks of 3
        monkeypatch.setattr(sa, "MODEL_BLOCK_BYTES", block_bytes)
        out.append(sa.vote_counts(p, 10, 50, 0, Context(Store(tmp_path / str(i)), 1)))
    np.testing.assert_array_equal(out[0], out[1])
    assert (out[0].sum(axis=1) == 10).all()


def test_subsagg_float32_changes_only_the_theta_space_members(tmp_path):
    """float32 member fits only apply to parts of more than D/2 rows: smaller parts give the same vote
    counts (same cache key); larger parts get their own cache entry, with votes close to float64's."""
    import dpbench.methods.subsample_aggregate as sa
    from dpbench.methods.base import Context, Problem
    from dpbench.store import Store

    rng = np.random.default_rng(0)
    X = rng.standard_normal((900, 20))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
    y = np.argmax(X @ rng.standard_normal((20, 3)), axis=1)
    p = Problem("k", "v", X, y, X[:200], y[:200], 3)
    store = Store(tmp_path)
    small64 = sa.vote_counts(p, 100, 50, 0, Context(store, 1))       # parts of 9 rows <= D/2 = 10
    n_art = len(list((tmp_path / "artefacts").rglob("*.npz")))
    small32 = sa.vote_counts(p, 100, 50, 0, Context(store, 1), float32=True)
    assert len(list((tmp_path / "artefacts").rglob("*.npz"))) == n_art   # same key: nothing recomputed
    np.testing.assert_array_equal(small64, small32)
    big64 = sa.vote_counts(p, 10, 50, 0, Context(store, 1))          # parts of 90 rows
    big32 = sa.vote_counts(p, 10, 50, 0, Context(store, 1), float32=True)
    assert len(list((tmp_path / "artefacts").rglob("*.npz"))) == n_art + 2
    # without L2 the members are defined by where L-BFGS stops (no finite minimiser on separable parts), so
    # rounding moves some votes of ambiguous points; the ensemble's accuracy stays
    acc = [np.mean(np.argmax(c, axis=1) == p.y_eval) for c in (big64, big32)]
    assert acc[0] > 0.8 and abs(acc[0] - acc[1]) <= 0.03
