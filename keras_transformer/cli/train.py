"""`keras-transformer train`: its flags, made from the `RunConfig` fields."""

import argparse
import dataclasses
import json
import typing

from keras_transformer.recipe.config import ALL, SECTIONS
from keras_transformer.recipe.config_files import (
    dump_config,
    flag_fields,
    load_config,
    model_flag_value,
)

DESCRIPTION = """\
Trains a Transformer with the paper's recipe, reports test BLEU/chrF/TER with beam
search and exports a SavedModel. Rerun the same command to resume after an
interruption.

Settings come from, each later one winning: the defaults, the --config file
(YAML or JSON, sections as --print-config writes them), each --set
section.key=value in turn, then the flags."""


def add_train_parser(commands):
    parser = commands.add_parser(
        "train",
        help="train, evaluate and export a translation model",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    files = parser.add_argument_group("config file")
    files.add_argument("--config", metavar="FILE", help="a YAML or JSON run config")
    files.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override one setting, e.g. training.label_smoothing=0.2 (repeatable)",
    )
    files.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved config as YAML and exit without training",
    )
    groups = {name: parser.add_argument_group(name) for name in SECTIONS}
    for section, field in flag_fields():
        name = field.metadata.get("flag", "--" + field.name.replace("_", "-"))
        groups[section].add_argument(
            name,
            dest=f"{section}.{field.name}",
            default=argparse.SUPPRESS,  # only flags given override the config
            help=_help(field),
            **_parsing(field),
            **_display(field),
        )
    parser.set_defaults(run=train, written_folder=_written_folder)


def _display(field):
    """The flag's `choices`, or its `metavar` (the field's name by default)."""
    if "choices" in field.metadata:
        return {"choices": field.metadata["choices"]}
    return {"metavar": field.metadata.get("metavar", field.name.upper())}


def _help(field):
    """The field's help, with its default unless the help says it."""
    text = field.metadata.get("help") or ""
    default = (
        field.default_factory()
        if field.default is dataclasses.MISSING
        else field.default
    )
    if "default" in text or default in (None, (), {}, ""):
        return text
    return f"{text} (default: {default})" if text else f"default: {default}"


def _parsing(field):
    """`add_argument`'s `type`, `nargs` or `action` for the field's type."""
    if field.type is dict:
        return {}  # JSON, read by `config_of` (a bad one is a one-line error)
    kinds = [kind for kind in typing.get_args(field.type) or (field.type,)]
    kinds = [kind for kind in kinds if kind is not type(None)]
    if kinds == [bool]:
        return {"action": argparse.BooleanOptionalAction}
    if kinds == [tuple]:
        return {"nargs": "+"}
    if kinds == [int, str]:
        return {"type": _count_or_all}
    return {"type": kinds[0]}


def _count_or_all(text):
    """An int, or "all" (the `bleu_sample` and `test_sample` flags)."""
    return text if text == ALL else int(text)


def config_of(args):
    """The `RunConfig` of parsed `train` arguments."""
    flags = {}
    for dest, value in vars(args).items():
        section, dot, key = dest.partition(".")
        if not dot or section not in SECTIONS:
            continue
        if key == "overrides":  # --model: TransformerConfig fields
            flags.setdefault(section, {}).update(model_flag_value(value))
        else:
            flags.setdefault(section, {})[key] = value
    return load_config(args.config, args.set, flags)


def _written_folder(args):
    """The run folder `train` writes; None where `main` cannot lock it
    first: --print-config writes nothing, and a multi-worker run's chief
    is known only once its strategy is made (`run` locks it then)."""
    config = config_of(args)
    if args.print_config or config.runtime.strategy == "multi_worker":
        return None
    return config.output.output_dir


def train(args):
    config = config_of(args)
    if args.print_config:
        print(dump_config(config), end="")
        return
    from keras_transformer.recipe import run as run_module  # TensorFlow

    results = run_module.run(config)
    keys = ("bleu", "chrf", "ter", "export_path")  # no "ter" in runs before it
    print(json.dumps({key: results[key] for key in keys if key in results}))
