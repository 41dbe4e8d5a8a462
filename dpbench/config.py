"""Configuration: loading, deep-merging and validation.

A configuration is validated in full before any compute: first against the JSON schema in
``workflow/schemas/config.schema.yaml`` (types, ranges, unknown keys), then by the study modules
(cross-field rules). Every error names the offending key as a dotted path, e.g.
``studies.vdm2020.figures.fig1a.epsilons[2]: -1 is less than or equal to the minimum of 0``.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import yaml

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "workflow" / "schemas" / "config.schema.yaml"
DEFAULT_CONFIG_PATH = Path(__file__).resolve().parent.parent / "config.yaml"


class ConfigError(ValueError):
    """An invalid configuration; the message names the key."""


def deep_merge(base: dict, override: dict) -> dict:
    """Recursively merge ``override`` into a copy of ``base`` (as Snakemake does with --configfile)."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _schema() -> dict:
    with open(SCHEMA_PATH) as fh:
        return yaml.safe_load(fh)


def _path_of(error) -> str:
    parts: list[str] = []
    for p in error.absolute_path:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        else:
            parts.append(("." if parts else "") + str(p))
    return "".join(parts) or "<config>"


def validate_config(config: dict) -> dict:
    """Validate ``config``; raise :class:`ConfigError` naming the first bad key. Returns ``config``."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(list(e.absolute_path)), str(e.path)))
    if errors:
        err = errors[0]
        while err.validator in ("anyOf", "oneOf") and err.context:  # e.g. "null (disabled) or a figure spec":
            nested = [e for e in err.context if e.validator != "type" or e.validator_value != "null"]
            err = min(nested or err.context, key=lambda e: -len(list(e.absolute_path)))  # the deepest cause
        msg = err.message
        if err.validator == "additionalProperties":
            msg = f"unknown key ({msg})"
        raise ConfigError(f"invalid config: {_path_of(err)}: {msg}")
    from dpbench.studies import STUDIES

    for name, study_cfg in config.get("studies", {}).items():
        STUDIES[name].validate(study_cfg, prefix=f"studies.{name}")
    return config


def load_config(*paths: str | Path, overrides: dict | None = None) -> dict:
    """Load ``config.yaml`` (or the first path) and merge later paths and ``overrides`` on top."""
    paths = paths or (DEFAULT_CONFIG_PATH,)
    config: dict = {}
    for p in paths:
        with open(p) as fh:
            config = deep_merge(config, yaml.safe_load(fh) or {})
    if overrides:
        config = deep_merge(config, overrides)
    return validate_config(config)


def config_hash(config: dict) -> str:
    """A short content hash of the configuration (stored in every Parquet file)."""
    blob = json.dumps(config, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]

