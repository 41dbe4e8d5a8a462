"""Method settings declared on the classes (``settings_spec``) and read by ``Method.from_config``: the methods and
cells they build are the ones the former per-name ``make_method`` built (kept below as a private reference), so
every cell key and random stream — hence every result — is unchanged; the schema and plot styles derive from the
registry."""

from __future__ import annotations

import copy

import pytest

from dpbench.config import ConfigError, DEFAULT_CONFIG_PATH, merged_config
from dpbench.methods import REGISTRY, Method, Problem, Setting
from dpbench.studies import vdm2020
from tests.conftest import TINY

SMOKE = DEFAULT_CONFIG_PATH.parent / "config" / "smoke.yaml"


def _old_make_method(cfg: dict, name: str, **overrides):
    """The per-name if-chain that built the methods before their settings were declared (reference only)."""
    lb = {"error_fraction": 0.01, "maxiter": 2000, "subsagg_maxiter": 100, **cfg.get("lbfgs", {})}
    cls = REGISTRY.get(name)
    if name == "loss_perturbation":
        # lbfgs.float32 (default true) is part of loss perturbation's cells since the bit-reproducible float32 stacks
        return cls(error_fraction=lb["error_fraction"], maxiter=lb["maxiter"], float32=lb.get("float32", True),
                   **cfg["loss_perturbation"])
    if name == "subsample_aggregate":
        return cls(n_models=int(overrides.get("n_models", cfg["subsagg_models"])), maxiter=lb["subsagg_maxiter"],
                   **cfg["subsample_aggregate"])
    if name == "dpsgd":
        return cls(**cfg["dpsgd"])
    if name in vdm2020.MLP_METHODS:
        mlp = cfg["mlp"]
        common = {"hidden": mlp["hidden"], "schedule": mlp["schedule"]}
        if name == "dpsgd_mlp":
            return cls(**common, **mlp["dpsgd"])
        if name == "subsample_aggregate_mlp":
            return cls(**common, **mlp["subsample_aggregate"], **cfg["subsample_aggregate"])
        return cls(**common, **mlp["non_private"])
    return cls(error_fraction=lb["error_fraction"], maxiter=lb["maxiter"])


def _configs():
    base = merged_config(DEFAULT_CONFIG_PATH)["studies"]["vdm2020"]
    smoke = merged_config(DEFAULT_CONFIG_PATH, SMOKE)["studies"]["vdm2020"]
    tiny = merged_config(DEFAULT_CONFIG_PATH, overrides=copy.deepcopy(TINY))["studies"]["vdm2020"]
    bare = copy.deepcopy(base)  # optional keys left out: the defaults the methods used apply
    del bare["lbfgs"], bare["loss_perturbation"]["neighbouring"], bare["dpsgd"]["clip_scale"]
    del bare["dpsgd"]["neighbouring"], bare["mlp"]["dpsgd"]["neighbouring"]
    return {"config.yaml": base, "smoke": smoke, "tiny": tiny, "optional keys absent": bare}


BUILTIN = ["non_private", "model_sensitivity", "prediction_sensitivity", "loss_perturbation", "subsample_aggregate",
           "dpsgd", "dpsgd_mlp", "subsample_aggregate_mlp", "non_private_mlp"]


@pytest.mark.parametrize("which", list(_configs()))
@pytest.mark.parametrize("name", BUILTIN)
def test_declared_settings_build_the_same_cells(which, name):
    import numpy as np

    cfg = _configs()[which]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    problem = Problem("k", "v", X, rng.integers(0, 3, 50), X[:10], rng.integers(0, 3, 10), 3)
    # the overrides the figures' points pass: T on Fig. 6b's axis, a fixed λ on Fig. 6a's
    axes = {"fig6b": {"n_models": 16}, "fig6a": {"l2": 1e-3}}
    for overrides in [{}] + [o for f, o in axes.items() if name in vdm2020.FIGURES[f].methods]:
        old, new = _old_make_method(cfg, name, **overrides), vdm2020.make_method(cfg, name, **overrides)
        assert type(new) is type(old)
        for k, v in old.settings.items():  # same values, same types (cell keys hold them as JSON)
            assert type(new.settings[k]) is type(v) and new.settings[k] == v, (k, new.settings[k], v)
        tuned = {"l2": 1e-3, "clip": 0.01, None: None}[new.tuned]
        for eps, delta, budget in ((1.0, 0.0, 10), (0.5, 1e-5, 100)):
            if old.supports(eps, delta, budget) is None:
                a = old.make_cell(problem, tuned, eps, delta, budget, 1)
                b = new.make_cell(problem, tuned, eps, delta, budget, 1)
                assert (a.key, a.stream_key) == (b.key, b.stream_key)


def test_a_required_setting_missing_is_an_error_naming_its_key():
    cfg = copy.deepcopy(_configs()["config.yaml"])
    del cfg["dpsgd"]["epochs"]
    with pytest.raises(ConfigError, match=r"studies\.vdm2020\.dpsgd\.epochs: required by method 'dpsgd'"):
        vdm2020.make_method(cfg, "dpsgd")


def test_schema_declares_every_setting_of_every_method():
    """The schema file's hand-written blocks (with their enums and ranges) and the declared settings agree: every
    declared setting is a key of the schema, with the same JSON type."""
    from dpbench.config import base_schema

    defs = base_schema()["$defs"]
    for name in BUILTIN:
        for s in REGISTRY.get(name).settings_spec:
            node = defs["vdm2020"]
            for part in s.path:
                node = node["properties"][part]
                node = defs[node["$ref"].rsplit("/", 1)[-1]] if "$ref" in node else node
            want = s.json_schema()
            for k in ("type", "enum"):
                if k in want or k in node:
                    assert node.get(k) == want.get(k), (name, s.path, node, want)


def test_schema_and_styles_come_from_the_registry():
    from dpbench.studies.extensions import config_schema

    schema = config_schema({})
    assert schema["$defs"]["methods"]["items"]["enum"] == REGISTRY.names()
    assert schema["$defs"]["vdm2020_dataset"]["enum"] == ["mnist"]
    # the styles the figures always had
    assert REGISTRY.style("loss_perturbation") == {"color": "tab:blue", "marker": "o"}
    assert REGISTRY.style("non_private_mlp") == {"color": "black", "linestyle": "--", "marker": None}
    assert REGISTRY.style("dpsgd_mlp") == REGISTRY.style("dpsgd")


def test_registration_checks_the_class_and_a_default_style_is_deterministic():
    from dpbench.methods.base import Registry

    reg = Registry()

    class Ok(Method):
        name, label, kind = "toy_ok", "toy", "training"
        settings_spec = (Setting("scale", "toy_ok", default=1.0),)

    reg.register(Ok)
    reg.register(Ok)  # the same class again (a plugin imported twice): fine
    style = reg.style("toy_ok")
    assert style == reg.style("toy_ok") and set(style) == {"color", "marker"}
    assert reg.schema_blocks() == {("toy_ok",): {"scale": {"type": "number"}}}

    class Other(Method):
        name, label, kind = "toy_ok", "other", "training"

    with pytest.raises(ValueError, match="already registered"):
        reg.register(Other)

    class BadName(Method):
        name, label, kind = "Toy-Bad", "x", "training"

    with pytest.raises(ValueError, match="name must match"):
        reg.register(BadName)

    class BadKind(Method):
        name, label, kind = "toy_kind", "x", "magic"

    with pytest.raises(ValueError, match="kind must be one of"):
        reg.register(BadKind)
