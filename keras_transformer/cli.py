"""The `keras-transformer` command line.

    keras-transformer train [options]       # the translation job
    keras-transformer translate PATH TEXT   # translate with an export
    keras-transformer average DIR OUTPUT    # average the last checkpoints
    keras-transformer evaluate DIR          # score a run on validation/test

Run `keras-transformer COMMAND --help` for the options.
"""

import argparse
import dataclasses
import json
import sys
import typing

from keras_transformer.job import TranslationJob


def _train_parser(commands):
    defaults = TranslationJob()
    parser = commands.add_parser(
        "train",
        help="train, evaluate and export a translation model",
        description="Trains a Transformer with the paper's recipe, reports test "
        "BLEU/chrF with beam search and exports a SavedModel. Rerun the same "
        "command to resume after an interruption.",
    )
    groups = {}
    for field in dataclasses.fields(TranslationJob):
        option = dict(field.metadata)
        group = option.pop("group")
        if group not in groups:
            groups[group] = parser.add_argument_group(group)
        default = getattr(defaults, field.name)
        groups[group].add_argument(
            "--" + field.name.replace("_", "-"),
            default=default,
            **_parsing(field.type, default),
            **option,
        )
    parser.set_defaults(run=_train)


def _parsing(annotation, default):
    """How an option reads a `TranslationJob` field of this type annotation.

    Returns `add_argument`'s `type`, `nargs` or `action`: a flag for a bool,
    one or more values for a tuple, JSON for a dict, else the type itself
    (`int | None` reads an int).
    """
    kind = next(
        kind
        for kind in typing.get_args(annotation) or (annotation,)
        if kind is not type(None)
    )
    if kind is bool:
        return {"action": argparse.BooleanOptionalAction if default else "store_true"}
    if kind is tuple:
        return {"nargs": "+"}
    if kind is dict:
        return {"type": json.loads}
    return {"type": kind}


def _train(args):
    from keras_transformer.job import run_translation_job

    fields = {field.name for field in dataclasses.fields(TranslationJob)}
    values = {key: value for key, value in vars(args).items() if key in fields}
    results = run_translation_job(TranslationJob(**values))
    print(json.dumps({key: results[key] for key in ("bleu", "chrf", "export_path")}))


def _translate_parser(commands):
    parser = commands.add_parser(
        "translate", help="translate text with an exported SavedModel"
    )
    parser.add_argument("saved_model", help="an export's version folder")
    parser.add_argument("text", nargs="*", help="sentences (default: stdin lines)")
    parser.add_argument(
        "--signature", default="serving_default", choices=("serving_default", "greedy")
    )
    parser.set_defaults(run=_translate)


def _translate(args):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

    texts = args.text or [line.rstrip("\n") for line in sys.stdin]
    signature = tf.saved_model.load(args.saved_model).signatures[args.signature]
    for translation in signature(text=tf.constant(texts, tf.string))["translation"]:
        print(translation.numpy().decode("utf-8"))


def _average_parser(commands):
    defaults = TranslationJob()
    parser = commands.add_parser(
        "average",
        help="average the last checkpoints of a training run",
        description="Averages the weights of the last N checkpoints of a "
        "`train` run (paper section 6.1) into a .keras model, and optionally "
        "exports it as a translator SavedModel.",
    )
    parser.add_argument("output_dir", help="the --output-dir of the train run")
    parser.add_argument("model_path", help="where to write the averaged .keras model")
    _run_setting_arguments(parser)
    parser.add_argument(
        "--export-dir", default="", help="also export the translator here"
    )
    parser.add_argument("--export-name", default=defaults.export_name)
    parser.set_defaults(run=_average)


def _run_setting_arguments(parser):
    """--last, --beam-size and --alpha, by default the run's own settings."""
    for flag, kind, setting in (
        ("--last", int, "--average-last"),
        ("--beam-size", int, "--beam-size"),
        ("--alpha", float, "--alpha"),
    ):
        parser.add_argument(
            flag, type=kind, default=None, help=f"default: the run's {setting}"
        )


def _average(args):
    from keras_transformer.data import SubwordTokenizer
    from keras_transformer.export import Translator, export_translator
    from keras_transformer.job import averaged_model, saved_job, tokenizer_path

    model, paths = averaged_model(args.output_dir, args.last)
    model.save(args.model_path)
    print(f"Averaged {len(paths)} checkpoints into {args.model_path}: {paths}")
    if args.export_dir:
        job = saved_job(args.output_dir)
        tokenizer = SubwordTokenizer.load(tokenizer_path(args.output_dir))
        translator = Translator(
            model,
            tokenizer,
            job.beam_size if args.beam_size is None else args.beam_size,
            job.alpha if args.alpha is None else args.alpha,
        )
        path = export_translator(translator, args.export_dir, args.export_name)
        print(f"Exported the translator to {path}")


def _evaluate_parser(commands):
    parser = commands.add_parser(
        "evaluate",
        help="score a training run's averaged checkpoints on a split",
        description="Averages the last N checkpoints of a `train` run and "
        "reports BLEU and chrF on its corpus's validation or test split.",
    )
    parser.add_argument("output_dir", help="the --output-dir of the train run")
    parser.add_argument("--split", default="validation", choices=("validation", "test"))
    _run_setting_arguments(parser)
    parser.add_argument(
        "--sample", type=int, default=None, metavar="N", help="the first N sentences"
    )
    parser.set_defaults(run=_evaluate)


def _evaluate(args):
    from keras_transformer.job import evaluate_run

    scores = evaluate_run(
        args.output_dir, args.split, args.last, args.beam_size, args.alpha, args.sample
    )
    print(json.dumps(scores, indent=2))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="keras-transformer", description=__doc__)
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    _train_parser(commands)
    _translate_parser(commands)
    _average_parser(commands)
    _evaluate_parser(commands)
    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
