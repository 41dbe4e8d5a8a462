"""Configuration: loading, deep-merging and validation.

A configuration is validated in full before any compute: first against the JSON schema in
``workflow/schemas/config.schema.yaml`` (types, ranges, unknown keys), then by the study modules
(cross-field rules). Every error names the offending key as a dotted path, e.g.
``studies.vdm2020.figures.fig1a.epsilons[2]: -1 is less than or equal to the minimum of 0``.
Files are read strictly (:func:`load_yaml`): a YAML syntax error names the file and line, a key repeated in one
mapping is rejected, and a top level that is not a mapping is an error. NaN and infinite numbers are rejected
anywhere in the config (ε, δ, λ, ranges, ...), and every repetition/trial count has a documented maximum
(10 000; the canary audit's trials 1 000 000), so a typo such as ``1e10`` fails at start-up.

An unknown key is reported with the closest known keys ("did you mean 'repetitions'?").

Numbers in exponent notation without a dot (``1e-5``, ``2E3``) are numbers: PyYAML follows YAML 1.1, which reads
them as strings (only ``1.0e-5`` is a float there). :func:`load_yaml` reads them as floats, and
:func:`validate_schema` converts such strings in a config that Snakemake read itself, so ``delta: 1e-5`` and
``delta: 1.0e-5`` mean the same everywhere. (A string value that looks like such a number — none of the
config's string keys takes one — would be converted too.)
"""

from __future__ import annotations

import copy
import hashlib
import json
import difflib
import math
import re
from pathlib import Path

import yaml

def _shipped(checkout: Path, packaged: str) -> Path:
    """A file of the checkout (an editable install, a clone) or, for an installed wheel, its copy in the
    package (``dpbench/_data``: links to the checkout's files, copied by the build)."""
    return checkout if checkout.exists() else Path(__file__).resolve().parent / "_data" / packaged


SCHEMA_PATH = _shipped(Path(__file__).resolve().parent.parent / "workflow" / "schemas" / "config.schema.yaml",
                       "config.schema.yaml")
DEFAULT_CONFIG_PATH = _shipped(Path(__file__).resolve().parent.parent / "config.yaml", "config.yaml")


class ConfigError(ValueError):
    """An invalid configuration; the message names the key."""


#: a YAML 1.2 float that YAML 1.1 (PyYAML) reads as a string: exponent notation without a dot, e.g. 1e-5
_EXP_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*)[eE][-+]?[0-9]+$")


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that rejects a key repeated in one mapping (YAML would silently keep the last)."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found duplicate key {key!r} (first at line {seen[key] + 1})", key_node.start_mark)
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


_StrictLoader.add_implicit_resolver("tag:yaml.org,2002:float", _EXP_FLOAT, list("-+0123456789"))

#: bounds of a config document: values after expanding aliases (a 2.5 KB "billion laughs" file of nested aliases
#: expands to 10⁹ values, which every walk of the config — validation, copies, JSON — then pays), and nesting depth
MAX_YAML_VALUES = 1_000_000
MAX_YAML_DEPTH = 100


def _check_document_size(node, path) -> None:
    """Raise :class:`ConfigError` when the composed YAML ``node`` would expand to more than
    :data:`MAX_YAML_VALUES` values or nests deeper than :data:`MAX_YAML_DEPTH` (counted on the node graph, each
    shared node once: linear time whatever the expansion)."""
    size: dict = {}
    stack = [(node, 1, False)]
    while stack:
        n, depth, done = stack.pop()
        if depth > MAX_YAML_DEPTH:
            raise ConfigError(f"invalid config: {path}: nested deeper than {MAX_YAML_DEPTH} levels")
        kids = ([v for kv in n.value for v in kv] if isinstance(n, yaml.MappingNode) else
                list(n.value) if isinstance(n, yaml.SequenceNode) else [])
        if done:
            size[id(n)] = 1 + sum(size[id(k)] for k in kids)
            if size[id(n)] > MAX_YAML_VALUES:
                raise ConfigError(f"invalid config: {path}: the document expands to more than {MAX_YAML_VALUES:,} "
                                  f"values (nested aliases?)")
        elif id(n) not in size:
            stack.append((n, depth, True))
            stack.extend((k, depth + 1, False) for k in kids if id(k) not in size)


