"""The `keras-transformer` command line.

    keras-transformer train [options]       # the translation job
    keras-transformer translate PATH TEXT   # translate with an export
    keras-transformer export DIR --format F # export a run as SavedModel/CTranslate2
    keras-transformer average DIR OUTPUT    # average the last checkpoints
    keras-transformer evaluate DIR          # score a run on validation/test
    keras-transformer attention PATH TEXT   # draw an export's attention maps
    keras-transformer plot DIR              # draw a run's schedule and curves

Run `keras-transformer COMMAND --help` for the options.
"""

import argparse
import dataclasses
import json
import os
import sys
import typing

from keras_transformer.job import TranslationJob
from keras_transformer.training.checkpoints import TrainingInterrupted


def _train_parser(commands):
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
        default = (  # as declared: None stands for a default the job settles
            field.default_factory()
            if field.default is dataclasses.MISSING
            else field.default
        )
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
        "translate",
        help="translate text with an export (SavedModel or CTranslate2)",
        description="Translates sentences given as arguments, or the lines of "
        "a file (- for stdin), a line out per line in, in input order, in "
        "batches as they are read.",
    )
    parser.add_argument(
        "saved_model",
        metavar="EXPORT",
        help="a SavedModel export's version folder, or a CTranslate2 export",
    )
    parser.add_argument(
        "inputs",
        nargs="*",
        metavar="FILE|-|TEXT",
        help="a file or - (stdin, the default) to translate line by line, or sentences",
    )
    parser.add_argument(
        "--batch-size", type=int, default=32, help="lines per call (default: 32)"
    )
    parser.add_argument(
        "--beam-size", type=int, help="beam width (default: the export's)"
    )
    parser.add_argument(
        "--alpha", type=float, help="length-penalty exponent (default: the export's)"
    )
    parser.add_argument(
        "--signature", default="serving_default", choices=("serving_default", "greedy")
    )
    parser.set_defaults(run=_translate)


def _translate(args):
    from keras_transformer.export.streaming import translate_lines

    options = dict(
        batch_size=args.batch_size,
        beam_size=args.beam_size,
        alpha=args.alpha,
        signature=args.signature,
    )
    source = args.inputs[0] if len(args.inputs) == 1 else None
    if not args.inputs or source == "-":
        if sys.stdin.isatty():  # interactive: a line in, its translation out
            options["batch_size"] = 1
        translate_lines(args.saved_model, sys.stdin.buffer, sys.stdout, **options)
    elif source is not None and os.path.isfile(source):
        with open(source, "rb") as file:
            total = sum(1 for _ in file)
            file.seek(0)
            translate_lines(args.saved_model, file, sys.stdout, total=total, **options)
    else:
        texts = [text.encode("utf-8") for text in args.inputs]
        translate_lines(args.saved_model, texts, sys.stdout, **options)


def _export_parser(commands):
    parser = commands.add_parser(
        "export",
        help="export a trained model as a SavedModel or a CTranslate2 model",
        description="Exports the translator of a `train` run (RUN_DIR/model.keras, "
        "written when the run finishes) or of a .keras model (e.g. from `average`), "
        "with the tokenizer.model and job.json beside it: as a SavedModel for "
        "TF Serving, or as a CTranslate2 model for fast CPU serving (pip install "
        '-e ".[ctranslate2]"). `translate` takes either.',
    )
    parser.add_argument(
        "model",
        metavar="RUN_DIR|MODEL",
        help="a train run's --output-dir, or a .keras model",
    )
    parser.add_argument(
        "--format", required=True, choices=("saved_model", "ctranslate2")
    )
    parser.add_argument(
        "--quantization",
        choices=("int8", "int8_float32", "int16", "float32"),
        help="the CTranslate2 weights' type (default: float32)",
    )
    parser.add_argument(
        "-o",
        "--output",
        help="saved_model: the model folder, whose next version is written "
        "(default: saved_models/translator); ctranslate2: the folder to create "
        "(default: saved_models/translator-ct2, or translator-ct2-QUANTIZATION)",
    )
    parser.add_argument(
        "--tokenizer",
        help="the SentencePiece model (default: the one beside the model)",
    )
    defaults = "(default: the run's, from job.json beside the model, else train's)"
    parser.add_argument("--beam-size", type=int, help=f"beam width {defaults}")
    parser.add_argument(
        "--alpha",
        type=float,
        help="length-penalty exponent: a SavedModel divides scores by ((5 + "
        "length) / 6) ** alpha, CTranslate2 by length ** alpha, the same at 0 "
        + defaults,
    )
    parser.set_defaults(run=_export)


