"""membership study: config errors name the key; the attacks leak on an overfit non-private model and sit at
50% under huge noise; the audit fires on a deliberately broken mechanism and not on the correct one; run_series
rows, plots and anchor checks through the workflow functions."""


import numpy as np
import pandas as pd
import pytest

from dpbench.config import DEFAULT_CONFIG_PATH, ConfigError
from dpbench.studies import load_config
from dpbench.studies import STUDIES
from dpbench.studies import membership as S

DATA = {"mnist_source": "substitute", "covertype_source": "substitute", "diabetes_source": "substitute"}
ALL_FIGS = {"fig_attack_mnist": {}, "fig_attack_covertype": {}, "fig_attack_diabetes": {},
            "fig_roc": {"epsilons": [0.1, 1.0], "attack": "lira_offline"}, "fig_eps_lower_bound": {},
            "table_generalisation": {"epsilon": 1.0}}


def config(tmp, data_dir, only=None, **study):
    over = {"results_dir": str(tmp / "results"), "figures_dir": str(tmp / "figures"),
            "cache_dir": str(tmp / "cache"), "data": {"cache_dir": str(data_dir), **DATA},
            "studies": {"membership": {
                "datasets": {"mnist": {"n_members": 60, "projection_dim": 20}, "covertype": {"n_members": 100},
                             "diabetes": {"n_members": 60}},
                "epsilons": [0.1, 1.0], "repetitions": 2, "shadow_models": 2,
                "training": {"dpsgd": {"epochs": 2}},
                "figures": {f: (v if only is None or f in only else None) for f, v in ALL_FIGS.items()}}}}
    for k, v in study.items():
        over["studies"]["membership"][k] = v
    cfg = load_config(DEFAULT_CONFIG_PATH, overrides=over)
    cfg["studies"] = {"membership": cfg["studies"]["membership"]}
    return cfg


def m(**kw):
    return {"studies": {"membership": kw}}


@pytest.mark.parametrize("override, key", [
    (m(epsilons=[1.0, 1.0]), "studies.membership.epsilons"),
    (m(epsilons=[0.0]), "studies.membership.epsilons[0]"),
    (m(methods=["dpsgd", "magic"]), "studies.membership.methods[1]"),
    (m(methods=["dpsgd"]), "studies.membership.methods"),
    (m(shadow_models=1), "studies.membership.shadow_models"),
    (m(delta=0.0), "studies.membership.delta"),
    (m(datasets={"diabetes": {"n_members": 5}}), "studies.membership.datasets.diabetes.n_members"),
    (m(fault_injection={"noise_factor": 0.0}), "studies.membership.fault_injection.noise_factor"),
    (m(figures={"fig_roc": {"epsilons": [0.5], "attack": "lira_offline"}}), "studies.membership.figures.fig_roc.epsilons"),
    (m(figures={"fig_roc": {"epsilons": [1.0], "attack": "oracle"}}), "studies.membership.figures.fig_roc.attack"),
    (m(figures={"table_generalisation": {"epsilon": 2.0}}), "studies.membership.figures.table_generalisation.epsilon"),
    (m(training={"dpsgd": {"replace_one": "ignore"}}), "studies.membership.training.dpsgd.replace_one"),
    (m(attacks={"lira_variance": "none"}), "studies.membership.attacks.lira_variance"),
    (m(ci_method="bootstrap"), "studies.membership.ci_method"),
])
def test_bad_config_names_the_key(override, key):
    with pytest.raises(ConfigError) as err:
        load_config(DEFAULT_CONFIG_PATH, overrides=override)
    assert f"invalid config: {key}" in str(err.value)


def test_registered_and_default_config_valid():
    cfg = load_config(DEFAULT_CONFIG_PATH)["studies"]["membership"]
    assert STUDIES["membership"] is S.STUDY_OBJECT
    assert S.figure_names(cfg) == list(S.FIGURES)
    assert "functional_mechanism" not in S.series(cfg, "fig_attack_mnist")   # binary-only method
    assert S.series(cfg, "fig_attack_covertype")[0] == "non_private"
    for name in S.FIGURES:
        assert S.deviations(cfg, name)


