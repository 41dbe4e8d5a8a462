"""What a configuration adds to the package: plugin modules (``plugins:``, e.g. a method class that registers
itself in :data:`dpbench.methods.REGISTRY`) and user datasets (``datasets:``, :mod:`dpbench.data.user`).

:func:`activate` makes them known in a process — the main Snakemake process (before the config is validated),
each job process (which parses the Snakefile again) and each joblib worker (:mod:`dpbench.runner`) — and
:func:`config_schema` is the config's JSON schema with what the registries hold (method names, method config
blocks, dataset names) filled in by the studies. A worked example: docs/extending.md.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path

from dpbench.config import ConfigError

_ACTIVE: set[str] = set()


def _plugin_module_name(path: Path) -> str:
    import hashlib

    return f"dpbench_plugin_{path.stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"


def load_plugins(config: dict) -> None:
    """Import every module of ``plugins`` (a module name, importable from the Python path, or a ``.py`` file,
    relative to the working folder); a failure is a :class:`ConfigError` naming ``plugins[i]``."""
    plugins = config.get("plugins") or []
    if not isinstance(plugins, list) or not all(isinstance(p, str) and p for p in plugins):
        raise ConfigError("invalid config: plugins: a list of module names or .py files")
    for i, entry in enumerate(plugins):
        try:
            if entry.endswith(".py"):
                path = Path(entry).expanduser().resolve()
                if not path.is_file():
                    raise FileNotFoundError(f"no file {path}")
                name = _plugin_module_name(path)
                if name in sys.modules:
                    continue
                spec = importlib.util.spec_from_file_location(name, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module  # before running it: its classes name this module
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    sys.modules.pop(name, None)
                    raise
            else:
                importlib.import_module(entry)
        except Exception as exc:  # noqa: BLE001 - whatever the plugin raises: name the entry
            raise ConfigError(f"invalid config: plugins[{i}]: cannot import {entry!r}: "
                              f"{type(exc).__name__}: {exc}") from exc


def register_datasets(config: dict) -> None:
    """Register every entry of ``datasets`` (:func:`dpbench.data.user.register`); a bad entry is a
    :class:`ConfigError` naming its key."""
    from dpbench.data.user import UserDataset, UserDatasetError, register

    for name, spec in (config.get("datasets") or {}).items():
        try:
            register(UserDataset.from_config(name, spec))
        except UserDatasetError as exc:
            raise ConfigError(f"invalid config: {exc}") from None


def activate(config: dict) -> None:
    """:func:`load_plugins` and :func:`register_datasets` once per process and config content."""
    key = json.dumps([config.get("plugins"), config.get("datasets")], sort_keys=True, default=str)
    if key in _ACTIVE:
        return
    load_plugins(config)
    register_datasets(config)
    _ACTIVE.add(key)


def config_schema(config: dict) -> dict:
    """The config's JSON schema (workflow/schemas/config.schema.yaml) with each study's additions derived from
    the registries (its ``extend_schema`` hook): the plugins must be loaded first (:func:`load_plugins`)."""
    from dpbench.config import base_schema
    from dpbench.studies import STUDIES

    schema = base_schema()
    for st in STUDIES.values():
        st.extend_schema(schema, config)
    return schema