def _export(args):
    import keras

    from keras_transformer.export import export_ctranslate2, export_translator
    from keras_transformer.export.ctranslate2_model import import_ctranslate2
    from keras_transformer.job import saved_job, tokenizer_path

    if args.format == "ctranslate2":
        import_ctranslate2()  # before the model loads, if it is missing
    elif args.quantization:
        raise ValueError("--quantization goes with --format ctranslate2.")
    model_path = _model_path(args.model)
    folder = os.path.dirname(model_path)
    has_job = os.path.exists(os.path.join(folder, "job.json"))
    job = saved_job(folder) if has_job else TranslationJob()
    translator = _translator(
        keras.saving.load_model(model_path, compile=False),
        args.tokenizer or tokenizer_path(folder),
        job,
        args,
    )
    if args.format == "saved_model":
        output = os.path.normpath(args.output or "saved_models/translator")
        model_dir, name = os.path.split(output)
        path = export_translator(translator, model_dir or ".", name)
    else:
        suffix = f"-{args.quantization}" if args.quantization else ""
        output = args.output or f"saved_models/translator-ct2{suffix}"
        path = export_ctranslate2(translator, output, args.quantization)
    print(f"Exported the translator to {path}")


def _translator(model, tokenizer_file, job, args):
    """A `Translator` of `model` with `job`'s beam size and alpha, or `args`'."""
    from keras_transformer.data import SubwordTokenizer
    from keras_transformer.export import Translator

    return Translator(
        model,
        SubwordTokenizer.load(tokenizer_file),
        job.beam_size if args.beam_size is None else args.beam_size,
        job.alpha if args.alpha is None else args.alpha,
    )


