"""A `RunConfig` from a file, `--set` overrides and flags; older job.json files.

The order, each later one winning: the defaults, then the `--config` file
(YAML or JSON, the nested layout of `RunConfig.to_dict`), then each
`--set section.key=value` in turn, then the flags given on the command
line.
"""

import dataclasses
import json
import os

from keras_transformer.recipe.config import (
    SECTIONS,
    VERSION,
    ModelSection,
    RunConfig,
    check_keys,
)


def load_config(path=None, sets=(), flags=None):
    """The `RunConfig` of a file, `--set` overrides and flags, in that order.

    Args:
        path: a YAML (.yaml, .yml) or JSON file of nested settings, or None.
        sets: "section.key=value" strings; the value is read as YAML (so
            `0.2`, `true`, `null`, `[a.de, a.en]` and `{"dropout": 0.1}`
            read as their types).
        flags: {section: {key: value}} from the command line.

    Raises:
        ValueError: an unknown section or key (named), a malformed `--set`,
            or a value the section refuses.
    """
    values = read_config_file(path) if path else {}
    values.pop("version", None)
    for assignment in sets:
        section, key, value = parse_set(assignment)
        values.setdefault(section, {})[key] = value
    for section, fields in (flags or {}).items():
        values.setdefault(section, {}).update(fields)
    return RunConfig.from_dict(values)


def read_config_file(path):
    """The nested dict of a YAML or JSON config file (a version-1 job.json too)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No config file at {path}.")
    with open(path, encoding="utf-8") as file:
        text = file.read()
    try:
        if path.endswith((".yaml", ".yml")):
            import yaml

            values = yaml.safe_load(text) or {}
        else:
            values = json.loads(text)
    except ValueError as error:  # json's and yaml's parse errors
        first_line = str(error).splitlines()[0]
        raise ValueError(f"{path} is not valid YAML or JSON: {first_line}") from error
    if not isinstance(values, dict):
        raise ValueError(f"{path} must hold a mapping of config sections.")
    if "version" in values or set(values) <= set(SECTIONS):
        return values
    return upgrade_flat_config(values)  # a version-1 job.json


def parse_set(assignment):
    """("section", "key", value) of a `--set section.key=value` string.

    Example:

    >>> parse_set("training.label_smoothing=0.2")
    ('training', 'label_smoothing', 0.2)
    >>> parse_set("model.dropout")
    Traceback (most recent call last):
    ...
    ValueError: --set takes section.key=value, got 'model.dropout'.
    """
    import yaml

    name, equals, text = assignment.partition("=")
    section, dot, key = name.strip().partition(".")
    if not (equals and dot and key):
        raise ValueError(f"--set takes section.key=value, got {assignment!r}.")
    if section not in SECTIONS:
        raise ValueError(
            f"Unknown config section {section!r} in --set {assignment}; the "
            f"sections are {', '.join(SECTIONS)}."
        )
    if section != "model":
        check_keys(section, [key])
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        value = text
    return section, key, value


# Where each field of a version-1 (flat) job.json goes.
_FLAT_FIELDS = {
    field.name: section
    for section, kind in SECTIONS.items()
    if section != "model"
    for field in dataclasses.fields(kind)
}
_FLAT_FIELDS.update(preset="model", max_length="model")
# Version 1 kept training settings in the TransformerConfig overrides too.
_MOVED_TO_TRAINING = ("label_smoothing", "warmup_steps")


def upgrade_flat_config(values):
    """A version-1 job.json (flat `TranslationJob` fields) as nested sections.

    `test_sample: null` meant all sentences; `model` held TransformerConfig
    overrides, among them possibly the training settings `label_smoothing`
    and `warmup_steps`, which move to the training section.

    Example:

    >>> upgrade_flat_config({"epochs": 2, "model": {"warmup_steps": 9}})
    {'training': {'epochs': 2, 'warmup_steps': 9}, 'model': {}, 'version': 2}
    """
    nested = {}
    for name, value in values.items():
        if name == "model":
            continue
        if name not in _FLAT_FIELDS:
            raise ValueError(
                f"Unknown setting {name!r}: not a setting of this version or of "
                "version 1 (a flat job.json)."
            )
        if name == "test_sample" and value is None:
            value = "all"
        nested.setdefault(_FLAT_FIELDS[name], {})[name] = value
    overrides = dict(values.get("model") or {})
    for name in _MOVED_TO_TRAINING:
        if name in overrides:
            nested.setdefault("training", {})[name] = overrides.pop(name)
    nested["model"] = {**nested.get("model", {}), **overrides}
    nested["version"] = VERSION
    return nested


def dump_config(config, path=None):
    """The config as YAML text (written to `path` if given, .json as JSON)."""
    values = config.to_dict()
    if path and path.endswith(".json"):
        text = json.dumps(values, indent=2) + "\n"
    else:
        import yaml

        text = yaml.safe_dump(values, sort_keys=False)
    if path:
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
    return text


def flag_fields():
    """[(section, field)] of every setting that `keras-transformer train`
    takes as a flag, in the order of its --help; the model overrides are
    the one flag `--model` (JSON)."""
    return [
        (section, field)
        for section, kind in SECTIONS.items()
        for field in dataclasses.fields(kind)
    ]


def model_flag_value(text):
    """The `--model` flag's JSON, checked to be an object.

    Example:

    >>> model_flag_value('{"dropout": 0.3}')
    {'dropout': 0.3}
    >>> model_flag_value('[1]')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: --model takes a JSON object of TransformerConfig fields, ...
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"--model is not valid JSON ({error}): {text}") from error
    if not isinstance(value, dict):
        raise ValueError(
            "--model takes a JSON object of TransformerConfig fields, e.g. "
            f"'{{\"dropout\": 0.2}}'; got {text}."
        )
    ModelSection.from_dict(value)  # an unknown field is named now
    return value