def _pooled(df):
    return S.pooled(df, 0.05 / 5)   # family-wise over the five attacks


def test_attacks_leak_on_overfit_model_and_sit_at_half_under_huge_noise(tmp_path, data_dir):
    cfg = config(tmp_path, data_dir, ["fig_attack_covertype"], methods=["non_private", "output_perturbation"],
                 epsilons=[0.1], shadow_models=4)
    df = pd.concat([S.run_series(cfg, "fig_attack_covertype", s, n_jobs=1)
                    for s in ("non_private", "output_perturbation")])
    p = _pooled(df)
    npv = p[p["method"] == "non_private"].set_index("attack")
    assert (npv["train_accuracy"] - npv["test_accuracy"]).iloc[0] > 0.1          # overfit
    for a in ("gap", "loss_calibrated", "shadow"):
        assert npv.loc[a, "accuracy_lo"] > 0.5, a                                 # clearly above 50%
    assert npv.loc["lira_offline", "auc"] - 3 * npv.loc["lira_offline", "auc_se"] > 0.5
    assert npv["accuracy"].max() > 0.6
    noisy = p[p["method"] == "output_perturbation"]
    assert ((noisy["accuracy_lo"] <= 0.5) & (noisy["accuracy_hi"] >= 0.5)).all()  # 50% ± CI


def test_audit_fires_on_broken_mechanism_and_not_on_correct(tmp_path, data_dir):
    frames = {}
    # broken: output-perturbation noise scale × 1e-4 at nominal ε = 0.1 (a 10× cut is not detectable by these
    # average-member attacks on these sizes: the bounds are worst-case; see the study notes)
    for nf in (1.0, 1e-4):
        cfg = config(tmp_path / str(nf), data_dir, ["fig_attack_covertype"], methods=["non_private", "output_perturbation"],
                     epsilons=[0.1], repetitions=8, fault_injection={"noise_factor": nf}, training={"l2": 0.01},
                     datasets={"covertype": {"n_members": 50}})
        df = S.run_series(cfg, "fig_attack_covertype", "output_perturbation", n_jobs=1)
        frames[nf] = {"fig_attack_covertype": df}
        assert (df["noise_factor"] == nf).all()
        checks = S.anchor_checks(frames[nf])          # settings read from the rows, as the report does
        audit = checks[checks["claim"] == "AUDIT/covertype/output_perturbation"]
        assert len(audit) == 1
        assert bool(audit["passed"].iloc[0]) == (nf == 1.0), audit["measured"].iloc[0]
    html = S.report_html(cfg, frames[1e-4])
    assert "PRIVACY BUG" in html and "Flagged combinations" in html
    assert "FAULT INJECTED" in S.deviations(cfg["studies"]["membership"], "fig_attack_covertype")[0]


