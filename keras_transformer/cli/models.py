"""`export`, `average` and `evaluate`: using a trained run."""

import json
import os

from keras_transformer.recipe.config import OutputSection

_DEFAULT_EXPORT = os.path.join(OutputSection.export_dir, OutputSection.export_name)
_RUN_DEFAULT = "(default: the run's, from job.json beside the model, else train's)"


def add_export_parser(commands):
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
        "model", metavar="RUN_DIR|MODEL", help="a train run's --output-dir, or a .keras"
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
    parser.add_argument("--beam-size", type=int, help=f"beam width {_RUN_DEFAULT}")
    parser.add_argument(
        "--alpha",
        type=float,
        help="length-penalty exponent: a SavedModel divides scores by ((5 + "
        "length) / 6) ** alpha, CTranslate2 by length ** alpha, the same at 0 "
        + _RUN_DEFAULT,
    )
    parser.set_defaults(run=export)


def export(args):
    import keras_transformer.models.transformer  # noqa: F401  (registers its classes)
    from keras_transformer.export import export_ctranslate2, export_translator
    from keras_transformer.export.ctranslate2_model import import_ctranslate2
    from keras_transformer.recipe.run_directory import model_and_run
    from keras_transformer.training import load_model

    if args.format == "ctranslate2":
        import_ctranslate2()  # before the model loads, if it is missing
    elif args.quantization:
        raise ValueError("--quantization goes with --format ctranslate2.")
    model_path, run = model_and_run(args.model)
    translator = run_translator(
        load_model(model_path, compile=False),  # either layout
        args.tokenizer or run.tokenizer,
        run,
        args.beam_size,
        args.alpha,
    )
    if args.format == "saved_model":
        output = os.path.normpath(args.output or _DEFAULT_EXPORT)
        model_dir, name = os.path.split(output)
        path = export_translator(translator, model_dir or ".", name)
    else:
        suffix = f"-{args.quantization}" if args.quantization else ""
        output = args.output or f"{_DEFAULT_EXPORT}-ct2{suffix}"
        path = export_ctranslate2(translator, output, args.quantization)
    print(f"Exported the translator to {path}")


def run_translator(model, tokenizer_file, run, beam_size=None, alpha=None):
    """A `Translator` of `model` decoding as `decoding_settings` settles it
    from `beam_size`, `alpha` and the run's evaluation settings, with the run's
    beam-search scoring and `model.max_length` (the recipe's defaults when
    `run` is not a run)."""
    import dataclasses

    from keras_transformer.data.tokenizer import load_tokenizer
    from keras_transformer.decoding_defaults import decoding_settings
    from keras_transformer.export import Translator
    from keras_transformer.recipe.config import RunConfig

    config = run.read_config() if run.exists() else RunConfig()
    evaluation = config.evaluation
    beam_size, alpha = decoding_settings(
        beam_size, alpha, dataclasses.asdict(evaluation)
    )
    return Translator(
        model,
        load_tokenizer(tokenizer_file),
        beam_size,
        alpha,
        scoring=evaluation.scoring,
        max_length=config.model.max_length,
    )


def add_average_parser(commands):
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
    name = OutputSection.export_name
    parser.add_argument("--export-name", default=name, help=f"default: {name}")
    parser.set_defaults(run=average, written_folder=_run_to_average)


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


def _run_to_average(args):
    """The run folder `average` locks: its checkpoints must hold still
    (None where there is no such folder: `average` says so itself)."""
    return args.output_dir if os.path.isdir(args.output_dir) else None


def average(args):
    from keras_transformer.export import export_translator
    from keras_transformer.recipe.evaluation import averaged_model
    from keras_transformer.recipe.run_directory import RunDirectory, atomic_path

    model, paths = averaged_model(args.output_dir, args.last)
    with atomic_path(args.model_path) as partial:
        model.save(partial)
    print(f"Averaged {len(paths)} checkpoints into {args.model_path}: {paths}")
    if args.export_dir:
        run = RunDirectory(args.output_dir)
        translator = run_translator(
            model, run.tokenizer, run, args.beam_size, args.alpha
        )
        path = export_translator(translator, args.export_dir, args.export_name)
        print(f"Exported the translator to {path}")


def add_evaluate_parser(commands):
    parser = commands.add_parser(
        "evaluate",
        help="score a training run's averaged checkpoints on a split",
        description="Averages the last N checkpoints of a `train` run and "
        "reports BLEU, chrF and TER on its corpus's validation or test split.",
    )
    parser.add_argument("output_dir", help="the --output-dir of the train run")
    parser.add_argument("--split", default="validation", choices=("validation", "test"))
    _run_setting_arguments(parser)
    parser.add_argument(
        "--sample", type=int, default=None, metavar="N", help="the first N sentences"
    )
    parser.set_defaults(run=evaluate)


def evaluate(args):
    from keras_transformer.recipe.evaluation import evaluate_run

    scores = evaluate_run(
        args.output_dir, args.split, args.last, args.beam_size, args.alpha, args.sample
    )
    print(json.dumps(scores, indent=2))
