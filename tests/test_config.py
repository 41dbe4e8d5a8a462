"""Bad input fails with one clear error naming the key, before any compute."""

import pytest

from dpbench.config import DEFAULT_CONFIG_PATH, ConfigError
from dpbench.studies import load_config
from pathlib import Path

SMOKE = Path(__file__).resolve().parent.parent / "config" / "smoke.yaml"


def fig(name, **kw):
    return {"studies": {"vdm2020": {"figures": {name: kw}}}}


def test_default_and_smoke_configs_are_valid():
    load_config(DEFAULT_CONFIG_PATH)
    cfg = load_config(DEFAULT_CONFIG_PATH, SMOKE)
    assert cfg["studies"]["vdm2020"]["repetitions"] == 3
    assert cfg["studies"]["vdm2020"]["figures"]["fig1a"]["delta"] == 0.0  # deep merge keeps unlisted keys


@pytest.mark.parametrize(
    "override, key",
    [
        (fig("fig1a", epsilons=[0.1, 0.0]), "studies.vdm2020.figures.fig1a.epsilons[1]"),
        (fig("fig1a", epsilons=[-1.0]), "studies.vdm2020.figures.fig1a.epsilons[0]"),
        (fig("fig1b", delta=1.0), "studies.vdm2020.figures.fig1b.delta"),
        (fig("fig1b", delta=-1e-5), "studies.vdm2020.figures.fig1b.delta"),
        (fig("fig2a", budgets=[0, 10]), "studies.vdm2020.figures.fig2a.budgets[0]"),
        (fig("fig2a", budgets=[1.5]), "studies.vdm2020.figures.fig2a.budgets[0]"),
        (fig("fig2b", epsilon=0), "studies.vdm2020.figures.fig2b.epsilon"),
        (fig("fig1a", epsilons="0.1, 1"), "studies.vdm2020.figures.fig1a.epsilons"),
        (fig("fig1a", epsilons=[]), "studies.vdm2020.figures.fig1a.epsilons"),
        (fig("fig1a", epsilons=[1.0, 1.0]), "studies.vdm2020.figures.fig1a.epsilons"),
        (fig("fig1a", methods=["magic"]), "studies.vdm2020.figures.fig1a.methods[0]"),
        (fig("fig1a", methods=["dpsgd"]), "studies.vdm2020.figures.fig1a.methods[0]"),
        (fig("fig9", epsilons=[1.0], delta=0.0, budget=1), "studies.vdm2020.figures"),
        ({"studies": {"vdm2020": {"repetitions": 0}}}, "studies.vdm2020.repetitions"),
        ({"studies": {"vdm2020": {"n_train": 100, "subsagg_models": 256}}}, "studies.vdm2020.subsagg_models"),
        ({"studies": {"vdm2020": {"dpsgd": {"sampling": "random"}}}}, "studies.vdm2020.dpsgd.sampling"),
        ({"studies": {"nostudy": {}}}, "studies"),
        ({"data": {"mnist_source": "internet"}}, "data.mnist_source"),
        ({"seed": -3}, "seed"),
        ({"studies": {"vdm2020": {"repetitions": 3.0}}}, "studies.vdm2020.repetitions"),   # an int, not 3.0
        ({"studies": {"vdm2020": {"n_train": 10**12}}}, "studies.vdm2020.n_train"),         # was "[Errno 22]"
        ({"results_dir": ""}, "results_dir"),          # "" put every output at the filesystem root
        ({"cache_dir": ""}, "cache_dir"),
        ({"data": {"cache_dir": ""}}, "data.cache_dir"),
    ],
)
def test_bad_config_names_the_key(override, key):
    with pytest.raises(ConfigError) as err:
        load_config(DEFAULT_CONFIG_PATH, overrides=override)
    assert f"invalid config: {key}" in str(err.value)


def test_unknown_figure_and_method_in_api():
    from dpbench.studies import vdm2020
    from dpbench.methods import REGISTRY

    with pytest.raises(ValueError, match="unknown figure 'fig99'"):
        vdm2020.figure("fig99")
    with pytest.raises(ValueError, match="unknown method 'magic'"):
        REGISTRY.get("magic")


