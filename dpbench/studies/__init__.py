"""The registered studies: one object per source, each implementing the study protocol
(:mod:`dpbench.studies.protocol`) — the only interface the workflow, runner, plotter and report use — and the
configuration as a run uses it: the schema (:mod:`dpbench.config`) plus every study's own checks."""

import importlib
from collections.abc import Mapping
from pathlib import Path

from dpbench.studies.protocol import Study


class _Studies(Mapping):
    """The registered studies by name, each imported on first use: a job that computes one study's series loads
    that study's code only (importing all six costs ~1 CPU-s per job, ~7 CPU-min over the default grid's jobs)."""

    _modules = {name: f"dpbench.studies.{name}" for name in ("vdm2020", "song2018", "wu2016", "estimation",
                                                              "membership", "audit")}

    def __init__(self):
        self._loaded: dict[str, Study] = {}

    def __getitem__(self, name: str) -> Study:
        if name not in self._loaded:
            if name not in self._modules:
                raise KeyError(name)
            obj = importlib.import_module(self._modules[name]).STUDY_OBJECT
            assert obj.name == name, f"{self._modules[name]} registers {obj.name!r}, not {name!r}"
            self._loaded[name] = obj
        return self._loaded[name]

    def __iter__(self):
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __contains__(self, name) -> bool:
        return name in self._modules


STUDIES: Mapping[str, Study] = _Studies()


def study(name: str) -> Study:
    try:
        return STUDIES[name]
    except KeyError:
        raise ValueError(f"unknown study {name!r}; known: {sorted(STUDIES)}") from None


def validate_config(config: dict) -> dict:
    """Validate a whole configuration: import its plugins, check it against the schema completed from the
    registries (:func:`dpbench.studies.extensions.config_schema`), register its user datasets, then run each
    study's own checks; raise :class:`dpbench.config.ConfigError` naming the first bad key. Returns the config
    (numbers coerced)."""
    from dpbench.config import coerce_numbers, validate_schema
    from dpbench.studies import extensions

    config = coerce_numbers(config) if isinstance(config, dict) else config
    if isinstance(config, dict):
        extensions.load_plugins(config)
    config = validate_schema(config, extensions.config_schema(config) if isinstance(config, dict) else None)
    extensions.activate(config)
    for name, study_cfg in config.get("studies", {}).items():
        STUDIES[name].validate(study_cfg, prefix=f"studies.{name}")
    return config


def load_config(*paths: str | Path, overrides: dict | None = None) -> dict:
    """Load ``config.yaml`` (or the first path), merge later paths and ``overrides`` on top and validate the
    result with :func:`validate_config` (see :func:`dpbench.config.merged_config`)."""
    from dpbench.config import merged_config

    return validate_config(merged_config(*paths, overrides=overrides))
