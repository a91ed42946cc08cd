"""Configuration: JSON-schema validation with defaults, and one-line errors.

The schema is the single source of the allowed keys, ranges and defaults: the keys every study
shares in ``schemas/config.schema.json`` and each study's sections in its folder's
``config.schema.json`` (``studies/<study>/``), merged in the studies' order
(``workflow_lib.core.studies``); both are read
with ``importlib.resources``. ``check`` validates a config mapping and lists every problem, one
line each naming the key, the value and what is allowed (a misspelt key with the allowed key it
is closest to); ``load_config`` fills the defaults and returns a new dict, or raises
``ConfigError`` with every problem.
"""

from __future__ import annotations

import copy
import difflib
import functools
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from workflow_lib.core import realisations, studies
from workflow_lib.core.errors import ConfigError

SCHEMA = resources.files("workflow_lib") / "schemas" / "config.schema.json"
STUDY_SCHEMA = "config.schema.json"  # a study's sections, in its folder


def load_schema() -> dict:
    """The config schema (a fresh copy: callers may modify it)."""
    return copy.deepcopy(_schema())


@functools.cache
def _schema() -> dict:
    """The shared schema with each study's sections (its ``properties``) added."""
    schema = json.loads(SCHEMA.read_text())
    for name in studies.names():
        path = resources.files("workflow_lib.studies") / name / STUDY_SCHEMA
        if not path.is_file():
            continue
        sections = json.loads(path.read_text())["properties"]
        taken = sections.keys() & schema["properties"].keys()
        if taken:
            raise ValueError(f"{name}/{STUDY_SCHEMA}: config keys {sorted(taken)} are defined "
                             f"twice; give the study's section another name")
        schema["properties"].update(sections)
    return schema


def study_sections(name: str) -> tuple[str, ...]:
    """The config sections of study ``name``'s own (``studies/<name>/config.schema.json``; none
    without one)."""
    path = resources.files("workflow_lib.studies") / name / STUDY_SCHEMA
    return tuple(json.loads(path.read_text())["properties"]) if path.is_file() else ()


def study_keys(name: str) -> tuple[str, ...]:
    """The top-level config keys study ``name`` reads: the shared schema's and the sections of
    its own (``study_sections``)."""
    return (*json.loads(SCHEMA.read_text())["properties"], *study_sections(name))


def schema_default(key: str) -> Any:
    """The schema's default of the dotted config ``key`` (e.g. ``'training.init_scale'``): the one
    place defaults live, for code, benchmarks and tests alike."""
    node = load_schema()
    try:
        for part in key.split("."):
            node = node["properties"][part]
        return node["default"]
    except KeyError:
        raise KeyError(f"the config schema has no default for {key!r}") from None


def schema_defaults(section: str) -> dict[str, Any]:
    """The defaults of config section ``section``, for callers that pass a partial config."""
    props = load_schema()["properties"][section]["properties"]
    return {k: copy.deepcopy(v["default"]) for k, v in props.items() if "default" in v}


def _fill_defaults(schema: dict, instance: dict) -> None:
    for key, sub in schema.get("properties", {}).items():
        if key not in instance and "default" in sub:
            instance[key] = copy.deepcopy(sub["default"])
        if sub.get("type") == "object" and isinstance(instance.get(key), dict):
            _fill_defaults(sub, instance[key])


_BOUNDS = (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="),
           ("exclusiveMaximum", "<"))  # fmt: skip
DESCRIBED = ("enum", *(key for key, _ in _BOUNDS), "multipleOf", "minLength", "pattern",
             "minItems", "maxItems", "uniqueItems")
"""The schema keywords that ``constraints`` puts in words."""


def constraints(node: dict, literal: Callable[[str], str] = str) -> list[str]:
    """The constraints of the schema ``node`` (not its type, not those of its items) in words,
    one per keyword of ``DESCRIBED`` it has; ``literal`` marks up literal text (an enum member
    as JSON, a pattern), e.g. as a Markdown code span."""
    out = []
    if "enum" in node:
        out.append("one of " + ", ".join(literal(json.dumps(v)) for v in node["enum"]))
    out += [f"{op} {node[k]}" for k, op in _BOUNDS if k in node]
    if "multipleOf" in node:
        out.append(f"multiple of {node['multipleOf']}")
    if "minLength" in node:
        out.append(f"at least {node['minLength']} character(s)")
    if "pattern" in node:
        out.append(f"matching {literal(node['pattern'])}")
    if "minItems" in node:
        out.append(f"at least {node['minItems']} item(s)")
    if "maxItems" in node:
        out.append(f"at most {node['maxItems']} item(s)")
    if node.get("uniqueItems"):
        out.append("unique items")
    return out