@pytest.mark.parametrize("text, needle", [
    ("seed: 1\nseed: 2\n", "line 2, column 1: while constructing a mapping found duplicate key 'seed'"),
    ("studies:\n  vdm2020:\n    repetitions: 2\n    repetitions: 3\n", "duplicate key 'repetitions'"),
    ("seed: [1\n", "line 2, column 1"),
    ("seed: 1\n  bad: indent\n", "line 2"),
    ("- 1\n- 2\n", "the top level must be a mapping of keys, got a list"),
    ("just a string\n", "got a str"),
])
def test_bad_yaml_names_the_file_and_line(tmp_path, text, needle):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(DEFAULT_CONFIG_PATH, path)
    assert str(path) in str(err.value) and needle in str(err.value)


def test_deep_merge_of_a_list_is_a_config_error():
    from dpbench.config import deep_merge

    with pytest.raises(ConfigError, match="top level must be a mapping"):
        deep_merge({"a": 1}, [1, 2])


@pytest.mark.parametrize("text, key", [
    ("studies: {vdm2020: {figures: {fig1a: {epsilons: [.nan]}}}}", "studies.vdm2020.figures.fig1a.epsilons[0]"),
    ("studies: {vdm2020: {figures: {fig1a: {epsilons: [1.0, .inf]}}}}", "studies.vdm2020.figures.fig1a.epsilons[1]"),
    ("studies: {vdm2020: {figures: {fig1a: {epsilons: [1.0e+309]}}}}", "studies.vdm2020.figures.fig1a.epsilons[0]"),
    ("studies: {vdm2020: {figures: {fig1b: {delta: .nan}}}}", "studies.vdm2020.figures.fig1b.delta"),
    ("studies: {vdm2020: {figures: {fig6a: {lambdas: [.nan]}}}}", "studies.vdm2020.figures.fig6a.lambdas[0]"),
    ("studies: {estimation: {figures: {mean_vs_d: {epsilon: .nan}}}}", "studies.estimation.figures.mean_vs_d.epsilon"),
    ("studies: {estimation: {figures: {mean_vs_d: {mean_range: .inf}}}}",
     "studies.estimation.figures.mean_vs_d.mean_range"),
    ("studies: {wu2016: {figures: {fig4_1: {epsilons: [.nan]}}}}", "studies.wu2016.figures.fig4_1.epsilons[0]"),
    ("studies: {song2018: {figures: {fig7_4: {epsilons: [.nan]}}}}", "studies.song2018.figures.fig7_4.epsilons[0]"),
])
def test_non_finite_numbers_are_rejected(tmp_path, text, key):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="is not a finite number") as err:
        load_config(DEFAULT_CONFIG_PATH, path)
    assert f"invalid config: {key}:" in str(err.value)


@pytest.mark.parametrize("override, key", [
    ({"studies": {"vdm2020": {"repetitions": 10_000_000_000}}}, "studies.vdm2020.repetitions"),
    ({"studies": {"membership": {"repetitions": 10**6}}}, "studies.membership.repetitions"),
    ({"studies": {"song2018": {"figures": {"table7_1": {"epsilon": 1.0, "trials": 10**9}}}}},
     "studies.song2018.figures.table7_1.trials"),
])
def test_absurd_repetitions_are_rejected(override, key):
    with pytest.raises(ConfigError, match="greater than the maximum of 10000") as err:
        load_config(DEFAULT_CONFIG_PATH, overrides=override)
    assert key in str(err.value)


def test_song2018_chapter7_figures_can_be_disabled():
    from dpbench.studies import STUDIES

    off = {f: None for f in ("fig7_4", "table7_1", "table7_2", "table7_3", "fig7_5")}
    cfg = load_config(DEFAULT_CONFIG_PATH, SMOKE, overrides={"studies": {"song2018": {"figures": off}}})
    names = STUDIES["song2018"].figure_names(cfg["studies"]["song2018"])
    assert not set(names) & set(off)


def test_unwritable_folder_is_named_before_any_compute(tmp_path):
    from dpbench.config import check_writable

    blocker = tmp_path / "a_file"
    blocker.write_text("x")  # a file where a folder is needed: unwritable even for root
    cfg = load_config(DEFAULT_CONFIG_PATH, overrides={"cache_dir": str(blocker / "cache")})
    with pytest.raises(ConfigError, match="cache_dir: cannot write to") as err:
        check_writable(cfg)
    assert str(blocker / "cache") in str(err.value)