def _model_path(path):
    """The .keras model of `path`: a `train` run's folder or a .keras file."""
    if not os.path.isdir(path):
        if not os.path.exists(path):
            raise FileNotFoundError(f"No model at {path}.")
        return path
    model_path = os.path.join(path, "model.keras")
    if not os.path.exists(model_path):
        raise FileNotFoundError(
            f"{model_path} does not exist: the run has not finished; average its "
            f"checkpoints into a model first (keras-transformer average {path} "
            "MODEL.keras)."
        )
    return model_path


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
    from keras_transformer.export import export_translator
    from keras_transformer.job import averaged_model, saved_job, tokenizer_path

    model, paths = averaged_model(args.output_dir, args.last)
    model.save(args.model_path)
    print(f"Averaged {len(paths)} checkpoints into {args.model_path}: {paths}")
    if args.export_dir:
        translator = _translator(
            model,
            tokenizer_path(args.output_dir),
            saved_job(args.output_dir),
            args,
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


def _attention_parser(commands):
    parser = commands.add_parser(
        "attention",
        help="draw the cross-attention of an export's translation",
        description="Translates TEXT with an export's `attention` signature, "
        "prints each target piece with the source piece it attends to most "
        "(the last layer's heads averaged, or the --layer and --head chosen), "
        "and draws the maps of every decoder layer and head. Needs matplotlib "
        '(pip install -e ".[plots]").',
    )
    parser.add_argument("saved_model", help="an export's version folder")
    parser.add_argument("text", help="the sentence to translate")
    parser.add_argument(
        "-o", "--output", default="attention.png", help="a .png or .svg file"
    )
    for name in ("layer", "head"):
        parser.add_argument(
            f"--{name}",
            type=int,
            help=f"draw one {name} only (0 is the first, -1 the last)",
        )
    parser.set_defaults(run=_attention)


def _attention(args):
    import tensorflow as tf

    from keras_transformer.export.streaming import load_export
    from keras_transformer.plots import (
        attention_figure,
        save_figure,
        sentence_attention,
        text_alignment,
    )
    from keras_transformer.plots.figures import check_image_path, new_figure

    check_image_path(args.output)
    new_figure(1, 1)  # matplotlib is there, before the export loads
    export = load_export(args.saved_model)
    if "attention" not in export.signatures:
        raise ValueError(
            f"{args.saved_model} has no `attention` signature; export the run"
            " again with this version (keras-transformer average --export-dir)."
        )
    outputs = export.signatures["attention"](text=tf.constant([args.text]))
    attention, source, target = sentence_attention(outputs)
    if not target:
        raise ValueError(f"{args.text!r} has no pieces to translate.")
    selection = dict(layer=args.layer, head=args.head)
    figure = attention_figure(attention, source, target, **selection)
    print(outputs["translation"][0].numpy().decode("utf-8"))
    print("\n".join(text_alignment(attention, source, target, **selection)))
    print(f"Wrote {save_figure(figure, args.output)}")


def _plot_parser(commands):
    from keras_transformer.plots.training import FILE_NAMES, KINDS

    parser = commands.add_parser(
        "plot",
        help="draw a training run's position encoding, schedule and curves",
        description="Draws the pictures of a `train` run: the position "
        f"encoding of its d_model ({FILE_NAMES['pe']}), its learning-rate "
        f"schedule ({FILE_NAMES['schedule']}) and its training curves "
        f"({FILE_NAMES['curves']}). Needs matplotlib "
        '(pip install -e ".[plots]").',
    )
    parser.add_argument("output_dir", help="the --output-dir of the train run")
    parser.add_argument(
        "-o", "--output", help="the folder to draw in (default: OUTPUT_DIR/plots)"
    )
    parser.add_argument(
        "--what", choices=KINDS, action="append", help="one kind (default: all)"
    )
    parser.add_argument("--format", default="png", choices=("png", "svg"))
    parser.set_defaults(run=_plot)


def _plot(args):
    from keras_transformer.plots import plot_run
    from keras_transformer.plots.training import KINDS

    if not os.path.isdir(args.output_dir):
        raise FileNotFoundError(f"No run at {args.output_dir}.")
    kinds = args.what or KINDS
    for path in plot_run(args.output_dir, args.output, kinds, args.format):
        print(f"Wrote {path}")


# Errors a user's input can cause: reported in one line, without a traceback
# (ImportError: an optional dependency is missing).
USER_ERRORS = (ValueError, OSError, KeyError, ImportError)


def main(argv=None):
    """Runs a command; a user error prints one line and exits with status 1."""
    parser = argparse.ArgumentParser(
        prog="keras-transformer",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an error"
    )
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    _train_parser(commands)
    _translate_parser(commands)
    _export_parser(commands)
    _average_parser(commands)
    _evaluate_parser(commands)
    _attention_parser(commands)
    _plot_parser(commands)
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except TrainingInterrupted as stop:
        print(f"keras-transformer: {stop}", file=sys.stderr)
        sys.exit(130)  # the shell's status for Ctrl-C
    except KeyboardInterrupt:  # Ctrl-C outside training: nothing to save
        if args.debug:
            raise
        print("keras-transformer: interrupted", file=sys.stderr)
        sys.exit(130)
    except USER_ERRORS as error:
        if args.debug:
            raise
        message = error.args[0] if isinstance(error, KeyError) else error
        print(f"keras-transformer: error: {message}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