def allowed(node: dict) -> str:
    """What the schema ``node`` allows, in words: its type and ``constraints`` (an enum alone
    for an enum), as a config error states it."""
    words = constraints(node)
    if "enum" in node:
        return " and ".join(words)
    types = node.get("type", "value")
    types = " or ".join(types) if isinstance(types, list) else types
    return " ".join([types, " and ".join(words)]) if words else types


def _describe(error: jsonschema.ValidationError) -> str:
    key = ".".join(str(p) for p in error.absolute_path) or "<top level>"
    if error.validator == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(known))
        where = key + "." if error.absolute_path else ""
        text = (f"unknown key {', '.join(where + u for u in unknown)}; "
                f"allowed keys here: {', '.join(known)}")
        return text + _did_you_mean(unknown, known, where)
    value = json.dumps(error.instance) if not isinstance(error.instance, dict) else "{...}"
    if error.validator == "required":
        missing = ", ".join(sorted(set(error.validator_value) - set(error.instance)))
        return f"{key}: missing key {missing} (required: {', '.join(error.validator_value)})"
    if error.validator == "uniqueItems":
        return f"{key} = {value}: items must be unique"
    text = f"{key} = {value}: must be {allowed(error.schema)}"
    if (error.validator == "type" and error.validator_value == "boolean"
            and isinstance(error.instance, str) and len(error.path) == 1):
        # Snakemake's --config KEY=VALUE reads True and False as booleans, nothing else
        text += f" (on the command line: --config {key}=True or {key}=False)"
    if error.validator == "type" and isinstance(error.instance, str) and len(error.path) > 1:
        # Snakemake's --config KEY={...} reads the values inside the mapping as text
        text += (" (a value nested in --config KEY={...} arrives as text: set it in a YAML file "
                 "given with --configfile, e.g. config/gpu.yaml for compute.gpu)")
    return text


def _did_you_mean(unknown: list[str], known: list[str], where: str) -> str:
    """``"; did you mean ...?"`` naming the allowed key closest to each misspelt one of
    ``unknown`` (``difflib``'s close matches among ``known``), or ``""`` when none is close."""
    close = {u: m[0] for u in unknown if (m := difflib.get_close_matches(u, known, n=1))}
    if not close:
        return ""
    if len(unknown) == 1:
        return f"; did you mean {where}{close[unknown[0]]}?"
    pairs = (f"{where}{match} for {where}{u}" for u, match in close.items())
    return f"; did you mean {', '.join(pairs)}?"


def _path_order(error: jsonschema.ValidationError) -> tuple:
    """Sort key of a schema error: its key path, list indices in numeric order."""
    return tuple((0, p) if isinstance(p, int) else (1, p) for p in error.absolute_path)


def _relation_problems(cfg: dict) -> list[str]:
    """The relations between keys that a schema-valid ``cfg`` (defaults filled) breaks, one line
    each."""
    problems = []
    tuning = cfg["beta_tuning"]
    if tuning["beta_min"] >= tuning["beta_max"]:
        problems.append(f"beta_tuning.beta_min = {tuning['beta_min']} must be below "
                        f"beta_tuning.beta_max = {tuning['beta_max']}")
    largest, n_train = max(cfg["sample_complexity"]["M"]), cfg["sampling"]["n_train"]
    if largest > n_train:
        problems.append(f"sample_complexity.M goes up to {largest} but sampling.n_train = "
                        f"{n_train}: the sweep uses the first M training sequences; raise n_train "
                        "or shrink M")
    training = cfg["training"]
    if 0 in training["interpolation_a"] and "factored" not in training["architectures"]:
        problems.append("training.interpolation_a has a = 0 but training.architectures lacks "
                        "factored: the interpolated layer at a = 0 is factored attention, read "
                        "from its fit; add factored or drop 0")
    names = [family["name"] for family in cfg["proteins"]["families"]]
    problems += [f"proteins.families: the name {name!r} is used twice; each family needs its own "
                 "name" for name in sorted({name for name in names if names.count(name) > 1})]
    rep = cfg["replica"]
    if rep["alpha_min"] >= rep["alpha_max"]:
        problems.append(f"replica.alpha_min = {rep['alpha_min']} must be below "
                        f"replica.alpha_max = {rep['alpha_max']}")
    try:
        realisations.check(cfg, studies.studies())
    except ConfigError as exc:
        problems += exc.problems
    return problems