def test_unknown_key_suggests_the_closest(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("studies:\n  vdm2020:\n    repetitons: 3\n")
    with pytest.raises(ConfigError, match=r"'repetitons': did you mean 'repetitions'\?"):
        load_config(DEFAULT_CONFIG_PATH, bad)


def test_exponent_without_a_dot_is_a_number(tmp_path):
    import yaml

    assert yaml.safe_load("d: 1e-5")["d"] == "1e-5"  # PyYAML (YAML 1.1): a string
    f = tmp_path / "c.yaml"
    f.write_text("studies:\n  vdm2020:\n    figures:\n      fig1b:\n        epsilons: [1e-1, 2E0, 0.5]\n")
    cfg = load_config(DEFAULT_CONFIG_PATH, f)
    assert cfg["studies"]["vdm2020"]["figures"]["fig1b"]["epsilons"] == [0.1, 2.0, 0.5]
    # a config Snakemake read itself (strings) is converted by the validation
    raw = yaml.safe_load(f.read_text())
    from dpbench.config import deep_merge, load_yaml
    from dpbench.studies import validate_config

    merged = validate_config(deep_merge(load_yaml(DEFAULT_CONFIG_PATH), raw))
    assert merged["studies"]["vdm2020"]["figures"]["fig1b"]["epsilons"][:2] == [0.1, 2.0]


def test_a_misspelt_value_suggests_the_closest(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("studies:\n  vdm2020:\n    dpsgd:\n      sampling: poison\n")
    with pytest.raises(ConfigError, match=r"studies\.vdm2020\.dpsgd\.sampling: did you mean 'poisson'\?"):
        load_config(DEFAULT_CONFIG_PATH, str(p))
    with pytest.raises(ConfigError, match=r"did you mean 'loss_perturbation'\?"):
        load_config(DEFAULT_CONFIG_PATH, overrides={"studies": {"vdm2020": {"figures": {"fig1a": {
            "methods": ["loss_perturbaton"], "epsilons": [1.0], "delta": 0.0, "budget": 100}}}}})


def test_alias_bombs_deep_nesting_and_tiny_epsilon_are_named_errors(tmp_path):
    """A 2.5 KB "billion laughs" file (nested aliases, 10⁹ values once expanded) and a 5,000-deep list fail at
    once with a named error (78 s and 2.4 GB, and a RecursionError traceback, before); ε below 10⁻⁶ is refused by
    the schema (ε = 1e-300 raised from L-BFGS)."""
    import time

    lol = tmp_path / "lol.yaml"
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    lol.write_text("\n".join(lines) + "\n")
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match="expands to more than"):
        load_config(DEFAULT_CONFIG_PATH, str(lol))
    assert time.perf_counter() - t0 < 10
    deep = tmp_path / "deep.yaml"
    deep.write_text("x: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match="nested too deeply"):
        load_config(DEFAULT_CONFIG_PATH, str(deep))
    with pytest.raises(ConfigError, match="studies.vdm2020.figures.fig1a.epsilons"):
        load_config(DEFAULT_CONFIG_PATH, overrides={"studies": {"vdm2020": {"figures": {"fig1a": {
            "epsilons": [1e-300], "delta": 0.0, "budget": 100}}}}})
    ok = tmp_path / "anchors.yaml"            # ordinary anchors still work
    ok.write_text("studies:\n  vdm2020:\n    figures:\n      fig1a: &f {epsilons: [1.0], delta: 0.0, budget: 100}\n"
                  "      fig2a: null\n")
    assert load_config(DEFAULT_CONFIG_PATH, str(ok))["studies"]["vdm2020"]["figures"]["fig1a"]["epsilons"] == [1.0]


def test_default_config_and_schema_travel_with_an_installed_package(tmp_path):
    """A non-editable install has no checkout around the package: the config and schema come from dpbench/_data
    (links to the checkout's files, which a wheel build copies); in a checkout both paths name the same file."""
    import dpbench.config as C

    pkg = Path(C.__file__).resolve().parent / "_data"
    for name, path in (("config.yaml", C.DEFAULT_CONFIG_PATH), ("config.schema.yaml", C.SCHEMA_PATH)):
        assert (pkg / name).read_bytes() == Path(path).read_bytes()
        assert C._shipped(tmp_path / "no-checkout" / name, name) == pkg / name