def coerce_numbers(obj):
    """``obj`` with every string of the form ``1e-5`` (YAML 1.2 float, a string in YAML 1.1) as a float, and every
    numeric mapping key as its string (``{1.0: 20000}`` → ``{"1.0": 20000}``: the jobs read the config from JSON,
    whose keys are strings; the readers of such maps compare ``float(key)``)."""
    if isinstance(obj, str) and _EXP_FLOAT.match(obj):
        return float(obj.replace("_", ""))
    if isinstance(obj, dict):
        return {(str(k) if isinstance(k, (int, float)) and not isinstance(k, bool) else k): coerce_numbers(v)
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [coerce_numbers(v) for v in obj]
    return obj


def load_yaml(path: str | Path) -> dict:
    """The mapping in YAML file ``path``, read strictly: a syntax error, a duplicated key or a top level that
    is not a mapping raises :class:`ConfigError` naming the file and line."""
    try:
        with open(path) as fh:
            loader = _StrictLoader(fh)
            try:
                node = loader.get_single_node()
                if node is not None:
                    _check_document_size(node, path)
                data = loader.construct_document(node) if node is not None else None
            finally:
                loader.dispose()
    except RecursionError:
        raise ConfigError(f"invalid config: {path}: nested too deeply (more than {MAX_YAML_DEPTH} levels)") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark is not None else str(path)
        what = " ".join(str(x) for x in (getattr(exc, "context", None), getattr(exc, "problem", None)) if x) or str(exc)
        raise ConfigError(f"invalid config: {where}: {what}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"invalid config: {path}: the top level must be a mapping of keys, "
                          f"got a {type(data).__name__}")
    return data


def _non_finite(obj, path: str = ""):
    """The dotted path of the first NaN or infinite number in ``obj``, or None."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return path or "<config>"
    if isinstance(obj, dict):
        for k, v in obj.items():
            if (bad := _non_finite(v, f"{path}.{k}" if path else str(k))) is not None:
                return bad
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            if (bad := _non_finite(v, f"{path}[{i}]")) is not None:
                return bad
    return None


def deep_merge(base: dict, override: dict) -> dict:
    """Recursively merge ``override`` into a copy of ``base`` (as Snakemake does with --configfile)."""
    if not isinstance(base, dict) or not isinstance(override, dict):
        bad = override if isinstance(base, dict) else base
        raise ConfigError(f"invalid config: the top level must be a mapping of keys, got a {type(bad).__name__}")
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def base_schema() -> dict:
    """The JSON schema of the file (a fresh copy). The studies fill in what the registries hold — method names,
    the config blocks of added methods, dataset names — in :func:`dpbench.studies.extensions.config_schema`."""
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


def validate_schema(config: dict, schema: dict | None = None) -> dict:
    """Check ``config`` against the JSON schema (``schema``; default: workflow/schemas/config.schema.yaml as it
    is) and for non-finite numbers; raise :class:`ConfigError` naming the first bad key. Returns ``config``
    (numbers given as strings coerced). The studies' own checks (grids, methods, options) come on top:
    :func:`dpbench.studies.validate_config`, which also passes the schema completed from the registries."""
    import jsonschema

    if not isinstance(config, dict):
        raise ConfigError(f"invalid config: the top level must be a mapping of keys, got a {type(config).__name__}")
    config = coerce_numbers(config)
    if (bad := _non_finite(config)) is not None:  # JSON schema bounds let NaN through and accept infinity
        raise ConfigError(f"invalid config: {bad}: {_value_at(config, bad)!r} is not a finite number")
    # "integer" means an int: JSON Schema counts 3.0 as an integer, but a float repetition count fails later
    # (range(3.0)) far from its key
    checker = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _c, v: isinstance(v, int) and not isinstance(v, bool))
    strict = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=checker)
    validator = strict(base_schema() if schema is None else schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(list(e.absolute_path)), str(e.path)))
    if errors:
        err = errors[0]
        while err.validator in ("anyOf", "oneOf") and err.context:  # e.g. "null (disabled) or a figure spec":
            nested = [e for e in err.context if e.validator != "type" or e.validator_value != "null"]
            err = min(nested or err.context, key=lambda e: -len(list(e.absolute_path)))  # the deepest cause
        msg = err.message
        if err.validator == "additionalProperties":
            msg = f"unknown key ({msg})" + _did_you_mean(err)
        elif err.validator == "enum" and isinstance(err.instance, str):
            import difflib

            close = difflib.get_close_matches(err.instance, [str(v) for v in err.validator_value], n=1, cutoff=0.6)
            msg = f"did you mean {close[0]!r}? ({msg})" if close else msg
        raise ConfigError(f"invalid config: {_path_of(err)}: {msg}")
    return config


def _did_you_mean(err) -> str:
    """'; did you mean 'repetitions'?' for the unknown keys of an additionalProperties error (empty if none is
    close to a known key)."""
    known = list((err.schema or {}).get("properties") or {})
    inst = err.instance if isinstance(err.instance, dict) else {}
    hints = []
    for key in inst:
        if key in known or not isinstance(key, str):
            continue
        close = difflib.get_close_matches(key, known, n=2, cutoff=0.6)
        if close:
            hints.append(f"{key!r}: did you mean {' or '.join(repr(c) for c in close)}?")
    return ("; " + "; ".join(hints)) if hints else (f"; known keys: {', '.join(sorted(known))}" if known else "")


def _value_at(config: dict, dotted: str):
    import re

    obj = config
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", dotted):
        obj = obj[int(index)] if index else obj[name]
    return obj


def merged_config(*paths: str | Path, overrides: dict | None = None) -> dict:
    """Load ``config.yaml`` (or the first path) and merge later paths and ``overrides`` on top (each file read
    by :func:`load_yaml`: syntax errors and duplicated keys are errors naming the file and line); not validated."""
    paths = paths or (DEFAULT_CONFIG_PATH,)
    config: dict = {}
    for p in paths:
        config = deep_merge(config, load_yaml(p))
    if overrides:
        config = deep_merge(config, overrides)
    return config


def read_config(*paths: str | Path, overrides: dict | None = None) -> dict:
    """:func:`merged_config` checked against the schema file only (:func:`validate_schema`; no plugins, no user
    datasets). A run uses :func:`dpbench.studies.load_config`, which adds them and the studies' checks."""
    return validate_schema(merged_config(*paths, overrides=overrides))


def check_writable(config: dict) -> None:
    """Make sure the folders a run writes (results, figures, cache, data cache) accept a file (or, if they do
    not exist yet, that their nearest existing ancestor does; nothing is created); raise :class:`ConfigError` naming the config key and the path otherwise -- before any
    compute, rather than a PermissionError at the first write hours later."""
    import tempfile

    for key in ("results_dir", "cache_dir", "figures_dir", "data.cache_dir"):
        value = config.get(key) if "." not in key else (config.get("data") or {}).get("cache_dir")
        if not value:
            continue
        path = Path(value).expanduser()
        probe = path  # the folder itself or, if it does not exist yet, the nearest existing ancestor
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        try:
            if not probe.is_dir():
                raise NotADirectoryError(20, f"{probe} is not a folder")
            with tempfile.NamedTemporaryFile(dir=probe, prefix=".dpbench-write-check."):
                pass
        except OSError as exc:
            raise ConfigError(f"invalid config: {key}: cannot write to {path} "
                              f"({exc.strerror or type(exc).__name__}); choose a writable folder") from None


def config_hash(config: dict) -> str:
    """A short content hash of the configuration (stored in every Parquet file)."""
    blob = json.dumps(config, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]