def test_run_series_schema_plots_and_anchor_checks(tmp_path, data_dir):
    cfg = config(tmp_path, data_dir, methods=["non_private", "output_perturbation", "dpsgd", "bolt_on",
                                               "objective_perturbation"])
    sc = cfg["studies"]["membership"]
    frames = {}
    for name in S.figure_names(sc):
        frames[name] = pd.concat([S.run_series(cfg, name, s, n_jobs=2) for s in S.series(sc, name)],
                                 ignore_index=True)
        out = tmp_path / "figures" / f"{name}.png"
        caption = S.plot(cfg, name, frames[name], out)
        assert out.stat().st_size > 10_000 and out.with_suffix(".txt").read_text() == caption
        assert "SUBSTITUTE DATA" in caption
    df = frames["fig_attack_covertype"]
    for col in ("study", "figure", "series", "method", "dataset", "dataset_variant", "is_substitute", "epsilon",
                "delta", "epsilon_game", "delta_game", "neighbouring", "attack", "metric", "value", "lo", "hi",
                "rep", "n_members", "tp", "fp", "eps_tp", "eps_fp", "seed", "runtime_s"):
        assert col in df.columns, col
    assert set(df["attack"]) == {"", "gap", "loss_threshold", "loss_calibrated", "shadow", "lira_offline", "canary"}
    assert set(df.loc[df["attack"] == "canary", "method"]) == {"output_perturbation", "bolt_on"}   # canary_audit
    assert df["dataset_variant"].str.startswith("substitute").all() and df["is_substitute"].all()
    dp = df[df["method"] == "dpsgd"]
    assert (dp["delta"] == 1e-5).all() and np.allclose(dp["epsilon_game"], dp["epsilon"])
    assert set(frames["fig_eps_lower_bound"]["method"]) >= {"output_perturbation", "objective_perturbation"}
    assert "roc_tpr" in set(frames["fig_roc"]["metric"])
    again = S.run_series(cfg, "fig_attack_covertype", "dpsgd", n_jobs=1)   # cached cells, same rows
    pd.testing.assert_frame_equal(again.reset_index(drop=True),
                                  df[df["series"] == "dpsgd"][again.columns].reset_index(drop=True),
                                  check_dtype=False)   # (the concat added the canary rows' columns)
    checks = S.anchor_checks(frames)
    assert {"AUDIT/covertype/dpsgd", "Q2", "Q3"} <= set(checks["claim"])
    assert checks.set_index("claim").loc["Q3", "passed"]
    html = S.report_html(cfg, frames)
    assert "Privacy vs generalisation" in html and "Privacy audit" in html


def test_claims_are_data_and_the_training_hash_excludes_attacks_captions_and_plots():
    from dpbench.codehash import closure
    from dpbench.studies.membership.anchors import CLAIMS

    assert set(CLAIMS) == {"AUDIT", "Q1", "Q2", "Q3", "Q4"}
    for name, spec in S.FIGURES.items():
        assert set(spec.anchors) <= set(CLAIMS), name
    train = closure(["dpbench.studies.membership.training"])
    assert "dpbench.learn.dpsgd" in train and "dpbench.privacy.mechanisms" in train
    assert not [m for m in train if m.startswith("dpbench.attacks") or m.startswith("dpbench.studies.membership.")
                and not m.endswith(".training")]
    cells = closure(["dpbench.studies.membership.cells"])
    assert "dpbench.attacks.canary" in cells and "dpbench.studies.membership.training" in cells
    assert not [m for m in cells if m.split(".")[-1] in ("captions", "plots", "anchors", "summaries", "spec")]


def test_loss_perturbation_tight_trains_with_less_noise_and_says_so():
    """The membership game's loss perturbation at its tight calibration (issue: privacy left on the table): the
    same ρ and β from the proved bound — half the source's noise at C = 10, × 0.622 at C = 2 — labelled tight,
    dashed in the source's colour."""
    from dpbench.methods.loss_perturbation import LIPSCHITZ_K
    from dpbench.studies.membership import plots as P
    from dpbench.studies.membership import training as mc

    cfg = load_config(DEFAULT_CONFIG_PATH)["studies"]["membership"]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 5))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    for C, ratio in ((10, 0.5), (2, 0.622)):
        y = rng.integers(0, C, 80)
        _, src = mc.train(cfg, "loss_perturbation", X, y, C, 1.0, np.random.default_rng(1))
        _, tight = mc.train(cfg, "loss_perturbation_tight", X, y, C, 1.0, np.random.default_rng(1))
        assert src["noise_scale"] == pytest.approx(1.0 / (4 * LIPSCHITZ_K))      # β = ε/(4K) at ε = 1
        assert tight["noise_scale"] == pytest.approx(src["noise_scale"] / ratio, rel=2e-3)   # β grows: less noise
    assert mc.calibration_of("loss_perturbation_tight") == "tight" and mc.calibration_of("loss_perturbation") == "source"
    assert mc.method_delta(cfg, "loss_perturbation_tight") == 0.0
    assert P.STYLE["loss_perturbation_tight"]["color"] == P.STYLE["loss_perturbation"]["color"]
    assert P.STYLE["loss_perturbation_tight"]["linestyle"] == "--"