def check(config: Mapping[str, Any]) -> tuple[dict, list[str]]:
    """``config`` validated: a new dict with the schema's defaults filled (as far as they go where
    a section is invalid) and every problem, one line each in key order (empty when valid). The
    relations between keys are checked only when every value is valid, as they read the values."""
    cfg = copy.deepcopy(dict(config))
    schema = load_schema()
    validator = jsonschema.Draft202012Validator(schema)
    problems = [_describe(error) for error in sorted(validator.iter_errors(cfg), key=_path_order)]
    _fill_defaults(schema, cfg)
    if not problems:
        problems = _relation_problems(cfg)
    return cfg, problems


def is_valid(cfg: Mapping[str, Any], key: str) -> bool:
    """Whether the value of the dotted ``key`` (e.g. ``'proteins.families'``) in ``cfg`` (with the
    defaults filled, as ``check`` returns it) meets the schema, whatever the other keys hold."""
    node, value = load_schema(), cfg
    for part in key.split("."):
        node = node["properties"][part]
        value = value.get(part) if isinstance(value, Mapping) else None
    return jsonschema.Draft202012Validator(node).is_valid(value)


def load_config(config: Mapping[str, Any], source: str = "the config") -> dict:
    """Validate ``config`` against the schema, fill defaults, return a new dict; a problem raises
    ``ConfigError`` listing every problem of ``source``."""
    cfg, problems = check(config)
    if problems:
        raise ConfigError(problems, source)
    return cfg


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict:
    """``over`` merged into ``base`` as Snakemake merges config files: nested mappings key by
    key, anything else replaced."""
    out = dict(base)
    for k, v in over.items():
        both = isinstance(v, Mapping) and isinstance(out.get(k), Mapping)
        out[k] = merge(out[k], v) if both else v
    return out


def merged_config(paths: list[str | Path], sets: Sequence[str] = ()) -> dict:
    """The config of YAML files merged in order (as ``--configfile`` does) and ``KEY.PATH=YAML``
    assignments, as written (not validated)."""
    raw: dict = {}
    for path in paths:
        try:
            loaded = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read config file {path}: {exc}".replace("\n", " ")) from exc
        if not isinstance(loaded, dict):
            kind = type(loaded).__name__
            raise ConfigError(f"config file {path} must hold a mapping of keys, not {kind}")
        raw = merge(raw, loaded)
    for item in sets:
        keys, sep, value = item.partition("=")
        if not sep or not keys:
            raise ConfigError(f"--set {item!r}: expected KEY.PATH=VALUE")
        *parents, last = keys.split(".")
        node = raw
        for k in parents:
            node = node.setdefault(k, {})
        node[last] = yaml.safe_load(value)
    return raw


def sources(paths: list[str | Path]) -> str:
    """The config files ``paths`` as a config error names them: ``a.yaml + b.yaml``."""
    return " + ".join(str(path) for path in paths)


def read_config_files(paths: list[str | Path], sets: Sequence[str] = ()) -> dict:
    """The config of YAML files merged in order (as ``--configfile`` does) and ``KEY.PATH=YAML``
    assignments, validated with the defaults filled."""
    return load_config(merged_config(paths, sets), sources(paths))


def read_config_file(path: str | Path) -> dict:
    """Load and validate a YAML config file."""
    return read_config_files([path])


def digest(params: Mapping[str, Any]) -> str:
    """A stable short hash of a JSON-serialisable mapping (the config slice a job depends on)."""
    blob = json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]

